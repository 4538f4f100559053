"""What storage formats mean, in numpy: origin tensor <-> storage array for every format of
`ge.dialects.layout`, and so what `layout.trans_data` computes.

`to_storage` follows the format definitions of ascend.md §5 literally (pad, reshape,
transpose); `to_origin` is its inverse and drops the padding. Padding is always zero.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from ge.dialects import layout as lt
from ge.dialects.layout import FRACTAL, Format


def _pad_to(x: np.ndarray, axis: int, multiple: int) -> np.ndarray:
    extra = -x.shape[axis] % multiple
    if not extra:
        return x
    width = [(0, 0)] * x.ndim
    width[axis] = (0, extra)
    return np.pad(x, width)


def _as_nchw(x: np.ndarray, origin: Format) -> np.ndarray:
    """The origin tensor as rank-4 NCHW (lower ranks aligned to the right)."""
    x = x.reshape((1,) * (4 - x.ndim) + x.shape)
    return x.transpose(0, 3, 1, 2) if origin == Format.NHWC else x


def _from_nchw(x: np.ndarray, origin: Format, shape: tuple[int, ...]) -> np.ndarray:
    if origin == Format.NHWC:
        x = x.transpose(0, 2, 3, 1)
    return x.reshape(shape)


def to_storage(x: np.ndarray, t: TensorType) -> np.ndarray:
    """The storage array of type `t` holding the origin tensor `x`."""
    enc = lt.layout_of(t)
    if enc is None:
        return x
    fmt, origin, k = enc.fmt, enc.origin_fmt, lt.c0(t.element_type)
    if fmt in lt.PLAIN_FORMATS:
        perm = lt.plain_perm(fmt, origin)
        out = x if perm is None else x.transpose(perm)
    elif fmt == Format.NC1HWC0:  # pad C, reshape [N, C1, C0, H, W], transpose [0, 1, 3, 4, 2]
        y = _pad_to(_as_nchw(x, origin), 1, k)
        n, _, h, w = y.shape
        out = y.reshape(n, -1, k, h, w).transpose(0, 1, 3, 4, 2)
    elif fmt == Format.FRACTAL_Z:  # pad N and C, reshape [N1, N0, C1, C0, H, W], transpose, merge C1 H W
        y = _pad_to(_pad_to(_as_nchw(x, origin), 0, FRACTAL), 1, k)
        _, _, h, w = y.shape
        n1, c1 = y.shape[0] // FRACTAL, y.shape[1] // k
        out = y.reshape(n1, FRACTAL, c1, k, h, w).transpose(2, 4, 5, 0, 1, 3).reshape(c1 * h * w, n1, FRACTAL, k)
    else:  # FRACTAL_NZ: pad M and N, reshape [..., M1, M0, N1, C0], transpose [..., N1, M1, M0, C0]
        assert fmt == Format.FRACTAL_NZ
        y = _pad_to(_pad_to(x, -2, FRACTAL), -1, k)
        *batch, m, n = y.shape
        b = len(batch)
        out = y.reshape(*batch, m // FRACTAL, FRACTAL, n // k, k).transpose(*range(b), b + 2, b, b + 1, b + 3)
    return np.ascontiguousarray(out)


def to_origin(x: np.ndarray, t: TensorType) -> np.ndarray:
    """The origin tensor held by the storage array `x` of type `t` (padding dropped)."""
    enc = lt.layout_of(t)
    if enc is None:
        return x
    fmt, origin, shape, k = enc.fmt, enc.origin_fmt, enc.shape, lt.c0(t.element_type)
    if fmt in lt.PLAIN_FORMATS:
        perm = lt.plain_perm(fmt, origin)
        return x if perm is None else x.transpose(np.argsort(perm))
    if fmt == Format.NC1HWC0:
        n, c, h, w = lt.nchw_dims(origin, shape)
        y = x.transpose(0, 1, 4, 2, 3).reshape(n, -1, h, w)[:, :c]
        return np.ascontiguousarray(_from_nchw(y, origin, shape))
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = lt.nchw_dims(origin, shape)
        _, n1, n0, _ = x.shape
        c1 = x.shape[0] // (h * w)
        y = x.reshape(c1, h, w, n1, n0, k).transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * k, h, w)[:n, :c]
        return np.ascontiguousarray(_from_nchw(y, origin, shape))
    assert fmt == Format.FRACTAL_NZ
    *batch, m, n = shape
    b = len(batch)
    *_, n1, m1, m0, _ = x.shape
    y = x.transpose(*range(b), b + 1, b + 2, b, b + 3).reshape(*batch, m1 * m0, n1 * k)
    return np.ascontiguousarray(y[..., :m, :n])


def convert(x: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray:
    """`layout.trans_data`: the storage array of `dst` holding what `x` (of `src`) holds."""
    return to_storage(to_origin(x, src), dst)
