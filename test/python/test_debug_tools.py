"""The accuracy and profiling tools of issue 19: `ge-run --by-node` (cycles per ONNX node),
`ge-run --dump` (kernel outputs by ONNX tensor name, back in the origin format) and
`ge-compare` (layer-by-layer against onnxruntime, the first divergent node)."""

from __future__ import annotations

import json

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
from ge.tools.ge_compare import main as ge_compare_main
from ge.tools.ge_run import main as ge_run_main


def cli(capsys, main, *args) -> tuple[int, str, str]:
    """A tool's main() in process: exit status, stdout, stderr."""
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def ge_run(capsys, *args) -> str:
    rc, out, err = cli(capsys, ge_run_main, *args)
    assert rc == 0, out + err
    return out


def one_error(capsys, main, tool_name: str, *args) -> str:
    """The single `<tool>: error:` line of a refused command (exit status 1)."""
    rc, out, err = cli(capsys, main, *args)
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith(f"{tool_name}: error: "), out + err
    return lines[0]


def scaled_model(scale: float, pool: bool = False) -> onnx.ModelProto:
    """conv0 + relu0 (one Cube kernel) [-> pool0] -> scale_up (x scale, its own kernel: a
    Cube kernel reads its output) -> conv1 -> scale_down (/ scale). With scale 1e5 the f16
    `big` overflows (inf): the planted precision problem; with 1e3 it stays in range."""
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array(rng.standard_normal((16, 16, 1, 1)).astype(np.float32), "w0")
    w1 = numpy_helper.from_array((rng.standard_normal((16, 16, 1, 1)) / 4).astype(np.float32), "w1")
    s = numpy_helper.from_array(np.array(scale, np.float32), "s")
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0"),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0")]
    if pool:
        nodes.append(helper.make_node("MaxPool", ["r0"], ["p0"], name="pool0", kernel_shape=[2, 2], strides=[2, 2]))
    nodes += [helper.make_node("Mul", ["p0" if pool else "r0", "s"], ["big"], name="scale_up"),
              helper.make_node("Conv", ["big", "w1"], ["c1"], name="conv1"),
              helper.make_node("Div", ["c1", "s"], ["y"], name="scale_down")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "scaled", [x], [y], [w0, w1, s]),
                             opset_imports=[helper.make_opsetid("", 17)])


def ort_values(model: onnx.ModelProto, names: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's values of intermediate tensors `names` (added as graph outputs)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    """scaled_model(1e3, pool=True), compiled with the defaults (force_fp16, isa kernels)."""
    d = tmp_path_factory.mktemp("debug")
    src, om, inputs = d / "pooled.onnx", d / "pooled.om", d / "in.npz"
    onnx.save(scaled_model(1e3, pool=True), src)
    ge.compile(str(src)).save(om)
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    np.savez(inputs, x=x)
    return d, src, om, inputs, x


# --------------------------------------------------------------------------------------
# --by-node
# --------------------------------------------------------------------------------------


def test_by_node_splits_each_kernel_equally_among_its_nodes(pooled):
    _, _, om, _, x = pooled
    model = ge.load_model(om)
    model.run({"x": x})
    report = model.executor.last_report
    definition = model.model.definition
    kernels = {k["name"]: k for k in definition["kernels"]}
    assert kernels["k1_conv0"]["nodes"] == ["conv0", "relu0"]  # the isa level keeps the fused nodes
    rows = node_profile.by_node(report, definition, {"conv0": "Conv"})
    by_name = {r.node: r for r in rows}
    conv_kernel = next(k for k in report.kernels if k.kernel == "k1_conv0")
    assert by_name["conv0"].cycles == pytest.approx(conv_kernel.cycles / 2)
    assert by_name["relu0"].cycles == pytest.approx(conv_kernel.cycles / 2)
    assert by_name["conv0"].op_type == "Conv" and by_name["relu0"].op_type == "-"
    assert sum(r.cycles for r in rows) == pytest.approx(sum(k.cycles for k in report.kernels))
    assert [r.cycles for r in rows] == sorted((r.cycles for r in rows), reverse=True)
    assert {"conv0", "relu0", "pool0", "scale_up", "conv1", "scale_down"} <= set(by_name)


def test_ge_run_by_node_table_and_timeline(pooled, capsys):
    d, src, om, inputs, _ = pooled
    timeline = d / "tl.json"
    out = ge_run(capsys, om, "--inputs", inputs, "--by-node", "--compare", src, "--profile", timeline)
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("node "))
    end = next(i for i, line in enumerate(lines) if line.startswith("a fused kernel's cycles"))
    rows = [line.split() for line in lines[head + 1:end]]
    table = {r[0]: r for r in rows}
    assert table["conv0"][1:3] == ["Conv", "k1_conv0"] and table["relu0"][1:3] == ["Relu", "k1_conv0"]
    assert table["pool0"][1] == "MaxPool" and table["scale_up"][1] == "Mul"
    assert table["conv0"][3] == table["relu0"][3]  # equal split of one kernel
    cycles = [float(r[3]) for r in rows]
    assert cycles == sorted(cycles, reverse=True)
    assert sum(float(r[4].rstrip("%")) for r in rows) == pytest.approx(100, abs=0.1 * len(rows))
    names = {e["name"] for e in json.loads(timeline.read_text())["traceEvents"] if e.get("cat") == "launch"}
    assert "conv0+relu0 (k1_conv0)" in names


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


def test_ge_run_dump_saves_kernel_outputs_in_origin_format(pooled, capsys):
    d, src, om, inputs, x = pooled
    out_dir = d / "dump"
    out = ge_run(capsys, om, "--inputs", inputs, "--dump", out_dir, "--compare", src)
    manifest = json.loads((out_dir / "manifest.json").read_text())["tensors"]
    assert f"dumped {len(manifest)} kernel output tensor(s)" in out
    by_name = {e["tensor"]: e for e in manifest}
    # relu0's output r0 is a kernel output; conv0's c0 stays inside the fused kernel: not dumped
    assert {"r0", "big", "y"} <= set(by_name) and "c0" not in by_name
    assert by_name["r0"]["format"] == "NC1HWC0" and by_name["r0"]["storage_shape"] == [1, 1, 8, 8, 16]
    assert by_name["r0"]["nodes"] == ["conv0", "relu0"]
    ref = ort_values(scaled_model(1e3, pool=True), ["r0", "big"], {"x": x})
    for name in ("r0", "big"):
        got = np.load(out_dir / f"{name}.npy")
        assert got.dtype == np.float16 and got.shape == ref[name].shape
        err = np.abs(got.astype(np.float32) - ref[name]).max() / np.abs(ref[name]).max()
        assert err < 1e-2, (name, err)  # f16 storage and an f16 product over K = 16: 1e-2 of the scale
    y = np.load(out_dir / "y.npy")
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref["y"], atol=1e-2 * np.abs(ref["y"]).max())


def test_ge_run_dump_nodes_filters(pooled, capsys):
    d, _, om, inputs, _ = pooled
    out_dir = d / "dump_conv"
    ge_run(capsys, om, "--inputs", inputs, "--dump", out_dir, "--dump-nodes", "relu0")
    manifest = json.loads((out_dir / "manifest.json").read_text())["tensors"]
    assert [e["tensor"] for e in manifest] == ["r0"]
    assert sorted(p.name for p in out_dir.iterdir()) == ["manifest.json", "r0.npy"]
    # without the ONNX model the storage shape is kept
    assert np.load(out_dir / "r0.npy").shape == (1, 1, 8, 8, 16) and manifest[0]["format"] == "stored"


def test_ge_run_dump_bad_names(pooled, capsys):
    d, _, om, inputs, _ = pooled
    line = one_error(capsys, ge_run_main, "ge-run", om, "--inputs", inputs, "--dump", d / "x", "--dump-nodes", "nosuch")
    assert "'nosuch'" in line and "--dump-nodes" in line
    with pytest.raises(SystemExit) as e:
        ge_run_main([str(om), "--dump-nodes", "conv0"])
    err = capsys.readouterr().err
    assert e.value.code == 1 and "--dump-nodes filters --dump" in err
    assert err.count("\n") == 1 and err.startswith("ge-run: error: ")  # one line, no usage block


def test_two_branch_dump_fractal_nz(tmp_path, capsys):
    src, om = tmp_path / "tb.onnx", tmp_path / "tb.om"
    onnx.save(two_branch_model(), src)
    ge.compile(str(src)).save(om)
    x = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    ge_run(capsys, om, "--inputs", tmp_path / "in.npz", "--dump", tmp_path / "d", "--compare", src)
    manifest = {e["tensor"]: e for e in json.loads((tmp_path / "d" / "manifest.json").read_text())["tensors"]}
    assert manifest["a1"]["format"] == "FRACTAL_NZ" and manifest["a1"]["shape"] == [32, 64]
    a1 = np.load(tmp_path / "d" / "a1.npy").astype(np.float32)
    ref = ort_values(two_branch_model(), ["a1"], {"x": x})["a1"]
    assert np.abs(a1 - ref).max() / np.abs(ref).max() < 1e-2


# --------------------------------------------------------------------------------------
# ge-compare
# --------------------------------------------------------------------------------------


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


def ge_compare(capsys, *args) -> str:
    rc, out, err = cli(capsys, ge_compare_main, *args)
    assert rc == 0, out + err
    return out


def test_ge_compare_finds_the_planted_f16_overflow(scaled, capsys):
    d, paths = scaled
    src, om = paths["overflow"]
    out = ge_compare(capsys, src, om, "--inputs", d / "in.npz", "--csv", d / "ov.csv")
    assert "first divergent node: scale_up (Mul), tensor 'big'" in out
    rows = _rows(d / "ov.csv")
    assert [r["node"] for r in rows] == ["relu0", "scale_up", "scale_down"]  # topological order
    assert [r["divergent"] for r in rows] == ["0", "1", "1"]
    assert float(rows[0]["cosine"]) > 0.999 and float(rows[0]["max_rel"]) < 1e-2
    assert rows[1]["cosine"] == "nan" and rows[1]["kernel"] == "k2_scale_up"


def test_ge_compare_clean_models_do_not_diverge(scaled, capsys):
    d, paths = scaled
    for label in ("clean", "clean32"):
        src, om = paths[label]
        out = ge_compare(capsys, src, om, "--inputs", d / "in.npz", "--csv", d / f"{label}.csv")
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
    got = ref + np.array([0.0, 0.0, 0.04, 0.0])
    cos, err, rel = compare.metrics(got, ref)
    assert err == pytest.approx(0.04) and rel == pytest.approx(0.01)
    assert cos == pytest.approx(float(ref @ got / np.linalg.norm(ref) / np.linalg.norm(got)))
    assert np.isnan(compare.metrics(np.array([np.inf, 1.0]), np.array([1.0, 1.0]))[0])
    assert not compare.divergent("float16", 0.995, 0.009) and compare.divergent("float16", 0.98, 0.0)
    assert compare.divergent("float32", 0.99999, 2e-4) and not compare.divergent("float32", 0.99999, 5e-5)
    assert compare.precision("float32", "force_fp16") == "float16"
    assert compare.precision("float32", "must_keep_origin_dtype") == "float32"


def test_ge_compare_bad_input(scaled, tmp_path, capsys):
    d, paths = scaled
    src, om = paths["clean"]
    np.savez(tmp_path / "wrong_name.npz", z=np.zeros((1, 16, 8, 8), np.float32))
    np.savez(tmp_path / "wrong_shape.npz", x=np.zeros((1, 16, 4, 4), np.float32))
    (tmp_path / "junk.onnx").write_text("not a model")
    onnx.save(two_branch_model(), tmp_path / "other.onnx")
    cases = [
        ((tmp_path / "missing.onnx", om), "missing.onnx"),
        ((src, tmp_path / "missing.om"), "missing.om"),
        ((tmp_path / "other.onnx", om, "--inputs", d / "in.npz"), "does not take the inputs of"),
        ((src, om, "--inputs", tmp_path / "wrong_name.npz"), "missing 'x'; unexpected 'z'"),
        ((src, om, "--inputs", tmp_path / "wrong_shape.npz"), "input 'x' must have shape [1,16,8,8], got [1, 16, 4, 4]"),
        ((src, om, "--inputs", src), "not a numpy .npy file"),
        ((tmp_path / "junk.onnx", om), "onnxruntime cannot load it"),
    ]
    for args, expected in cases:
        line = one_error(capsys, ge_compare_main, "ge-compare", *args)
        assert expected in line, line
        assert "--compare" not in line


def test_ge_compare_dynamic_batch_model(tmp_path, capsys):
    """A dynamic-batch model: the gear of the given batch is dumped, its NZ tensors turned
    back with the shapes onnxruntime gives (the ONNX model's batch is symbolic)."""
    src, om = tmp_path / "dyn.onnx", tmp_path / "dyn.om"
    onnx.save(two_branch_model(batch="N"), src)
    ge.compile(str(src), ge.CompileOptions(input_shape="x:-1,64", dynamic_batch_size="1,2")).save(om)
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(5).standard_normal((2, 64)).astype(np.float32))
    out = ge_compare(capsys, src, om, "--inputs", tmp_path / "in.npz", "--csv", tmp_path / "dyn.csv")
    assert "no divergence: 4 tensor(s) compared within tolerance" in out, out
    rows = _rows(tmp_path / "dyn.csv")
    assert [(r["tensor"], r["kernel"]) for r in rows] == [("a1", "b2_k1_a0"), ("b1", "b2_k2_b0"), ("b2", "b2_k3_b2"),
                                                          ("y", "b2_k5_y")]  # the batch-2 gear's kernels
