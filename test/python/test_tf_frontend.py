"""TensorFlow frozen GraphDefs through ge (`ge.load_tf`, `ge-compile --framework 3`).

References: test/data/tf/ holds GraphDefs frozen from Keras/TensorFlow models and TensorFlow's
outputs for seeded inputs (make_tf_models.py regenerates them). These tests compare ge
against those outputs without TensorFlow; the `live` test rebuilds a model with TensorFlow
itself and compares against it afresh.

Tolerances (absolute, as a fraction of the largest |output|): graph level through the
reference interpreter 1e-4; the NPU simulator in f32 (must_keep_origin_dtype) 1e-3.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ge
from ge.dialects import graph
from ge.errors import ModelFormatError, ShapeError, UnsupportedModelError
from ge.frontend.tf import import_graphdef, parse_graphdef
from ge.runtime.reference import run as run_reference
from ge.tools import ge_compile

DATA = Path(__file__).resolve().parents[1] / "data" / "tf"
sys.path.insert(0, str(DATA))
from make_tf_models import INPUTS, make_input, op_case_inputs  # noqa: E402

GRAPH_TOL = 1e-4
NPU_TOL = 1e-3
OP_CASES = {  # the inputs of make_tf_models.op_cases, which needs TensorFlow to build
    "einsum": {"x": (2, 3, 4), "y": (2, 5, 4)},
    "masks": {"x": (2, 4, 5), "y": (2, 4, 5)},
    "conv_bn_pool": {"x": (1, 12, 12, 4)},
    "elementwise": {"x": (2, 3, 4), "y": (2, 3, 4)},
    "slicing": {"x": (2, 5, 6, 4)},
    "matmul": {"x": (2, 3, 4), "y": (2, 5, 4)},
}
INPUT_SHAPE = {"small_resnet": "input:2,32,32,3"}  # its batch dim is unknown (None) in the graph


def model_bytes(name: str) -> bytes:
    return gzip.decompress((DATA / f"{name}.pb.gz").read_bytes())


def model_file(name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.pb"
    path.write_bytes(model_bytes(name))
    return path


def expected(name: str) -> np.ndarray:
    return np.load(DATA / f"{name}.npz")["output"]


def assert_close(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = float(np.abs(want).max())
    err = float(np.abs(got.astype(np.float64) - want).max())
    assert err <= tol * scale, f"max error {err:.3g} > {tol} x output scale {scale:.3g}"


def count(module, cls) -> int:
    return sum(isinstance(op, cls) for op in module.walk())


# --------------------------------------------------------------------------------------
# Graph level (reference interpreter) against TensorFlow's stored outputs
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mobilenet_v2", "small_resnet", "tiny_transformer", "keras_transformer"])
def test_model_matches_tensorflow_at_graph_level(name):
    module = ge.load_tf(model_bytes(name), input_shape=INPUT_SHAPE.get(name))
    (got,) = run_reference(module, {"input": make_input(name)})
    assert_close(got, expected(name), GRAPH_TOL)


def test_mobilenet_v2_is_nchw_inside_with_one_boundary_transpose():
    """NHWC stays the origin format at the boundary; convolutions and everything between
    them run in NCHW without a transpose pair per convolution."""
    module = ge.load_tf(model_bytes("mobilenet_v2"))
    assert count(module, graph.Conv2dOp) == 52  # 17 depthwise + 35 pointwise/full
    assert sum(graph.get_int(op.properties, "group") > 1 for op in module.walk()
               if isinstance(op, graph.Conv2dOp)) == 17
    transposes = [op for op in module.walk() if isinstance(op, graph.TransposeOp)]
    assert len(transposes) == 1 and transposes[0].input.type.get_shape() == (1, 96, 96, 3)
    assert list(graph.get_ints(transposes[0].properties, "perm")) == [0, 3, 1, 2]
    fn = next(op for op in module.walk() if op.name == "func.func")
    assert fn.function_type.inputs.data[0].get_shape() == (1, 96, 96, 3)
    assert fn.function_type.outputs.data[0].get_shape() == (1, 10)


def test_node_names_ride_as_locations_and_weights_are_blobs():
    from ge.ir import print_module

    module = ge.load_tf(model_bytes("small_resnet"), input_shape=INPUT_SHAPE["small_resnet"])
    assert "dense_resource<" in print_module(module)
    convs = [op for op in module.walk() if isinstance(op, graph.Conv2dOp)]
    conv_nodes = {n.name for n in parse_graphdef(model_bytes("small_resnet")).node if n.op == "Conv2D"}
    assert len(conv_nodes) == 6 and {op.location.desc.data for op in convs} == conv_nodes


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_op_case_matches_tensorflow(case):
    module = ge.load_tf(DATA / f"op_{case}.pb")
    want = np.load(DATA / f"op_{case}.npz")
    outs = run_reference(module, op_case_inputs(OP_CASES[case]))
    assert len(outs) == len(want.files)  # every sink of the graph is an output
    for i, got in enumerate(outs):
        assert_close(got, want[f"output_{i}"], GRAPH_TOL)


def test_outputs_can_name_an_inner_node():
    module = ge.load_tf(model_bytes("small_resnet"), input_shape=INPUT_SHAPE["small_resnet"],
                        outputs=["functional_1/global_average_pooling2d_1_1/Mean"])
    (got,) = run_reference(module, {"input": make_input("small_resnet")})
    assert got.shape == (2, 32)  # the pooled features, before the dense layer
    with pytest.raises(ModelFormatError, match="'nope' names no node"):
        ge.load_tf(model_bytes("small_resnet"), input_shape=INPUT_SHAPE["small_resnet"], outputs="nope")


def test_parsing_does_not_import_tensorflow():
    code = ("import sys, gzip, ge; "
            f"m = ge.load_tf(gzip.decompress(open({str(DATA / 'small_resnet.pb.gz')!r}, 'rb').read()), "
            "input_shape='input:1,32,32,3'); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def _nchw_or_nhwc_graph(fmt: str):
    """Conv2D (SAME, stride 2) -> BiasAdd -> FusedBatchNormV3 -> MaxPool -> Relu, all in `fmt`,
    built node by node with the protos (TensorFlow's CPU kernels do not run NCHW)."""
    from tensorboard.compat.proto import graph_pb2

    rng = np.random.default_rng(5)
    g = graph_pb2.GraphDef()

    def node(name, op, inputs=(), **attrs):
        n = g.node.add(name=name, op=op)
        n.input.extend(inputs)
        for k, v in attrs.items():
            if isinstance(v, str):
                n.attr[k].s = v.encode()
            elif isinstance(v, list):
                n.attr[k].list.i.extend(v)
            elif isinstance(v, np.ndarray):
                t = n.attr[k].tensor
                t.dtype = 1
                for d in v.shape:
                    t.tensor_shape.dim.add(size=d)
                t.tensor_content = v.astype(np.float32).tobytes()
            else:
                n.attr[k].f = v
        return n

    x = node("x", "Placeholder")
    x.attr["dtype"].type = 1
    for d in ((1, 4, 9, 9) if fmt == "NCHW" else (1, 9, 9, 4)):
        x.attr["shape"].shape.dim.add(size=d)
    node("w", "Const", value=rng.normal(0, 0.5, (3, 3, 4, 6)))
    for name in ("b", "scale", "offset", "mean"):
        node(name, "Const", value=rng.normal(0, 0.5, 6))
    node("var", "Const", value=rng.uniform(0.5, 2, 6))
    hw = (lambda a, b: [1, 1, a, b]) if fmt == "NCHW" else (lambda a, b: [1, a, b, 1])
    node("conv", "Conv2D", ["x", "w"], data_format=fmt, strides=hw(2, 2), padding="SAME")
    node("bias", "BiasAdd", ["conv", "b"], data_format=fmt)
    node("bn", "FusedBatchNormV3", ["bias", "scale", "offset", "mean", "var"], data_format=fmt, epsilon=1e-3)
    node("pool", "MaxPool", ["bn"], data_format=fmt, ksize=hw(2, 2), strides=hw(2, 2), padding="VALID")
    node("relu", "Relu", ["pool"])
    return g


def test_nchw_data_format_computes_what_nhwc_does():
    """The NHWC forms are checked against TensorFlow above; NCHW graphs must agree with them."""
    x = np.random.default_rng(6).uniform(-1, 1, (1, 4, 9, 9)).astype(np.float32)
    nchw = ge.load_tf(_nchw_or_nhwc_graph("NCHW"))
    nhwc = ge.load_tf(_nchw_or_nhwc_graph("NHWC"))
    (a,) = run_reference(nchw, [x])
    (b,) = run_reference(nhwc, [x.transpose(0, 2, 3, 1)])
    assert a.shape == (1, 6, 2, 2)
    np.testing.assert_allclose(a, b.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)
    assert count(nchw, graph.TransposeOp) == 0  # an NCHW graph needs no layout change at all


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def _graphdef(nodes):
    from tensorboard.compat.proto import graph_pb2

    g = graph_pb2.GraphDef()
    for name, op, inputs in nodes:
        n = g.node.add(name=name, op=op)
        n.input.extend(inputs)
        if op == "Placeholder":
            n.attr["dtype"].type = 1
            for d in (1, 4):
                n.attr["shape"].shape.dim.add(size=d)
    return g


def test_unsupported_ops_are_all_listed_with_node_names():
    g = _graphdef([("x", "Placeholder", []), ("cum", "Cumsum", ["x"]), ("r", "Relu", ["cum"]),
                   ("sel", "SelfAdjointEigV2", ["r"])])
    with pytest.raises(UnsupportedModelError) as e:
        import_graphdef(g.SerializeToString(), name="m.pb")
    msg = str(e.value)
    assert "2 node(s) use TensorFlow operators ge does not support" in msg
    assert "'cum' (Cumsum)" in msg and "'sel' (SelfAdjointEigV2)" in msg and "'r'" not in msg.split(". ")[0]


def test_a_graph_with_variables_asks_to_be_frozen():
    g = _graphdef([("x", "Placeholder", []), ("v", "VarHandleOp", []), ("read", "ReadVariableOp", ["v"]),
                   ("y", "AddV2", ["x", "read"])])
    with pytest.raises(UnsupportedModelError, match=r"2 node\(s\) .*'v' \(VarHandleOp\), 'read' \(ReadVariableOp\); "
                       r"the graph still has variables: freeze it first \(convert_variables_to_constants_v2\)"):
        import_graphdef(g.SerializeToString(), name="m.pb")


def test_missing_input_shape_for_an_unknown_dim_names_the_input():
    with pytest.raises(ShapeError, match=r"input 'input' has shape \[\?, 32, 32, 3\] with unknown dim\(s\) 0; "
                       r"give static dims with --input-shape \"input:1,32,32,3\""):
        ge.load_tf(model_bytes("small_resnet"))
    with pytest.raises(ShapeError, match="'image', not an input"):
        ge.load_tf(model_bytes("small_resnet"), input_shape="image:1,32,32,3")
    with pytest.raises(ShapeError, match="rank 3 but the graph says rank 4"):
        ge.load_tf(model_bytes("small_resnet"), input_shape="input:32,32,3")


@pytest.mark.parametrize("data", [b"", b"\x0a\xff\xff\xff\xff\x0f garbage", None])
def test_malformed_graphdef_is_a_format_error(data):
    if data is None:
        data = model_bytes("small_resnet")[:1000]  # truncated inside a node
    with pytest.raises(ModelFormatError, match=r"m\.pb: (the file is empty|not a valid TensorFlow GraphDef)"):
        import_graphdef(data, name="m.pb")


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = ge_compile.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_errors_are_one_line_with_exit_code_1(tmp_path, capsys):
    pb = model_file("small_resnet", tmp_path)
    om = tmp_path / "m.om"
    bad = tmp_path / "bad.pb"
    bad.write_bytes(model_bytes("small_resnet")[:1000])
    unsupported = tmp_path / "unsupported.pb"
    unsupported.write_bytes(_graphdef([("x", "Placeholder", []), ("c", "Cumsum", ["x"])]).SerializeToString())
    onnx_file = tmp_path / "m.onnx"
    _tiny_onnx(onnx_file)
    cases = [
        ((pb, "--framework", "3", "-o", om), "input 'input' has shape [?, 32, 32, 3]"),
        ((bad, "--framework", "3", "-o", om), "not a valid TensorFlow GraphDef"),
        ((unsupported, "--framework", "3", "-o", om), "'c' (Cumsum)"),
        ((pb, "--framework", "7", "-o", om), "--framework 7 is not supported; ge reads 3 (TensorFlow), 5 (ONNX)"),
        ((pb, "--framework", "5", "-o", om), "is a TensorFlow GraphDef, not an ONNX model; use --framework 3"),
        ((onnx_file, "--framework", "3", "-o", om), "is an ONNX model, not a TensorFlow GraphDef; use --framework 5"),
        ((pb, "--mode", "3"), "--mode 3 checks ONNX models only"),
    ]
    for argv, message in cases:
        code, _, err = _cli(capsys, *argv)
        assert code == 1, argv
        assert err.startswith("ge-compile: error: ") and message in err and err.count("\n") == 1, err
        assert not om.exists()


def _tiny_onnx(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(g), path)


# --------------------------------------------------------------------------------------
# The NPU path: ge-compile --framework 3, then the model file on the simulator
# --------------------------------------------------------------------------------------


def _compile_and_run(name: str, tmp_path: Path, capsys, *extra) -> np.ndarray:
    om = tmp_path / f"{name}.om"
    shape = INPUT_SHAPE.get(name)
    argv = [model_file(name, tmp_path), "--framework", "3", "-o", om, "--precision-mode", "must_keep_origin_dtype",
            *(["--input-shape", shape] if shape else []), *extra]
    code, out, err = _cli(capsys, *argv)
    assert code == 0, err
    assert f"{om}:" in out and "kernels" in out
    (got,) = ge.load_model(om).run({"input": make_input(name)}).values()
    return got


@pytest.mark.slow
@pytest.mark.parametrize("name", ["small_resnet", "tiny_transformer", "keras_transformer", "mobilenet_v2"])
def test_model_compiles_with_framework_3_and_matches_tensorflow_on_the_simulator(name, tmp_path, capsys):
    assert_close(_compile_and_run(name, tmp_path, capsys), expected(name), NPU_TOL)


def test_a_pb_file_defaults_to_tensorflow(tmp_path, capsys):
    """No --framework: the .pb extension picks TensorFlow (ATC's 3); the tile level keeps it quick."""
    om = tmp_path / "m.om"
    path = tmp_path / "elementwise.pb"
    path.write_bytes((DATA / "op_elementwise.pb").read_bytes())
    code, _, err = _cli(capsys, path, "-o", om, "--precision-mode", "must_keep_origin_dtype", "--kernel-level", "tile")
    assert code == 0, err
    inputs = op_case_inputs(OP_CASES["elementwise"])
    outs = list(ge.load_model(om).run(inputs).values())
    want = np.load(DATA / "op_elementwise.npz")
    assert len(outs) == 3
    for i, got in enumerate(outs):
        assert_close(got, want[f"output_{i}"], NPU_TOL)


def test_framework_3_reads_a_graphdef_of_any_name_and_dynamic_batch(tmp_path, capsys):
    """--framework 3 on a file not named .pb (the content decides, then ge.compile gets the
    GraphDef), with dynamic batch gears; the tile level keeps it quick."""
    path = tmp_path / "resnet.bin"
    path.write_bytes(model_bytes("small_resnet"))
    om = tmp_path / "m.om"
    code, out, err = _cli(capsys, path, "--framework", "3", "-o", om, "--precision-mode", "must_keep_origin_dtype",
                          "--kernel-level", "tile", "--input-shape", "input:-1,32,32,3", "--dynamic-batch-size", "1,2")
    assert code == 0, err
    assert "gears 1, 2" in out
    compiled = ge.load_model(om)
    assert compiled.batch_sizes == [1, 2]
    (got,) = compiled.run({"input": make_input("small_resnet")}).values()
    assert_close(got, expected("small_resnet"), NPU_TOL)


# --------------------------------------------------------------------------------------
# Live: TensorFlow builds and runs the model now (not from the stored files)
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_live_tensorflow_reference_small_resnet():
    """Part of the slow suite (select it alone with `-k live`): it needs the `test` extra's
    tensorflow-cpu and fails, not skips, without it."""
    try:
        from make_tf_models import build
        graph_def, x, want = build("small_resnet")
    except ImportError as e:
        pytest.fail(f"the live TensorFlow test needs tensorflow-cpu (pip install -e '.[test]'): {e}")
    assert x.shape == INPUTS["small_resnet"]
    module = ge.load_tf(graph_def, input_shape=INPUT_SHAPE["small_resnet"])  # a tensorflow GraphDef message
    (got,) = run_reference(module, {"input": x})
    assert_close(got, want, GRAPH_TOL)
    assert_close(want, expected("small_resnet"), 1e-6)  # the stored reference is still what TF computes
