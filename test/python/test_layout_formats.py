"""The storage formats of the layout dialect: shapes (dialects/layout.py) and data
(runtime/layouts.py) against a direct element-by-element construction from the format
definitions, round trips through `layout.trans_data`, and the type checks' messages."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i8
from xdsl.utils.exceptions import VerifyException

from ge.dialects import dtypes
from ge.dialects import layout as lt
from ge.dialects.layout import Format, FormatAttr
from ge.ir import parse_module
from ge.runtime import layouts
from ge.runtime.reference import run


def _type(elem, fmt: Format, origin: Format, shape) -> TensorType:
    return lt.encode(TensorType(elem, shape), fmt, origin)


def _data(shape, elem, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = dtypes.numpy_dtype(elem)
    if dtype.kind == "i":
        return rng.integers(-100, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) + 0.5).astype(dtype)  # no element is exactly 0


# Direct constructions: one element at a time, straight from the definitions (ascend.md §5).


def _nc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, -(-c // c0), h, w, c0), x.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        out[ni, ci // c0, hi, wi, ci % c0] = x[ni, ci, hi, wi]
    return out


def _fractal_z(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    c1, n1 = -(-c // c0), -(-n // 16)
    out = np.zeros((c1 * h * w, n1, 16, c0), x.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        out[(ci // c0) * h * w + hi * w + wi, ni // 16, ni % 16, ci % c0] = x[ni, ci, hi, wi]
    return out


def _fractal_nz(x: np.ndarray, c0: int) -> np.ndarray:
    *batch, m, n = x.shape
    out = np.zeros((*batch, -(-n // c0), -(-m // 16), 16, c0), x.dtype)
    for b in itertools.product(*(range(d) for d in batch)):
        for mi, ni in itertools.product(range(m), range(n)):
            out[(*b, ni // c0, mi // 16, mi % 16, ni % c0)] = x[(*b, mi, ni)]
    return out


C0 = {f16: 16, f32: 8, i8: 32}


def test_c0_is_32_bytes_per_element():
    assert {e: lt.c0(e) for e in C0} == C0


@pytest.mark.parametrize("elem", [f16, f32, i8])
@pytest.mark.parametrize("shape", [(2, 16, 3, 4), (1, 20, 5, 3), (2, 3, 2, 2), (1, 33, 1, 1)])
def test_nc1hwc0_matches_definition(elem, shape):
    x = _data(shape, elem)
    t = _type(elem, Format.NC1HWC0, Format.NCHW, shape)
    want = _nc1hwc0(x, C0[elem])
    assert t.get_shape() == want.shape
    got = layouts.to_storage(x, t)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(layouts.to_origin(got, t), x)


def test_nc1hwc0_padding_is_zero_and_c1_rounds_up():
    x = _data((1, 20, 2, 2), f16)
    t = _type(f16, Format.NC1HWC0, Format.NCHW, x.shape)
    assert t.get_shape() == (1, 2, 2, 2, 16)  # C1 = ceil(20 / 16)
    s = layouts.to_storage(x, t)
    assert np.all(s[:, 1, :, :, 4:] == 0) and np.all(s[:, 1, :, :, :4] != 0)


def test_int8_c0_is_32():
    x = _data((1, 40, 2, 3), i8)
    t = _type(i8, Format.NC1HWC0, Format.NCHW, x.shape)
    assert t.get_shape() == (1, 2, 2, 3, 32)
    np.testing.assert_array_equal(layouts.to_storage(x, t), _nc1hwc0(x, 32))
    w = _type(i8, Format.FRACTAL_Z, Format.NCHW, (20, 40, 3, 3))
    assert w.get_shape() == (2 * 3 * 3, 2, 16, 32)


def test_nc1hwc0_from_nhwc_origin():
    x = _data((2, 3, 4, 20), f16)  # N H W C
    t = _type(f16, Format.NC1HWC0, Format.NHWC, x.shape)
    want = _nc1hwc0(x.transpose(0, 3, 1, 2), 16)
    np.testing.assert_array_equal(layouts.to_storage(x, t), want)
    np.testing.assert_array_equal(layouts.to_origin(want, t), x)


def test_nc1hwc0_lower_rank_origin_is_right_aligned():
    x = _data((20, 1, 1), f32)  # broadcasts as [1, 20, 1, 1]
    t = _type(f32, Format.NC1HWC0, Format.NCHW, x.shape)
    assert t.get_shape() == (1, 3, 1, 1, 8)
    np.testing.assert_array_equal(layouts.to_storage(x, t), _nc1hwc0(x.reshape(1, 20, 1, 1), 8))
    np.testing.assert_array_equal(layouts.to_origin(layouts.to_storage(x, t), t), x)


@pytest.mark.parametrize("elem", [f16, f32, i8])
@pytest.mark.parametrize("shape", [(16, 16, 1, 1), (20, 3, 3, 3), (5, 40, 2, 1), (33, 17, 1, 2)])
def test_fractal_z_matches_definition(elem, shape):
    x = _data(shape, elem)
    t = _type(elem, Format.FRACTAL_Z, Format.NCHW, shape)
    want = _fractal_z(x, C0[elem])
    assert t.get_shape() == want.shape
    np.testing.assert_array_equal(layouts.to_storage(x, t), want)
    np.testing.assert_array_equal(layouts.to_origin(want, t), x)


def test_fractal_z_documented_example():
    # ascend.md §5: HWCN (2, 2, 32, 32) fp16 -> (8, 2, 16, 16)
    t = _type(f16, Format.FRACTAL_Z, Format.NCHW, (32, 32, 2, 2))
    assert t.get_shape() == (8, 2, 16, 16)


@pytest.mark.parametrize("elem", [f16, f32, i8])
@pytest.mark.parametrize("shape", [(16, 16), (20, 30), (1, 2048), (3, 17, 5), (2, 2, 40, 9)])
def test_fractal_nz_matches_definition(elem, shape):
    x = _data(shape, elem)
    t = _type(elem, Format.FRACTAL_NZ, Format.ND, shape)
    want = _fractal_nz(x, C0[elem])
    assert t.get_shape() == want.shape
    np.testing.assert_array_equal(layouts.to_storage(x, t), want)
    np.testing.assert_array_equal(layouts.to_origin(want, t), x)


def test_plain_permutations():
    x = _data((2, 3, 4, 5), f32)
    t = _type(f32, Format.NHWC, Format.NCHW, x.shape)
    assert t.get_shape() == (2, 4, 5, 3)
    np.testing.assert_array_equal(layouts.to_storage(x, t), x.transpose(0, 2, 3, 1))
    back = _type(f32, Format.NCHW, Format.NHWC, (2, 4, 5, 3))
    np.testing.assert_array_equal(layouts.to_storage(x.transpose(0, 2, 3, 1), back), x.transpose(0, 2, 3, 1).transpose(0, 3, 1, 2))


def test_convert_between_two_storage_formats():
    x = _data((1, 20, 3, 3), f16)
    a = _type(f16, Format.NC1HWC0, Format.NCHW, x.shape)
    b = _type(f16, Format.FRACTAL_NZ, Format.ND, x.shape)
    np.testing.assert_array_equal(layouts.convert(layouts.to_storage(x, a), a, b), _fractal_nz(x, 16))


TRANS_ROUND_TRIP = """
func.func @main(%x: tensor<2x20x3x3xf16>, %w: tensor<20x3x2x2xf16>, %m: tensor<3x20x30xf16>)
    -> (tensor<2x20x3x3xf16>, tensor<20x3x2x2xf16>, tensor<3x20x30xf16>) {
  %a = layout.trans_data %x : tensor<2x20x3x3xf16> to tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>
  %b = layout.trans_data %a : tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>> to tensor<2x3x3x20xf16, #layout.fmt<NHWC, origin NCHW [2, 20, 3, 3]>>
  %c = layout.trans_data %b : tensor<2x3x3x20xf16, #layout.fmt<NHWC, origin NCHW [2, 20, 3, 3]>> to tensor<2x20x3x3xf16>
  %d = layout.trans_data %w : tensor<20x3x2x2xf16> to tensor<4x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 2, 2]>>
  %e = layout.trans_data %d : tensor<4x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 2, 2]>> to tensor<20x3x2x2xf16>
  %f = layout.trans_data %m : tensor<3x20x30xf16> to tensor<3x2x2x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [3, 20, 30]>>
  %g = layout.trans_data %f : tensor<3x2x2x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [3, 20, 30]>> to tensor<3x20x30xf16>
  func.return %c, %e, %g : tensor<2x20x3x3xf16>, tensor<20x3x2x2xf16>, tensor<3x20x30xf16>
}
"""


def test_trans_data_round_trips_through_the_interpreter():
    module = parse_module(TRANS_ROUND_TRIP)
    inputs = [_data((2, 20, 3, 3), f16, 1), _data((20, 3, 2, 2), f16, 2), _data((3, 20, 30), f16, 3)]
    for got, want in zip(run(module, inputs), inputs):
        np.testing.assert_array_equal(got, want)


def test_graph_ops_run_on_storage_formats():
    text = """
func.func @main(%x: tensor<1x20x4x4xf32>, %w: tensor<12x20x3x3xf32>) -> tensor<1x12x2x2xf32> {
  %a = layout.trans_data %x : tensor<1x20x4x4xf32> to tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %b = layout.trans_data %w : tensor<12x20x3x3xf32> to tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [12, 20, 3, 3]>>
  %y = graph.conv2d %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [12, 20, 3, 3]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 12, 2, 2]>>
  %r = graph.sigmoid %y : tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 12, 2, 2]>>
  %o = layout.trans_data %r : tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 12, 2, 2]>> to tensor<1x12x2x2xf32>
  func.return %o : tensor<1x12x2x2xf32>
}
"""
    module = parse_module(text)
    x, w = _data((1, 20, 4, 4), f32, 1), _data((12, 20, 3, 3), f32, 2)
    plain = parse_module("""
func.func @main(%x: tensor<1x20x4x4xf32>, %w: tensor<12x20x3x3xf32>) -> tensor<1x12x2x2xf32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x20x4x4xf32>, tensor<12x20x3x3xf32>) -> tensor<1x12x2x2xf32>
  %r = graph.sigmoid %y : tensor<1x12x2x2xf32>
  func.return %r : tensor<1x12x2x2xf32>
}
""")
    np.testing.assert_array_equal(run(module, [x, w])[0], run(plain, [x, w])[0])


def test_check_type_names_the_wrong_dim():
    bad = TensorType(f16, (1, 5, 4, 4, 16), FormatAttr(Format.NC1HWC0, Format.NCHW, (1, 64, 4, 4)))
    with pytest.raises(VerifyException, match=r"dim C1 is 5, but C1 = ceil\(C / C0\) = ceil\(64 / 16\) = 4"):
        lt.check_type(bad)
    pad = TensorType(f16, (1, 4, 4, 4, 8), FormatAttr(Format.NC1HWC0, Format.NCHW, (1, 64, 4, 4)))
    with pytest.raises(VerifyException, match=r"dim C1 is 4, but|dim C0 is 8"):
        lt.check_type(pad)


def test_format_rank_mismatch_is_refused():
    with pytest.raises(VerifyException, match="FRACTAL_Z of NCHW \\[64, 3\\]: origin format NCHW needs rank 4"):
        FormatAttr(Format.FRACTAL_Z, Format.NCHW, (64, 3))
    with pytest.raises(VerifyException, match="FRACTAL_NZ needs an origin of rank >= 2"):
        FormatAttr(Format.FRACTAL_NZ, Format.ND, (64,))
    with pytest.raises(VerifyException, match="NC1HWC0 needs an NCHW or NHWC origin"):
        FormatAttr(Format.NC1HWC0, Format.ND, (1, 64, 4, 4))
