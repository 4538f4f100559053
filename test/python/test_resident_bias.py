"""On the 910 a Cube kernel's bias goes into L0C by `broadcast_ub_to_l0c` before each
tile's mmads. With `to_isa.RESIDENT_BIAS` the whole bias is copied in and cast to f32 once
at the kernel's start (zero padded to whole tiles and repeats), and the tiles broadcast
their columns from there: no per-tile copy-in on MTE2 (which waited for the Vector unit
and held up the next tiles' loads behind it) and no per-tile cast. An epilogue that also
loads a residual keeps the per-tile copy (`resident_bias_plans`). Checked against
onnxruntime, free of hazards, the same bits as the per-tile copy, and faster."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.lowering import to_isa
from ge.testing import kernel_ir, onnxruntime_outputs

HW = 28


def _conv(cout: int, residual: bool = False) -> onnx.ModelProto:
    """A 1 x 1 conv 64 -> cout with bias and ReLU (after adding `r` with `residual`)."""
    rng = np.random.default_rng(cout)
    w = (rng.standard_normal((cout, 64, 1, 1)) / 8).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, HW, HW])]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv")]
    last = "c"
    if residual:
        ins.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, cout, HW, HW]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["s"], name="add"))
        last = "s"
    nodes.append(helper.make_node("Relu", [last], ["y"], name="relu"))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, HW, HW])
    graph = helper.make_graph(nodes, "conv1x1", ins, [y], [numpy_helper.from_array(w, "w"),
                                                          numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def _compile(model, tmp_path, resident: bool, monkeypatch, tag: str):
    monkeypatch.setattr(to_isa, "RESIDENT_BIAS", resident)
    return kernel_ir(model, tmp_path / f"{tag}_{resident}", stage="to-isa")


def _bias_copies(kernel: str) -> list[str]:
    return re.findall(r"isa\.copy_gm_to_ub %(?:\w+_)?b_f16\b.*", kernel)


# 256 output channels: whole tiles; 40: the last tile reads past the bias, into the zero padding
@pytest.mark.parametrize("cout", [256, 40])
def test_bias_copied_once_same_bits_faster(cout, tmp_path, monkeypatch):
    model = _conv(cout)
    x = _inputs(model)
    want = onnxruntime_outputs(model, x)[0]
    got, cycles = {}, {}
    for resident in (False, True):
        compiled, kernel = _compile(model, tmp_path, resident, monkeypatch, f"c{cout}")
        copies = _bias_copies(kernel)
        if resident:  # one copy of the whole bias, before any loop
            assert len(copies) == 1 and f"sizes [{cout}]" in copies[0], copies
            assert kernel.index(copies[0]) < kernel.index("scf.for")
            assert "bias_all_f32" in kernel
        else:
            assert copies and all(f"sizes [{cout}]" not in c for c in copies), copies
        got[resident] = compiled.run(x)["y"]
        assert compiled.last_run.problems == []
        (k,) = [k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]
        cycles[resident] = k.cycles
    assert np.array_equal(got[False], got[True])
    # f16 inputs and weights, f32 sums (K = 64), f16 output: within 0.3% of onnxruntime's f32
    # output scale (measured 0.05%)
    assert np.abs(got[True] - want).max() < 3e-3 * np.abs(want).max()
    if cout == 256:  # 4 column tiles per core (1,474 -> 1,508 cycles at 40: one small tile, the cast of 128)
        assert cycles[True] < cycles[False], cycles


def test_residual_epilogue_keeps_the_per_tile_copy(tmp_path, monkeypatch):
    _, kernel = _compile(_conv(256, residual=True), tmp_path, True, monkeypatch, "res")
    copies = _bias_copies(kernel)
    assert copies and all("sizes [256]" not in c for c in copies), copies
    assert "bias_all" not in kernel
