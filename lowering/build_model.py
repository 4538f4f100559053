"""`build-model`: a kernel sequence -> the `task` level (DESIGN.md §2, the last lowering).

GE's build stage: the graph function, by now a sequence of kernel launches, becomes a
`task.model` with every tensor at a GM offset, every launch on a stream and an event on
every dependency between streams.

1. Read the kernel sequence. At the fusion level each `fusion.group` is a launch whose body
   is outlined into a `func.func private @kN_<node>` kernel; views (reshape, flatten,
   squeeze, unsqueeze, identity, dropout) alias their source; `graph.constant`s read by
   kernels are weights. At the buffer levels (tile, isa: `<d>.launch @k ins(..) outs(..)` on
   GM buffers from `<d>.alloc`, `<d>.view`, `<d>.const`) the kernels are already symbols
   and stay as they are. A group that is a lone concat of consecutive slabs of its result
   becomes a `task.copy` per input into a window of the result (`concat_slabs`), so each
   input is copied as soon as it is ready, on its own stream if need be.
2. Streams and events (lowering/streams.py) from the launches' dependencies.
3. Lifetimes: an activation lives from its first access to the last step that is not sure
   to run after all its accesses (on one stream: its last use; with several streams a
   later task on another stream may still run concurrently with its last reader).
4. GM plan (lowering/memory_plan.py): weights, inputs and outputs each in their own region,
   activations in the workspace with reuse; offsets aligned to the target's `alignment.gm`.
5. Graph outputs: the tensor an output shows is written in place in the outputs region;
   an output that is a graph input, a weight, or a tensor another output already shows
   gets a `task.copy`.

`build-model{disable-reuse-memory=true}` gives every activation its own bytes (ATC's
`--disable_reuse_memory`), `single-stream=true` puts every task on stream 0 (ATC's
`--enable_single_stream`), `debug=true` prints the memory and stream report on stderr.
`check_model` verifies a built model: every two tasks that touch the same bytes, one of
them writing, are ordered by their streams and events.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FusedLoc,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import fusion, graph, layout, task
from ge.errors import GeError
from ge.lowering.fuse import op_label
from ge.lowering.fusion_rules import VIEW_OPS
from ge.lowering.memory_plan import MemoryPlan, Tensor, align_up, plan_memory
from ge.lowering.streams import StreamSchedule, TaskCost, assign_streams, makespan

BUFFER_LEVELS = ("tile", "isa")  # dialects whose graph function launches kernels on GM buffers


@dataclass(eq=False)
class Buf:
    """One GM tensor of the model (views of it share its bytes)."""

    kind: str  # "input", "output", "weight" or "workspace"
    type: Attribute  # the type it is declared with
    name: str = ""
    index: int = -1  # input / output number
    value: Attribute | None = None  # a weight's dense / dense_resource value
    accesses: list[int] = field(default_factory=list)  # steps touching it, in order
    offset: int = -1

    @property
    def size(self) -> int:
        return task.byte_size(self.type)


Ref = tuple[Buf, Attribute, int]  # a buffer seen with a type, from a byte offset (a view or a window)


@dataclass(eq=False)
class Step:
    """A task: a kernel launch, or a copy to a graph output."""

    callee: str | None  # None for a copy
    block_dim: int
    ins: list[Ref]
    outs: list[Ref]
    location: Attribute | None = None
    cycles: float | None = None  # the kernel's modeled cycles with its dispatch (`tile.cycles`), if known
    cube: bool = False  # a Cube kernel (`ge.kind` names it): the Cube pool of a separated chip


@dataclass(frozen=True)
class BuildReport:
    """What build-model decided for one graph function."""

    name: str
    launches: int
    copies: int
    dependencies: tuple[tuple[int, ...], ...]  # per step (launch or copy): the steps it waits for
    schedule: StreamSchedule
    tensors: tuple[Tensor, ...]  # the workspace tensors, with their lifetimes in steps
    plan: MemoryPlan  # their offsets inside the workspace region
    regions: dict[str, tuple[int, int]]
    arena: int
    alignment: int

    def summary(self) -> str:
        p, s = self.plan, self.schedule
        ratio = f"{p.peak / p.lower_bound:.3f}" if p.lower_bound else "-"
        return (
            f"@{self.name}: {self.launches} launches, {self.copies} copies; {s.num_streams} stream(s), "
            f"{len(s.events)} event(s) on {s.num_events} id(s); workspace {p.peak} bytes ({p.strategy}), lower "
            f"bound {p.lower_bound} (x{ratio}), no reuse {p.no_reuse}; weights {self.regions['weights'][1]}, "
            f"inputs {self.regions['inputs'][1]}, outputs {self.regions['outputs'][1]}; arena {self.arena} bytes"
        )


class ModelBuildError(GeError):
    """A built model whose tasks race on GM bytes (found by `check_model`)."""


# --------------------------------------------------------------------------------------
# 1. Reading the kernel sequence
# --------------------------------------------------------------------------------------


def _symbol(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")[:40] or "kernel"


def _names(attrs: ArrayAttr | None, count: int, fallback: list[str]) -> list[str]:
    out = []
    for i in range(count):
        d = attrs.data[i].data if attrs is not None and i < len(attrs.data) else {}
        name = d.get("ge.name")
        out.append(name.data if isinstance(name, StringAttr) else fallback[i])
    return out


class _Reader:
    """Turns one graph function into buffers and steps; outlines fusion groups."""

    def __init__(self, fn: func.FuncOp, symbols: set[str]):
        self.fn, self.symbols = fn, symbols
        self.refs: dict[SSAValue, Ref] = {}
        self.bufs: list[Buf] = []
        self.steps: list[Step] = []
        self.kernels: list[Operation] = []
        self.table: dict[StringAttr, Operation] | None = None  # the module's symbols, read at the first launch

    def new_buf(self, kind: str, type: Attribute, **kw) -> Buf:
        buf = Buf(kind, type, **kw)
        self.bufs.append(buf)
        return buf

    def read(self) -> None:
        block = self.fn.body.block
        names = graph.argument_names(self.fn)
        for i, arg in enumerate(block.args):
            self.refs[arg] = (self.new_buf("input", arg.type, name=names[i], index=i), arg.type, 0)
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        level = op.dialect_name()
        kind = op.name.split(".", 1)[-1]
        if isinstance(op, graph.ConstantOp) or (level in BUFFER_LEVELS and kind == "const"):
            value = op.value if isinstance(op, graph.ConstantOp) else op.properties["value"]
            r = op.results[0]
            self.refs[r] = (self.new_buf("weight", r.type, name=r.name_hint or "", value=value), r.type, 0)
        elif isinstance(op, VIEW_OPS) or (level in BUFFER_LEVELS and kind == "view"):
            self.view(op)
        elif isinstance(op, fusion.GroupOp):
            self.group(op)
        elif level in BUFFER_LEVELS and kind == "alloc":
            r = op.results[0]
            self.refs[r] = (self.new_buf("workspace", r.type, name=r.name_hint or ""), r.type, 0)
        elif level in BUFFER_LEVELS and kind == "launch":
            self.launch(op)
        elif isinstance(op, func.ReturnOp):
            self.outputs(op)
        else:
            where = f" ('{op_label(op)}')" if op.results else ""
            raise PassFailedException(
                f"build-model: {op.name}{where} is not a kernel launch, a view or a constant; run `fuse` first so "
                "that every compute op belongs to a kernel"
            )

    def view(self, op: Operation) -> None:
        if any(r.uses for r in op.results[1:]):
            raise PassFailedException(f"build-model: the second result of {op.name} ('{op_label(op)}') is used")
        buf, seen, offset = self.refs[op.operands[0]]
        r = op.results[0]
        if task.byte_size(r.type) != task.byte_size(seen):
            raise PassFailedException(
                f"build-model: {op.name} ('{op_label(op)}') changes the byte size ({seen} to {r.type}); a view "
                "must keep the bytes of its source"
            )
        self.refs[r] = (buf, r.type, offset)

    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.symbols:
            i += 1
            name = f"{base}_{i}"
        self.symbols.add(name)
        return name

    def group(self, group: fusion.GroupOp) -> None:
        outs = []
        for r in group.outputs:
            buf = self.new_buf("workspace", r.type, name=r.name_hint or "")
            self.refs[r] = (buf, r.type, 0)
            outs.append(self.refs[r])
        if (offsets := concat_slabs(group)) is not None:
            buf = outs[0][0]
            for v, offset in zip(group.inputs, offsets):
                self.steps.append(Step(None, 1, [self.refs[v]], [(buf, v.type, offset)], group.location))
            return
        name = self.unique(f"k{len(self.kernels)}_{_symbol(kernel_label(group))}")
        self.kernels.append(outline(group, name))
        self.steps.append(Step(name, 1, [self.refs[v] for v in group.inputs], outs, group.location))

    def launch(self, op: Operation) -> None:
        callee = op.properties["callee"]
        kernel = self.lookup(op, callee)
        block_dim = task.kernel_block_dim(kernel) if kernel is not None else 1
        ins = [self.refs[v] for v in op.ins]
        outs = [self.refs[v] for v in op.outs]
        attrs = kernel.attributes if kernel is not None else {}
        cycles, kind = attrs.get("tile.cycles"), attrs.get("ge.kind")
        self.steps.append(Step(callee.string_value(), block_dim, ins, outs, op.location,
                               float(cycles.value.data) if isinstance(cycles, IntegerAttr) else None,
                               isinstance(kind, StringAttr) and "cube" in kind.data))

    def lookup(self, op: Operation, callee: Attribute) -> Operation | None:
        """`SymbolTable.lookup_symbol(op, callee)`, the symbol table read once (a scan of the
        module per launch was most of BERT-base's build-model: 187 launches)."""
        if not isinstance(callee, SymbolRefAttr) or callee.nested_references.data:
            return SymbolTable.lookup_symbol(op, callee)
        if self.table is None:
            anchor = op.parent_op()
            while anchor is not None and not anchor.has_trait(SymbolTable):
                anchor = anchor.parent_op()
            if anchor is None:
                return SymbolTable.lookup_symbol(op, callee)  # (its error)
            self.table = {}
            for o in anchor.regions[0].block.ops:
                if (symbol := o.get_trait(SymbolOpInterface)) is not None:
                    self.table.setdefault(symbol.get_sym_attr_name(o), o)  # the first one, as a scan finds
        return self.table.get(callee.root_reference)

    def outputs(self, ret: func.ReturnOp) -> None:
        types = list(self.fn.function_type.outputs.data)
        names = _names(self.fn.res_attrs, len(types), [f"output{i}" for i in range(len(types))])
        shown: set[Buf] = set()
        for k, v in enumerate(ret.arguments):
            buf, seen, offset = self.refs[v]
            if buf.kind == "workspace" and buf not in shown and offset == 0 and buf.size == task.byte_size(types[k]):
                buf.kind, buf.name, buf.index, buf.type = "output", names[k], k, types[k]
                shown.add(buf)
                continue
            out = self.new_buf("output", types[k], name=names[k], index=k)
            self.steps.append(Step(None, 1, [(buf, seen, offset)], [(out, types[k], 0)], ret.location))


def kernel_label(group: fusion.GroupOp) -> str:
    """How a kernel is named: its first ONNX node, else its first result, else its first op."""
    loc = group.location
    if isinstance(loc, FusedLoc) and loc.locations.data:
        loc = loc.locations.data[0]
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if group.results and group.results[0].name_hint:
        return group.results[0].name_hint
    return op_label(next(iter(group.body.block.ops)))


def outline(group: fusion.GroupOp, name: str) -> func.FuncOp:
    """The kernel computing `group`: `func.func private @name(inputs) -> results`."""
    body = group.body.clone()
    block = body.block
    yield_op = block.last_op
    assert isinstance(yield_op, fusion.YieldOp)
    block.insert_op_before(func.ReturnOp(*yield_op.values), yield_op)
    block.erase_op(yield_op)
    kernel = func.FuncOp(name, ([v.type for v in group.inputs], [r.type for r in group.outputs]), body, "private")
    kernel.attributes["ge.kind"] = group.kind
    if group.rule_names:
        kernel.attributes["ge.rules"] = group.rules
    kernel.location = group.location
    return kernel


def concat_slabs(group: fusion.GroupOp) -> list[int] | None:
    """Byte offsets of the inputs in the result, when `group` is a lone concat whose inputs
    are consecutive slabs of its result's storage (nothing outside the concat axis varies
    faster): then it is a copy per input, each free to run as soon as its input is ready.
    None otherwise (a concat of FRACTAL or NHWC-origin tensors stays a kernel)."""
    ops = list(group.body.block.ops)
    if len(ops) != 2 or not isinstance(ops[0], graph.ConcatOp):
        return None
    concat = ops[0]
    encodings = {layout.layout_of(v.type) for v in (*concat.inputs, concat.output)}
    plain = encodings == {None}
    nc1hwc0 = all(
        e is not None and e.fmt == layout.Format.NC1HWC0 and e.origin_fmt == layout.Format.NCHW and len(e.shape) == 4
        for e in encodings
    )
    if not (plain or nc1hwc0):
        return None
    axis = concat.axis.value.data  # NC1HWC0 keeps N, C (as C1), H, W in the origin's places
    out = tuple(concat.output.type.get_shape())
    shapes = [tuple(v.type.get_shape()) for v in concat.inputs]
    if any(d != 1 for d in out[:axis]) or sum(s[axis] for s in shapes) != out[axis]:
        return None
    if any(s[:axis] != out[:axis] or s[axis + 1:] != out[axis + 1:] for s in shapes):
        return None
    offsets, top = [], 0
    for v in concat.inputs:
        offsets.append(top)
        top += task.byte_size(v.type)
    return offsets


# --------------------------------------------------------------------------------------
# 2.-4. Dependencies, streams, lifetimes, memory
# --------------------------------------------------------------------------------------


def _span(ref: Ref) -> tuple[int, int]:
    """Bytes of its buffer a reference touches."""
    _, type, offset = ref
    return offset, offset + task.byte_size(type)


def dependencies(steps: list[Step]) -> list[list[int]]:
    """Per step, the earlier steps it must wait for: those that wrote bytes it reads or
    writes, and those that read bytes it writes."""
    history: dict[Buf, list[tuple[int, int, int, bool]]] = {}  # buf -> (step, lo, hi, wrote)
    preds: list[list[int]] = []
    for i, step in enumerate(steps):
        ps: set[int] = set()
        touched = [(r, False) for r in step.ins] + [(r, True) for r in step.outs]
        for ref, write in touched:
            lo, hi = _span(ref)
            for j, a, b, wrote in history.get(ref[0], []):
                if (wrote or write) and a < hi and lo < b:
                    ps.add(j)
        for ref, write in touched:
            history.setdefault(ref[0], []).append((i, *_span(ref), write))
        preds.append(sorted(ps))
    return preds


def lifetime(accesses: list[int], schedule: StreamSchedule) -> tuple[int, int]:
    """[first access, last step that may still run alongside one of the accesses]."""
    mask = 0
    for a in accesses:
        mask |= 1 << a
    start, end = accesses[0], accesses[-1]
    for s in range(end + 1, len(schedule.before)):
        if mask & ~schedule.before[s]:
            end = s
    return start, end


def _one_after_another(bufs: list[Buf], start: int, alignment: int) -> int:
    """Sequential aligned offsets from `start`; returns the bytes taken."""
    top = start
    for buf in bufs:
        buf.offset = top
        top += align_up(buf.size, alignment)
    return top - start


@dataclass(frozen=True)
class BuildOptions:
    reuse_memory: bool = True
    single_stream: bool = False
    max_streams: int = 0  # 0: no limit
    # one stream when the makespan estimate (`streams.makespan`, with SuperKernels) finds the
    # streams no faster: GE's OptimizeIneffectiveMultiStreamPass; the compiler asks for it with
    # SuperKernels, which an event between streams cuts
    merge_ineffective_streams: bool = False
    target: targets.Target | None = None  # for the estimate (build_model sets the module's)


def estimated_cycles(steps: list[Step], schedule: StreamSchedule, target: targets.Target) -> float | None:
    """`streams.makespan` of the steps on the chip, with SuperKernels; None when a kernel's
    modeled cycles are unknown (a graph-level kernel)."""
    from ge.runtime.executor import copy_cycles

    o, coupled = target.overhead, target.architecture == "coupled"
    pools = {"cube": target.cores.cube} if coupled else {"cube": target.cores.cube, "vector": target.cores.vector}
    costs = []
    for s in steps:
        if s.callee is None:  # a copy: as the executor times it
            costs.append(TaskCost(copy_cycles(target, task.byte_size(s.outs[0][1])), 0))
            continue
        if s.cycles is None:
            return None
        pool = "cube" if coupled or s.cube else "vector"
        costs.append(TaskCost(max(s.cycles - o.launch, 0.0), min(s.block_dim, pools[pool]), pool))
    return makespan(schedule, costs, pools, o.launch, o.sync_all, super_kernels=True)


def plan(reader: _Reader, options: BuildOptions, alignment: int) -> BuildReport:
    """Streams, events and offsets for the reader's steps and buffers."""
    steps = reader.steps
    used: set[Buf] = set()
    for buf in reader.bufs:
        buf.accesses = []
    for i, step in enumerate(steps):
        for buf, _, _ in (*step.ins, *step.outs):
            if not buf.accesses or buf.accesses[-1] != i:
                buf.accesses.append(i)
            used.add(buf)
    preds = dependencies(steps)
    schedule = assign_streams(preds, options.single_stream, options.max_streams)
    if options.merge_ineffective_streams and schedule.num_streams > 1 and options.target is not None:
        one = assign_streams(preds, True, options.max_streams)
        several = estimated_cycles(steps, schedule, options.target)
        if several is not None and estimated_cycles(steps, one, options.target) <= several:
            schedule = one
    by_kind = {k: [b for b in reader.bufs if b.kind == k and (b in used or k in ("input", "output"))]
               for k in ("weight", "input", "output", "workspace")}
    by_kind["input"].sort(key=lambda b: b.index)
    by_kind["output"].sort(key=lambda b: b.index)
    work = by_kind["workspace"]
    tensors = tuple(
        Tensor(f"t{i}", b.size, *lifetime(b.accesses, schedule)) for i, b in enumerate(work)
    )
    memory = plan_memory(tensors, alignment, options.reuse_memory)
    regions: dict[str, tuple[int, int]] = {}
    top = 0
    for region, kind in (("weights", "weight"), ("inputs", "input"), ("outputs", "output")):
        size = _one_after_another(by_kind[kind], top, alignment)
        regions[region] = (top, size)
        top += size
    for buf, offset in zip(work, memory.offsets):
        buf.offset = top + offset
    regions["workspace"] = (top, memory.peak)
    launches = sum(1 for s in steps if s.callee is not None)
    return BuildReport(
        reader.fn.sym_name.data, launches, len(steps) - launches, tuple(map(tuple, preds)), schedule, tensors,
        memory, regions, top + memory.peak, alignment,
    )


# --------------------------------------------------------------------------------------
# 5. Emitting the task level
# --------------------------------------------------------------------------------------


class _Emitter:
    """Writes the `task.model`: inputs, outputs and weights first, then each step with the
    buffers and views it needs declared just before it, its waits and its records."""

    def __init__(self, reader: _Reader, report: BuildReport):
        self.reader, self.report = reader, report
        self.block = Block()
        self.values: dict[Buf, SSAValue] = {}
        self.views: dict[Ref, SSAValue] = {}

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def declare(self, buf: Buf) -> None:
        if buf.kind == "input" or buf.kind == "output":
            cls = task.InputOp if buf.kind == "input" else task.OutputOp
            op = cls(buf.index, buf.name, buf.offset, buf.type)
        elif buf.kind == "weight":
            assert buf.value is not None
            op = task.WeightOp(buf.value, buf.offset, buf.type)
        else:
            op = task.BufferOp(buf.offset, buf.type)
        if buf.name and SSAValue.is_valid_name(_hint(buf.name)):
            op.results[0].name_hint = _hint(buf.name)
        self.values[buf] = self.add(op).results[0]

    def value(self, ref: Ref) -> SSAValue:
        buf, type, offset = ref
        if buf not in self.values:
            self.declare(buf)
        base = self.values[buf]
        if type == base.type and offset == 0:
            return base
        if ref not in self.views:
            window = offset if offset or task.byte_size(type) != buf.size else None
            self.views[ref] = self.add(task.ViewOp(base, type, window)).results[0]
        return self.views[ref]

    def emit(self) -> task.ModelOp:
        reader, report = self.reader, self.report
        s = report.schedule
        for kind in ("input", "output", "weight"):
            for buf in sorted((b for b in reader.bufs if b.kind == kind and (b.accesses or kind != "weight")),
                              key=lambda b: (b.index, b.offset)):
                self.declare(buf)
        waits: dict[int, list] = {}
        records: dict[int, list] = {}
        for e in s.events:
            waits.setdefault(e.dst, []).append(e)
            records.setdefault(e.src, []).append(e)
        for i, step in enumerate(reader.steps):
            stream = s.stream_of[i]
            ins = [self.value(r) for r in step.ins]
            outs = [self.value(r) for r in step.outs]
            for e in waits.get(i, []):
                self.add(task.EventWaitOp(e.id, stream))
            if step.callee is None:
                op = task.CopyOp(ins[0], outs[0], stream)
            else:
                op = task.LaunchOp(step.callee, ins, outs, stream, step.block_dim)
            if step.location is not None:
                op.location = step.location
            self.add(op)
            for e in records.get(i, []):
                self.add(task.EventRecordOp(e.id, stream))
        return task.ModelOp(
            report.name, report.arena, report.alignment, s.num_streams, s.num_events, report.regions,
            Region(self.block),
        )


def _hint(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


def gm_alignment(module: ModuleOp) -> int:
    """GM tensor alignment of the module's target (the default target if it names none)."""
    target = targets.target_of(module) or targets.load_target(targets.DEFAULT_TARGET)
    return target.alignment.gm


def build_model(module: ModuleOp, options: BuildOptions | None = None) -> list[BuildReport]:
    """Lower every graph function of `module` to a `task.model` in place; one report each."""
    options = options or BuildOptions()
    alignment = gm_alignment(module)
    if options.merge_ineffective_streams and options.target is None:
        options = replace(options, target=targets.target_of(module) or targets.load_target(targets.DEFAULT_TARGET))
    symbols = {op.sym_name.data for op in module.ops if isinstance(getattr(op, "sym_name", None), StringAttr)}
    reports = []
    graph_functions = [
        op for op in module.ops
        if isinstance(op, func.FuncOp) and op.body.blocks and op.sym_visibility != StringAttr("private")
    ]
    for fn in graph_functions:
        reader = _Reader(fn, symbols)
        reader.read()
        report = plan(reader, options, alignment)
        model = _Emitter(reader, report).emit()
        model.location = fn.location
        for kernel in reader.kernels:
            module.body.block.insert_op_before(kernel, fn)
        module.body.block.insert_op_before(model, fn)
        module.body.block.erase_op(fn)
        reports.append(report)
    return reports


@dataclass(frozen=True)
class BuildModelPass(ModulePass):
    """Kernel sequence -> `task.model`: GM memory plan, streams, events (module docstring)."""

    name = "build-model"
    disable_reuse_memory: bool = False
    single_stream: bool = False
    max_streams: int = 0
    merge_ineffective_streams: bool = False
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = BuildOptions(not self.disable_reuse_memory, self.single_stream, self.max_streams,
                               self.merge_ineffective_streams)
        for report in build_model(op, options):
            if self.debug:
                print(f"[build-model] {report.summary()}", file=sys.stderr)


# --------------------------------------------------------------------------------------
# Checking a built model
# --------------------------------------------------------------------------------------


def check_model(model: task.ModelOp) -> None:
    """Raise ModelBuildError unless every two tasks touching overlapping GM bytes, one of
    them writing, are ordered by streams and events (so no reuse of memory and no
    dependency can race), and no task reads and writes the same bytes."""
    accesses: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]] = []
    stream_of: list[int] = []
    waits: list[list[int]] = []
    recorded: dict[int, int] = {}
    pending: list[int] = []

    def span(v: SSAValue) -> tuple[int, int]:
        o = task.offset_of(v)
        return o, o + task.byte_size(v.type)

    for op in model.body.block.ops:
        if isinstance(op, task.EventWaitOp):
            pending.append(recorded.pop(op.event.value.data))
        elif isinstance(op, task.EventRecordOp):
            recorded[op.event.value.data] = len(accesses) - 1
        elif isinstance(op, task.LaunchOp | task.CopyOp):
            reads = [op.source] if isinstance(op, task.CopyOp) else list(op.ins)
            writes = [op.dest] if isinstance(op, task.CopyOp) else list(op.outs)
            accesses.append(([span(v) for v in reads], [span(v) for v in writes]))
            stream_of.append(op.stream.value.data)
            waits.append(pending)
            pending = []
    before: list[int] = []
    tails: dict[int, int] = {}
    for i, s in enumerate(stream_of):
        prev = tails.get(s, -1)
        seen = before[prev] | 1 << prev if prev >= 0 else 0
        for src in waits[i]:
            seen |= before[src] | 1 << src
        before.append(seen)
        tails[s] = i
    name = model.sym_name.data

    def clash(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> tuple[int, int] | None:
        for a0, a1 in a:
            for b0, b1 in b:
                if a0 < b1 and b0 < a1:
                    return max(a0, b0), min(a1, b1)
        return None

    for j, (reads_j, writes_j) in enumerate(accesses):
        if (c := clash(reads_j, writes_j)) is not None:
            raise ModelBuildError(f"@{name}: task {j} reads and writes bytes [{c[0]}, {c[1]})")
        for i in range(j):
            if before[j] >> i & 1:
                continue
            reads_i, writes_i = accesses[i]
            c = clash(writes_i, reads_j + writes_j) or clash(reads_i, writes_j)
            if c is not None:
                raise ModelBuildError(
                    f"@{name}: tasks {i} (stream {stream_of[i]}) and {j} (stream {stream_of[j]}) both touch bytes "
                    f"[{c[0]}, {c[1]}), one of them writing, and nothing orders them"
                )
