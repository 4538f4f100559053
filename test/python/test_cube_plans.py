"""Cube plans toward the roofline (issue 16): a matmul's batch folded into M, and the
epilogue run in row slices of the L0C tile.

- `tile_cube._foldable`: A [b, m, k] x B [k, n] with unbatched B, plain row-major A, output
  and epilogue operands is one [b * m, k] x [k, n] GEMM, so M tiles span batch entries
  (BERT's projections: 8 x 128 rows are M = 1024, tiled as the cores need).
- `CubePlan.epi_split`: the L0C tile's epilogue runs in that many row slices, UB holding one
  slice, so an M x N tile may be larger than UB's share of the accumulator (the Cube's
  operands then stream once per core); a bias (the same for every slice) is loaded once
  per tile.
Numerics against onnxruntime (f16 storage, f32 accumulation: max error within 1% of the
largest output).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import targets
from ge.lowering import tile_cube
from ge.lowering.tile_cost import Machine
from ge.lowering.tile_cube import _k_options


def matmul_model(b: int, m: int, k: int, n: int, residual: bool, batched_b: bool = False):
    """x [b, m, k] @ w (+ bias, + the residual r [b, m, n])."""
    rng = np.random.default_rng(0)
    wshape = (b, k, n) if batched_b else (k, n)
    w = numpy_helper.from_array((rng.standard_normal(wshape) / np.sqrt(k)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32) * 0.1, "bias")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "bias"], ["y0"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, m, k])]
    if residual:
        nodes.append(helper.make_node("Add", ["y0", "r"], ["y"]))
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [b, m, n]))
    else:
        nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, m, n])],
                              [w, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds(model) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def run(model, inputs, monkeypatch, force=None):
    """Output, the problems planned, the plans, and the Cube kernel's simulated run."""
    problems = []
    with monkeypatch.context() as mp, tile_cube.plans_planned() as memo:
        plan = tile_cube._plan_cube

        def planned(p, mach):
            problems.append(p)
            chosen = plan(p, mach)
            return force(chosen) if force is not None else chosen

        mp.setattr(tile_cube, "_plan_cube", planned)
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False))
        out = compiled.run(inputs)["y"]
        plans = list(memo.values())
    cube = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    assert len(cube) == 1 and len(plans) == 1 and len(problems) == 1
    return out, problems[0], plans[0], cube[0]


def reference(model, inputs):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]


def close(got, want) -> bool:
    return np.abs(got - want).max() <= 0.01 * np.abs(want).max()


@pytest.mark.parametrize("residual", [False, True], ids=["bias", "bias_residual"])
def test_batch_folds_into_m(residual, monkeypatch):
    model = matmul_model(4, 40, 64, 48, residual)
    inputs = feeds(model)
    out, p, _, _ = run(model, inputs, monkeypatch)
    assert (p.folded, p.batch, p.m, p.n, p.k) == (True, 1, 160, 48, 64)
    assert close(out, reference(model, inputs))


def test_m_tile_spans_batch_entries(monkeypatch):
    """A folded M tile of 64 rows covers the last 24 rows of one sequence of 40 and the
    first 40 of the next (the planner's own tile forced to 64 rows)."""
    model = matmul_model(4, 40, 64, 48, True)
    inputs = feeds(model)
    out, p, plan, _ = run(model, inputs, monkeypatch, force=lambda pl: replace(pl, tm=64, blocks=min(pl.blocks, 3)))
    assert p.folded and plan.tm == 64
    assert close(out, reference(model, inputs))


def test_batched_b_is_not_folded(monkeypatch):
    model = matmul_model(3, 32, 64, 48, False, batched_b=True)
    inputs = feeds(model)
    out, p, _, _ = run(model, inputs, monkeypatch)
    assert (p.folded, p.batch, p.m) == (False, 3, 32)
    assert close(out, reference(model, inputs))


@pytest.mark.parametrize("residual,slices", [(False, 2), (True, 4)], ids=["bias_2", "bias_residual_4"])
def test_epilogue_in_row_slices(residual, slices, monkeypatch):
    """The epilogue of a 128-row tile in 2 / 4 slices: same result as onnxruntime; the
    bias is loaded once per tile, a residual once per slice."""
    model = matmul_model(2, 128, 96, 64, residual)
    inputs = feeds(model)
    force = lambda pl: replace(pl, tm=128, epi_split=slices, blocks=2, split=1)  # noqa: E731
    out, _, plan, kernel = run(model, inputs, monkeypatch, force=force)
    assert plan.epi_split == slices and plan.tm == 128
    assert close(out, reference(model, inputs))
    # GM -> UB loads: the bias once per tile, the residual once per slice (2 tiles in all)
    tiles = 2 * -(-64 // plan.tn)
    assert kernel.instructions["MTE2"] >= tiles * (1 + (slices if residual else 0))


def test_planner_slices_a_large_tile(monkeypatch):
    """BERT-base's FFN output projection (M = 8 x 128, K = 3072, N = 768) on the 910: the
    plan runs its epilogue in slices (UB does not hold the tile's f32 accumulator, its
    temporaries and the f16 result at once), on all 32 cores -- not the 16 whose HBM share
    alone would feed it (the cores' reads of the same A / B bytes hit the L2:
    `tile_cube.SHARED_READS`), nor 24 (the slowest core's misses at its fair HBM share
    made 32 look dearer: `tile_cube.MISS_SHARE`); the cost model predicts it within 15%."""
    target = targets.load_target("ascend910")
    model = matmul_model(8, 128, 3072, 768, False)
    inputs = feeds(model)
    with tile_cube.plans_planned() as memo:
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False, soc_version="ascend910",
                                                       precision_mode="force_fp16"))
        compiled.run(inputs, timing_only=True)
        (plan,) = memo.values()
    (kernel,) = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    assert plan.epi_split > 1
    assert plan.blocks == target.cores.cube and kernel.cores == plan.blocks
    assert plan.cycles + Machine(target).launch() == pytest.approx(kernel.cycles, rel=0.15)


def test_row_vector_epilogue_costs_a_column_each():
    """A bias row against 192-wide f16 rows (1.5 repeats) costs an instruction per column
    of a repeat, the rows on its repeat axis (isa_vector.block_layout); 128-wide rows (one
    repeat) one instruction; rows farther apart than a repeat stride holds (4160 f16 = 260
    blocks) an instruction per row and repeat."""
    mach = Machine(targets.load_target("ascend910"))
    prog = (("vadd", "f16", 2, "rows"),)
    assert tile_cube.epilogue_cycles(mach, prog, 64, 192) == 2 * mach.instruction("vadd", "f16", 64)
    assert tile_cube.epilogue_cycles(mach, prog, 64, 128) == mach.instruction("vadd", "f16", 64)
    assert tile_cube.epilogue_cycles(mach, prog, 4, 4160) == 4 * 33 * mach.instruction("vadd", "f16", 1)


def conv_model(n: int, cin: int, cout: int, hw: int, k: int, s: int):
    """Relu (the producer: an NC1HWC0 feature map in GM) -> Conv (+ bias) -> Relu."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * 0.1).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, "bias")
    oh = (hw + 2 * (k // 2) - k) // s + 1
    nodes = [helper.make_node("Relu", ["x"], ["x1"]),
             helper.make_node("Conv", ["x1", "w", "bias"], ["c"], kernel_shape=[k, k], strides=[s, s],
                              pads=[k // 2] * 4),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, cin, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, cout, oh, oh])], [w, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_run(model, inputs, monkeypatch):
    """Output, the conv problem the kernel was tiled from (the fusion probes plan theirs
    first), and the Cube kernel's simulated run."""
    problems = []
    with monkeypatch.context() as mp:
        plan = tile_cube._plan_cube
        mp.setattr(tile_cube, "_plan_cube", lambda p, mach: (problems.append(p), plan(p, mach))[1])
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False))
        out = compiled.run(inputs)["y"]
    (cube,) = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    return out, problems[-1], cube


@pytest.mark.parametrize("cin,cout,hw,k,s,kk", [(3, 64, 40, 7, 2, 208), (4, 32, 20, 3, 1, 48), (1, 16, 18, 5, 1, 112)],
                         ids=["conv1_3x7x7s2", "cin4_3x3", "cin1_5x5"])
def test_c04_first_conv(cin, cout, hw, k, s, kk, monkeypatch):
    """A conv with at most 4 input channels takes K in 4-channel blocks (GE's C04): K =
    kh * kw * 4 rounded up to 16 (208 for 7 x 7, not 7 * 7 * 16 = 784), the weights rebuilt
    as [K / 4, N1, 16, 4]; same result as onnxruntime, and fewer fractal mmads than with
    C0 = 16 K blocks (the plans may differ: at least half as many)."""
    model = conv_model(2, cin, cout, hw, k, s)
    inputs = feeds(model)
    out, p, kernel = conv_run(model, inputs, monkeypatch)
    assert (p.conv.get("c04"), p.c0, p.k) == (True, 4, kk)
    assert p.weight_transform.shape == (kk // 4, -(-cout // 16), 16, 4)
    assert close(out, reference(model, inputs))
    monkeypatch.setattr(tile_cube, "C04", False)
    out16, p16, kernel16 = conv_run(model, inputs, monkeypatch)
    assert (p16.c0, p16.k) == (16, k * k * 16)
    assert close(out16, reference(model, inputs))
    assert kernel.work["fractals"] * 2 <= kernel16.work["fractals"]  # 3.8x / 3x / 3.6x fewer K rows


def test_c04_not_for_wider_or_1x1_convs(monkeypatch):
    """Five input channels, or a 1 x 1 window (K = 4 pads to 16 anyway), keep C0 = 16 K blocks."""
    for cin, k in ((5, 3), (3, 1)):
        model = conv_model(1, cin, 16, 12, k, 1)
        inputs = feeds(model)
        out, p, _ = conv_run(model, inputs, monkeypatch)
        assert (p.c0, p.conv.get("c04")) == (16, None)
        assert close(out, reference(model, inputs))


def test_c04_plans_take_whole_k_steps(monkeypatch):
    """A C04 conv's K steps divide its K (13 K0 rows for a 7 x 7 window): a partial last
    step would copy its weights across the [K / 4, N1, 16, 4] fractal digits, which to-isa
    refuses; every step the search may try must lower (a K step of 128 of 208 did not)."""
    model = conv_model(1, 3, 16, 16, 7, 2)
    inputs = feeds(model)
    out, p, _ = conv_run(model, inputs, monkeypatch)
    assert (p.conv.get("c04"), p.k) == (True, 208) and close(out, reference(model, inputs))
    (kl1, steps), = tile_cube._k_options(p, 16)
    assert kl1 == 208 and steps == [16, 208]
    for tk in steps:  # each offered step lowers and computes the conv
        with monkeypatch.context() as m:
            m.setattr(tile_cube, "_k_options", lambda prob, k0, tk=tk: [(prob.k, [tk])] if prob.conv.get("c04")
                      else _k_options(prob, k0))
            got, _, _ = conv_run(model, inputs, monkeypatch)
        assert close(got, reference(model, inputs)), tk


@pytest.mark.parametrize("hw,s", [(14, 2), (15, 2), (13, 3)], ids=["14_s2", "15_s2", "13_s3"])
def test_strided_1x1_conv_copies_only_its_pixels(hw, s, monkeypatch):
    """A strided 1 x 1 conv without pads (ResNet's projection shortcut) copies in every s-th
    row and column only: the Cube sees a stride-1 conv on the oh x ow map; same result as
    onnxruntime, and the kernel reads at least (1 - 1 / s) of the feature map's bytes fewer
    than with whole rows (it skips s - 1 of every s rows; 10% slack for the edge rows)."""
    model = conv_model(2, 64, 32, hw, 1, s)
    inputs = feeds(model)
    out, p, kernel = conv_run(model, inputs, monkeypatch)
    assert p.conv["sub"] == (s, s)
    assert close(out, reference(model, inputs))
    monkeypatch.setattr(tile_cube, "SUBSAMPLE", False)
    out_rows, p_rows, kernel_rows = conv_run(model, inputs, monkeypatch)
    assert "sub" not in p_rows.conv and close(out_rows, reference(model, inputs))
    fmap = 2 * 4 * hw * hw * 16 * 2  # the f16 NC1HWC0 input's bytes
    assert kernel_rows.work["gm_read"] - kernel.work["gm_read"] >= fmap * (1 - 1 / s) * 0.9


def test_fmap_rows_hit_the_l2():
    """A 7 x 7 stride-2 conv's M tile of one output row (112 pixels) reads 7 input rows of
    which the next tile reads 5 again: 224 rows of the image over 112 tiles x 7 rows miss
    the L2 (2 / 7); a 3 x 3 stride-1 conv read once per N tile misses 1 / N tiles of it."""
    mach = Machine(targets.load_target("ascend910"))
    p = tile_cube.CubeProblem(kind="conv", anchor=None, block=None, elem=None, batch=16, groups=1, m=112 * 112,
                              n=64, k=208, a_fmt="nc1hwc0", b_fmt="fz", out_fmt="nc1hwc0", c0=4,
                              conv=dict(h=224, w=224, oh=112, ow=112, kh=7, kw=7, strides=[2, 2], dilations=[1, 1]))
    s = tile_cube._Sizes(7 * 224 * 16 * 2, 208 * 64 * 2, 0, 0, 0, 0, 0, 0, 0)
    assert tile_cube._fmap_miss(p, 112, 1, s, 1, 26624, mach.target.memory.l2) == pytest.approx(224 / (112 * 7))
    q = replace(p, batch=1, m=56 * 56, k=576, c0=16,
                conv=dict(h=56, w=56, oh=56, ow=56, kh=3, kw=3, strides=[1, 1], dilations=[1, 1]))
    s = tile_cube._Sizes(4 * 16 * 58 * 56 * 2, 0, 0, 0, 0, 0, 0, 0, 0)
    assert tile_cube._fmap_miss(q, 56 * 56, 4, s, 1, 0, mach.target.memory.l2) == pytest.approx(56 / (58 * 4))
    assert tile_cube._fmap_miss(q, 56 * 56, 4, s, 1, 0, 1024) == 1.0  # does not fit the L2
