"""The reference interpreter of the graph level: what every `graph` op computes, in numpy.

This is the project's oracle. The frontend's imports are checked against onnxruntime through
it, and every later level (layout, fusion, tile, isa on the simulator) is checked against it,
so its kernels follow ONNX semantics as onnxruntime implements them and favour exactness over
speed -- while staying vectorized enough to run a whole resnet50 in seconds.

Kernels have the signature `kernel(op, *args)`: `args` are the op's operand values in operand
order (an absent optional operand is simply not passed) and attributes are read from the op.
`evaluate` runs one op and casts each result to the numpy dtype of its result type;
`run_function` / `run` interpret a `func.func` and free each intermediate after its last use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import reduce

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator, SymbolTable

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.blobs import attr_array
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.graph import argument_names, get_float, get_int, get_ints, get_str, has_flag
from ge.errors import InputError
from ge.runtime import layouts

Kernel = Callable[..., np.ndarray | tuple[np.ndarray, ...]]
KERNELS: dict[type[Operation], Kernel] = {}


def _kernel(*classes: type[Operation]) -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the kernel of `classes`."""

    def register(fn: Kernel) -> Kernel:
        for cls in classes:
            KERNELS[cls] = fn
        return fn

    return register


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def _out_shape(op: Operation, i: int = 0) -> tuple[int, ...]:
    """The logical shape of result `i` (the origin shape of a storage-formatted result)."""
    t = op.results[i].type
    assert isinstance(t, TensorType)
    return lt.logical_shape(t)


def _out_dtype(op: Operation, i: int = 0) -> np.dtype:
    t = op.results[i].type
    assert isinstance(t, TensorType)
    return numpy_dtype(t.element_type)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """Floats below f32 are computed in f32 (as onnxruntime does for f16), others as they are."""
    if dtype.kind == "f" and dtype.itemsize < 4:
        return np.dtype(np.float32)
    return dtype


def _attr(op: Operation, name: str, dtype: np.dtype, default: float | None = None):
    """A float attribute as a scalar of `dtype` (an np.float64 scalar would promote f32 arrays)."""
    return dtype.type(get_float(op.properties, name, default))


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C / ONNX), not toward -inf as numpy's //."""
    q = np.floor_divide(a, b)
    if a.dtype.kind == "u" and b.dtype.kind == "u":
        return q
    fix = (q * b != a) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


# --------------------------------------------------------------------------------------
# erf: fdlibm's s_erf.c (Sun Microsystems, 1993) vectorized, accurate to < 1 ulp in f64.
# --------------------------------------------------------------------------------------

_ERX = 8.45062911510467529297e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e01,
       -6.23753324503260060396e01, -1.62396669462573470355e02, -1.84605092906711035994e02,
       -8.12874355063065934246e01, -9.81432934416914548592e00)
_SA = (1.0, 1.96512716674392571292e01, 1.37657754143519042600e02, 4.34565877475229228821e02,
       6.45387271733267880336e02, 4.29008140027567833386e02, 1.08635005541779435134e02,
       6.57024977031928170135e00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e01,
       -1.60636384855821916062e02, -6.37566443368389627722e02, -1.02509513161107724954e03,
       -4.83519191608651397019e02)
_SB = (1.0, 3.03380607434824582924e01, 3.25792512996573918826e02, 1.53672958608443695994e03,
       3.19985821950859553908e03, 2.55305040643316442583e03, 4.74528541206955367215e02,
       -2.24409524465858183362e01)


def _poly(coeffs: Sequence[float], z: np.ndarray) -> np.ndarray:
    acc = np.full_like(z, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = acc * z + c
    return acc


def erf(x: np.ndarray) -> np.ndarray:
    """Gauss error function in float64 (numpy has none, and np.vectorize(math.erf) is slow)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = x.copy()  # NaN stays NaN: it falls in no range below
    small = ax < 0.84375
    if small.any():
        xs = x[small]
        z = xs * xs
        out[small] = xs + xs * (_poly(_PP, z) / _poly(_QQ, z))
    mid = (ax >= 0.84375) & (ax < 1.25)
    if mid.any():
        s = ax[mid] - 1.0
        out[mid] = np.copysign(_ERX + _poly(_PA, s) / _poly(_QA, s), x[mid])
    tail = (ax >= 1.25) & (ax < 6.0)
    if tail.any():
        at = ax[tail]
        s = 1.0 / (at * at)
        near = at < 1 / 0.35
        r = np.where(near, _poly(_RA, s), _poly(_RB, s))
        q = np.where(near, _poly(_SA, s), _poly(_SB, s))
        # z = at with its low 32 bits cleared, so that z*z is exact (fdlibm's trick)
        z = (at.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
        erfc = np.exp(-z * z - 0.5625) * np.exp((z - at) * (z + at) + r / q) / at
        out[tail] = np.copysign(1.0 - erfc, x[tail])
    big = ax >= 6.0
    out[big] = np.copysign(1.0, x[big])
    return out


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


@_kernel(g.ConstantOp)
def _constant(op: g.ConstantOp) -> np.ndarray:
    return attr_array(op.value)


@_kernel(lt.TransDataOp)
def _trans_data(op: lt.TransDataOp, x: np.ndarray) -> np.ndarray:
    return layouts.convert(x, op.input.type, op.output.type)


# Kernels that see storage arrays as they are; every other op on storage-formatted values
# computes on the origin tensors (see `evaluate`).
_STORAGE_KERNELS = (g.ConstantOp, lt.TransDataOp)


# --------------------------------------------------------------------------------------
# Unary elementwise
# --------------------------------------------------------------------------------------


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _gelu(op: Operation, x: np.ndarray) -> np.ndarray:
    xd = x.astype(np.float64)
    if get_str(op.properties, "approximate", "none") == "tanh":
        y = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
    else:
        y = 0.5 * xd * (1 + erf(xd / math.sqrt(2)))
    return y.astype(x.dtype)


def _clip(op: Operation, x: np.ndarray) -> np.ndarray:
    lo = get_float(op.properties, "min", -math.inf)
    hi = get_float(op.properties, "max", math.inf)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        lo = max(info.min, math.ceil(lo)) if lo > -math.inf else info.min
        hi = min(info.max, math.floor(hi)) if hi < math.inf else info.max
    lo_, hi_ = x.dtype.type(lo), x.dtype.type(hi)
    # ONNX: min is applied first, so min > max gives max everywhere
    return np.minimum(np.maximum(x, lo_), hi_)


def _elu(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, _attr(op, "alpha", x.dtype) * np.expm1(x))


def _celu(op: Operation, x: np.ndarray) -> np.ndarray:
    a = _attr(op, "alpha", x.dtype)
    return np.maximum(x, 0) + np.minimum(0, a * np.expm1(x / a))


def _selu(op: Operation, x: np.ndarray) -> np.ndarray:
    a, gamma = _attr(op, "alpha", x.dtype), _attr(op, "gamma", x.dtype)
    return gamma * np.where(x > 0, x, a * np.expm1(x))


def _hard_sigmoid(op: Operation, x: np.ndarray) -> np.ndarray:
    a, b = _attr(op, "alpha", x.dtype), _attr(op, "beta", x.dtype)
    return np.clip(a * x + b, 0, 1)


_UNARY: dict[type[Operation], Callable[[Operation, np.ndarray], np.ndarray]] = {
    g.ReluOp: lambda op, x: np.maximum(x, x.dtype.type(0)),
    g.SigmoidOp: lambda op, x: _sigmoid(x),
    g.TanhOp: lambda op, x: np.tanh(x),
    g.ErfOp: lambda op, x: erf(x).astype(x.dtype),
    g.SqrtOp: lambda op, x: np.sqrt(x),
    g.ExpOp: lambda op, x: np.exp(x),
    g.LogOp: lambda op, x: np.log(x),
    g.SinOp: lambda op, x: np.sin(x),
    g.CosOp: lambda op, x: np.cos(x),
    g.NegOp: lambda op, x: np.negative(x),
    g.AbsOp: lambda op, x: np.abs(x),
    g.SignOp: lambda op, x: np.sign(x),
    g.ReciprocalOp: lambda op, x: np.reciprocal(x),
    g.FloorOp: lambda op, x: np.floor(x),
    g.CeilOp: lambda op, x: np.ceil(x),
    g.RoundOp: lambda op, x: np.rint(x),  # half to even
    g.SoftplusOp: lambda op, x: np.logaddexp(x.dtype.type(0), x),  # log(1 + exp(x)) without overflow
    g.SoftsignOp: lambda op, x: x / (1 + np.abs(x)),
    g.HardSwishOp: lambda op, x: x * np.clip(x / 6 + x.dtype.type(0.5), 0, 1),
    g.IdentityOp: lambda op, x: x,
    g.DropoutOp: lambda op, x: x,
    g.NotOp: lambda op, x: np.logical_not(x),
    g.LeakyReluOp: lambda op, x: np.where(x >= 0, x, _attr(op, "alpha", x.dtype) * x),
    g.EluOp: _elu,
    g.CeluOp: _celu,
    g.SeluOp: _selu,
    g.HardSigmoidOp: _hard_sigmoid,
    g.ThresholdedReluOp: lambda op, x: np.where(x > _attr(op, "alpha", x.dtype), x, x.dtype.type(0)),
    g.GeluOp: _gelu,
    g.ClipOp: _clip,
}


def _unary(op: Operation, x: np.ndarray) -> np.ndarray:
    """The unary ops, from the `_UNARY` table; f16 goes through f32 as in onnxruntime."""
    fn = _UNARY[type(op)]
    if x.dtype == np.float16 and type(op) not in (g.IdentityOp, g.DropoutOp):
        return fn(op, x.astype(np.float32)).astype(np.float16)
    return fn(op, x)


_kernel(*_UNARY)(_unary)


@_kernel(g.CastOp)
def _cast(op: g.CastOp, x: np.ndarray) -> np.ndarray:
    """astype truncates float -> int toward zero and maps float -> bool to x != 0 (NaN -> True)."""
    return x.astype(_out_dtype(op))


# --------------------------------------------------------------------------------------
# Binary and variadic elementwise
# --------------------------------------------------------------------------------------


@_kernel(g.DivOp)
def _div(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _trunc_div(a, b)
    return np.divide(a, b)


@_kernel(g.ModOp)
def _mod(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b) if has_flag(op.properties, "fmod") else np.mod(a, b)


@_kernel(g.PowOp)
def _pow(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Result in the base's type; integer bases with fractional or negative exponents go
    through f64 and truncate, as onnxruntime's std::pow does."""
    if a.dtype.kind == "f":
        ct = _compute_dtype(a.dtype)
        return np.power(a.astype(ct, copy=False), b.astype(ct, copy=False))
    if b.dtype.kind == "f" or (b.dtype.kind == "i" and (b < 0).any()):
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b.astype(a.dtype, copy=False))


_BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    g.AddOp: np.add,
    g.SubOp: np.subtract,
    g.MulOp: np.multiply,
    g.EqualOp: np.equal,
    g.LessOp: np.less,
    g.LessOrEqualOp: np.less_equal,
    g.GreaterOp: np.greater,
    g.GreaterOrEqualOp: np.greater_equal,
    g.AndOp: np.logical_and,
    g.OrOp: np.logical_or,
    g.XorOp: np.logical_xor,
}


@_kernel(*_BINARY)
def _binary(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _BINARY[type(op)](a, b)


@_kernel(g.PReluOp)
def _prelu(op: Operation, x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * slope)


@_kernel(g.SumOp, g.MaxOp, g.MinOp, g.MeanOp)
def _variadic(op: Operation, *xs: np.ndarray) -> np.ndarray:
    """Sums accumulate in f32 for f16 inputs and round once."""
    fn = {g.MaxOp: np.maximum, g.MinOp: np.minimum}.get(type(op), np.add)
    if fn is np.add:
        xs = tuple(x.astype(_compute_dtype(x.dtype), copy=False) for x in xs)
    out = reduce(fn, xs)
    if isinstance(op, g.MeanOp):
        out = out / out.dtype.type(len(xs))
    return np.broadcast_to(out, _out_shape(op))


@_kernel(g.WhereOp)
def _where(op: Operation, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(c, a, b)


# --------------------------------------------------------------------------------------
# Sliding windows (conv and pools)
# --------------------------------------------------------------------------------------


def _pad_hw(x: np.ndarray, before: tuple[int, int], size: tuple[int, int], value) -> np.ndarray:
    """x placed at offset `before` in a (.., size[0], size[1]) canvas filled with `value`.

    The canvas is exactly what the output's windows read: larger than the explicitly padded
    input when ceil_mode adds a window, smaller when the end padding is never reached.
    """
    h, w = x.shape[-2:]
    if before == (0, 0) and size == (h, w):
        return x
    out = np.full((*x.shape[:-2], *size), value, dtype=x.dtype)
    hh, ww = min(h, size[0] - before[0]), min(w, size[1] - before[1])
    out[..., before[0]:before[0] + hh, before[1]:before[1] + ww] = x[..., :hh, :ww]
    return out


def _windows(xp: np.ndarray, kernel, strides, dilations, out_hw):
    """For every kernel offset (i, j), the strided view of `xp` that offset reads: loops over
    the kernel (a few iterations), never over output pixels."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[..., i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]


def _canvas(out_hw, kernel, strides, dilations) -> tuple[int, int]:
    return tuple((o - 1) * s + (k - 1) * d + 1 for o, k, s, d in zip(out_hw, kernel, strides, dilations))


@_kernel(g.Conv2dOp)
def _conv2d(op: g.Conv2dOp, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """im2col (one strided copy per kernel offset) + one batched matmul over the groups."""
    p = op.properties
    strides, pads, dilations = get_ints(p, "strides"), get_ints(p, "pads"), get_ints(p, "dilations")
    group = get_int(p, "group")
    ct = _compute_dtype(x.dtype)
    x, w = x.astype(ct, copy=False), w.astype(ct, copy=False)
    n, c = x.shape[:2]
    m, cg, kh, kw = w.shape
    out_hw = _out_shape(op)[2:]
    oh, ow = out_hw
    xp = _pad_hw(x, (pads[0], pads[1]), _canvas(out_hw, (kh, kw), strides, dilations), ct.type(0))
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=ct)
    for i, j, view in _windows(xp, (kh, kw), strides, dilations, out_hw):
        cols[:, :, i, j] = view
    cols = cols.reshape(n, group, cg * kh * kw, oh * ow)
    out = np.matmul(w.reshape(group, m // group, cg * kh * kw), cols).reshape(n, m, oh, ow)
    if b is not None:
        out += b.astype(ct, copy=False)[:, None, None]
    return out


def _pool_props(op: Operation):
    p = op.properties
    kernel, strides, pads = get_ints(p, "kernel_shape"), get_ints(p, "strides"), get_ints(p, "pads")
    dilations = get_ints(p, "dilations", (1, 1))
    return kernel, strides, pads, dilations, _out_shape(op)[2:]


@_kernel(g.MaxPoolOp)
def _max_pool(op: g.MaxPoolOp, x: np.ndarray) -> np.ndarray:
    """Padding (explicit, and what ceil_mode adds) is -inf, so it never wins."""
    kernel, strides, pads, dilations, out_hw = _pool_props(op)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad_hw(x, (pads[0], pads[1]), _canvas(out_hw, kernel, strides, dilations), low)
    out = None
    for _, _, view in _windows(xp, kernel, strides, dilations, out_hw):
        out = view.copy() if out is None else np.maximum(out, view, out=out)
    return out


@_kernel(g.AvgPoolOp)
def _avg_pool(op: g.AvgPoolOp, x: np.ndarray) -> np.ndarray:
    """Sum of the window / its count. count_include_pad counts the explicit pads but not the
    positions past them that ceil_mode adds; otherwise only real input elements count."""
    kernel, strides, pads, dilations, out_hw = _pool_props(op)
    ct = _compute_dtype(x.dtype)
    h, w = x.shape[2:]
    canvas = _canvas(out_hw, kernel, strides, dilations)
    xp = _pad_hw(x.astype(ct, copy=False), (pads[0], pads[1]), canvas, ct.type(0))
    if has_flag(op.properties, "count_include_pad"):
        ones = np.ones((h + pads[0] + pads[2], w + pads[1] + pads[3]), dtype=ct)
        mask = _pad_hw(ones, (0, 0), canvas, ct.type(0))
    else:
        mask = _pad_hw(np.ones((h, w), dtype=ct), (pads[0], pads[1]), canvas, ct.type(0))
    total = np.zeros(x.shape[:2] + tuple(out_hw), dtype=ct)
    count = np.zeros(out_hw, dtype=ct)
    for _, _, view in _windows(xp, kernel, strides, dilations, out_hw):
        total += view
    for _, _, view in _windows(mask, kernel, strides, dilations, out_hw):
        count += view
    return total / count


@_kernel(g.GlobalAvgPoolOp)
def _global_avg_pool(op: Operation, x: np.ndarray) -> np.ndarray:
    ct = _compute_dtype(x.dtype)
    return np.mean(x.astype(ct, copy=False), axis=tuple(range(2, x.ndim)), keepdims=True)


@_kernel(g.GlobalMaxPoolOp)
def _global_max_pool(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


def _channel(v: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast over dim 1 of a rank-`rank` tensor."""
    return v.reshape((1, -1) + (1,) * (rank - 2))


@_kernel(g.BatchNormOp)
def _batch_norm(op: Operation, x, scale, bias, mean, var) -> np.ndarray:
    """Folded as onnxruntime does: x * (scale / sqrt(var + eps)) + (bias - mean * that)."""
    ct = _compute_dtype(x.dtype)
    scale, bias, mean, var = (v.astype(ct, copy=False) for v in (scale, bias, mean, var))
    inv = scale / np.sqrt(var + _attr(op, "epsilon", ct))
    shift = bias - mean * inv
    return x.astype(ct, copy=False) * _channel(inv, x.ndim) + _channel(shift, x.ndim)


@_kernel(g.LayerNormOp)
def _layer_norm(op: Operation, x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None):
    """Mean and variance in at least f32 (ONNX's default stash_type), two-pass variance."""
    ct = np.promote_types(x.dtype, np.float32)
    axes = tuple(range(get_int(op.properties, "axis"), x.ndim))
    xc = x.astype(ct, copy=False)
    d = xc - xc.mean(axis=axes, keepdims=True)
    var = np.mean(d * d, axis=axes, keepdims=True)
    y = d / np.sqrt(var + _attr(op, "epsilon", ct)) * scale.astype(ct, copy=False)
    if bias is not None:
        y = y + bias.astype(ct, copy=False)
    return y


@_kernel(g.LrnOp)
def _lrn(op: Operation, x: np.ndarray) -> np.ndarray:
    """y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2),
    c + ceil((size-1)/2)]) ^ beta."""
    size = get_int(op.properties, "size")
    ct = np.promote_types(x.dtype, np.float32)
    alpha, beta, bias = (_attr(op, k, ct) for k in ("alpha", "beta", "bias"))
    xc = x.astype(ct, copy=False)
    sq = xc * xc
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    c = x.shape[1]
    padded = np.zeros((x.shape[0], c + lo + hi, *x.shape[2:]), dtype=ct)
    padded[:, lo:lo + c] = sq
    acc = np.zeros_like(sq)
    for k in range(size):
        acc += padded[:, k:k + c]
    return xc / (bias + alpha / ct.type(size) * acc) ** beta


@_kernel(g.SoftmaxOp)
def _softmax(op: Operation, x: np.ndarray) -> np.ndarray:
    axis = get_int(op.properties, "axis")
    xc = x.astype(_compute_dtype(x.dtype), copy=False)
    e = np.exp(xc - np.max(xc, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@_kernel(g.LogSoftmaxOp)
def _log_softmax(op: Operation, x: np.ndarray) -> np.ndarray:
    axis = get_int(op.properties, "axis")
    xc = x.astype(_compute_dtype(x.dtype), copy=False)
    shifted = xc - np.max(xc, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# --------------------------------------------------------------------------------------
# Matrix products
# --------------------------------------------------------------------------------------


@_kernel(g.MatMulOp)
def _matmul(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ct = _compute_dtype(a.dtype)
    return np.matmul(a.astype(ct, copy=False), b.astype(ct, copy=False))


@_kernel(g.GemmOp)
def _gemm(op: Operation, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    p = op.properties
    ct = _compute_dtype(a.dtype)
    a = a.astype(ct, copy=False).T if has_flag(p, "trans_a") else a.astype(ct, copy=False)
    b = b.astype(ct, copy=False).T if has_flag(p, "trans_b") else b.astype(ct, copy=False)
    y = np.matmul(a, b)
    alpha, beta = get_float(p, "alpha"), get_float(p, "beta")
    if alpha != 1.0:
        y = y * ct.type(alpha)
    if c is not None and beta != 0.0:
        cc = c.astype(ct, copy=False)
        y = y + (cc if beta == 1.0 else cc * ct.type(beta))
    return y


# --------------------------------------------------------------------------------------
# Quantized int8 ops (AscendQuant / AscendDequant and the int8 Cube ops). Integer sums are
# computed exactly in f64 (|sum| < K * 255 * 128 stays far below 2**53) and wrap to int32
# as onnxruntime's ConvInteger / MatMulInteger do.
# --------------------------------------------------------------------------------------


def quantize_values(x: np.ndarray, scale: float, offset: int) -> np.ndarray:
    """saturate_int8(round_half_even(x / scale) + offset), x / scale in f32 (onnxruntime's
    QuantizeLinear: MLAS divides in float and rounds with nearbyint)."""
    q = np.rint(x.astype(np.float32) / np.float32(scale)) + np.float32(offset)
    return np.clip(q, -128, 127).astype(np.int8)


@_kernel(g.QuantizeOp)
def _quantize(op: g.QuantizeOp, x: np.ndarray) -> np.ndarray:
    return quantize_values(x, get_float(op.properties, "scale"), get_int(op.properties, "offset"))


@_kernel(g.DequantizeOp)
def _dequantize(op: g.DequantizeOp, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(x - offset) * scale in f32; the integer difference is taken before the conversion
    (onnxruntime's DequantizeLinear), then rounded once to the result type."""
    p = op.properties
    centered = (x.astype(np.int64) - get_int(p, "offset")).astype(np.float32)
    s = scale.astype(np.float32)
    if s.ndim:
        axis = get_int(p, "axis")
        s = s.reshape((-1,) + (1,) * (x.ndim - 1 - axis))
    return centered * s


def _wrap_int32(acc: np.ndarray) -> np.ndarray:
    return np.rint(acc).astype(np.int64).astype(np.int32)


@_kernel(g.QuantConv2dOp)
def _quant_conv2d(op: g.QuantConv2dOp, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The float conv kernel on (x - input_offset) and w in f64: exact integer sums; padded
    positions then hold input_offset (a centered 0), as in ConvInteger / QLinearConv."""
    xc = x.astype(np.float64) - get_int(op.properties, "input_offset")
    acc = _conv2d(op, xc, w.astype(np.float64))
    if b is not None:
        acc = acc + b.astype(np.float64)[:, None, None]
    return _wrap_int32(acc)


@_kernel(g.QuantMatMulOp)
def _quant_matmul(op: g.QuantMatMulOp, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    acc = np.matmul(a.astype(np.float64) - get_int(op.properties, "lhs_offset"), b.astype(np.float64))
    if c is not None:
        acc = acc + c.astype(np.float64)
    return _wrap_int32(acc)


# --------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------


def _reduce_args(op: Operation) -> tuple[tuple[int, ...], bool]:
    return get_ints(op.properties, "axes"), has_flag(op.properties, "keepdims")


@_kernel(g.ReduceSumOp, g.ReduceSumSquareOp, g.ReduceL2Op, g.ReduceMeanOp, g.ReduceProdOp)
def _reduce_arith(op: Operation, x: np.ndarray) -> np.ndarray:
    """Sums accumulate in the compute dtype (f32 for f16); integer means truncate like C."""
    axes, keep = _reduce_args(op)
    ct = _compute_dtype(x.dtype)
    xc = x.astype(ct, copy=False)
    if isinstance(op, g.ReduceProdOp):
        return np.prod(xc, axis=axes, keepdims=keep, dtype=ct)
    if isinstance(op, g.ReduceSumSquareOp | g.ReduceL2Op):
        xc = xc * xc
    s = np.sum(xc, axis=axes, keepdims=keep, dtype=ct)
    if isinstance(op, g.ReduceL2Op):
        return np.sqrt(s)
    if isinstance(op, g.ReduceMeanOp):
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        if ct.kind in "iu":
            return _trunc_div(np.asarray(s), np.asarray(count, dtype=ct))
        return s / ct.type(count)
    return s


@_kernel(g.ReduceMaxOp, g.ReduceMinOp)
def _reduce_extreme(op: Operation, x: np.ndarray) -> np.ndarray:
    """An empty reduction yields -inf / +inf (the data type's min / max for integers)."""
    axes, keep = _reduce_args(op)
    is_max = isinstance(op, g.ReduceMaxOp)
    fn = np.max if is_max else np.min
    if all(x.shape[a] > 0 for a in axes):
        return fn(x, axis=axes, keepdims=keep)
    if x.dtype.kind == "f":
        init = -np.inf if is_max else np.inf
    elif x.dtype == np.bool_:
        init = not is_max
    else:
        init = np.iinfo(x.dtype).min if is_max else np.iinfo(x.dtype).max
    return fn(x, axis=axes, keepdims=keep, initial=init)


@_kernel(g.ArgMaxOp, g.ArgMinOp)
def _arg_reduce(op: Operation, x: np.ndarray) -> np.ndarray:
    p = op.properties
    axis = get_int(p, "axis")
    fn = np.argmax if isinstance(op, g.ArgMaxOp) else np.argmin
    if has_flag(p, "select_last_index"):
        idx = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis)
    else:
        idx = fn(x, axis=axis)
    return np.expand_dims(idx, axis) if has_flag(p, "keepdims") else idx


# --------------------------------------------------------------------------------------
# Shape and data movement
# --------------------------------------------------------------------------------------


@_kernel(g.ReshapeOp)
def _reshape(op: Operation, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """The result type already holds ONNX's resolved shape (0 and -1 applied)."""
    return x.reshape(_out_shape(op))


@_kernel(g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp)
def _to_result_shape(op: Operation, x: np.ndarray) -> np.ndarray:
    return x.reshape(_out_shape(op))


@_kernel(g.TransposeOp)
def _transpose(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, get_ints(op.properties, "perm"))


@_kernel(g.ConcatOp)
def _concat(op: Operation, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=get_int(op.properties, "axis"))


@_kernel(g.SplitOp)
def _split(op: Operation, x: np.ndarray) -> tuple[np.ndarray, ...]:
    sizes = get_ints(op.properties, "sizes")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=get_int(op.properties, "axis")))


@_kernel(g.SliceOp)
def _slice(op: Operation, x: np.ndarray) -> np.ndarray:
    """Ends are normalized to [-1, dim]; -1 means "through index 0", i.e. None in Python."""
    p = op.properties
    index = []
    for start, end, step in zip(get_ints(p, "starts"), get_ints(p, "ends"), get_ints(p, "steps")):
        index.append(slice(start, (None if step < 0 else 0) if end < 0 else end, step))
    return x[tuple(index)]


@_kernel(g.GatherOp)
def _gather(op: Operation, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """np.take wraps negative indices and raises on out-of-range ones (onnxruntime errors too)."""
    return np.take(x, indices.astype(np.int64, copy=False), axis=get_int(op.properties, "axis"))


@_kernel(g.ExpandOp)
def _expand(op: Operation, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, _out_shape(op)).copy()


@_kernel(g.TileOp)
def _tile(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.tile(x, get_ints(op.properties, "repeats"))


@_kernel(g.PadOp)
def _pad(op: Operation, x: np.ndarray) -> np.ndarray:
    """Negative pads crop first; then numpy's constant / reflect / edge / wrap modes are ONNX's."""
    p = op.properties
    pads = get_ints(p, "pads")
    rank = x.ndim
    begin, end = pads[:rank], pads[rank:]
    x = x[tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(zip(begin, end)))]
    width = [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
    mode = get_str(p, "mode", "constant")
    if mode == "constant":
        value = np.asarray(get_float(p, "value", 0.0)).astype(x.dtype)
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode=mode)


@_kernel(g.ShapeOp)
def _shape(op: Operation, x: np.ndarray) -> np.ndarray:
    start, end = get_int(op.properties, "start", 0), get_int(op.properties, "end", x.ndim)
    return np.array(x.shape[start:end], dtype=np.int64)


@_kernel(g.ConstantOfShapeOp)
def _constant_of_shape(op: g.ConstantOfShapeOp, shape: np.ndarray) -> np.ndarray:
    return np.full(_out_shape(op), attr_array(op.value).reshape(-1)[0], dtype=_out_dtype(op))


@_kernel(g.RangeOp)
def _range(op: Operation, start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Floats accumulate `value += delta` in their own type, as onnxruntime's loop does."""
    (n,) = _out_shape(op)
    dtype = start.dtype
    if dtype.kind == "f":
        steps = np.full(n, delta, dtype=dtype)
        if n:
            steps[0] = start
        return np.cumsum(steps, dtype=dtype)
    return start + np.arange(n, dtype=dtype) * delta


@_kernel(g.DepthToSpaceOp)
def _depth_to_space(op: Operation, x: np.ndarray) -> np.ndarray:
    b = get_int(op.properties, "blocksize")
    n, c, h, w = x.shape
    if get_str(op.properties, "mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@_kernel(g.SpaceToDepthOp)
def _space_to_depth(op: Operation, x: np.ndarray) -> np.ndarray:
    """DCR by default; a `mode = "CRD"` (newer ONNX opsets) keeps channels outermost."""
    b = get_int(op.properties, "blocksize")
    n, c, h, w = x.shape
    perm = (0, 1, 3, 5, 2, 4) if get_str(op.properties, "mode", "DCR") == "CRD" else (0, 3, 5, 1, 2, 4)
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(perm)
    return y.reshape(n, c * b * b, h // b, w // b)


@_kernel(g.TriluOp)
def _trilu(op: Operation, x: np.ndarray) -> np.ndarray:
    """Elements (i, j) of the last two dims with j - i >= k (upper) or j - i <= k (lower)."""
    k = get_int(op.properties, "k")
    return np.triu(x, k) if "upper" in op.properties else np.tril(x, k)


@_kernel(g.CustomOp)
def _custom(op: g.CustomOp, *args: np.ndarray) -> list[np.ndarray]:
    """An operator a plugin brings with a tile kernel: its declared numpy reference."""
    from ge.plugins import run_custom

    return run_custom(dict(op.properties), args)


# --------------------------------------------------------------------------------------
# Interpreter
# --------------------------------------------------------------------------------------


def evaluate(op: Operation, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run one op on `args` (its operand values in order); one array per result, each in its
    result type's dtype and shape.

    An op on storage-formatted values (after assign-layouts) computes on the origin tensors:
    its operands are unpacked from their formats and its results packed into theirs.
    """
    kernel = KERNELS.get(type(op))
    if kernel is None:
        raise NotImplementedError(f"no reference kernel for {op.name}")
    on_origin = not isinstance(op, _STORAGE_KERNELS) and any(
        lt.layout_of(v.type) is not None for v in (*op.operands, *op.results)
    )
    if on_origin:
        args = [layouts.to_origin(a, v.type) for a, v in zip(args, op.operands)]
    with np.errstate(all="ignore"):  # inf / nan are values here, as in onnxruntime
        out = kernel(op, *args)
    outs = out if isinstance(out, tuple | list) else (out,)
    if len(outs) != len(op.results):
        raise RuntimeError(
            f"reference kernel for {op.name} returned {len(outs)} values for {len(op.results)} results"
        )
    results = []
    for i, value in enumerate(outs):
        arr = np.asarray(value)
        dtype = _out_dtype(op, i)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        t = op.results[i].type
        if arr.shape != (_out_shape(op, i) if on_origin else tuple(t.get_shape())):
            raise RuntimeError(
                f"reference kernel for {op.name} produced shape {list(arr.shape)}, "
                f"but result #{i} has type {t}"
            )
        results.append(layouts.to_storage(arr, t) if on_origin else arr)
    return results


def _frees(ops: list[Operation]) -> list[list[SSAValue]]:
    """For each op index, the values whose last use is that op (or that nobody uses)."""
    last: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last[v] = i
    frees: list[list[SSAValue]] = [[] for _ in ops]
    for v, i in last.items():
        frees[i].append(v)
    for i, op in enumerate(ops):
        frees[i].extend(r for r in op.results if r not in last)
    return frees


def _bind(arg: SSAValue, value) -> np.ndarray:
    t = arg.type
    assert isinstance(t, TensorType)
    dtype, shape = numpy_dtype(t.element_type), tuple(t.get_shape())
    arr = np.asarray(value)
    if arr.shape != shape:
        raise InputError(f"input %{arg.name_hint or arg.index} has type {t} but got shape {list(arr.shape)}")
    if arr.dtype != dtype:
        if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
            raise InputError(f"input %{arg.name_hint or arg.index} has type {t} but got dtype {arr.dtype}")
        arr = arr.astype(dtype)
    return arr


def run_function(func_op: func.FuncOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Interpret `func_op` on `inputs` (in argument order) and return what it returns."""
    block = func_op.body.block
    if len(inputs) != len(block.args):
        raise InputError(f"@{func_op.sym_name.data} takes {len(block.args)} inputs, got {len(inputs)}")
    return run_block(block, [_bind(a, v) for a, v in zip(block.args, inputs)])


def run_block(block: Block, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Interpret a single-block body up to its terminator (func.return, fusion.yield, ...)
    and return the terminator's operand values.

    Each intermediate is dropped right after its last use, so peak memory follows the live
    set of the graph rather than its total size.
    """
    env: dict[SSAValue, np.ndarray] = dict(zip(block.args, inputs))
    ops = list(block.ops)
    frees = _frees(ops)
    for op, dead in zip(ops, frees):
        args = [env[v] for v in op.operands]
        if op.has_trait(IsTerminator):
            return args
        if isinstance(op, func.CallOp):
            callee = SymbolTable.lookup_symbol(op, op.callee)
            if not isinstance(callee, func.FuncOp):
                raise ValueError(f"func.call: no function named {op.callee}")
            results = run_function(callee, args)
        elif op.regions and type(op) not in KERNELS:
            # Region ops whose semantics is their body (fusion.group): run the body.
            results = run_block(op.regions[0].block, args)
        else:
            results = evaluate(op, args)
        env.update(zip(op.results, results))
        for v in dead:
            env.pop(v, None)
    raise ValueError("the block has no terminator")


def find_function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(f"the module has no function @{name}")


def run(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    entry: str = "main",
) -> list[np.ndarray]:
    """Run function `entry` of `module`; inputs as a list in argument order, or a dict keyed
    by input names (the ONNX names the importer records as `ge.name`, else the `%names`)."""
    f = find_function(module, entry)
    if isinstance(inputs, Mapping):
        names = argument_names(f)
        missing = [n for n in names if n not in inputs]
        extra = sorted(set(inputs) - set(names))
        if missing or extra:
            raise InputError(f"@{entry} takes inputs {names}; missing {missing}, unexpected {extra}")
        inputs = [inputs[n] for n in names]
    return run_function(f, list(inputs))
