"""Per-overload ATen -> graph converters (the core ATen opset `torch.export` decomposes to).

Each converter reads one FX node through an `FxContext` and returns the SSA value (or list
of values, for ops with several results) standing for the node. torch's conventions are
normalized here: NCHW windows get explicit ONNX-order pads, negative dims are resolved,
Python scalars become constants of the computation's element type (torch's type
promotion, read from the node's metadata), `alpha` of add/sub is spelled out.
"""

from __future__ import annotations

import numpy as np
import torch
from xdsl.dialects.builtin import StringAttr

from ge.dialects import dtypes, graph
from ge.dialects.graph import float_attr, int_array, int_attr
from ge.frontend.onnx import NodeError
from ge.frontend.torch_fx import FxContext, axis, converts, flag, ints, numpy_dtype, to_numpy

# --------------------------------------------------------------------------------------
# Pass-through, tuples and constants
# --------------------------------------------------------------------------------------


@converts("getitem")
def _getitem(ctx: FxContext):
    src, i = ctx.args
    outs = ctx.importer.env.get(src)
    if not isinstance(outs, list):
        raise NodeError(f"indexing '{src.name}', which is not a tuple of tensors")
    if outs[i] is None:
        raise NodeError(f"output #{i} of '{src.name}' is not supported (only what inference needs is converted)")
    return outs[i]


@converts("aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default",
          "aten.contiguous.default", "aten.dropout.default", "aten.native_dropout.default")
def _identity(ctx: FxContext):
    if str(ctx.node.target) == "aten.native_dropout.default":
        if ctx.arg(2, "train"):
            raise NodeError("dropout in training mode is not supported (call model.eval())")
        return [ctx.value(ctx.args[0]), None]
    if str(ctx.node.target) == "aten.dropout.default" and ctx.arg(2, "train"):
        raise NodeError("dropout in training mode is not supported (call model.eval())")
    return ctx.value(ctx.args[0])


@converts("aten._to_copy.default", "aten.to.dtype", "aten._assert_tensor_metadata.default")
def _to_copy(ctx: FxContext):
    if str(ctx.node.target) == "aten._assert_tensor_metadata.default":
        return None  # a check torch inserts; nothing to compute
    v = ctx.value(ctx.args[0])
    dtype = ctx.out_dtype()
    return v if numpy_dtype(ctx.args[0].meta["val"].dtype) == dtype else ctx.cast(v, dtype)


@converts("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.scalar_tensor.default",
          "aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.empty.memory_format",
          "aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default")
def _creation(ctx: FxContext):
    """A tensor made from sizes and numbers only: computed by torch now, kept as a constant."""
    if str(ctx.node.target) == "aten.empty.memory_format":
        raise NodeError("an uninitialized tensor (torch.empty) has no defined value")
    if str(ctx.node.target).endswith("_like.default"):
        like = ctx.args[0].meta["val"]
        fill = {"aten.zeros_like.default": 0, "aten.ones_like.default": 1}.get(str(ctx.node.target))
        fill = ctx.args[1] if fill is None else fill
        dtype = ctx.node.kwargs.get("dtype") or like.dtype
        return ctx.constant(np.full(tuple(like.shape), fill, dtype=numpy_dtype(dtype)), "value")
    kwargs = {k: v for k, v in ctx.node.kwargs.items() if k not in ("device", "pin_memory", "layout")}
    value = ctx.node.target(*ctx.args, **kwargs, device="cpu")
    return ctx.constant(to_numpy(value), "value")


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

_UNARY = {
    "relu": graph.ReluOp, "sigmoid": graph.SigmoidOp, "tanh": graph.TanhOp, "erf": graph.ErfOp,
    "sqrt": graph.SqrtOp, "exp": graph.ExpOp, "log": graph.LogOp, "sin": graph.SinOp, "cos": graph.CosOp,
    "neg": graph.NegOp, "abs": graph.AbsOp, "sign": graph.SignOp, "reciprocal": graph.ReciprocalOp,
    "floor": graph.FloorOp, "ceil": graph.CeilOp, "round": graph.RoundOp, "hardswish": graph.HardSwishOp,
    "logical_not": graph.NotOp, "bitwise_not": graph.NotOp,
}


@converts(*(f"aten.{n}.default" for n in _UNARY))
def _unary(ctx: FxContext):
    name = str(ctx.node.target).split(".")[1]
    x = ctx.value(ctx.args[0])
    if name == "bitwise_not" and ctx.out_dtype() != np.bool_:
        raise NodeError("bitwise not of integers is not supported (only of bool)")
    return ctx.emit(_UNARY[name], [x])


@converts("aten.rsqrt.default")
def _rsqrt(ctx: FxContext):
    return ctx.emit(graph.ReciprocalOp, [ctx.emit(graph.SqrtOp, [ctx.value(ctx.args[0])])])


@converts("aten.silu.default")
def _silu(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    return ctx.emit(graph.MulOp, [x, ctx.emit(graph.SigmoidOp, [x])])


@converts("aten.gelu.default")
def _gelu(ctx: FxContext):
    approx = ctx.arg(1, "approximate", "none")
    if approx not in ("none", "tanh"):
        raise NodeError(f"approximate must be 'none' or 'tanh', got '{approx}'")
    props = {"approximate": StringAttr("tanh")} if approx == "tanh" else {}
    return ctx.emit(graph.GeluOp, [ctx.value(ctx.args[0])], props)


@converts("aten.leaky_relu.default")
def _leaky_relu(ctx: FxContext):
    return ctx.emit(graph.LeakyReluOp, [ctx.value(ctx.args[0])], {"alpha": float_attr(ctx.arg(1, "negative_slope", 0.01))})


@converts("aten.elu.default")
def _elu(ctx: FxContext):
    if ctx.arg(2, "scale", 1) != 1 or ctx.arg(3, "input_scale", 1) != 1:
        raise NodeError("elu with scale or input_scale other than 1 is not supported")
    return ctx.emit(graph.EluOp, [ctx.value(ctx.args[0])], {"alpha": float_attr(ctx.arg(1, "alpha", 1.0))})


@converts("aten.hardtanh.default", "aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default")
def _clip(ctx: FxContext):
    target = str(ctx.node.target)
    if target == "aten.hardtanh.default":
        lo, hi = ctx.arg(1, "min_val", -1.0), ctx.arg(2, "max_val", 1.0)
    elif target == "aten.clamp_min.default":
        lo, hi = ctx.arg(1, "min"), None
    elif target == "aten.clamp_max.default":
        lo, hi = None, ctx.arg(1, "max")
    else:
        lo, hi = ctx.arg(1, "min"), ctx.arg(2, "max")
    if any(b is not None and not isinstance(b, int | float) for b in (lo, hi)):
        raise NodeError("clamp bounds must be numbers")
    props = {"min": None if lo is None else float_attr(lo), "max": None if hi is None else float_attr(hi)}
    return ctx.emit(graph.ClipOp, [ctx.value(ctx.args[0])], props)


_BINARY = {
    "add": graph.AddOp, "sub": graph.SubOp, "mul": graph.MulOp, "div": graph.DivOp, "pow": graph.PowOp,
    "eq": graph.EqualOp, "lt": graph.LessOp, "le": graph.LessOrEqualOp, "gt": graph.GreaterOp,
    "ge": graph.GreaterOrEqualOp, "logical_and": graph.AndOp, "logical_or": graph.OrOp,
    "bitwise_and": graph.AndOp, "bitwise_or": graph.OrOp, "maximum": graph.MaxOp, "minimum": graph.MinOp,
}
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def _compute_dtype(ctx: FxContext, a, b) -> np.dtype:
    """torch's type promotion of the two operands (tensors from their metadata)."""
    def operand(x):
        return x.meta["val"] if isinstance(x, torch.fx.Node) else x

    return numpy_dtype(torch.result_type(operand(a), operand(b)))


def _binary_operands(ctx: FxContext, a, b):
    compare = str(ctx.node.target).split(".")[1] in _COMPARE
    dtype = _compute_dtype(ctx, a, b) if compare else ctx.out_dtype()
    return ctx.tensor(a, dtype), ctx.tensor(b, dtype)


@converts(*(f"aten.{n}.{o}" for n in (*_BINARY, "ne") for o in ("Tensor", "Scalar", "default", "Tensor_Scalar")))
def _binary(ctx: FxContext):
    name = str(ctx.node.target).split(".")[1]
    a, b = ctx.args[0], ctx.args[1]
    if name == "div" and ctx.node.kwargs.get("rounding_mode") is not None:
        raise NodeError(f"div with rounding_mode='{ctx.node.kwargs['rounding_mode']}' is not supported")
    if name == "pow":
        return ctx.emit(graph.PowOp, [ctx.value(a), ctx.tensor(b, ctx.out_dtype())])
    x, y = _binary_operands(ctx, a, b)
    alpha = ctx.node.kwargs.get("alpha", 1)
    if name in ("add", "sub") and alpha != 1:
        y = ctx.emit(graph.MulOp, [y, ctx.tensor(alpha, ctx.out_dtype())])
    if name == "ne":
        return ctx.emit(graph.NotOp, [ctx.emit(graph.EqualOp, [x, y])])
    if name in ("maximum", "minimum"):
        return ctx.emit(_BINARY[name], [[x, y]])
    return ctx.emit(_BINARY[name], [x, y])


@converts("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(ctx: FxContext):
    x, y = _binary_operands(ctx, ctx.args[0], ctx.args[1])
    alpha = ctx.node.kwargs.get("alpha", 1)
    if alpha != 1:
        x = ctx.emit(graph.MulOp, [x, ctx.tensor(alpha, ctx.out_dtype())])
    return ctx.emit(graph.SubOp, [y, x])


@converts("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(ctx: FxContext):
    cond, a, b = ctx.args
    dtype = ctx.out_dtype()
    return ctx.emit(graph.WhereOp, [ctx.tensor(cond, np.dtype(np.bool_)), ctx.tensor(a, dtype), ctx.tensor(b, dtype)])


@converts("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(ctx: FxContext):
    x, mask, value = ctx.args
    dtype = ctx.out_dtype()
    return ctx.emit(graph.WhereOp, [ctx.tensor(mask, np.dtype(np.bool_)), ctx.tensor(value, dtype), ctx.value(x)])


@converts("aten.tril.default", "aten.triu.default")
def _trilu(ctx: FxContext):
    upper = str(ctx.node.target) == "aten.triu.default"
    props = {"k": int_attr(int(ctx.arg(1, "diagonal", 0))), "upper": flag(upper)}
    return ctx.emit(graph.TriluOp, [ctx.value(ctx.args[0])], props)


# --------------------------------------------------------------------------------------
# Convolution, pooling, normalization
# --------------------------------------------------------------------------------------


def _pairs(values, n: int = 2) -> list[int]:
    v = ints(values)
    return v * n if len(v) == 1 else v


def _lift_1d(ctx: FxContext, v):
    """(N, C, L) -> (N, C, 1, L): 1-D windows run as their 2-D forms."""
    return ctx.emit(graph.UnsqueezeOp, [v], {"axes": int_array([2])})


def _drop_1d(ctx: FxContext, v):
    return ctx.emit(graph.SqueezeOp, [v], {"axes": int_array([2])})


@converts("aten.convolution.default")
def _convolution(ctx: FxContext):
    x, w, b, stride, padding, dilation, transposed, _output_padding, groups = ctx.args[:9]
    if transposed:
        raise NodeError("transposed convolution is not supported")
    rank = ctx.rank(x)
    if rank not in (3, 4):
        raise NodeError(f"only 1-D and 2-D convolutions are supported; the input has rank {rank}")
    n = rank - 2
    stride, padding, dilation = _pairs(stride, n), _pairs(padding, n), _pairs(dilation, n)
    xv, wv = ctx.value(x), ctx.value(w)
    if n == 1:
        xv, wv = _lift_1d(ctx, xv), _lift_1d(ctx, wv)
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
    props = {"strides": int_array(stride), "pads": int_array(padding * 2), "dilations": int_array(dilation),
             "group": int_attr(groups)}
    y = ctx.emit(graph.Conv2dOp, [xv, wv, None if b is None else ctx.value(b)], props)
    return _drop_1d(ctx, y) if n == 1 else y


def _pool(ctx: FxContext, cls, kernel, stride, padding, dilation, ceil_mode, extra: dict):
    x = ctx.value(ctx.args[0])
    rank = x.type.get_num_dims()
    if rank not in (3, 4):
        raise NodeError(f"only 1-D and 2-D pooling is supported; the input has rank {rank}")
    n = rank - 2
    kernel = _pairs(kernel, n)
    stride = _pairs(stride, n) if stride else kernel
    padding, dilation = _pairs(padding, n), _pairs(dilation, n)
    if n == 1:
        x = _lift_1d(ctx, x)
        kernel, stride, padding, dilation = [1, *kernel], [1, *stride], [0, *padding], [1, *dilation]
    props = {"kernel_shape": int_array(kernel), "strides": int_array(stride), "pads": int_array(padding * 2),
             "ceil_mode": flag(ceil_mode), **extra}
    if cls is graph.MaxPoolOp:
        props["dilations"] = int_array(dilation)
    elif any(d != 1 for d in dilation):
        raise NodeError("dilated average pooling is not supported")
    y = ctx.emit(cls, [x], props)
    return _drop_1d(ctx, y) if n == 1 else y


@converts("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default",
          "aten.max_pool1d_with_indices.default", "aten.max_pool1d.default")
def _max_pool(ctx: FxContext):
    y = _pool(ctx, graph.MaxPoolOp, ctx.arg(1, "kernel_size"), ctx.arg(2, "stride", []), ctx.arg(3, "padding", 0),
              ctx.arg(4, "dilation", 1), ctx.arg(5, "ceil_mode", False), {})
    return [y, None] if "with_indices" in str(ctx.node.target) else y


@converts("aten.avg_pool2d.default", "aten.avg_pool1d.default")
def _avg_pool(ctx: FxContext):
    if ctx.arg(6, "divisor_override") is not None:
        raise NodeError("avg_pool2d with divisor_override is not supported")
    extra = {"count_include_pad": flag(ctx.arg(5, "count_include_pad", True))}
    return _pool(ctx, graph.AvgPoolOp, ctx.arg(1, "kernel_size"), ctx.arg(2, "stride", []), ctx.arg(3, "padding", 0),
                 1, ctx.arg(4, "ceil_mode", False), extra)


@converts("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def _adaptive_avg_pool(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    if x.type.get_num_dims() != 4:
        raise NodeError("only 2-D (NCHW) adaptive average pooling is supported")
    out = _pairs(ctx.args[1])
    h, w = graph.shape_of(x.type)[2:]
    if out == [1, 1]:
        return ctx.emit(graph.GlobalAvgPoolOp, [x])
    if h % out[0] or w % out[1]:
        raise NodeError(f"adaptive pooling of {h}x{w} to {out[0]}x{out[1]} has uneven windows; only sizes that "
                        "divide the input are supported")
    kernel = [h // out[0], w // out[1]]
    props = {"kernel_shape": int_array(kernel), "strides": int_array(kernel), "pads": int_array([0, 0, 0, 0])}
    return ctx.emit(graph.AvgPoolOp, [x], props)


def _ones_or(ctx: FxContext, a, n: int, fill: float, dtype: np.dtype, hint: str):
    return ctx.constant(np.full((n,), fill, dtype), hint) if a is None else ctx.value(a)


@converts("aten._native_batch_norm_legit_no_training.default", "aten._native_batch_norm_legit.default",
          "aten._native_batch_norm_legit_functional.default", "aten.native_batch_norm.default",
          "aten.batch_norm.default")
def _batch_norm(ctx: FxContext):
    target = str(ctx.node.target)
    x, w, b, mean, var = ctx.args[:5]
    if target == "aten._native_batch_norm_legit_no_training.default":
        eps = ctx.arg(6, "eps")
    else:
        training = ctx.arg(5, "training")
        if training or mean is None:
            raise NodeError("batch norm in training mode (batch statistics) is not supported (call model.eval())")
        eps = ctx.arg(7, "eps")
    xv = ctx.value(x)
    c = graph.shape_of(xv.type)[1]
    dtype = numpy_dtype(x.meta["val"].dtype)
    operands = [xv, _ones_or(ctx, w, c, 1.0, dtype, "scale"), _ones_or(ctx, b, c, 0.0, dtype, "bias"),
                ctx.value(mean), ctx.value(var)]
    y = ctx.emit(graph.BatchNormOp, operands, {"epsilon": float_attr(eps)})
    return y if target == "aten.batch_norm.default" else [y, None, None]


@converts("aten.native_layer_norm.default", "aten.layer_norm.default")
def _layer_norm(ctx: FxContext):
    x, normalized, w, b = ctx.args[0], ctx.args[1], ctx.arg(2, "weight"), ctx.arg(3, "bias")
    eps = ctx.arg(4, "eps", 1e-5)
    xv = ctx.value(x)
    rank = xv.type.get_num_dims()
    normalized = ints(normalized)
    dtype = numpy_dtype(x.meta["val"].dtype)
    scale = ctx.constant(np.ones(normalized, dtype), "scale") if w is None else ctx.value(w)
    bias = None if b is None else ctx.value(b)
    props = {"axis": int_attr(rank - len(normalized)), "epsilon": float_attr(eps)}
    y = ctx.emit(graph.LayerNormOp, [xv, scale, bias], props)
    return y if str(ctx.node.target) == "aten.layer_norm.default" else [y, None, None]


@converts("aten._softmax.default", "aten._log_softmax.default", "aten.softmax.int", "aten.log_softmax.int")
def _softmax(ctx: FxContext):
    cls = graph.LogSoftmaxOp if "log_softmax" in str(ctx.node.target) else graph.SoftmaxOp
    x = ctx.value(ctx.args[0])
    rank = x.type.get_num_dims()
    dim = axis(ctx.args[1], rank)
    if ctx.out_dtype() != numpy_dtype(ctx.args[0].meta["val"].dtype):
        x = ctx.cast(x, ctx.out_dtype())
    return ctx.emit(cls, [x], {"axis": int_attr(dim)})


# --------------------------------------------------------------------------------------
# Matrix products
# --------------------------------------------------------------------------------------


@converts("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _matmul(ctx: FxContext):
    return ctx.emit(graph.MatMulOp, [ctx.value(ctx.args[0]), ctx.value(ctx.args[1])])


@converts("aten.addmm.default")
def _addmm(ctx: FxContext):
    bias, a, b = ctx.args[:3]
    props = {"alpha": float_attr(ctx.node.kwargs.get("alpha", 1.0)), "beta": float_attr(ctx.node.kwargs.get("beta", 1.0))}
    return ctx.emit(graph.GemmOp, [ctx.value(a), ctx.value(b), ctx.value(bias)], props)


@converts("aten.linear.default")
def _linear(ctx: FxContext):
    x, w, b = ctx.args[0], ctx.args[1], ctx.arg(2, "bias")
    xv, wv = ctx.value(x), ctx.value(w)
    if xv.type.get_num_dims() == 2:
        props = {"trans_b": flag(True)}
        return ctx.emit(graph.GemmOp, [xv, wv, None if b is None else ctx.value(b)], props)
    y = ctx.emit(graph.MatMulOp, [xv, ctx.emit(graph.TransposeOp, [wv], {"perm": int_array([1, 0])})])
    return y if b is None else ctx.emit(graph.AddOp, [y, ctx.value(b)])


# --------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------

_REDUCE = {"mean": graph.ReduceMeanOp, "sum": graph.ReduceSumOp, "amax": graph.ReduceMaxOp,
           "amin": graph.ReduceMinOp, "prod": graph.ReduceProdOp, "any": graph.ReduceMaxOp}


def _dims(ctx: FxContext, dims, rank: int) -> list[int]:
    if dims is None or (isinstance(dims, list | tuple) and not dims):
        return list(range(rank))
    return sorted({axis(d, rank) for d in ints(dims)})


@converts("aten.mean.dim", "aten.mean.default", "aten.sum.dim_IntList", "aten.sum.default", "aten.amax.default",
          "aten.amin.default", "aten.prod.dim_int", "aten.any.dim", "aten.any.dims", "aten.any.default")
def _reduce(ctx: FxContext):
    name = str(ctx.node.target).split(".")[1]
    x = ctx.value(ctx.args[0])
    rank = x.type.get_num_dims()
    overload = str(ctx.node.target).split(".")[2]
    dims = None if overload == "default" and name in ("mean", "sum", "any") else ctx.arg(1, "dim")
    keep = False if dims is None else ctx.arg(2, "keepdim", False)
    dtype = ctx.out_dtype()
    if name == "any":  # any = max over the values as 0/1
        x = ctx.cast(x, np.dtype(np.float32))
    elif numpy_dtype(ctx.args[0].meta["val"].dtype) != dtype:
        x = ctx.cast(x, dtype)
    props = {"axes": int_array(_dims(ctx, dims, rank)), "keepdims": flag(keep)}
    y = ctx.emit(_REDUCE[name], [x], props)
    return ctx.cast(y, dtype) if name == "any" else y


@converts("aten.var.correction", "aten.var.dim")
def _var(ctx: FxContext):
    """Variance spelled out: sum((x - mean)^2) / (n - correction)."""
    x = ctx.value(ctx.args[0])
    shape = graph.shape_of(x.type)
    dims = _dims(ctx, ctx.arg(1, "dim"), len(shape))
    if str(ctx.node.target) == "aten.var.dim":
        correction = 1 if ctx.arg(2, "unbiased", True) else 0
        keep = ctx.arg(3, "keepdim", False)
    else:
        correction = ctx.node.kwargs.get("correction")
        correction = 1 if correction is None else correction
        keep = ctx.node.kwargs.get("keepdim", False)
    count = int(np.prod([shape[d] for d in dims]))
    dtype = ctx.out_dtype()
    mean = ctx.emit(graph.ReduceMeanOp, [x], {"axes": int_array(dims), "keepdims": flag(True)})
    centered = ctx.emit(graph.SubOp, [x, mean])
    total = ctx.emit(graph.ReduceSumOp, [ctx.emit(graph.MulOp, [centered, centered])],
                     {"axes": int_array(dims), "keepdims": flag(keep)})
    return ctx.emit(graph.DivOp, [total, ctx.constant(np.array(max(count - correction, 0), dtype), "count")])


# --------------------------------------------------------------------------------------
# Shape and data movement
# --------------------------------------------------------------------------------------


@converts("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default", "aten.flatten.using_ints",
          "aten.view_copy.default")
def _view(ctx: FxContext):
    return ctx.reshape(ctx.value(ctx.args[0]), ctx.out_shape())


@converts("aten.permute.default", "aten.transpose.int", "aten.t.default", "aten.numpy_T.default")
def _permute(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    rank = x.type.get_num_dims()
    target = str(ctx.node.target)
    if target == "aten.permute.default":
        perm = [axis(d, rank) for d in ctx.args[1]]
    elif target == "aten.transpose.int":
        perm = list(range(rank))
        a, b = axis(ctx.args[1], rank), axis(ctx.args[2], rank)
        perm[a], perm[b] = perm[b], perm[a]
    else:
        perm = list(range(rank))[::-1]
    return ctx.emit(graph.TransposeOp, [x], {"perm": int_array(perm)})


@converts("aten.expand.default", "aten.expand_copy.default")
def _expand(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    shape = ctx.out_shape()
    if graph.shape_of(x.type) == shape:
        return x
    return ctx.emit(graph.ExpandOp, [x, ctx.constant(np.array(shape, np.int64), "shape")])


@converts("aten.cat.default", "aten.concat.default")
def _cat(ctx: FxContext):
    tensors = [t for t in ctx.args[0] if tuple(t.meta["val"].shape) != (0,)]  # torch skips 1-D empty tensors
    rank = len(ctx.out_shape())
    dtype = ctx.out_dtype()
    return ctx.emit(graph.ConcatOp, [[ctx.tensor(t, dtype) for t in tensors]],
                    {"axis": int_attr(axis(ctx.arg(1, "dim", 0), rank))})


@converts("aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int", "aten.chunk.default")
def _split(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    shape = graph.shape_of(x.type)
    target = str(ctx.node.target)
    dim = axis(ctx.arg(1 if target == "aten.unbind.int" else 2, "dim", 0), len(shape))
    sizes = [int(v.shape[dim]) if target != "aten.unbind.int" else 1 for v in ctx.val]
    parts = ctx.emit_all(graph.SplitOp, [x], {"axis": int_attr(dim), "sizes": int_array(sizes)})
    if target == "aten.unbind.int":
        parts = [ctx.emit(graph.SqueezeOp, [p], {"axes": int_array([dim])}) for p in parts]
    return parts


def _clamp(dim: int, start: int | None, end: int | None) -> tuple[int, int]:
    """torch slice bounds (None, negative, past the end) -> [0, dim] with start <= end."""
    start = 0 if start is None else start
    end = dim if end is None else end
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    return start, max(start, end)


@converts("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    shape = list(graph.shape_of(x.type))
    dim = axis(ctx.arg(1, "dim", 0), len(shape))
    step = int(ctx.arg(4, "step", 1))
    if step < 1:
        raise NodeError(f"slice step must be positive, got {step}")
    start, end = _clamp(shape[dim], ctx.arg(2, "start"), ctx.arg(3, "end"))
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], ends[dim], steps[dim] = start, end, step
    if (start, end, step) == (0, shape[dim], 1):
        return x
    props = {"starts": int_array(starts), "ends": int_array(ends), "steps": int_array(steps)}
    return ctx.emit(graph.SliceOp, [x], props)


@converts("aten.select.int", "aten.select_copy.int")
def _select(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    shape = list(graph.shape_of(x.type))
    dim = axis(ctx.args[1], len(shape))
    index = int(ctx.args[2])
    if not -shape[dim] <= index < shape[dim]:
        raise NodeError(f"index {index} is out of range for dim {dim} of size {shape[dim]}")
    index %= shape[dim]
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], ends[dim] = index, index + 1
    props = {"starts": int_array(starts), "ends": int_array(ends), "steps": int_array(steps)}
    y = ctx.emit(graph.SliceOp, [x], props)
    return ctx.emit(graph.SqueezeOp, [y], {"axes": int_array([dim])})


@converts("aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _unsqueeze(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    dim = axis(ctx.args[1], x.type.get_num_dims() + 1)
    return ctx.emit(graph.UnsqueezeOp, [x], {"axes": int_array([dim])})


@converts("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.squeeze_copy.dims")
def _squeeze(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    shape = graph.shape_of(x.type)
    dims = _dims(ctx, ctx.arg(1, "dim"), len(shape)) if len(ctx.args) > 1 else list(range(len(shape)))
    dims = [d for d in dims if shape[d] == 1]  # torch leaves a dim that is not 1 alone
    if not dims:
        return x
    return ctx.emit(graph.SqueezeOp, [x], {"axes": int_array(dims)})


@converts("aten.embedding.default")
def _embedding(ctx: FxContext):
    return ctx.emit(graph.GatherOp, [ctx.value(ctx.args[0]), ctx.value(ctx.args[1])], {"axis": int_attr(0)})


@converts("aten.index_select.default")
def _index_select(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    dim = axis(ctx.args[1], x.type.get_num_dims())
    return ctx.emit(graph.GatherOp, [x, ctx.value(ctx.args[2])], {"axis": int_attr(dim)})


@converts("aten.constant_pad_nd.default")
def _constant_pad(ctx: FxContext):
    x = ctx.value(ctx.args[0])
    rank = x.type.get_num_dims()
    pad = ints(ctx.args[1])
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch lists (begin, end) pairs from the last dim backwards
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if min(pad, default=0) < 0:
        raise NodeError("negative padding (cropping) is not supported")
    props = {"pads": int_array(begins + ends), "mode": StringAttr("constant"),
             "value": float_attr(float(ctx.arg(2, "value", 0.0)))}
    return ctx.emit(graph.PadOp, [x], props)


@converts("aten._scaled_dot_product_flash_attention_for_cpu.default", "aten.scaled_dot_product_attention.default")
def _sdpa(ctx: FxContext):
    """softmax(q k^T * scale + mask) v, for when a decomposition table leaves attention whole."""
    q, k, v = (ctx.value(a) for a in ctx.args[:3])
    flash = "flash" in str(ctx.node.target)
    mask = ctx.node.kwargs.get("attn_mask", None if flash else ctx.arg(3, "attn_mask"))
    causal = ctx.node.kwargs.get("is_causal", ctx.arg(4 if flash else 5, "is_causal", False))
    if ctx.node.kwargs.get("dropout_p", ctx.arg(3 if flash else 4, "dropout_p", 0.0)):
        raise NodeError("attention dropout is not supported")
    if ctx.node.kwargs.get("enable_gqa"):
        raise NodeError("grouped-query attention (enable_gqa) is not supported")
    qs, ks = graph.shape_of(q.type), graph.shape_of(k.type)
    scale = ctx.node.kwargs.get("scale") or 1.0 / np.sqrt(qs[-1])
    dtype = numpy_dtype(ctx.args[0].meta["val"].dtype)
    rank = len(ks)
    kt = ctx.emit(graph.TransposeOp, [k], {"perm": int_array([*range(rank - 2), rank - 1, rank - 2])})
    scores = ctx.emit(graph.MulOp, [ctx.emit(graph.MatMulOp, [q, kt]), ctx.constant(np.array(scale, dtype), "scale")])
    if causal:
        keep = np.tril(np.ones((qs[-2], ks[-2]), np.bool_))
        fill = ctx.constant(np.array(-np.inf, dtype), "neg_inf")
        scores = ctx.emit(graph.WhereOp, [ctx.constant(keep, "causal"), scores, fill])
    if mask is not None:
        m = ctx.value(mask)
        if dtypes.is_bool(m.type.element_type):
            scores = ctx.emit(graph.WhereOp, [m, scores, ctx.constant(np.array(-np.inf, dtype), "neg_inf")])
        else:
            scores = ctx.emit(graph.AddOp, [scores, m])
    att = ctx.emit(graph.SoftmaxOp, [scores], {"axis": int_attr(rank - 1)})
    out = ctx.emit(graph.MatMulOp, [att, v])
    return [out, None] if flash else out
