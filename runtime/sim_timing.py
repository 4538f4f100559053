"""The simulator's timing model: cycles per instruction from the target, one in-order
queue per pipe, the chip's shared HBM and its L2, flags, and the Chrome / Perfetto trace
writer. Every figure comes from `ge.targets` (targets/*.toml, each with its source).

Costs:
- an on-chip move (L1 -> L0A / L0B, img2col, L1 <-> UB, the L0C read-out by FixPipe or by
  the Vector unit's `copy_l0c_to_ub`): the path's start-up + the bytes it really moves /
  the path's bytes per cycle (`[onchip]`). No burst rounding inside the core: an 8 KB
  transposed L1 -> L0B copy costs 8 KB.
- a move to or from GM: each contiguous run rounded up to whole 32-B blocks (the DMA's
  burst, `vector.block_bytes`), at the path's per-core rate (`[dma]`, GB/s converted at this
  chip's clock). Bytes that come from or go to HBM also pass through the core's HBM port:
  one budget for reads (MTE2) and writes (MTE3 / FixPipe) together, of `hbm_total / active`
  bytes per cycle when `active` cores run the launch. So a launch never moves more than
  `hbm_total` per cycle; launches of concurrent streams share it through the executor
  (`HbmCalendar`).
- the L2 (`memory.l2`, `dma.l2_*`): a GM read of a 32-B block that an earlier read of the
  same launch (any core) brought in hits the L2 -- at the L2 path rate, outside the HBM
  budget -- as long as the launch's blocks read so far fit the L2; when they stop
  fitting the L2 is flushed (every block misses again). Writes go to HBM (write-through,
  no allocate). A chip with `l2 = 0` always misses.
- FixPipe (`isa.fixpipe`): its start-up + the larger of the bytes read from L0C and the
  bytes written, at `onchip.l0c_out`; a GM destination also takes the HBM port. Its quant
  mode (dequantize / ReLU / requantize, Ascend C's Fixpipe quant_pre "随路" conversion)
  runs in line at the same rate; the per-channel scale's bytes (staged into the fixpipe
  buffer) are read at that rate too (estimate: no public figure for the FB load). A chip
  without FixPipe (the coupled 910) gets `isa.copy_l0c_to_ub` from `to-isa` instead: an
  on-chip move on the Vector pipe (Vector start-up, `onchip.l0c_out`), and the result goes
  on to GM by its own `copy_ub_to_gm` on MTE3.
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
GM_READS = {"isa.copy_gm_to_l1": ("gm_to_l1", "l2_to_l1"), "isa.copy_gm_to_ub": ("gm_to_ub", "l2_to_ub")}

Rect = tuple[tuple[int, ...], tuple[int, ...], int]  # (shape, element strides, element bytes)
Timing = tuple[float, float, float]  # (start-up, busy, cycles of the core's HBM port)


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
    """Which 32-B GM blocks the launch has read (per GM region), for hit / miss."""

    def __init__(self, capacity: int, block: int):
        self.capacity_blocks = capacity // block
        self.block = block
        self.read: dict[int, np.ndarray] = {}
        self.resident = 0

    def access(self, region: int, first_byte: int, rect: Rect) -> tuple[int, int]:
        """Read a rectangle: (blocks that miss, blocks in all)."""
        rel, run = _relative_blocks(first_byte % self.block, rect, self.block)
        count = len(rel)
        if self.capacity_blocks == 0 or not count:
            return count, count
        base = first_byte // self.block
        seen = self.read.get(region)
        top = int(rel[-1]) + base + 1
        if seen is None or len(seen) < top:
            grown = np.zeros(max(top, 2 * len(seen) if seen is not None else top), dtype=bool)
            if seen is not None:
                grown[:len(seen)] = seen
            seen = self.read[region] = grown
        lo = int(rel[0]) + base
        run = run and lo >= 0
        if run:  # one run of blocks: a slice, no index array
            window = seen[lo:lo + count]
        else:
            idx = rel + base
            window = None
        misses = count - int(np.count_nonzero(window if run else seen[idx]))
        if self.resident + misses > self.capacity_blocks:  # does not fit: flush, everything misses
            for arr in self.read.values():
                arr[:] = False
            self.resident, misses = 0, count
        if run:
            window[...] = True
        else:
            seen[idx] = True
        self.resident += misses
        return misses, count


class CostModel:
    """Cycle costs of instructions on `target` when `active` cores run one launch; keeps the
    launch's L2 state and counts the bytes it sends to HBM (`hbm_bytes`) and serves from
    the L2 (`l2_bytes`)."""

    def __init__(self, target: Target, active: int = 1):
        self.target = target
        self.active = max(active, 1)
        bpc = target.bytes_per_cycle
        self.block = target.vector.block_bytes
        self.hbm_share = bpc(target.dma.hbm_total) / self.active  # bytes per cycle of one core's HBM port
        self.l2_share = bpc(target.dma.l2_total) / self.active
        self.l2 = L2(target.memory.l2, self.block)
        self.hbm_bytes = 0.0
        self.l2_bytes = 0.0
        self._rates: dict[str, float] = {}  # dma field -> bytes per cycle

    def _dma_rate(self, path: str) -> float:
        rate = self._rates.get(path)
        if rate is None:
            rate = self._rates[path] = self._rate(getattr(self.target.dma, path))
        return rate

    def pipes(self) -> PipeState:
        """A core's pipes with this chip's scalar issue and loop costs."""
        o = self.target.overhead
        return PipeState(issue_cost=float(o.issue), loop_cost=float(o.loop))

    def launch_cycles(self, core_ends: list[float]) -> float:
        return self.target.overhead.launch + max(core_ends, default=0.0)

    def _rate(self, gbs: float) -> float:
        return self.target.bytes_per_cycle(gbs)

    def _write(self, rect: Rect) -> tuple[float, float]:
        """(bytes, port cycles) of a GM write: burst bytes, all to HBM."""
        moved = burst_bytes(rect, self.block)
        self.hbm_bytes += moved
        return moved, moved / self.hbm_share

    def move(self, name: str, src: Rect | None, dst: Rect, read_at: tuple[int, int] | None = None,
             dst_gm: bool = False, scale_bytes: int = 0) -> Timing:
        """(start-up, busy, HBM port cycles) of a move from `src` to `dst` (None: nothing read,
        an empty window); `read_at` = (GM region, first byte) when the source is in GM."""
        t = self.target
        if name in GM_READS:
            hbm_path, l2_path = GM_READS[name]
            moved = 0 if src is None else max(burst_bytes(src, self.block), raw_bytes(dst))
            if src is None or read_at is None:
                return float(t.startup.mte2), moved / self._dma_rate(hbm_path), 0.0
            misses, blocks = self.l2.access(read_at[0], read_at[1], src)
            hit = moved * (blocks - misses) / blocks if blocks else 0.0
            hbm = misses * self.block
            self.hbm_bytes += hbm
            self.l2_bytes += hit
            busy = (moved - hit) / self._dma_rate(hbm_path)
            if hit:
                busy += hit / min(self._dma_rate(l2_path), self.l2_share)
            return float(t.startup.mte2), busy, hbm / self.hbm_share
        if name == "isa.copy_ub_to_gm":
            moved, port = self._write(dst)
            return float(t.startup.mte3), moved / self._dma_rate("ub_to_gm"), port
        if name == "isa.fixpipe":
            return self._fixpipe(src, dst, dst_gm, scale_bytes)
        rate_field, startup = ONCHIP_PATHS[name]
        nbytes = max(0 if src is None else raw_bytes(src), raw_bytes(dst))
        return float(getattr(t.startup, startup)), nbytes / getattr(t.onchip, rate_field), 0.0

    def _fixpipe(self, src: Rect | None, dst: Rect, dst_gm: bool, scale_bytes: int = 0) -> Timing:
        """L0C -> GM / L1 / UB through FixPipe (a quant mode converts in line; its scale
        vector's bytes, loaded into the fixpipe buffer, add to the bytes read)."""
        t = self.target
        busy = ((0 if src is None else raw_bytes(src)) + scale_bytes) / t.onchip.l0c_out
        port = 0.0
        if dst_gm:
            moved, port = self._write(dst)
            busy = max(busy, moved / t.onchip.l0c_out)
        return float(t.startup.fixpipe), busy, port

    def img2col(self, nbytes: int) -> Timing:
        return self.move("isa.img2col", None, ((nbytes,), (1,), 1))

    def vector(self, repeats: int, op: str = "default", elem: str = "f16") -> Timing:
        """A vector instruction `op` ("vadd") of `repeats` repeats on `elem` elements."""
        return float(self.target.startup.vector), repeats * self.target.vector_cycles(op, elem), 0.0

    def vector_copy(self, nbytes: int) -> Timing:
        """A Vector-unit copy of `nbytes` (copy_ub_to_ub): one repeat per bytes_per_repeat."""
        return self.vector(max(1, math.ceil(nbytes / self.target.vector.bytes_per_repeat)))

    def mmad(self, mkn: tuple[int, int, int], fractal: tuple[int, int, int]) -> Timing:
        (m, k, n), (m0, k0, n0) = mkn, fractal
        return float(self.target.startup.cube), float(math.ceil(m / m0) * math.ceil(k / k0) * math.ceil(n / n0)), 0.0


class Port:
    """One core's HBM port: the cycles it is busy, as disjoint sorted intervals. A transfer
    takes the first free cycles from its start on (filling gaps an instruction simulated
    earlier left), so the port never does more than one cycle of work per cycle whatever
    order the pipes' instructions are simulated in."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def reserve(self, t: float, amount: float) -> float:
        """Take `amount` free cycles from t on; returns when the last one ends."""
        starts, ends = self.starts, self.ends
        i = j = bisect.bisect_right(ends, t)
        cur, left = t, amount
        pieces = []
        while left > 1e-9:
            if j < len(starts) and starts[j] <= cur:
                cur = max(cur, ends[j])
                j += 1
                continue
            gap = (starts[j] if j < len(starts) else math.inf) - cur
            take = min(left, gap)
            pieces.append((cur, cur + take))
            cur += take
            left -= take
        merged: list[list[float]] = []
        for a, b in sorted([*zip(starts[i:j], ends[i:j]), *pieces]):
            if merged and a <= merged[-1][1] + 1e-9:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        starts[i:j] = [a for a, _ in merged]
        ends[i:j] = [b for _, b in merged]
        return cur

    def forget_before(self, t: float) -> None:
        """Drop the intervals that end before t (no transfer can start that early again)."""
        k = bisect.bisect_left(self.ends, t)
        del self.starts[:k], self.ends[:k]


@dataclass
class PipeState:
    """The timing state of one core's pipes (cycles since the core started), its HBM port
    and its scalar issue clock."""

    issue_cost: float = 0.0
    loop_cost: float = 0.0
    next_issue: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # earliest start of the next instruction
    hold: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # waits / barriers: no start before this
    last_end: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # when every issued instruction has ended
    busy: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # union of the instructions' spans
    covered: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # end of the union so far
    instructions: list[int] = field(default_factory=lambda: [0] * NPIPES)
    port: Port = field(default_factory=Port)  # the core's HBM port
    issued: float = 0.0  # the scalar unit's issue clock

    def issue(self, p: int, startup: float, busy: float, port: float = 0.0) -> tuple[float, float]:
        """Schedule an instruction on pipe p (`port`: cycles it needs the core's HBM port
        for); returns its (start, end)."""
        next_issue = self.next_issue
        start = next_issue[p]  # max(next_issue[p], hold[p], issued), without the call
        if self.hold[p] > start:
            start = self.hold[p]
        if self.issued > start:
            start = self.issued
        self.issued += self.issue_cost
        if port:  # the data moves from `start` on (the start-up is latency after it)
            busy = max(busy, self.port.reserve(start, port) - start)
            if len(self.port.ends) > 64:
                self.port.forget_before(min(max(a, b, self.issued) for a, b in zip(self.next_issue, self.hold)))
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


class HbmCalendar:
    """The chip's HBM bandwidth over time, shared by the launches of concurrent streams.

    Each launch was simulated alone: `cycles` long, `nbytes` to / from HBM, so it needs
    nbytes / cycles bytes per cycle. Placed from `start`, it runs at full speed while the
    launches placed before it leave that much bandwidth free, and proportionally slower
    while they do not (the earlier launches keep their share); `place` returns when it
    ends. Usage is piecewise constant: `points` = [(time, bytes per cycle in use from then)].
    """

    def __init__(self, bytes_per_cycle: float):
        self.rate = bytes_per_cycle
        self.points: list[list[float]] = [[0.0, 0.0]]

    def _split(self, t: float) -> int:
        """The index of the point at time t (inserted if needed)."""
        times = [p[0] for p in self.points]
        i = int(np.searchsorted(times, t, side="right")) - 1
        if self.points[i][0] == t:
            return i
        self.points.insert(i + 1, [t, self.points[i][1]])
        return i + 1

    def place(self, start: float, cycles: float, nbytes: float) -> float:
        if nbytes <= 0 or cycles <= 0:
            return start + max(cycles, 0.0)
        want = nbytes / cycles
        i = self._split(start)
        done, used = 0.0, []
        while True:
            t0, u = self.points[i]
            t1 = self.points[i + 1][0] if i + 1 < len(self.points) else math.inf
            speed = min(1.0, max(self.rate - u, 0.0) / want)
            if speed > 0 and t0 + (cycles - done) / speed <= t1:
                end = t0 + (cycles - done) / speed
                used.append((i, speed))
                break
            done += (t1 - t0) * speed
            used.append((i, speed))
            i += 1
        j = self._split(end)
        for k, speed in used:
            if k < j:
                self.points[k][1] += want * speed
        return end

    def used(self, t: float) -> float:
        """Bytes per cycle in use at time t."""
        times = [p[0] for p in self.points]
        return self.points[int(np.searchsorted(times, t, side="right")) - 1][1]


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
