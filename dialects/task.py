"""The `task` dialect: the built model as the runtime sees it (DESIGN.md §2, level "task").

The lowest level, made by `build-model` and stored in the model file. A `task.model` holds
one GM arena laid out in four regions, each an `[offset, size]` in bytes:

- `weights`: the constants, loaded once with the model (`task.weight`);
- `inputs` / `outputs`: the user's tensors, numbered as the graph's inputs and outputs
  (`task.input`, `task.output`);
- `workspace`: the activations, whose offsets come from the memory plan: two
  `task.buffer`s may share bytes when their lifetimes do not overlap.

Every buffer is an SSA value at a fixed offset; `task.view` sees the same bytes with
another shape. The tasks follow in issue order: `task.launch` runs a kernel symbol of the
module (a `func.func`, or any kernel op with `function_type` and `num_ins`, like
`tile.kernel`) on `block_dim` cores with its GM arguments, on a stream; `task.copy` moves
bytes from one buffer to another; `task.event_record` / `task.event_wait` order two
streams. Tasks on one stream run in order; different streams run concurrently except where
an event orders them. What each task does at run time lives in the executor (ge.runtime).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FlatSymbolRefAttrConstr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from ge.dialects.dtypes import numpy_dtype
from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.kernel_base import lookup_symbol
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)

REGIONS = ("weights", "inputs", "outputs", "workspace")

BufferType = TensorType | MemRefType


def element_bytes(elem: Attribute) -> int:
    """Bytes of one element in GM (a bool takes a byte)."""
    if isinstance(elem, BFloat16Type):
        return 2
    return numpy_dtype(elem).itemsize


def byte_size(t: Attribute) -> int:
    """Bytes of a tensor or buffer type: its (storage) shape times its element size."""
    if not isinstance(t, TensorType | MemRefType):
        raise VerifyException(f"expected a tensor or memref type, got {t}")
    n = 1
    for d in t.get_shape():
        n *= d
    return n * element_bytes(t.element_type)


def kernel_signature(op: Operation) -> tuple[list[Attribute], list[Attribute]] | None:
    """(argument types read, argument types written) of a kernel symbol: a `func.func`
    (inputs -> results) or a kernel op with `function_type` and `num_ins` (ins, then outs,
    as `tile.kernel`); None for anything else."""
    if isinstance(op, func.FuncOp):
        return list(op.function_type.inputs.data), list(op.function_type.outputs.data)
    ft, n = op.properties.get("function_type"), op.properties.get("num_ins")
    if isinstance(ft, FunctionType) and isinstance(n, IntegerAttr):
        types = list(ft.inputs.data)
        return types[: n.value.data], types[n.value.data:]
    return None


def kernel_block_dim(op: Operation) -> int:
    """The kernel's `block_dim` property, 1 when it has none (a graph-level kernel)."""
    bd = op.properties.get("block_dim")
    return bd.value.data if isinstance(bd, IntegerAttr) else 1


def _int(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def _pair(attr: DenseArrayBase) -> tuple[int, int]:
    values = tuple(int(v) for v in attr.get_values())
    if len(values) != 2:
        raise VerifyException(f"a region is [offset, size], got {list(values)}")
    return values[0], values[1]


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ModelOp(IRDLOperation):
    """The built model: its GM arena and regions, stream and event counts, and a body of
    buffers and tasks in issue order."""

    name = "task.model"
    sym_name = prop_def(StringAttr)
    arena = prop_def(IntegerAttr[I64])
    alignment = prop_def(IntegerAttr[I64])
    streams = prop_def(IntegerAttr[I64])
    events = prop_def(IntegerAttr[I64])
    weights = prop_def(DenseArrayBase[I64])
    inputs = prop_def(DenseArrayBase[I64])
    outputs = prop_def(DenseArrayBase[I64])
    workspace = prop_def(DenseArrayBase[I64])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), NoTerminator())

    def __init__(self, name: str, arena: int, alignment: int, streams: int, events: int,
                 regions: dict[str, tuple[int, int]], body: Region | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(name), "arena": _int(arena), "alignment": _int(alignment),
                "streams": _int(streams), "events": _int(events),
                **{r: DenseArrayBase.from_list(i64, list(regions[r])) for r in REGIONS},
            },
            regions=[body if body is not None else Region(Block())],
        )

    def region_span(self, name: str) -> tuple[int, int]:
        """(offset, size) of region `name` (one of REGIONS)."""
        return _pair(self.properties[name])

    @classmethod
    def parse(cls, parser: Parser) -> ModelOp:
        name = parser.parse_symbol_name().data
        props: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        for key in ("arena", "alignment", "streams", "events"):
            parser.parse_keyword(key)
            props[key] = _int(parser.parse_integer(allow_negative=False, allow_boolean=False))
        for key in REGIONS:
            parser.parse_keyword(key)
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_negative=False, allow_boolean=False)
            )
            props[key] = DenseArrayBase.from_list(i64, values)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:  # `{}`: a model with no buffers and no tasks
            region.add_block(Block())
        op = cls.build(properties=props, regions=[region])
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        for key in ("arena", "alignment", "streams", "events"):
            printer.print_string(f" {key} {self.properties[key].value.data}")
        for key in REGIONS:
            offset, size = self.region_span(key)
            printer.print_string(f" {key} [{offset}, {size}]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        arena, align = self.arena.value.data, self.alignment.value.data
        if align < 1:
            raise VerifyException(f"alignment must be >= 1, got {align}")
        spans = {}
        for key in REGIONS:
            offset, size = self.region_span(key)
            if offset % align:
                raise VerifyException(f"the {key} region starts at {offset}, not a multiple of the alignment {align}")
            if offset + size > arena:
                raise VerifyException(f"the {key} region [{offset}, {offset + size}) ends beyond the arena ({arena} bytes)")
            spans[key] = (offset, offset + size)
        for a in REGIONS:
            for b in REGIONS[REGIONS.index(a) + 1:]:
                (a0, a1), (b0, b1) = spans[a], spans[b]
                if a0 < b1 and b0 < a1:
                    raise VerifyException(f"the {a} region [{a0}, {a1}) and the {b} region [{b0}, {b1}) overlap")
        _verify_body(self, spans, align)


def _verify_body(model: ModelOp, spans: dict[str, tuple[int, int]], align: int) -> None:
    """Buffers inside their regions, numbered inputs/outputs, tasks on existing streams,
    every event waited only after it was recorded, a SuperKernel's launches consecutive
    on one stream."""
    streams, events = model.streams.value.data, model.events.value.data
    numbers: dict[str, list[int]] = {"inputs": [], "outputs": []}
    pending: dict[int, bool] = {}
    seen: dict[int, int] = {}  # SuperKernels met so far -> their stream
    last: dict[int, int | None] = {}  # stream -> super_kernel of its last task (None: not a sub-kernel)
    for op in model.body.block.ops:
        if isinstance(op, _DeclOp):
            offset, size = op.offset.value.data, byte_size(op.result.type)
            lo, hi = spans[op.REGION]
            if offset % align:
                raise VerifyException(f"{op.name} at {offset}: not a multiple of the alignment {align}")
            if not (lo <= offset and offset + size <= hi):
                raise VerifyException(
                    f"{op.name} at {offset} ({size} bytes) is not inside the {op.REGION} region [{lo}, {hi})"
                )
            if isinstance(op, InputOp | OutputOp):
                numbers[op.REGION].append(op.index.value.data)
        elif isinstance(op, _TaskOp):
            s = op.stream.value.data
            if not 0 <= s < streams:
                raise VerifyException(f"{op.name} on stream {s}, but the model has {streams} stream(s)")
            group = op.super_kernel.value.data if isinstance(op, LaunchOp) and op.super_kernel is not None else None
            if group is not None and group in seen and last.get(s) != group:  # (met before, not as this stream's last task)
                raise VerifyException(
                    f"task.launch {op.callee} of super_kernel {group} does not follow the launch before it of that "
                    f"super_kernel on stream {seen[group]}: a SuperKernel's sub-kernels are consecutive tasks of one "
                    "stream")
            if group is not None:
                seen.setdefault(group, s)
            last[s] = group
            if isinstance(op, EventRecordOp | EventWaitOp):
                e = op.event.value.data
                if not 0 <= e < events:
                    raise VerifyException(f"{op.name} of event {e}, but the model has {events} event(s)")
                if isinstance(op, EventRecordOp):
                    if pending.get(e):
                        raise VerifyException(f"event {e} is recorded again before anything waits for it")
                    pending[e] = True
                else:
                    if not pending.get(e):
                        raise VerifyException(f"task.event_wait {e} on stream {s} has no task.event_record {e} before it to wait for")
                    pending[e] = False
        elif not isinstance(op, ViewOp):
            raise VerifyException(f"a task.model holds buffers and tasks only, got {op.name}")
    for key, found in numbers.items():
        if sorted(found) != list(range(len(found))):
            raise VerifyException(f"the model's {key} must be numbered 0..{len(found) - 1} once each, got {found}")


# --------------------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------------------


class _DeclOp(IRDLOperation):
    """A buffer at a byte offset of one of the model's regions."""

    REGION: ClassVar[str] = ""
    offset = prop_def(IntegerAttr[I64])
    result = result_def(BufferType)


class _IoOp(_DeclOp):
    index = prop_def(IntegerAttr[I64])
    io_name = prop_def(StringAttr, prop_name="name")
    traits = traits_def(HasParent(ModelOp))
    assembly_format = "$index $name `at` $offset attr-dict `:` type($result)"

    def __init__(self, index: int, name: str, offset: int, type: Attribute):
        super().__init__(
            properties={"index": _int(index), "name": StringAttr(name), "offset": _int(offset)}, result_types=[type]
        )


@irdl_op_definition
class InputOp(_IoOp):
    """Graph input #index (named as the user knows it) at `offset` of the inputs region."""

    name = "task.input"
    REGION: ClassVar[str] = "inputs"


@irdl_op_definition
class OutputOp(_IoOp):
    """Graph output #index at `offset` of the outputs region; the tasks write it."""

    name = "task.output"
    REGION: ClassVar[str] = "outputs"


@irdl_op_definition
class WeightOp(_DeclOp):
    """A constant at `offset` of the weights region, holding `value`."""

    name = "task.weight"
    REGION: ClassVar[str] = "weights"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    traits = traits_def(HasParent(ModelOp), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr, offset: int, type: Attribute | None = None):
        super().__init__(
            properties={"value": value, "offset": _int(offset)}, result_types=[type if type is not None else _value_type(value)]
        )

    @classmethod
    def parse(cls, parser: Parser) -> WeightOp:
        parser.parse_keyword("at")
        offset = parser.parse_integer(allow_negative=False, allow_boolean=False)
        value = parser.parse_attribute()
        result = parser.parse_type() if parser.parse_optional_punctuation("->") else None
        attrs = parser.parse_optional_attr_dict()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error(f"expected a dense or dense_resource value, got {value}")
        op = cls.build(
            properties={"value": value, "offset": _int(offset)},
            result_types=[result if result is not None else _value_type(value)],
        )
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" at {self.offset.value.data} ")
        printer.print_attribute(self.value)
        if self.result.type != _value_type(self.value):
            printer.print_string(" -> ")
            printer.print_attribute(self.result.type)
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        vt, rt = _value_type(self.value), self.result.type
        assert isinstance(vt, TensorType) and isinstance(rt, TensorType | MemRefType)
        if tuple(vt.get_shape()) != tuple(rt.get_shape()) or vt.element_type != rt.element_type:
            raise VerifyException(f"the value's type {vt} does not match the buffer {rt}")


def _value_type(value: Attribute) -> Attribute:
    return value.get_type() if isinstance(value, DenseIntOrFPElementsAttr) else value.type


@irdl_op_definition
class BufferOp(_DeclOp):
    """An activation at `offset` of the workspace region (offsets from the memory plan)."""

    name = "task.buffer"
    REGION: ClassVar[str] = "workspace"
    traits = traits_def(HasParent(ModelOp))
    assembly_format = "`at` $offset attr-dict `:` type($result)"

    def __init__(self, offset: int, type: Attribute):
        super().__init__(properties={"offset": _int(offset)}, result_types=[type])


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The bytes of `source` seen with another type of the same size or, with `at`, the
    window of the result's size starting `offset` bytes into `source` (a concat's part)."""

    name = "task.view"
    source = operand_def(BufferType)
    offset = opt_prop_def(IntegerAttr[I64])
    result = result_def(BufferType)
    traits = traits_def(HasParent(ModelOp), Pure())
    assembly_format = "$source (`at` $offset^)? attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, type: Attribute, offset: int | None = None):
        props = {} if offset is None else {"offset": _int(offset)}
        super().__init__(operands=[source], result_types=[type], properties=props)

    @property
    def byte_offset(self) -> int:
        return 0 if self.offset is None else self.offset.value.data

    def verify_(self) -> None:
        a, b = byte_size(self.source.type), byte_size(self.result.type)
        if self.offset is None and a != b:
            raise VerifyException(f"a view keeps the bytes: {self.source.type} ({a} bytes) to {self.result.type} ({b} bytes)")
        if self.offset is not None and not 0 <= self.byte_offset <= a - b:
            raise VerifyException(
                f"a window of {b} bytes at {self.byte_offset} does not fit in {self.source.type} ({a} bytes)"
            )


def root_of(value: SSAValue) -> SSAValue:
    """The buffer a value (possibly a view of a view) lives in."""
    while isinstance(value.owner, ViewOp):
        value = value.owner.source
    return value


def offset_of(value: SSAValue) -> int:
    """The arena byte offset of a buffer or view."""
    offset = 0
    while isinstance(value.owner, ViewOp):
        offset += value.owner.byte_offset
        value = value.owner.source
    if not isinstance(value.owner, _DeclOp):
        raise ValueError(f"{value} is not a task-level buffer")
    return offset + value.owner.offset.value.data


# --------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------


class _TaskOp(IRDLOperation):
    """Something a stream does, in issue order."""

    stream = prop_def(IntegerAttr[I64])


@irdl_op_definition
class LaunchOp(_TaskOp):
    """Run kernel `callee` on `block_dim` cores: it reads `ins` and writes `outs` (buffers
    of the shapes and element types of the kernel's arguments).

    `super_kernel N`: the launch is a sub-kernel of SuperKernel N (GE's SuperKernelPass,
    `transforms/super_kernel.py`): the consecutive launches of one stream with the same N
    are dispatched once, hold the cores the largest of them needs, and run in turn with a
    full-core barrier (`overhead.sync_all`) instead of a dispatch between two of them."""

    name = "task.launch"
    callee = prop_def(FlatSymbolRefAttrConstr)
    block_dim = prop_def(IntegerAttr[I64])
    super_kernel = opt_prop_def(IntegerAttr[I64])
    ins = var_operand_def(BufferType)
    outs = var_operand_def(BufferType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(HasParent(ModelOp), MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$callee `stream` $stream `block_dim` $block_dim (`super_kernel` $super_kernel^)? "
        "(`ins` `(` $ins^ `:` type($ins) `)`)? (`outs` `(` $outs^ `:` type($outs) `)`)? attr-dict"
    )

    def __init__(self, callee: str, ins: Sequence[SSAValue], outs: Sequence[SSAValue], stream: int, block_dim: int = 1,
                 super_kernel: int | None = None):
        super().__init__(
            operands=[list(ins), list(outs)],
            properties={"callee": SymbolRefAttr(callee), "stream": _int(stream), "block_dim": _int(block_dim)}
            | ({} if super_kernel is None else {"super_kernel": _int(super_kernel)}),
        )

    def verify_(self) -> None:
        if self.block_dim.value.data < 1:
            raise VerifyException(f"block_dim must be >= 1, got {self.block_dim.value.data}")
        kernel = lookup_symbol(self, self.callee)
        signature = kernel_signature(kernel) if kernel is not None else None
        if signature is None:
            raise VerifyException(f"no kernel named {self.callee} (a func.func or a kernel op) in the module")
        got = ([v.type for v in self.ins], [v.type for v in self.outs])

        def key(types: Sequence[Attribute]) -> list[object]:  # a kernel's GM memory space may be its own
            return [(tuple(t.get_shape()), t.element_type) if isinstance(t, BufferType) else t for t in types]

        if (key(got[0]), key(got[1])) != (key(signature[0]), key(signature[1])):
            def show(ts):
                return ", ".join(map(str, ts))
            raise VerifyException(
                f"the launch passes ins ({show(got[0])}) outs ({show(got[1])}) but {self.callee} "
                f"takes ins ({show(signature[0])}) outs ({show(signature[1])})"
            )


@irdl_op_definition
class CopyOp(_TaskOp):
    """Copy the bytes of `source` to `dest` (a graph output that is an input, a weight or
    another output's tensor)."""

    name = "task.copy"
    source = operand_def(BufferType)
    dest = operand_def(BufferType)
    traits = traits_def(HasParent(ModelOp), MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `to` $dest `stream` $stream attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue, dest: SSAValue, stream: int):
        super().__init__(operands=[source, dest], properties={"stream": _int(stream)})

    def verify_(self) -> None:
        a, b = byte_size(self.source.type), byte_size(self.dest.type)
        if a != b:
            raise VerifyException(f"a copy moves whole buffers: {a} bytes to a {b}-byte destination")


class _EventOp(_TaskOp):
    event = prop_def(IntegerAttr[I64])
    traits = traits_def(HasParent(ModelOp), MemoryWriteEffect())
    assembly_format = "$event `stream` $stream attr-dict"

    def __init__(self, event: int, stream: int):
        super().__init__(properties={"event": _int(event), "stream": _int(stream)})


@irdl_op_definition
class EventRecordOp(_EventOp):
    """Mark `event` once every earlier task of `stream` has finished."""

    name = "task.event_record"


@irdl_op_definition
class EventWaitOp(_EventOp):
    """Hold `stream` until `event` is marked, then clear it."""

    name = "task.event_wait"


DECL_OPS = (InputOp, OutputOp, WeightOp, BufferOp)  # the ops that place a buffer in a region

Task = Dialect(
    "task",
    [ModelOp, InputOp, OutputOp, WeightOp, BufferOp, ViewOp, LaunchOp, CopyOp, EventRecordOp, EventWaitOp],
    [],
)
install_fast_verify(Task)  # xDSL's verdict, faster (dialects/fast_verify.py)
