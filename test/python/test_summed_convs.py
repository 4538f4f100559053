"""The residual Add of two 1 x 1 convs -- ResNet's projection shortcut and its block's last
conv -- as one Cube GEMM (`SummedConvsFusionPass`, tile_cube.py `_k_concat`): the two
share M and N, so their K's concatenate; each K chunk reads its conv's feature map (the
stride-2 shortcut every other row and column), L0C sums both, and the shortcut's output
never goes to GM. fold-batch-norm first leaves the pair one bias (`OneBiasForSummedConvs`).

The model: x -> 3 x 3 conv (stride s) + ReLU -> a; y = conv1x1(ReLU(conv1x1(a) + conv1x1(x,
stride s))) (the last conv as the next block's first: the sum stays NC1HWC0), seeded weights scaled by 1 / sqrt(fan-in) (the output depends on the input: a 1%
change of x moves it by far more than the tolerance, checked). Tolerance against
onnxruntime: 0.1% of the output scale -- f16 inputs and weights, f32 sums over K <= 1,536
(measured 0.045-0.060%; unmerged 0.048-0.061%: the merged sum skips the f16 rounding of
the shortcut's output)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.lowering import tile_cube
from ge.testing import kernel_ir, onnxruntime_outputs

# (input channels, 3 x 3 conv's channels, output channels, size, stride, batch)
CASES = {
    "stride1": (64, 32, 128, 14, 1, 2),
    "stride2": (64, 32, 128, 14, 2, 2),
    "odd_channels": (40, 24, 48, 10, 2, 2),  # both parts' channels padded within their C0 blocks
    "chunks": (1024, 512, 256, 7, 1, 2),  # K = 512 + 1,024 in several L1 chunks: a loop over them
    "stacked": (128, 64, 256, 14, 2, 8),  # 4 images stacked along H in one M tile (forced: `STACKED`)
}
STACKED = {"stacked": 4}  # the only stack the merged conv's plan search may take (as resnet50_b16's stage 4)
# merged / unmerged simulated cycles, measured 0.90, 0.86, 0.86, 0.97, 0.97
MOST = {"stride1": 0.95, "stride2": 0.9, "odd_channels": 0.9, "chunks": 1.0, "stacked": 1.0}
TOLERANCE = 1e-3
SEVERAL_CHUNKS = ("stride1", "chunks", "stacked")  # the plans' K chunks (the others: K in one chunk)


def _block(c_in: int, c_mid: int, c_out: int, size: int, stride: int, batch: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(co: int, ci: int, k: int) -> np.ndarray:
        return (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype(np.float32)

    def bias(c: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(c)).astype(np.float32)

    inits = [numpy_helper.from_array(v, n) for n, v in (
        ("w1", weight(c_mid, c_in, 3)), ("b1", bias(c_mid)), ("w2", weight(c_out, c_mid, 1)), ("b2", bias(c_out)),
        ("w3", weight(c_out, c_in, 1)), ("b3", bias(c_out)), ("w4", weight(16, c_out, 1)))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[stride, stride]),
        helper.make_node("Relu", ["c1"], ["a"]),
        helper.make_node("Conv", ["a", "w2", "b2"], ["e"], kernel_shape=[1, 1]),
        helper.make_node("Conv", ["x", "w3", "b3"], ["p"], kernel_shape=[1, 1], strides=[stride, stride]),
        helper.make_node("Add", ["e", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Conv", ["r", "w4"], ["y"], kernel_shape=[1, 1]),  # (so that r stays NC1HWC0)
    ]
    out = -(-size // stride)
    graph = helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c_in, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 16, out, out])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module", params=list(CASES))
def runs(request, tmp_path_factory):
    c_in, _, _, size, _, batch = CASES[request.param]
    model = _block(*CASES[request.param])
    inputs = {"x": np.random.default_rng(2).standard_normal((batch, c_in, size, size)).astype(np.float32)}
    switch = tmp_path_factory.mktemp("switch") / "off.txt"
    switch.write_text("SummedConvsFusionPass:off\n")
    out = {}
    if request.param in STACKED:
        stack, plain = STACKED[request.param], tile_cube._stack_options
        monkeypatch = pytest.MonkeyPatch()
        request.addfinalizer(monkeypatch.undo)
        monkeypatch.setattr(tile_cube, "_stack_options",
                            lambda p, m0: (stack,) if p.a_parts and stack in plain(p, m0) else plain(p, m0))
    for merged in (True, False):
        compiled, kernel = kernel_ir(model, tmp_path_factory.mktemp(f"{request.param}_{merged}"),
                                     marker="isa.copy_gm_to_l1 %a[",
                                     fusion_switch_file=None if merged else str(switch))
        y = compiled.run(inputs)["y"]
        assert compiled.last_run.problems == []
        out[merged] = kernel, y, compiled.last_run.kernels
    return request.param, model, inputs, out


def test_one_kernel_fewer_and_the_shortcut_never_stored(runs):
    name, _, _, out = runs
    c_out, size, stride, batch = CASES[name][2], *CASES[name][3:]
    cube = {merged: [k for k in kernels if k.pipe_busy.get("M")] for merged, (_, _, kernels) in out.items()}
    assert len(cube[True]) == 3 and len(cube[False]) == 4
    # the shortcut's f16 NC1HWC0 output, written by its own kernel when unmerged
    shortcut = batch * -(-c_out // 16) * (-(-size // stride)) ** 2 * 16 * 2
    written = {merged: sum(k.work["gm_write"] for k in kernels) for merged, (_, _, kernels) in out.items()}
    assert written[False] - written[True] == shortcut


def test_the_merged_kernel_reads_both_maps(runs):
    name, _, _, out = runs
    kernel = out[True][0]
    sources = set(re.findall(r"isa\.copy_gm_to_l1 %(\w+)\[[^\n]* to %a_l1", kernel))
    assert sources == {"a", "x_f16_nc1hwc0"}, sources
    # unmerged, the expand conv's A is %a alone
    assert set(re.findall(r"isa\.copy_gm_to_l1 %(\w+)\[[^\n]* to %a_l1", out[False][0])) == {"a"}
    # K in several chunks (a loop over them): each part's copy in its own loop of at most
    # one trip; in one chunk, the two copies side by side
    k = (CASES[name][0] + 15) // 16 * 16 + (CASES[name][1] + 15) // 16 * 16
    k_l1 = int(re.search(r"k_l1=(\d+)", kernel).group(1))
    parts = re.findall(r"scf\.for %(part\d)\w* = %chunk", kernel)
    assert (sorted(set(parts)) == ["part0", "part1"]) == (k_l1 < k), (k_l1, parts)
    assert (k_l1 < k) == (name in SEVERAL_CHUNKS)
    assert kernel.count("isa.max_trips = 1") >= len(parts)
    assert (f"stack={STACKED[name]}" in kernel) if name in STACKED else "stack=" not in kernel


def test_matches_onnxruntime(runs):
    name, model, inputs, out = runs
    (expected,) = onnxruntime_outputs(model, inputs)
    scale = float(np.abs(expected).max())
    for merged in (True, False):
        err = float(np.abs(out[merged][1] - expected).max()) / scale
        assert err <= TOLERANCE, f"{name} merged={merged}: {err:.2e}"
    # the check can fail: 1% more x moves the output far beyond the tolerance
    (moved,) = onnxruntime_outputs(model, {"x": inputs["x"] * 1.01})
    assert float(np.abs(moved - expected).max()) / scale > 5 * TOLERANCE


def test_fewer_cycles(runs):
    name, _, _, out = runs
    cycles = {merged: sum(k.cycles for k in kernels) for merged, (_, _, kernels) in out.items()}
    assert cycles[True] < MOST[name] * cycles[False], cycles


@pytest.mark.parametrize("soc, precision, tolerance", [
    # f32 (C0 = 8): both parts' channels in blocks of 8; the sums differ from onnxruntime's
    # only in their order (measured 2.8e-7 of the output scale)
    ("ascend910", "must_keep_origin_dtype", 1e-5),
    # the 910B's FixPipe read-out and the 310B's one core (measured 4.9e-4, as on the 910)
    ("ascend910b", "force_fp16", TOLERANCE),
    ("ascend310b", "force_fp16", TOLERANCE),
])
def test_other_chips_and_f32(soc, precision, tolerance):
    import ge

    model = _block(*CASES["stride2"])
    c_in, _, _, size, _, batch = CASES["stride2"]
    inputs = {"x": np.random.default_rng(2).standard_normal((batch, c_in, size, size)).astype(np.float32)}
    compiled = ge.compile(model, ge.CompileOptions(soc_version=soc, precision_mode=precision, keep_ir_text=False))
    y = compiled.run(inputs)["y"]
    assert len([k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]) == 3  # (the 3 x 3, the sum, the tail)
    (expected,) = onnxruntime_outputs(model, inputs)
    assert float(np.abs(y - expected).max()) / float(np.abs(expected).max()) <= tolerance
