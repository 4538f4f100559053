"""`ge-compile` and `ge-run` through subprocess, as a user runs them: a small ONNX model
written to a temporary directory, compiled, run, compared with onnxruntime; the report's
keys and values checked against the model; every --dump-ir file re-parsed; every user
mistake one `<tool>: error:` line and exit code 1."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ge.ir import parse_module
from ge.runtime import model_file as mf
from ge.testing import two_branch_model
from ge.tools.ge_compile import _Progress

ISA = "isa"
LEVELS = ["tile", ISA]
STAGES = ["import", "graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data", "fuse", "bufferize", "tile",
          "build-model"]


def tool(name: str, *args, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", f"ge.tools.{name}", *map(str, args)], capture_output=True,
                            text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def one_error_line(result: subprocess.CompletedProcess, tool_name: str) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{tool_name}: error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "two_branch.onnx"
    onnx.save(two_branch_model(), path)
    return path


@pytest.fixture(scope="module")
def built(onnx_path):
    """ge-compile at the tile level with a report and an IR dump; a launch per kernel
    (`--super-kernel off`), so the two branches keep their two streams."""
    out = onnx_path.parent / "two_branch.om"
    report = onnx_path.parent / "report.json"
    dump = onnx_path.parent / "ir"
    result = tool("ge_compile", onnx_path, "-o", out, "--precision-mode", "must_keep_origin_dtype",
                  "--kernel-level", "tile", "--report", report, "--dump-ir", dump, "--super-kernel", "off")
    return out, json.loads(report.read_text()), dump, result.stdout


def test_compile_writes_a_model_file_and_a_summary(built):
    out, report, _, stdout = built
    model = mf.load_model(out)
    assert str(out) in stdout and f"{out.stat().st_size} bytes" in stdout
    assert f"{report['kernels']} kernels (tile level)" in stdout
    assert model.metadata["precision_mode"] == "must_keep_origin_dtype"
    assert report["model_file_bytes"] == out.stat().st_size
    assert model.metadata["compile_report"] == {k: v for k, v in report.items() if k != "model_file_bytes"}


def test_report_is_consistent_with_the_model(built):
    out, report, _, _ = built
    model = mf.load_model(out)
    for key in ("model", "soc_version", "compile_seconds", "graph_ops", "trans_data", "kernels", "streams",
                "events", "memory"):
        assert key in report
    assert report["model"] == "two_branch.onnx" and report["soc_version"] == "Ascend910A"
    assert set(STAGES) | {"serialize", "total"} == set(report["compile_seconds"])
    stages = sum(v for k, v in report["compile_seconds"].items() if k != "total")
    assert report["compile_seconds"]["total"] == pytest.approx(stages, abs=1e-3)
    assert report["graph_ops"] == len(two_branch_model().graph.node)  # f32: one op per ONNX node
    assert report["trans_data"] == 0  # plain 2-D matrices keep their format
    assert report["kernels"] == len(model.definition["kernels"])
    assert report["streams"] == model.definition["streams"] == 2
    assert report["events"] == sum(1 for t in model.tasks if t["op"] == "record")
    memory = report["memory"]
    assert memory["weights_bytes"] == 4 * 64 * 64 * 4 == len(model.weights)
    assert memory["activation_lower_bound_bytes"] <= memory["activation_peak_bytes"] <= memory["no_reuse_bytes"]
    assert memory["activation_peak_bytes"] == model.definition["regions"]["workspace"][1]


def test_dumped_ir_reparses(built):
    _, _, dump, _ = built
    files = sorted(p.name for p in dump.iterdir())
    assert files == [f"{i:02d}_{s}.mlir" for i, s in enumerate(STAGES)]
    for path in dump.iterdir():
        parse_module(path.read_text(), str(path))
    for name in ("07_tile.mlir", "08_build-model.mlir"):  # and through ge-opt itself
        result = tool("ge_opt", dump / name)
        assert ("tile.kernel @" if "tile" in name else "task.model @") in result.stdout


def test_run_with_inputs_and_compare(built, onnx_path, tmp_path):
    out = built[0]
    x = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    result = tool("ge_run", out, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz",
                  "--compare", onnx_path, "--profile", tmp_path / "timeline.json")
    with np.load(tmp_path / "out.npz") as got:
        y = got["y"]
    expected = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(y - expected).max() <= 1e-4 * np.abs(expected).max()
    m = re.search(r"y: max abs error (\S+), error / output scale (\S+), argmax agrees 100%", result.stdout)
    assert m is not None, result.stdout
    assert float(m.group(1)) == pytest.approx(float(np.abs(y - expected).max()), rel=1e-2, abs=1e-9)
    assert float(m.group(2)) <= 1e-4
    assert re.search(r"total: \d+ cycles \(modeled\) on 2 stream\(s\)", result.stdout)
    trace = json.loads((tmp_path / "timeline.json").read_text())
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"stream 0", "stream 1"} <= tracks


def test_per_kernel_table(built):
    result = tool("ge_run", built[0], "--top", "2")
    lines = result.stdout.splitlines()
    assert lines[0].split()[:6] == ["kernel", "stream", "cores", "cycles", "share", "bound"]
    rows = lines[1:3]
    assert all(re.match(r"k\d+_\w+\s+\d+\s+\d+\s+\d+\s+[\d.]+%\s+\d+", r) for r in rows), rows
    assert lines[3] == f"... {mf.load_model(built[0]).metadata['kernels'] - 2} more kernels"


def test_random_inputs_are_seeded(built, tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        tool("ge_run", built[0], "--seed", seed, "--output", tmp_path / f"{name}.npz")
    a, b, c = (np.load(tmp_path / f"{n}.npz")["y"] for n in "abc")
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize(("flag", "check"), [
    ("--disable-reuse-memory", lambda r: r["memory"]["activation_peak_bytes"] == r["memory"]["no_reuse_bytes"]),
    ("--enable-single-stream", lambda r: r["streams"] == 1 and r["events"] == 0),
])
def test_build_flags(onnx_path, tmp_path, flag, check):
    tool("ge_compile", onnx_path, "-o", tmp_path / "m.om", "--kernel-level", "tile", flag,
         "--report", tmp_path / "r.json")
    assert check(json.loads((tmp_path / "r.json").read_text()))


@pytest.mark.parametrize("level", LEVELS)
def test_dynamic_batch_from_the_command_line(tmp_path, level):
    onnx.save(two_branch_model("N"), tmp_path / "dyn.onnx")
    tool("ge_compile", tmp_path / "dyn.onnx", "-o", tmp_path / "dyn.om", "--kernel-level", level,
         "--input-shape", "x:-1,64", "--dynamic-batch-size", "1,4", "--report", tmp_path / "r.json")
    assert [g["batch"] for g in json.loads((tmp_path / "r.json").read_text())["gears"]] == [1, 4]
    result = tool("ge_run", tmp_path / "dyn.om", "--batch", "4", "--output", tmp_path / "o.npz",
                  "--compare", tmp_path / "dyn.onnx")
    assert np.load(tmp_path / "o.npz")["y"].shape == (4, 64)
    assert "gear batch=4" in result.stdout and "argmax agrees 100%" in result.stdout
    error = one_error_line(tool("ge_run", tmp_path / "dyn.om", "--batch", "3", check=False), "ge-run")
    assert "no compiled gear for 'x' batch 3; the model was compiled for batch sizes 1, 4" in error


# --------------------------------------------------------------------------------------
# Errors: one line, exit 1
# --------------------------------------------------------------------------------------


def unsupported_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Hardmax", ["x"], ["h"], name="hm1"),
             helper.make_node("Relu", ["h"], ["y"], name="r1")]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_compile_errors(tmp_path, onnx_path):
    missing = one_error_line(tool("ge_compile", tmp_path / "nope.onnx", "-o", tmp_path / "o.om", check=False),
                             "ge-compile")
    assert "nope.onnx" in missing
    (tmp_path / "junk.onnx").write_bytes(b"\x01\x02 not a model")
    one_error_line(tool("ge_compile", tmp_path / "junk.onnx", "-o", tmp_path / "o.om", check=False), "ge-compile")
    onnx.save(unsupported_model(), tmp_path / "bad.onnx")
    error = one_error_line(tool("ge_compile", tmp_path / "bad.onnx", "-o", tmp_path / "o.om", check=False),
                           "ge-compile")
    assert "'hm1' (ai.onnx::Hardmax" in error
    error = one_error_line(tool("ge_compile", onnx_path, "-o", tmp_path / "o.om", "--soc-version", "ascend999",
                                check=False), "ge-compile")
    assert "unknown soc version 'ascend999'" in error and "ascend910b" in error
    error = one_error_line(tool("ge_compile", onnx_path, "-o", tmp_path / "o.om", "--input-shape", "x:32",
                                check=False), "ge-compile")
    assert "'x' rank 1" in error
    assert not (tmp_path / "o.om").exists()


def test_compile_accepts_atc_spellings(onnx_path, tmp_path):
    tool("ge_compile", onnx_path, "-o", tmp_path / "m.om", "--kernel-level", "tile",
         "--soc_version", "Ascend910B1", "--precision_mode", "must_keep_origin_dtype", "--input_shape", "x:32,64")
    assert mf.load_model(tmp_path / "m.om").metadata["target"] == "ascend910b"


def test_run_refuses_damaged_model_files(built, tmp_path):
    data = bytearray(built[0].read_bytes())
    (tmp_path / "cut.om").write_bytes(data[: len(data) // 2])
    error = one_error_line(tool("ge_run", tmp_path / "cut.om", check=False), "ge-run")
    assert "cut.om: truncated" in error
    data[len(data) - 10] ^= 0xFF
    (tmp_path / "flip.om").write_bytes(data)
    error = one_error_line(tool("ge_run", tmp_path / "flip.om", check=False), "ge-run")
    assert "flip.om: corrupted: the checksum does not match" in error
    error = one_error_line(tool("ge_run", tmp_path / "none.om", check=False), "ge-run")
    assert "none.om" in error


def test_run_refuses_wrong_inputs(built, tmp_path):
    np.savez(tmp_path / "wrong.npz", z=np.zeros((32, 64), np.float32))
    error = one_error_line(tool("ge_run", built[0], "--inputs", tmp_path / "wrong.npz", check=False), "ge-run")
    assert "missing 'x'" in error and "unexpected 'z'" in error
    np.save(tmp_path / "x.npy", np.zeros((32, 64), np.float64))
    error = one_error_line(tool("ge_run", built[0], "--inputs", tmp_path / "x.npy", check=False), "ge-run")
    assert "input 'x' must be float32, got float64" in error


def test_progress_line():
    out = io.StringIO()
    progress = _Progress(out)
    progress("tile", 6, 10)
    progress("done", 10, 10)
    assert out.getvalue() == "\r\033[K[ 6/10] tile\r\033[K[10/10] done\n"


def test_super_kernels_by_default_and_off_on_request(onnx_path, tmp_path):
    """ge-compile groups the launches into SuperKernels unless `--super-kernel off`."""
    marks = {}
    for flag in ("on", "off", None):
        out, report = tmp_path / f"{flag}.om", tmp_path / f"{flag}.json"
        tool("ge_compile", onnx_path, "-o", out, "--precision-mode", "must_keep_origin_dtype", "--kernel-level",
             "tile", "--report", report, *(("--super-kernel", flag) if flag else ()))
        marks[flag] = [t.get("super_kernel") for t in mf.load_model(out).tasks if t["op"] == "launch"]
        assert json.loads(report.read_text())["super_kernels"] == (0 if flag == "off" else 1)
    assert len(marks["off"]) == 4 and marks["off"] == [None] * 4  # a launch per kernel
    assert marks[None] == marks["on"] == [0] * 4  # one SuperKernel on one stream
    line = one_error_line(tool("ge_compile", onnx_path, "-o", tmp_path / "x.om", "--super-kernel", "maybe",
                               check=False), "ge-compile")
    assert "--super-kernel" in line and "maybe" in line
