"""The `isa` dialect: AI Core instructions on pipes (DESIGN.md §2, level "isa").

Below `tile`, above `task`; the public analogue is AscendNPU-IR's HIVM dialect. A kernel is
an `isa.kernel` symbol whose arguments are GM buffers and whose body is a flat list of
instructions, `scf.for` loops and `arith` index arithmetic (the scalar unit, pipe S). Every
instruction op belongs to one pipe (`PIPE`), and says which elements of which buffers it
reads and writes (`accesses()`); the memory planner, `insert-sync` and the simulator all
work from that one description.

Pipes (ascend.md §1.4, §6.1): `S` scalar, `MTE2` GM -> L1/UB/L0B, `MTE1` L1 -> L0A/L0B (and
L1 -> UB), `M` the Cube, `V` the Vector unit (and, on a core without FixPipe, L0C -> UB:
`copy_l0c_to_ub`), `MTE3` UB -> GM (and UB -> L1), `FIX` the fixpipe L0C -> GM/UB/L1.

Buffers. `isa.buffer` places a local buffer (a memref in `#isa.space<l1|l0a|l0b|l0c|ub>`)
at a byte offset of its memory; `slots 2` gives the ping-pong copies of a double buffer as
two results, slot k at `offset + k * align(bytes)`. `plan-local-memory` fills in offsets
that are missing; the verifier checks each offset against the target's alignment and
capacity. GM buffers are the kernel's arguments (`#isa.space<gm>`).

Addresses. Every buffer operand takes an optional element offset `%buf[%off]` (an
`index`; absent = 0). Instructions read and write element patterns relative to it:
- moves (`copy_*`, `fixpipe`, `copy_l0c_to_ub`): a rectangle of `sizes` with element strides per side
  (row-major by default); an optional `window` (lo, hi per dim) moves only the elements
  inside it and, with `pad`, writes `pad` into the rest -- edge tiles and halos;
- vector ops: `repeat` (1 .. the target's max_repeats) iterations of at most
  `bytes_per_repeat` bytes; element j < `mask` of iteration r of an operand with `epb`
  elements per 32-byte block sits at `r * rep * epb + (j // epb) * blk * epb + j % epb`,
  with `blk_stride` (default 1) and `rep_stride` (default: the blocks the mask spans times
  the block stride) per operand, in blocks; longer work is several instructions or a loop;
- `mmad`: A in L0A as ZZ fractals [m/m0, k/k0, m0, k0], B in L0B as ZN [k/k0, n/n0, n0, k0],
  C in L0C as NZ [n/n0, m/m0, m0, n0] (ascend.md §5), fractal (m0, k0, n0) from the target.

Sync (ascend.md §1.5): `isa.set_flag [P, Q, e]` fires when every earlier instruction of pipe
P has finished; `isa.wait_flag [P, Q, e]` holds pipe Q until then; `isa.pipe_barrier [P]`
holds P until its earlier instructions finished. Event ids are 0 .. 7 per pipe pair in the
encoding, and below the chip's `isa.event_ids` (4 on the 910) in a module that names it.

What each instruction computes lives in `ge.runtime.isa_kernels`; how long it takes in
`ge.runtime.sim_timing`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    FlatSymbolRefAttrConstr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f16,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptOperandDef,
    ParsePropInAttrDict,
    VarOperandDef,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ge import targets
from ge.dialects import dtypes
from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.interning import int_array as int_array  # (i64, interned: re-exported)
from ge.dialects.interning import int_attr, segment_sizes
from ge.dialects.kernel_base import KernelBase, lookup_symbol
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)

# The instruction encoding has eight event ids per (set pipe, wait pipe) pair, as HIVM's
# EVENT_ID0 .. EVENT_ID7 (ascend.md §1.4); the simulator and insert-sync use this bound.
EVENT_IDS = 8

# A discardable attribute on an scf.for of a kernel: the loop never runs more than this
# many iterations (the leftover loop of a multi-buffered loop runs fewer than its slots).
# insert-sync relies on it; the simulator checks it.
MAX_TRIPS_ATTR = "isa.max_trips"


class MemSpace(StrEnum):
    GM = "gm"
    L1 = "l1"
    L0A = "l0a"
    L0B = "l0b"
    L0C = "l0c"
    UB = "ub"


LOCAL_SPACES = (MemSpace.L1, MemSpace.L0A, MemSpace.L0B, MemSpace.L0C, MemSpace.UB)


class Pipe(StrEnum):
    S = "S"
    V = "V"
    M = "M"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIX"
    ALL = "ALL"  # only for isa.pipe_barrier: every pipe


PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)


@irdl_attr_definition
class MemSpaceAttr(EnumAttribute[MemSpace]):
    """`#isa.space<ub>`: the memory a buffer lives in (the memref's memory space)."""

    name = "isa.space"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemSpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(MemSpace)


@irdl_attr_definition
class PipeAttr(EnumAttribute[Pipe], SpacedOpaqueSyntaxAttribute):
    """A pipe of the AI Core; printed bare inside sync ops (`[MTE2, V, 0]`)."""

    name = "isa.pipe"


# --------------------------------------------------------------------------------------
# Small helpers: types, targets, int arrays
# --------------------------------------------------------------------------------------


def buffer_type(shape: Sequence[int], elem: Attribute, space: MemSpace | str) -> MemRefType:
    """A buffer of `shape` x `elem` in memory `space`."""
    return MemRefType(elem, [int(d) for d in shape], memory_space=MemSpaceAttr(MemSpace(space)))


def space_of(t: Attribute) -> MemSpace | None:
    """The memory space of an isa buffer type, None for anything else."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, MemSpaceAttr):
        return t.memory_space.data
    return None


def itemsize(t: Attribute) -> int:
    """Bytes per element of a buffer type (or an element type)."""
    elem = t.element_type if isinstance(t, MemRefType) else t
    return dtypes.numpy_dtype(elem).itemsize


def num_elements(t: MemRefType) -> int:
    return math.prod(t.get_shape())


def nbytes(t: MemRefType) -> int:
    return num_elements(t) * itemsize(t)


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def ints(attr: DenseArrayBase | None, default: Sequence[int] = ()) -> tuple[int, ...]:
    if attr is None:
        return tuple(default)
    data = attr.data.data
    if attr.elt_type == i64:  # (unpacked directly: xDSL's get_values is slow on hot paths)
        return struct.unpack(f"<{len(data) >> 3}q", data)
    return tuple(int(v) for v in attr.get_values())


def _int(attr: IntegerAttr | None, default: int = 0) -> int:
    return default if attr is None else attr.value.data


def named_target(op: Operation) -> targets.Target | None:
    """The target named by the nearest enclosing module's `ge.target`, or None."""
    p: Operation | None = op
    while p is not None:
        if targets.TARGET_ATTR in p.attributes and isinstance(p, ModuleOp):  # (the cheap test first: an ABC's isinstance is not)
            try:
                return targets.target_of(p)
            except targets.TargetError as e:
                raise VerifyException(str(e)) from None
        block = p.parent  # p.parent_op(), without its three calls (every instruction's verifier comes here)
        region = None if block is None else block.parent
        p = None if region is None else region.parent
    return None


def target_for(op: Operation) -> targets.Target:
    """The target named by the nearest enclosing module's `ge.target` (the default chip
    when no module names one)."""
    return named_target(op) or targets.load_target(targets.DEFAULT_TARGET)


def alignment_of(target: targets.Target, space: MemSpace) -> int:
    return getattr(target.alignment, space.value)


def capacity_of(target: targets.Target, space: MemSpace) -> int:
    return getattr(target.memory, space.value)


def cube_fractal(target: targets.Target, elem: Attribute) -> tuple[int, int, int]:
    """The Cube's (m0, k0, n0) for inputs of element type `elem`: the target's figure, or
    for a type it does not list (f32) the same 32-byte K rows: k0 = block_bytes / size."""
    size = itemsize(elem)
    name = "f16" if dtypes.is_float(elem) and size == 2 else "i8" if dtypes.is_integer(elem) and size == 1 else None
    frac = target.cube_fractal(name) if name else None
    if frac is not None:
        return frac
    m0, _, n0 = target.cube_fractal("f16") or (16, 16, 16)
    return m0, max(1, target.vector.block_bytes // itemsize(elem)), n0


def static_index(v: SSAValue | None) -> int | None:
    """The value of an index operand defined by `arith.constant` (0 for an absent offset),
    None when it is only known at run time."""
    if v is None:
        return 0
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


# --------------------------------------------------------------------------------------
# Access patterns: which elements an instruction touches
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rect:
    """Elements `base + sum(i_d * strides_d)` for i < shape, relative to an operand's
    offset (all in elements)."""

    base: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def lo(self) -> int:
        lo = self.base  # base + the sum of min(0, (n - 1) * s), as a loop (verifiers and analyses ask often)
        for n, s in zip(self.shape, self.strides):
            if (step := (n - 1) * s) < 0:
                lo += step
        return lo

    @property
    def hi(self) -> int:
        """One past the last element touched."""
        hi = self.base + 1  # base + the sum of max(0, (n - 1) * s) + 1
        for n, s in zip(self.shape, self.strides):
            if (step := (n - 1) * s) > 0:
                hi += step
        return hi

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def row_major(sizes: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def vector_rects(repeat: int, mask: int, blk: int, rep: int, epb: int) -> tuple[Rect, ...]:
    """The elements of a vector operand (see the module docstring), as rectangles: the
    whole blocks of each iteration, then the partial block the mask ends in."""
    full, rest = divmod(mask, epb)
    out = []
    if full:
        out.append(Rect(0, (repeat, full, epb), (rep * epb, blk * epb, 1)))
    if rest:
        out.append(Rect(full * blk * epb, (repeat, 1, rest), (rep * epb, blk * epb, 1)))
    return tuple(out)


@dataclass(frozen=True)
class Access:
    """One buffer operand of an instruction: the elements it may touch (a bound when the
    instruction's window or offset is only known at run time)."""

    buffer: SSAValue  # an isa.buffer result or a GM kernel argument
    offset: SSAValue | None  # element offset operand (None: 0)
    rects: tuple[Rect, ...]
    write: bool

    @property
    def lo(self) -> int:
        return min(r.lo for r in self.rects)

    @property
    def hi(self) -> int:
        return max(r.hi for r in self.rects)


# --------------------------------------------------------------------------------------
# Kernels, launches, buffers
# --------------------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(KernelBase):
    """A kernel: GM buffers in (`ins`) and out (`outs`), run as `block_dim` blocks spread
    over the AI cores."""

    name = "isa.kernel"

    def __init__(self, name: str, ins: Sequence[Attribute], outs: Sequence[Attribute], block_dim: int = 1,
                 body: Region | None = None):
        types = [*ins, *outs]
        super().__init__(
            properties=self.kernel_props(name, types, len(ins), block_dim), regions=[self.entry_region(types, body)]
        )

    def verify_(self) -> None:
        self.verify_signature()
        for i, a in enumerate(self.body.block.args):
            if space_of(a.type) != MemSpace.GM:
                raise VerifyException(f"kernel argument #{i} must be a buffer in #isa.space<gm>, got {a.type}")


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run isa kernel `callee` on GM buffers of the graph function (any memref of the
    same shape and element type as the kernel's arguments)."""

    name = "isa.launch"
    callee = prop_def(FlatSymbolRefAttrConstr)
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$callee (`ins` `(` $ins^ `:` type($ins) `)`)? (`outs` `(` $outs^ `:` type($outs) `)`)? attr-dict"
    )

    def __init__(self, callee: str, ins: Sequence[SSAValue], outs: Sequence[SSAValue]):
        props = {"callee": SymbolRefAttr(callee)}
        plain = _plain_operands(type(self), [list(ins), list(outs)])
        if plain is None:
            super().__init__(operands=[list(ins), list(outs)], properties=props)
            return
        props[AttrSizedOperandSegments.attribute_name] = segment_sizes(plain[1])
        Operation.__init__(self, operands=plain[0], properties=props)  # (as InstructionOp's: IRDL's op, unchecked)

    def verify_(self) -> None:
        kernel = lookup_symbol(self, self.callee)
        if not isinstance(kernel, KernelOp):
            raise VerifyException(f"no isa.kernel named {self.callee}")

        def sig(types) -> list[tuple[tuple[int, ...], Attribute]]:
            return [(tuple(t.get_shape()), t.element_type) for t in types]

        got = (sig(v.type for v in self.ins), sig(v.type for v in self.outs))
        want = (sig(a.type for a in kernel.ins), sig(a.type for a in kernel.outs))
        if got != want:
            raise VerifyException(f"the launch's buffers do not match the arguments of {self.callee}")


@irdl_op_definition
class BlockIdxOp(IRDLOperation):
    """The block this core runs (0 .. block_dim - 1); scalar unit."""

    name = "isa.block_idx"
    result = result_def(IndexType)
    traits = traits_def(Pure(), HasAncestor(KernelOp))
    assembly_format = "attr-dict `:` type($result)"
    PIPE: ClassVar[Pipe] = Pipe.S

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A local buffer at byte `offset` of its memory; `slots` results are the copies of a
    multi-buffer, slot k at `offset + k * slot_bytes` (slot_bytes = the buffer's bytes
    aligned to the memory's alignment). Without `offset` the buffer is not placed yet."""

    name = "isa.buffer"
    offset = opt_prop_def(IntegerAttr[I64])
    slots = var_result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect(), HasParent(KernelOp))

    def __init__(self, result_type: MemRefType, slots: int = 1, offset: int | None = None):
        props = {} if offset is None else {"offset": int_attr(offset)}
        super().__init__(result_types=[[result_type] * slots], properties=props)

    @property
    def type(self) -> MemRefType:
        t = self.slots[0].type
        assert isinstance(t, MemRefType)
        return t

    @property
    def space(self) -> MemSpace:
        s = space_of(self.type)
        assert s is not None
        return s

    @property
    def byte_offset(self) -> int | None:
        return None if self.offset is None else self.offset.value.data

    def slot_bytes(self, target: targets.Target) -> int:
        return align_up(nbytes(self.type), alignment_of(target, self.space))

    def total_bytes(self, target: targets.Target) -> int:
        return self.slot_bytes(target) * len(self.slots)

    def slot_offset(self, slot: int, target: targets.Target) -> int:
        base = self.byte_offset
        assert base is not None, "isa.buffer has no offset: run plan-local-memory"
        return base + slot * self.slot_bytes(target)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("offset"):
            props["offset"] = IntegerAttr(parser.parse_integer(allow_negative=False, allow_boolean=False), i64)
        count = 1
        if parser.parse_optional_keyword("slots"):
            count = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        op = cls.build(result_types=[[ty] * count], properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.offset is not None:
            printer.print_string(f" offset {self.offset.value.data}")
        if len(self.slots) != 1:
            printer.print_string(f" slots {len(self.slots)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.slots[0].type)

    def verify_(self) -> None:
        if not self.slots:
            raise VerifyException("a buffer needs at least one slot")
        types = {r.type for r in self.slots}
        if len(types) != 1:
            raise VerifyException("every slot of a buffer has the same type")
        space = space_of(self.type)
        if space is None:
            raise VerifyException(f"a buffer must be a memref in an #isa.space, got {self.type}")
        if space == MemSpace.GM:
            raise VerifyException("GM buffers are kernel arguments; isa.buffer places local buffers only")
        target = target_for(self)
        if (off := self.byte_offset) is None:
            return
        align = alignment_of(target, space)
        if off % align:
            raise VerifyException(f"offset {off} of a {space.value} buffer is not a multiple of its {align}-byte alignment")
        end, cap = off + self.total_bytes(target), capacity_of(target, space)
        if end > cap:
            raise VerifyException(
                f"the buffer ends at byte {end} of {space.value}, past its {cap} bytes on {target.name}"
            )


# --------------------------------------------------------------------------------------
# Sync
# --------------------------------------------------------------------------------------


def _check_pair(src: Pipe, dst: Pipe, event: int) -> None:
    if Pipe.ALL in (src, dst):
        raise VerifyException("set_flag / wait_flag name two pipes; ALL is only for pipe_barrier")
    if src == dst:
        raise VerifyException(f"a flag orders two different pipes; use isa.pipe_barrier [{src.value}] within one pipe")
    if not 0 <= event < EVENT_IDS:
        raise VerifyException(f"event id {event} is out of range 0..{EVENT_IDS - 1}")


class _FlagOp(IRDLOperation):
    src_pipe = prop_def(PipeAttr)
    dst_pipe = prop_def(PipeAttr)
    event = prop_def(IntegerAttr[I64])
    assembly_format = "` ` `[` $src_pipe `,` $dst_pipe `,` $event `]` attr-dict"

    def __init__(self, src: Pipe, dst: Pipe, event: int):
        super().__init__(properties={"src_pipe": PipeAttr(src), "dst_pipe": PipeAttr(dst),
                                     "event": int_attr(event)})

    @property
    def key(self) -> tuple[Pipe, Pipe, int]:
        return self.src_pipe.data, self.dst_pipe.data, self.event.value.data

    def verify_(self) -> None:
        _check_pair(*self.key)
        target = named_target(self)
        if target is not None and self.event.value.data >= target.isa.event_ids:
            raise VerifyException(f"event id {self.event.value.data} is out of range 0..{target.isa.event_ids - 1} "
                                  f"on {target.name}")


@irdl_op_definition
class SetFlagOp(_FlagOp):
    """On `src_pipe`: once every earlier instruction of that pipe has finished, set event
    `event` of the (src, dst) pair."""

    name = "isa.set_flag"

    @property
    def pipe(self) -> Pipe:
        return self.src_pipe.data


@irdl_op_definition
class WaitFlagOp(_FlagOp):
    """On `dst_pipe`: hold the pipe until event `event` of (src, dst) is set, then clear it."""

    name = "isa.wait_flag"

    @property
    def pipe(self) -> Pipe:
        return self.dst_pipe.data


@irdl_op_definition
class PipeBarrierOp(IRDLOperation):
    """Hold `pipe` (every pipe for ALL) until its earlier instructions have finished."""

    name = "isa.pipe_barrier"
    pipe_attr = prop_def(PipeAttr, prop_name="pipe")
    assembly_format = "` ` `[` $pipe `]` attr-dict"

    def __init__(self, pipe: Pipe):
        super().__init__(properties={"pipe": PipeAttr(pipe)})

    @property
    def pipe(self) -> Pipe:
        return self.pipe_attr.data


SYNC_OPS = (SetFlagOp, WaitFlagOp, PipeBarrierOp)


# --------------------------------------------------------------------------------------
# Instructions: shared machinery
# --------------------------------------------------------------------------------------


class InstructionOp(IRDLOperation):
    """Base of every instruction that moves or computes data. `PIPE` is its pipe;
    `SPACES` maps each buffer operand (in `BUFFERS` order) to the memories it accepts."""

    PIPE: ClassVar[Pipe]
    BUFFERS: ClassVar[tuple[str, ...]]  # buffer operand names; offsets are `<name>_offset`
    SPACES: ClassVar[tuple[tuple[MemSpace, ...], ...]]
    WRITES: ClassVar[tuple[str, ...]]  # which buffer operands are written

    def __init__(self, *, operands=(), result_types=None, properties=None, attributes=None, successors=None,
                 regions=None):
        """IRDL's constructor; for operands only (one SSA value, None or a list per operand
        definition), the op it builds -- operands, properties in order, the segment sizes
        last -- without its argument checks. Why: to-isa builds thousands of instructions
        and IRDL's generic argument lists were most of each one's price."""
        plain = None if result_types or attributes or successors or regions else _plain_operands(type(self), operands)
        if plain is None:
            super().__init__(operands=operands, result_types=result_types, properties=properties,
                             attributes=attributes, successors=successors, regions=regions)
            return
        flat, sizes = plain
        props = {} if properties is None else {k: v for k, v in properties.items() if v is not None}
        props[AttrSizedOperandSegments.attribute_name] = segment_sizes(sizes)
        Operation.__init__(self, operands=flat, properties=props)

    def buffer(self, role: str) -> SSAValue:
        return getattr(self, role)

    def offset_of(self, role: str) -> SSAValue | None:
        return getattr(self, f"{role}_offset")

    def buffer_types(self) -> dict[str, MemRefType]:
        out = {}
        for role in self.BUFFERS:
            t = self.buffer(role).type
            assert isinstance(t, MemRefType)
            out[role] = t
        return out

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        """The elements each buffer operand may touch, relative to its offset."""
        raise NotImplementedError

    def accesses(self, target: targets.Target | None = None) -> list[Access]:
        """Each buffer operand with the elements it may touch and whether it is written."""
        rects = self.rects(target or target_for(self))
        return [Access(self.buffer(r), self.offset_of(r), rects[r], r in self.WRITES) for r in self.BUFFERS]

    def verify_(self) -> None:
        for role, spaces in zip(self.BUFFERS, self.SPACES):
            t = getattr(self, role).type
            space = space_of(t)
            if space is None:
                raise VerifyException(f"{role} must be a buffer in an #isa.space, got {t}")
            if space not in spaces:
                raise VerifyException(
                    f"{self.name} takes its {role} in {' or '.join(s.value for s in spaces)}, got {space.value}"
                )
        target = target_for(self)
        self.verify_instruction(target)
        for role, rs in self.rects(target).items():
            self._check_bounds(role, rs)

    def verify_instruction(self, target: targets.Target) -> None:
        """Op-specific checks (after the memory spaces)."""

    def _check_bounds(self, role: str, rects: tuple[Rect, ...]) -> None:
        if not rects:
            return
        off = static_index(self.offset_of(role))
        if off is None:
            return
        t = self.buffer(role).type
        assert isinstance(t, MemRefType)
        n = num_elements(t)
        if len(rects) == 1:  # (most operands: no generators)
            r = rects[0]
            lo, hi = off + r.lo, off + r.hi
        else:
            lo, hi = off + min([r.lo for r in rects]), off + max([r.hi for r in rects])
        if lo < 0 or hi > n:
            raise VerifyException(f"{role} elements [{lo}, {hi}) are outside its {n} elements")


def _plain_operands(cls: type[IRDLOperation], groups) -> tuple[list[SSAValue], tuple[int, ...]] | None:
    """(flat operands, segment sizes) of an instruction's operand groups as IRDL builds them,
    or None when IRDL must (not one group per definition, a value that is not an SSA value,
    an op without `operandSegmentSizes`)."""
    kinds = cls.__dict__.get("_OPERAND_KINDS")
    if kinds is None:
        op_def = cls.get_irdl_definition()
        kinds = () if not any(isinstance(o, AttrSizedOperandSegments) for o in op_def.options) else tuple(
            "optional" if isinstance(d, OptOperandDef) else "variadic" if isinstance(d, VarOperandDef) else "single"
            for _, d in op_def.operands)
        cls._OPERAND_KINDS = kinds  # (a fact of the class, not of a compile)
    if not kinds or len(groups) != len(kinds):
        return None
    flat: list[SSAValue] = []
    sizes = []
    for g, kind in zip(groups, kinds):
        if isinstance(g, SSAValue):
            if kind == "variadic":
                return None
            flat.append(g)
            sizes.append(1)
        elif kind == "single":
            return None
        elif g is None:
            if kind != "optional":
                return None
            sizes.append(0)
        elif isinstance(g, list | tuple) and all(isinstance(v, SSAValue) for v in g) \
                and (kind == "variadic" or len(g) <= 1):
            flat.extend(g)
            sizes.append(len(g))
        else:
            return None
    return flat, tuple(sizes)


_I32, _I8 = IntegerType(32), IntegerType(8)  # (verifiers compare with these: one built per call runs its checks)


def _elem(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, MemRefType)
    return t.element_type


# --------------------------------------------------------------------------------------
# Moves: one op per data path
# --------------------------------------------------------------------------------------


class _MoveOp(InstructionOp):
    """dst[dst_offset + i . dst_strides] = src[src_offset + i . src_strides] for i < sizes
    (strides in elements, row-major when absent). With `window` (lo_0, hi_0, lo_1, ...),
    only positions with lo_d <= i_d < hi_d are read; the rest of the destination rectangle
    gets `pad`, or is left alone without it."""

    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    window = var_operand_def(IndexType)
    sizes = prop_def(DenseArrayBase[I64])
    src_strides = opt_prop_def(DenseArrayBase[I64])
    dst_strides = opt_prop_def(DenseArrayBase[I64])
    pad = opt_prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$src (`[` $src_offset^ `]`)? `to` $dst (`[` $dst_offset^ `]`)? `sizes` $sizes "
        "(`src_strides` $src_strides^)? (`dst_strides` $dst_strides^)? (`window` ` ` `(` $window^ `)`)? "
        "(`pad` $pad^)? attr-dict `:` type($src) `to` type($dst)"
    )
    BUFFERS: ClassVar[tuple[str, ...]] = ("src", "dst")
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)
    SAME_ELEMENT: ClassVar[bool] = True

    def __init__(self, src: SSAValue, dst: SSAValue, sizes: Sequence[int], *, src_offset: SSAValue | None = None,
                 dst_offset: SSAValue | None = None, src_strides: Sequence[int] | None = None,
                 dst_strides: Sequence[int] | None = None, window: Sequence[SSAValue] = (), pad: float | None = None,
                 **extra: Attribute):
        super().__init__(
            operands=[src, [] if src_offset is None else [src_offset], dst, [] if dst_offset is None else [dst_offset],
                      list(window)],
            properties=self.move_props(sizes, src_strides, dst_strides, pad, extra),
        )

    @staticmethod
    def move_props(sizes: Sequence[int], src_strides: Sequence[int] | None, dst_strides: Sequence[int] | None,
                   pad: float | None, extra: dict[str, Attribute]) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {"sizes": int_array(sizes), **extra}
        if src_strides is not None and tuple(src_strides) != row_major(sizes):
            props["src_strides"] = int_array(src_strides)
        if dst_strides is not None and tuple(dst_strides) != row_major(sizes):
            props["dst_strides"] = int_array(dst_strides)
        if pad is not None:
            props["pad"] = FloatAttr(float(pad), f32)
        return props

    @property
    def static_sizes(self) -> tuple[int, ...]:
        return ints(self.sizes)

    @property
    def static_src_strides(self) -> tuple[int, ...]:
        return ints(self.src_strides, row_major(self.static_sizes))

    @property
    def static_dst_strides(self) -> tuple[int, ...]:
        return ints(self.dst_strides, row_major(self.static_sizes))

    @property
    def pad_value(self) -> float | None:
        return None if self.pad is None else float(self.pad.value.data)

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        sizes = self.static_sizes
        return {"src": (Rect(0, sizes, self.static_src_strides),), "dst": (Rect(0, sizes, self.static_dst_strides),)}

    def _check_bounds(self, role: str, rects: tuple[Rect, ...]) -> None:
        # With a window only its positions are read (and, without pad, written): the
        # rectangle may start outside the buffer (conv pads, edge tiles).
        if self.window and (role == "src" or self.pad is None):
            return
        super()._check_bounds(role, rects)

    def verify_instruction(self, target: targets.Target) -> None:
        src, dst = _elem(self.src), _elem(self.dst)
        if self.SAME_ELEMENT and src != dst:
            raise VerifyException(f"{self.name} keeps the element type: {src} to {dst}")
        sizes = self.static_sizes
        rank = len(sizes)
        if rank == 0 or any(n < 1 for n in sizes):
            raise VerifyException(f"sizes must be one or more positive counts, got {list(sizes)}")
        for what in ("src_strides", "dst_strides"):
            if len(getattr(self, f"static_{what}")) != rank:
                raise VerifyException(f"{what} needs one stride per dim of sizes {list(sizes)}")
        if len(self.window) not in (0, 2 * rank):
            raise VerifyException(f"a window needs a (lo, hi) pair per dim: {2 * rank} values, got {len(self.window)}")
        if self.pad is not None and not self.window:
            raise VerifyException("pad fills the positions outside a window; it needs a window")


@irdl_op_definition
class CopyGmToL1Op(_MoveOp):
    """MTE2: GM -> L1 (with strides: also the ND -> NZ layout change, nd2nz)."""

    name = "isa.copy_gm_to_l1"
    PIPE: ClassVar[Pipe] = Pipe.MTE2
    SPACES: ClassVar = ((MemSpace.GM,), (MemSpace.L1,))


@irdl_op_definition
class CopyGmToUbOp(_MoveOp):
    """MTE2: GM -> UB."""

    name = "isa.copy_gm_to_ub"
    PIPE: ClassVar[Pipe] = Pipe.MTE2
    SPACES: ClassVar = ((MemSpace.GM,), (MemSpace.UB,))


@irdl_op_definition
class CopyUbToGmOp(_MoveOp):
    """MTE3: UB -> GM."""

    name = "isa.copy_ub_to_gm"
    PIPE: ClassVar[Pipe] = Pipe.MTE3
    SPACES: ClassVar = ((MemSpace.UB,), (MemSpace.GM,))


@irdl_op_definition
class CopyUbToL1Op(_MoveOp):
    """MTE3: UB -> L1 (coupled cores only)."""

    name = "isa.copy_ub_to_l1"
    PIPE: ClassVar[Pipe] = Pipe.MTE3
    SPACES: ClassVar = ((MemSpace.UB,), (MemSpace.L1,))


@irdl_op_definition
class CopyL1ToUbOp(_MoveOp):
    """MTE1: L1 -> UB (coupled cores only)."""

    name = "isa.copy_l1_to_ub"
    PIPE: ClassVar[Pipe] = Pipe.MTE1
    SPACES: ClassVar = ((MemSpace.L1,), (MemSpace.UB,))


@irdl_op_definition
class CopyL1ToL0aOp(_MoveOp):
    """MTE1: L1 -> L0A (LoadData 2D; strides give the ZZ fractal order)."""

    name = "isa.copy_l1_to_l0a"
    PIPE: ClassVar[Pipe] = Pipe.MTE1
    SPACES: ClassVar = ((MemSpace.L1,), (MemSpace.L0A,))


@irdl_op_definition
class CopyL1ToL0bOp(_MoveOp):
    """MTE1: L1 -> L0B (LoadData 2D; strides give the ZN fractal order)."""

    name = "isa.copy_l1_to_l0b"
    PIPE: ClassVar[Pipe] = Pipe.MTE1
    SPACES: ClassVar = ((MemSpace.L1,), (MemSpace.L0B,))


@irdl_op_definition
class CopyGmToL0bOp(_MoveOp):
    """MTE2: GM -> L0B (Load2D's GM -> B2 path, Atlas training parts included: the weights of
    a K step straight into L0B in its ZN fractal order, without an L1 copy and an MTE1 move;
    ascend.md §6.1 "MTE2: GM->{L1, L0A/B}")."""

    name = "isa.copy_gm_to_l0b"
    PIPE: ClassVar[Pipe] = Pipe.MTE2
    SPACES: ClassVar = ((MemSpace.GM,), (MemSpace.L0B,))


@irdl_op_definition
class CopyUbToUbOp(_MoveOp):
    """V: UB -> UB (a strided rearrangement on the Vector unit)."""

    name = "isa.copy_ub_to_ub"
    PIPE: ClassVar[Pipe] = Pipe.V
    SPACES: ClassVar = ((MemSpace.UB,), (MemSpace.UB,))


class _L0cOutOp(_MoveOp):
    """A read-out of the Cube's accumulator: L0C -> elsewhere, converting the f32 (i32)
    accumulator to the destination's element type on the way (round to nearest even), with
    an optional ReLU before it. Strides give the NZ -> ND change (nz2nd)."""

    relu = opt_prop_def(UnitAttr)
    assembly_format = (
        "$src (`[` $src_offset^ `]`)? `to` $dst (`[` $dst_offset^ `]`)? `sizes` $sizes "
        "(`src_strides` $src_strides^)? (`dst_strides` $dst_strides^)? (`window` ` ` `(` $window^ `)`)? "
        "(`pad` $pad^)? (`relu` $relu^)? attr-dict `:` type($src) `to` type($dst)"
    )
    SAME_ELEMENT: ClassVar[bool] = False

    def verify_instruction(self, target: targets.Target) -> None:
        super().verify_instruction(target)
        src, what = _elem(self.src), self.name.removeprefix("isa.")
        if src not in (f32, _I32):
            raise VerifyException(f"{what} reads the f32 or i32 accumulator, got {src}")
        if self.pad is not None:
            raise VerifyException(f"{what} writes only the window; it has no pad value")


# FixPipe's quantization modes of an i32 accumulator (Ascend C `QuantMode_t` of Fixpipe /
# asc_copy_l0c2l1's quant_pre, cannmirror/asc-devkit docs/api/context/c_api/cube_datamove):
# DEQF16 / VDEQF16 int32 -> half by a scalar / per-channel (FB vector) scale, REQ8 / VREQ8
# int32 -> int8 by a scalar / per-channel scale.
QUANT_MODES = ("DEQF16", "VDEQF16", "REQ8", "VREQ8")


@irdl_op_definition
class FixpipeOp(_L0cOutOp):
    """FIX: L0C -> GM / UB / L1 through the FixPipe unit of the A2 cores (910B, 310B;
    ascend.md §6.1). `to-isa` emits it only on a target with `isa.fixpipe = true`.

    `quant_pre` converts the i32 accumulator on the way out (the int8 epilogue's dequantize
    [, ReLU] [, requantize], so that no Vector instruction does it):
    - the deq scale: `deq_value` (DEQF16 / REQ8, the scalar register) or the f32 vector
      `scale` (VDEQF16 / VREQ8; on the chip staged in the fixpipe buffer FB), element
      `scale_offset + sum(i_d * scale_strides_d)` for position i of `sizes` (stride 0 along
      the dims the scale does not vary on: per output channel);
    - an i32 `bias` vector (element `bias_offset + sum(i_d * bias_strides_d)`) is added to
      the accumulator first (on the chip the mmad's BiasTable add of the A2 cores, ascend.md
      §6.5 "C2 -> BiasTable"; modeled at the read-out);
    - y = f32(acc) * scale in f32, rounded to f16 (or kept f32 with `deq_f32`), `relu`;
    - REQ8 / VREQ8 then requantize: saturate_int8(rint(y / quant_scale) + quant_offset).
    These are graph.dequantize / relu / quantize's roundings (ge.runtime.reference), so the
    result is bit-exact; the chip's REQ8 multiplies by one combined scale instead (within one
    step of this at .5 ties)."""

    name = "isa.fixpipe"
    scale = opt_operand_def(MemRefType)
    scale_offset = opt_operand_def(IndexType)
    bias = opt_operand_def(MemRefType)
    bias_offset = opt_operand_def(IndexType)
    bias_strides = opt_prop_def(DenseArrayBase[I64])
    quant_pre = opt_prop_def(StringAttr)
    deq_value = opt_prop_def(FloatAttr)
    scale_strides = opt_prop_def(DenseArrayBase[I64])
    deq_f32 = opt_prop_def(UnitAttr)
    quant_scale = opt_prop_def(FloatAttr)
    quant_offset = opt_prop_def(IntegerAttr[I64])
    assembly_format = (
        "$src (`[` $src_offset^ `]`)? `to` $dst (`[` $dst_offset^ `]`)? `sizes` $sizes "
        "(`src_strides` $src_strides^)? (`dst_strides` $dst_strides^)? (`window` ` ` `(` $window^ `)`)? "
        "(`pad` $pad^)? (`quant_pre` $quant_pre^)? (`deq` $deq_value^)? "
        "(`bias` $bias^ (`[` $bias_offset^ `]`)? `strides` $bias_strides)? "
        "(`scale` $scale^ (`[` $scale_offset^ `]`)? `strides` $scale_strides)? (`deq_f32` $deq_f32^)? (`relu` $relu^)? "
        "(`quant_scale` $quant_scale^)? (`quant_offset` $quant_offset^)? attr-dict `:` type($src) `to` type($dst) "
        "(`,` `bias` type($bias)^)? (`,` type($scale)^)?"
    )
    PIPE: ClassVar[Pipe] = Pipe.FIX
    SPACES: ClassVar = ((MemSpace.L0C,), (MemSpace.GM, MemSpace.UB, MemSpace.L1), (MemSpace.UB,), (MemSpace.UB,))

    def __init__(self, src: SSAValue, dst: SSAValue, sizes: Sequence[int], *, src_offset: SSAValue | None = None,
                 dst_offset: SSAValue | None = None, src_strides: Sequence[int] | None = None,
                 dst_strides: Sequence[int] | None = None, window: Sequence[SSAValue] = (), pad: float | None = None,
                 scale: SSAValue | None = None, scale_offset: SSAValue | None = None, bias: SSAValue | None = None,
                 bias_offset: SSAValue | None = None, **extra: Attribute):
        # the subclass's operands come first in the IRDL definition: scale, scale_offset, bias, bias_offset, src, ...
        IRDLOperation.__init__(
            self, operands=[[] if scale is None else [scale], [] if scale_offset is None else [scale_offset],
                            [] if bias is None else [bias], [] if bias_offset is None else [bias_offset], src,
                            [] if src_offset is None else [src_offset], dst, [] if dst_offset is None else [dst_offset],
                            list(window)], properties=self.move_props(sizes, src_strides, dst_strides, pad, extra))

    @property
    def BUFFERS(self) -> tuple[str, ...]:  # per instance here: the scale operand is optional
        return ("src", "dst") + (("scale",) if self.scale is not None else ()) + (("bias",) if self.bias is not None else ())

    @property
    def mode(self) -> str | None:
        return None if self.quant_pre is None else self.quant_pre.data

    @property
    def static_scale_strides(self) -> tuple[int, ...]:
        return ints(self.scale_strides)

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        out = super().rects(target)
        if self.scale is not None:
            out["scale"] = (Rect(0, self.static_sizes, self.static_scale_strides),)
        if self.bias is not None:
            out["bias"] = (Rect(0, self.static_sizes, ints(self.bias_strides)),)
        return out

    def _check_bounds(self, role: str, rects: tuple[Rect, ...]) -> None:
        if role in ("scale", "bias") and self.window:
            return
        super()._check_bounds(role, rects)

    def verify_instruction(self, target: targets.Target) -> None:
        super().verify_instruction(target)
        mode = self.mode
        if mode is None:
            if self.scale is not None or self.bias is not None or any(getattr(self, n) is not None for n in (
                    "deq_value", "scale_strides", "bias_strides", "deq_f32", "quant_scale", "quant_offset")):
                raise VerifyException("a deq scale or requant parameters need a quant_pre mode")
            return
        if mode not in QUANT_MODES:
            raise VerifyException(f"quant_pre must be one of {', '.join(QUANT_MODES)}, got '{mode}'")
        if _elem(self.src) != _I32:
            raise VerifyException(f"quant_pre {mode} reads the i32 accumulator, got {_elem(self.src)}")
        vector = mode.startswith("V")
        if vector != (self.scale is not None) or vector != (self.scale_strides is not None) or \
                vector == (self.deq_value is not None):
            raise VerifyException(f"{mode} takes {'a scale vector with scale_strides' if vector else 'deq_value'} "
                                  "(V* modes: a per-channel vector; the others: a scalar)")
        if vector:
            if _elem(self.scale) != f32:
                raise VerifyException(f"the deq scale vector is f32, got {_elem(self.scale)}")
            if len(self.static_scale_strides) != len(self.static_sizes):
                raise VerifyException("scale_strides needs one stride per dim of sizes")
        if (self.bias is None) != (self.bias_strides is None) or \
                (self.bias is not None and len(ints(self.bias_strides)) != len(self.static_sizes)):
            raise VerifyException("a bias vector needs bias_strides, one per dim of sizes")
        if self.bias is not None and _elem(self.bias) != _I32:
            raise VerifyException(f"the bias vector is i32, got {_elem(self.bias)}")
        requant = mode.endswith("REQ8")
        want = _I8 if requant else f16
        if _elem(self.dst) != want:
            raise VerifyException(f"{mode} writes {want}, got {_elem(self.dst)}")
        if requant != (self.quant_scale is not None):
            raise VerifyException(f"{mode}: quant_scale is {'required' if requant else 'only for REQ8 / VREQ8'}")
        if self.deq_f32 is not None and not requant:
            raise VerifyException("deq_f32 keeps the dequantized value in f32 before a requantize (REQ8 / VREQ8)")


@irdl_op_definition
class CopyL0cToUbOp(_L0cOutOp):
    """V: L0C -> UB on a core without FixPipe (the coupled Atlas training 910, DaVinci v1):
    CCE's `copy_matrix_cc_to_ubuf`, whose ConvRelu mode converts f32 -> f16 and applies
    ReLU on the way (CRMODE_F32toF16_NONE, CRMODE_NONE_RELU: Ascend C's
    DataCopyMatrixL0C2UBImpl in leideng/CANN-8.1.RC1 .../basic_api/impl/dav_c100/
    kernel_operator_data_copy_impl.h). It runs on the Vector pipe: Ascend C's GetQueEvt
    (kernel_event impl, `__CCE_AICORE__ <= 200`) orders an L0C -> UB queue by M_V / V_M
    events, and hand-written 910 kernels wrap it in set_flag(PIPE_M, PIPE_V) /
    set_flag(PIPE_V, PIPE_M). The result then leaves UB for GM by MTE3 (`copy_ub_to_gm`)."""

    name = "isa.copy_l0c_to_ub"
    PIPE: ClassVar[Pipe] = Pipe.V
    SPACES: ClassVar = ((MemSpace.L0C,), (MemSpace.UB,))


# One L0C fractal: 16 rows of 16 elements (NZ, ascend.md §5), whatever the element type.
FRACTAL_ROWS = 16
FRACTAL_ELEMS = FRACTAL_ROWS * FRACTAL_ROWS


@irdl_op_definition
class BroadcastUbToL0cOp(InstructionOp):
    """V: a vector in UB broadcast into L0C fractals -- CCE's `broadcast_ub_to_cc`, Ascend C's
    `BroadCastVecToMM(dst CO1, src VECIN/VECCALC/VECOUT, blockCount, blockLen, srcGap,
    dstGap)` (hiascend API page atlasascendc_api_07_0257: "every 16 elements of each data
    block are copied 16 times"; dst 256-element aligned; half / float / int32, src == dst;
    the 910's implementation in leideng/CANN-8.1.RC1 .../ascendc/include/basic_api/impl/
    dav_c100/kernel_operator_mm_impl.h: BroadCastVecToMMCal -> broadcast_ub_to_cc; the A2
    cores (dav_c220) reject it: they have the BiasTable). TBE's Cube schedules put a conv's
    or matmul's bias into L0C this way before the mmad chain, which then accumulates onto it
    (dav_c100 MmadCal: cmatrixInitVal is false when there is a bias).

    For b < `count` and l < `len`: the 16 elements src[b * (len * 16 + src_gap * E) + l * 16 + j]
    (E elements per 32-byte block, `src_gap` in blocks) become all 16 rows of dst fractal
    b * (len + dst_gap) + l (fractal = 256 elements; `dst_gap` in fractals): row r, column
    j of it is dst[256 * fractal + 16 * r + j]. One pass over the m / 16 row fractals of an
    NZ tile [n / 16, m / 16, 16, 16] with count = n / 16, len 1, dst_gap m / 16 - 1 gives
    every row the per-column vector (hand-written 910 / 310P matmuls loop it over m / 16).
    A Vector-pipe instruction (TBE lists broadcast_ub_to_cc among the Vector intrinsics;
    such kernels wait MTE2 -> V before it and set V -> M after it)."""

    name = "isa.broadcast_ub_to_l0c"
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    count = prop_def(IntegerAttr[I64])
    len_ = prop_def(IntegerAttr[I64], prop_name="len")
    src_gap = prop_def(IntegerAttr[I64])
    dst_gap = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$src (`[` $src_offset^ `]`)? `to` $dst (`[` $dst_offset^ `]`)? `count` $count `len` $len "
        "`src_gap` $src_gap `dst_gap` $dst_gap attr-dict `:` type($src) `to` type($dst)"
    )
    PIPE: ClassVar[Pipe] = Pipe.V
    BUFFERS: ClassVar[tuple[str, ...]] = ("src", "dst")
    SPACES: ClassVar = ((MemSpace.UB,), (MemSpace.L0C,))
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)
    TYPES: ClassVar = (f16, f32, IntegerType(32))
    MAX_FIELD: ClassVar[int] = 255  # blockCount / blockLen / srcGap / dstGap: 8-bit fields (blockCount [1, 255])

    def __init__(self, src: SSAValue, dst: SSAValue, count: int, len: int = 1, src_gap: int = 0, dst_gap: int = 0,
                 *, src_offset: SSAValue | None = None, dst_offset: SSAValue | None = None):
        super().__init__(
            operands=[src, [] if src_offset is None else [src_offset], dst, [] if dst_offset is None else [dst_offset]],
            properties={"count": int_attr(count), "len": int_attr(len),
                        "src_gap": int_attr(src_gap), "dst_gap": int_attr(dst_gap)},
        )

    @property
    def params(self) -> tuple[int, int, int, int]:
        """(count, len, src_gap, dst_gap)."""
        return (self.count.value.data, self.len_.value.data, self.src_gap.value.data, self.dst_gap.value.data)

    @property
    def fractals(self) -> int:
        count, n, _, _ = self.params
        return count * n

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        count, n, sgap, dgap = self.params
        epb = max(1, target.vector.block_bytes // itemsize(self.src.type))
        return {"src": (Rect(0, (count, n * FRACTAL_ROWS), (n * FRACTAL_ROWS + sgap * epb, 1)),),
                "dst": (Rect(0, (count, n * FRACTAL_ELEMS), ((n + dgap) * FRACTAL_ELEMS, 1)),)}

    def verify_instruction(self, target: targets.Target) -> None:
        src, dst = _elem(self.src), _elem(self.dst)
        if src != dst:
            raise VerifyException(f"broadcast_ub_to_l0c keeps the element type: {src} to {dst}")
        if src not in self.TYPES:
            raise VerifyException(f"broadcast_ub_to_l0c moves f16, f32 or i32 elements, got {src}")
        count, n, sgap, dgap = self.params
        for what, v, lo in (("count", count, 1), ("len", n, 1), ("src_gap", sgap, 0), ("dst_gap", dgap, 0)):
            if not lo <= v <= self.MAX_FIELD:
                raise VerifyException(f"{what} {v} is out of range {lo}..{self.MAX_FIELD}")
        off = static_index(self.dst_offset)
        if off is not None and off % FRACTAL_ELEMS:
            raise VerifyException(f"dst offset {off} is not on a {FRACTAL_ELEMS}-element fractal")
        off = static_index(self.src_offset)
        if off is not None and (off * itemsize(self.src.type)) % target.vector.block_bytes:
            raise VerifyException(f"src offset {off} is not {target.vector.block_bytes}-byte aligned")


MOVE_OPS = (CopyGmToL1Op, CopyGmToL0bOp, CopyGmToUbOp, CopyUbToGmOp, CopyUbToL1Op, CopyL1ToUbOp, CopyL1ToL0aOp, CopyL1ToL0bOp,
            CopyUbToUbOp, FixpipeOp, CopyL0cToUbOp)


@irdl_op_definition
class LoadScalarOp(InstructionOp):
    """S: one integer of UB (or GM, through the scalar unit's data cache; ascend.md §6.1:
    the scalar unit reads GM and UB) into an index register -- a Gather's row offset.
    A value v in [-bound, 0) gives v + bound (ONNX's negative indices); a value outside
    [-bound, bound) stops the kernel with a run-time error.

    DATA_DEPENDENT: the register depends on the data, so the addresses of the moves it
    feeds differ from run to run (an analysis done once per kernel must take such a move's
    whole buffer; the kernel carries `isa.data_dependent`)."""

    name = "isa.load_scalar"
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    bound = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$src (`[` $src_offset^ `]`)? `bound` $bound attr-dict `:` type($src)"
    PIPE: ClassVar[Pipe] = Pipe.S
    BUFFERS: ClassVar[tuple[str, ...]] = ("src",)
    SPACES: ClassVar = ((MemSpace.UB, MemSpace.GM),)
    WRITES: ClassVar[tuple[str, ...]] = ()
    DATA_DEPENDENT: ClassVar[bool] = True

    def __init__(self, src: SSAValue, bound: int, src_offset: SSAValue | None = None):
        super().__init__(operands=[src, [] if src_offset is None else [src_offset]],
                         properties={"bound": int_attr(bound)}, result_types=[IndexType()])

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        return {"src": (Rect(0, (1,), (1,)),)}

    def verify_instruction(self, target: targets.Target) -> None:
        if not isinstance(_elem(self.src), IntegerType):
            raise VerifyException(f"load_scalar reads an integer, got {_elem(self.src)}")
        if self.bound.value.data < 1:
            raise VerifyException(f"bound must be >= 1, got {self.bound.value.data}")


# A kernel attribute (UnitAttr) set by to-isa on kernels with a load_scalar: some of their
# addresses depend on the data (see LoadScalarOp).
DATA_DEPENDENT_ATTR = "isa.data_dependent"


@irdl_op_definition
class Img2colOp(InstructionOp):
    """MTE1, Load3D: the Cube's A tile in L0A (ZZ fractals) from a feature map in L1.

    The feature map is `fm` = [C1, rows, W, C0] (NC1HWC0 without N) or [C, rows, W] (NCHW
    without N) at the source offset. Logical element (i, j), i < sizes[0], j < sizes[1], is
    the input value output pixel `m + i` multiplies with K index `k + j` (K in (c1, kh, kw,
    c0) order over `channels` channels, C0 = `c0`); positions outside the feature map (the
    conv's pads), pixels past `out_size` and channels past `channels` are zero. Input row 0
    of the map is image row `h`, channel 0 is channel `c` (as `tile.img2col`)."""

    name = "isa.img2col"
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    m = operand_def(IndexType)
    k = operand_def(IndexType)
    c = operand_def(IndexType)
    h = operand_def(IndexType)
    sizes = prop_def(DenseArrayBase[I64])
    fm = prop_def(DenseArrayBase[I64])
    kernel = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    out_size = prop_def(DenseArrayBase[I64])
    channels = prop_def(IntegerAttr[I64])
    c0 = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$src (`[` $src_offset^ `]`)? `to` $dst (`[` $dst_offset^ `]`)? `at` ` ` `(` $m `,` $k `,` $c `,` $h `)` "
        "attr-dict `:` type($src) `to` type($dst)"
    )
    PIPE: ClassVar[Pipe] = Pipe.MTE1
    BUFFERS: ClassVar[tuple[str, ...]] = ("src", "dst")
    SPACES: ClassVar = ((MemSpace.L1,), (MemSpace.L0A, MemSpace.L0B))
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        fm = ints(self.fm)
        tm, tk = ints(self.sizes)
        return {"src": (Rect(0, (math.prod(fm),), (1,)),), "dst": (Rect(0, (tm * tk,), (1,)),)}

    def verify_instruction(self, target: targets.Target) -> None:
        src, dst = _elem(self.src), _elem(self.dst)
        if src != dst:
            raise VerifyException(f"img2col keeps the element type: {src} to {dst}")
        fm, c0 = ints(self.fm), self.c0.value.data
        if len(fm) not in (3, 4) or (len(fm) == 4 and fm[3] != c0) or min(fm, default=0) < 1:
            raise VerifyException(f"fm must be [C1, rows, W, {c0}] or [C, rows, W], got {list(fm)}")
        for name in ("kernel", "strides", "dilations", "out_size", "sizes"):
            v = ints(getattr(self, name))
            if len(v) != 2 or min(v) < 1:
                raise VerifyException(f"{name} must be two positive sizes, got {list(v)}")
        if len(ints(self.pads)) != 2 or min(ints(self.pads)) < 0:
            raise VerifyException(f"pads must be two non-negative sizes (top, left), got {list(ints(self.pads))}")
        m0, k0, _ = cube_fractal(target, src)
        tm, tk = ints(self.sizes)
        if tm % m0 or tk % k0:
            raise VerifyException(f"sizes {tm}x{tk} must be whole {m0}x{k0} fractals")
        if self.channels.value.data < 1 or c0 < 1:
            raise VerifyException("channels and c0 must be >= 1")


@irdl_op_definition
class MmadOp(InstructionOp):
    """M (Cube): C (+)= A x B on fractal layouts (module docstring): with `init` true C is
    overwritten, otherwise (and without `init`) accumulated. f16 / i8 products are exact
    and accumulate in the f32 / i32 C."""

    name = "isa.mmad"
    c = operand_def(MemRefType)
    c_offset = opt_operand_def(IndexType)
    a = operand_def(MemRefType)
    a_offset = opt_operand_def(IndexType)
    b = operand_def(MemRefType)
    b_offset = opt_operand_def(IndexType)
    init = opt_operand_def(i1)
    m = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$c (`[` $c_offset^ `]`)? `,` $a (`[` $a_offset^ `]`)? `,` $b (`[` $b_offset^ `]`)? "
        "`m` $m `k` $k `n` $n (`init` $init^)? attr-dict `:` type($c) `,` type($a) `,` type($b)"
    )
    PIPE: ClassVar[Pipe] = Pipe.M
    BUFFERS: ClassVar[tuple[str, ...]] = ("c", "a", "b")
    SPACES: ClassVar = ((MemSpace.L0C,), (MemSpace.L0A,), (MemSpace.L0B,))
    WRITES: ClassVar[tuple[str, ...]] = ("c",)

    def __init__(self, c: SSAValue, a: SSAValue, b: SSAValue, m: int, k: int, n: int, *, init: SSAValue | None = None,
                 c_offset: SSAValue | None = None, a_offset: SSAValue | None = None, b_offset: SSAValue | None = None):
        def opt(v):
            return [] if v is None else [v]

        super().__init__(
            operands=[c, opt(c_offset), a, opt(a_offset), b, opt(b_offset), opt(init)],
            properties={"m": int_attr(m), "k": int_attr(k), "n": int_attr(n)},
        )

    @property
    def mkn(self) -> tuple[int, int, int]:
        return self.m.value.data, self.k.value.data, self.n.value.data

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        m, k, n = self.mkn
        return {"c": (Rect(0, (m * n,), (1,)),), "a": (Rect(0, (m * k,), (1,)),), "b": (Rect(0, (k * n,), (1,)),)}

    def accesses(self, target: targets.Target | None = None) -> list[Access]:
        out = super().accesses(target)
        # C is read too unless a static init overwrites it.
        if static_init(self) is not True:
            out.append(Access(self.c, self.c_offset, out[0].rects, False))
        return out

    def verify_instruction(self, target: targets.Target) -> None:
        a, b, c = _elem(self.a), _elem(self.b), _elem(self.c)
        if a != b:
            raise VerifyException(f"A and B must have one element type, got {a} and {b}")
        want = _I32 if dtypes.is_integer(a) else f32
        if c != want:
            raise VerifyException(f"C must accumulate in {want} for {a} inputs, got {c}")
        m0, k0, n0 = cube_fractal(target, a)
        m, k, n = self.mkn
        if min(m, k, n) < 1 or m % m0 or k % k0 or n % n0:
            raise VerifyException(f"m, k, n = {m}, {k}, {n} must be positive multiples of the fractal {m0}x{k0}x{n0}")


def static_init(op: MmadOp) -> bool | None:
    """True / False when mmad's init is absent or a constant, None when only known at run time."""
    if op.init is None:
        return False
    owner = op.init.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return bool(owner.value.value.data)
    return None


# --------------------------------------------------------------------------------------
# Vector instructions (UB only)
# --------------------------------------------------------------------------------------


class _VectorOp(InstructionOp):
    """Shared by the vector instructions: `repeat` iterations over operands addressed as
    in the module docstring; `mask` elements per iteration (default: a full repeat)."""

    repeat = prop_def(IntegerAttr[I64])
    mask = opt_prop_def(IntegerAttr[I64])
    blk_stride = opt_prop_def(DenseArrayBase[I64])
    rep_stride = opt_prop_def(DenseArrayBase[I64])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    PIPE: ClassVar[Pipe] = Pipe.V
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)
    # Operands addressed per element (the rest, e.g. a reduction's dst, by their own rule).
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _spaces(cls) -> tuple[tuple[MemSpace, ...], ...]:
        return tuple((MemSpace.UB,) for _ in cls.BUFFERS)

    @property
    def repeats(self) -> int:
        return self.repeat.value.data

    def max_itemsize(self) -> int:
        return max(itemsize(self.buffer(r).type) for r in self.ELEMENTWISE)

    def mask_of(self, target: targets.Target) -> int:
        return _int(self.mask, target.vector.bytes_per_repeat // self.max_itemsize())

    def epb(self, role: str, target: targets.Target) -> int:
        return max(1, target.vector.block_bytes // itemsize(self.buffer(role).type))

    def strides_of(self, role: str, target: targets.Target) -> tuple[int, int]:
        """(block stride, repeat stride) of operand `role`, in 32-byte blocks."""
        return self._strides(role, self.mask_of(target), self.epb(role, target))

    def _strides(self, role: str, mask: int, epb: int) -> tuple[int, int]:
        i = self.BUFFERS.index(role)
        blk = ints(self.blk_stride, (1,) * len(self.BUFFERS))[i]
        rep = ints(self.rep_stride, (-1,) * len(self.BUFFERS))[i]
        return blk, -(-mask // epb) * blk if rep < 0 else rep

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        mask = self.mask_of(target)
        plain = type(self).strides_of is _VectorOp.strides_of  # (else an op's own rule)
        out = {}
        for role in self.ELEMENTWISE:
            epb = self.epb(role, target)
            blk, rep = self._strides(role, mask, epb) if plain else self.strides_of(role, target)
            out[role] = vector_rects(self.repeats, mask, blk, rep, epb)
        return out

    def verify_instruction(self, target: targets.Target) -> None:
        r = self.repeats
        if not 1 <= r <= target.vector.max_repeats:
            raise VerifyException(f"repeat {r} is out of range 1..{target.vector.max_repeats}")
        size = self.max_itemsize()
        most = target.vector.bytes_per_repeat // size
        plain = type(self).mask_of is _VectorOp.mask_of  # (then: mask_of without computing the size again)
        mask = _int(self.mask, most) if plain else self.mask_of(target)
        if not 1 <= mask <= most:
            raise VerifyException(f"mask {mask} is out of range 1..{most} elements of {size} bytes")
        for name in ("blk_stride", "rep_stride"):
            v = getattr(self, name)
            if v is not None and (len(ints(v)) != len(self.BUFFERS) or min(ints(v)) < 0):
                raise VerifyException(f"{name} needs one non-negative stride per operand ({len(self.BUFFERS)})")
        for role in self.BUFFERS:
            off = static_index(getattr(self, f"{role}_offset"))
            if off is not None and (off * itemsize(getattr(self, role).type)) % target.vector.block_bytes:
                raise VerifyException(
                    f"{role} offset {off} is not {target.vector.block_bytes}-byte aligned (vector operands start on a block)"
                )
        self.verify_types()

    def verify_types(self) -> None:
        types = {_elem(self.buffer(r)) for r in self.ELEMENTWISE}
        if len(types) != 1:
            raise VerifyException(f"{self.name} takes one element type, got {', '.join(sorted(map(str, types)))}")


def _vector_format(roles: Sequence[str], extra: str = "") -> str:
    operands = " `,` ".join(f"${r} (`[` ${r}_offset^ `]`)?" for r in roles)
    types = " `,` ".join(f"type(${r})" for r in roles)
    return (f"{operands} {extra}`repeat` $repeat (`mask` $mask^)? (`blk_stride` $blk_stride^)? "
            f"(`rep_stride` $rep_stride^)? attr-dict `:` {types}")


class _VBinaryOp(_VectorOp):
    """dst = src0 <op> src1, elementwise."""

    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src0 = operand_def(MemRefType)
    src0_offset = opt_operand_def(IndexType)
    src1 = operand_def(MemRefType)
    src1_offset = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src0", "src1"))
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src0", "src1")
    SPACES: ClassVar = ((MemSpace.UB,),) * 3
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst", "src0", "src1")


class _VUnaryOp(_VectorOp):
    """dst = <op>(src), elementwise."""

    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src"))
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src")
    SPACES: ClassVar = ((MemSpace.UB,),) * 2
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst", "src")


class _VScalarOp(_VectorOp):
    """dst = src <op> scalar, elementwise (the scalar from the scalar unit)."""

    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    scalar = prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src"), "`scalar` $scalar ")
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src")
    SPACES: ClassVar = ((MemSpace.UB,),) * 2
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst", "src")

    @property
    def value(self) -> float:
        return float(self.scalar.value.data)


@irdl_op_definition
class VAddOp(_VBinaryOp):
    name = "isa.vadd"


@irdl_op_definition
class VAddReluOp(_VBinaryOp):
    """dst = ReLU(src0 + src1): CCE's `vaddrelu` (a Vector instruction of the Atlas training
    and inference parts, f16 / f32 / s16; TBE DSL `vaddrelu`), one pass where a vadd and a
    vrelu take two -- a residual block's add and ReLU."""

    name = "isa.vaddrelu"


@irdl_op_definition
class VSubOp(_VBinaryOp):
    name = "isa.vsub"


@irdl_op_definition
class VMulOp(_VBinaryOp):
    name = "isa.vmul"


@irdl_op_definition
class VDivOp(_VBinaryOp):
    name = "isa.vdiv"


@irdl_op_definition
class VMaxOp(_VBinaryOp):
    name = "isa.vmax"


@irdl_op_definition
class VMinOp(_VBinaryOp):
    name = "isa.vmin"


@irdl_op_definition
class VAndOp(_VBinaryOp):
    """Bitwise and (integers, i1)."""

    name = "isa.vand"


@irdl_op_definition
class VOrOp(_VBinaryOp):
    """Bitwise or (integers, i1)."""

    name = "isa.vor"


@irdl_op_definition
class VExpOp(_VUnaryOp):
    name = "isa.vexp"


@irdl_op_definition
class VLnOp(_VUnaryOp):
    name = "isa.vln"


@irdl_op_definition
class VAbsOp(_VUnaryOp):
    name = "isa.vabs"


@irdl_op_definition
class VSqrtOp(_VUnaryOp):
    name = "isa.vsqrt"


@irdl_op_definition
class VRsqrtOp(_VUnaryOp):
    name = "isa.vrsqrt"


@irdl_op_definition
class VRecOp(_VUnaryOp):
    """1 / x."""

    name = "isa.vrec"


@irdl_op_definition
class VReluOp(_VUnaryOp):
    name = "isa.vrelu"


@irdl_op_definition
class VTanhOp(_VUnaryOp):
    name = "isa.vtanh"


@irdl_op_definition
class VErfOp(_VUnaryOp):
    name = "isa.verf"


@irdl_op_definition
class VNotOp(_VUnaryOp):
    """Bitwise not (integers, i1)."""

    name = "isa.vnot"


@irdl_op_definition
class VAddsOp(_VScalarOp):
    name = "isa.vadds"


@irdl_op_definition
class VMulsOp(_VScalarOp):
    name = "isa.vmuls"


@irdl_op_definition
class VMaxsOp(_VScalarOp):
    name = "isa.vmaxs"


@irdl_op_definition
class VMinsOp(_VScalarOp):
    name = "isa.vmins"


@irdl_op_definition
class VDupOp(_VectorOp):
    """dst = scalar (broadcast a scalar over the pattern)."""

    name = "isa.vdup"
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    scalar = prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst",), "`scalar` $scalar ")
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst",)
    SPACES: ClassVar = ((MemSpace.UB,),)
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst",)

    @property
    def value(self) -> float:
        return float(self.scalar.value.data)


@irdl_op_definition
class VConvOp(_VUnaryOp):
    """dst = src converted to dst's element type; `round` for float -> integer: Ascend C's
    RoundMode CAST_RINT (rint, half to even), CAST_FLOOR, CAST_CEIL, CAST_ROUND (round, half
    away from zero), CAST_TRUNC (trunc); round to nearest even otherwise."""

    name = "isa.vconv"
    round_mode = opt_prop_def(StringAttr, prop_name="round")
    assembly_format = _vector_format(("dst", "src"), "(`round` $round^)? ")
    ROUND_MODES: ClassVar[tuple[str, ...]] = ("rint", "floor", "ceil", "round", "trunc")

    def verify_types(self) -> None:
        if self.round_mode is not None and self.round_mode.data not in self.ROUND_MODES:
            raise VerifyException(f"round must be one of {', '.join(self.ROUND_MODES)}, got '{self.round_mode.data}'")


class _VReduceOperands(_VectorOp):
    """The operands, format and type rule the whole-repeat and the group reductions
    share: one UB source reduced into a UB destination of the same element type."""

    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src"))
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src")
    SPACES: ClassVar = ((MemSpace.UB,),) * 2
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("src",)

    def verify_types(self) -> None:
        if _elem(self.dst) != _elem(self.src):
            raise VerifyException(f"{self.name} keeps the element type: {_elem(self.src)} to {_elem(self.dst)}")


class _VReduceOp(_VReduceOperands):
    """dst[dst_offset + r * rep_stride(dst)] = <op> over the `mask` elements of iteration r
    of src (a whole-repeat reduction; the dst repeat stride counts elements, default 1).
    f16 sums accumulate in f32 and round once."""

    def dst_stride(self) -> int:
        return ints(self.rep_stride, (1, -1))[0] if self.rep_stride is not None else 1

    def strides_of(self, role: str, target: targets.Target) -> tuple[int, int]:
        return super().strides_of(role, target) if role == "src" else (1, self.dst_stride())

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        out = super().rects(target)
        out["dst"] = (Rect(0, (self.repeats,), (self.dst_stride(),)),)
        return out


@irdl_op_definition
class VReduceSumOp(_VReduceOp):
    name = "isa.vreduce_sum"


@irdl_op_definition
class VReduceMaxOp(_VReduceOp):
    name = "isa.vreduce_max"


@irdl_op_definition
class VReduceMinOp(_VReduceOp):
    name = "isa.vreduce_min"


class _VGroupReduceOp(_VReduceOperands):
    """Group reduction (CCE vcgadd / vcgmax / vcgmin, Ascend C BlockReduceSum / Max / Min):
    each 32-byte block of iteration r of src reduced to one element, the blocks' results of
    an iteration consecutive: dst[dst_offset + r * rep_stride(dst) + i] = <op> over the
    masked elements of block i (i < ceil(mask / elements per block); the dst repeat stride
    counts elements, default the blocks of a repeat). One instruction gives 8 rows' partial
    results when the blocks of a repeat are 8 rows (block stride = the row stride). f16 sums
    accumulate in f32 and round once."""

    def dst_stride(self, target: targets.Target) -> int:
        rep = ints(self.rep_stride, (-1, -1))[0] if self.rep_stride is not None else -1
        return target.vector.bytes_per_repeat // target.vector.block_bytes if rep < 0 else rep

    def groups(self, target: targets.Target) -> int:
        """Elements written per iteration: the blocks the mask reaches."""
        return -(-self.mask_of(target) // self.epb("src", target))

    def strides_of(self, role: str, target: targets.Target) -> tuple[int, int]:
        return super().strides_of(role, target) if role == "src" else (1, self.dst_stride(target))

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        out = super().rects(target)
        out["dst"] = (Rect(0, (self.repeats, self.groups(target)), (self.dst_stride(target), 1)),)
        return out

    def verify_types(self) -> None:
        super().verify_types()
        if self.blk_stride is not None and ints(self.blk_stride)[0] != 1:
            raise VerifyException(f"{self.name} writes its results consecutively: dst block stride must be 1")


@irdl_op_definition
class VCGAddOp(_VGroupReduceOp):
    name = "isa.vcgadd"


@irdl_op_definition
class VCGMaxOp(_VGroupReduceOp):
    name = "isa.vcgmax"


@irdl_op_definition
class VCGMinOp(_VGroupReduceOp):
    name = "isa.vcgmin"


@irdl_op_definition
class VBrcbOp(_VectorOp):
    """Broadcast to blocks: for r < repeat and each of the B blocks of an iteration
    (B = bytes_per_repeat / block_bytes), the whole dst block
    `r * rep_stride(dst) + i * blk_stride(dst)` (in blocks) = src[r * rep_stride(src) + i]
    (the src repeat stride counts elements, default B). The mask is not used."""

    name = "isa.vbrcb"
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_offset = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src"))
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src")
    SPACES: ClassVar = ((MemSpace.UB,),) * 2
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst",)

    @staticmethod
    def blocks(target: targets.Target) -> int:
        return target.vector.bytes_per_repeat // target.vector.block_bytes

    def strides_of(self, role: str, target: targets.Target) -> tuple[int, int]:
        i = self.BUFFERS.index(role)
        blk = ints(self.blk_stride, (1, 1))[i]
        rep = ints(self.rep_stride, (-1, -1))[i]
        if role == "dst":
            return blk, self.blocks(target) * blk if rep < 0 else rep
        return 1, self.blocks(target) if rep < 0 else rep

    def rects(self, target: targets.Target) -> dict[str, tuple[Rect, ...]]:
        blk, rep = self.strides_of("dst", target)
        epb, nb = self.epb("dst", target), self.blocks(target)
        _, srep = self.strides_of("src", target)
        return {
            "dst": (Rect(0, (self.repeats, nb, epb), (rep * epb, blk * epb, 1)),),
            "src": (Rect(0, (self.repeats, nb), (srep, 1)),),
        }

    def mask_of(self, target: targets.Target) -> int:
        return self.blocks(target) * self.epb("dst", target)

    def verify_types(self) -> None:
        if self.mask is not None:
            raise VerifyException("vbrcb writes whole blocks; it takes no mask")
        if _elem(self.dst) != _elem(self.src):
            raise VerifyException(f"vbrcb keeps the element type: {_elem(self.src)} to {_elem(self.dst)}")


CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")
MASK_TYPES = (IntegerType(8), IntegerType(1))  # one byte per element, 1 true / 0 false


@irdl_op_definition
class VCmpOp(_VectorOp):
    """dst = (src0 <mode> src1) as one byte per element (1 true, 0 false) in an i8 buffer
    (or an i1 one: graph-level booleans are stored as one byte 0 / 1)."""

    name = "isa.vcmp"
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    src0 = operand_def(MemRefType)
    src0_offset = opt_operand_def(IndexType)
    src1 = operand_def(MemRefType)
    src1_offset = opt_operand_def(IndexType)
    mode = prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "src0", "src1"), "`mode` $mode ")
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "src0", "src1")
    SPACES: ClassVar = ((MemSpace.UB,),) * 3
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst", "src0", "src1")

    def verify_types(self) -> None:
        if self.mode.data not in CMP_MODES:
            raise VerifyException(f"mode must be one of {', '.join(CMP_MODES)}, got '{self.mode.data}'")
        if _elem(self.dst) not in MASK_TYPES:
            raise VerifyException(f"vcmp writes an i8 (or i1) mask, got {_elem(self.dst)}")
        if _elem(self.src0) != _elem(self.src1):
            raise VerifyException(f"vcmp compares one element type, got {_elem(self.src0)} and {_elem(self.src1)}")


@irdl_op_definition
class VSelOp(_VectorOp):
    """dst = cond ? src0 : src1 with cond an i8 (or i1) mask (as written by vcmp)."""

    name = "isa.vsel"
    dst = operand_def(MemRefType)
    dst_offset = opt_operand_def(IndexType)
    cond = operand_def(MemRefType)
    cond_offset = opt_operand_def(IndexType)
    src0 = operand_def(MemRefType)
    src0_offset = opt_operand_def(IndexType)
    src1 = operand_def(MemRefType)
    src1_offset = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = _vector_format(("dst", "cond", "src0", "src1"))
    BUFFERS: ClassVar[tuple[str, ...]] = ("dst", "cond", "src0", "src1")
    SPACES: ClassVar = ((MemSpace.UB,),) * 4
    ELEMENTWISE: ClassVar[tuple[str, ...]] = ("dst", "cond", "src0", "src1")

    def max_itemsize(self) -> int:
        return max(itemsize(self.buffer(r).type) for r in ("dst", "src0", "src1"))

    def verify_types(self) -> None:
        if _elem(self.cond) not in MASK_TYPES:
            raise VerifyException(f"vsel takes an i8 (or i1) mask, got {_elem(self.cond)}")
        types = {_elem(self.buffer(r)) for r in ("dst", "src0", "src1")}
        if len(types) != 1:
            raise VerifyException(f"vsel takes one element type, got {', '.join(sorted(map(str, types)))}")


VECTOR_BINARY = (VAddOp, VAddReluOp, VSubOp, VMulOp, VDivOp, VMaxOp, VMinOp, VAndOp, VOrOp)
VECTOR_UNARY = (VExpOp, VLnOp, VAbsOp, VSqrtOp, VRsqrtOp, VRecOp, VReluOp, VTanhOp, VErfOp, VNotOp)
VECTOR_SCALAR = (VAddsOp, VMulsOp, VMaxsOp, VMinsOp)
VECTOR_REDUCE = (VReduceSumOp, VReduceMaxOp, VReduceMinOp)
VECTOR_GROUP_REDUCE = (VCGAddOp, VCGMaxOp, VCGMinOp)
VECTOR_OPS = (*VECTOR_BINARY, *VECTOR_UNARY, *VECTOR_SCALAR, *VECTOR_REDUCE, *VECTOR_GROUP_REDUCE, VDupOp, VConvOp,
              VBrcbOp, VCmpOp, VSelOp)
INSTRUCTION_OPS = (*MOVE_OPS, LoadScalarOp, Img2colOp, MmadOp, BroadcastUbToL0cOp, *VECTOR_OPS)

for _cls in VECTOR_OPS:  # every vector operand is in UB
    _cls.SPACES = _cls._spaces()



# --------------------------------------------------------------------------------------
# Operand accessors that decode the segment sizes once
# --------------------------------------------------------------------------------------

_item = tuple.__getitem__  # an operand by index (SSAValues' own __getitem__ is a Python-level method)
_SEGMENTS: dict[bytes, tuple[tuple[int, int], ...]] = {}  # operandSegmentSizes bytes -> (start, size) each


def _segments(op: Operation) -> tuple[tuple[int, int], ...]:
    sizes = op.properties["operandSegmentSizes"]
    assert isinstance(sizes, DenseArrayBase)
    data = sizes.data.data
    out = _SEGMENTS.get(data)
    if out is None:
        values = tuple(int(v) for v in sizes.get_values())
        out = _SEGMENTS[data] = tuple((sum(values[:i]), n) for i, n in enumerate(values))
    return out


@dataclass(frozen=True)
class _SegmentAccessor:
    """A named operand of an `AttrSizedOperandSegments` op. Why: xDSL's accessor unpacks
    the segment sizes property on every access, and the verifiers and the analyses of
    insert-sync and the model file read an instruction's operands by name many times."""

    idx: int  # which segment
    kind: str  # "single", "optional" or "variadic"

    def __get__(self, obj: Operation | None, objtype=None):
        if obj is None:
            return self
        try:  # (`_segments`, inlined; it words what is wrong with a malformed op)
            segments = _SEGMENTS.get(obj.properties["operandSegmentSizes"].data.data)
        except (KeyError, AttributeError):
            segments = None
        start, size = (segments or _segments(obj))[self.idx]
        if self.kind == "variadic":
            return obj._operands[start:start + size]
        if self.kind == "optional" and not size:
            return None
        return _item(obj._operands, start)

    def __set__(self, instance, value) -> None:
        raise NotImplementedError("Cannot write to named operands, regions, results, or successors.")


def _fast_operand_accessors(cls: type[IRDLOperation]) -> None:
    """Replace xDSL's segment-decoding operand accessors of `cls` by `_SegmentAccessor`s."""
    op_def = cls.get_irdl_definition()
    if not any(isinstance(o, AttrSizedOperandSegments) for o in op_def.options):
        return
    for i, (name, d) in enumerate(op_def.operands):
        kind = ("optional" if isinstance(d, OptOperandDef) else "variadic" if isinstance(d, VarOperandDef)
                else "single")
        setattr(cls, name, _SegmentAccessor(i, kind))


for _cls in (KernelOp, LaunchOp, BlockIdxOp, BufferOp, SetFlagOp, WaitFlagOp, PipeBarrierOp, *INSTRUCTION_OPS):
    _fast_operand_accessors(_cls)

Isa = Dialect(
    "isa",
    [KernelOp, LaunchOp, BlockIdxOp, BufferOp, SetFlagOp, WaitFlagOp, PipeBarrierOp, *INSTRUCTION_OPS],
    [MemSpaceAttr, PipeAttr],
)
install_fast_verify(Isa)  # xDSL's verdict, faster (dialects/fast_verify.py; arith and scf: dialects/__init__.py)
