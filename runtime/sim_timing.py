"""The simulator's timing model: cycles per instruction from the target, one in-order
queue per pipe, flags, and the Chrome / Perfetto trace writer.

Costs (every figure from `ge.targets`):
- a move: the path's start-up cycles + bytes / bandwidth. Bytes are counted as the DMA
  moves them: each contiguous run of a rectangle rounded up to whole `block_bytes` blocks,
  the larger of the two sides. Paths to and from GM share the chip's HBM bandwidth:
  each of the `active` cores gets at most `hbm_total / active`.
- `mmad`: the Cube's start-up + one cycle per m0 x k0 x n0 fractal.
- a vector instruction: the Vector start-up + one cycle per repeat.

Pipes. Instructions of one pipe start in program order. The data movers and the Vector
unit are pipelined: the next instruction may start once the previous one has issued its
data (after its busy cycles), while the previous one is still finishing its start-up
latency -- so dependent instructions of one pipe need an `isa.pipe_barrier`. The Cube
(M) and the scalar unit (S) finish one instruction before starting the next.
`set_flag` fires when every earlier instruction of its pipe has finished (it does not hold
its pipe); `wait_flag` holds its pipe until the flag fires; `pipe_barrier` holds its
pipe until the pipe's earlier instructions have finished.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ge.dialects.isa import Pipe
from ge.targets import Target

PIPE_ORDER = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)
PIPE_INDEX = {p: i for i, p in enumerate(PIPE_ORDER)}
NPIPES = len(PIPE_ORDER)
PIPELINED = tuple(p not in (Pipe.M, Pipe.S) for p in PIPE_ORDER)

# move op name -> (target.dma field, target.startup field, touches GM)
MOVE_PATHS = {
    "isa.copy_gm_to_l1": ("gm_to_l1", "mte2", True),
    "isa.copy_gm_to_ub": ("gm_to_ub", "mte2", True),
    "isa.copy_ub_to_gm": ("ub_to_gm", "mte3", True),
    "isa.copy_ub_to_l1": ("l1_to_ub", "mte3", False),  # the L1 <-> UB figure, both directions
    "isa.copy_l1_to_ub": ("l1_to_ub", "mte1", False),
    "isa.copy_l1_to_l0a": ("l1_to_l0a", "mte1", False),
    "isa.copy_l1_to_l0b": ("l1_to_l0b", "mte1", False),
    "isa.img2col": ("l1_to_l0a", "mte1", False),
    "isa.fixpipe": ("l0c_to_gm", "fixpipe", False),  # L0C read-out; GM share applied when dst is GM
}


@dataclass(frozen=True)
class CostModel:
    """Cycle costs of instructions on `target` when `active` cores stream from GM."""

    target: Target
    active: int = 1

    def bytes_per_cycle(self, bandwidth_gbs: float, gm: bool) -> float:
        if gm:
            bandwidth_gbs = min(bandwidth_gbs, self.target.dma.hbm_total / max(self.active, 1))
        return bandwidth_gbs * 1e9 / self.target.clock_hz

    def move(self, name: str, nbytes: int, gm: bool) -> tuple[float, float]:
        """(start-up, busy) cycles of a move of `nbytes` (DMA-counted) bytes."""
        field_name, startup, path_gm = MOVE_PATHS[name]
        bw = self.bytes_per_cycle(getattr(self.target.dma, field_name), gm or path_gm)
        return float(getattr(self.target.startup, startup)), nbytes / bw

    def vector(self, repeats: int) -> tuple[float, float]:
        return float(self.target.startup.vector), float(repeats)

    def vector_bytes(self, nbytes: int) -> tuple[float, float]:
        """A vector-unit move of `nbytes` (copy_ub_to_ub): one repeat per bytes_per_repeat."""
        return self.vector(max(1, math.ceil(nbytes / self.target.vector.bytes_per_repeat)))

    def mmad(self, mkn: tuple[int, int, int], fractal: tuple[int, int, int]) -> tuple[float, float]:
        (m, k, n), (m0, k0, n0) = mkn, fractal
        return float(self.target.startup.cube), float(math.ceil(m / m0) * math.ceil(k / k0) * math.ceil(n / n0))

    def burst_bytes(self, shape: tuple[int, ...], strides: tuple[int, ...], size: int) -> int:
        """Bytes a DMA moves for a rectangle: contiguous runs rounded up to whole blocks."""
        if not shape or 0 in shape:
            return 0
        block = self.target.vector.block_bytes
        dims = [(n, s) for n, s in zip(shape, strides) if n > 1]
        run = size
        while dims and dims[-1][1] * size == run:  # merge contiguous inner dims
            n, _ = dims.pop()
            run *= n
        runs = math.prod(n for n, _ in dims)
        return runs * (-(-run // block) * block)


@dataclass
class PipeState:
    """The timing state of one core's pipes (cycles since the core started)."""

    next_issue: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # earliest start of the next instruction
    hold: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # waits / barriers: no start before this
    last_end: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # when every issued instruction has ended
    busy: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # union of the instructions' spans
    covered: list[float] = field(default_factory=lambda: [0.0] * NPIPES)  # end of the union so far
    instructions: list[int] = field(default_factory=lambda: [0] * NPIPES)

    def issue(self, p: int, startup: float, busy: float) -> tuple[float, float]:
        """Schedule an instruction on pipe p; returns its (start, end)."""
        start = max(self.next_issue[p], self.hold[p])
        end = start + startup + busy
        self.next_issue[p] = start + busy if PIPELINED[p] else end
        if end > self.last_end[p]:
            self.last_end[p] = end
        cov = self.covered[p]
        if end > cov:
            self.busy[p] += end - max(start, cov)
            self.covered[p] = end
        self.instructions[p] += 1
        return start, end

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

    @property
    def end(self) -> float:
        return max(max(self.last_end), max(self.hold))


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
