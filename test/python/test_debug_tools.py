"""The accuracy and profiling tools of issue 19: `ge-run --by-node` (cycles per ONNX node),
`ge-run --dump` (kernel outputs by ONNX tensor name, back in the origin format) and
`ge-compare` (layer-by-layer against onnxruntime, the first divergent node)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import Float16Type, TensorType

import ge
from ge import node_profile
from ge.dialects import layout as lt
from ge.dump import to_origin
from ge.runtime import layouts
from ge.testing import two_branch_model


def tool(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"ge.tools.{name}", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def error_line(result: subprocess.CompletedProcess, tool_name: str) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{tool_name}: error: "), result.stderr
    return lines[0]


def _model(nodes, x_shape, inits=(), name="g") -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, name, [x], [y], list(inits)),
                             opset_imports=[helper.make_opsetid("", 17)])


def conv_pool_model() -> onnx.ModelProto:
    """conv1 + relu1 (one Cube kernel) -> pool1 -> sig1; C = 16 in NC1HWC0."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    return _model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["p"], ["y"], name="sig1"),
    ], (1, 3, 16, 16), [w, b], name="conv_pool")


def ort_values(model: onnx.ModelProto, names: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's values of intermediate tensors `names` (added as graph outputs)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.fixture(scope="module")
def conv_pool(tmp_path_factory):
    d = tmp_path_factory.mktemp("debug")
    src, om, inputs = d / "cp.onnx", d / "cp.om", d / "in.npz"
    onnx.save(conv_pool_model(), src)
    ge.compile(str(src)).save(om)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.savez(inputs, x=x)
    return d, src, om, inputs, x


# --------------------------------------------------------------------------------------
# --by-node
# --------------------------------------------------------------------------------------


def test_by_node_splits_each_kernel_equally_among_its_nodes(conv_pool):
    _, _, om, _, x = conv_pool
    model = ge.load_model(om)
    model.run({"x": x})
    report = model.executor.last_report
    definition = model.model.definition
    kernels = {k["name"]: k for k in definition["kernels"]}
    assert kernels["k1_conv1"]["nodes"] == ["conv1", "relu1"]  # the isa level keeps the fused nodes
    rows = node_profile.by_node(report, definition, {"conv1": "Conv"})
    by_name = {r.node: r for r in rows}
    conv_kernel = next(k for k in report.kernels if k.kernel == "k1_conv1")
    assert by_name["conv1"].cycles == pytest.approx(conv_kernel.cycles / 2)
    assert by_name["relu1"].cycles == pytest.approx(conv_kernel.cycles / 2)
    assert by_name["conv1"].op_type == "Conv" and by_name["relu1"].op_type == "-"
    assert sum(r.cycles for r in rows) == pytest.approx(sum(k.cycles for k in report.kernels))
    assert [r.cycles for r in rows] == sorted((r.cycles for r in rows), reverse=True)
    onnx_nodes = {"conv1", "relu1", "pool1", "sig1"}
    assert onnx_nodes <= set(by_name)


def test_ge_run_by_node_table_and_timeline(conv_pool):
    d, src, om, inputs, _ = conv_pool
    timeline = d / "tl.json"
    out = ok(tool("ge_run", om, "--inputs", inputs, "--by-node", "--compare", src, "--profile", timeline)).stdout
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("node "))
    rows = [line.split() for line in lines[head + 1:] if line and not line.startswith("a fused")][:7]
    table = {r[0]: r for r in rows if len(r) == 5}
    assert table["conv1"][1] == "Conv" and table["conv1"][2] == "k1_conv1"
    assert table["pool1"][1] == "MaxPool" and table["relu1"][1] == "Relu"
    assert table["conv1"][3] == table["relu1"][3]  # equal split of one kernel
    cycles = [float(r[3]) for r in table.values()]
    assert cycles == sorted(cycles, reverse=True)
    assert "split equally" in out
    names = {e["name"] for e in json.loads(timeline.read_text())["traceEvents"] if e.get("cat") == "launch"}
    assert "conv1+relu1 (k1_conv1)" in names


# --------------------------------------------------------------------------------------
# --dump
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,origin_fmt,shape", [
    (lt.Format.NC1HWC0, lt.Format.NCHW, (2, 3, 5, 4)),    # C padded 3 -> 16
    (lt.Format.FRACTAL_NZ, lt.Format.ND, (20, 40)),       # M and N padded
    (lt.Format.FRACTAL_Z, lt.Format.NCHW, (20, 3, 3, 3)),  # weights
])
def test_to_origin_finds_the_format_from_the_origin_shape(fmt, origin_fmt, shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float16)
    t = lt.encode(TensorType(Float16Type(), shape), fmt, origin_fmt)
    stored = layouts.to_storage(x, t)
    back, found = to_origin(stored, shape)
    assert found == fmt.value and back.dtype == np.float16
    np.testing.assert_array_equal(back, x)


def test_to_origin_leaves_an_unknown_layout_as_stored():
    x = np.zeros((3, 7), np.float16)
    back, found = to_origin(x, (5, 5))
    assert found == "stored" and back.shape == (3, 7)


def test_ge_run_dump_saves_kernel_outputs_in_origin_format(conv_pool):
    d, src, om, inputs, x = conv_pool
    out_dir = d / "dump"
    out = ok(tool("ge_run", om, "--inputs", inputs, "--dump", out_dir, "--compare", src)).stdout
    manifest = json.loads((out_dir / "manifest.json").read_text())["tensors"]
    assert f"dumped {len(manifest)} kernel output tensor(s)" in out
    by_name = {e["tensor"]: e for e in manifest}
    # relu1's output r is a kernel output (conv1's c is inside the fused kernel: not dumped)
    assert "r" in by_name and "c" not in by_name and "p" not in by_name
    assert by_name["r"]["format"] == "NC1HWC0" and by_name["r"]["nodes"] == ["conv1", "relu1"]
    r = np.load(out_dir / "r.npy")
    assert r.shape == (1, 16, 16, 16) and r.dtype == np.float16
    ref = ort_values(conv_pool_model(), ["r"], {"x": x})["r"]
    err = np.abs(r.astype(np.float32) - ref).max() / np.abs(ref).max()
    assert err < 1e-2, err  # f16 storage and a K = 27 f16 product: 1e-2 of the output scale
    y = np.load(out_dir / "y.npy")
    np.testing.assert_allclose(y, ref_y := ort_values(conv_pool_model(), [], {"x": x})["y"], atol=2e-3)
    assert y.shape == ref_y.shape


def test_ge_run_dump_nodes_filters(conv_pool):
    d, _, om, inputs, _ = conv_pool
    out_dir = d / "dump_conv"
    ok(tool("ge_run", om, "--inputs", inputs, "--dump", out_dir, "--dump-nodes", "conv1"))
    manifest = json.loads((out_dir / "manifest.json").read_text())["tensors"]
    assert [e["tensor"] for e in manifest] == ["r"]
    assert sorted(p.name for p in out_dir.iterdir()) == ["manifest.json", "r.npy"]
    # without the ONNX model the storage shape is kept
    assert np.load(out_dir / "r.npy").shape == (1, 1, 16, 16, 16) and manifest[0]["format"] == "stored"


def test_ge_run_dump_bad_names(conv_pool):
    d, _, om, inputs, _ = conv_pool
    line = error_line(tool("ge_run", om, "--inputs", inputs, "--dump", d / "x", "--dump-nodes", "nosuch"), "ge-run")
    assert "'nosuch'" in line and "--dump-nodes" in line
    result = tool("ge_run", om, "--dump-nodes", "conv1")
    assert result.returncode == 2 and "--dump-nodes filters --dump" in result.stderr


def test_two_branch_dump_fractal_nz(tmp_path):
    src, om = tmp_path / "tb.onnx", tmp_path / "tb.om"
    onnx.save(two_branch_model(), src)
    ge.compile(str(src)).save(om)
    x = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    ok(tool("ge_run", om, "--inputs", tmp_path / "in.npz", "--dump", tmp_path / "d", "--compare", src))
    manifest = {e["tensor"]: e for e in json.loads((tmp_path / "d" / "manifest.json").read_text())["tensors"]}
    assert manifest["a1"]["format"] == "FRACTAL_NZ" and manifest["a1"]["shape"] == [32, 64]
    a1 = np.load(tmp_path / "d" / "a1.npy").astype(np.float32)
    ref = ort_values(two_branch_model(), ["a1"], {"x": x})["a1"]
    assert np.abs(a1 - ref).max() / np.abs(ref).max() < 1e-2


# --------------------------------------------------------------------------------------
# ge-compare
# --------------------------------------------------------------------------------------


def scaled_model(scale: float) -> onnx.ModelProto:
    """conv0 + relu0 -> scale_up (x scale, its own kernel: a Cube kernel reads its output)
    -> conv1 -> scale_down (/ scale). With scale 1e5 the f16 `big` overflows (inf): the
    planted precision problem; with 1e3 it stays in range."""
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array(rng.standard_normal((16, 16, 1, 1)).astype(np.float32), "w0")
    w1 = numpy_helper.from_array((rng.standard_normal((16, 16, 1, 1)) / 4).astype(np.float32), "w1")
    s = numpy_helper.from_array(np.array(scale, np.float32), "s")
    return _model([
        helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0"),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("Mul", ["r0", "s"], ["big"], name="scale_up"),
        helper.make_node("Conv", ["big", "w1"], ["c1"], name="conv1"),
        helper.make_node("Div", ["c1", "s"], ["y"], name="scale_down"),
    ], (1, 16, 8, 8), [w0, w1, s], name="scaled")


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    x = np.random.default_rng(4).standard_normal((1, 16, 8, 8)).astype(np.float32)
    np.savez(d / "in.npz", x=x)
    paths = {}
    for label, scale, mode in (("overflow", 1e5, "force_fp16"), ("clean", 1e3, "force_fp16"),
                               ("clean32", 1e3, "must_keep_origin_dtype")):
        src, om = d / f"{label}.onnx", d / f"{label}.om"
        onnx.save(scaled_model(scale), src)
        ge.compile(str(src), ge.CompileOptions(precision_mode=mode)).save(om)
        paths[label] = (src, om)
    return d, paths


def _rows(csv_path) -> list[dict[str, str]]:
    import csv

    with open(csv_path) as f:
        return list(csv.DictReader(f))


def test_ge_compare_finds_the_planted_f16_overflow(scaled):
    d, paths = scaled
    src, om = paths["overflow"]
    out = ok(tool("ge_compare", src, om, "--inputs", d / "in.npz", "--csv", d / "ov.csv")).stdout
    assert "first divergent node: scale_up (Mul), tensor 'big'" in out
    rows = _rows(d / "ov.csv")
    assert [r["node"] for r in rows] == ["relu0", "scale_up", "scale_down"]  # topological order
    assert [r["divergent"] for r in rows] == ["0", "1", "1"]
    assert float(rows[0]["cosine"]) > 0.999 and float(rows[0]["max_rel"]) < 1e-2
    assert rows[1]["cosine"] == "nan" and rows[1]["kernel"] == "k2_scale_up"


def test_ge_compare_clean_models_do_not_diverge(scaled):
    d, paths = scaled
    for label in ("clean", "clean32"):
        src, om = paths[label]
        out = ok(tool("ge_compare", src, om, "--inputs", d / "in.npz", "--csv", d / f"{label}.csv")).stdout
        assert "no divergence: 3 tensor(s) compared within tolerance" in out, out
        rows = _rows(d / f"{label}.csv")
        assert [r["tensor"] for r in rows] == ["r0", "big", "y"]
        if label == "clean32":  # f32 storage under must_keep_origin_dtype: the f32 tolerance applied
            assert all(r["dtype"] == "float32" for r in rows)
            assert all(float(r["cosine"]) >= 0.9999 and float(r["max_rel"]) <= 1e-4 for r in rows)
        else:
            assert rows[0]["dtype"] == "float16" and all(float(r["max_rel"]) <= 1e-2 for r in rows)


def test_ge_compare_metrics_and_tolerances():
    from ge import compare

    ref = np.array([1.0, -2.0, 0.0, 4.0])
    cos, err, rel = compare.metrics(ref + np.array([0.0, 0.0, 0.04, 0.0]), ref)
    assert err == pytest.approx(0.04) and rel == pytest.approx(0.01)
    assert cos == pytest.approx(float(ref @ (ref + [0, 0, 0.04, 0]) / np.linalg.norm(ref) /
                                      np.linalg.norm(ref + [0, 0, 0.04, 0])))
    assert np.isnan(compare.metrics(np.array([np.inf, 1.0]), np.array([1.0, 1.0]))[0])
    assert not compare.divergent("float16", 0.995, 0.009) and compare.divergent("float16", 0.98, 0.0)
    assert compare.divergent("float32", 0.99999, 2e-4) and not compare.divergent("float32", 0.99999, 5e-5)
    assert compare.precision("float32", "force_fp16") == "float16"
    assert compare.precision("float32", "must_keep_origin_dtype") == "float32"


def test_ge_compare_bad_input(scaled, conv_pool):
    d, paths = scaled
    src, om = paths["clean"]
    np.savez(d / "wrong_name.npz", z=np.zeros((1, 16, 8, 8), np.float32))
    np.savez(d / "wrong_shape.npz", x=np.zeros((1, 16, 4, 4), np.float32))
    (d / "junk.onnx").write_text("not a model")
    cases = [
        ((d / "missing.onnx", om), "missing.onnx"),
        ((src, d / "missing.om"), "missing.om"),
        ((conv_pool[1], om, "--inputs", d / "in.npz"), "does not take the inputs of"),
        ((src, om, "--inputs", d / "wrong_name.npz"), "missing 'x'; unexpected 'z'"),
        ((src, om, "--inputs", d / "wrong_shape.npz"), "input 'x' must have shape [1,16,8,8], got [1, 16, 4, 4]"),
        ((src, om, "--inputs", src), "not a numpy .npy file"),
        ((d / "junk.onnx", om), "onnxruntime cannot load it"),
    ]
    for args, expected in cases:
        line = error_line(tool("ge_compare", *args), "ge-compare")
        assert expected in line, line
        assert "--compare" not in line
