"""Bad input gives one clear error naming the file, node or input, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ge.errors import ModelFormatError, ShapeError, UnsupportedModelError
from ge.frontend.onnx import import_model, parse_input_shape
from ge.runtime.reference import run
from ge.testing import light_model_path


def _model(nodes, inputs, outputs, opset=17, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ge_opt(*args):
    return subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", *args], capture_output=True, text=True)


def test_truncated_file(tmp_path):
    data = light_model_path("squeezenet").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelFormatError, match=r"cut\.onnx: not a valid ONNX model"):
        import_model(path)
    proc = _ge_opt(str(path))
    assert proc.returncode == 1
    assert "cut.onnx: not a valid ONNX model" in proc.stderr and "Traceback" not in proc.stderr


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "image.onnx"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    proc = _ge_opt(str(path))
    assert proc.returncode == 1
    assert "image.onnx" in proc.stderr and "Traceback" not in proc.stderr


def test_empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelFormatError, match="empty"):
        import_model(path)


def test_missing_file(tmp_path):
    with pytest.raises(ModelFormatError, match="no such file"):
        import_model(tmp_path / "nope.onnx")


def test_every_unsupported_operator_is_listed(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok_relu"),
        helper.make_node("Hardmax", ["a"], ["b"], name="hm1"),
        helper.make_node("FindMax", ["b"], ["c"], name="custom1", domain="com.acme"),
        helper.make_node("Det", ["c"], ["y"], name="det1"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)],
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    with pytest.raises(UnsupportedModelError) as err:
        import_model(path)
    msg = str(err.value)
    assert "3 node(s)" in msg
    assert "'hm1' (ai.onnx::Hardmax, opset 17)" in msg
    assert "'custom1' (com.acme::FindMax, opset 1)" in msg
    assert "'det1' (ai.onnx::Det, opset 17)" in msg
    assert "ok_relu" not in msg
    proc = _ge_opt(str(path))
    assert proc.returncode == 1 and "hm1" in proc.stderr and "det1" in proc.stderr and "Traceback" not in proc.stderr


def _dynamic_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def test_dynamic_dim_needs_input_shape():
    with pytest.raises(ShapeError, match=r"input 'x' \[N, 3\] has symbolic dim 'N' \(dim 0\).*e\.g\. \"x:1,3\""):
        import_model(_dynamic_model())


def test_input_shape_override():
    module = import_model(_dynamic_model(), input_shape="x:5,3")
    (out,) = run(module, [np.full((5, 3), -1.0, np.float32)])
    assert out.shape == (5, 3) and float(out.max()) == 0.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [("x=1,3", "not of the form"), ("x:1,a", "must be integers")],
)
def test_bad_input_shape_spec(spec, message):
    with pytest.raises(ShapeError, match=message):
        parse_input_shape(spec)


def test_input_shape_rank_mismatch():
    with pytest.raises(ShapeError, match="rank 3 but the model says rank 2"):
        import_model(_dynamic_model(), input_shape="x:1,2,3")


def test_node_error_names_the_node():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], [x, w], [y])
    with pytest.raises(UnsupportedModelError, match=r"node 'proj' \(MatMul, opset 17\): contraction dims differ"):
        import_model(model)


def test_shape_input_needs_a_value():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], [x, s], [y])
    with pytest.raises(UnsupportedModelError, match=r"'rs' \(Reshape\) needs the value of graph input\(s\) s"):
        import_model(model)


def test_opset_out_of_range():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [helper.make_tensor_value_info("y", 1, None)], opset=5)
    with pytest.raises(UnsupportedModelError, match="opset 5 is older than 7, and these operators changed meaning since: Relu"):
        import_model(model)
    model.opset_import[0].version = 99
    with pytest.raises(UnsupportedModelError, match="opset 99 is outside the supported range"):
        import_model(model)


def test_old_opset_with_unchanged_operators_is_accepted():
    x = helper.make_tensor_value_info("x", TensorProto.BOOL, [3])
    model = _model([helper.make_node("Not", ["x"], ["y"])], [x], [helper.make_tensor_value_info("y", 9, None)], opset=1)
    (out,) = run(import_model(model), [np.array([True, False, True])])
    np.testing.assert_array_equal(out, [False, True, False])


def test_onnx_text_syntax(tmp_path):
    path = tmp_path / "m.onnxtxt"
    path.write_text(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (float[2,3] x) => (float[2,3] y) { y = Relu(x) }\n"
    )
    (out,) = run(import_model(path), [np.array([[-1, 2, -3], [4, -5, 6]], np.float32)])
    np.testing.assert_array_equal(out, [[0, 2, 0], [4, 0, 6]])
    path.write_text("g (float[2] x) => (y) { y = Relu(x ")
    with pytest.raises(ModelFormatError, match="cannot parse ONNX text"):
        import_model(path)


def test_invalid_ir_is_a_located_error(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = graph.relu %x : tensor<3xf32>\n")
    proc = _ge_opt(str(path))
    assert proc.returncode == 1
    assert "bad.mlir" in proc.stderr and "Traceback" not in proc.stderr
