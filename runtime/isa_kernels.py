"""What each `isa` instruction computes, in numpy, on the elements it addresses.

The simulator (runtime/simulator.py) gathers an instruction's operands from memory as
arrays -- a vector operand as [repeat, mask], a move as its rectangle -- and calls these
functions; tests call them directly against plain numpy. Storage types are what the
buffers hold (f16, f32, i8, ...); arithmetic on f16 runs in f32 and rounds once to f16 when
stored (each f16 operation is one correctly rounded step, as the Vector unit computes),
reductions and the Cube accumulate in f32.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The type arithmetic on `dtype` storage runs in: f32 for f16, the type itself otherwise."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(compute_dtype(x.dtype), copy=False)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


def _rec(x: np.ndarray) -> np.ndarray:
    return 1 / x


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


def _erf(x: np.ndarray) -> np.ndarray:
    from ge.runtime.reference import erf  # imported when used: loading a model stays light

    return erf(x).astype(x.dtype)


BINARY = {
    "isa.vadd": np.add, "isa.vsub": np.subtract, "isa.vmul": np.multiply, "isa.vdiv": np.divide,
    "isa.vaddrelu": lambda a, b: _relu(np.add(a, b)),
    "isa.vmax": np.maximum, "isa.vmin": np.minimum, "isa.vand": np.bitwise_and, "isa.vor": np.bitwise_or,
}
UNARY = {
    "isa.vexp": np.exp, "isa.vln": np.log, "isa.vabs": np.abs, "isa.vsqrt": np.sqrt, "isa.vrsqrt": _rsqrt,
    "isa.vrec": _rec, "isa.vrelu": _relu, "isa.vtanh": np.tanh, "isa.verf": _erf, "isa.vnot": np.invert,
}
SCALAR = {"isa.vadds": np.add, "isa.vmuls": np.multiply, "isa.vmaxs": np.maximum, "isa.vmins": np.minimum}
REDUCE = {"isa.vreduce_sum": np.sum, "isa.vreduce_max": np.max, "isa.vreduce_min": np.min}
GROUP_REDUCE = {"isa.vcgadd": np.sum, "isa.vcgmax": np.max, "isa.vcgmin": np.min}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}
ROUND = {"rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
         "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x)}  # CAST_ROUND: half away from zero


def binary(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """dst = a <op> b (result in the compute type; the caller stores it)."""
    with np.errstate(all="ignore"):
        return BINARY[name](_wide(a), _wide(b))


def unary(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return UNARY[name](_wide(x))


def scalar(name: str, x: np.ndarray, value: float) -> np.ndarray:
    w = _wide(x)
    with np.errstate(all="ignore"):
        return SCALAR[name](w, np.asarray(value).astype(w.dtype))


def reduce(name: str, x: np.ndarray) -> np.ndarray:
    """One result per row of x = [repeat, mask]; f16 accumulates in f32."""
    return REDUCE[name](_wide(x), axis=-1)


def group_reduce(name: str, x: np.ndarray, epb: int) -> np.ndarray:
    """One result per block of each row of x = [repeat, mask] (blocks of `epb` elements,
    the last one partial when the mask ends inside it): [repeat, ceil(mask / epb)]; f16
    accumulates in f32."""
    w, fn = _wide(x), GROUP_REDUCE[name]
    full, rest = divmod(w.shape[-1], epb)
    parts = [fn(w[:, :full * epb].reshape(w.shape[0], full, epb), axis=-1)] if full else []
    if rest:
        parts.append(fn(w[:, full * epb:], axis=-1, keepdims=True))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def convert(x: np.ndarray, dtype: np.dtype, mode: str | None = None) -> np.ndarray:
    """x as `dtype`: round to nearest even between floats, `mode` (default rint) from
    float to integer, saturating at the integer type's range."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        with np.errstate(all="ignore"):
            r = ROUND[mode or "rint"](x.astype(np.float64))
        return np.clip(np.nan_to_num(r), info.min, info.max).astype(dtype)
    return x.astype(dtype)


def compare(mode: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 where a <mode> b holds, 0 elsewhere, as int8."""
    return COMPARE[mode](_wide(a), _wide(b)).astype(np.int8)


def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond != 0, a, b)


# --------------------------------------------------------------------------------------
# Cube
# --------------------------------------------------------------------------------------


def zz_to_matrix(a: np.ndarray, m: int, k: int, m0: int, k0: int) -> np.ndarray:
    """L0A's ZZ fractals [m/m0, k/k0, m0, k0] (flat) -> the m x k matrix."""
    return a.reshape(m // m0, k // k0, m0, k0).transpose(0, 2, 1, 3).reshape(m, k)


def matrix_to_zz(x: np.ndarray, m0: int, k0: int) -> np.ndarray:
    m, k = x.shape
    return x.reshape(m // m0, m0, k // k0, k0).transpose(0, 2, 1, 3).reshape(-1)


def zn_to_matrix(b: np.ndarray, k: int, n: int, k0: int, n0: int) -> np.ndarray:
    """L0B's ZN fractals [k/k0, n/n0, n0, k0] (flat) -> the k x n matrix."""
    return b.reshape(k // k0, n // n0, n0, k0).transpose(0, 3, 1, 2).reshape(k, n)


def matrix_to_zn(x: np.ndarray, k0: int, n0: int) -> np.ndarray:
    k, n = x.shape
    return x.reshape(k // k0, k0, n // n0, n0).transpose(0, 2, 3, 1).reshape(-1)


def nz_to_matrix(c: np.ndarray, m: int, n: int, m0: int, n0: int) -> np.ndarray:
    """L0C's NZ fractals [n/n0, m/m0, m0, n0] (flat) -> the m x n matrix."""
    return c.reshape(n // n0, m // m0, m0, n0).transpose(1, 2, 0, 3).reshape(m, n)


def matrix_to_nz(x: np.ndarray, m0: int, n0: int) -> np.ndarray:
    m, n = x.shape
    return x.reshape(m // m0, m0, n // n0, n0).transpose(2, 0, 1, 3).reshape(-1)


def mmad(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, mkn: tuple[int, int, int],
         fractal: tuple[int, int, int]) -> np.ndarray:
    """The new flat NZ contents of C: A x B (+ C when `c` is given), in C's type. f16 x f16
    products are exact in f32, so the f16 product is computed in f32 (numpy has no fast
    f16 matmul); i8 inputs accumulate in i32."""
    (m, k, n), (m0, k0, n0) = mkn, fractal
    acc = np.dtype(np.int32) if a.dtype.kind in "iu" else np.dtype(np.float32)
    prod = zz_to_matrix(a, m, k, m0, k0).astype(acc) @ zn_to_matrix(b, k, n, k0, n0).astype(acc)
    out = matrix_to_nz(prod, m0, n0)
    if c is not None:
        out = c.astype(acc, copy=False) + out
    return out


def img2col(fm: np.ndarray, sizes: tuple[int, int], m: int, k: int, c: int, h: int, fractal: tuple[int, int],
            **params) -> np.ndarray:
    """Load3D: the flat ZZ contents of the A tile (see `isa.img2col`); `fm` is the feature
    map without its N dim, `params` those of the op (kernel, strides, ...). Which element
    lands where depends only on the shapes and positions, so it is computed once per
    (shapes, m, k, c, h) -- a conv's tiles repeat on every block and run -- and then the
    tile is one gather."""
    key = (fm.shape, tuple(sizes), m, k, c, h, tuple(fractal),
           tuple((n, tuple(v) if isinstance(v, list | tuple) else v) for n, v in params.items()))
    index = _IMG2COL_INDEX.get(key)
    if index is None:
        index = _IMG2COL_INDEX[key] = _img2col_index(fm.shape, sizes, m, k, c, h, fractal, params)
        if len(_IMG2COL_INDEX) > _IMG2COL_CACHED:
            _IMG2COL_INDEX.popitem(last=False)
    else:
        _IMG2COL_INDEX.move_to_end(key)
    flat, zero = index
    out = fm.reshape(-1)[flat]
    if zero is not None:
        out[zero] = 0
    return out


_IMG2COL_INDEX: OrderedDict = OrderedDict()  # the most recent tiles' gather indices
_IMG2COL_CACHED = 256


def _img2col_index(shape: tuple[int, ...], sizes, m, k, c, h, fractal, params) -> tuple[np.ndarray, np.ndarray | None]:
    """(the flat feature-map element of each A-tile element, where the tile gets 0 instead):
    the logical img2col (the tile level's semantics) applied to element numbers."""
    from ge.runtime.tile_interp import img2col as img2col_logical  # imported when used

    count = math.prod(shape)
    ids = np.arange(1, count + 1, dtype=np.int32 if count < 2**31 - 1 else np.int64).reshape(shape)
    pos = matrix_to_zz(img2col_logical(ids[None], sizes, m, k, c, h, **params), *fractal)
    zero = pos == 0
    return np.maximum(pos - 1, 0), (zero if zero.any() else None)


def broadcast_ub_to_l0c(src: np.ndarray, rows: int = 16) -> np.ndarray:
    """isa.broadcast_ub_to_l0c: `src` [count, len * 16] (each block's 16-element groups) ->
    [count, len * rows * 16], every 16-element group repeated as the `rows` rows of its
    fractal (row r, column j of fractal l = group l's element j)."""
    count, width = src.shape
    n = width // 16
    return np.broadcast_to(src.reshape(count, n, 1, 16), (count, n, rows, 16)).reshape(count, n * rows * 16)


def fixpipe(x: np.ndarray, dtype: np.dtype, relu: bool) -> np.ndarray:
    """The accumulator on its way out of L0C: optional ReLU, then the conversion."""
    if relu:
        x = np.maximum(x, np.zeros((), x.dtype))
    return convert(x, dtype)


def fixpipe_quant(acc: np.ndarray, scale: np.ndarray | float, props: dict, bias: np.ndarray | None = None) -> np.ndarray:
    """FixPipe's quant mode (isa.FixpipeOp) on an i32 accumulator: the i32 bias added
    (wrapping, as graph.add on i32), graph.dequantize (f32(acc) * scale in f32, rounded to f16
    unless `deq_f32`), ReLU, and for REQ8 / VREQ8 graph.quantize -- the reference's kernels,
    so the roundings are the graph's."""
    from ge.runtime.reference import quantize_values

    if bias is not None:
        acc = acc + bias
    y = acc.astype(np.float32) * np.asarray(scale, np.float32)
    requant = props["quant_pre"].endswith("REQ8")
    if not (requant and props.get("deq_f32")):
        y = y.astype(np.float16)
    if props.get("relu"):
        y = np.maximum(y, np.zeros((), y.dtype))
    return quantize_values(y, props["quant_scale"], props.get("quant_offset", 0)) if requant else y
