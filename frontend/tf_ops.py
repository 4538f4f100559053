"""TensorFlow op -> graph op converters, registered with `ge.frontend.tf.converts`.

One function per TensorFlow op family. Each returns a `Value`: the NHWC (origin) form of the
result, or only its NCHW form when the op computed in NCHW (see ge/frontend/tf.py on
layouts). Attributes are normalized here (SAME/VALID/EXPLICIT padding to explicit pads,
HWIO filters to OIHW, negative axes, StridedSlice masks to one slice + reshape).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import SSAValue

from ge.dialects import dtypes, graph
from ge.frontend.tf import _TF_DTYPES, TO_NCHW, TO_NHWC, NodeContext, NodeError, Value, _elem, converts

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _shape(v: SSAValue) -> tuple[int, ...]:
    return graph.shape_of(v.type)  # type: ignore[arg-type]


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise NodeError(f"axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def _nchw_axis(a: int) -> int:
    """Where NHWC dim `a` sits in the NCHW form."""
    return TO_NCHW.index(a)


def _data_format(ctx: NodeContext) -> str:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW"):
        raise NodeError(f"data_format {fmt} is not supported (NHWC or NCHW)")
    return fmt


def _spatial_input(ctx: NodeContext) -> SSAValue:
    """Input 0 as NCHW, whatever the node's data_format."""
    return ctx.nchw(0) if _data_format(ctx) == "NHWC" else ctx.x(0)


def _spatial_result(ctx: NodeContext, y: SSAValue) -> Value:
    return Value(nchw=y) if _data_format(ctx) == "NHWC" else Value(nhwc=y)


def _hw(ctx: NodeContext, name: str, default=(1, 1, 1, 1)) -> tuple[int, int]:
    """The H and W entries of a 4-entry NHWC/NCHW attribute (strides, ksize, dilations)."""
    v = list(ctx.attr(name, default))
    if len(v) != 4:
        raise NodeError(f"{name} {v} must have 4 entries")
    return (v[1], v[2]) if _data_format(ctx) == "NHWC" else (v[2], v[3])


def _pads(ctx: NodeContext, size: tuple[int, int], kernel: tuple[int, int], strides, dilations) -> list[int]:
    """TensorFlow padding -> ONNX pads [top, left, bottom, right] (SAME puts the odd one at the end)."""
    padding = ctx.attr("padding", "VALID")
    if padding == "VALID":
        return [0, 0, 0, 0]
    if padding == "EXPLICIT":
        p = list(ctx.attr("explicit_paddings", []))
        if len(p) != 8:
            raise NodeError(f"explicit_paddings {p} must have 8 entries")
        (t, b), (le, r) = ((p[2], p[3]), (p[4], p[5])) if _data_format(ctx) == "NHWC" else ((p[4], p[5]), (p[6], p[7]))
        return [t, le, b, r]
    if padding != "SAME":
        raise NodeError(f"padding {padding} is not supported (SAME, VALID, EXPLICIT)")
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def _transposed(ctx: NodeContext, v: SSAValue, perm) -> SSAValue:
    known = ctx.importer.value_of(v)
    if known is not None:
        return ctx.constant(np.ascontiguousarray(np.transpose(known, perm)), "t")
    return ctx.emit(graph.TransposeOp, [v], {"perm": graph.int_array(perm)})


def _filter(ctx: NodeContext, perm) -> SSAValue:
    """The filter (input 1) permuted to OIHW: a constant now, a computed one by a transpose."""
    return _transposed(ctx, ctx.x(1), perm)


def _has_nchw(v: Value) -> bool:
    return v.nchw is not None and v.rank == 4


def _nchw_operand(ctx: NodeContext, v: Value) -> SSAValue | None:
    """`v` in the NCHW frame: 4-D values in NCHW form, constants of lower rank broadcast to
    4-D and permuted; None where that is not possible (a computed value of lower rank)."""
    if v.rank == 4:
        return ctx.importer.as_nchw(v)
    known = ctx.importer.value_of(ctx.importer.origin(v))
    if known is None:
        return None
    arr = known.reshape((1,) * (4 - known.ndim) + known.shape)
    return ctx.constant(np.ascontiguousarray(np.transpose(arr, TO_NCHW)), "nchw")


def _elementwise(ctx: NodeContext, build) -> Value:
    """`build(operands) -> value` in NCHW when a 4-D input already has that form and every
    other input can follow it; else on the origin forms."""
    if any(_has_nchw(v) for v in ctx.inputs):
        operands = [_nchw_operand(ctx, v) for v in ctx.inputs]
        if all(o is not None for o in operands):
            return Value(nchw=build(operands))
    return Value(nhwc=build([ctx.importer.origin(v) for v in ctx.inputs]))


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

_UNARY = {
    "Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp, "Erf": graph.ErfOp,
    "Sqrt": graph.SqrtOp, "Exp": graph.ExpOp, "Log": graph.LogOp, "Neg": graph.NegOp, "Abs": graph.AbsOp,
    "Reciprocal": graph.ReciprocalOp, "Floor": graph.FloorOp,
}


@converts(*_UNARY)
def _unary(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(_UNARY[ctx.node.op], o))


@converts("Relu6")
def _relu6(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(graph.ClipOp, o, {"min": graph.float_attr(0.0),
                                                                     "max": graph.float_attr(6.0)}))


@converts("Rsqrt")
def _rsqrt(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(graph.ReciprocalOp, [ctx.emit(graph.SqrtOp, o)]))


@converts("Square")
def _square(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(graph.MulOp, [o[0], o[0]]))


@converts("Cast")
def _cast(ctx: NodeContext) -> Value:
    elem = _elem(ctx.attr("DstT"), "the cast's target")

    def build(o):
        return ctx.importer.add(ctx.node, graph.CastOp.to(o[0], elem)).results[0]

    return _elementwise(ctx, build)


_BINARY = {
    "Add": graph.AddOp, "AddV2": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "RealDiv": graph.DivOp,
    "Pow": graph.PowOp,
}


@converts(*_BINARY)
def _binary(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(_BINARY[ctx.node.op], o))


@converts("Maximum", "Minimum", "AddN")
def _variadic(ctx: NodeContext) -> Value:
    op = {"Maximum": graph.MaxOp, "Minimum": graph.MinOp, "AddN": graph.SumOp}[ctx.node.op]
    return _elementwise(ctx, lambda o: ctx.emit(op, [o]))


@converts("BiasAdd", "BiasAddV1")
def _bias_add(ctx: NodeContext) -> Value:
    x = ctx.inputs[0]
    nchw_frame = x.rank == 4 and (_has_nchw(x) or _data_format(ctx) == "NCHW")
    if not nchw_frame:
        return Value(nhwc=ctx.emit(graph.AddOp, [ctx.x(0), ctx.x(1)]))
    (c,) = _shape(ctx.x(1))
    shape = ctx.constant(np.array([c, 1, 1], np.int64), "shape")
    bias = ctx.emit(graph.ReshapeOp, [ctx.x(1), shape])
    if _data_format(ctx) == "NCHW":
        return Value(nhwc=ctx.emit(graph.AddOp, [ctx.x(0), bias]))
    return Value(nchw=ctx.emit(graph.AddOp, [ctx.nchw(0), bias]))


# --------------------------------------------------------------------------------------
# Convolutions, pools, batch norm
# --------------------------------------------------------------------------------------


def _conv(ctx: NodeContext, w: SSAValue, group: int) -> Value:
    x = _spatial_input(ctx)
    strides, dilations = _hw(ctx, "strides"), _hw(ctx, "dilations")
    kernel = _shape(w)[2:]
    pads = _pads(ctx, _shape(x)[2:], kernel, strides, dilations)  # type: ignore[arg-type]
    y = ctx.emit(graph.Conv2dOp, [x, w, None], {
        "strides": graph.int_array(strides), "pads": graph.int_array(pads),
        "dilations": graph.int_array(dilations), "group": graph.int_attr(group),
    })
    return _spatial_result(ctx, y)


@converts("Conv2D")
def _conv2d(ctx: NodeContext) -> Value:
    w = _filter(ctx, (3, 2, 0, 1))  # HWIO -> OIHW
    cin = _shape(_spatial_input(ctx))[1]
    per_group = _shape(w)[1]
    if per_group <= 0 or cin % per_group:
        raise NodeError(f"filter input depth {per_group} does not divide the input's {cin} channels")
    return _conv(ctx, w, cin // per_group)


@converts("DepthwiseConv2dNative")
def _depthwise(ctx: NodeContext) -> Value:
    kh, kw, cin, mult = _shape(ctx.x(1))
    # [kh, kw, cin, mult] -> [cin * mult, 1, kh, kw]: output channel c * mult + m.
    w = _reshape(ctx, ctx.x(1), [kh, kw, cin * mult, 1])
    return _conv(ctx, _transposed(ctx, w, (2, 3, 0, 1)), cin)


@converts("MaxPool", "AvgPool")
def _pool(ctx: NodeContext) -> Value:
    x = _spatial_input(ctx)
    kernel, strides = _hw(ctx, "ksize"), _hw(ctx, "strides")
    pads = _pads(ctx, _shape(x)[2:], kernel, strides, (1, 1))  # type: ignore[arg-type]
    props = {"kernel_shape": graph.int_array(kernel), "strides": graph.int_array(strides), "pads": graph.int_array(pads)}
    if ctx.node.op == "MaxPool":
        y = ctx.emit(graph.MaxPoolOp, [x], {**props, "dilations": graph.int_array([1, 1])})
    else:  # TensorFlow averages over the window's valid positions only
        y = ctx.emit(graph.AvgPoolOp, [x], props)
    return _spatial_result(ctx, y)


@converts("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _batch_norm(ctx: NodeContext) -> Value:
    if ctx.attr("is_training", False):
        raise NodeError("is_training = true (training-mode batch statistics); freeze the model for inference")
    x = _spatial_input(ctx)
    params = [ctx.x(i) for i in range(1, 5)]
    y = ctx.emit(graph.BatchNormOp, [x, *params], {"epsilon": graph.float_attr(ctx.attr("epsilon", 1e-4))})
    return _spatial_result(ctx, y)


# --------------------------------------------------------------------------------------
# Matrix products, softmax, reductions
# --------------------------------------------------------------------------------------


def _swap_last(ctx: NodeContext, v: SSAValue) -> SSAValue:
    r = len(_shape(v))
    return _transposed(ctx, v, list(range(r - 2)) + [r - 1, r - 2])


@converts("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _matmul(ctx: NodeContext) -> Value:
    a, b = ctx.x(0), ctx.x(1)
    ta, tb = ("transpose_a", "transpose_b") if ctx.node.op == "MatMul" else ("adj_x", "adj_y")
    if ctx.attr(ta, False):
        a = _swap_last(ctx, a)
    if ctx.attr(tb, False):
        b = _swap_last(ctx, b)
    return Value(nhwc=ctx.emit(graph.MatMulOp, [a, b]))


@converts("Softmax")
def _softmax(ctx: NodeContext) -> Value:
    (x,) = ctx.inputs
    if _has_nchw(x):
        return Value(nchw=ctx.emit(graph.SoftmaxOp, [x.nchw], {"axis": graph.int_attr(1)}))
    rank = x.rank
    return Value(nhwc=ctx.emit(graph.SoftmaxOp, [ctx.x(0)], {"axis": graph.int_attr(rank - 1)}))


_REDUCE = {"Mean": graph.ReduceMeanOp, "Sum": graph.ReduceSumOp, "Max": graph.ReduceMaxOp,
           "Min": graph.ReduceMinOp, "Prod": graph.ReduceProdOp}


@converts(*_REDUCE)
def _reduce(ctx: NodeContext) -> Value:
    x = ctx.inputs[0]
    rank = x.rank
    axes = sorted({_axis(a, rank) for a in _ints(ctx.const(1, "reduction_indices"))})
    keep = bool(ctx.attr("keep_dims", False))
    op = _REDUCE[ctx.node.op]
    props = {"keepdims": UnitAttr() if keep else None}
    if _has_nchw(x):
        kept = [a for a in range(4) if a not in axes]
        same_order = kept == sorted(kept, key=_nchw_axis)
        if keep or same_order:
            y = ctx.emit(op, [x.nchw], {**props, "axes": graph.int_array(sorted(_nchw_axis(a) for a in axes))})
            return Value(nchw=y) if keep else Value(nhwc=y)
    return Value(nhwc=ctx.emit(op, [ctx.x(0)], {**props, "axes": graph.int_array(axes)}))


# --------------------------------------------------------------------------------------
# Shape and data movement
# --------------------------------------------------------------------------------------


@converts("Pad", "PadV2")
def _pad(ctx: NodeContext) -> Value:
    paddings = np.asarray(ctx.const(1, "paddings")).reshape(-1, 2)
    value = float(ctx.const(2, "constant_values").reshape(-1)[0]) if ctx.node.op == "PadV2" else 0.0
    x = ctx.inputs[0]
    if len(paddings) != x.rank:
        raise NodeError(f"paddings has {len(paddings)} rows for a rank-{x.rank} input")
    props = {"mode": StringAttr("constant"), "value": graph.float_attr(value)}
    if _has_nchw(x):
        p = paddings[list(TO_NCHW)]
        return Value(nchw=ctx.emit(graph.PadOp, [x.nchw], {**props, "pads": graph.int_array(_ints(p.T))}))
    return Value(nhwc=ctx.emit(graph.PadOp, [ctx.x(0)], {**props, "pads": graph.int_array(_ints(paddings.T))}))


@converts("ConcatV2")
def _concat(ctx: NodeContext) -> Value:
    parts = ctx.inputs[:-1]
    axis = int(ctx.const(len(ctx.inputs) - 1, "axis").reshape(-1)[0])
    rank = parts[0].rank
    axis = _axis(axis, rank)
    if rank == 4 and any(_has_nchw(p) for p in parts):
        operands = [ctx.importer.as_nchw(p) for p in parts]
        return Value(nchw=ctx.emit(graph.ConcatOp, [operands], {"axis": graph.int_attr(_nchw_axis(axis))}))
    return Value(nhwc=ctx.emit(graph.ConcatOp, [[ctx.importer.origin(p) for p in parts]], {"axis": graph.int_attr(axis)}))


def _reshape(ctx: NodeContext, v: SSAValue, target) -> SSAValue:
    target = _ints(target)
    known = ctx.importer.value_of(v)
    if known is not None and 0 not in target:  # a weight: rearranged now
        return ctx.constant(known.reshape(target), "r")
    shape = ctx.constant(np.array(target, np.int64), "shape")
    return ctx.emit(graph.ReshapeOp, [v, shape], {"allowzero": UnitAttr() if 0 in target else None})


@converts("Reshape")
def _reshape_op(ctx: NodeContext) -> Value:
    return Value(nhwc=_reshape(ctx, ctx.x(0), ctx.const(1, "shape")))


@converts("Transpose")
def _transpose(ctx: NodeContext) -> Value:
    x = ctx.inputs[0]
    perm = [_axis(p, x.rank) for p in _ints(ctx.const(1, "perm"))]
    if x.rank == 4 and tuple(perm) == TO_NCHW:
        return Value(nhwc=ctx.importer.as_nchw(x))  # the NCHW form is this transpose's result
    return Value(nhwc=_transposed(ctx, ctx.x(0), perm))


def _slice_bounds(b: int, e: int, s: int, d: int, begin_full: bool, end_full: bool) -> tuple[int, int]:
    """TensorFlow's begin/end for one dim -> graph.slice's normalized start/end."""
    if s > 0:
        b = 0 if begin_full else min(max(b + d if b < 0 else b, 0), d)
        e = d if end_full else min(max(e + d if e < 0 else e, 0), d)
        return b, max(e, b)
    b = d - 1 if begin_full else min(max(b + d if b < 0 else b, -1), d - 1)
    e = -1 if end_full else min(max(e + d if e < 0 else e, -1), d - 1)
    return (0, 0) if b < 0 or e >= b else (b, e)


@converts("StridedSlice")
def _strided_slice(ctx: NodeContext) -> Value:
    x = ctx.x(0)
    shape = _shape(x)
    begin, end, strides = (_ints(ctx.const(i, n)) for i, n in ((1, "begin"), (2, "end"), (3, "strides")))
    if not len(begin) == len(end) == len(strides):
        raise NodeError("begin, end and strides differ in length")
    masks = {m: int(ctx.attr(m, 0)) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask")}

    def bit(m: str, i: int) -> bool:
        return bool(masks[m] >> i & 1)

    n = len(begin)
    if sum(bit("ellipsis_mask", i) for i in range(n)) > 1:
        raise NodeError("more than one ellipsis")
    consumed = sum(1 for i in range(n) if not bit("ellipsis_mask", i) and not bit("new_axis_mask", i))
    starts, ends, steps, final = [], [], [], []
    dim = 0

    def full():
        nonlocal dim
        if dim >= len(shape):
            raise NodeError(f"the slice spec indexes more dims than the input {list(shape)} has")
        starts.append(0), ends.append(shape[dim]), steps.append(1), final.append(shape[dim])
        dim += 1

    for i in range(n):
        if bit("ellipsis_mask", i):
            for _ in range(len(shape) - consumed):
                full()
            continue
        if bit("new_axis_mask", i):
            final.append(1)
            continue
        if dim >= len(shape):
            raise NodeError(f"the slice spec indexes more dims than the input {list(shape)} has")
        d, s = shape[dim], strides[i]
        if s == 0:
            raise NodeError("a stride is 0")
        if bit("shrink_axis_mask", i):
            b = begin[i] + d if begin[i] < 0 else begin[i]
            if not 0 <= b < d:
                raise NodeError(f"index {begin[i]} is out of range for dim {dim} of size {d}")
            starts.append(b), ends.append(b + 1), steps.append(1)
        else:
            b, e = _slice_bounds(begin[i], end[i], s, d, bit("begin_mask", i), bit("end_mask", i))
            starts.append(b), ends.append(e), steps.append(s)
            final.append(graph.slice_len(b, e, s))
        dim += 1
    while dim < len(shape):
        full()
    y = x
    if (starts, ends, steps) != ([0] * len(shape), list(shape), [1] * len(shape)):
        y = ctx.emit(graph.SliceOp, [x], {"starts": graph.int_array(starts), "ends": graph.int_array(ends),
                                          "steps": graph.int_array(steps)})
    if list(_shape(y)) != final:
        y = _reshape(ctx, y, final)
    return Value(nhwc=y)


@converts("GatherV2")
def _gather(ctx: NodeContext) -> Value:
    if int(ctx.attr("batch_dims", 0)) != 0:
        raise NodeError("batch_dims other than 0 is not supported")
    x = ctx.x(0)
    axis = _axis(int(ctx.const(2, "axis").reshape(-1)[0]), len(_shape(x)))
    return Value(nhwc=ctx.emit(graph.GatherOp, [x, ctx.x(1)], {"axis": graph.int_attr(axis)}))


@converts("Squeeze")
def _squeeze(ctx: NodeContext) -> Value:
    x = ctx.x(0)
    shape = _shape(x)
    axes = sorted({_axis(a, len(shape)) for a in ctx.attr("squeeze_dims", [])}) or [
        i for i, d in enumerate(shape) if d == 1]
    return Value(nhwc=ctx.emit(graph.SqueezeOp, [x], {"axes": graph.int_array(axes)}))


@converts("ExpandDims")
def _expand_dims(ctx: NodeContext) -> Value:
    x = ctx.x(0)
    axis = _axis(int(ctx.const(1, "dim").reshape(-1)[0]), len(_shape(x)) + 1)
    return Value(nhwc=ctx.emit(graph.UnsqueezeOp, [x], {"axes": graph.int_array([axis])}))


@converts("Shape")
def _shape_op(ctx: NodeContext) -> Value:
    """Shapes are static here: a constant (no layout change needed for an NCHW-only input)."""
    x = ctx.inputs[0]
    shape = _shape(x.nhwc) if x.nhwc is not None else tuple(_shape(x.nchw)[i] for i in TO_NHWC)  # type: ignore[arg-type]
    out = _TF_DTYPES.get(ctx.attr("out_type", 3), np.dtype(np.int32))
    return Value(nhwc=ctx.constant(np.array(shape, out), "shape"))


@converts("Pack")
def _pack(ctx: NodeContext) -> Value:
    values = [ctx.importer.origin(v) for v in ctx.inputs]
    axis = _axis(int(ctx.attr("axis", 0)), len(_shape(values[0])) + 1)
    parts = [ctx.emit(graph.UnsqueezeOp, [v], {"axes": graph.int_array([axis])}) for v in values]
    return Value(nhwc=ctx.emit(graph.ConcatOp, [parts], {"axis": graph.int_attr(axis)}))


@converts("Range")
def _range(ctx: NodeContext) -> Value:
    return Value(nhwc=ctx.emit(graph.RangeOp, [ctx.x(0), ctx.x(1), ctx.x(2)]))


# --------------------------------------------------------------------------------------
# Comparisons, selection, masks (what Keras attention and GELU emit)
# --------------------------------------------------------------------------------------

_COMPARE = {
    "Less": graph.LessOp, "LessEqual": graph.LessOrEqualOp, "Greater": graph.GreaterOp,
    "GreaterEqual": graph.GreaterOrEqualOp, "Equal": graph.EqualOp, "LogicalAnd": graph.AndOp,
    "LogicalOr": graph.OrOp,
}


@converts(*_COMPARE)
def _compare(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(_COMPARE[ctx.node.op], o))


@converts("LogicalNot")
def _not(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(graph.NotOp, o))


@converts("SelectV2")
def _select(ctx: NodeContext) -> Value:
    return _elementwise(ctx, lambda o: ctx.emit(graph.WhereOp, o))


@converts("SquaredDifference")
def _squared_difference(ctx: NodeContext) -> Value:
    def build(o):
        d = ctx.emit(graph.SubOp, o)
        return ctx.emit(graph.MulOp, [d, d])

    return _elementwise(ctx, build)


@converts("Erfc")
def _erfc(ctx: NodeContext) -> Value:
    def build(o):
        one = ctx.constant(np.ones((), dtype=_numpy_type(o[0])), "one")
        return ctx.emit(graph.SubOp, [one, ctx.emit(graph.ErfOp, o)])

    return _elementwise(ctx, build)


def _numpy_type(v: SSAValue) -> np.dtype:
    return dtypes.numpy_dtype(v.type.element_type)  # type: ignore[union-attr]


@converts("Fill")
def _fill(ctx: NodeContext) -> Value:
    dims = _ints(ctx.const(0, "dims"))
    shape = ctx.constant(np.array(dims, np.int64), "dims")
    return Value(nhwc=ctx.emit(graph.ExpandOp, [ctx.x(1), shape]))


@converts("MatrixBandPart")
def _band_part(ctx: NodeContext) -> Value:
    """Keep the band num_lower below / num_upper above the diagonal (negative: all) of the
    last two dims: a select against a constant mask."""
    x = ctx.x(0)
    lower, upper = (int(ctx.const(i, n).reshape(-1)[0]) for i, n in ((1, "num_lower"), (2, "num_upper")))
    m, n = _shape(x)[-2:]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    mask = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    zero = ctx.constant(np.zeros((), _numpy_type(x)), "zero")
    return Value(nhwc=ctx.emit(graph.WhereOp, [ctx.constant(mask, "band"), x, zero]))


# --------------------------------------------------------------------------------------
# Einsum
# --------------------------------------------------------------------------------------


def _einsum_terms(equation: str) -> tuple[list[str], str]:
    if "..." in equation or "->" not in equation:
        raise NodeError(f"einsum '{equation}': only explicit equations without '...' are supported")
    lhs, out = equation.replace(" ", "").split("->")
    terms = lhs.split(",")
    if len(terms) not in (1, 2) or any(len(set(t)) != len(t) for t in terms) or len(set(out)) != len(out):
        raise NodeError(f"einsum '{equation}': one or two operands, no letter twice in one term")
    return terms, out


def _sum_out(ctx: NodeContext, v: SSAValue, term: str, keep: set[str]) -> tuple[SSAValue, str]:
    """Sum over the letters of `term` that are not in `keep`."""
    axes = [i for i, c in enumerate(term) if c not in keep]
    if not axes:
        return v, term
    v = ctx.emit(graph.ReduceSumOp, [v], {"axes": graph.int_array(axes)})
    return v, "".join(c for c in term if c in keep)


def _permute(ctx: NodeContext, v: SSAValue, term: str, order: str) -> SSAValue:
    perm = [term.index(c) for c in order]
    return v if perm == sorted(perm) else _transposed(ctx, v, perm)


@converts("Einsum")
def _einsum(ctx: NodeContext) -> Value:
    """Two operands: transpose each to [batch, free, contracted], one batched matmul,
    reshape and transpose to the output's order; letters in one operand only are summed."""
    terms, out = _einsum_terms(str(ctx.attr("equation", "")))
    values = [ctx.x(i) for i in range(len(terms))]
    for t, v in zip(terms, values):
        if len(t) != len(_shape(v)):
            raise NodeError(f"einsum term '{t}' does not match an operand of rank {len(_shape(v))}")
    if len(terms) == 1:
        v, t = _sum_out(ctx, values[0], terms[0], set(out))
        return Value(nhwc=_permute(ctx, v, t, out))
    (a, ta), (b, tb) = (_sum_out(ctx, v, t, set(out) | set(other))
                        for v, t, other in ((values[0], terms[0], terms[1]), (values[1], terms[1], terms[0])))
    size = {c: d for t, v in ((ta, a), (tb, b)) for c, d in zip(t, _shape(v))}
    batch = "".join(c for c in ta if c in tb and c in out)
    contracted = "".join(c for c in ta if c in tb and c not in out)
    free_a = "".join(c for c in ta if c not in tb)
    free_b = "".join(c for c in tb if c not in ta)

    def prod(letters: str) -> int:
        return int(np.prod([size[c] for c in letters], dtype=np.int64))

    lhs = _reshape_to(ctx, _permute(ctx, a, ta, batch + free_a + contracted),
                      [size[c] for c in batch] + [prod(free_a), prod(contracted)])
    rhs = _reshape_to(ctx, _permute(ctx, b, tb, batch + contracted + free_b),
                      [size[c] for c in batch] + [prod(contracted), prod(free_b)])
    y = ctx.emit(graph.MatMulOp, [lhs, rhs])
    y = _reshape_to(ctx, y, [size[c] for c in batch + free_a + free_b])
    return Value(nhwc=_permute(ctx, y, batch + free_a + free_b, out))


def _reshape_to(ctx: NodeContext, v: SSAValue, shape: list[int]) -> SSAValue:
    return v if list(_shape(v)) == shape else _reshape(ctx, v, shape)
