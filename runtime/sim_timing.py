"""The simulator's timing model: cycles per instruction from the target, one in-order
queue per pipe, the chip's shared HBM and its L2, flags, and the Chrome / Perfetto trace
writer. Every figure comes from `ge.targets` (targets/*.toml, each with its source).

Costs:
- an on-chip move (L1 -> L0A / L0B, img2col, L1 <-> UB, the L0C read-out by FixPipe or by
  the Vector unit's `copy_l0c_to_ub`): the path's start-up + the bytes it really moves /
  the path's bytes per cycle (`[onchip]`). No burst rounding inside the core: an 8 KB
  transposed L1 -> L0B copy costs 8 KB.
- a move to or from GM: each contiguous run rounded up to whole 32-B blocks (the DMA's
  burst, `vector.block_bytes`), at most at the path's per-core rate (`[dma]`, GB/s converted
  at this chip's clock). The launch's cores share the chip's bandwidths in time
  (`Bandwidth`): bytes that come from or go to HBM (reads that miss the L2 -- MTE2 --, and
  every write -- MTE3, FixPipe) take `dma.hbm_total`, the L2's hits `dma.l2_total`. A
  transfer starts when its instruction does and moves at the path's rate or whatever the
  transfers simulated before it (any core's) leave free at each moment, whichever is less;
  so over any interval the launch moves at most `hbm_total` bytes per cycle, no transfer
  beats its path's rate, and a core running alone gets its full path rate.
  The blocks are simulated one after another, so an earlier-simulated block's transfers
  would get the bandwidth first and the last cores find it taken. Instead, in each round
  of blocks over the cores, the first block's reads take whatever is free (they fetch what
  the other blocks may share); its writes, and every later block's transfers, leave each
  block still to come its fair share (`hbm_total / active`) and take at least half their
  own (a core's reads and writes run at once) (`CostModel.start_block`). Launches of
  concurrent streams share the HBM through the executor (a `Bandwidth` of `hbm_total`).
- the L2 (`memory.l2`, `dma.l2_*`; `L2` inside a launch, `ChipL2` across the launches of
  a run). Ascend C's L2 guide (CacheMode, "Setting a Proper L2 CacheMode",
  https://www.hiascend.com/document/detail/en/canncommercial/850/opdevg/Ascendcopdevg/atlas_ascendc_best_practices_10_00014.html):
  MTE2 reads and MTE3 / FixPipe writes go through the L2, and data it replaces is written
  back to GM first, taking GM bandwidth. So: a 32-B GM block a read brought in from HBM is
  resident from the moment that transfer ends. A later read of a resident block (any core)
  hits: it is read at the L2 path rate, outside the HBM budget, and cannot finish before
  the block has arrived -- a read of a block still in flight waits for it (the miss is
  coalesced, not fetched twice). The first read in time fetches: a read that starts
  before the block's fetch started (a block simulated later but running earlier) misses
  and fetches it itself, and the block arrives at the earlier of the two ends. Writes are
  write-back, write-allocate: a write (whole 32-B bursts, nothing to read first) takes
  the L2's bandwidth (`dma.l2_total`) at its path's rate, and its blocks become resident
  and dirty when it ends. When the resident blocks no longer fit the L2, the
  earliest-arrived go first (down to 15/16 of the capacity, so that eviction runs
  rarely); each dirty one is written back: its bytes take the HBM from that moment (no
  core waits for them, every later transfer finds the bandwidth used). A chip with
  `l2 = 0` always misses and writes to HBM.
  Across launches (`ChipL2`, `Simulator.l2`): the L2 is cold when a run starts; a launch
  starting at S begins with the blocks of its inputs that arrived by S resident (clean as
  it sees them), and what it leaves -- the blocks it fetched or wrote, their arrival,
  dirty or not -- is committed when it is done; past the capacity the least recently
  arrived go, launch by launch, by arrival inside a launch (32-block groups), and the
  dirty ones are written back by the launch that pushes them out: its HBM bytes grow and
  it takes at least its HBM bytes at `hbm_total` (an average, not placed in time). The
  other resident blocks (not the launch's inputs) are older than its inputs as it sees
  them: its own L2 may hold the whole capacity.
- FixPipe (`isa.fixpipe`): its start-up + the larger of the bytes read from L0C and the
  bytes written, at `onchip.l0c_out`; a GM destination's bytes also take the HBM. Its quant
  mode (dequantize / ReLU / requantize, Ascend C's Fixpipe quant_pre "随路" conversion)
  runs in line at the same rate; the per-channel scale's bytes (staged into the fixpipe
  buffer) are read at that rate too (estimate: no public figure for the FB load). A chip
  without FixPipe (the coupled 910) gets `isa.copy_l0c_to_ub` from `to-isa` instead: an
  on-chip move on the Vector pipe (Vector start-up, `onchip.l0c_out`), and the result goes
  on to GM by its own `copy_ub_to_gm` on MTE3.
- `broadcast_ub_to_l0c` (the 910's bias into L0C, on the Vector pipe): the Vector start-up +
  `vector_cost.broadcast_ub_to_l0c` cycles per 16 x 16 fractal written (the target file says
  why); without that entry, the fractals' bytes at `onchip.l0c_out`.
- `mmad`: the Cube's start-up + one cycle per m0 x k0 x n0 fractal; the Cube is pipelined,
  so a chain of mmads pays the start-up once.
- a vector instruction: the Vector start-up + repeats x the op's cycles per repeat for its
  element type (`[vector_cost]`); a UB -> UB copy is `vcopy`-like at the default cost.
- the scalar unit issues one instruction per `overhead.issue` cycles and spends
  `overhead.loop` cycles per loop iteration: no instruction starts before it is issued.
- a launch costs `overhead.launch` cycles on top of its slowest core.

Pipes. Instructions of one pipe start in program order. Every pipe but the scalar unit
is pipelined: the next instruction may start once the previous one has issued its data
(after its busy cycles), while the previous one is still finishing its start-up latency.
(The simulator's hazard checks still treat the Cube as in-order: its results are ordered
by hardware.) `set_flag` fires when every earlier instruction of its pipe has finished (it
does not hold its pipe); `wait_flag` holds its pipe until the flag fires; `pipe_barrier`
holds its pipe until the pipe's earlier instructions have finished.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ge.dialects.isa import Pipe
from ge.targets import Target

PIPE_ORDER = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)
PIPE_INDEX = {p: i for i, p in enumerate(PIPE_ORDER)}
NPIPES = len(PIPE_ORDER)
PIPELINED = tuple(p not in (Pipe.M, Pipe.S) for p in PIPE_ORDER)  # ordering semantics (hazard checks)
OVERLAPPED = tuple(p != Pipe.S for p in PIPE_ORDER)  # timing: the start-up overlaps the previous instruction

# move op name -> (rate: target.onchip field (bytes / cycle) or target.dma field (GB/s), start-up field)
ONCHIP_PATHS = {
    "isa.copy_ub_to_l1": ("ub_to_l1", "mte3"),
    "isa.copy_l1_to_ub": ("l1_to_ub", "mte1"),
    "isa.copy_l1_to_l0a": ("l1_to_l0a", "mte1"),
    "isa.copy_l1_to_l0b": ("l1_to_l0b", "mte1"),
    "isa.img2col": ("l1_to_l0a", "mte1"),
    "isa.copy_l0c_to_ub": ("l0c_out", "vector"),  # the Vector unit reads L0C out (no FixPipe)
}
# (GM -> L0B: MTE2's path into the Cube's buffers at the GM -> L1 rates; no separate figure is published)
GM_READS = {"isa.copy_gm_to_l1": ("gm_to_l1", "l2_to_l1"), "isa.copy_gm_to_l0b": ("gm_to_l1", "l2_to_l1"),
            "isa.copy_gm_to_ub": ("gm_to_ub", "l2_to_ub")}

Rect = tuple[tuple[int, ...], tuple[int, ...], int]  # (shape, element strides, element bytes)
# (start-up, busy, GM transfer): the transfer (0.0: none) is (function, *arguments), called
# as function(start, core, *arguments) -> when its data has moved (CostModel._read / _write)
Timing = tuple[float, float, object]


def raw_bytes(rect: Rect) -> int:
    shape, _, size = rect
    return math.prod(shape) * size


@functools.lru_cache(maxsize=8192)
def burst_bytes(rect: Rect, block: int) -> int:
    """Bytes a GM DMA moves for a rectangle: contiguous runs rounded up to whole blocks
    (cached: a loop's moves repeat their rectangles)."""
    shape, strides, size = rect
    if not shape or 0 in shape:
        return 0
    dims = [(n, s) for n, s in zip(shape, strides) if n > 1]
    run = size
    while dims and dims[-1][1] * size == run:  # merge contiguous inner dims
        n, _ = dims.pop()
        run *= n
    runs = math.prod(n for n, _ in dims)
    return runs * (-(-run // block) * block)


def touched_blocks(first_byte: int, rect: Rect, block: int) -> np.ndarray:
    """The distinct `block`-byte blocks (indices) a rectangle starting at `first_byte` touches."""
    rel, _ = _relative_blocks(first_byte % block, rect, block)
    return rel + first_byte // block


@functools.lru_cache(maxsize=8192)
def _relative_blocks(phase: int, rect: Rect, block: int) -> tuple[np.ndarray, bool]:
    """The blocks a rectangle starting `phase` bytes into block 0 touches (sorted, distinct)
    and whether they are one run: the same for every start with that phase, so computed
    once (a loop's moves repeat their rectangles at many addresses)."""
    shape, strides, size = rect
    dims = [(n, s * size) for n, s in zip(shape, strides) if n > 1 and s != 0]
    run = size
    while dims and dims[-1][1] == run:
        n, _ = dims.pop()
        run *= n
    starts = np.array([phase], dtype=np.int64)
    for n, st in dims:
        starts = (starts[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
    lo, hi = starts // block, (starts + run - 1) // block
    if len(starts) == 1:
        out = np.arange(lo[0], hi[0] + 1)
    else:  # the union of the runs' blocks [lo, hi], as a mask (no sort)
        first = int(lo.min())
        mask = np.zeros(int(hi.max()) - first + 1, dtype=bool)
        for j in range(int((hi - lo).max()) + 1):
            mask[(lo + (j - first))[lo + j <= hi]] = True
        out = np.flatnonzero(mask) + first
    out.flags.writeable = False
    return out, bool(len(out)) and int(out[-1]) - int(out[0]) + 1 == len(out)


class L2:
    """The chip's L2 as one launch sees it: per GM region (a kernel argument) and 32-B
    block, when the block's fetch from HBM (or the write that allocated it) started
    (`fetched`) and when it arrived (`arrive`), both +inf while the block is not resident,
    -inf for a block resident when the launch started (`preload`); and whether it is dirty
    (written, not yet written back). `lookup` says what a read at time t hits, `fill`
    records the blocks it fetched, `write` the blocks a write allocated (module docstring:
    first read in time fetches, later ones wait for the arrival; earliest-arrived evicted
    first; an evicted dirty block is written back -- `fill` / `write` return how many)."""

    def __init__(self, capacity: int, block: int):
        self.capacity_blocks = capacity // block
        self.block = block
        self.fetched: dict[int, np.ndarray] = {}
        self.arrive: dict[int, np.ndarray] = {}
        self.dirty: dict[int, np.ndarray] = {}
        self.resident = 0
        self.preloaded = 0  # resident blocks still at -inf (`preload`), an upper bound
        self.evictions = 0

    def _arrays(self, region: int, top: int) -> tuple[np.ndarray, np.ndarray]:
        fetched = self.fetched.get(region)
        if fetched is None or len(fetched) < top:
            size = max(top, 2 * len(fetched) if fetched is not None else top)
            grown = np.full(size, np.inf), np.full(size, np.inf), np.zeros(size, dtype=bool)
            if fetched is not None:
                grown[0][:len(fetched)] = fetched
                grown[1][:len(fetched)] = self.arrive[region]
                grown[2][:len(fetched)] = self.dirty[region]
            self.fetched[region], self.arrive[region], self.dirty[region] = grown
        return self.fetched[region], self.arrive[region]

    def preload(self, region: int, warm: Warm) -> None:
        """The blocks of `region` in `warm` (a packed mask, `ChipL2.warm`) are resident (and
        clean, as this launch sees them: `ChipL2` writes them back if they go) from before
        the launch."""
        if not self.capacity_blocks or not warm:
            return
        mask = unpack(warm)
        fetched, arrive = self._arrays(region, len(mask))
        was = arrive[:len(mask)][mask]
        self.resident += int(np.count_nonzero(was == np.inf))
        self.preloaded += len(was)
        fetched[:len(mask)][mask] = -np.inf
        arrive[:len(mask)][mask] = -np.inf
        if self.resident > self.capacity_blocks:
            self._evict()

    def lookup(self, region: int, first_byte: int, rect: Rect, t: float) -> tuple[int, int, float, object]:
        """A rectangle read that starts at t: (blocks that miss, blocks in all, the latest
        arrival of the blocks that hit (-inf: none), the misses' handle for `fill`)."""
        rel, run = _relative_blocks(first_byte % self.block, rect, self.block)
        count = len(rel)
        if self.capacity_blocks == 0 or not count:
            return count, count, -math.inf, None
        base = first_byte // self.block
        fetched, arrive = self._arrays(region, int(rel[-1]) + base + 1)
        lo = int(rel[0]) + base
        where = slice(lo, lo + count) if run and lo >= 0 else rel + base
        hit = fetched[where] <= t  # resident, and fetched by a read that started no later
        hits = int(np.count_nonzero(hit))
        if hits == count:
            return 0, count, float(arrive[where].max()), None
        if not hits:
            return count, count, -math.inf, (region, where)
        return count - hits, count, float(arrive[where][hit].max()), (region, where, ~hit)

    def fill(self, handle: object, t: float, end: float) -> int:
        """The misses of `handle` (fetched from t on) arrive at `end`; an in-flight block
        fetched again by an earlier read keeps the earlier arrival. Returns the dirty
        blocks this evicted."""
        if handle is None:
            return 0
        region, where, *miss = handle
        fetched, arrive = self.fetched[region], self.arrive[region]
        if miss:
            where = (np.arange(where.start, where.stop) if isinstance(where, slice) else where)[miss[0]]
        was = arrive[where]
        self.resident += int(np.count_nonzero(was == np.inf))
        arrive[where] = np.minimum(was, end)
        fetched[where] = t
        return self._evict() if self.resident > self.capacity_blocks else 0

    def write(self, region: int, first_byte: int, rect: Rect, t: float, end: float) -> int:
        """A write of `rect` from t to `end` allocates its blocks (write-allocate: whole
        32-B bursts, nothing read): resident and dirty, arrived at `end`. Returns the dirty
        blocks this evicted."""
        rel, run = _relative_blocks(first_byte % self.block, rect, self.block)
        if not self.capacity_blocks or not len(rel):
            return 0
        base = first_byte // self.block
        fetched, arrive = self._arrays(region, int(rel[-1]) + base + 1)
        lo = int(rel[0]) + base
        where = slice(lo, lo + len(rel)) if run and lo >= 0 else rel + base
        self.resident += int(np.count_nonzero(arrive[where] == np.inf))
        fetched[where] = np.minimum(fetched[where], t)
        arrive[where] = end
        self.dirty[region][where] = True
        return self._evict() if self.resident > self.capacity_blocks else 0

    def _evict(self) -> int:
        """Drop the earliest-arrived blocks until 15/16 of the capacity is left (blocks that
        arrived together: the first regions' and lowest blocks first); returns how many of
        them were dirty (each costs a write-back to HBM)."""
        keep = self.capacity_blocks - self.capacity_blocks // 16
        if self.preloaded:  # the blocks from before the launch go first (no sort needed)
            drop, dirty, remaining = self.resident - keep, 0, 0
            for region, arrive in self.arrive.items():
                at = np.flatnonzero(arrive == -np.inf)
                take = at[:max(drop, 0)]
                arrive[take] = np.inf
                self.fetched[region][take] = np.inf
                d = self.dirty[region]
                dirty += int(np.count_nonzero(d[take]))
                d[take] = False
                drop -= len(take)
                self.resident -= len(take)
                remaining += len(at) - len(take)
            self.preloaded = remaining
            if drop <= 0:
                self.evictions += 1
                return dirty
            return dirty + self._evict()
        times = np.concatenate([a[a < np.inf] for a in self.arrive.values()])
        drop = len(times) - keep
        if drop <= 0:
            self.resident = len(times)
            return 0
        cut = np.partition(times, drop - 1)[drop - 1]
        ties = drop - int(np.count_nonzero(times < cut))  # of the blocks arrived at `cut`, how many go
        dirty = 0
        for region, arrive in self.arrive.items():
            gone = arrive < cut
            if ties > 0:
                at = np.flatnonzero(arrive == cut)[:ties]
                gone[at] = True
                ties -= len(at)
            arrive[gone] = np.inf
            self.fetched[region][gone] = np.inf
            d = self.dirty[region]
            dirty += int(np.count_nonzero(d & gone))
            d[gone] = False
        self.resident = sum(int(np.count_nonzero(a < np.inf)) for a in self.arrive.values())
        self.evictions += 1
        return dirty

    def end_state(self, region: int, nblocks: int) -> tuple[np.ndarray, np.ndarray]:
        """Blocks [0, nblocks) of `region` when the launch ends: arrival (+inf: not
        resident, -inf: resident since before the launch, untouched) and dirty."""
        arrive, dirty = self.arrive.get(region), self.dirty.get(region)
        out, dout = np.full(nblocks, np.inf), np.zeros(nblocks, dtype=bool)
        if arrive is not None:
            n = min(nblocks, len(arrive))
            out[:n], dout[:n] = arrive[:n], dirty[:n]
        return out, dout


Warm = bytes  # a packed bool mask over a buffer's blocks (np.packbits; b"": none)


def pack(mask: np.ndarray) -> Warm:
    return np.packbits(mask).tobytes() if mask.any() else b""


def unpack(packed: Warm, n: int | None = None) -> np.ndarray:
    """`pack`'s mask again (its first n blocks; all of them, padded to a multiple of 8)."""
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=n).view(bool)


def _runs(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The [lo, hi) runs of True in a bool array."""
    if not len(mask):
        return ()
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).view(np.int8)))
    return tuple(zip(edges[0::2].tolist(), edges[1::2].tolist()))


@dataclass
class LaunchL2:
    """What a launch left in the L2, per kernel argument, over its blocks (kept with the
    launch's analysis, so a launch reused from it updates `ChipL2` the same way), as
    packed masks (`pack`): the blocks resident at its end (`resident`), those it fetched
    or wrote (`new`, the other resident ones were there before it), those it wrote and
    that are still resident (`dirty`); and the new blocks' arrivals, the latest of each
    `GROUP` blocks (LRU order between launches)."""

    blocks: tuple[int, ...]
    resident: tuple[Warm, ...]
    new: tuple[Warm, ...]
    dirty: tuple[Warm, ...]
    times: tuple[np.ndarray, ...]

    GROUP = 32

    @classmethod
    def of(cls, l2: L2, regions: list[tuple[int, int]]) -> LaunchL2:
        """From the launch's `L2` at its end; `regions`: (L2 region, blocks) per argument."""
        resident, new, dirty, times = [], [], [], []
        g = cls.GROUP
        for region, n in regions:
            arrive, d = l2.end_state(region, n)
            fresh = np.isfinite(arrive)
            held = arrive < np.inf
            resident.append(pack(held))
            new.append(pack(fresh))
            dirty.append(pack(d & held))
            padded = np.full(-(-n // g) * g, -np.inf)
            padded[:n] = np.where(fresh, arrive, -np.inf)
            times.append(padded.reshape(-1, g).max(axis=1).astype(np.float32))
        return cls(tuple(n for _, n in regions), tuple(resident), tuple(new), tuple(dirty), tuple(times))

    def runs(self, field: str, i: int) -> tuple[tuple[int, int], ...]:
        """Argument i's blocks in `field` ("resident", "new", "dirty") as [lo, hi) runs."""
        packed = getattr(self, field)[i]
        return _runs(unpack(packed, self.blocks[i])) if packed else ()


class ChipL2:
    """The chip's L2 across the launches of one run (cold when the run starts): per GM
    space (a root buffer: the model's arena, or an array) and 32-B block, when it last
    arrived (`last`, +inf: not resident) and whether it is dirty. A launch starting at S
    finds resident (`warm`) the blocks of its inputs that arrived by S; when it is done,
    `commit` records what it left (`LaunchL2`): its new blocks arrive at S + their time,
    preloaded blocks it evicted go, and past the capacity the least recently arrived
    blocks go -- launch by launch in the order they were committed, by arrival inside a
    launch. Every dirty block that goes is written back: `commit` returns those bytes,
    which the committing launch sends to HBM."""

    def __init__(self, capacity: int, block: int):
        self.capacity_blocks = capacity // block
        self.block = block
        self.spaces: dict[int, tuple[object, np.ndarray, np.ndarray, np.ndarray]] = {}  # id -> root, last, dirty, owner
        self.resident = 0
        self.written_back = 0  # bytes
        self._log: deque = deque()  # (launch number, [(space, lo, hi)]) in commit order
        self._launches = 0

    def locate(self, buf: np.ndarray) -> tuple[int, int] | None:
        """(space, first block) of a C-contiguous buffer starting on a block boundary of
        its root buffer; None for anything else (its launches see it cold)."""
        if not self.capacity_blocks or not buf.flags.c_contiguous or not buf.nbytes:
            return None
        root = buf
        while isinstance(root.base, np.ndarray):
            root = root.base
        offset = buf.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        if offset % self.block or offset < 0:
            return None
        key = id(root)
        if key not in self.spaces:
            n = -(-root.nbytes // self.block)
            self.spaces[key] = (root, np.full(n, np.inf), np.zeros(n, dtype=bool), np.full(n, -1, dtype=np.int32))
        return key, offset // self.block

    def warm(self, where: tuple[int, int] | None, nblocks: int, at: float) -> Warm:
        """The blocks [0, nblocks) of a buffer resident at time `at` (packed)."""
        if where is None:
            return b""
        key, b0 = where
        return pack(self.spaces[key][1][b0:b0 + nblocks] <= at)

    def warm_runs(self, where: tuple[int, int] | None, nblocks: int, at: float) -> tuple[tuple[int, int], ...]:
        """`warm` as [lo, hi) runs."""
        packed = self.warm(where, nblocks, at)
        return _runs(unpack(packed, nblocks)) if packed else ()

    def commit(self, where: list[tuple[int, int] | None], warm: tuple, left: LaunchL2, start: float) -> float:
        """Record a launch that started at `start` (`where` / `warm` per argument: its
        place and the blocks resident when it started); returns the bytes written back."""
        self._launches += 1
        n_id = self._launches
        dirty_gone = 0
        touched = []
        for i, loc in enumerate(where):
            if loc is None:
                continue
            key, b0 = loc
            _, last, dirty, owner = self.spaces[key]
            n = min(left.blocks[i], len(last) - b0)
            seg, dseg, oseg = last[b0:b0 + n], dirty[b0:b0 + n], owner[b0:b0 + n]
            if i < len(warm) and warm[i]:  # preloaded blocks the launch evicted
                gone = unpack(warm[i], n) & (seg < np.inf)
                if left.resident[i]:
                    gone &= ~unpack(left.resident[i], n)
                dirty_gone += int(np.count_nonzero(dseg[gone]))
                self.resident -= int(np.count_nonzero(gone))
                seg[gone], dseg[gone] = np.inf, False
            if not left.new[i]:
                continue
            at = np.flatnonzero(unpack(left.new[i], n))
            self.resident += int(np.count_nonzero(seg[at] == np.inf))
            seg[at] = np.maximum(np.where(seg[at] < np.inf, seg[at], -np.inf),
                                 start + left.times[i][at // LaunchL2.GROUP].astype(np.float64))
            if left.dirty[i]:
                dseg[at] |= unpack(left.dirty[i], n)[at]
            oseg[at] = n_id
            touched.append((key, b0 + int(at[0]), b0 + int(at[-1]) + 1))
        if touched:
            self._log.append((n_id, touched))
        if self.resident > self.capacity_blocks:
            dirty_gone += self._evict(self.resident - self.capacity_blocks)
        nbytes = dirty_gone * self.block
        self.written_back += nbytes
        return float(nbytes)

    def _evict(self, excess: int) -> int:
        """Drop `excess` blocks, least recently arrived first; returns the dirty ones."""
        dirty_gone = 0
        while excess > 0 and self._log:
            n_id, extents = self._log[0]
            parts = []
            for key, lo, hi in extents:
                _, last, _, owner = self.spaces[key]
                idx = lo + np.flatnonzero((owner[lo:hi] == n_id) & (last[lo:hi] < np.inf))
                parts.append((key, idx, last[idx]))
            count = sum(len(p[1]) for p in parts)
            if count <= excess:
                self._log.popleft()
                chosen = parts
            else:  # the earliest `excess` of this launch's blocks
                cut = np.partition(np.concatenate([p[2] for p in parts]), excess - 1)[excess - 1]
                chosen, taken = [], 0
                for key, idx, times in parts:
                    pick = idx[times <= cut][:excess - taken]
                    taken += len(pick)
                    chosen.append((key, pick, None))
            for key, idx, _ in chosen:
                _, last, dirty, _ = self.spaces[key]
                dirty_gone += int(np.count_nonzero(dirty[idx]))
                last[idx], dirty[idx] = np.inf, False
                self.resident -= len(idx)
                excess -= len(idx)
        return dirty_gone


class CostModel:
    """Cycle costs of instructions on `target` for one launch (`active`: its cores): keeps
    the launch's shared state -- the L2, the HBM and L2 bandwidths in time -- and counts
    the bytes it sends to HBM (`hbm_bytes`) and serves from the L2 (`l2_bytes`).
    `transfers`, when a list, receives one record per GM transfer: (core, start, end of its
    data, HBM bytes, L2 bytes, DMA bytes, GM region or -1 for a write (-2 and core -1: the
    L2 writing evicted dirty blocks back), first byte, rect, latest arrival of the blocks it
    hit)."""

    def __init__(self, target: Target, active: int = 1):
        self.target = target
        self.active = max(active, 1)
        bpc = target.bytes_per_cycle
        self.block = target.vector.block_bytes
        hbm, l2 = bpc(target.dma.hbm_total), bpc(target.dma.l2_total)
        # a core's share of each (`start_block`): half for its reads, half for its writes
        self.hbm = Bandwidth(hbm, share=hbm / self.active / 2)
        self.l2_bandwidth = Bandwidth(l2, share=l2 / self.active / 2)
        self.l2 = L2(target.memory.l2, self.block)
        self.hbm_bytes = 0.0
        self.l2_bytes = 0.0
        self.written_back = 0.0  # of hbm_bytes: dirty blocks the launch evicted
        self.transfers: list | None = None
        self._rates: dict[str, float] = {}  # dma field -> bytes per cycle
        self._reserve, self._first = 0.0, True  # start_block

    def _dma_rate(self, path: str) -> float:
        rate = self._rates.get(path)
        if rate is None:
            rate = self._rates[path] = self._rate(getattr(self.target.dma, path))
        return rate

    def pipes(self, core: int = 0) -> PipeState:
        """Core `core`'s pipes with this chip's scalar issue and loop costs."""
        o = self.target.overhead
        return PipeState(issue_cost=float(o.issue), loop_cost=float(o.loop), core=core)

    def launch_cycles(self, core_ends: list[float]) -> float:
        return self.target.overhead.launch + max(core_ends, default=0.0)

    def forget_before(self, t: float) -> None:
        """No transfer of the launch starts before t any more."""
        self.hbm.forget_before(t)
        self.l2_bandwidth.forget_before(t)

    def start_block(self, position: int, later: int) -> None:
        """The next block simulated is the `position`-th of its round over the cores, with
        `later` blocks of the round still to come. Its writes, and the reads of every block
        but the round's first, leave each block still to come its fair share (rate / active
        cores) and take at least half their own (its reads and writes may run at once); the
        first block's reads take whatever is free (they fetch what the later blocks may
        share)."""
        self._reserve = later / self.active  # of a bandwidth's rate
        self._first = position == 0

    def _rate(self, gbs: float) -> float:
        return self.target.bytes_per_cycle(gbs)

    def _read(self, t: float, core: int, region: int, first_byte: int, rect: Rect, moved: float, hbm_rate: float,
              l2_rate: float) -> float:
        """A GM read from t: the blocks that miss come from HBM (at the path rate, in the
        HBM left free) and arrive in the L2 when that ends; then the hits stream at the L2
        rate, finishing no earlier than the last of them arrives. Returns the end."""
        misses, blocks, latest, handle = self.l2.lookup(region, first_byte, rect, t)
        hit = moved * (blocks - misses) / blocks
        end = t
        hbm = misses * self.block
        if hbm:
            miss_moved = moved - hit  # the DMA's bytes at its path rate; HBM supplies `hbm` of them
            reserve = 0.0 if self._first else self._reserve * self.hbm.rate
            end = self.hbm.transfer(t, hbm, hbm_rate * hbm / miss_moved, reserve)
            self._write_back(end, self.l2.fill(handle, t, end))
            self.hbm_bytes += hbm
        if hit:
            self.l2_bytes += hit
            begin = max(end, latest - hit / l2_rate)
            reserve = 0.0 if self._first else self._reserve * self.l2_bandwidth.rate
            end = max(self.l2_bandwidth.transfer(begin, hit, l2_rate, reserve), latest)
        if self.transfers is not None:
            self.transfers.append((core, t, end, hbm, hit, moved, region, first_byte, rect, latest))
        return end

    def _write(self, t: float, core: int, moved: float, rate: float, write_at: tuple[int, int] | None = None,
               rect: Rect | None = None) -> float:
        """A GM write of `moved` burst bytes from t at up to `rate`: into the L2 (write-back,
        write-allocate: its blocks become resident and dirty; what that evicts dirty goes to
        HBM) -- or, on a chip without an L2 or to an unknown place, to HBM."""
        if self.l2.capacity_blocks and write_at is not None and rect is not None:
            self.l2_bytes += moved
            end = self.l2_bandwidth.transfer(t, moved, rate, self._reserve * self.l2_bandwidth.rate)
            self._write_back(end, self.l2.write(write_at[0], write_at[1], rect, t, end))
            hbm, l2 = 0.0, moved
        else:
            self.hbm_bytes += moved
            end = self.hbm.transfer(t, moved, rate, self._reserve * self.hbm.rate)
            hbm, l2 = moved, 0.0
        if self.transfers is not None:
            self.transfers.append((core, t, end, hbm, l2, moved, -1, 0, None, -math.inf))
        return end

    def _write_back(self, t: float, blocks: int) -> None:
        """Dirty blocks evicted at t go to HBM: they take HBM bandwidth from t on (the
        transfers still to come find it used), at the chip's HBM rate."""
        if blocks:
            nbytes = blocks * self.block
            self.hbm_bytes += nbytes
            self.written_back += nbytes
            end = self.hbm.transfer(t, nbytes, self.hbm.rate, self._reserve * self.hbm.rate)
            if self.transfers is not None:  # core -1, region -2: the L2's write-back, no core's path
                self.transfers.append((-1, t, end, nbytes, 0.0, nbytes, -2, 0, None, -math.inf))

    def move(self, name: str, src: Rect | None, dst: Rect, read_at: tuple[int, int] | None = None,
             dst_gm: bool = False, scale_bytes: int = 0, write_at: tuple[int, int] | None = None) -> Timing:
        """(start-up, busy, GM transfer) of a move from `src` to `dst` (None: nothing read,
        an empty window); `read_at` / `write_at` = (GM region, first byte) when the source /
        destination is in GM."""
        t = self.target
        if name in GM_READS:
            hbm_path, l2_path = GM_READS[name]
            moved = 0 if src is None else max(burst_bytes(src, self.block), raw_bytes(dst))
            if src is None or read_at is None or not moved:
                return float(t.startup.mte2), moved / self._dma_rate(hbm_path), 0.0
            return float(t.startup.mte2), 0.0, (self._read, read_at[0], read_at[1], src, moved,
                                                 self._dma_rate(hbm_path), self._dma_rate(l2_path))
        if name == "isa.copy_ub_to_gm":
            moved = burst_bytes(dst, self.block)
            return float(t.startup.mte3), 0.0, (self._write, moved, self._dma_rate("ub_to_gm"), write_at, dst) \
                if moved else 0.0
        if name == "isa.fixpipe":
            return self._fixpipe(src, dst, dst_gm, scale_bytes, write_at)
        rate_field, startup = ONCHIP_PATHS[name]
        nbytes = max(0 if src is None else raw_bytes(src), raw_bytes(dst))
        return float(getattr(t.startup, startup)), nbytes / getattr(t.onchip, rate_field), 0.0

    def _fixpipe(self, src: Rect | None, dst: Rect, dst_gm: bool, scale_bytes: int = 0,
                 write_at: tuple[int, int] | None = None) -> Timing:
        """L0C -> GM / L1 / UB through FixPipe (a quant mode converts in line; its scale
        vector's bytes, loaded into the fixpipe buffer, add to the bytes read)."""
        t = self.target
        busy = ((0 if src is None else raw_bytes(src)) + scale_bytes) / t.onchip.l0c_out
        gm: object = 0.0
        if dst_gm:
            moved = burst_bytes(dst, self.block)
            if moved:
                gm = (self._write, moved, float(t.onchip.l0c_out), write_at, dst)
        return float(t.startup.fixpipe), busy, gm

    def img2col(self, nbytes: int) -> Timing:
        return self.move("isa.img2col", None, ((nbytes,), (1,), 1))

    def vector(self, repeats: int, op: str = "default", elem: str = "f16") -> Timing:
        """A vector instruction `op` ("vadd") of `repeats` repeats on `elem` elements."""
        return float(self.target.startup.vector), repeats * self.target.vector_cycles(op, elem), 0.0

    def vector_copy(self, nbytes: int) -> Timing:
        """A Vector-unit copy of `nbytes` (copy_ub_to_ub): one repeat per bytes_per_repeat."""
        return self.vector(max(1, math.ceil(nbytes / self.target.vector.bytes_per_repeat)))

    def broadcast(self, fractals: int, elem: str, nbytes: int) -> Timing:
        """isa.broadcast_ub_to_l0c writing `fractals` L0C fractals (`nbytes`): the Vector
        start-up + the target's cycles per fractal (`vector_cost.broadcast_ub_to_l0c`), or,
        on a chip whose table has no such entry, the bytes at the L0C read-out rate."""
        t = self.target
        per = t.vector_cost.get("broadcast_ub_to_l0c")
        busy = fractals * t.vector_cycles("broadcast_ub_to_l0c", elem) if per is not None \
            else nbytes / t.onchip.l0c_out
        return float(t.startup.vector), float(busy), 0.0

    def mmad(self, mkn: tuple[int, int, int], fractal: tuple[int, int, int]) -> Timing:
        (m, k, n), (m0, k0, n0) = mkn, fractal
        return float(self.target.startup.cube), float(math.ceil(m / m0) * math.ceil(k / k0) * math.ceil(n / n0)), 0.0


class Bandwidth:
    """A bandwidth (`rate` bytes per cycle) the chip's transfers share in time: how much of
    it is in use, piecewise constant -- `times[k]` to `times[k + 1]` (the last segment to
    infinity) uses `used[k]`. A transfer takes, from its start on, at most its own `limit`
    and whatever the transfers placed before it leave free, until its bytes have moved;
    so the bytes moved in any interval never exceed rate x its length.

    A transfer's `reserve` (bytes per cycle) is left free for transfers still to come, down
    to a floor of `share` for it: with it, `CostModel.start_block` keeps the cores simulated
    later from finding the bandwidth taken by the ones simulated first."""

    def __init__(self, rate: float, share: float | None = None):
        self.rate = rate
        self.times: list[float] = [0.0]
        self.used: list[float] = [0.0]
        self.share = rate if share is None else share

    def transfer(self, t: float, nbytes: float, limit: float, reserve: float = 0.0) -> float:
        """Move `nbytes` from time t (>= 0) at up to `limit` bytes per cycle, leaving
        `reserve` free (see the class); returns when the last byte has moved."""
        if nbytes <= 0:
            return t
        times, used, cap = self.times, self.used, self.rate
        limit = min(limit, cap)
        if not limit > 0:
            raise ValueError(f"a transfer of {nbytes} bytes with no bandwidth (limit {limit}, rate {cap})")
        i = bisect.bisect_right(times, t) - 1
        if i < 0:  # before the forgotten past: the earliest segment kept
            i, t = 0, times[0]
        if times[i] < t:
            times.insert(i + 1, t)
            used.insert(i + 1, used[i])
            i += 1
        share = self.share
        n, left, j = len(times), nbytes, i
        takes = []
        while True:
            take = cap - used[j]
            if reserve:  # leave `reserve` to later transfers, but take at least `share`
                soft = take - reserve
                if soft < share:
                    soft = share
                if take > soft:
                    take = soft
            if take > limit:
                take = limit
            if take < 1e-9 * cap:
                take = 0.0
            takes.append(take)
            nxt = times[j + 1] if j + 1 < n else math.inf
            if take:
                room = take * (nxt - times[j])
                if room >= left:
                    end = times[j] + left / take
                    break
                left -= room
            j += 1
        if end < nxt:
            times.insert(j + 1, end)
            used.insert(j + 1, used[j])
        else:
            end = nxt
        for k, take in enumerate(takes, i):
            u = used[k] + take
            used[k] = cap if u > cap else u
        for k in range(min(j + 1, len(times) - 1), max(i, 1) - 1, -1):  # merge equal neighbours
            if used[k] == used[k - 1]:
                del times[k], used[k]
        return end

    def forget_before(self, t: float) -> None:
        """Drop the segments that end before t (no transfer starts that early again)."""
        k = bisect.bisect_right(self.times, t) - 1
        if k > 0:
            del self.times[:k], self.used[:k]

    def moved(self, t0: float, t1: float) -> float:
        """Bytes moved between t0 and t1."""
        total = 0.0
        for k, (a, u) in enumerate(zip(self.times, self.used)):
            b = self.times[k + 1] if k + 1 < len(self.times) else math.inf
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo and u:
                total += (hi - lo) * u
        return total


@dataclass
class PipeState:
    """The timing state of one core's pipes (cycles since the core started) and its scalar
    issue clock; `core` numbers it in its launch's GM transfers."""

    issue_cost: float = 0.0
    loop_cost: float = 0.0
    next_issue: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # earliest start of the next instruction
    hold: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # waits / barriers: no start before this
    last_end: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # when every issued instruction has ended
    busy: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # union of the instructions' spans
    covered: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # end of the union so far
    instructions: list[int] = field(default_factory=lambda: [0] * NPIPES)
    issued: float = 0.0  # the scalar unit's issue clock
    core: int = 0

    def issue(self, p: int, startup: float, busy: float, gm: object = 0.0) -> tuple[float, float]:
        """Schedule an instruction on pipe p (`gm`: its GM transfer, `Timing`); returns its
        (start, end)."""
        next_issue = self.next_issue
        start = next_issue[p]  # max(next_issue[p], hold[p], issued), without the call
        if self.hold[p] > start:
            start = self.hold[p]
        if self.issued > start:
            start = self.issued
        self.issued += self.issue_cost
        if gm:  # the data moves from `start` on (the start-up is latency after it)
            moved = gm[0](start, self.core, *gm[1:]) - start
            if moved > busy:
                busy = moved
        end = start + startup + busy
        next_issue[p] = start + busy if OVERLAPPED[p] else end
        if end > self.last_end[p]:
            self.last_end[p] = end
        cov = self.covered[p]
        if end > cov:
            self.busy[p] += end - (start if start > cov else cov)
            self.covered[p] = end
        self.instructions[p] += 1
        return start, end

    def iteration(self) -> None:
        """One loop iteration on the scalar unit."""
        self.issued += self.loop_cost

    def fire_time(self, p: int) -> float:
        """When a set_flag on p fires: after every earlier instruction of p has ended."""
        return max(self.last_end[p], self.hold[p])

    def wait(self, p: int, until: float) -> float:
        """A wait_flag on p that passes at `until` (or when p reaches it)."""
        t = max(self.next_issue[p], self.hold[p], until)
        self.hold[p] = t
        return t

    def barrier(self, p: int) -> float:
        t = max(self.next_issue[p], self.hold[p], self.last_end[p])
        self.hold[p] = t
        return t

    def shift(self, t: float) -> None:
        """Start every pipe no earlier than t (the next block on this core)."""
        for p in range(NPIPES):
            self.next_issue[p] = max(self.next_issue[p], t)
            self.hold[p] = max(self.hold[p], t)
        self.issued = max(self.issued, t)

    @property
    def end(self) -> float:
        return max(max(self.last_end), max(self.hold))

    @property
    def earliest(self) -> float:
        """No later instruction of this core starts before this."""
        return min(max(a, b, self.issued) for a, b in zip(self.next_issue, self.hold))


@dataclass
class Trace:
    """Instruction spans for a Chrome / Perfetto timeline (one process per core, one
    track per pipe); at most `limit` spans are kept."""

    clock_hz: float
    limit: int = 200_000
    events: list[tuple[int, int, str, float, float, int]] = field(default_factory=list)
    dropped: int = 0
    offset: float = 0.0  # cycles before the current kernel

    def add(self, core: int, pipe: int, name: str, start: float, end: float, instr: int) -> None:
        if len(self.events) < self.limit:
            self.events.append((core, pipe, name, self.offset + start, self.offset + end, instr))
        else:
            self.dropped += 1

    def to_json(self) -> dict:
        us = 1e6 / self.clock_hz
        out = []
        cores = sorted({e[0] for e in self.events})
        for c in cores:
            out.append({"name": "process_name", "ph": "M", "pid": c, "tid": 0, "args": {"name": f"core {c}"}})
            for i, p in enumerate(PIPE_ORDER):
                out.append({"name": "thread_name", "ph": "M", "pid": c, "tid": i, "args": {"name": p.value}})
                out.append({"name": "thread_sort_index", "ph": "M", "pid": c, "tid": i, "args": {"sort_index": i}})
        for core, pipe, name, start, end, instr in self.events:
            out.append({"name": name, "cat": PIPE_ORDER[pipe].value, "ph": "X", "pid": core, "tid": pipe,
                        "ts": start * us, "dur": max(end - start, 0.0) * us, "args": {"instruction": instr}})
        meta = {"clock_hz": self.clock_hz, "dropped_events": self.dropped}
        return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": meta}

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()))
