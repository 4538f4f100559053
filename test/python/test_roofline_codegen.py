"""Tile choice toward the roofline: the Cube plans the calibrated cost model picks run in
fewer simulated cycles (closer to their roofline bound) than the plans picked when the
model assumes the K loop's MTE2 / MTE1 / Cube stages overlap fully (`K_LOOP_SERIAL = 0`,
the rule before the calibration), on resnet50's shapes: the 2048 -> 1000 classifier
(GEMV-shaped, M = 1) and a 3 x 3 convolution of layer 1. The numerics match onnxruntime
either way (f16 storage, f32 accumulation: max error within 1% of the largest output).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.lowering import tile_cost, tile_cube


def gemv_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((1000, 2048)) / 45).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(1000).astype(np.float32), "b")
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    graph = helper.make_graph([node], "fc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [1, 2048]


def conv_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [1, 64, 56, 56]


def run(model, x, monkeypatch, serial: float | None):
    """Outputs and the Cube kernel's (simulated cycles, bound), with the K-loop overlap
    share `serial` (None: as shipped). Plans are cached per problem: start empty."""
    with monkeypatch.context() as m:
        m.setattr(tile_cube, "_PLANS", {})
        if serial is not None:
            m.setattr(tile_cost, "K_LOOP_SERIAL", serial)
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False))
        out = compiled.run({"x": x})["y"]
    cube = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    assert len(cube) == 1
    return out, cube[0].alone, cube[0].bound


@pytest.mark.slow
@pytest.mark.parametrize("build", [gemv_model, conv_model], ids=["gemv_2048x1000", "conv3x3_64x56x56"])
def test_calibrated_plan_is_closer_to_the_roofline(build, monkeypatch):
    model, shape = build()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    out, cycles, bound = run(model, x, monkeypatch, None)
    old_out, old_cycles, old_bound = run(model, x, monkeypatch, 0.0)
    assert bound == old_bound and bound > 0
    for got in (out, old_out):
        assert np.abs(got - want).max() <= 0.01 * np.abs(want).max()
    assert cycles / bound < old_cycles / old_bound
