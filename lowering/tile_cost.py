"""The analytic cost model the `tile` pass chooses tiles with (a roofline per tile).

Every figure comes from the target (`ge.targets`), the same ones the simulator's timing
(`ge.runtime.sim_timing`) reads: the Cube's fractal per element type, cycles per vector
repeat of `bytes_per_repeat` bytes, GM bandwidth per path (GB/s at the chip's clock) and
on-chip bandwidth per path (bytes per cycle), and the start-up cycles of each instruction
kind. A tile's work is split over the AI Core's pipes
as the Ascend C paradigms run it:

- MTE2 (GM -> L1 / UB), MTE1 (L1 -> L0A / L0B, incl. img2col), M (Cube: one cycle per
  m0 x k0 x n0 fractal, the start-up once per chain of mmads: the Cube is pipelined), FIX
  (L0C -> UB: FixPipe, or the Vector-unit route on a chip without one), V (the table's
  default cycles per repeat of every vector op), MTE3 (UB -> GM); each transfer costs
  start-up + bytes / bandwidth, and a core's GM bandwidth is at most its share of the
  chip's HBM bandwidth when `blocks` cores stream.
  Reads and writes of GM share that bandwidth: their sum is one more stage ("HBM").
- With double buffering (buffer count 2) the stages of consecutive tiles overlap: a
  loop of n iterations costs n * (slowest stage) + the other stages once (fill and
  drain); with single buffers the stages of an iteration run one after another.

The model ignores bank conflicts, L2 hits, per-op vector costs, scalar overhead and
instruction issue limits; it is a ranking device (which tiling is better) and a
lower-bound estimate. The roofline (`Roofline`, `tile.bound`) takes the Cube at one
fractal per cycle and the Vector unit at one repeat per cycle on every core, and the GM
bytes at the chip's HBM rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ge.dialects.dtypes import numpy_dtype
from ge.targets import Target

# DMA path -> (target.dma field (GB/s) for GM paths, target.onchip field (bytes / cycle) for
# on-chip ones, target.startup field)
PATHS = {
    "gm_to_l1": ("gm_to_l1", "mte2"),
    "gm_to_ub": ("gm_to_ub", "mte2"),
    "ub_to_gm": ("ub_to_gm", "mte3"),
    "l1_to_l0a": ("l1_to_l0a", "mte1"),
    "l1_to_l0b": ("l1_to_l0b", "mte1"),
    "l0c_to_ub": ("l0c_out", "fixpipe"),  # the L0C read-out: FixPipe, or the Vector-unit route
    "l1_to_ub": ("l1_to_ub", "mte1"),
}
GM_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm")


@dataclass(frozen=True)
class Machine:
    """The target's figures in the units the model uses (bytes per cycle, cycles)."""

    target: Target

    _bpc: dict = field(default_factory=dict, compare=False, repr=False)  # memo of bytes_per_cycle

    def bytes_per_cycle(self, path: str, blocks: int = 1) -> float:
        key = (path, blocks)
        if (hit := self._bpc.get(key)) is None:
            hit = self._bpc[key] = _bytes_per_cycle(self.target, path, blocks)
        return hit

    def dma(self, path: str, nbytes: float, blocks: int = 1, count: int = 1) -> float:
        """Cycles of `count` transfers moving `nbytes` in total on `path`."""
        if nbytes <= 0:
            return 0.0
        _, startup = PATHS[path]
        if path == "l0c_to_ub" and not self.target.isa.fixpipe:
            startup = "vector"
        return count * getattr(self.target.startup, startup) + nbytes / self.bytes_per_cycle(path, blocks)

    def fractal(self, elem: str) -> tuple[int, int, int]:
        """The Cube's (m0, k0, n0) for inputs of element type `elem`. A type without an
        entry in the target (f32) reads the same 32-byte K rows as the f16 fractal:
        k0 = k0(f16) * 2 / element size."""
        frac = self.target.cube_fractal(elem)
        if frac is not None:
            return frac
        m, k, n = self.target.cube_fractal("f16") or (16, 16, 16)
        return m, max(1, k * 2 // numpy_dtype_size(elem)), n

    def cube(self, tm: int, tk: int, tn: int, elem: str, count: int = 1) -> float:
        """Cycles of a chain of `count` mmad instructions on a tm x tk x tn tile (pipelined:
        one start-up)."""
        m0, k0, n0 = self.fractal(elem)
        return self.target.startup.cube + count * math.ceil(tm / m0) * math.ceil(tk / k0) * math.ceil(tn / n0)

    def vector(self, nbytes: float, ops: int = 1) -> float:
        """Cycles of `ops` vector instructions over `nbytes` each (the default cycles per
        repeat of the target's `[vector_cost]`)."""
        if ops <= 0:
            return 0.0
        per_repeat = self.target.vector_cycles("default", "f16")
        return ops * (self.target.startup.vector + per_repeat * math.ceil(nbytes / self.target.vector.bytes_per_repeat))

    def cores(self, cube: bool) -> int:
        return self.target.cores.cube if cube else self.target.cores.vector

    def peak_macs(self, elem: str, cores: int) -> float:
        m0, k0, n0 = self.fractal(elem)
        return m0 * k0 * n0 * cores

    def hbm_bytes_per_cycle(self) -> float:
        return self.target.bytes_per_cycle(self.target.dma.hbm_total)

    def hbm(self, nbytes: float, blocks: int) -> float:
        """Cycles one of `blocks` streaming cores needs to move `nbytes` to or from GM at its
        share of the chip's HBM bandwidth (reads and writes together)."""
        return nbytes * max(blocks, 1) / self.hbm_bytes_per_cycle()


def _bytes_per_cycle(target: Target, path: str, blocks: int) -> float:
    field, _ = PATHS[path]
    if path not in GM_PATHS:
        return getattr(target.onchip, field)
    return target.bytes_per_cycle(min(getattr(target.dma, field), target.dma.hbm_total / max(blocks, 1)))


def numpy_dtype_size(elem: str) -> int:
    sizes = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "ui8": 1}
    return sizes.get(elem, 4)


def elem_name(attr) -> str:
    """"f16", "f32", "i8", ... for an element type attribute."""
    dt = numpy_dtype(attr)
    return {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
            "int32": "i32", "int64": "i64", "uint8": "ui8", "bool": "i1"}.get(dt.name, dt.name)


def pipelined(iterations: int, stages: Sequence[float], double: bool) -> float:
    """Cycles of a loop whose iterations run `stages` (one per pipe): overlapped across
    iterations with double buffering (slowest stage per iteration + fill/drain), one after
    another without."""
    if iterations <= 0:
        return 0.0
    total = sum(stages)
    if not double:
        return iterations * total
    slowest = max(stages, default=0.0)
    return iterations * slowest + (total - slowest)


def align(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment


@dataclass(frozen=True)
class Roofline:
    """The chip-level bound of one kernel: max(compute at peak, GM traffic at HBM speed)."""

    compute: float
    memory: float

    @property
    def bound(self) -> float:
        return max(self.compute, self.memory)
