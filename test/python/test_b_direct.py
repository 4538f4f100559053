"""A conv's K steps taking their B fractals GM -> L0B on MTE2 (`tile_cube.B_DIRECT`,
`CubePlan.b_direct`, `isa.copy_gm_to_l0b`: Load2D's GM -> B2 path) instead of GM -> L1 on
MTE2 and L1 -> L0B on MTE1, where no tile reuses the weights it loads: a step's A move
(MTE1) and B move (MTE2) then run side by side, and the Cube is no longer paced by the two
moves one after the other. ResNet-50's 3 x 3 conv at 56 x 56, batch 1: 3,369 -> 2,853
simulated cycles (the same weight bytes read from GM). The same arithmetic in the same
order: the same bits; against onnxruntime within 0.1% of the output scale (f16 input and
weights, f32 sums over K = 576, 2,304 and 144: measured 0.04-0.06%)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.lowering import tile_cube
from ge.testing import kernel_ir, onnxruntime_outputs


def _conv(channels: int, size: int, group: int = 1, stride: int = 1) -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    fan_in = channels // group * 9
    w = (rng.standard_normal((channels, channels // group, 3, 3)) / np.sqrt(fan_in)).astype(np.float32)
    b = (rng.standard_normal(channels) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], group=group, strides=[stride] * 2,
                              name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                            [1, channels, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# (channels, size, group, stride): resnet50's 3 x 3 conv of stage 1 (order "mn", K in two
# chunks) and of stage 3 (order "nm", K in 8 chunks: B was loaded per M tile and chunk
# anyway), and a depthwise conv (GE's extended groups, 16 channels per GEMM)
CASES = {"stage1": (64, 56, 1, 1), "stage3": (256, 14, 1, 1), "depthwise": (32, 28, 32, 2)}
# the B loads GM -> L1 the plan through L1 makes (one per tile and K chunk: 28 x 2, 32 cores x
# 1 M tile x 8 chunks, 14 x 1) and the most its direct cycles may be of those through L1
# (measured 2,853 / 3,369 = 0.85, 3,653 / 4,235 = 0.86 and 1,312 / 1,350 = 0.97: one K step
# per chunk, so only the L1 round trip of each step's B is saved)
CHUNK_LOADS = {"stage1": 56, "stage3": 256, "depthwise": 14}
MOST = {"stage1": 0.9, "stage3": 0.9, "depthwise": 0.99}


def _inputs(channels: int, size: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(2).standard_normal((1, channels, size, size)).astype(np.float32)}


@pytest.fixture(scope="module", params=list(CASES))
def runs(request, tmp_path_factory):
    channels, size, group, stride = CASES[request.param]
    model, inputs = _conv(channels, size, group, stride), _inputs(channels, size)
    out = {}
    for direct in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tile_cube, "B_DIRECT", direct)
            compiled, kernel = kernel_ir(model, tmp_path_factory.mktemp(f"{request.param}_{direct}"),
                                         soc_version="ascend910", super_kernel=False)
            y = compiled.run(inputs)["y"]
            assert compiled.last_run.problems == []
            (conv,) = [k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]
            out[direct] = kernel, y, conv
    return request.param, model, inputs, out


def test_the_plan_loads_b_straight_into_l0b(runs):
    _, _, _, out = runs
    kernel = out[True][0]
    assert " b_direct " in kernel
    assert "isa.copy_gm_to_l0b" in kernel and "isa.copy_l1_to_l0b" not in kernel
    assert "%b_l1" not in kernel  # no L1 copy of the weights
    assert " b_direct " not in out[False][0] and "isa.copy_gm_to_l0b" not in out[False][0]


def test_b_moves_leave_mte1_for_mte2_and_the_kernel_is_faster(runs):
    name, _, _, out = runs
    direct, through_l1 = out[True][2], out[False][2]
    # every K step's B move (one per mmad) left MTE1 for MTE2, where the steps' loads replace
    # the chunks' B loads
    steps = direct.instructions["M"]
    assert through_l1.instructions["M"] == steps
    assert through_l1.instructions["MTE1"] - direct.instructions["MTE1"] == steps
    assert direct.instructions["MTE2"] - through_l1.instructions["MTE2"] == steps - CHUNK_LOADS[name]
    # the same weight bytes from GM (HBM or L2), not more: each step's B was read once per tile either way
    assert direct.work["gm_read"] == through_l1.work["gm_read"]
    assert direct.cycles < MOST[name] * through_l1.cycles, (name, direct.cycles, through_l1.cycles)


def test_same_bits_and_onnxruntime(runs):
    _, model, inputs, out = runs
    assert np.array_equal(out[True][1], out[False][1])
    want = onnxruntime_outputs(model, inputs)[0]
    assert np.abs(out[True][1] - want).max() < 1e-3 * np.abs(want).max()
