"""A residual join (Add, then ReLU as its only use) runs as one `vaddrelu` (CCE's
ReLU(src0 + src1), `isa_vector.relu_after`), in a Cube epilogue and in a Vector kernel:
the same bits as vadd then vrelu (the sum is rounded to f16 once either way, and the ReLU
of a rounded value is the rounded ReLU), one Vector pass less, and the tiler charges it
so. Checked against onnxruntime and against the lowering with `VADDRELU` off."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.lowering import isa_vector
from ge.runtime import isa_kernels
from ge.testing import kernel_ir, onnxruntime_outputs

C, HW = 64, 28


def _block() -> onnx.ModelProto:
    """relu(conv(x) + b + x): a residual block's join, fused into the conv's epilogue; a
    pool after it keeps the join's output in NC1HWC0 (as inside a network)."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((C, C, 1, 1)) / np.sqrt(C)).astype(np.float32)
    b = (rng.standard_normal(C) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Add", ["c", "x"], ["s"], name="join"),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, HW, HW])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, C, HW // 2, HW // 2])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(8).standard_normal((2, C, HW, HW)).astype(np.float32)}


def test_vaddrelu_is_the_rounded_relu_of_the_sum():
    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal(4096).astype(np.float16) for _ in range(2))
    fused = isa_kernels.binary("isa.vaddrelu", a, b).astype(np.float16)
    apart = isa_kernels.unary("isa.vrelu", isa_kernels.binary("isa.vadd", a, b).astype(np.float16)).astype(np.float16)
    assert np.array_equal(fused, apart) and (fused == 0).sum() > 1000 and fused.min() == 0


@pytest.mark.parametrize("fused", [True, False])
def test_the_join_in_the_epilogue(tmp_path, monkeypatch, fused):
    monkeypatch.setattr(isa_vector, "VADDRELU", fused)
    compiled, kernel = kernel_ir(_block(), tmp_path, soc_version="ascend910")
    assert ("isa.vaddrelu" in kernel) is fused
    assert ("isa.vrelu" in kernel) is not fused
    got = compiled.run(_inputs())["y"]
    assert compiled.last_run.problems == []
    want = onnxruntime_outputs(_block(), _inputs())[0]
    # f16 input and weights, f32 sums (K = 64), the join in f16: within 0.5% of
    # onnxruntime's output scale
    assert np.abs(got - want).max() < 5e-3 * np.abs(want).max()


def test_the_join_same_bits_and_faster(tmp_path, monkeypatch):
    runs = {}
    for fused in (True, False):
        monkeypatch.setattr(isa_vector, "VADDRELU", fused)
        compiled, kernel = kernel_ir(_block(), tmp_path / str(fused), soc_version="ascend910")
        assert ("isa.vaddrelu" in kernel) is fused
        out = compiled.run(_inputs())["y"]
        (k,) = [k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]
        runs[fused] = out, k.cycles, k.instructions.get("V", 0)
    assert np.array_equal(runs[True][0], runs[False][0])
    assert runs[True][2] < runs[False][2]  # one Vector instruction less per tile
    assert runs[True][1] < runs[False][1], (runs[True][1], runs[False][1])  # measured 1,894 -> 1,844
