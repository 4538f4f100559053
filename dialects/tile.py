"""The `tile` dialect: kernels that fit the AI Core's buffers (DESIGN.md §2, level "tile").

Below `fusion` and above `isa`. A `fusion.group` becomes a `tile.kernel`: a symbol whose
arguments are GM buffers (builtin memrefs in `#tile.space<gm>`), launched from the graph
function by `tile.launch`. Inside, `scf.for` loops walk the tiles; each core of the
`block_dim` cores takes its share through `tile.block_idx`. Local buffers are
`tile.alloc`s in a memory space (`l1`, `l0a`, `l0b`, `l0c`, `ub`) with a buffer count
(2 = ping-pong: the isa level rotates the copies so that loads of tile i+1 overlap compute
on tile i; at this level the count only reserves the space).

Data movement and compute, following the Ascend C paradigms (CopyIn / Compute / CopyOut on
the vector side, GM -> L1 -> L0A/L0B -> Cube -> L0C -> out on the cube side):

- `tile.load_index`: one integer of a buffer read into the index arithmetic (Gather's
  indices: a row's offset comes from the data), negative values counted from `bound`.
- `tile.copy`: a rectangle of the source (static sizes and strides, dynamic offsets) to a
  rectangle of the destination, optionally permuting dims on the way (L1 -> L0 fractal
  loads, L0C -> UB). Source elements outside the source buffer read as `pad` (conv pads,
  edge tiles); without `pad` such a read is an error. An explicit `window` (lo, hi per
  rectangle dim, dynamic) reads only the positions inside it; the rest read as `pad` too
  (Trilu's rows). Destination elements outside the
  destination are dropped (edge tiles).
- `tile.img2col`: the Load3D step: Cube A-operand rows (output pixels) x columns (K index in
  (c1, kh, kw, c0) order, the order of FRACTAL_Z weights) from a feature map in L1.
- `tile.mmad`: C(L0C, f32) = or += A(L0A) x B(L0B) on logical matrices (B from a column on: `b_column`).
- `tile.vector`: vector compute on UB tiles. Its region holds graph/layout-level ops typed
  with the tile shapes: elementwise, broadcast and reduction semantics are those of the
  graph ops (runtime/reference.py) applied to the tiles, so every fused epilogue or
  elementwise chain is one op here.
- `tile.vpool`: a sliding-window max / average on a UB tile (the vector reduce of pools),
  counting only the window positions inside the real input.
- `tile.untiled`: what `bufferize` leaves in a kernel before `tile` runs: the group's ops on
  whole GM tensors.

What every op computes lives in `ge.runtime.tile_interp`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FlatSymbolRefAttrConstr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ge.dialects import dtypes
from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.fusion import KINDS
from ge.dialects.kernel_base import KernelBase, lookup_symbol
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)


class MemSpace(StrEnum):
    GM = "gm"
    L1 = "l1"
    L0A = "l0a"
    L0B = "l0b"
    L0C = "l0c"
    UB = "ub"


LOCAL_SPACES = (MemSpace.L1, MemSpace.L0A, MemSpace.L0B, MemSpace.L0C, MemSpace.UB)

# The data paths of an AI Core (ascend.md §6.1): MTE2 GM -> L1/UB/L0B, MTE1 L1 -> L0A/L0B (and
# L1 -> UB on coupled cores), MTE3 UB -> GM (UB -> L1), the L0C -> UB/GM move, UB -> UB.
COPY_PATHS = {
    (MemSpace.GM, MemSpace.L1), (MemSpace.GM, MemSpace.L0B), (MemSpace.GM, MemSpace.UB), (MemSpace.UB, MemSpace.GM),
    (MemSpace.L1, MemSpace.L0A), (MemSpace.L1, MemSpace.L0B), (MemSpace.L1, MemSpace.UB),
    (MemSpace.UB, MemSpace.L1), (MemSpace.L0C, MemSpace.UB), (MemSpace.L0C, MemSpace.GM),
    (MemSpace.UB, MemSpace.UB),
}


@irdl_attr_definition
class MemSpaceAttr(EnumAttribute[MemSpace]):
    """`#tile.space<ub>`: the memory a buffer lives in (the memref's memory space)."""

    name = "tile.space"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemSpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(MemSpace)


def buffer_type(shape: Sequence[int], elem: Attribute, space: MemSpace | str) -> MemRefType:
    """A buffer of `shape` x `elem` in memory `space`."""
    return MemRefType(elem, [int(d) for d in shape], memory_space=MemSpaceAttr(MemSpace(space)))


def space_of(t: Attribute) -> MemSpace | None:
    """The memory space of a buffer type, None for anything else."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, MemSpaceAttr):
        return t.memory_space.data
    return None


def _buffer(v: SSAValue, what: str, spaces: Sequence[MemSpace] | None = None) -> MemRefType:
    t = v.type
    space = space_of(t)
    if space is None:
        raise VerifyException(f"{what} must be a buffer in a #tile.space, got {t}")
    if spaces is not None and space not in spaces:
        raise VerifyException(f"{what} must be in {' or '.join(s.value for s in spaces)}, got {space.value}")
    assert isinstance(t, MemRefType)
    return t


def _elements(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _ints(attr: DenseArrayBase | None, default: Sequence[int] = ()) -> tuple[int, ...]:
    if attr is None:
        return tuple(default)
    return tuple(int(v) for v in attr.get_values())


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


# --------------------------------------------------------------------------------------
# Kernels and launches
# --------------------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(KernelBase):
    """A kernel: GM buffers in (`ins`) and out (`outs`), run on `block_dim` AI cores."""

    name = "tile.kernel"
    kind = prop_def(StringAttr)

    def __init__(self, name: str, ins: Sequence[Attribute], outs: Sequence[Attribute], kind: str,
                 block_dim: int = 1, body: Region | None = None):
        types = [*ins, *outs]
        super().__init__(
            properties={**self.kernel_props(name, types, len(ins), block_dim), "kind": StringAttr(kind)},
            regions=[self.entry_region(types, body)],
        )

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("kind")
        return {"kind": StringAttr(parser.parse_str_literal())}

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" kind ")
        printer.print_string_literal(self.kind.data)

    def verify_(self) -> None:
        self.verify_signature()
        if self.kind.data not in KINDS:
            raise VerifyException(f"unknown kernel kind '{self.kind.data}' (one of {', '.join(KINDS)})")
        for i, a in enumerate(self.body.block.args):
            _buffer(a, f"kernel argument #{i}", [MemSpace.GM])


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run kernel `callee` on GM buffers: it reads `ins` and writes `outs`."""

    name = "tile.launch"
    callee = prop_def(FlatSymbolRefAttrConstr)
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$callee (`ins` `(` $ins^ `:` type($ins) `)`)? (`outs` `(` $outs^ `:` type($outs) `)`)? attr-dict"
    )

    def __init__(self, callee: str, ins: Sequence[SSAValue], outs: Sequence[SSAValue]):
        super().__init__(operands=[list(ins), list(outs)], properties={"callee": SymbolRefAttr(callee)})

    def verify_(self) -> None:
        kernel = lookup_symbol(self, self.callee)
        if not isinstance(kernel, KernelOp):
            raise VerifyException(f"no tile.kernel named {self.callee}")
        got = ([v.type for v in self.ins], [v.type for v in self.outs])
        want = ([a.type for a in kernel.ins], [a.type for a in kernel.outs])
        if got != want:
            raise VerifyException(
                f"the launch passes ins ({', '.join(map(str, got[0]))}) outs ({', '.join(map(str, got[1]))}) "
                f"but {self.callee} takes ins ({', '.join(map(str, want[0]))}) outs ({', '.join(map(str, want[1]))})"
            )


@irdl_op_definition
class BlockIdxOp(IRDLOperation):
    """Which of the kernel's `block_dim` cores runs this instance (0 .. block_dim - 1)."""

    name = "tile.block_idx"
    result = result_def(IndexType)
    traits = traits_def(Pure(), HasAncestor(KernelOp))
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


# --------------------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A constant GM buffer (weights), from a `dense` or `dense_resource` value."""

    name = "tile.const"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `->` type($result)"

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr, result_type: MemRefType):
        super().__init__(properties={"value": value}, result_types=[result_type])

    def verify_(self) -> None:
        t = _buffer(self.result, "the result", [MemSpace.GM])
        vt = self.value.get_type() if isinstance(self.value, DenseIntOrFPElementsAttr) else self.value.type
        if not isinstance(vt, TensorType) or tuple(vt.get_shape()) != t.get_shape() or vt.element_type != t.element_type:
            raise VerifyException(f"the value's type {vt} does not match the buffer {t}")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer: local (`l1`, `l0a`, `l0b`, `l0c`, `ub`) inside kernels, `gm` for the graph
    function's intermediates. `buffers` copies are reserved (2 = double buffering)."""

    name = "tile.alloc"
    count = prop_def(IntegerAttr[I64])
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = "`buffers` $count attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, count: int = 1):
        super().__init__(properties={"count": IntegerAttr(count, i64)}, result_types=[result_type])

    def verify_(self) -> None:
        t = _buffer(self.result, "the result")
        n = self.count.value.data
        if n < 1:
            raise VerifyException(f"buffers must be >= 1, got {n}")
        space = space_of(t)
        in_kernel = _in_kernel(self)
        if space == MemSpace.GM:
            if n != 1:
                raise VerifyException(f"a gm buffer has one copy, got buffers {n}")
            if in_kernel:
                raise VerifyException("kernels take their gm buffers as arguments; allocate gm outside kernels")
        elif not in_kernel:
            raise VerifyException(f"a {space.value} buffer can only be allocated inside a tile.kernel")


def _in_kernel(op: Operation) -> bool:
    p = op.parent_op()
    while p is not None:
        if isinstance(p, KernelOp):
            return True
        p = p.parent_op()
    return False


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The same bytes seen with another shape (row-major; no data moves)."""

    name = "tile.view"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, shape: Sequence[int]):
        t = source.type
        assert isinstance(t, MemRefType)
        super().__init__(operands=[source], result_types=[MemRefType(t.element_type, list(shape), memory_space=t.memory_space)])

    def verify_(self) -> None:
        a = _buffer(self.source, "the source")
        b = _buffer(self.result, "the result")
        if a.element_type != b.element_type or a.memory_space != b.memory_space:
            raise VerifyException(f"a view keeps the element type and memory: {a} to {b}")
        if _elements(a.get_shape()) != _elements(b.get_shape()):
            raise VerifyException(
                f"a view keeps the element count: {_elements(a.get_shape())} elements to {_elements(b.get_shape())}"
            )


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


@irdl_op_definition
class CopyOp(IRDLOperation):
    """dst[dst_offsets + i] = transpose(src[src_offsets + i * strides], perm), i < sizes;
    with `window` (lo_0, hi_0, lo_1, ...) positions i outside lo <= i < hi read as `pad`."""

    name = "tile.copy"
    source = operand_def(MemRefType)
    dest = operand_def(MemRefType)
    source_offsets = var_operand_def(IndexType)
    dest_offsets = var_operand_def(IndexType)
    window = var_operand_def(IndexType)
    sizes = prop_def(DenseArrayBase[I64])
    strides = opt_prop_def(DenseArrayBase[I64])
    perm = opt_prop_def(DenseArrayBase[I64])
    pad = opt_prop_def(FloatAttr[Float32Type])
    # `pad` rides in the attribute dictionary: a -inf pad prints as a typed hex float
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `[` $source_offsets `]` `to` $dest `[` $dest_offsets `]` `sizes` $sizes "
        "(`strides` $strides^)? (`perm` $perm^)? (`window` ` ` `(` $window^ `)`)? attr-dict `:` type($source) "
        "`to` type($dest)"
    )

    def __init__(self, source: SSAValue, source_offsets: Sequence[SSAValue], dest: SSAValue,
                 dest_offsets: Sequence[SSAValue], sizes: Sequence[int], strides: Sequence[int] | None = None,
                 perm: Sequence[int] | None = None, pad: float | None = None, window: Sequence[SSAValue] = ()):
        props: dict[str, Attribute] = {"sizes": int_array(sizes)}
        if strides is not None and any(s != 1 for s in strides):
            props["strides"] = int_array(strides)
        if perm is not None and list(perm) != list(range(len(perm))):
            props["perm"] = int_array(perm)
        if pad is not None:
            props["pad"] = FloatAttr(float(pad), f32)
        super().__init__(operands=[source, dest, list(source_offsets), list(dest_offsets), list(window)],
                         properties=props)

    @property
    def static_sizes(self) -> tuple[int, ...]:
        return _ints(self.sizes)

    @property
    def static_strides(self) -> tuple[int, ...]:
        return _ints(self.strides, (1,) * len(self.static_sizes))

    @property
    def static_perm(self) -> tuple[int, ...]:
        return _ints(self.perm, range(len(self.static_sizes)))

    def verify_(self) -> None:
        src = _buffer(self.source, "the source")
        dst = _buffer(self.dest, "the destination")
        path = (space_of(src), space_of(dst))
        if path not in COPY_PATHS:
            raise VerifyException(f"no data path from {path[0].value} to {path[1].value}")
        if src.element_type != dst.element_type:
            raise VerifyException(f"a copy keeps the element type: {src.element_type} to {dst.element_type}")
        sizes, strides, perm = self.static_sizes, self.static_strides, self.static_perm
        rank = src.get_num_dims()
        if len(self.source_offsets) != rank or len(sizes) != rank or len(strides) != rank:
            raise VerifyException(
                f"the source has rank {rank}: it needs {rank} offsets, sizes and strides, got "
                f"{len(self.source_offsets)}, {len(sizes)}, {len(strides)}"
            )
        if dst.get_num_dims() != rank or len(self.dest_offsets) != rank:
            raise VerifyException(
                f"source and destination must have the same rank and one offset per dim, got rank {rank} to "
                f"rank {dst.get_num_dims()} with {len(self.dest_offsets)} destination offsets"
            )
        if sorted(perm) != list(range(rank)):
            raise VerifyException(f"perm {list(perm)} is not a permutation of 0..{rank - 1}")
        if any(s < 1 for s in sizes) or any(s < 1 for s in strides):
            raise VerifyException(f"sizes {list(sizes)} and strides {list(strides)} must be >= 1")
        if len(self.window) not in (0, 2 * rank):
            raise VerifyException(f"a window needs a (lo, hi) pair per dim: {2 * rank} values, got {len(self.window)}")
        if self.window and self.pad is None:
            raise VerifyException("the positions outside a window read as pad; the copy needs a pad value")
        moved = [sizes[p] for p in perm]
        if space_of(dst) != MemSpace.GM and any(m > d for m, d in zip(moved, dst.get_shape())):
            raise VerifyException(f"a {'x'.join(map(str, moved))} rectangle does not fit the destination {dst}")


@irdl_op_definition
class LoadIndexOp(IRDLOperation):
    """`result = source[offsets]` read by the scalar unit into the index arithmetic (a
    Gather's row comes from its indices). ONNX indices may be negative: a value v in
    [-bound, 0) means v + bound; a value outside [-bound, bound) stops the kernel with a
    run-time error (never a read of another row)."""

    name = "tile.load_index"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    bound = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $offsets `]` `bound` $bound attr-dict `:` type($source)"

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], bound: int):
        super().__init__(operands=[source, list(offsets)], properties={"bound": IntegerAttr(bound, i64)},
                         result_types=[IndexType()])

    def verify_(self) -> None:
        src = _buffer(self.source, "the source", [MemSpace.UB, MemSpace.GM])
        if not isinstance(src.element_type, IntegerType):
            raise VerifyException(f"indices are integers, got {src.element_type}")
        if len(self.offsets) != src.get_num_dims():
            raise VerifyException(f"the source has rank {src.get_num_dims()}: it needs {src.get_num_dims()} offsets, "
                                  f"got {len(self.offsets)}")
        if self.bound.value.data < 1:
            raise VerifyException(f"bound must be >= 1, got {self.bound.value.data}")


@irdl_op_definition
class Img2colOp(IRDLOperation):
    """Load3D: the Cube's A tile from a feature map in L1.

    `dest[i, j]` = the input element that output pixel `m + i` multiplies with K index
    `k + j`, K in (c1, kh, kw, c0) order over `channels` channels (C0 = `c0`). The feature
    map holds input rows `h` .. and channels `c` .. (group-relative) of one image, as
    [1, C1, rows, W, C0] (NC1HWC0) or [1, C, rows, W] (NCHW); positions outside it (the
    conv's pads), pixels past the output and channels past `channels` read as zero.
    """

    name = "tile.img2col"
    source = operand_def(MemRefType)
    dest = operand_def(MemRefType)
    m = operand_def(IndexType)
    k = operand_def(IndexType)
    c = operand_def(IndexType)
    h = operand_def(IndexType)
    kernel = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    out_size = prop_def(DenseArrayBase[I64])
    channels = prop_def(IntegerAttr[I64])
    c0 = prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `[` $m `,` $k `,` $c `,` $h `]` `to` $dest attr-dict `:` type($source) `to` type($dest)"

    def verify_(self) -> None:
        src = _buffer(self.source, "the feature map", [MemSpace.L1])
        dst = _buffer(self.dest, "the destination", [MemSpace.L0A])
        if src.element_type != dst.element_type:
            raise VerifyException(f"img2col keeps the element type: {src.element_type} to {dst.element_type}")
        c0 = self.c0.value.data
        shape = src.get_shape()
        if not ((len(shape) == 5 and shape[4] == c0) or len(shape) == 4) or shape[0] != 1:
            raise VerifyException(
                f"the feature map must be [1, C1, rows, W, {c0}] (NC1HWC0) or [1, C, rows, W] (NCHW), got {src}"
            )
        if dst.get_num_dims() != 2:
            raise VerifyException(f"the destination must be a matrix [pixels, K], got {dst}")
        for name in ("kernel", "strides", "dilations", "pads", "out_size"):
            values = _ints(getattr(self, name))
            if len(values) != 2 or min(values) < (0 if name == "pads" else 1):
                raise VerifyException(f"{name} must be two {'non-negative' if name == 'pads' else 'positive'} sizes, got {list(values)}")
        if self.channels.value.data < 1 or c0 < 1:
            raise VerifyException("channels and c0 must be >= 1")


# --------------------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------------------


@irdl_op_definition
class MmadOp(IRDLOperation):
    """Cube: C = A x B when `init` is true, C += A x B otherwise; C accumulates in f32
    (i32 for integer inputs). With `b_column`, B is C's width of columns of the `b` buffer
    from that column on (a buffer of one K block of 16 rows: its columns' fractals are
    contiguous in L0B's ZN layout -- the Cube bias block of every N tile)."""

    name = "tile.mmad"
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    b_column = opt_operand_def(IndexType)
    c = operand_def(MemRefType)
    init = operand_def(i1)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = ("$a `,` $b (`[` $b_column^ `]`)? `,` $c `init` $init attr-dict `:` type($a) `,` type($b) `,` "
                       "type($c)")

    def verify_(self) -> None:
        a = _buffer(self.a, "A", [MemSpace.L0A])
        b = _buffer(self.b, "B", [MemSpace.L0B])
        c = _buffer(self.c, "C", [MemSpace.L0C])
        if a.get_num_dims() != 2 or b.get_num_dims() != 2 or c.get_num_dims() != 2:
            raise VerifyException("A, B and C must be matrices")
        (m, k), (k2, n), (m2, n2) = a.get_shape(), b.get_shape(), c.get_shape()
        if self.b_column is not None:
            if k2 != 16 or n < n2:
                raise VerifyException(f"a B column offset needs one K block of 16 rows at least C's {n2} columns wide, "
                                      f"got B {k2}x{n}")
            n = n2
        if k != k2 or m != m2 or n != n2:
            raise VerifyException(f"shapes do not chain: A {m}x{k}, B {k2}x{n}, C {m2}x{n2}")
        if a.element_type != b.element_type:
            raise VerifyException(f"A and B must have one element type, got {a.element_type} and {b.element_type}")
        want = IntegerType(32) if dtypes.is_integer(a.element_type) else f32
        if c.element_type != want:
            raise VerifyException(f"C must accumulate in {want}, got {c.element_type}")


class _RegionComputeOp(IRDLOperation):
    """Shared by tile.vector and tile.untiled: buffers in, a region of graph/layout ops on
    tensors, buffers out."""

    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect(), RecursiveMemoryEffect())
    assembly_format = "(`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)` attr-dict-with-keyword $body"
    SPACES: ClassVar[tuple[MemSpace, ...]] = ()
    EXACT: ClassVar[bool] = False

    def __init__(self, ins: Sequence[SSAValue], outs: Sequence[SSAValue], body: Region):
        super().__init__(operands=[list(ins), list(outs)], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.ins):
            raise VerifyException(f"the body takes {len(block.args)} arguments for {len(self.ins)} ins")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("the body must end with tile.yield")
        if len(last.values) != len(self.outs):
            raise VerifyException(f"tile.yield gives {len(last.values)} values for {len(self.outs)} outs")
        pairs = [(v, a, f"in #{i}") for i, (v, a) in enumerate(zip(self.ins, block.args))]
        pairs += [(v, y, f"out #{i}") for i, (v, y) in enumerate(zip(self.outs, last.values))]
        for buf, value, what in pairs:
            t = _buffer(buf, what, self.SPACES)
            vt = value.type
            if not isinstance(vt, TensorType):
                raise VerifyException(f"{what}: the body's value must be a tensor, got {vt}")
            if vt.element_type != t.element_type:
                raise VerifyException(f"{what}: element types differ: buffer {t.element_type}, body {vt.element_type}")
            if self.EXACT and tuple(vt.get_shape()) != t.get_shape():
                raise VerifyException(f"{what}: the body's type {vt} must have the buffer's shape {t}")
            if _elements(vt.get_shape()) != _elements(t.get_shape()):
                raise VerifyException(f"{what}: the body's type {vt} does not hold the {_elements(t.get_shape())} elements of {t}")


@irdl_op_definition
class VectorOp(_RegionComputeOp):
    """Vector compute on UB tiles: each `ins` buffer is read as the tensor type of its block
    argument (same elements, row-major), the body runs, each yielded tensor is written to
    its `outs` buffer."""

    name = "tile.vector"
    SPACES: ClassVar[tuple[MemSpace, ...]] = (MemSpace.UB,)


@irdl_op_definition
class UntiledOp(_RegionComputeOp):
    """A kernel body before tiling: the group's ops on whole GM tensors (from `bufferize`;
    `tile` replaces it with loops over tiles)."""

    name = "tile.untiled"
    SPACES: ClassVar[tuple[MemSpace, ...]] = (MemSpace.GM,)
    EXACT: ClassVar[bool] = True


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a tile.vector / tile.untiled body with the tensors written to its outs."""

    name = "tile.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(VectorOp, UntiledOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


POOL_MODES = ("max", "avg")


@irdl_op_definition
class VPoolOp(IRDLOperation):
    """A sliding-window max or average over the H, W dims (2, 3) of a UB tile
    ([n, c1, H, W, c0] or [n, c, H, W]); `dest`'s H, W give the output extent.

    The source's element [.., 0, 0, ..] is input position (`h`, `w`); window positions
    outside the input `in_size` do not count (max ignores them; avg divides by the positions
    inside, or inside the padded input `in_size + pads` with `count_include_pad`).
    """

    name = "tile.vpool"
    source = operand_def(MemRefType)
    dest = operand_def(MemRefType)
    h = operand_def(IndexType)
    w = operand_def(IndexType)
    mode = prop_def(StringAttr)
    kernel = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    in_size = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    count_include_pad = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$mode $source `[` $h `,` $w `]` `to` $dest attr-dict `:` type($source) `to` type($dest)"

    def verify_(self) -> None:
        src = _buffer(self.source, "the source", [MemSpace.UB])
        dst = _buffer(self.dest, "the destination", [MemSpace.UB])
        if self.mode.data not in POOL_MODES:
            raise VerifyException(f"mode must be one of {', '.join(POOL_MODES)}, got '{self.mode.data}'")
        if src.element_type != dst.element_type or src.get_num_dims() != dst.get_num_dims() or src.get_num_dims() not in (4, 5):
            raise VerifyException(f"source and destination must be rank-4 or rank-5 tiles of one element type, got {src} and {dst}")
        s, d = src.get_shape(), dst.get_shape()
        if any(a != b for i, (a, b) in enumerate(zip(s, d)) if i not in (2, 3)):
            raise VerifyException(f"source {src} and destination {dst} differ outside the H, W dims")
        k, st, dl = _ints(self.kernel), _ints(self.strides), _ints(self.dilations)
        if len(_ints(self.pads)) != 4 or len(_ints(self.in_size)) != 2 or any(len(x) != 2 or min(x) < 1 for x in (k, st, dl)):
            raise VerifyException("kernel, strides, dilations and in_size need 2 values, pads 4")
        for i in range(2):
            need = (d[2 + i] - 1) * st[i] + (k[i] - 1) * dl[i] + 1
            if need > s[2 + i]:
                raise VerifyException(f"{d[2 + i]} outputs along dim {2 + i} read {need} inputs, the source holds {s[2 + i]}")


Tile = Dialect(
    "tile",
    [KernelOp, LaunchOp, BlockIdxOp, ConstOp, AllocOp, ViewOp, CopyOp, LoadIndexOp, Img2colOp, MmadOp, VectorOp,
     UntiledOp, YieldOp, VPoolOp],
    [MemSpaceAttr],
)
install_fast_verify(Tile)  # xDSL's verdict, faster (dialects/fast_verify.py)
