"""The tile level against the graph level, op by op: seeded random single-op models
(conv with odd channels, strides, pads, dilations, groups and depthwise; matmul, batched
and broadcast matmul, Gemm; Softmax / LayerNorm / reductions along any axis; pools, LRN,
BatchNorm, Transpose, Concat, broadcast elementwise) through `bufferize` + `tile`, run by
the tile interpreter, compared with the reference interpreter on the same fused module --
in f32 and f16, on plain tensors and after `assign-layouts` (NC1HWC0 / FRACTAL_Z /
FRACTAL_NZ). Plus the interpreter's primitives, determinism, and the capacity errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.frontend.onnx import import_model
from ge.ir import parse_module, print_module, run_passes
from ge.runtime import tile_interp as ti
from ge.runtime.reference import run
from ge.runtime.tile_interp import run_tile
from ge.transforms.tile_capacity import TileCapacityError

F32, F16 = "must_keep_origin_dtype", "force_fp16"


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def check(mp, feeds, layouts: bool, precision: str, target: str = "ascend910") -> None:
    """Tile `mp` and compare every output with the reference run of the fused module."""
    m = import_model(mp)
    layout = f",assign-layouts{{target={target}}}" if layouts else ""
    run_passes(m, f"graph-optimize{{level=0 precision={precision}}}{layout},fuse")
    expected = run(m, feeds)
    run_passes(m, f"bufferize,tile{{target={target}}}")
    got = run_tile(m, feeds)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.dtype == b.dtype
        scale = max(1e-6, float(np.abs(b.astype(np.float64)).max()))
        err = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
        tol = 1e-5 if precision == F32 else 4e-3  # f16: one rounding of differently ordered f32 sums
        assert err <= tol * scale, f"max error {err:.3g} vs output scale {scale:.3g}"


# --------------------------------------------------------------------------------------
# Random single-op models
# --------------------------------------------------------------------------------------


def conv_case(rng):
    n = int(rng.choice([1, 2]))
    c = int(rng.choice([1, 3, 5, 16, 17, 24, 33]))
    kind = rng.choice(["dense", "dense", "depthwise", "grouped"])
    if kind == "depthwise":
        group, co = c, c * int(rng.choice([1, 1, 2]))
    elif kind == "grouped":
        group = int(rng.choice([2, 3, 4]))
        c, co = group * int(rng.choice([2, 5, 6, 8])), group * int(rng.choice([3, 4, 16]))
    else:
        group, co = 1, int(rng.choice([1, 7, 16, 20, 40]))
    kh, kw = int(rng.choice([1, 2, 3, 5])), int(rng.choice([1, 3]))
    sh, sw = int(rng.choice([1, 2])), int(rng.choice([1, 2]))
    dh, dw = int(rng.choice([1, 1, 2])), int(rng.choice([1, 2]))
    h, w = int(rng.integers(kh * dh, 20)), int(rng.integers(kw * dw, 20))
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    wt = (rng.standard_normal((co, c // group, kh, kw)) / np.sqrt(c // group * kh * kw)).astype(np.float32)
    inits = [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(rng.standard_normal(co).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[sh, sw], pads=pads, dilations=[dh, dw], group=group)]
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    ins, feeds, out = [_vi("x", [n, c, h, w])], {"x": rng.standard_normal((n, c, h, w)).astype(np.float32)}, "y"
    epilogue = rng.choice(["none", "relu", "residual"])
    if epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["y"], ["r"]))
        out = "r"
    elif epilogue == "residual":
        nodes += [helper.make_node("Add", ["y", "s"], ["a"]), helper.make_node("Relu", ["a"], ["r"])]
        ins.append(_vi("s", [n, co, oh, ow]))
        feeds["s"] = rng.standard_normal((n, co, oh, ow)).astype(np.float32)
        out = "r"
    return _model(nodes, ins, [_vi(out, None)], inits), feeds


def matmul_case(rng):
    kind = rng.choice(["mm", "bmm", "bcast", "gemm", "vec"])
    m, k, n = int(rng.integers(1, 70)), int(rng.integers(1, 90)), int(rng.integers(1, 70))
    if kind == "gemm":
        ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
        a_shape, b_shape = ([k, m] if ta else [m, k]), ([n, k] if tb else [k, n])
        c_shape = [[n], [m, n], [1, n], [m, 1]][int(rng.integers(4))]
        inits = [numpy_helper.from_array(rng.standard_normal(b_shape).astype(np.float32), "b"),
                 numpy_helper.from_array(rng.standard_normal(c_shape).astype(np.float32), "c")]
        node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=int(ta), transB=int(tb),
                                alpha=float(rng.choice([1.0, 0.5])), beta=float(rng.choice([1.0, 2.0])))
        return _model([node], [_vi("a", a_shape)], [_vi("y", None)], inits), {
            "a": rng.standard_normal(a_shape).astype(np.float32)}
    bsz = int(rng.integers(1, 4))
    a_shape, b_shape = {
        "mm": ([m, k], [k, n]), "bmm": ([bsz, m, k], [bsz, k, n]), "bcast": ([bsz, 2, m, k], [k, n]),
        "vec": ([k], [k, n]) if rng.integers(2) else ([m, k], [k]),
    }[str(kind)]
    feeds = {"a": rng.standard_normal(a_shape).astype(np.float32)}
    b = rng.standard_normal(b_shape).astype(np.float32)
    ins, inits = [_vi("a", a_shape)], []
    if rng.integers(2):
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        feeds["b"] = b
        ins.append(_vi("b", b_shape))
    return _model([helper.make_node("MatMul", ["a", "b"], ["y"])], ins, [_vi("y", None)], inits), feeds


VECTOR_KINDS = ("softmax", "layernorm", "reduce", "maxpool", "avgpool", "gpool", "lrn", "bn", "transpose",
                "concat", "eltwise")


def vector_case(rng, kind: str):
    inits: list = []
    if kind in ("maxpool", "avgpool", "gpool", "lrn", "bn", "concat"):
        shape = [int(rng.choice([1, 2])), int(rng.choice([3, 16, 19, 32])), int(rng.integers(3, 30)), int(rng.integers(3, 30))]
    else:
        shape = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(2, 5)))]
        shape[-1], shape[0] = int(rng.integers(1, 300)), int(rng.integers(1, 40))
    if kind == "concat":
        axis = int(rng.integers(0, 4))
        if axis == 1:
            shape[1] = 16
        other = list(shape)
        other[axis] = int(rng.choice([16, 32, 5])) if axis == 1 else int(rng.integers(1, 20))
        nodes = [helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("Relu", ["z"], ["zr"]),
                 helper.make_node("Concat", ["xr", "zr"], ["y"], axis=axis)]
        feeds = {"x": rng.standard_normal(shape).astype(np.float32), "z": rng.standard_normal(other).astype(np.float32)}
        return _model(nodes, [_vi("x", shape), _vi("z", other)], [_vi("y", None)], inits), feeds
    if kind == "eltwise":
        other = [1 if rng.integers(2) else d for d in shape]
        nodes = [helper.make_node("Mul", ["x", "z"], ["m"]), helper.make_node("Sigmoid", ["m"], ["y"])]
        feeds = {"x": rng.standard_normal(shape).astype(np.float32), "z": rng.standard_normal(other).astype(np.float32)}
        return _model(nodes, [_vi("x", shape), _vi("z", other)], [_vi("y", None)], inits), feeds
    rank = len(shape)
    if kind == "softmax":
        nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=int(rng.integers(-rank, rank)))]
    elif kind == "layernorm":
        axis = int(rng.integers(1, rank))  # a normalized extent that fits UB (no multi-pass reductions)
        norm = shape[axis:]
        inits += [numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "g"),
                  numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "b")]
        nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis)]
    elif kind == "reduce":
        a0 = int(rng.integers(0, rank))
        axes = list(range(a0, int(rng.integers(a0, rank)) + 1))
        op = str(rng.choice(["ReduceMean", "ReduceMax", "ReduceSum"]))
        if op == "ReduceSum":
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            nodes = [helper.make_node(op, ["x", "axes"], ["y"], keepdims=int(rng.integers(2)))]
        else:
            nodes = [helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=int(rng.integers(2)))]
    elif kind in ("maxpool", "avgpool"):
        k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        attrs = dict(kernel_shape=k, strides=[int(rng.integers(1, 3)), int(rng.integers(1, 3))],
                     pads=[int(rng.integers(0, k[0])), int(rng.integers(0, k[1])), int(rng.integers(0, k[0])),
                           int(rng.integers(0, k[1]))], ceil_mode=int(rng.integers(2)))
        if kind == "avgpool":
            attrs["count_include_pad"] = int(rng.integers(2))
        op = "MaxPool" if kind == "maxpool" else "AveragePool"
        nodes = [helper.make_node(op, ["x"], ["p"], **attrs), helper.make_node("Relu", ["p"], ["y"])]
    elif kind == "gpool":
        nodes = [helper.make_node(str(rng.choice(["GlobalAveragePool", "GlobalMaxPool"])), ["x"], ["y"])]
    elif kind == "lrn":
        nodes = [helper.make_node("LRN", ["x"], ["y"], size=int(rng.choice([3, 5])), alpha=1e-3, beta=0.75, bias=1.0)]
    elif kind == "bn":
        c = shape[1]
        inits += [numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), n) for n in ("s", "bb", "mu")]
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "var"))
        nodes = [helper.make_node("BatchNormalization", ["x", "s", "bb", "mu", "var"], ["y"])]
    else:
        assert kind == "transpose"
        nodes = [helper.make_node("Transpose", ["x"], ["y"], perm=[int(p) for p in rng.permutation(rank)])]
    return _model(nodes, [_vi("x", shape)], [_vi("y", None)], inits), {"x": rng.standard_normal(shape).astype(np.float32)}


# Each seed draws one case; layouts and precision alternate so every combination is hit.
VARIANTS = [(False, F32), (True, F16), (True, F32), (False, F16)]


@pytest.mark.parametrize("seed", range(24))
def test_conv_sweep(seed):
    rng = np.random.default_rng(100 + seed)
    mp, feeds = conv_case(rng)
    check(mp, feeds, *VARIANTS[seed % 4])


@pytest.mark.parametrize("seed", range(16))
def test_matmul_sweep(seed):
    rng = np.random.default_rng(200 + seed)
    mp, feeds = matmul_case(rng)
    check(mp, feeds, *VARIANTS[seed % 4])


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", VECTOR_KINDS)
def test_vector_kinds(kind, seed):
    index = 2 * VECTOR_KINDS.index(kind) + seed
    mp, feeds = vector_case(np.random.default_rng(300 + index), kind)
    check(mp, feeds, *VARIANTS[index % 4])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24))
def test_sweeps_every_variant(seed):
    """More seeds, each in all four variants (plain / layouts x f32 / f16), incl. 910B."""
    rng = np.random.default_rng(1000 + seed)
    cases = [conv_case(rng), matmul_case(rng), vector_case(rng, VECTOR_KINDS[seed % len(VECTOR_KINDS)])]
    for mp, feeds in cases:
        for layouts, precision in VARIANTS:
            check(mp, feeds, layouts, precision, "ascend910b" if seed % 3 == 0 else "ascend910")


def test_conv_odd_channels_stride2_groups():
    """The issue's named conv cases, deterministically: 3 and 17 channels, stride 2 with
    pads and dilation, 2 groups of 6 channels, depthwise 33 channels."""
    rng = np.random.default_rng(7)
    for c, co, group, stride, dilation in ((3, 16, 1, 2, 1), (17, 20, 1, 2, 2), (12, 8, 2, 1, 1), (33, 33, 33, 2, 1)):
        wt = rng.standard_normal((co, c // group, 3, 3)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride, stride], pads=[1, 1, 1, 1],
                                dilations=[dilation, dilation], group=group)
        mp = _model([node], [_vi("x", [1, c, 15, 13])], [_vi("y", None)], [numpy_helper.from_array(wt, "w")])
        feeds = {"x": rng.standard_normal((1, c, 15, 13)).astype(np.float32)}
        check(mp, feeds, True, F32)
        check(mp, feeds, False, F32)


def test_concat_edge_tiles_do_not_spill_into_the_next_input():
    """Concat along an axis whose extent the tiles do not divide: an edge tile of one input
    must not write into the next input's part (found by the sweep; cores run in order)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("Relu", ["z"], ["zr"]),
             helper.make_node("Concat", ["xr", "zr"], ["y"], axis=2)]
    mp = _model(nodes, [_vi("x", [2, 3, 19, 26]), _vi("z", [2, 3, 16, 26])], [_vi("y", None)], [])
    feeds = {"x": rng.standard_normal((2, 3, 19, 26)).astype(np.float32),
             "z": rng.standard_normal((2, 3, 16, 26)).astype(np.float32)}
    check(mp, feeds, False, F32)


# --------------------------------------------------------------------------------------
# Pass behaviour: determinism, capacity
# --------------------------------------------------------------------------------------


def test_tiling_is_deterministic():
    rng = np.random.default_rng(5)
    mp, _ = conv_case(rng)
    texts = []
    for _ in range(2):
        m = import_model(mp)
        run_passes(m, "graph-optimize{level=0},assign-layouts,fuse,bufferize,tile")
        texts.append(re.sub(r"dense_resource<\w+>", "dense_resource<w>", print_module(m).split("{-#")[0]))
    assert texts[0] == texts[1]  # (weight blob handles are made unique per process)


def test_capacity_error_names_kernel_space_and_bytes():
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1, name="prob")
    mp = _model([node], [_vi("x", [2, 100000])], [_vi("y", None)], [])
    m = import_model(mp)
    run_passes(m, "graph-optimize{level=0 precision=must_keep_origin_dtype},fuse,bufferize")
    with pytest.raises(TileCapacityError, match=r"kernel @k0_\w+ \(node prob\): UB overflow on ascend910: the live buffers "
                                                r"need 1200000 bytes, UB holds 262144 bytes"):
        run_passes(m, "tile")


def test_emitted_kernels_pass_the_capacity_check():
    rng = np.random.default_rng(11)
    mp, _ = conv_case(rng)
    m = import_model(mp)
    run_passes(m, "graph-optimize{level=0},assign-layouts{target=ascend910b},fuse,bufferize,tile,check-tile-capacity")
    assert m.attributes["ge.target"].data == "ascend910b"


# --------------------------------------------------------------------------------------
# Interpreter primitives
# --------------------------------------------------------------------------------------


def test_read_rect_pads_and_strides():
    a = np.arange(20).reshape(4, 5)
    got = ti.read_rect(a, [-1, 1], [3, 3], [1, 2], -1)
    np.testing.assert_array_equal(got, [[-1, -1, -1], [1, 3, -1], [6, 8, -1]])
    assert ti.read_rect(a, [3, 0], [2, 2], [1, 1], None) is None  # outside, no pad: refused


def test_write_rect_drops_what_falls_outside():
    b = np.zeros((3, 3), int)
    ti.write_rect(b, [-1, 2], np.ones((3, 3), int))
    np.testing.assert_array_equal(b, [[0, 0, 1], [0, 0, 1], [0, 0, 0]])


@pytest.mark.parametrize("five", [True, False])
def test_img2col_gather_matches_the_definition(five):
    """The one-gather img2col of the interpreter against the element-wise definition."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        kh, kw = rng.integers(1, 4, 2)
        sh, sw = rng.integers(1, 3, 2)
        dh, dw = rng.integers(1, 3, 2)
        pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
        h, w, c = int(rng.integers(3, 12)), int(rng.integers(3, 12)), int(rng.integers(1, 20))
        oh = (h + 2 * pt - (dh * (kh - 1) + 1)) // sh + 1
        ow = (w + 2 * pl - (dw * (kw - 1) + 1)) // sw + 1
        if oh < 1 or ow < 1:
            continue
        c1 = -(-c // 8)
        fm = rng.standard_normal((1, c1, h, w, 8) if five else (1, c1 * 8, h, w)).astype(np.float32)
        params = dict(kernel=(kh, kw), strides=(sh, sw), dilations=(dh, dw), pads=(pt, pl), out_size=(oh, ow),
                      channels=c, c0=8)
        fast = ti._Img2col((16, 24), **params)
        for m in range(0, oh * ow, 16):
            for k in range(0, c1 * kh * kw * 8, 24):
                want = _img2col_by_definition(fm, (16, 24), m, k, **params)
                np.testing.assert_array_equal(ti.img2col(fm, (16, 24), m, k, 0, 0, **params), want)
                if pt == 0:  # the buffer holds rows 0.. (the fast path needs every row it reads)
                    np.testing.assert_array_equal(fast(fm, m, k, 0, 0), want)


def _img2col_by_definition(fm, shape, m, k, *, kernel, strides, dilations, pads, out_size, channels, c0):
    out = np.zeros(shape, fm.dtype)
    for i in range(shape[0]):
        p = m + i
        if p >= out_size[0] * out_size[1]:
            continue
        oh, ow = divmod(p, out_size[1])
        for j in range(shape[1]):
            c1, rest = divmod(k + j, kernel[0] * kernel[1] * c0)
            khw, cc = divmod(rest, c0)
            kh, kw = divmod(khw, kernel[1])
            ch = c1 * c0 + cc
            ih = oh * strides[0] - pads[0] + kh * dilations[0]
            iw = ow * strides[1] - pads[1] + kw * dilations[1]
            if ch < channels and 0 <= ih < fm.shape[2] and 0 <= iw < fm.shape[3]:
                out[i, j] = fm[0, ch // c0, ih, iw, ch % c0] if fm.ndim == 5 else fm[0, ch, ih, iw]
    return out


def test_uninitialized_local_reads_are_nan():
    """A kernel that stores a UB tile it never wrote gives NaN, not a plausible number."""
    text = """
    builtin.module {
      tile.kernel @k ins() outs(%y: memref<4xf32, #tile.space<gm>>) block_dim 1 kind "elementwise" {
        %c0 = arith.constant 0 : index
        %u = tile.alloc buffers 1 : memref<4xf32, #tile.space<ub>>
        tile.copy %u[%c0] to %y[%c0] sizes [4] : memref<4xf32, #tile.space<ub>> to memref<4xf32, #tile.space<gm>>
      }
      func.func @main() -> memref<4xf32, #tile.space<gm>> {
        %y = tile.alloc buffers 1 : memref<4xf32, #tile.space<gm>>
        tile.launch @k outs(%y : memref<4xf32, #tile.space<gm>>)
        func.return %y : memref<4xf32, #tile.space<gm>>
      }
    }"""
    (y,) = run_tile(parse_module(text), [])
    assert np.isnan(y).all()


def test_copy_outside_without_pad_is_an_error():
    text = """
    builtin.module {
      tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
        %c2 = arith.constant 2 : index
        %c0 = arith.constant 0 : index
        %u = tile.alloc buffers 1 : memref<4xf32, #tile.space<ub>>
        tile.copy %x[%c2] to %u[%c0] sizes [4] : memref<4xf32, #tile.space<gm>> to memref<4xf32, #tile.space<ub>>
      }
      func.func @main(%x: memref<4xf32, #tile.space<gm>>) {
        tile.launch @k ins(%x : memref<4xf32, #tile.space<gm>>)
        func.return
      }
    }"""
    with pytest.raises(ti.TileRuntimeError, match=r"kernel @k: tile.copy: reads outside the source \[4\] at offsets \[2\]"):
        run_tile(parse_module(text), [np.zeros(4, np.float32)])
