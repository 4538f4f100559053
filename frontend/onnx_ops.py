"""Per-operator ONNX -> graph converters, with every opset's attribute rules normalized.

Each converter reads one node through a `NodeContext` and emits graph ops. Normalizations
done here: `auto_pad` becomes explicit pads; negative axes are resolved; parameters that
moved between attributes and inputs across opsets (Squeeze axes, Clip bounds, Pad pads,
Slice starts/ends, Split sizes, Reduce axes, Dropout ratio) become attributes and must be
constants; legacy (opset < 13) Softmax/LogSoftmax 2-D coercion is spelled out with reshapes.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.dialects.builtin import StringAttr, UnitAttr

from ge.dialects import graph
from ge.dialects.blobs import dense_attr
from ge.dialects.graph import float_attr, int_array, int_attr, shape_of
from ge.frontend.onnx import NodeContext, NodeError, array_of_tensor, converts, elem_of_onnx, node_location


def _axis(ctx: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise NodeError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _flag(value) -> UnitAttr | None:
    return UnitAttr() if value else None


def _scalar(value) -> float:
    """A one-element tensor (any rank) or number as a float."""
    arr = np.asarray(value).reshape(-1)
    if arr.size != 1:
        raise NodeError(f"expected a single value, got {arr.size}")
    return float(arr[0])


def _out(op):
    return [op.results[0]]


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

_UNARY = {
    "Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp, "Erf": graph.ErfOp,
    "Sqrt": graph.SqrtOp, "Exp": graph.ExpOp, "Log": graph.LogOp, "Sin": graph.SinOp, "Cos": graph.CosOp,
    "Neg": graph.NegOp, "Abs": graph.AbsOp, "Sign": graph.SignOp, "Reciprocal": graph.ReciprocalOp,
    "Floor": graph.FloorOp, "Ceil": graph.CeilOp, "Round": graph.RoundOp, "Softplus": graph.SoftplusOp,
    "Softsign": graph.SoftsignOp, "HardSwish": graph.HardSwishOp, "Identity": graph.IdentityOp,
    "Not": graph.NotOp,
}


@converts(*_UNARY)
def _unary(ctx: NodeContext):
    return _out(ctx.emit(_UNARY[ctx.node.op_type], [ctx.input(0)]))


# op type -> (graph op, [(onnx attribute, graph property, default)])
_UNARY_WITH_PARAMS = {
    "LeakyRelu": (graph.LeakyReluOp, [("alpha", "alpha", 0.01)]),
    "Elu": (graph.EluOp, [("alpha", "alpha", 1.0)]),
    "Celu": (graph.CeluOp, [("alpha", "alpha", 1.0)]),
    "Selu": (graph.SeluOp, [("alpha", "alpha", 1.67326319217681884765625), ("gamma", "gamma", 1.05070102214813232421875)]),
    "HardSigmoid": (graph.HardSigmoidOp, [("alpha", "alpha", 0.2), ("beta", "beta", 0.5)]),
    "ThresholdedRelu": (graph.ThresholdedReluOp, [("alpha", "alpha", 1.0)]),
}


@converts(*_UNARY_WITH_PARAMS)
def _unary_params(ctx: NodeContext):
    cls, params = _UNARY_WITH_PARAMS[ctx.node.op_type]
    props = {p: float_attr(ctx.attr(a, d)) for a, p, d in params}
    return _out(ctx.emit(cls, [ctx.input(0)], props))


@converts("Gelu")
def _gelu(ctx: NodeContext):
    approx = ctx.attr("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    if approx not in ("none", "tanh"):
        raise NodeError(f"approximate must be 'none' or 'tanh', got '{approx}'")
    props = {"approximate": StringAttr("tanh")} if approx == "tanh" else {}
    return _out(ctx.emit(graph.GeluOp, [ctx.input(0)], props))


@converts("Dropout")
def _dropout(ctx: NodeContext):
    if ctx.opset < 12:
        ratio = ctx.attr("ratio", 0.5)
    else:
        ratio = _scalar(ctx.const_or(1, 0.5, "ratio"))
        if ctx.has_input(2) and bool(_scalar(ctx.const(2, "training_mode"))):
            raise NodeError("training_mode = true is not supported (ge compiles for inference)")
    y = ctx.emit(graph.DropoutOp, [ctx.input(0)], {"ratio": float_attr(ratio)}).results[0]
    if not ctx.output_used(1):
        return [y]
    mask = ctx.constant(np.ones(shape_of(ctx.type(0)), dtype=np.bool_), "mask")
    return [y, mask]


@converts("Clip")
def _clip(ctx: NodeContext):
    if ctx.opset < 11:
        lo, hi = ctx.attr("min"), ctx.attr("max")
    else:
        lo = _scalar(ctx.const(1, "min")) if ctx.has_input(1) else None
        hi = _scalar(ctx.const(2, "max")) if ctx.has_input(2) else None
    props = {"min": None if lo is None else float_attr(lo), "max": None if hi is None else float_attr(hi)}
    return _out(ctx.emit(graph.ClipOp, [ctx.input(0)], props))


@converts("Cast")
def _cast(ctx: NodeContext):
    try:
        elem = elem_of_onnx(ctx.attr("to"))
    except Exception as e:
        raise NodeError(str(e).replace("Cast: ", "")) from None
    return [_emit_cast(ctx, ctx.input(0), elem)]


@converts("CastLike")
def _cast_like(ctx: NodeContext):
    return [_emit_cast(ctx, ctx.input(0), ctx.type(1).element_type)]


def _emit_cast(ctx: NodeContext, value, elem):
    op = graph.CastOp.to(value, elem)
    return _register(ctx, op).results[0]


def _register(ctx: NodeContext, op):
    """Add an op built outside `emit` (cast), with location and constant propagation."""
    op.location = node_location(ctx.node)
    ctx.importer.ops.append(op)
    ctx.importer._propagate(op)
    return op


_BINARY = {
    "Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp, "Pow": graph.PowOp,
    "Equal": graph.EqualOp, "Less": graph.LessOp, "LessOrEqual": graph.LessOrEqualOp,
    "Greater": graph.GreaterOp, "GreaterOrEqual": graph.GreaterOrEqualOp, "And": graph.AndOp,
    "Or": graph.OrOp, "Xor": graph.XorOp, "PRelu": graph.PReluOp,
}


@converts(*_BINARY)
def _binary(ctx: NodeContext):
    return _out(ctx.emit(_BINARY[ctx.node.op_type], [ctx.input(0), ctx.input(1)]))


@converts("Mod")
def _mod(ctx: NodeContext):
    return _out(ctx.emit(graph.ModOp, [ctx.input(0), ctx.input(1)], {"fmod": _flag(ctx.attr("fmod", 0))}))


_VARIADIC = {"Sum": graph.SumOp, "Max": graph.MaxOp, "Min": graph.MinOp, "Mean": graph.MeanOp}


@converts(*_VARIADIC)
def _variadic(ctx: NodeContext):
    return _out(ctx.emit(_VARIADIC[ctx.node.op_type], [[ctx.input(i) for i in range(len(ctx.inputs))]]))


@converts("Where")
def _where(ctx: NodeContext):
    return _out(ctx.emit(graph.WhereOp, [ctx.input(0), ctx.input(1), ctx.input(2)]))


# --------------------------------------------------------------------------------------
# Convolution and pooling
# --------------------------------------------------------------------------------------


def _explicit_pads(ctx: NodeContext, spatial: tuple[int, ...], kernel, strides, dilations) -> list[int]:
    """ONNX pads after resolving `auto_pad` (SAME_UPPER puts the odd pad at the end)."""
    auto = ctx.attr("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    n = len(spatial)
    if auto in ("NOTSET", ""):
        pads = list(ctx.attr("pads", [0] * (2 * n)))
        if len(pads) != 2 * n:
            raise NodeError(f"pads needs {2 * n} entries, got {pads}")
        return pads
    if auto == "VALID":
        return [0] * (2 * n)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unknown auto_pad '{auto}'")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return begins + ends


def _window(ctx: NodeContext, kernel: tuple[int, ...], dilated: bool = True):
    n = len(kernel)
    strides = list(ctx.attr("strides", [1] * n))
    dilations = list(ctx.attr("dilations", [1] * n)) if dilated else [1] * n
    spatial = shape_of(ctx.type(0))[2:]
    pads = _explicit_pads(ctx, spatial, kernel, strides, dilations)
    return strides, pads, dilations


def _require_2d(ctx: NodeContext, what: str = "input") -> None:
    if ctx.rank(0) != 4:
        raise NodeError(f"only 2-D (NCHW, rank 4) {ctx.node.op_type} is supported; the {what} is {ctx.type(0)}")


def _is_1d(ctx: NodeContext) -> bool:
    """A rank-3 (N, C, L) input: run through the 2-D op with H = 1 (see `_on_2d`)."""
    if ctx.rank(0) == 3:
        return True
    _require_2d(ctx)
    return False


def _window_2d(ctx: NodeContext, kernel: tuple[int, ...], dilated: bool = True):
    """Kernel, strides, pads and dilations of a 1-D or 2-D window, as 2-D (H = 1 for 1-D)."""
    strides, pads, dilations = _window(ctx, kernel, dilated)
    if len(kernel) == 2:
        return kernel, strides, pads, dilations
    return (1, *kernel), [1, *strides], [0, pads[0], 0, pads[1]], [1, *dilations]


def _on_2d(ctx: NodeContext, cls, operands, props):
    """Emit 2-D op `cls`; a 1-D node's tensors get an H = 1 dim (unsqueeze) and lose it after
    (squeeze), so Conv1d / MaxPool1d / AvgPool1d compile as their 2-D forms."""
    if ctx.rank(0) == 4:
        return _out(ctx.emit(cls, operands, props))

    def lift(v):
        return None if v is None else ctx.emit(graph.UnsqueezeOp, [v], {"axes": int_array([2])}).results[0]

    lifted = [lift(v) for v in operands[:2]] + list(operands[2:]) if cls is graph.Conv2dOp else [lift(operands[0])]
    y = ctx.emit(cls, lifted, props).results[0]
    return _out(ctx.emit(graph.SqueezeOp, [y], {"axes": int_array([2])}))


@converts("Conv")
def _conv(ctx: NodeContext):
    _is_1d(ctx)
    kernel = tuple(ctx.attr("kernel_shape", shape_of(ctx.type(1))[2:]))
    kernel, strides, pads, dilations = _window_2d(ctx, kernel)
    props = {
        "strides": int_array(strides), "pads": int_array(pads), "dilations": int_array(dilations),
        "group": int_attr(ctx.attr("group", 1)),
    }
    bias = ctx.input(2) if ctx.has_input(2) else None
    return _on_2d(ctx, graph.Conv2dOp, [ctx.input(0), ctx.input(1), bias], props)


@converts("MaxPool")
def _max_pool(ctx: NodeContext):
    _is_1d(ctx)
    if ctx.output_used(1):
        raise NodeError("the Indices output of MaxPool is not supported")
    if ctx.attr("storage_order", 0):
        raise NodeError("storage_order = 1 is not supported")
    kernel, strides, pads, dilations = _window_2d(ctx, tuple(ctx.attr("kernel_shape")))
    props = {
        "kernel_shape": int_array(kernel), "strides": int_array(strides), "pads": int_array(pads),
        "dilations": int_array(dilations), "ceil_mode": _flag(ctx.attr("ceil_mode", 0)),
    }
    return _on_2d(ctx, graph.MaxPoolOp, [ctx.input(0)], props)


@converts("AveragePool")
def _avg_pool(ctx: NodeContext):
    _is_1d(ctx)
    if any(d != 1 for d in ctx.attr("dilations", [1])):
        raise NodeError("dilated AveragePool is not supported")
    kernel, strides, pads, _ = _window_2d(ctx, tuple(ctx.attr("kernel_shape")), dilated=False)
    props = {
        "kernel_shape": int_array(kernel), "strides": int_array(strides), "pads": int_array(pads),
        "ceil_mode": _flag(ctx.attr("ceil_mode", 0)), "count_include_pad": _flag(ctx.attr("count_include_pad", 0)),
    }
    return _on_2d(ctx, graph.AvgPoolOp, [ctx.input(0)], props)


@converts("GlobalAveragePool")
def _global_avg(ctx: NodeContext):
    return _out(ctx.emit(graph.GlobalAvgPoolOp, [ctx.input(0)]))


@converts("GlobalMaxPool")
def _global_max(ctx: NodeContext):
    return _out(ctx.emit(graph.GlobalMaxPoolOp, [ctx.input(0)]))


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


@converts("BatchNormalization")
def _batch_norm(ctx: NodeContext):
    if ctx.attr("training_mode", 0):
        raise NodeError("training_mode = 1 is not supported (ge compiles for inference)")
    if ctx.attr("spatial", 1) != 1:
        raise NodeError("spatial = 0 is not supported")
    if any(ctx.output_used(i) for i in range(1, 5)):
        raise NodeError("the training outputs (running mean/var, saved mean/var) are not supported")
    props = {"epsilon": float_attr(ctx.attr("epsilon", 1e-5))}
    return _out(ctx.emit(graph.BatchNormOp, [ctx.input(i) for i in range(5)], props))


@converts("LayerNormalization")
def _layer_norm(ctx: NodeContext):
    axis = _axis(ctx, ctx.attr("axis", -1), ctx.rank(0))
    eps = ctx.attr("epsilon", 1e-5)
    props = {"axis": int_attr(axis), "epsilon": float_attr(eps)}
    bias = ctx.input(2) if ctx.has_input(2) else None
    y = ctx.emit(graph.LayerNormOp, [ctx.input(0), ctx.input(1), bias], props).results[0]
    if not (ctx.output_used(1) or ctx.output_used(2)):
        return [y]
    return [y, *_layer_norm_stats(ctx, axis, eps)]


def _layer_norm_stats(ctx: NodeContext, axis: int, eps: float):
    """LayerNormalization's optional Mean and InvStdDev outputs, spelled out in graph ops
    (computed in the stash type, f32)."""
    from ge.dialects import dtypes

    x = ctx.input(0)
    f32 = dtypes.element_type(np.float32)
    if ctx.type(0).element_type != f32:
        x = _emit_cast(ctx, x, f32)
    reduce = {"axes": int_array(range(axis, ctx.rank(0))), "keepdims": UnitAttr()}
    mean = ctx.emit(graph.ReduceMeanOp, [x], reduce).results[0]
    centered = ctx.emit(graph.SubOp, [x, mean]).results[0]
    square = ctx.emit(graph.MulOp, [centered, centered]).results[0]
    var = ctx.emit(graph.ReduceMeanOp, [square], reduce).results[0]
    shifted = ctx.emit(graph.AddOp, [var, ctx.constant(np.array(eps, np.float32), "eps")]).results[0]
    std = ctx.emit(graph.SqrtOp, [shifted]).results[0]
    return [mean, ctx.emit(graph.ReciprocalOp, [std]).results[0]]


@converts("LRN")
def _lrn(ctx: NodeContext):
    props = {
        "size": int_attr(ctx.attr("size")), "alpha": float_attr(ctx.attr("alpha", 1e-4)),
        "beta": float_attr(ctx.attr("beta", 0.75)), "bias": float_attr(ctx.attr("bias", 1.0)),
    }
    return _out(ctx.emit(graph.LrnOp, [ctx.input(0)], props))


@converts("Softmax", "LogSoftmax")
def _softmax(ctx: NodeContext):
    cls = graph.SoftmaxOp if ctx.node.op_type == "Softmax" else graph.LogSoftmaxOp
    rank = ctx.rank(0)
    legacy = ctx.opset < 13
    axis = _axis(ctx, ctx.attr("axis", 1 if legacy else -1), rank)
    x = ctx.input(0)
    if not legacy or axis == rank - 1:
        return _out(ctx.emit(cls, [x], {"axis": int_attr(axis)}))
    # Opset < 13 coerces the input to 2-D at `axis` and normalizes each row.
    shape = shape_of(ctx.type(0))
    rows = [math.prod(shape[:axis]), math.prod(shape[axis:])]
    flat = ctx.emit(graph.ReshapeOp, [x, ctx.constant(np.array(rows, np.int64), "rows")]).results[0]
    y = ctx.emit(cls, [flat], {"axis": int_attr(1)}).results[0]
    back = ctx.constant(np.array(shape, np.int64), "shape")
    return _out(ctx.emit(graph.ReshapeOp, [y, back]))


# --------------------------------------------------------------------------------------
# Matrix products
# --------------------------------------------------------------------------------------


@converts("MatMul")
def _matmul(ctx: NodeContext):
    return _out(ctx.emit(graph.MatMulOp, [ctx.input(0), ctx.input(1)]))


@converts("Gemm")
def _gemm(ctx: NodeContext):
    props = {
        "alpha": float_attr(ctx.attr("alpha", 1.0)), "beta": float_attr(ctx.attr("beta", 1.0)),
        "trans_a": _flag(ctx.attr("transA", 0)), "trans_b": _flag(ctx.attr("transB", 0)),
    }
    c = ctx.input(2) if ctx.has_input(2) else None
    return _out(ctx.emit(graph.GemmOp, [ctx.input(0), ctx.input(1), c], props))


# --------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------

_REDUCE = {
    "ReduceMean": graph.ReduceMeanOp, "ReduceSum": graph.ReduceSumOp, "ReduceMax": graph.ReduceMaxOp,
    "ReduceMin": graph.ReduceMinOp, "ReduceProd": graph.ReduceProdOp, "ReduceL2": graph.ReduceL2Op,
    "ReduceSumSquare": graph.ReduceSumSquareOp,
}
# The opset from which each reduction takes `axes` as an input instead of an attribute.
_AXES_AS_INPUT = {"ReduceSum": 13}


@converts(*_REDUCE)
def _reduce(ctx: NodeContext):
    rank = ctx.rank(0)
    if ctx.opset >= _AXES_AS_INPUT.get(ctx.node.op_type, 18):
        axes = [int(a) for a in ctx.const(1, "axes")] if ctx.has_input(1) else []
    else:
        axes = list(ctx.attr("axes", []))
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return _out(ctx.emit(graph.IdentityOp, [ctx.input(0)]))
        axes = list(range(rank))
    axes = sorted({_axis(ctx, a, rank) for a in axes})
    props = {"axes": int_array(axes), "keepdims": _flag(ctx.attr("keepdims", 1))}
    return _out(ctx.emit(_REDUCE[ctx.node.op_type], [ctx.input(0)], props))


@converts("ArgMax", "ArgMin")
def _arg_reduce(ctx: NodeContext):
    cls = graph.ArgMaxOp if ctx.node.op_type == "ArgMax" else graph.ArgMinOp
    props = {
        "axis": int_attr(_axis(ctx, ctx.attr("axis", 0), ctx.rank(0))),
        "keepdims": _flag(ctx.attr("keepdims", 1)),
        "select_last_index": _flag(ctx.attr("select_last_index", 0)),
    }
    return _out(ctx.emit(cls, [ctx.input(0)], props))


# --------------------------------------------------------------------------------------
# Shape and data movement
# --------------------------------------------------------------------------------------


@converts("Constant")
def _constant(ctx: NodeContext):
    a = ctx.attrs
    if "value" in a:
        arr = array_of_tensor(a["value"])
    elif "value_float" in a:
        arr = np.array(a["value_float"], np.float32)
    elif "value_floats" in a:
        arr = np.array(a["value_floats"], np.float32)
    elif "value_int" in a:
        arr = np.array(a["value_int"], np.int64)
    elif "value_ints" in a:
        arr = np.array(a["value_ints"], np.int64)
    else:
        raise NodeError("only tensor, float(s) and int(s) constants are supported (no sparse or string values)")
    return [ctx.constant(arr, "value")]


@converts("Reshape")
def _reshape(ctx: NodeContext):
    props = {"allowzero": _flag(ctx.attr("allowzero", 0))}
    return _out(ctx.emit(graph.ReshapeOp, [ctx.input(0), ctx.input(1)], props))


@converts("Flatten")
def _flatten(ctx: NodeContext):
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise NodeError(f"axis {axis} is out of range for rank {rank}")
    return _out(ctx.emit(graph.FlattenOp, [ctx.input(0)], {"axis": int_attr(axis + rank if axis < 0 else axis)}))


@converts("Transpose")
def _transpose(ctx: NodeContext):
    perm = ctx.attr("perm", list(range(ctx.rank(0)))[::-1])
    return _out(ctx.emit(graph.TransposeOp, [ctx.input(0)], {"perm": int_array(perm)}))


@converts("Concat")
def _concat(ctx: NodeContext):
    axis = _axis(ctx, ctx.attr("axis"), ctx.rank(0))
    return _out(ctx.emit(graph.ConcatOp, [[ctx.input(i) for i in range(len(ctx.inputs))]], {"axis": int_attr(axis)}))


@converts("Split")
def _split(ctx: NodeContext):
    axis = _axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    dim = shape_of(ctx.type(0))[axis]
    n = len(ctx.node.output)
    if ctx.opset < 13:
        sizes = list(ctx.attr("split", []))
    else:
        sizes = [int(s) for s in ctx.const(1, "split")] if ctx.has_input(1) else []
    if not sizes:
        if "num_outputs" in ctx.attrs:
            n = ctx.attr("num_outputs")
            chunk = -(-dim // n)
            sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
        else:
            if dim % n:
                raise NodeError(f"dim {dim} does not split evenly into {n} outputs")
            sizes = [dim // n] * n
    op = ctx.emit(graph.SplitOp, [ctx.input(0)], {"axis": int_attr(axis), "sizes": int_array(sizes)})
    return list(op.results)


def _clamp_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's clamping, giving graph.slice's normalized bounds."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1) if dim else 0, min(max(end, -1), dim - 1)


@converts("Slice")
def _slice(ctx: NodeContext):
    shape = shape_of(ctx.type(0))
    rank = len(shape)
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts")), list(ctx.attr("ends"))
        axes = list(ctx.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(v) for v in ctx.const(1, "starts")]
        ends = [int(v) for v in ctx.const(2, "ends")]
        axes = [int(v) for v in ctx.const(3, "axes")] if ctx.has_input(3) else list(range(len(starts)))
        steps = [int(v) for v in ctx.const(4, "steps")] if ctx.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NodeError("starts, ends, axes and steps must have the same length")
    full_s, full_e, full_st = [0] * rank, list(shape), [1] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(ctx, a, rank)
        if st == 0:
            raise NodeError("steps must be non-zero")
        # int64 extremes (INT_MAX / INT_MIN) mean "to the end"; clamp them first.
        s, e = max(min(s, 2**62), -(2**62)), max(min(e, 2**62), -(2**62))
        full_s[a], full_e[a] = _clamp_slice(shape[a], s, e, st)
        full_st[a] = st
    props = {"starts": int_array(full_s), "ends": int_array(full_e), "steps": int_array(full_st)}
    return _out(ctx.emit(graph.SliceOp, [ctx.input(0)], props))


@converts("Gather")
def _gather(ctx: NodeContext):
    axis = _axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    return _out(ctx.emit(graph.GatherOp, [ctx.input(0), ctx.input(1)], {"axis": int_attr(axis)}))


@converts("Squeeze")
def _squeeze(ctx: NodeContext):
    shape = shape_of(ctx.type(0))
    if ctx.opset < 13:
        axes = ctx.attr("axes")
    else:
        axes = [int(a) for a in ctx.const(1, "axes")] if ctx.has_input(1) else None
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted({_axis(ctx, a, len(shape)) for a in axes})
    return _out(ctx.emit(graph.SqueezeOp, [ctx.input(0)], {"axes": int_array(axes)}))


@converts("Unsqueeze")
def _unsqueeze(ctx: NodeContext):
    axes = ctx.attr("axes") if ctx.opset < 13 else [int(a) for a in ctx.const(1, "axes")]
    rank = ctx.rank(0) + len(axes)
    axes = sorted(_axis(ctx, a, rank) for a in axes)
    return _out(ctx.emit(graph.UnsqueezeOp, [ctx.input(0)], {"axes": int_array(axes)}))


@converts("Expand")
def _expand(ctx: NodeContext):
    return _out(ctx.emit(graph.ExpandOp, [ctx.input(0), ctx.input(1)]))


@converts("Tile")
def _tile(ctx: NodeContext):
    reps = [int(r) for r in ctx.const(1, "repeats")]
    return _out(ctx.emit(graph.TileOp, [ctx.input(0)], {"repeats": int_array(reps)}))


@converts("Pad")
def _pad(ctx: NodeContext):
    rank = ctx.rank(0)
    mode = ctx.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if ctx.opset < 11:
        pads, value = list(ctx.attr("pads")), float(ctx.attr("value", 0.0))
    else:
        pads = [int(p) for p in ctx.const(1, "pads")]
        value = _scalar(ctx.const(2, "constant_value")) if ctx.has_input(2) else 0.0
        if ctx.has_input(3):
            axes = [_axis(ctx, int(a), rank) for a in ctx.const(3, "axes")]
            full = [0] * (2 * rank)
            for i, a in enumerate(axes):
                full[a], full[a + rank] = pads[i], pads[i + len(axes)]
            pads = full
    props = {"pads": int_array(pads), "mode": StringAttr(mode), "value": float_attr(value) if mode == "constant" else None}
    return _out(ctx.emit(graph.PadOp, [ctx.input(0)], props))


@converts("Shape")
def _shape(ctx: NodeContext):
    rank = ctx.rank(0)
    start, end = ctx.attr("start", 0), ctx.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    props = {"start": int_attr(start) if start else None, "end": int_attr(end) if end != rank else None}
    if end < start:
        props["end"] = int_attr(start)
    return _out(ctx.emit(graph.ShapeOp, [ctx.input(0)], props))


@converts("ConstantOfShape")
def _constant_of_shape(ctx: NodeContext):
    value = ctx.attr("value")
    arr = array_of_tensor(value) if isinstance(value, onnx.TensorProto) else np.zeros((1,), np.float32)
    arr = arr.reshape(1)
    from ge.dialects import dtypes

    t = graph.tensor(dtypes.element_type(arr.dtype), (1,))
    return _out(ctx.emit(graph.ConstantOfShapeOp, [ctx.input(0)], {"value": dense_attr(arr, t)}))


@converts("Range")
def _range(ctx: NodeContext):
    return _out(ctx.emit(graph.RangeOp, [ctx.input(0), ctx.input(1), ctx.input(2)]))


@converts("DepthToSpace")
def _depth_to_space(ctx: NodeContext):
    mode = ctx.attr("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    props = {"blocksize": int_attr(ctx.attr("blocksize")), "mode": StringAttr(mode)}
    return _out(ctx.emit(graph.DepthToSpaceOp, [ctx.input(0)], props))


@converts("SpaceToDepth")
def _space_to_depth(ctx: NodeContext):
    mode = ctx.attr("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    props = {"blocksize": int_attr(ctx.attr("blocksize")), "mode": StringAttr(mode) if mode != "DCR" else None}
    return _out(ctx.emit(graph.SpaceToDepthOp, [ctx.input(0)], props))


@converts("Trilu")
def _trilu(ctx: NodeContext):
    k = int(_scalar(ctx.const(1, "k"))) if ctx.has_input(1) else 0
    props = {"k": int_attr(k), "upper": _flag(ctx.attr("upper", 1))}
    return _out(ctx.emit(graph.TriluOp, [ctx.input(0)], props))


# --------------------------------------------------------------------------------------
# Quantization: QDQ (QuantizeLinear / DequantizeLinear) and the QOperator / Integer ops as
# onnxruntime's quantizer writes them, onto graph.quantize / dequantize / quant_conv2d /
# quant_matmul (/tmp/ge_team/INT8_SPEC.md). The int8 graph ops carry int8 values only: a
# uint8 tensor q with zero point z is carried as the int8 tensor q - 128 with zero point
# z - 128, which is exact (q - z is unchanged, and z - 128 is in [-128, 127] for any uint8
# z). `Importer.shifted_u8` maps such values to their int8 form; a uint8 result read by an op
# that is not quantization-aware (or a graph output) is also converted back to true uint8,
# and the quantization-aware readers keep the int8 form.
# --------------------------------------------------------------------------------------

# Consumers that read the int8-carried uint8 form (each handles the shift itself).
_QUANT_AWARE = ("DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger")


def _elem_is(t, np_dtype) -> bool:
    from ge.dialects import dtypes

    return t.element_type == dtypes.element_type(np_dtype)


def _param(ctx: NodeContext, i: int, what: str, dtype=None) -> np.ndarray:
    """A quantization parameter (scale or zero point): must be a constant."""
    arr = np.asarray(ctx.const(i, what))
    return arr if dtype is None else arr.astype(dtype)


def _per_tensor(arr: np.ndarray, what: str) -> float | int:
    """The one value of a per-tensor parameter (all entries equal counts as one value)."""
    flat = np.asarray(arr).reshape(-1)
    if flat.size == 0 or np.any(flat != flat[0]):
        raise NodeError(f"{what} must be per tensor (one value) here, got {flat.size} different values")
    return flat[0].item()


def _zero_point(ctx: NodeContext, i: int, default_dtype=np.uint8) -> np.ndarray:
    """The zero point input, or ONNX's default: 0 of type uint8 (or `output_dtype`)."""
    if ctx.has_input(i):
        return _param(ctx, i, "zero point")
    to = ctx.attr("output_dtype", 0)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(to) if to else default_dtype
    return np.zeros((), dtype)


def _u8_to_i8(ctx: NodeContext, v):
    """A true uint8 tensor as int8 q - 128 (constants folded; else cast, subtract, cast)."""
    from ge.dialects import dtypes

    if (known := ctx.importer.value_of(v)) is not None:
        return ctx.constant((known.astype(np.int16) - 128).astype(np.int8), "i8")
    wide = _emit_cast(ctx, v, dtypes.element_type(np.int32))
    shifted = ctx.emit(graph.SubOp, [wide, ctx.constant(np.array(128, np.int32), "u8_bias")]).results[0]
    return _emit_cast(ctx, shifted, dtypes.element_type(np.int8))


def _i8_to_u8(ctx: NodeContext, v):
    """The int8-carried uint8 form back to a true uint8 tensor."""
    from ge.dialects import dtypes

    wide = _emit_cast(ctx, v, dtypes.element_type(np.int32))
    shifted = ctx.emit(graph.AddOp, [wide, ctx.constant(np.array(128, np.int32), "u8_bias")]).results[0]
    return _emit_cast(ctx, shifted, dtypes.element_type(np.uint8))


def _int8_operand(ctx: NodeContext, i: int) -> tuple:
    """Input i as an int8 value and the shift of its zero point (0, or -128 for uint8)."""
    v = ctx.input(i)
    if v in ctx.importer.shifted_u8:
        return ctx.importer.shifted_u8[v], -128
    if _elem_is(v.type, np.int8):
        return v, 0
    if _elem_is(v.type, np.uint8):
        return _u8_to_i8(ctx, v), -128
    raise NodeError(f"input #{i} must be int8 or uint8, got {v.type}")


def _int8_result(ctx: NodeContext, y, is_uint8: bool):
    """A quantized result: int8 as is; uint8 in the int8-carried form when every reader is
    quantization-aware, else converted back to true uint8."""
    if not is_uint8:
        return y
    name = ctx.node.output[0]
    readers = [n.op_type for n in ctx.importer.model.graph.node if name in n.input]
    if name in {o.name for o in ctx.importer.model.graph.output} or any(r not in _QUANT_AWARE for r in readers):
        u8 = _i8_to_u8(ctx, y)
        ctx.importer.shifted_u8[u8] = y  # quantization-aware readers keep using the int8 form
        return u8
    ctx.importer.shifted_u8[y] = y
    return y


def _check_quant_dtype(zp: np.ndarray, what: str) -> bool:
    """True for uint8, False for int8; other quantized types are not supported."""
    if zp.dtype == np.uint8:
        return True
    if zp.dtype == np.int8:
        return False
    raise NodeError(f"{what}: only int8 and uint8 quantization is supported, got {zp.dtype}")


def _no_blocks(ctx: NodeContext) -> None:
    if ctx.attr("block_size", 0):
        raise NodeError("blocked quantization (block_size) is not supported")


def _channel_shape(rank: int, axis: int) -> list[int]:
    shape = [1] * rank
    shape[axis] = -1
    return shape


def _q_range(dtype: np.dtype) -> tuple[int, int]:
    if dtype.kind not in "iu" or dtype.itemsize > 2:
        raise NodeError(f"{dtype} quantization is not supported (int8, uint8, int16, uint16 are)")
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _along_axis(ctx: NodeContext, i: int, rank: int, default=None):
    """Input i (a scale or zero point, scalar or [C] along `axis`) as a broadcastable f32
    tensor of the given rank, or `default` when absent."""
    from ge.dialects import dtypes

    if not ctx.has_input(i):
        return default
    v = _emit_cast(ctx, ctx.input(i), dtypes.element_type(np.float32))
    if len(shape_of(ctx.type(i))) == 1 and shape_of(ctx.type(i))[0] > 1 and rank > 1:
        axis = _axis(ctx, ctx.attr("axis", 1), rank)
        shape = [-1] + [1] * (rank - 1 - axis)
        v = ctx.emit(graph.ReshapeOp, [v, ctx.constant(np.array(shape, np.int64), "channel_shape")]).results[0]
    return v


def _quantize_decomposed(ctx: NodeContext, out_dtype: np.dtype):
    """QuantizeLinear in elementwise graph ops, for what graph.quantize does not take (a
    scale or zero point computed at run time, per-channel scales, 16-bit types):
    saturate(round_half_even(x / scale) + zero_point), in f32 as onnxruntime does."""
    from ge.dialects import dtypes

    lo, hi = _q_range(out_dtype)
    f32 = dtypes.element_type(np.float32)
    rank = ctx.rank(0)
    x = _emit_cast(ctx, ctx.input(0), f32) if ctx.type(0).element_type != f32 else ctx.input(0)
    y = ctx.emit(graph.DivOp, [x, _along_axis(ctx, 1, rank)]).results[0]
    y = ctx.emit(graph.RoundOp, [y]).results[0]
    if (zp := _along_axis(ctx, 2, rank)) is not None:
        y = ctx.emit(graph.AddOp, [y, zp]).results[0]
    y = ctx.emit(graph.ClipOp, [y], {"min": float_attr(lo), "max": float_attr(hi)}).results[0]
    return _emit_cast(ctx, y, dtypes.element_type(out_dtype))


def _dequantize_decomposed(ctx: NodeContext):
    """DequantizeLinear in elementwise graph ops: (x - zero_point) * scale in f32, cast to
    the scale's type (run-time scales or zero points, per-channel zero points, 16-bit x)."""
    from ge.dialects import dtypes

    f32 = dtypes.element_type(np.float32)
    rank = ctx.rank(0)
    y = _emit_cast(ctx, ctx.input(0), f32)
    if (zp := _along_axis(ctx, 2, rank)) is not None:
        y = ctx.emit(graph.SubOp, [y, zp]).results[0]
    y = ctx.emit(graph.MulOp, [y, _along_axis(ctx, 1, rank)]).results[0]
    out = ctx.type(1).element_type
    return _emit_cast(ctx, y, out) if out != f32 else y


def _is_float(t) -> bool:
    from ge.dialects import dtypes

    return dtypes.is_float(t.element_type)


def _known(ctx: NodeContext, i: int) -> np.ndarray | None:
    """Input i's value if known at compile time (absent inputs count as known: None)."""
    return ctx.values[i] if ctx.has_input(i) else None


def _out_dtype(ctx: NodeContext) -> np.dtype:
    """QuantizeLinear's output type: the zero point's, else `output_dtype`, else uint8."""
    if ctx.has_input(2):
        from ge.dialects import dtypes

        return dtypes.numpy_dtype(ctx.type(2).element_type)
    to = ctx.attr("output_dtype", 0)
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to)) if to else np.dtype(np.uint8)


@converts("QuantizeLinear")
def _quantize_linear(ctx: NodeContext):
    _no_blocks(ctx)
    out_dtype = _out_dtype(ctx)
    _q_range(out_dtype)
    scale, zp = ctx.values[1], _known(ctx, 2)
    constant_params = scale is not None and (zp is not None or not ctx.has_input(2))
    zp = zp if zp is not None else np.zeros((), out_dtype)
    if (not constant_params or scale.size > 1 or zp.size > 1 or out_dtype not in (np.int8, np.uint8)
            or not _is_float(ctx.type(0))):
        return [_quantize_decomposed(ctx, out_dtype)]
    is_u8 = out_dtype == np.uint8
    offset = int(zp.reshape(-1)[0]) - (128 if is_u8 else 0)
    props = {"scale": float_attr(float(scale.reshape(-1)[0])), "offset": int_attr(offset)}
    y = ctx.emit(graph.QuantizeOp, [ctx.input(0)], props).results[0]
    return [_int8_result(ctx, y, is_u8)]


def _scale_value(ctx: NodeContext, scale: np.ndarray, hint: str = "scale"):
    """A scale operand for graph.dequantize: shape [] (per tensor) or [C]."""
    return ctx.constant(scale.reshape(()) if scale.size == 1 else scale.reshape(-1), hint)


@converts("DequantizeLinear")
def _dequantize_linear(ctx: NodeContext):
    """graph.dequantize when the scale is a constant, the zero point one constant and x
    int8 / uint8 / int32; a constant x with per-channel zero points folds here; anything
    else runs as elementwise graph ops (`_dequantize_decomposed`)."""
    from ge.dialects import dtypes

    _no_blocks(ctx)
    scale, zp, x_known = ctx.values[1], _known(ctx, 2), ctx.values[0]
    x_dtype = dtypes.numpy_dtype(ctx.type(0).element_type)
    zp = zp if zp is not None or ctx.has_input(2) else np.zeros((), x_dtype)
    rank = ctx.rank(0)
    per_channel_zp = zp is not None and zp.size > 1 and np.any(zp != zp.reshape(-1)[0])
    if scale is None or zp is None or x_dtype not in (np.int8, np.uint8, np.int32) or per_channel_zp:
        if x_known is not None and scale is not None and zp is not None:  # constant weights: fold here
            axis = _axis(ctx, ctx.attr("axis", 1), max(rank, 1))
            shape = _channel_shape(rank, axis) if scale.size > 1 or zp.size > 1 else [1] * rank
            y = (x_known.astype(np.int64) - zp.astype(np.int64).reshape(shape)).astype(np.float32) * scale.reshape(shape)
            return [ctx.constant(y.astype(scale.dtype), "dequantized")]
        return [_dequantize_decomposed(ctx)]
    if x_dtype == np.int32:
        if np.any(zp != 0):
            raise NodeError("an int32 DequantizeLinear must have zero point 0 (ONNX)")
        x, shift = ctx.input(0), 0
    else:
        x, shift = _int8_operand(ctx, 0)
    axis = _axis(ctx, ctx.attr("axis", 1), max(rank, 1)) if scale.size > 1 else 0
    offset = int(zp.reshape(-1)[0]) + shift if zp.size else shift
    op = graph.DequantizeOp.to(x, _scale_value(ctx, scale), dtypes.element_type(scale.dtype), axis, offset)
    return [_register(ctx, op).results[0]]


def _weight_parts(ctx: NodeContext, i: int, zp_index: int, axis: int) -> list[np.ndarray]:
    """A constant int8/uint8 weight minus its zero point, as int8 tensors that sum to it:
    one for symmetric weights (int8 with zero point 0, uint8 with 128: the Cube's case);
    two or three when the centered values leave int8 (an asymmetric uint8 weight spans
    [-255, 255]). The products with each part add up exactly in int32."""
    w = ctx.const(i, "the quantized weight")
    zp = _zero_point(ctx, zp_index, w.dtype.type).astype(np.int64)
    if zp.size > 1:
        zp = zp.reshape(_channel_shape(w.ndim, axis))
    rest = w.astype(np.int64) - zp
    parts = [np.clip(rest, -128, 127)]
    while np.any(rest := rest - parts[-1]):
        parts.append(np.clip(rest, -128, 127))
    return [p.astype(np.int8) for p in parts]


def _sum_parts(ctx: NodeContext, cls, x, parts: list[np.ndarray], bias, props: dict):
    """`cls`(x, part) for each weight part (the bias on the first), added in int32."""
    acc = None
    for part in parts:
        y = ctx.emit(cls, [x, ctx.constant(part, "weight"), bias], props).results[0]
        acc = y if acc is None else ctx.emit(graph.AddOp, [acc, y]).results[0]
        bias = None
    return acc


def _requantize(ctx: NodeContext, acc, scale: np.ndarray, axis: int, y_scale_i: int, y_zp_i: int):
    """int32 accumulator -> f32 (scale per tensor or per channel) -> int8/uint8 output."""
    deq = ctx.emit(graph.DequantizeOp, [acc, _scale_value(ctx, scale, "deq_scale")],
                   {"axis": int_attr(axis), "offset": int_attr(0)}).results[0]
    y_zp = _zero_point(ctx, y_zp_i)
    is_u8 = _check_quant_dtype(y_zp, ctx.node.op_type)
    props = {"scale": float_attr(_per_tensor(_param(ctx, y_scale_i, "y_scale"), "y_scale")),
             "offset": int_attr(int(_per_tensor(y_zp, "y_zero_point")) - (128 if is_u8 else 0))}
    y = ctx.emit(graph.QuantizeOp, [deq], props).results[0]
    return _int8_result(ctx, y, is_u8)


def _quant_conv(ctx: NodeContext, x_i: int, x_zp_i: int, w_i: int, w_zp_i: int, bias_i: int | None):
    """graph.quant_conv2d for QLinearConv / ConvInteger: (x, its offset) and a centered weight."""
    _require_2d(ctx)
    x, shift = _int8_operand(ctx, x_i)
    x_zp = _param(ctx, x_zp_i, "x_zero_point") if ctx.has_input(x_zp_i) else np.zeros((), np.int8)
    parts = _weight_parts(ctx, w_i, w_zp_i, 0)
    kernel = tuple(ctx.attr("kernel_shape", parts[0].shape[2:]))
    strides, pads, dilations = _window(ctx, kernel)
    props = {
        "strides": int_array(strides), "pads": int_array(pads), "dilations": int_array(dilations),
        "group": int_attr(ctx.attr("group", 1)),
        "input_offset": int_attr(int(_per_tensor(x_zp, "x_zero_point")) + shift),
    }
    bias = ctx.input(bias_i) if bias_i is not None and ctx.has_input(bias_i) else None
    return _sum_parts(ctx, graph.QuantConv2dOp, x, parts, bias, props)


@converts("ConvInteger")
def _conv_integer(ctx: NodeContext):
    return [_quant_conv(ctx, 0, 2, 1, 3, None)]


@converts("QLinearConv")
def _qlinear_conv(ctx: NodeContext):
    acc = _quant_conv(ctx, 0, 2, 3, 5, 8)
    scale = (_param(ctx, 1, "x_scale", np.float32).reshape(-1)[:1] * _param(ctx, 4, "w_scale", np.float32).reshape(-1))
    return [_requantize(ctx, acc, scale.astype(np.float32), 1, 6, 7)]


def _quant_mm(ctx: NodeContext, a_i: int, a_zp_i: int, b_i: int, b_zp_i: int):
    """graph.quant_matmul for QLinearMatMul / MatMulInteger: a constant (weight) rhs."""
    a, shift = _int8_operand(ctx, a_i)
    a_zp = _param(ctx, a_zp_i, "a_zero_point") if ctx.has_input(a_zp_i) else np.zeros((), np.int8)
    b_rank = len(shape_of(ctx.type(b_i)))
    parts = _weight_parts(ctx, b_i, b_zp_i, b_rank - 1)
    props = {"lhs_offset": int_attr(int(_per_tensor(a_zp, "a_zero_point")) + shift)}
    return _sum_parts(ctx, graph.QuantMatMulOp, a, parts, None, props)


@converts("MatMulInteger")
def _matmul_integer(ctx: NodeContext):
    return [_quant_mm(ctx, 0, 2, 1, 3)]


@converts("QLinearMatMul")
def _qlinear_matmul(ctx: NodeContext):
    acc = _quant_mm(ctx, 0, 2, 3, 5)
    scale = _param(ctx, 1, "a_scale", np.float32).reshape(-1)[:1] * _param(ctx, 4, "b_scale", np.float32).reshape(-1)
    rank = len(shape_of(acc.type))
    return [_requantize(ctx, acc, scale.astype(np.float32), rank - 1, 6, 7)]
