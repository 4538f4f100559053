"""Every isa instruction against numpy: each test builds a one-instruction kernel (UB
buffers loaded from GM, the instruction, results stored back), runs it through
plan-local-memory, insert-sync and the simulator, and compares with the operation written
out in numpy from the op's documented addressing (ge/dialects/isa.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    f16,
    f32,
    f64,
    i1,
    i64,
)

from ge.dialects import isa
from ge.dialects.dtypes import element_type
from ge.dialects.isa import MemSpace
from ge.ir import run_passes
from ge.lowering.isa_builder import IsaBuilder
from ge.runtime import isa_kernels as K
from ge.runtime.simulator import run_kernel

i8 = IntegerType(8)
RNG = np.random.default_rng(7)


def vec(cls, operands, repeat, **props):
    """A vector instruction; operands are buffers or (buffer, offset) pairs."""
    p = {"repeat": IntegerAttr(repeat, i64)}
    for k, v in props.items():
        if k in ("blk_stride", "rep_stride"):
            p[k] = isa.int_array(v)
        elif k == "scalar":
            p[k] = FloatAttr(float(v), f64)
        elif k in ("mode", "round"):
            p[k] = StringAttr(v)
        else:
            p[k] = IntegerAttr(v, i64)
    ops = []
    for o in operands:
        buf, off = o if isinstance(o, tuple) else (o, None)
        ops += [buf, [] if off is None else [off]]
    return cls.build(operands=ops, properties=p)


def run_ub(initial: list[np.ndarray], emit) -> list[np.ndarray]:
    """One UB buffer per array of `initial` (loaded from GM); `emit(builder, buffers)`
    adds the instruction(s); returns every buffer's final contents."""
    types = [isa.buffer_type([a.size], element_type(a.dtype), MemSpace.GM) for a in initial]
    b = IsaBuilder.new_kernel("k", types, types, 1)
    gm_in, gm_out = b.args[: len(initial)], b.args[len(initial):]
    bufs = [b.buffer(MemSpace.UB, [a.size], element_type(a.dtype))[0] for a in initial]
    for g, u, a in zip(gm_in, bufs, initial):
        b.add(isa.CopyGmToUbOp(g, u, [a.size]))
    emit(b, bufs)
    for u, g, a in zip(bufs, gm_out, initial):
        b.add(isa.CopyUbToGmOp(u, g, [a.size]))
    module = ModuleOp([b.kernel])
    module.attributes["ge.target"] = StringAttr("ascend910")
    module.verify()
    run_passes(module, "plan-local-memory,insert-sync")
    outs = [np.zeros_like(a) for a in initial]
    report, _ = run_kernel(module, [*initial, *outs])
    report.check()
    return outs


def elems(repeat, mask, blk, rep, epb):
    """Element indices [repeat, mask] of a vector operand (the documented addressing)."""
    r = np.arange(repeat)[:, None]
    j = np.arange(mask)[None, :]
    return r * rep * epb + (j // epb) * blk * epb + j % epb


# --------------------------------------------------------------------------------------
# Vector
# --------------------------------------------------------------------------------------

BINARY = {
    isa.VAddOp: np.add, isa.VSubOp: np.subtract, isa.VMulOp: np.multiply, isa.VDivOp: np.divide,
    isa.VMaxOp: np.maximum, isa.VMinOp: np.minimum,
}


@pytest.mark.parametrize("cls", list(BINARY), ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_binary(cls, dtype):
    per = 256 // np.dtype(dtype).itemsize
    a = RNG.standard_normal(2 * per).astype(dtype)
    b = (RNG.standard_normal(2 * per) + 3).astype(dtype)
    d = np.zeros(2 * per, dtype)
    out = run_ub([d, a, b], lambda k, u: k.add(vec(cls, u, 2)))[0]
    want = BINARY[cls](a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("cls,fn", [(isa.VAndOp, np.bitwise_and), (isa.VOrOp, np.bitwise_or)], ids=["vand", "vor"])
def test_bitwise(cls, fn):
    a, b = RNG.integers(-128, 127, 256, dtype=np.int8), RNG.integers(-128, 127, 256, dtype=np.int8)
    out = run_ub([np.zeros(256, np.int8), a, b], lambda k, u: k.add(vec(cls, u, 1)))[0]
    np.testing.assert_array_equal(out, fn(a, b))


def test_binary_mask_and_strides():
    """mask 40 of 64 f32, src1 broadcast one block per repeat (blk 0, rep 1): x - m[row]."""
    x = RNG.standard_normal(4 * 64).astype(np.float32)
    m = RNG.standard_normal(64).astype(np.float32)
    d = np.full(4 * 64, 7.0, np.float32)
    out = run_ub([d, x, m], lambda k, u: k.add(vec(isa.VSubOp, u, 4, mask=40, blk_stride=[1, 1, 0], rep_stride=[8, 8, 1])))[0]
    want = d.copy()
    di, xi, mi = elems(4, 40, 1, 8, 8), elems(4, 40, 1, 8, 8), elems(4, 40, 0, 1, 8)
    want[di] = x[xi] - m[mi]
    np.testing.assert_array_equal(out, want)
    assert (out.reshape(4, 64)[:, 40:] == 7).all()  # outside the mask: untouched


def test_offsets():
    """Operand offsets in elements: dst[128:] = src[0:128] + src[128:]."""
    a = RNG.standard_normal(256).astype(np.float16)

    def emit(k, u):
        off = k.const(128)
        k.add(vec(isa.VAddOp, [(u[0], off), u[0], (u[0], off)], 1))

    out = run_ub([a], emit)[0]
    np.testing.assert_array_equal(out[:128], a[:128])
    np.testing.assert_array_equal(out[128:], (a[:128].astype(np.float32) + a[128:]).astype(np.float16))


UNARY = {
    isa.VExpOp: np.exp, isa.VLnOp: np.log, isa.VAbsOp: np.abs, isa.VSqrtOp: np.sqrt,
    isa.VRsqrtOp: lambda x: 1 / np.sqrt(x), isa.VRecOp: lambda x: 1 / x, isa.VReluOp: lambda x: np.maximum(x, 0),
    isa.VTanhOp: np.tanh,
}


@pytest.mark.parametrize("cls", list(UNARY), ids=lambda c: c.name)
def test_unary(cls):
    x = RNG.uniform(0.1, 3, 128).astype(np.float32)
    if cls not in (isa.VLnOp, isa.VSqrtOp, isa.VRsqrtOp):
        x *= np.sign(RNG.standard_normal(128)).astype(np.float32)
    out = run_ub([np.zeros(128, np.float32), x], lambda k, u: k.add(vec(cls, u, 2)))[0]
    np.testing.assert_allclose(out, UNARY[cls](x), rtol=1e-6)


def test_erf():
    import math

    x = np.linspace(-3, 3, 128).astype(np.float32)
    out = run_ub([np.zeros(128, np.float32), x], lambda k, u: k.add(vec(isa.VErfOp, u, 2)))[0]
    np.testing.assert_allclose(out, [math.erf(v) for v in x], atol=1e-6)


def test_not():
    x = RNG.integers(-128, 127, 256, dtype=np.int8)
    out = run_ub([np.zeros(256, np.int8), x], lambda k, u: k.add(vec(isa.VNotOp, u, 1)))[0]
    np.testing.assert_array_equal(out, ~x)


@pytest.mark.parametrize("cls,fn", [(isa.VAddsOp, np.add), (isa.VMulsOp, np.multiply), (isa.VMaxsOp, np.maximum),
                                    (isa.VMinsOp, np.minimum)], ids=lambda c: getattr(c, "name", ""))
def test_scalar(cls, fn):
    x = RNG.standard_normal(128).astype(np.float16)
    out = run_ub([np.zeros(128, np.float16), x], lambda k, u: k.add(vec(cls, u, 1, scalar=0.25)))[0]
    np.testing.assert_array_equal(out, fn(x.astype(np.float32), np.float32(0.25)).astype(np.float16))


def test_dup():
    out = run_ub([np.zeros(128, np.float32)], lambda k, u: k.add(vec(isa.VDupOp, u, 1, mask=48, scalar=-1.5)))[0]
    want = np.zeros(128, np.float32)
    want[:48] = -1.5
    np.testing.assert_array_equal(out, want)


def test_conv_f16_f32():
    x = RNG.standard_normal(128).astype(np.float16)
    out = run_ub([np.zeros(128, np.float32), x], lambda k, u: k.add(vec(isa.VConvOp, u, 2, mask=64)))[0]
    np.testing.assert_array_equal(out, x.astype(np.float32))
    y = (RNG.standard_normal(128) * 1000).astype(np.float32)
    out = run_ub([np.zeros(128, np.float16), y], lambda k, u: k.add(vec(isa.VConvOp, u, 2, mask=64)))[0]
    np.testing.assert_array_equal(out, y.astype(np.float16))


@pytest.mark.parametrize("mode,fn", [("rint", np.rint), ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)])
def test_conv_to_int(mode, fn):
    x = (RNG.standard_normal(64) * 50).astype(np.float32)
    out = run_ub([np.zeros(64, np.int32), x], lambda k, u: k.add(vec(isa.VConvOp, u, 1, round=mode)))[0]
    np.testing.assert_array_equal(out, fn(x).astype(np.int32))


@pytest.mark.parametrize("cls,fn", [(isa.VReduceSumOp, np.sum), (isa.VReduceMaxOp, np.max), (isa.VReduceMinOp, np.min)],
                         ids=lambda c: getattr(c, "name", ""))
def test_reduce(cls, fn):
    """One result per repeat; f16 sums accumulate in f32 and round once."""
    x = RNG.standard_normal(4 * 128).astype(np.float16)
    d = np.zeros(128, np.float16)
    out = run_ub([d, x], lambda k, u: k.add(vec(cls, u, 4, mask=100, rep_stride=[1, 8])))[0]
    want = fn(x.reshape(4, 128)[:, :100].astype(np.float32), axis=1).astype(np.float16)
    np.testing.assert_array_equal(out[:4], want)
    assert (out[4:] == 0).all()


def test_reduce_dst_stride():
    x = RNG.standard_normal(3 * 64).astype(np.float32)
    out = run_ub([np.zeros(64, np.float32), x], lambda k, u: k.add(vec(isa.VReduceSumOp, u, 3, rep_stride=[8, 8])))[0]
    np.testing.assert_allclose(out[[0, 8, 16]], x.reshape(3, 64).sum(1), rtol=1e-6)


def test_brcb():
    """Each source element fills one 32-byte block."""
    x = RNG.standard_normal(16).astype(np.float32)
    out = run_ub([np.zeros(128, np.float32), x], lambda k, u: k.add(vec(isa.VBrcbOp, u, 2)))[0]
    np.testing.assert_array_equal(out, np.repeat(x, 8))


@pytest.mark.parametrize("mode", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_cmp_and_sel(mode):
    a = RNG.integers(-3, 3, 128).astype(np.float16)
    b = RNG.integers(-3, 3, 128).astype(np.float16)
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal}[mode]

    def emit(k, u):
        m, d, x, y = u
        k.add(vec(isa.VCmpOp, [m, x, y], 1, mode=mode))
        k.add(vec(isa.VSelOp, [d, m, x, y], 1))

    m, d, _, _ = run_ub([np.zeros(128, np.int8), np.zeros(128, np.float16), a, b], emit)
    np.testing.assert_array_equal(m, fn(a, b).astype(np.int8))
    np.testing.assert_array_equal(d, np.where(fn(a, b), a, b))


# --------------------------------------------------------------------------------------
# Moves
# --------------------------------------------------------------------------------------


def test_copy_window_and_pad():
    """A 4 x 8 rectangle from a 6-wide source at rows 1.., only rows < 3 and cols >= 2
    read; the rest of the destination rectangle gets the pad value."""
    src = np.arange(60, dtype=np.float32)
    types = [isa.buffer_type([60], f32, MemSpace.GM), isa.buffer_type([32], f32, MemSpace.GM)]
    b = IsaBuilder.new_kernel("k", types[:1], types[1:], 1)
    x, y = b.args
    u = b.buffer(MemSpace.UB, [32], f32)[0]
    window = [b.const(v) for v in (0, 3, 2, 8)]
    b.add(isa.CopyGmToUbOp(x, u, [4, 8], src_offset=b.const(6), src_strides=[6, 1], window=window, pad=-1.0))
    b.add(isa.CopyUbToGmOp(u, y, [32]))
    module = ModuleOp([b.kernel])
    module.attributes["ge.target"] = StringAttr("ascend910")
    run_passes(module, "plan-local-memory,insert-sync")
    out = np.zeros(32, np.float32)
    run_kernel(module, [src, out])[0].check()
    want = np.full((4, 8), -1.0, np.float32)
    for i in range(3):
        for j in range(2, 8):
            want[i, j] = src[6 + 6 * i + j]
    np.testing.assert_array_equal(out.reshape(4, 8), want)


def test_store_window_leaves_the_rest():
    """An edge-tile store: only the window is written to GM."""
    def emit(k, u):
        k.add(isa.CopyUbToUbOp(u[1], u[0], [4, 4], src_strides=[1, 4], window=[k.const(v) for v in (0, 4, 0, 2)]))

    a = np.zeros(16, np.float32)
    s = np.arange(16, dtype=np.float32)
    out = run_ub([a, s], emit)[0].reshape(4, 4)
    want = np.zeros((4, 4), np.float32)
    want[:, :2] = s.reshape(4, 4).T[:, :2]  # a transposing copy, first two columns
    np.testing.assert_array_equal(out, want)


def test_l1_round_trip():
    """GM -> L1 -> UB -> L1 -> UB on the coupled paths; nd2nz by strides on the way in."""
    x = RNG.standard_normal(32 * 32).astype(np.float16)
    types = [isa.buffer_type([1024], f16, MemSpace.GM)]
    b = IsaBuilder.new_kernel("k", types, types, 1)
    g, out_g = b.args
    l1 = b.buffer(MemSpace.L1, [1024], f16)[0]
    l1b = b.buffer(MemSpace.L1, [1024], f16)[0]
    u = b.buffer(MemSpace.UB, [1024], f16)[0]
    b.add(isa.CopyGmToL1Op(g, l1, [2, 2, 16, 16], src_strides=[512, 16, 32, 1]))  # ND -> NZ-style fractals
    b.add(isa.CopyL1ToUbOp(l1, u, [1024]))
    b.add(isa.CopyUbToL1Op(u, l1b, [1024]))
    b.add(isa.CopyL1ToUbOp(l1b, u, [1024]))
    b.add(isa.CopyUbToGmOp(u, out_g, [1024]))
    module = ModuleOp([b.kernel])
    module.attributes["ge.target"] = StringAttr("ascend910")
    run_passes(module, "plan-local-memory,insert-sync")
    out = np.zeros_like(x)
    run_kernel(module, [x, out])[0].check()
    np.testing.assert_array_equal(out, x.reshape(2, 16, 2, 16).transpose(0, 2, 1, 3).reshape(-1))


# --------------------------------------------------------------------------------------
# Cube: L1 -> L0A / L0B, mmad, fixpipe, img2col
# --------------------------------------------------------------------------------------


def cube_kernel(m, k, n, emit_a, relu=False, accumulate=False):
    """C[m, n] (f16 through fixpipe) = A x B with B = bt^T loaded into ZN; `emit_a(builder,
    l1, l0a)` fills L0A (ZZ)."""
    types = [isa.buffer_type([m * k], f16, MemSpace.GM), isa.buffer_type([n * k], f16, MemSpace.GM),
             isa.buffer_type([m * n], f16, MemSpace.GM)]
    b = IsaBuilder.new_kernel("cube", types[:2], types[2:], 1)
    a_g, bt_g, c_g = b.args
    a1 = b.buffer(MemSpace.L1, [m * k], f16)[0]
    b1 = b.buffer(MemSpace.L1, [k * n], f16)[0]
    a0 = b.buffer(MemSpace.L0A, [m * k], f16)[0]
    b0 = b.buffer(MemSpace.L0B, [k * n], f16)[0]
    acc = b.buffer(MemSpace.L0C, [m * n], f32)[0]
    emit_a(b, a_g, a1, a0)
    b.add(isa.CopyGmToL1Op(bt_g, b1, [k // 16, n // 16, 16, 16], src_strides=[16, 16 * k, k, 1]))
    b.add(isa.CopyL1ToL0bOp(b1, b0, [k * n]))
    b.add(isa.MmadOp(acc, a0, b0, m, k, n, init=b.const(1, i1)))
    if accumulate:
        b.add(isa.MmadOp(acc, a0, b0, m, k, n))
    fix = isa.FixpipeOp(acc, c_g, [n // 16, m // 16, 16, 16], dst_strides=[16, 16 * n, n, 1])
    if relu:
        fix.properties["relu"] = isa.UnitAttr()
    b.add(fix)
    module = ModuleOp([b.kernel])
    module.attributes["ge.target"] = StringAttr("ascend910")
    module.verify()
    run_passes(module, "plan-local-memory,insert-sync")
    return module


def load_zz(m, k):
    def emit(b, a_g, a1, a0):
        b.add(isa.CopyGmToL1Op(a_g, a1, [m // 16, k // 16, 16, 16], src_strides=[16 * k, 16, k, 1]))
        b.add(isa.CopyL1ToL0aOp(a1, a0, [m * k]))
    return emit


@pytest.mark.parametrize("relu,accumulate", [(False, False), (True, False), (False, True)])
def test_mmad_fixpipe(relu, accumulate):
    m, k, n = 32, 48, 64
    a = RNG.standard_normal((m, k)).astype(np.float16)
    bt = RNG.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    module = cube_kernel(m, k, n, load_zz(m, k), relu, accumulate)
    run_kernel(module, [a, bt, c])[0].check()
    want = a.astype(np.float32) @ bt.astype(np.float32).T * (2 if accumulate else 1)
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_array_equal(c, want.astype(np.float16))


def test_img2col():
    """Load3D of a 2x2, stride 1, pad 1 window over a 5 x 5 x 32-channel map (6 x 6
    outputs): the A tile x identity = the patch matrix, K in (c1, kh, kw, c0) order, the
    pads and the pixels past the 36 outputs zero."""
    c1, h, w, c0 = 2, 5, 5, 16
    fm = RNG.standard_normal((c1, h, w, c0)).astype(np.float16)
    m, k = 48, 128  # 36 pixels padded to 48; K = 2 * 2 * 2 * 16

    def emit(b, a_g, a1, a0):
        fl1 = b.buffer(MemSpace.L1, [c1, h, w, c0], f16)[0]
        b.add(isa.CopyGmToL1Op(a_g, fl1, [c1 * h * w * c0]))
        zero = b.const(0)
        op = isa.Img2colOp.build(
            operands=[fl1, [], a0, [], zero, zero, zero, zero],
            properties={"sizes": isa.int_array([m, k]), "fm": isa.int_array([c1, h, w, c0]),
                        "kernel": isa.int_array([2, 2]), "strides": isa.int_array([1, 1]),
                        "dilations": isa.int_array([1, 1]), "pads": isa.int_array([1, 1]),
                        "out_size": isa.int_array([6, 6]), "channels": IntegerAttr(32, i64),
                        "c0": IntegerAttr(16, i64)})
        b.add(op)

    a = np.zeros(m * k, np.float16)  # the GM "A" input carries the feature map
    a[: fm.size] = fm.reshape(-1)
    bt = np.eye(k, k, dtype=np.float16)  # B = I: C = A
    module = cube_kernel(m, k, k, emit)
    c = np.zeros((m, k), np.float16)
    run_kernel(module, [a, bt, c])[0].check()
    pad = np.pad(fm, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((m, k), np.float16)
    for p in range(36):
        oh, ow = divmod(p, 6)
        want[p] = pad[:, oh:oh + 2, ow:ow + 2, :].reshape(-1)  # (c1, kh, kw, c0)
    np.testing.assert_array_equal(c, want)


# --------------------------------------------------------------------------------------
# The numpy kernels' layouts
# --------------------------------------------------------------------------------------


def test_fractal_layouts_round_trip():
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    np.testing.assert_array_equal(K.zz_to_matrix(K.matrix_to_zz(x, 16, 16), 32, 48, 16, 16), x)
    np.testing.assert_array_equal(K.zn_to_matrix(K.matrix_to_zn(x, 16, 16), 32, 48, 16, 16), x)
    np.testing.assert_array_equal(K.nz_to_matrix(K.matrix_to_nz(x, 16, 16), 32, 48, 16, 16), x)
    # ZN holds fractals of B transposed: fractal (0, 0) row j is column j of B
    zn = K.matrix_to_zn(x, 16, 16).reshape(2, 3, 16, 16)
    np.testing.assert_array_equal(zn[0, 0], x[:16, :16].T)


def test_mmad_i8_accumulates_in_i32():
    a = RNG.integers(-128, 127, (16, 32)).astype(np.int8)
    b = RNG.integers(-128, 127, (32, 16)).astype(np.int8)
    out = K.mmad(K.matrix_to_zz(a, 16, 32), K.matrix_to_zn(b, 32, 16), None, (16, 32, 16), (16, 32, 16))
    np.testing.assert_array_equal(K.nz_to_matrix(out, 16, 16, 16, 16), a.astype(np.int32) @ b.astype(np.int32))
    assert out.dtype == np.int32
