"""The executor: runs a model file (the `task` level) and returns its outputs.

Where it sits: the last box of DESIGN.md §2 — `build-model` made a `task.model`,
`ge.runtime.model_file` stored it; this module loads that file and runs it ("model
sinking": the whole graph on the device, no host round trips between kernels).

Loading. One GM arena (numpy bytes, the model's `arena` size) with the weights region
filled from the WEIGHTS partition; every tensor of the model definition becomes a numpy
view of the arena at its offset. The kernels of the KERNELS partition are decoded once:

- `isa.kernel`: kernel code (`ge.runtime.kernel_code`, no MLIR parsed), one program per
  distinct body, on the AI Core simulator (`ge.runtime.simulator`) — functional, timed and
  checked; the timing and checks of each body are kept in `analyses` and reused by later
  launches and runs (they do not depend on the data), and `run(timing_only=True)` skips
  the numerics. A problem the simulator reports raises `KernelProblemError` unless
  `allow_hazards`;
- the debug levels' MLIR module, parsed once: `tile.kernel`: the tile interpreter (`ge.runtime.tile_interp`) — functional only; its
  cycles are the tile cost model's estimate (`tile.cycles`), a fast debug mode;
- `func.func` (kernels outlined at the fusion level): the reference interpreter.

Running. Inputs are checked against the model's signature (names, dtypes, shapes;
`InputError` naming the input and what is wrong); for a gear model (dynamic batch, image
size or dims) the gear is the one compiled for exactly the given input shapes, and a shape
no gear was compiled for is an `InputError` listing the gears. The tasks then run on their streams: tasks of one
stream in order, `event_wait` holding its stream until the matching `event_record` (the
latest one before it in issue order) has fired, i.e. until every task before the record on
the recording stream has finished. Streams share the chip's cores: a launch occupies
min(block_dim, cores) cores (the Cube cores or the Vector cores on a separated chip, the
one pool of AI Cores on a coupled one) for its cycles and starts when its stream is free,
its waited events have fired and enough cores are free; a copy (`task.copy`, an SDMA task)
takes no core, start-up + read and write of its bytes at the HBM bandwidth. So a second
stream can lower the total cycles. The chip's L2 lives for the run (cold at its start):
each launch is simulated when it is scheduled, in start order across the streams, and
finds what the launches simulated before it left there by its start
(`sim_timing.ChipL2`); a copy task neither reads nor fills it. `KernelRun.l2_bound` is the
tiler's bound with the bytes the launch found in the L2 or wrote into it at the L2 rate.
The functional results do not depend on the timing: tasks execute in an order that
respects every stream and event dependency, and `build-model` guarantees that tasks
touching the same bytes are ordered.

`RunReport` has the total cycles, per task its stream, start, end and cores, per kernel its
cycles, pipe busy cycles and roofline bound, and a Chrome / Perfetto timeline: one track
per stream, and at the isa level the simulator's per-pipe tracks on the cores each launch
ran on.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ge import targets
from ge.errors import GeError, InputError, ModelFormatError
from ge.runtime.model_file import Model, gear_label, load_model, no_gc

log = logging.getLogger("ge.executor")


class ExecutionError(GeError):
    """A model that cannot run as stored (a wait with no record, a kernel missing from the
    KERNELS partition, an unsupported element type)."""


class KernelProblemError(ExecutionError):
    """The simulator reported problems in the model's kernels (hazards, races between cores,
    out-of-bounds or never-written reads, ...): the outputs cannot be trusted."""


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------


@dataclass
class KernelRun:
    """What one launch did: cycles (simulated at the isa level, the cost model's estimate at
    the tile level), pipe busy cycles summed over its cores, the roofline bound if known."""

    task: int
    kernel: str
    node: str
    stream: int
    start: float
    cycles: float
    cores: int
    blocks: int
    bound: float | None = None
    l2_bound: float | None = None  # `bound` with what the L2 held or took at its rate (`_l2_bound`)
    pipe_busy: dict[str, float] = field(default_factory=dict)
    instructions: dict[str, int] = field(default_factory=dict)
    alone: float = 0.0  # cycles simulated alone; `cycles` adds the wait for HBM other streams use
    hbm_bytes: float = 0.0  # bytes to / from HBM (dirty L2 blocks written back included)
    l2_bytes: float = 0.0  # bytes read from or written to the L2
    work: dict[str, int] = field(default_factory=dict)  # the simulator's instruction counts (KernelStats.work)
    super_kernel: int | None = None  # the SuperKernel it ran in (`task.launch ... super_kernel N`)
    dispatch: float = 0.0  # of `cycles`: its dispatch (`overhead.launch`) or, in a SuperKernel but first, the barrier

    def utilization(self) -> dict[str, float]:
        span = self.cycles * self.cores
        return {p: b / span for p, b in self.pipe_busy.items() if span and self.instructions.get(p)}


class _Kernel:
    """One kernel symbol of the KERNELS partition: `program` is its decoded body (shared by
    the symbols with identical bodies at the isa level)."""

    def __init__(self, entry: dict[str, Any], program: Any, level: str, uses_cube: bool):
        self.name = entry["name"]
        self.level = level
        self.block_dim = int(entry.get("block_dim", 1))
        self.modeled = entry.get("modeled_cycles")
        self.bound = entry.get("bound")
        self.program = program
        self.uses_cube = uses_cube

    def run(self, ins: list[np.ndarray], outs: list[np.ndarray], sim, timing_only: bool = False,
            start: float = 0.0) -> Any:
        """Execute on the arena views (the launch starting at `start`: what it finds in the
        L2); returns the simulator's KernelStats at the isa level."""
        if self.level == "isa":
            return sim.run_kernel(self.program, [*ins, *outs], self.name, timing_only, start)
        if self.level == "tile":
            self.program.run([*ins, *outs])
            return None
        from ge.runtime.reference import run_function

        for out, value in zip(outs, run_function(self.program, ins)):
            out[...] = value
        return None


def _decode_kernels(model: Model, target: targets.Target) -> list[_Kernel]:
    """The kernels of the model definition, in order; isa kernel code is decoded once per
    body (no MLIR is parsed), the debug levels' MLIR text parsed once."""
    part = model.kernels
    where = model.path or model.name
    if part.get("format") == "isa-code":
        from ge.runtime import kernel_code
        from ge.runtime.simulator import KernelProgram

        if part.get("version") != kernel_code.VERSION:
            raise ModelFormatError(f"{where}: kernel code version {part.get('version')} is not supported (this ge "
                                   f"reads version {kernel_code.VERSION}): compile the model again")
        kernels = []
        for entry in model.definition["kernels"]:
            ref = part["kernels"].get(entry["name"])
            if ref is None:
                raise ExecutionError(f"{where}: kernel @{entry['name']} is not in the KERNELS partition")
            program = KernelProgram(kernel_code.label(part["bodies"][ref["body"]], ref["names"]), target,
                                    entry["name"])
            program.analysis_key = ("body", ref["body"])  # kernels with the same code share timing and checks
            kernels.append(_Kernel(entry, program, "isa", program.uses_cube))
        return kernels
    if part.get("format") != "mlir" or not isinstance(part.get("text"), str) or part.get("level") == "isa":
        raise ModelFormatError(f"{where}: the KERNELS partition is neither isa kernel code nor an MLIR module of "
                               "graph- or tile-level kernels")
    from ge.ir import parse_module

    module = parse_module(part["text"], f"{where}:KERNELS")
    symbols = {op.properties["sym_name"].data: op for op in module.ops if "sym_name" in op.properties}
    level = part.get("level", model.metadata.get("kernel_level", "graph"))
    kernels = []
    for entry in model.definition["kernels"]:
        if entry["name"] not in symbols:
            raise ExecutionError(f"{where}: kernel @{entry['name']} is not in the KERNELS partition")
        op = symbols[entry["name"]]
        program: Any
        if level == "tile":
            from ge.dialects import tile
            from ge.runtime.tile_interp import KernelProgram as TileKernel

            program, uses_cube = TileKernel(op), any(isinstance(o, tile.MmadOp) for o in op.walk())
        else:
            program, uses_cube = op, False
        kernels.append(_Kernel(entry, program, level, uses_cube))
    return kernels


# --------------------------------------------------------------------------------------
# Cores and the schedule
# --------------------------------------------------------------------------------------


class _Cores:
    """When each core of the chip is next free, and the chip's HBM over time. A coupled chip
    has one pool of AI Cores; a separated one a Cube pool and a Vector pool. Trace ids: Cube
    cores first. Launches (and copies) of concurrent streams share the HBM bandwidth
    (`hbm`, a `sim_timing.Bandwidth`; `on_hbm`): a launch simulated alone that needs more
    than the others leave free runs proportionally longer."""

    def __init__(self, target: targets.Target):
        from ge.runtime.sim_timing import Bandwidth

        self.hbm = Bandwidth(target.bytes_per_cycle(target.dma.hbm_total))
        self.coupled = target.architecture == "coupled"
        self.free = {"cube": [0.0] * target.cores.cube}
        if not self.coupled:
            self.free["vector"] = [0.0] * target.cores.vector
        self.first_id = {"cube": 0, "vector": 0 if self.coupled else target.cores.cube}

    @property
    def count(self) -> int:
        return sum(len(f) for f in self.free.values())

    def pool(self, uses_cube: bool) -> str:
        return "cube" if uses_cube or self.coupled else "vector"

    def claim(self, pool: str, wanted: int, ready: float) -> tuple[float, list[int]]:
        """The earliest start at or after `ready` with `wanted` cores free, and which cores."""
        free = self.free[pool]
        chosen = heapq.nsmallest(min(wanted, len(free)), range(len(free)), key=lambda c: (free[c], c))
        return max([ready, *(free[c] for c in chosen)]), chosen

    def hold(self, pool: str, cores: list[int], end: float) -> None:
        for c in cores:
            self.free[pool][c] = end

    def on_hbm(self, start: float, cycles: float, nbytes: float) -> float:
        """When a task simulated alone -- `cycles` long, `nbytes` to / from HBM, so needing
        nbytes / cycles bytes per cycle -- ends when placed on the HBM from `start`: at full
        speed while the tasks placed before it leave that much free, proportionally slower
        while they do not (they keep theirs)."""
        if nbytes <= 0 or cycles <= 0:
            return start + max(cycles, 0.0)
        return self.hbm.transfer(start, nbytes, nbytes / cycles)


@dataclass
class TaskSpan:
    """When a launch or copy ran, on which stream and cores (trace ids), and the SuperKernel
    a launch ran in."""

    task: int
    kind: str
    name: str
    stream: int
    start: float
    end: float
    cores: list[int] = field(default_factory=list)
    super_kernel: int | None = None


@dataclass
class RunReport:
    """The timing of one run (see the module docstring)."""

    clock_hz: float
    cycles_source: str  # "simulated" (isa), "modeled" (tile: the cost model), "none" (graph)
    batch: int | None
    spans: list[TaskSpan] = field(default_factory=list)
    kernels: list[KernelRun] = field(default_factory=list)
    problems: list[Any] = field(default_factory=list)
    gear: str | None = None  # the gear's label in a gear model (`batch=4`, `224x224`, `dims=16`)
    cache: str | None = None  # in the dynamic-shape mode: "memory hit", "disk hit" or "compiled"
    _pipe_events: list[tuple[int, int, str, float, float, int]] = field(default_factory=list, repr=False)
    _core_count: int = 0

    @property
    def total_cycles(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    @property
    def streams(self) -> int:
        return len({s.stream for s in self.spans})

    def table(self, limit: int | None = None) -> str:
        """Per kernel: cycles, share of the kernels' cycles, roofline bound, pipe utilization."""
        total = sum(k.cycles for k in self.kernels) or 1.0
        rows = sorted(self.kernels, key=lambda k: -k.cycles)[:limit]
        lines = [f"{'kernel':40s} {'stream':>6s} {'cores':>5s} {'cycles':>10s} {'share':>6s} {'bound':>9s}  pipes busy"]
        for k in rows:
            bound = f"{k.bound:9.0f}" if k.bound is not None else f"{'-':>9s}"
            pipes = " ".join(f"{p} {u:.0%}" for p, u in sorted(k.utilization().items(), key=lambda x: -x[1]))
            lines.append(f"{k.kernel[:40]:40s} {k.stream:6d} {k.cores:5d} {k.cycles:10.0f} {k.cycles / total:6.1%} "
                         f"{bound}  {pipes or '-'}")
        if limit is not None and len(self.kernels) > limit:
            lines.append(f"... {len(self.kernels) - limit} more kernels")
        lines.append(f"total: {self.total_cycles:.0f} cycles ({self.cycles_source}) on {self.streams} stream(s), "
                     f"{self.total_cycles / self.clock_hz * 1e3:.3f} ms at {self.clock_hz / 1e9:g} GHz; "
                     f"kernels alone {sum(k.cycles for k in self.kernels):.0f} cycles")
        return "\n".join(lines)

    def timeline(self) -> dict[str, Any]:
        """Chrome / Perfetto trace: a process per core (one track per pipe) and a "streams"
        process with one track per stream."""
        from ge.runtime.sim_timing import PIPE_ORDER

        us = 1e6 / self.clock_hz
        events: list[dict[str, Any]] = []
        for core in sorted({e[0] for e in self._pipe_events}):
            events.append({"name": "process_name", "ph": "M", "pid": core, "tid": 0, "args": {"name": f"core {core}"}})
            for i, p in enumerate(PIPE_ORDER):
                events.append({"name": "thread_name", "ph": "M", "pid": core, "tid": i, "args": {"name": p.value}})
        for core, pipe, name, start, end, instr in self._pipe_events:
            events.append({"name": name, "cat": PIPE_ORDER[pipe].value, "ph": "X", "pid": core, "tid": pipe,
                           "ts": start * us, "dur": max(end - start, 0.0) * us, "args": {"instruction": instr}})
        pid = self._core_count
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "streams"}})
        for s in sorted({s.stream for s in self.spans}):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": s, "args": {"name": f"stream {s}"}})
        for s in self.spans:
            events.append({"name": s.name, "cat": s.kind, "ph": "X", "pid": pid, "tid": s.stream,
                           "ts": s.start * us, "dur": (s.end - s.start) * us,
                           "args": {"task": s.task, "cores": s.cores}
                           | ({} if s.super_kernel is None else {"super_kernel": s.super_kernel})})
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"clock_hz": self.clock_hz, "cycles": self.total_cycles, "source": self.cycles_source,
                              **({"kernel_cache": self.cache} if self.cache is not None else {})}}

    def write_timeline(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.timeline()))


# --------------------------------------------------------------------------------------
# The executor
# --------------------------------------------------------------------------------------


@dataclass
class _Gear:
    """What one run executes: a task range and the graph inputs / outputs (tensor ids)."""

    batch: int | None
    tasks: range
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    label: str = "static"
    kind: str | None = None


def _gears(model: Model) -> list[_Gear]:
    meta = model.metadata
    gears = [g for g in meta.get("gears", []) if "tasks" in g]
    if not gears:
        return [_Gear(None, range(len(model.tasks)), meta["inputs"], meta["outputs"])]
    return [_Gear(g["batch"], range(*g["tasks"]), g["inputs"], g["outputs"], gear_label(g),
                  g.get("kind", "dynamic_batch_size")) for g in gears]


def _np_dtype(name: str, where: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise ExecutionError(f"{where}: element type {name} has no numpy type; the executor cannot run it") from None


class Executor:
    """A loaded model: `run({name: array}) -> {name: array}`; `last_report` has the timing."""

    def __init__(self, model: Model | str | Path, target: targets.Target | str | None = None):
        self.model = model if isinstance(model, Model) else load_model(model)
        self.where = self.model.path or self.model.name
        meta = self.model.metadata
        if target is None or isinstance(target, str):
            target = targets.load_target(target or meta.get("target") or targets.DEFAULT_TARGET)
        self.target = target
        self.arena = np.zeros(self.model.definition["arena"], dtype=np.uint8)
        w_offset, w_size = self.model.definition["regions"]["weights"]
        self.arena[w_offset:w_offset + w_size] = np.frombuffer(self.model.weights, dtype=np.uint8)
        self.views = [self._view(i, t) for i, t in enumerate(self.model.definition["tensors"])]
        with no_gc():
            self.kernels = _decode_kernels(self.model, target)
        self.analyses: dict = {}  # the simulator's timing and checks per kernel body, kept across runs
        self.level = self.model.kernels.get("level", meta.get("kernel_level", "graph"))
        self.gears = _gears(self.model)
        self._records = self._match_events()
        self.last_report: RunReport | None = None
        # called as on_launch(task index, task, output views) after each launch ran (ge.dump)
        self.on_launch: Any = None

    def _view(self, i: int, t: dict[str, Any]) -> np.ndarray:
        dtype = _np_dtype(t["dtype"], f"{self.where}: tensor #{i}")
        count = int(np.prod(t["shape"], dtype=np.int64))
        return np.ndarray(t["shape"], dtype=dtype, buffer=self.arena, offset=t["offset"]) if count else \
            np.zeros(t["shape"], dtype=dtype)

    def _match_events(self) -> dict[int, int]:
        """Per wait task, the record task it waits for (the latest one before it)."""
        latest: dict[int, int] = {}
        matched = {}
        for j, t in enumerate(self.model.tasks):
            if t["op"] == "record":
                latest[t["event"]] = j
            elif t["op"] == "wait":
                if t["event"] not in latest:
                    raise ExecutionError(f"{self.where}: task #{j} waits for event {t['event']}, which no task records")
                matched[j] = latest[t["event"]]
        return matched

    # -- inputs and outputs ------------------------------------------------------------

    @property
    def input_names(self) -> list[str]:
        return [io["name"] for io in self.model.metadata["inputs"]]

    @property
    def output_names(self) -> list[str]:
        return [io["name"] for io in self.model.metadata["outputs"]]

    @property
    def batch_sizes(self) -> list[int]:
        return [g.batch for g in self.gears if g.batch is not None]

    def _check_inputs(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        names = self.input_names
        missing = [n for n in names if n not in inputs]
        extra = sorted(set(inputs) - set(names))
        if missing or extra:
            raise InputError(
                f"{self.where}: the model takes inputs {', '.join(map(repr, names))}; "
                + "; ".join(p for p in (f"missing {', '.join(map(repr, missing))}" if missing else "",
                                        f"unexpected {', '.join(map(repr, extra))}" if extra else "") if p)
            )
        arrays = {}
        for io in self.model.metadata["inputs"]:
            name, want = io["name"], io["shape"]
            arr = np.asarray(inputs[name])
            if arr.dtype != np.dtype(io["dtype"]):
                raise InputError(f"{self.where}: input '{name}' must be {io['dtype']}, got {arr.dtype}")
            if arr.ndim != len(want) or any(w not in (-1, g) for w, g in zip(want, arr.shape)):
                shown = ",".join("N" if d == -1 else str(d) for d in want)
                raise InputError(f"{self.where}: input '{name}' must have shape [{shown}], got {list(arr.shape)}")
            arrays[name] = arr
        return arrays

    def _gear_for(self, arrays: dict[str, np.ndarray]) -> _Gear:
        if len(self.gears) == 1 and self.gears[0].kind is None:
            return self.gears[0]
        for gear in self.gears:
            if all(list(arrays[io["name"]].shape) == io["shape"] for io in gear.inputs):
                return gear
        dynamic = [io for io in self.model.metadata["inputs"] if -1 in io["shape"]]
        if self.gears[0].kind == "dynamic_batch_size":
            given = ", ".join(f"'{io['name']}' batch {arrays[io['name']].shape[0]}" for io in dynamic)
            raise InputError(
                f"{self.where}: no compiled gear for {given}; the model was compiled for batch sizes "
                f"{', '.join(map(str, self.batch_sizes))} (--dynamic-batch-size)"
            )
        given = ", ".join(f"'{io['name']}' {list(arrays[io['name']].shape)}" for io in dynamic)
        gears = "; ".join(f"{g.label} (" + ", ".join(f"{io['name']} {io['shape']}" for io in g.inputs
                                                      if io["name"] in {d['name'] for d in dynamic}) + ")"
                          for g in self.gears)
        option = "--" + (self.gears[0].kind or "dynamic-dims").replace("_", "-")
        raise InputError(f"{self.where}: no compiled gear for {given}; the model's gears ({option}): {gears}")

    # -- running -----------------------------------------------------------------------

    def run(self, inputs: Mapping[str, Any], trace: bool = False, timing_only: bool = False,
            allow_hazards: bool = False) -> dict[str, np.ndarray]:
        """Run the model on `inputs` (by name); returns the outputs by name. `trace=True`
        records the simulator's per-pipe spans for `last_report.timeline()`.
        `timing_only`: cycles and checks without the numerics (returns no outputs).
        A problem the simulator reports (a hazard, a race between cores, ...) raises
        `KernelProblemError` unless `allow_hazards` (then `last_report.problems` lists it)."""
        arrays = self._check_inputs(inputs)
        gear = self._gear_for(arrays)
        for io in gear.inputs:
            self.views[io["tensor"]][...] = arrays[io["name"]].reshape(self.views[io["tensor"]].shape)
        self.last_report = _Run(self, gear, trace, timing_only).execute()
        problems = self.last_report.problems
        if problems and not allow_hazards:
            hazards = sum(p.is_hazard for p in problems)
            raise KernelProblemError(
                f"{self.where}: the simulator reported {len(problems)} problem(s) ({hazards} hazard(s)); first: "
                f"{problems[0]} (allow_hazards / --allow-hazards to run anyway and list them)")
        if timing_only:
            return {}
        return {io["name"]: self.views[io["tensor"]].reshape(io["shape"]).copy() for io in gear.outputs}


class _Run:
    """One run of a gear's tasks: the stream / event / core schedule, executing each task
    when it is scheduled (so in an order that respects every dependency)."""

    def __init__(self, ex: Executor, gear: _Gear, trace: bool, timing_only: bool = False):
        self.ex, self.gear = ex, gear
        self.tasks = ex.model.tasks
        self.cores = _Cores(ex.target)
        self.sim = None
        self.timing_only = timing_only and ex.level == "isa"
        if ex.level == "isa":
            from ge.runtime.simulator import Simulator

            self.sim = Simulator(ex.target, trace=trace, analyses=ex.analyses)
        source = {"isa": "simulated", "tile": "modeled"}.get(ex.level, "none")
        self.report = RunReport(ex.target.clock_hz, source, gear.batch, _core_count=self.cores.count,
                                gear=gear.label if gear.kind is not None else None)
        self.fired: dict[int, float] = {}

    def execute(self) -> RunReport:
        queues: dict[int, deque[int]] = {}
        for j in self.gear.tasks:
            queues.setdefault(self.tasks[j]["stream"], deque()).append(j)
        free_at = dict.fromkeys(queues, 0.0)
        with threadpool_limits(limits=1, user_api="blas"):  # many small products: threads only add overhead
            while any(queues.values()):
                ready = self._advance(queues, free_at)
                if not ready:
                    blocked = [f"stream {s} at task #{q[0]}" for s, q in queues.items() if q]
                    raise ExecutionError(f"{self.ex.where}: the streams wait for each other forever ({', '.join(blocked)})")
                stream = min(ready, key=lambda s: (free_at[s], queues[s][0]))
                j = queues[stream].popleft()
                group = self.tasks[j].get("super_kernel") if self.tasks[j]["op"] == "launch" else None
                if group is None:
                    free_at[stream] = self._task(j, free_at[stream])
                    continue
                subs = [j]
                while queues[stream] and self.tasks[queues[stream][0]].get("super_kernel") == group:
                    subs.append(queues[stream].popleft())
                free_at[stream] = self._super_kernel(subs, free_at[stream])
        if self.sim is not None:
            self.report.problems = list(self.sim.report.problems)
        return self.report

    def _advance(self, queues: dict[int, deque[int]], free_at: dict[int, float]) -> list[int]:
        """Process every record and satisfiable wait at the heads of the streams; returns the
        streams whose head is a launch or copy."""
        progress = True
        while progress:
            progress = False
            for s, q in queues.items():
                while q and self.tasks[q[0]]["op"] in ("record", "wait"):
                    j = q[0]
                    if self.tasks[j]["op"] == "record":
                        self.fired[j] = free_at[s]  # every earlier task of its stream has finished
                    elif (record := self.ex._records[j]) in self.fired:
                        free_at[s] = max(free_at[s], self.fired[record])
                    else:
                        break
                    q.popleft()
                    progress = True
        return [s for s, q in queues.items() if q and self.tasks[q[0]]["op"] in ("launch", "copy")]

    def _task(self, j: int, ready: float) -> float:
        t = self.tasks[j]
        if t["op"] == "copy":
            return self._copy(j, t, ready)
        return self._launch(j, t, ready)

    def _copy(self, j: int, t: dict[str, Any], ready: float) -> float:
        src, dst = self.ex.views[t["src"]], self.ex.views[t["dst"]]
        if not self.timing_only:
            dst.reshape(-1).view(np.uint8)[...] = src.reshape(-1).view(np.uint8)
        startup = self.ex.target.startup.mte2
        end = self.cores.on_hbm(ready + startup, copy_cycles(self.ex.target, src.nbytes) - startup, 2 * src.nbytes)
        self.report.spans.append(TaskSpan(j, "copy", f"copy {src.nbytes} B", t["stream"], ready, end))
        return end

    def _super_kernel(self, subs: list[int], ready: float) -> float:
        """A SuperKernel (`task.launch ... super_kernel N`): one dispatch, then its
        sub-kernels in turn, each after a full-core barrier (`overhead.sync_all`) instead of
        a dispatch, on the cores its largest sub-kernel needs, held from the first to the
        last."""
        wanted: dict[str, int] = {}
        for j in subs:
            t = self.tasks[j]
            kernel = self.ex.kernels[t["kernel"]]
            pool = self.cores.pool(kernel.uses_cube)
            wanted[pool] = max(wanted.get(pool, 0), max(1, t.get("block_dim", kernel.block_dim)))
        start, chosen = ready, {}
        for pool, n in wanted.items():
            at, chosen[pool] = self.cores.claim(pool, n, ready)
            start = max(start, at)
        end = start
        for i, j in enumerate(subs):
            end = self._launch(j, self.tasks[j], end, chosen, chained=i > 0)
        for pool, cores in chosen.items():
            self.cores.hold(pool, cores, end)
        return end

    def _launch(self, j: int, t: dict[str, Any], ready: float, held: dict[str, list[int]] | None = None,
                chained: bool = False) -> float:
        """Launch task j: on the cores `held` by its SuperKernel if any (`chained`: not
        its first sub-kernel, so a barrier instead of a dispatch before it), else on the
        first cores free."""
        kernel = self.ex.kernels[t["kernel"]]
        pool = self.cores.pool(kernel.uses_cube)
        wanted = max(1, t.get("block_dim", kernel.block_dim))
        if held is None:
            start, chosen = self.cores.claim(pool, wanted, ready)
        else:
            start, chosen = ready, held[pool][:wanted]
        overhead = self.ex.target.overhead
        dispatch = overhead.sync_all if chained else overhead.launch
        ins = [self.ex.views[i] for i in t["ins"]]
        outs = [self.ex.views[i] for i in t["outs"]]
        mark = len(self.sim.trace.events) if self.sim is not None and self.sim.trace is not None else 0
        if self.sim is not None and self.sim.trace is not None:
            self.sim.trace.offset = start
        stats = kernel.run(ins, outs, self.sim, self.timing_only, start)
        if self.ex.on_launch is not None and not self.timing_only:
            self.ex.on_launch(j, t, outs)
        run = KernelRun(j, kernel.name, t.get("name", ""), t["stream"], start, 0.0, len(chosen), kernel.block_dim,
                        kernel.bound, super_kernel=t.get("super_kernel"))
        if stats is not None:
            run.pipe_busy, run.instructions = dict(stats.pipe_busy), dict(stats.instructions)
            run.cores, run.blocks, run.hbm_bytes, run.work = stats.cores, stats.blocks, stats.hbm_bytes, dict(stats.work)
            run.l2_bytes = stats.l2_bytes
            run.l2_bound = _l2_bound(self.ex.target, kernel.bound, run.work, ins, outs)
            work = max(stats.cycles - overhead.launch, 0.0)  # the simulator counts one dispatch (it moves no data)
            run.alone = dispatch + work
            run.cycles = max(run.alone, self.cores.on_hbm(start + dispatch, work, stats.hbm_bytes) - start)
            run.dispatch = dispatch
            self._keep_pipe_events(mark, pool, chosen)
        elif kernel.modeled is not None:
            run.cycles = run.alone = dispatch + max(float(kernel.modeled) - overhead.launch, 0.0)
            run.dispatch = dispatch
        end = start + run.cycles
        ids = [self.cores.first_id[pool] + c for c in chosen[:run.cores]]
        if held is None:
            self.cores.hold(pool, chosen[:run.cores], end)
        self.report.kernels.append(run)
        self.report.spans.append(TaskSpan(j, "launch", kernel.name, t["stream"], start, end, ids, t.get("super_kernel")))
        return end

    def _keep_pipe_events(self, mark: int, pool: str, chosen: list[int]) -> None:
        """Move the simulator's spans of the last kernel to the cores it ran on."""
        if self.sim is None or self.sim.trace is None:
            return
        first = self.cores.first_id[pool]
        for core, pipe, name, start, end, instr in self.sim.trace.events[mark:]:
            self.report._pipe_events.append((first + chosen[core % len(chosen)], pipe, name, start, end, instr))
        del self.sim.trace.events[mark:]


def _l2_bound(target: targets.Target, bound: float | None, work: dict[str, int], ins: list[np.ndarray],
              outs: list[np.ndarray]) -> float | None:
    """The tiler's roofline bound (`tile.bound`: max(compute, GM bytes at the HBM rate))
    for a launch that found some of its inputs in the L2 and wrote into it: those bytes
    -- the new bytes it read that the L2 held (`gm_read_warm`, at most its inputs' size)
    and the bytes it wrote (at most its outputs' size), `moved` -- go through the L2, the
    rest of the GM bytes through the HBM, and the two run at once (the simulator's HBM and
    L2 bandwidths are separate, as the chip's are). So the memory term M = B / hbm becomes
    max((B - moved) / hbm, moved / l2), at least max(bound - moved / hbm, moved / l2) when
    the bound is M, and that is at most `bound` when the bound is the compute term (moved
    <= B, so moved / l2 <= M): a bound whatever the term's split was. (It was bound -
    moved (1 / hbm - 1 / l2), which charged the two in turn: resnet50_b16's k10_n26, a 1 x 1
    conv reading its input from the HBM while it writes into the L2, ran 13,892 cycles
    against that 14,041.)

    The bytes it read again (`gm_read` - `gm_read_new`, r) are among the HBM term's: the
    tiler's bound counts every core's reads, and the L2 may serve a re-read. Each crosses
    one of the two, so the bound is the least over the split of max((X - s) / hbm,
    (moved + s) / l2) for s in [0, r], X = bound x hbm - moved: the s that balances the
    two, clamped. (With SuperKernels, resnet50_b16's k15_n44, whose cores read the same A
    tiles, ran 18,693 cycles against 18,867 without the re-reads.)"""
    if bound is None or not target.memory.l2:
        return bound
    hbm, l2 = target.bytes_per_cycle(target.dma.hbm_total), target.bytes_per_cycle(target.dma.l2_total)
    rereads = max(work.get("gm_read", 0) - work.get("gm_read_new", 0), 0)
    moved = min(work.get("gm_read_warm", 0), sum(v.nbytes for v in ins)) + \
        min(work.get("gm_write", 0), sum(v.nbytes for v in outs))
    if not moved + rereads:
        return bound
    rest = bound * hbm - moved
    via_l2 = min(max((rest * l2 - moved * hbm) / (hbm + l2), 0.0), float(rereads))
    return min(bound, max(0.0, (rest - via_l2) / hbm, (moved + via_l2) / l2))


def copy_cycles(target: targets.Target, nbytes: int) -> float:
    """A GM -> GM copy task: the DMA start-up, then reading and writing its bytes at the
    chip's HBM bandwidth."""
    bytes_per_cycle = target.dma.hbm_total * 1e9 / target.clock_hz
    return target.startup.mte2 + 2 * nbytes / bytes_per_cycle
