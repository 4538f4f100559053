"""Every bad input of issue 19, through the command-line tools as a user meets it: one
`<tool>: error: ...` line that names the file, input or node, exit code 1, no traceback --
and, where a check runs "before running", nothing run before it."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import ModelFormatError, ShapeError
from ge.frontend.onnx import import_model
from ge.runtime import model_file as mf

F32 = "must_keep_origin_dtype"


def tool(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"ge.tools.{name}", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def error_line(result: subprocess.CompletedProcess, tool_name: str) -> str:
    """The one error line (and exit code 1, no traceback)."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{tool_name}: error: "), result.stderr
    return lines[0]


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _x(shape=(1, 16, 16, 16)):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))


def _y():
    return helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def conv_model(kernel_shape=None, strides=None, weight=(8, 3, 3, 3)) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal(weight).astype(np.float32), "w")
    attrs = {} if kernel_shape is None else {"kernel_shape": list(kernel_shape)}
    conv = helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1], **attrs)
    if strides is not None:
        conv.attribute.append(strides)
    relu = helper.make_node("Relu", ["c"], ["y"], name="relu1")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, weight[0], 8, 8])
    return _model([conv, relu], [_x((1, 3, 8, 8))], [y], [w])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A relu model (input x [1, 16, 16, 16]) compiled at the tile level, and its source."""
    d = tmp_path_factory.mktemp("bad")
    src = d / "relu.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [_x()], [_y()]), src)
    om = d / "relu.om"
    ge.compile(src, ge.CompileOptions(kernel_level="tile", precision_mode=F32)).save(om)
    return d, src, om


# --------------------------------------------------------------------------------------
# --input-shape
# --------------------------------------------------------------------------------------


def test_a_zero_dim_in_input_shape(files, tmp_path):
    _, src, _ = files
    line = error_line(tool("ge_compile", src, "-o", tmp_path / "m.om", "--input-shape", "x:0,16,16,16"), "ge-compile")
    assert "input_shape entry 'x:0,16,16,16': dim 0 is 0; every dim must be positive" in line
    with pytest.raises(ShapeError, match="dim 2 is 0"):
        ge.compile(src, ge.CompileOptions(input_shape="x:1,16,0,16"))


def test_input_shape_naming_a_missing_input(files, tmp_path):
    _, src, _ = files
    line = error_line(tool("ge_compile", src, "-o", tmp_path / "m.om", "--input-shape", "foo:1,16,16,16"),
                      "ge-compile")
    assert line == ("ge-compile: error: relu.onnx: input_shape names 'foo', which is not an input of the model; "
                    "its inputs: 'x' [1, 16, 16, 16]")
    assert not (tmp_path / "m.om").exists()


def test_symbolic_dims_hint_gives_concrete_dims(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    path = tmp_path / "sym.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [x], [_y()]), path)
    line = error_line(tool("ge_compile", path, "-o", tmp_path / "m.om"), "ge-compile")
    assert "input 'x' [N, 3, H, W] has symbolic dims 'N' (dim 0), 'H' (dim 2), 'W' (dim 3)" in line
    assert "x:N" not in line and "N,3,N,N" not in line
    hint = re.search(r'e\.g\. "([^"]+)"', line).group(1)
    assert hint == "x:1,3,224,224"
    module = import_model(path, input_shape=hint)  # the hint is a shape the importer takes
    (arg,) = module.ops.first.body.block.args
    assert list(arg.type.get_shape()) == [1, 3, 224, 224]


# --------------------------------------------------------------------------------------
# Import checks (onnx.checker / shape inference's rules)
# --------------------------------------------------------------------------------------


def test_conv_kernel_shape_disagreeing_with_its_weight(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(kernel_shape=(7, 7)), path)
    line = error_line(tool("ge_compile", path, "-o", tmp_path / "m.om"), "ge-compile")
    assert line == ("ge-compile: error: conv.onnx: node 'conv1' (Conv, opset 17): kernel_shape [7, 7] disagrees with "
                    "the weight 'w' of shape [8, 3, 3, 3] (a 3x3 kernel)")
    # why it must be refused: ONNX's shape inference follows the attribute (a 4x4 output),
    # the weight a 3x3 kernel (8x8): whichever ge took, it would disagree with onnxruntime
    inferred = onnx.shape_inference.infer_shapes(conv_model(kernel_shape=(7, 7)))
    (c,) = [v for v in inferred.graph.value_info if v.name == "c"]
    assert [d.dim_value for d in c.type.tensor_type.shape.dim] == [1, 8, 4, 4]
    module = import_model(conv_model(kernel_shape=(3, 3)))  # the agreeing one imports
    assert "tensor<1x8x8x8xf32>" in str(module)


def test_attribute_of_the_wrong_type(tmp_path):
    path = tmp_path / "float_strides.onnx"
    onnx.save(conv_model(strides=helper.make_attribute("strides", 2.0)), path)
    line = error_line(tool("ge_compile", path, "-o", tmp_path / "m.om"), "ge-compile")
    assert line == ("ge-compile: error: float_strides.onnx: node 'conv1' (Conv, opset 17): attribute 'strides' is "
                    "FLOAT; ONNX requires INTS")
    with pytest.raises(onnx.checker.ValidationError, match="Mismatched attribute type"):
        onnx.checker.check_model(conv_model(strides=helper.make_attribute("strides", 2.0)))


@pytest.mark.parametrize(("op", "attrs", "message"), [
    ("MaxPool", {"kernel_shape": [2]}, r"kernel_shape \[2\] has 1 entries; the input \[1, 16, 16, 16\] has 2 spatial "
                                       r"dim\(s\), so it needs 2"),
    ("AveragePool", {"kernel_shape": [2, 2], "pads": [1, 1]}, r"pads \[1, 1\] has 2 entries; .* so it needs 4"),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2, 2]}, r"strides \[2, 2, 2\] has 3 entries"),
])
def test_window_attributes_of_the_wrong_length(op, attrs, message):
    """A 1-entry kernel_shape on a 2-D pool must not be read as [1, 2]: ONNX's shape
    inference refuses it ("Attribute kernel_shape has incorrect size"), so does the importer."""
    model = _model([helper.make_node(op, ["x"], ["y"], name="pool1", **attrs)], [_x()], [_y()])
    with pytest.raises(ModelFormatError, match=rf"node 'pool1' \({op}, opset 17\): {message}"):
        import_model(model)
    with pytest.raises(onnx.shape_inference.InferenceError, match="has incorrect size"):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_unknown_attribute():
    model = conv_model(strides=helper.make_attribute("stride", [2, 2]))
    with pytest.raises(ModelFormatError, match=r"node 'conv1' \(Conv, opset 17\): unknown attribute 'stride' "
                                               r"\(opset 11 Conv has: auto_pad, dilations, group, kernel_shape"):
        import_model(model)
    with pytest.raises(onnx.checker.ValidationError, match="Unrecognized attribute: stride"):
        onnx.checker.check_model(model)


def test_ge_opt_reports_import_checks_too(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(kernel_shape=(5, 5)), path)
    line = error_line(tool("ge_opt", path), "ge-opt")
    assert "node 'conv1' (Conv, opset 17): kernel_shape [5, 5] disagrees with the weight 'w'" in line


# --------------------------------------------------------------------------------------
# ge-run arguments, checked before the model runs
# --------------------------------------------------------------------------------------


def test_compare_with_a_model_of_other_inputs(files):
    d, _, om = files
    other = d / "other.onnx"
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 8, 8])
    onnx.save(_model([helper.make_node("Relu", ["a"], ["y"])], [a], [_y()]), other)
    result = tool("ge_run", om, "--compare", other)
    line = error_line(result, "ge-run")
    assert line == (f"ge-run: error: --compare {other} does not take the inputs of {om}: it takes 'a' [1, 3, 8, 8] "
                    f"float32; {om} takes 'x' [1, 16, 16, 16] float32")
    assert result.stdout == ""  # nothing ran: no per-kernel table


def test_compare_with_other_dims(files):
    d, _, om = files
    other = d / "other_dims.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"])], [_x((1, 16, 8, 8))], [_y()]), other)
    result = tool("ge_run", om, "--compare", other)
    assert "it takes 'x' [1, 16, 8, 8] float32" in error_line(result, "ge-run") and result.stdout == ""


def test_compare_with_the_source_still_works(files):
    _, src, om = files
    result = tool("ge_run", om, "--compare", src)
    assert result.returncode == 0, result.stderr
    assert re.search(r"y: max abs error 0, error / output scale 0", result.stdout), result.stdout


@pytest.mark.parametrize(("content", "why"), [
    (b"name,value\nx,1\n", r"not a numpy \.npz file \(it does not start with the \.npz signature"),
    (b"PK\x03\x04 truncated zip", r"a damaged \.npz file"),
])
def test_inputs_that_are_not_an_npz(files, content, why):
    d, _, om = files
    bad = d / "inputs.npz"
    bad.write_bytes(content)
    result = tool("ge_run", om, "--inputs", bad)
    line = error_line(result, "ge-run")
    assert line.startswith(f"ge-run: error: --inputs {bad}: ") and re.search(why, line), line
    assert result.stdout == ""


def test_an_npy_given_as_npz_and_the_reverse(files):
    d, _, om = files
    npy = d / "x.npy"
    np.save(npy, np.zeros((1, 16, 16, 16), np.float32))
    wrong = d / "x_really_npy.npz"
    wrong.write_bytes(npy.read_bytes())
    assert "(it is an .npy file)" in error_line(tool("ge_run", om, "--inputs", wrong), "ge-run")
    assert tool("ge_run", om, "--inputs", npy).returncode == 0


# --------------------------------------------------------------------------------------
# Model files that are well-formed but wrong, refused at load
# --------------------------------------------------------------------------------------


def test_block_dim_beyond_the_chips_cores(files, tmp_path):
    _, _, om = files
    model = mf.load_model(om)
    assert model.metadata["target"] == "ascend910"
    launch = next(j for j, t in enumerate(model.tasks) if t["op"] == "launch")
    kernel = model.definition["kernels"][model.tasks[launch]["kernel"]]["name"]
    model.tasks[launch]["block_dim"] = 64
    bad = tmp_path / "bd64.om"
    mf.save_model(bad, model)
    expected = (f"{bad}: task #{launch} (launch of @{kernel}) has block_dim 64, but ascend910 has 32 AI cores "
                "(was the file built for another chip?)")
    assert error_line(tool("ge_run", bad), "ge-run") == f"ge-run: error: {expected}"
    assert error_line(tool("ge_compile", "--mode", "1", "--om", bad), "ge-compile") == f"ge-compile: error: {expected}"
    model.tasks[launch]["block_dim"] = 32  # at most the cores: loads
    mf.save_model(bad, model)
    mf.load_model(bad)


def test_resaved_model_with_inconsistent_input_shape(files, tmp_path):
    _, _, om = files
    model = mf.load_model(om)
    model.metadata["inputs"][0]["shape"] = [1, 16, 8, 8]
    bad = tmp_path / "resaved.om"
    mf.save_model(bad, model)
    line = error_line(tool("ge_run", bad), "ge-run")
    assert line == (f"ge-run: error: {bad}: input 'x' is [1, 16, 8, 8] float32 in the metadata, but its tensor #0 is "
                    "[1, 16, 16, 16] float32; the file was edited or re-saved inconsistently: compile the model again")


def test_resaved_model_with_inconsistent_output_dtype(files, tmp_path):
    _, _, om = files
    model = mf.load_model(om)
    model.metadata["outputs"][0]["dtype"] = "float16"
    bad = tmp_path / "resaved_out.om"
    mf.save_model(bad, model)
    with pytest.raises(mf.InconsistentModelError, match=r"resaved_out\.om: output 'y' is \[1, 16, 16, 16\] float16 "
                                                        r"in the metadata, but its tensor #\d+ is \[1, 16, 16, 16\] float32"):
        mf.load_model(bad)
