"""What keeps `ge-compile` fast without changing what it compiles: the compile path does
not import the packages only other commands need, and the shortcuts taken on the way give
the answers of the long way (`is_splat`, the weights region written in place)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.transforms.graph_utils import is_splat

# Loaded by ge-run / ge-compare / ge.quantize / ge.from_torch, never by compiling an ONNX model.
NOT_ON_THE_COMPILE_PATH = ("onnx.reference", "onnxruntime", "torch", "tensorflow", "sklearn", "scipy")


def _relu_conv(path) -> None:
    w = numpy_helper.from_array(np.linspace(-1, 1, 8 * 4 * 3 * 3, dtype=np.float32).reshape(8, 4, 3, 3), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def test_ge_compile_does_not_import_what_it_does_not_run(tmp_path):
    """A whole `ge-compile` run, in a fresh interpreter: the model file is written and none
    of the packages of the other commands (reference interpreter, onnxruntime, torch) got
    imported on the way."""
    _relu_conv(tmp_path / "m.onnx")
    script = (
        "import json, sys\n"
        "from ge.tools.ge_compile import main\n"
        f"status = main([{str(tmp_path / 'm.onnx')!r}, '-o', {str(tmp_path / 'm.om')!r}])\n"
        "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 0 and (tmp_path / "m.om").stat().st_size > 1000
    loaded = [m for m in result["modules"] if m.split(".")[0] in NOT_ON_THE_COMPILE_PATH or m.startswith("onnx.reference")]
    assert loaded == []
    assert "ge.lowering.to_isa" in result["modules"]  # it did compile down to isa in that process


@pytest.mark.parametrize(("values", "splat"), [
    ([2.0] * 40, True),
    ([1.0, 2.0] + [1.0] * 38, False),  # differs at once
    ([1.0] * 39 + [2.0], False),  # the first two agree, the last does not
    ([np.nan] * 40, False),  # NaN never equals itself
    ([0.0, -0.0] * 20, True),  # equal as numbers
    ([3.0], True),
])
def test_is_splat(values, splat):
    arr = np.array(values, np.float32)
    assert is_splat(arr) is splat
    assert is_splat(arr.reshape(-1, 1)[::-1]) is splat  # a non-contiguous view answers the same


def test_weights_region_holds_each_weight_bytes(tmp_path):
    """The WEIGHTS partition (written into the region in place) holds each weight's bytes
    at its tensor's offset, before and after a save / load round trip."""
    import ge

    _relu_conv(tmp_path / "m.onnx")
    compiled = ge.compile(str(tmp_path / "m.onnx"))
    model = compiled.model
    w_start, _ = model.definition["regions"]["weights"]
    weights = [t for t in model.definition["tensors"] if t.get("kind") == "weight"]
    assert weights and len(model.weights) >= sum(t["bytes"] for t in weights)
    compiled.save(tmp_path / "m.om")
    loaded = ge.load_model(tmp_path / "m.om").model
    assert bytes(loaded.weights) == bytes(model.weights)
    # the conv weight, f16 (force_fp16) in FRACTAL_Z: its 288 values (no zero among them) plus zero padding
    expected = np.sort(np.linspace(-1, 1, 8 * 4 * 3 * 3, dtype=np.float32).astype(np.float16))
    got = [np.frombuffer(bytes(model.weights), np.float16, t["bytes"] // 2, t["offset"] - w_start) for t in weights
           if t["dtype"] == "float16"]
    assert [np.array_equal(np.sort(g[g != 0]), expected) for g in got] == [True]
