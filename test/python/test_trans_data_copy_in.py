"""A layout conversion that pads (`fuse._pads`: NCHW -> NC1HWC0 with C not a multiple of
C0) joins the kernel that reads it (TbeTransDataFusionPass on copy-in) before the one that
writes its input (`fuse.PADDED_ON_COPY_IN`): a network's f32 input of 3 channels is cast to
f16 and written plain (3 channels) instead of in C0 = 16 blocks (16 channels, 5.3x the
bytes), and the first conv converts it as it loads it (C04 reads 4-channel blocks). Against
onnxruntime within 0.1% of the output scale (f16 input and weights, f32 sums over K = 147:
measured 0.06%). A conversion that does not pad keeps the producer as its host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.lowering import fuse
from ge.testing import onnxruntime_outputs


def _model(channels: int) -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((64, channels, 7, 7)) / np.sqrt(49 * channels)).astype(np.float32)
    b = (rng.standard_normal(64) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[3, 3, 3, 3], name="conv1"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "first_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, channels, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs(channels: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(2).standard_normal((2, channels, 224, 224)).astype(np.float32)}


def _compile(channels: int, copy_in: bool, dump: Path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fuse, "PADDED_ON_COPY_IN", copy_in)
        compiled = ge.compile(_model(channels), ge.CompileOptions(precision_mode="force_fp16", soc_version="ascend910",
                                                                  dump_ir=str(dump), super_kernel=False))
    y = compiled.run(_inputs(channels))["y"]
    assert compiled.last_run.problems == []
    return compiled, y, next(dump.glob("*_tile.mlir")).read_text()


@pytest.fixture(scope="module")
def three_channels(tmp_path_factory):
    return {on: _compile(3, on, tmp_path_factory.mktemp(str(on))) for on in (True, False)}


def test_the_cast_writes_the_plain_input_and_the_conv_converts_it(three_channels):
    compiled, _, text = three_channels[True]
    cast, conv = compiled.last_run.kernels[:2]
    assert cast.work["gm_write"] == 2 * 3 * 224 * 224 * 2  # f16, 3 channels: no C0 padding
    assert three_channels[False][0].last_run.kernels[0].work["gm_write"] == 2 * 1 * 224 * 224 * 16 * 2
    conv_kernel = text[text.index(f"tile.kernel @{conv.kernel}"):]
    conv_kernel = conv_kernel[:conv_kernel.index("\n  }")]
    assert "TbeTransDataFusionPass" in conv_kernel and "memref<2x3x224x224xf16, #tile.space<gm>>" in conv_kernel


def test_fewer_cycles_and_the_same_values(three_channels):
    (on, y_on, _), (off, y_off, _) = three_channels[True], three_channels[False]
    both = [sum(k.cycles - k.dispatch for k in c.last_run.kernels[:2]) for c in (on, off)]
    # measured without the dispatches: 9,027 -> 6,870 cycles (the cast 2,464 -> 1,198, conv1 6,563 -> 5,672)
    assert both[0] < 0.9 * both[1], both
    want = onnxruntime_outputs(_model(3), _inputs(3))[0]
    for y in (y_on, y_off):
        assert np.abs(y - want).max() < 1e-3 * np.abs(want).max()


def test_a_conversion_without_padding_stays_with_its_producer(tmp_path):
    compiled, y, text = _compile(16, True, tmp_path)
    cast = compiled.last_run.kernels[0]
    assert cast.work["gm_write"] == 2 * 1 * 224 * 224 * 16 * 2  # NC1HWC0 written by the cast
    first = text[text.index("tile.kernel @"):]
    assert "TbeTransDataFusionPass" in first[:first.index("\n")]
    want = onnxruntime_outputs(_model(16), _inputs(16))[0]
    assert np.abs(y - want).max() < 1e-3 * np.abs(want).max()
