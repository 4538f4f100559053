"""The `layout` dialect: hardware storage formats as a tensor encoding, and `layout.trans_data`.

This is the level below `graph` (see DESIGN.md): `assign-layouts` gives tensors the storage
formats the AI Core computes in, and the graph ops stay the same ops. As GE keeps
`origin_format/origin_shape` beside `format/shape`, a storage-formatted tensor is a builtin
tensor whose shape is the storage shape and whose encoding records the format together with
the origin format and shape (the logical tensor the graph op computes on):

    tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>

Formats (Ascend C "数据排布格式", hicann/ge `base/formats/`; /work/shared/reference/ascend.md §5):
- `ND`, `NCHW`, `NHWC`: plain row-major; NCHW <-> NHWC is a permutation of a rank-4 origin.
- `NC1HWC0`: C split into C1 = ceil(C / C0) blocks of C0 channels, the last block zero-padded:
  [N, C1, H, W, C0]. An origin of rank < 4 is aligned to the right, as broadcasting aligns it
  ([C, 1, 1] is [1, C, 1, 1]), so that broadcast operands of elementwise ops have a 5-D form.
- `FRACTAL_Z` (conv weights, OIHW = NCHW origin): [C1 * H * W, N1, N0, C0], N1 = ceil(N / N0),
  zero padding on N and C.
- `FRACTAL_NZ` (matrices, on the last two dims M x N): [..., N1, M1, M0, C0] with
  M1 = ceil(M / M0), N1 = ceil(N / C0): a column-major grid of row-major M0 x C0 tiles.

C0 = 32 bytes / element size (16 for f16, 32 for i8, 8 for f32) and M0 = N0 = 16 are part of
the format definitions; every target's Cube fractal and UB block agree with them
(`ge.targets` checks it). What the conversions compute lives in `ge.runtime.layouts`.

Which formats a graph op accepts is this level's knowledge (GE's op information library), so
the table is here: `verify_graph_op` is what `graph.GraphOp.verify_` calls when an operand or
result carries a storage format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, NoneAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ge.dialects import dtypes
from ge.dialects import graph as g
from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)

# Part of the format definitions (ascend.md §5): C0 * sizeof(element) = one 32-byte block,
# fractals are 16 rows (M0 of FRACTAL_NZ, N0 of FRACTAL_Z).
BLOCK_BYTES = 32
FRACTAL = 16


class Format(StrEnum):
    ND = "ND"
    NCHW = "NCHW"
    NHWC = "NHWC"
    NC1HWC0 = "NC1HWC0"
    FRACTAL_Z = "FRACTAL_Z"
    FRACTAL_NZ = "FRACTAL_NZ"


PLAIN_FORMATS = (Format.ND, Format.NCHW, Format.NHWC)
ORIGIN_FORMATS = PLAIN_FORMATS


def c0(elem: Attribute) -> int:
    """Elements per 32-byte block: C0 of NC1HWC0 / FRACTAL_Z / FRACTAL_NZ."""
    return max(1, BLOCK_BYTES // dtypes.numpy_dtype(elem).itemsize)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------------------
# The encoding
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class FormatAttr(ParametrizedAttribute):
    """`#layout.fmt<FORMAT, origin ORIGIN_FORMAT [d0, d1, ...]>`: the storage format of a
    tensor and the origin (logical) tensor it holds."""

    name = "layout.fmt"

    format: StringAttr
    origin_format: StringAttr
    origin_shape: ArrayAttr[IntAttr]

    def __init__(self, format: str, origin_format: str, origin_shape: Sequence[int]):
        super().__init__(
            StringAttr(str(format)), StringAttr(str(origin_format)),
            ArrayAttr([IntAttr(int(d)) for d in origin_shape]),
        )

    @property
    def fmt(self) -> Format:
        return Format(self.format.data)

    @property
    def origin_fmt(self) -> Format:
        return Format(self.origin_format.data)

    @property
    def shape(self) -> tuple[int, ...]:
        """The origin shape."""
        return tuple(d.data for d in self.origin_shape.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def format_name(what: str, allowed: Sequence[Format]) -> StringAttr:
            pos = parser.pos
            name = parser.parse_identifier(context_msg=f" ({what})")
            if name not in allowed:
                parser.raise_error(f"unknown {what} '{name}'; expected one of {', '.join(allowed)}", pos, parser.pos)
            return StringAttr(name)

        start = parser.pos
        parser.parse_punctuation("<")
        fmt = format_name("storage format", list(Format))
        parser.parse_punctuation(",")
        parser.parse_keyword("origin", " before the origin format and shape")
        origin = format_name("origin format", ORIGIN_FORMATS)
        shape = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: IntAttr(parser.parse_integer(allow_negative=False, allow_boolean=False))
        )
        parser.parse_punctuation(">")
        params = [fmt, origin, ArrayAttr(shape)]
        try:  # report a format that cannot hold its origin where it is written
            cls.new(params)
        except VerifyException as e:
            parser.raise_error(str(e), start, parser.pos)
        return params

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.format.data}, origin {self.origin_format.data} [")
        printer.print_string(", ".join(str(d) for d in self.shape))
        printer.print_string("]>")

    def verify(self) -> None:
        if self.format.data not in list(Format):
            raise VerifyException(f"unknown storage format '{self.format.data}'")
        if self.origin_format.data not in ORIGIN_FORMATS:
            raise VerifyException(f"origin format must be one of {', '.join(ORIGIN_FORMATS)}, got '{self.origin_format.data}'")
        fmt, origin, rank = self.fmt, self.origin_fmt, len(self.shape)
        where = f"{fmt} of {origin} {list(self.shape)}"
        if fmt in (Format.NC1HWC0, Format.FRACTAL_Z) and origin == Format.ND:
            raise VerifyException(f"{where}: {fmt} needs an NCHW or NHWC origin to know which dim is C")
        if fmt == Format.NC1HWC0:
            if not 1 <= rank <= 4:
                raise VerifyException(f"{where}: NC1HWC0 needs an origin of rank 1 to 4, got rank {rank}")
        elif origin != Format.ND and rank != 4:
            raise VerifyException(f"{where}: origin format {origin} needs rank 4, got rank {rank}")
        if fmt == Format.FRACTAL_NZ and rank < 2:
            raise VerifyException(f"{where}: FRACTAL_NZ needs an origin of rank >= 2, got rank {rank}")
        if fmt in (Format.NCHW, Format.NHWC) and origin != Format.ND and rank != 4:
            raise VerifyException(f"{where}: {fmt} storage needs rank 4")


def layout_of(t: Attribute) -> FormatAttr | None:
    """The storage format of a tensor type, or None for a plain tensor."""
    if isinstance(t, TensorType) and isinstance(t.encoding, FormatAttr):
        return t.encoding
    return None


def logical_type(t: Attribute) -> Attribute:
    """The origin tensor a storage-formatted type holds; other types as they are."""
    enc = layout_of(t)
    if enc is None:
        return t
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, enc.shape)


def logical_types(types):
    """`logical_type` over a graph op's build-form types (a type, None, or a list)."""
    if isinstance(types, list | tuple):
        return [logical_type(t) for t in types]
    return None if types is None else logical_type(types)


def logical_shape(t: TensorType) -> tuple[int, ...]:
    enc = layout_of(t)
    return enc.shape if enc is not None else tuple(t.get_shape())


def nchw_dims(origin: Format, shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(N, C, H, W) of an NCHW / NHWC origin; lower ranks are aligned to the right."""
    s = (1,) * (4 - len(shape)) + tuple(shape)
    if origin == Format.NHWC:
        return s[0], s[3], s[1], s[2]
    return s[0], s[1], s[2], s[3]


_PERMS = {(Format.NHWC, Format.NCHW): (0, 2, 3, 1), (Format.NCHW, Format.NHWC): (0, 3, 1, 2)}


def plain_perm(fmt: Format, origin: Format) -> tuple[int, ...] | None:
    """Storage dim i of a plain format is origin dim perm[i]; None when they coincide."""
    return _PERMS.get((fmt, origin))


def storage_dims(enc: FormatAttr, elem: Attribute) -> list[tuple[str, int, str]]:
    """The storage shape the encoding gives for element type `elem`, one (name, size,
    how it is computed) per dim."""
    fmt, origin, shape = enc.fmt, enc.origin_fmt, enc.shape
    if fmt in PLAIN_FORMATS:
        perm = plain_perm(fmt, origin) or tuple(range(len(shape)))
        return [(f"d{i}", shape[p], f"origin dim {p} is {shape[p]}") for i, p in enumerate(perm)]
    k = c0(elem)
    bytes_ = dtypes.numpy_dtype(elem).itemsize
    c0_dim = ("C0", k, f"C0 = {BLOCK_BYTES} B / {bytes_} B per {elem} element = {k}")
    if fmt == Format.NC1HWC0:
        n, c, h, w = nchw_dims(origin, shape)
        return [("N", n, f"N = {n}"), ("C1", _ceil(c, k), f"C1 = ceil(C / C0) = ceil({c} / {k}) = {_ceil(c, k)}"),
                ("H", h, f"H = {h}"), ("W", w, f"W = {w}"), c0_dim]
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = nchw_dims(origin, shape)
        c1, n1 = _ceil(c, k), _ceil(n, FRACTAL)
        return [("C1*H*W", c1 * h * w, f"C1 * H * W = ceil({c} / {k}) * {h} * {w} = {c1 * h * w}"),
                ("N1", n1, f"N1 = ceil(N / {FRACTAL}) = ceil({n} / {FRACTAL}) = {n1}"),
                ("N0", FRACTAL, f"N0 = {FRACTAL}"), c0_dim]
    assert fmt == Format.FRACTAL_NZ
    *batch, m, n = shape
    n1, m1 = _ceil(n, k), _ceil(m, FRACTAL)
    return [(f"B{i}", b, f"batch dim {i} is {b}") for i, b in enumerate(batch)] + [
        ("N1", n1, f"N1 = ceil(N / C0) = ceil({n} / {k}) = {n1}"),
        ("M1", m1, f"M1 = ceil(M / {FRACTAL}) = ceil({m} / {FRACTAL}) = {m1}"),
        ("M0", FRACTAL, f"M0 = {FRACTAL}"), c0_dim,
    ]


def storage_shape(enc: FormatAttr, elem: Attribute) -> tuple[int, ...]:
    return tuple(d for _, d, _ in storage_dims(enc, elem))


def encode(t: TensorType, fmt: Format, origin: Format) -> TensorType:
    """The storage-formatted type holding the plain tensor `t` (read in `origin` format)."""
    enc = FormatAttr(fmt, origin, t.get_shape())
    enc.verify()
    return TensorType(t.element_type, storage_shape(enc, t.element_type), enc)


def check_type(t: Attribute, what: str = "") -> None:
    """Raise a VerifyException unless a storage-formatted type's shape is the one its
    format gives from its origin shape and element type (plain types always pass)."""
    if not isinstance(t, TensorType) or isinstance(t.encoding, NoneAttr):
        return
    prefix = f"{what} " if what else ""
    enc = t.encoding
    if not isinstance(enc, FormatAttr):
        raise VerifyException(f"{prefix}{t} has an encoding the graph and layout levels do not know")
    dims = storage_dims(enc, t.element_type)
    want = [d for _, d, _ in dims]
    got = list(t.get_shape())
    if got == want:
        return
    head = (f"{prefix}{t} does not match its origin: {enc.fmt} of {enc.origin_fmt} {list(enc.shape)} "
            f"in {t.element_type} has shape {want} ({', '.join(n for n, _, _ in dims)})")
    if len(got) != len(want):
        raise VerifyException(f"{head}, but the storage has rank {len(got)}")
    name, actual, why = next((n, a, w) for (n, d, w), a in zip(dims, got) if d != a)
    raise VerifyException(f"{head}; dim {name} is {actual}, but {why}")


# --------------------------------------------------------------------------------------
# layout.trans_data
# --------------------------------------------------------------------------------------


@irdl_op_definition
class TransDataOp(IRDLOperation):
    """Format conversion (GE's TransData): the same logical tensor in another storage format."""

    name = "layout.trans_data"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($output)"

    def __init__(self, value: SSAValue, result_type: TensorType):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        src, dst = self.input.type, self.output.type
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        if src.element_type != dst.element_type:
            raise VerifyException(
                f"trans_data changes the storage format, not the element type: {src.element_type} to {dst.element_type}"
            )
        check_type(src, "source")
        check_type(dst, "result")
        if logical_shape(src) != logical_shape(dst):
            raise VerifyException(
                f"source and result hold different tensors: origin shapes {list(logical_shape(src))} "
                f"and {list(logical_shape(dst))}"
            )
        a, b = layout_of(src), layout_of(dst)
        if a is not None and b is not None and Format.ND not in (a.origin_fmt, b.origin_fmt) \
                and a.origin_fmt != b.origin_fmt:
            raise VerifyException(f"source origin format {a.origin_fmt} and result origin format {b.origin_fmt} differ")
        if src == dst:
            raise VerifyException(f"source and result have the same type {src}: a trans_data must convert")


Layout = Dialect("layout", [TransDataOp], [FormatAttr])
install_fast_verify(Layout)  # xDSL's verdict, faster (dialects/fast_verify.py)


# --------------------------------------------------------------------------------------
# Which storage formats each graph op implements natively
# --------------------------------------------------------------------------------------


def _fmt(v: SSAValue) -> Format | None:
    enc = layout_of(v.type)
    return None if enc is None else enc.fmt


def _name(op: Operation, v: SSAValue) -> str:
    if v in op.results:
        return f"result #{op.results.index(v)}" if len(op.results) > 1 else "the result"
    return f"operand #{list(op.operands).index(v)}"


def _describe(v: SSAValue) -> str:
    enc = layout_of(v.type)
    return "plain" if enc is None else f"{enc.fmt} (origin {enc.origin_fmt})"


def _refuse(op: Operation, v: SSAValue, wanted: str) -> VerifyException:
    return VerifyException(f"{op.name} does not support {_describe(v)} for {_name(op, v)}; it takes {wanted}")


def _expect(op: Operation, v: SSAValue, fmt: Format | None, origin: Format = Format.NCHW, rank: int | None = None) -> None:
    """`v` must be a plain tensor (fmt None) or in `fmt` with an `origin` origin of `rank`."""
    enc = layout_of(v.type)
    if fmt is None:
        if enc is not None:
            raise _refuse(op, v, "a plain tensor there")
        return
    if enc is None or enc.fmt != fmt or (fmt != Format.FRACTAL_NZ and enc.origin_fmt != origin) \
            or (rank is not None and len(enc.shape) != rank):
        where = f"{fmt}" + ("" if fmt == Format.FRACTAL_NZ else f" with a rank-{rank or 4} {origin} origin")
        raise _refuse(op, v, where)


def _plain_only(op: Operation) -> None:
    for v in (*op.operands, *op.results):
        if layout_of(v.type) is not None:
            raise _refuse(op, v, "plain tensors only (convert with layout.trans_data first)")


def _cube_conv(op: Operation) -> None:
    """Conv in the Cube: NC1HWC0 feature maps, FRACTAL_Z weights, a plain bias."""
    assert isinstance(op, g.Conv2dOp | g.QuantConv2dOp)
    if layout_of(op.input.type) is None and layout_of(op.output.type) is None:
        return _plain_only(op)
    _expect(op, op.input, Format.NC1HWC0, rank=4)
    _expect(op, op.weight, Format.FRACTAL_Z, rank=4)
    if op.bias is not None:
        _expect(op, op.bias, None)
    _expect(op, op.output, Format.NC1HWC0, rank=4)


def _five_d(op: Operation) -> None:
    """Pools, batch norm, LRN: an NC1HWC0 feature map in and out, other operands plain."""
    x, *params = op.operands
    if layout_of(x.type) is None and layout_of(op.results[0].type) is None:
        return _plain_only(op)
    _expect(op, x, Format.NC1HWC0, rank=4)
    for p in params:
        _expect(op, p, None)
    _expect(op, op.results[0], Format.NC1HWC0, rank=4)


def _concat(op: Operation) -> None:
    """Concat of NC1HWC0 inputs; along C, every input but the last must fill whole C0 blocks
    (else its zero padding would land inside the result)."""
    assert isinstance(op, g.ConcatOp)
    if all(layout_of(v.type) is None for v in (*op.inputs, op.output)):
        return
    for v in (*op.inputs, op.output):
        _expect(op, v, Format.NC1HWC0, rank=4)
    if op.axis.value.data == 1:
        k = c0(op.output.type.element_type)
        for i, v in enumerate(op.inputs[:-1]):
            c = logical_shape(v.type)[1]
            if c % k:
                raise VerifyException(
                    f"{op.name} along C in NC1HWC0 needs every input but the last to fill whole C0 blocks: "
                    f"input #{i} has {c} channels, not a multiple of C0 = {k}"
                )


def _cube_matmul(op: Operation) -> None:
    """MatMul / Gemm in the Cube: activations and weights in ND or FRACTAL_NZ (the Cube's
    loads and stores convert ND on the way, nd2nz / nz2nd), a Gemm's C plain."""
    assert isinstance(op, g.MatMulOp | g.GemmOp | g.QuantMatMulOp)
    operands = (op.lhs, op.rhs) if isinstance(op, g.MatMulOp | g.QuantMatMulOp) else (op.a, op.b)
    for v in (*operands, op.output):
        if _fmt(v) not in (None, Format.FRACTAL_NZ):
            raise _refuse(op, v, "a plain or FRACTAL_NZ tensor there")
    if isinstance(op, g.GemmOp) and op.c is not None:
        _expect(op, op.c, None)
    if isinstance(op, g.QuantMatMulOp) and op.bias is not None:
        _expect(op, op.bias, None)


def _shape_only(op: Operation) -> None:
    """Reads only the origin shape: any input format, a plain result."""
    _expect(op, op.results[0], None)


def _elementwise(op: Operation) -> None:
    """Elementwise ops work on any storage format as long as storage broadcasting is
    origin broadcasting: every formatted operand and the result share one format and C0;
    in NC1HWC0 they agree on C, in FRACTAL_NZ on the matrix dims, in a plain format on the
    whole shape; plain operands must be single elements (they broadcast in any format)."""
    result = op.results[0]
    formatted = [v for v in (*op.operands, result) if layout_of(v.type) is not None]
    if not formatted:
        return
    renc = layout_of(result.type)
    if renc is None:
        raise _refuse(op, result, f"the format of its operands ({_describe(formatted[0])})")
    fmt, rshape = renc.fmt, renc.shape
    if fmt == Format.FRACTAL_Z:
        raise _refuse(op, result, "no FRACTAL_Z (a weight-only format)")
    k = c0(result.type.element_type)
    for v in op.operands:
        enc = layout_of(v.type)
        if enc is None:
            if any(d != 1 for d in v.type.get_shape()) or v.type.get_num_dims() > result.type.get_num_dims():
                raise _refuse(op, v, f"a tensor in {fmt} or a single element of lower rank there")
            continue
        if enc.fmt != fmt or enc.origin_fmt != renc.origin_fmt:
            raise _refuse(op, v, f"the result's format {fmt} (origin {renc.origin_fmt}) there")
        if c0(v.type.element_type) != k:
            raise VerifyException(
                f"{op.name} in {fmt} needs one C0 for all operands and the result: {_name(op, v)} has "
                f"{v.type.element_type} (C0 = {c0(v.type.element_type)}), the result {result.type.element_type} (C0 = {k})"
            )
        if (want := broadcast_rank(fmt, renc.origin_fmt, len(enc.shape), len(rshape))) != len(enc.shape):
            raise VerifyException(
                f"{op.name} in {fmt} cannot broadcast {_name(op, v)} of origin {list(enc.shape)} (no C dim) "
                f"to {list(rshape)}: its C0 lanes must be the result's channels, so it needs an origin of rank "
                f"{want} (unsqueezed: leading dims of 1)"
            )
        if not storage_broadcasts(fmt, renc.origin_fmt, enc.shape, rshape):
            raise VerifyException(
                f"{op.name} cannot broadcast {_name(op, v)} of origin {list(enc.shape)} to {list(rshape)} in {fmt}: "
                + _BROADCAST_RULE[fmt]
            )


_BROADCAST_RULE = {
    Format.NC1HWC0: "the channel counts must be equal",
    Format.FRACTAL_NZ: "the matrix dims must be equal",
}


def broadcast_rank(fmt: Format, origin: Format, rank: int, result_rank: int) -> int:
    """The origin rank a broadcast operand of `rank` dims needs in `fmt` against a result of
    `result_rank` dims: its own, except that an NCHW origin of rank < 3 has no C dim, and
    in NC1HWC0 against a result that has one, it is stored unsqueezed to the result's rank
    (so its origin -- and each tile's -- names the channel its C0 lanes hold; ONNX aligns
    ranks to the right, so the leading 1s change nothing)."""
    if fmt == Format.NC1HWC0 and origin == Format.NCHW and rank < 3 <= result_rank:
        return result_rank
    return rank


def storage_broadcasts(fmt: Format, origin: Format, shape: Sequence[int], result: Sequence[int]) -> bool:
    """Whether broadcasting the storage of `shape` against that of `result` computes the
    same as broadcasting the origin tensors."""
    if fmt == Format.NC1HWC0:
        return nchw_dims(origin, shape)[1] == nchw_dims(origin, result)[1]
    if fmt == Format.FRACTAL_NZ:
        return tuple(shape[-2:]) == tuple(result[-2:])
    return tuple(shape) == tuple(result)


# Ops with the Elementwise interface that compute in their operands' format (BatchNorm has
# its own formats).
_ELEMENTWISE = tuple(c for c in g.Graph.operations
                     if (e := c.get_trait(g.Elementwise)) is not None and e.follows_format)
_RULES: tuple[tuple[tuple[type[Operation], ...], Callable[[Operation], None]], ...] = (
    (_ELEMENTWISE, _elementwise),
    ((g.Conv2dOp, g.QuantConv2dOp), _cube_conv),
    ((g.PoolOp, g.GlobalPoolOp, g.BatchNormOp, g.LrnOp, g.QuantizeOp, g.DequantizeOp), _five_d),
    ((g.ConcatOp,), _concat),
    ((g.MatMulOp, g.GemmOp, g.QuantMatMulOp), _cube_matmul),
    ((g.ShapeOp,), _shape_only),
)


def is_elementwise(op: Operation) -> bool:
    """Ops that compute element by element in whatever format their operands have."""
    return isinstance(op, _ELEMENTWISE)


def verify_graph_op(op: Operation) -> None:
    """The checks `graph.GraphOp.verify_` adds when a value carries a storage format: each
    formatted type matches its origin, and the formats are ones the op implements."""
    for v in (*op.operands, *op.results):
        check_type(v.type, _name(op, v))
    for classes, rule in _RULES:
        if isinstance(op, classes):
            return rule(op)
    return _plain_only(op)
