"""The conv bias added by the Cube (`tile_cube.CUBE_BIAS`): on the 910 (no FixPipe) the bias
went into every L0C tile by `broadcast_ub_to_l0c`, one per row fractal on the Vector unit;
now an all-ones A column block times a resident [16, N] bias block (K row 0 = the bias) ends
each tile's mmad chain. Checked against onnxruntime, free of hazards, against the same model
without its bias (so the bias is really added), faster where the broadcasts cost the Vector
unit, and left to the epilogue where the block would not fit L0B (N > 1024)."""

from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ge.lowering import tile_cube
from ge.testing import kernel_ir, onnxruntime_outputs

BATCH, HW = 2, 56


def _conv(cout: int, bias_scale: float = 1.0, cin: int = 64) -> onnx.ModelProto:
    """Conv 1 x 1 (cin -> cout) with bias, then ReLU: resnet50's stage-1 expand conv at batch 2."""
    rng = np.random.default_rng(21)
    w = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    b = (rng.standard_normal(cout) * bias_scale).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, cin, HW, HW])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, cout, HW, HW])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs(cin: int = 64) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(22).standard_normal((BATCH, cin, HW, HW)).astype(np.float32)}


def _compile(model: onnx.ModelProto, tmp_path, name: str, on: bool, monkeypatch):
    monkeypatch.setattr(tile_cube, "CUBE_BIAS", on)
    return kernel_ir(model, tmp_path / name, soc_version="ascend910")


def _bias_mmads(kernel: str) -> int:
    """The kernel's mmads of one K block of 16 from the ones block (the bias mmads)."""
    return len(re.findall(r"isa\.mmad %c_l0\w*, %ones_l0, %bias_l0\[[^]]*\] m \d+ k 16 ", kernel))


def test_the_cube_adds_the_bias(tmp_path, monkeypatch):
    model = _conv(256)
    want = onnxruntime_outputs(model, _inputs())[0]
    cycles = {}
    for on in (False, True):
        compiled, kernel = _compile(model, tmp_path, str(on), on, monkeypatch)
        if on:
            assert "cube_bias" in kernel, kernel[:600]  # the plan takes it
            assert "broadcast_ub_to_l0c" not in kernel
            assert _bias_mmads(kernel) >= 1
            # the ones block made once per kernel: a dup in UB, UB -> L1, L1 -> L0A; the bias
            # block GM -> L1 -> L0B once, before the tile loop
            assert kernel.count("isa.vdup %ones_ub") == 1 and kernel.count("isa.copy_l1_to_l0a %ones_l1") == 1
            assert kernel.count("isa.copy_l1_to_l0b %bias_l1") == 1
            assert kernel.index("isa.copy_l1_to_l0b %bias_l1") < kernel.index("scf.for")
        else:
            assert "cube_bias" not in kernel and _bias_mmads(kernel) == 0
            assert kernel.count("isa.broadcast_ub_to_l0c") >= 1
        got = compiled.run(_inputs())["y"]
        assert compiled.last_run.problems == []
        # f16 input, weights and bias, f32 sums (K = 64), f16 output: within 0.2% of the
        # output scale (measured 0.05%)
        assert np.abs(got - want).max() < 2e-3 * np.abs(want).max()
        (k,) = [k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]
        cycles[on] = k.cycles
    # the bias is added: the output without it is far from what the kernel gives
    unbiased = onnxruntime_outputs(_conv(256, bias_scale=0.0), _inputs())[0]
    assert np.abs(got - unbiased).max() > 50 * 2e-3 * np.abs(want).max()
    # the Vector unit no longer broadcasts 14 fractals per 112 x 128 tile (measured 5,189 -> 3,960)
    assert cycles[True] < 0.85 * cycles[False], cycles


def test_a_partial_last_n_tile_reads_zeros_past_the_bias(tmp_path, monkeypatch):
    """80 channels: the block's columns past N (up to the last N tile's end) read as zeros,
    inside the block's L0B buffer (resnet50_b16's k27 read past it before the block was
    padded to whole N tiles)."""
    model = _conv(80)
    compiled, kernel = _compile(model, tmp_path, "partial", True, monkeypatch)
    plan = re.search(r"m=(\d+) n=(\d+)", kernel)
    assert plan is not None and "cube_bias" in kernel, kernel[:600]
    assert 80 % int(plan.group(2)) or int(plan.group(2)) == 80
    got = compiled.run(_inputs())["y"]
    assert compiled.last_run.problems == []
    want = onnxruntime_outputs(model, _inputs())[0]
    assert np.abs(got - want).max() < 2e-3 * np.abs(want).max()


def test_a_block_too_large_for_l0b_stays_in_the_epilogue(tmp_path, monkeypatch):
    """N = 2048 > 1024: the block would take over half of L0B, so the bias is broadcast."""
    _, kernel = _compile(_conv(2048, cin=16), tmp_path, "large", True, monkeypatch)
    assert "cube_bias" not in kernel and _bias_mmads(kernel) == 0
    assert kernel.count("isa.broadcast_ub_to_l0c") >= 1
