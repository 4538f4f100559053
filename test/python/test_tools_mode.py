"""ge-compile's ATC modes and the inspection tools: `--mode 1` (a model file as JSON) checked
against the model file and the ONNX graph it came from, `ge-opt model.om`, `--mode 3`
(per-node operator support) checked against what the real compile does, and `--log`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.lowering import isa_vector
from ge.precheck import SUPPORTED, UNCHECKED, UNSUPPORTED, check_support
from ge.runtime import model_file as mf
from ge.testing import two_branch_model

F32 = "must_keep_origin_dtype"


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
    """conv1 + relu1 -> pool1 -> sig1: a Cube kernel with its epilogue, a pool, a sigmoid."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    return _model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["p"], ["y"], name="sig1"),
    ], (1, 3, 16, 16), [w, b], name="conv_pool")


# --------------------------------------------------------------------------------------
# --mode 1: a model file as JSON
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_branch(tmp_path_factory):
    """The two-branch model (two streams, events: a launch per kernel) compiled at the tile
    level, and --mode 1's JSON."""
    d = tmp_path_factory.mktemp("mode1")
    src, om, out = d / "two_branch.onnx", d / "two_branch.om", d / "two_branch.json"
    onnx.save(two_branch_model(), src)
    ok(tool("ge_compile", src, "-o", om, "--kernel-level", "tile", "--precision-mode", F32, "--ir-text",
            "--super-kernel", "off"))
    result = ok(tool("ge_compile", "--mode", "1", "--om", om, "--json", out))
    assert result.stdout.strip() == f"wrote {out}"
    return src, om, json.loads(out.read_text())


def test_mode1_inputs_outputs_and_summary(two_branch):
    _, om, info = two_branch
    model = mf.load_model(om)
    assert info["file"] == str(om) and info["target"] == "ascend910" and info["kernel_level"] == "tile"
    assert info["precision_mode"] == F32 and info["has_ir_text"] is True
    assert [(io["name"], io["shape"], io["dtype"]) for io in info["inputs"]] == [("x", [32, 64], "float32")]
    assert [(io["name"], io["shape"], io["dtype"]) for io in info["outputs"]] == [("y", [32, 64], "float32")]
    assert info["tasks"] == len(model.tasks) and info["gears"] == []
    assert info["compile_report"] == model.metadata["compile_report"]


def test_mode1_kernels_name_their_onnx_nodes(two_branch):
    src, _, info = two_branch
    report = info["compile_report"]
    assert len(info["kernels"]) == report["kernels"]
    onnx_nodes = {n.name for n in onnx.load(src).graph.node}
    covered = {n for k in info["kernels"] for n in k["nodes"]}
    assert onnx_nodes <= covered, onnx_nodes - covered  # every ONNX node is in some kernel
    matmul_kernels = [k for k in info["kernels"] if k["kind"] == "cube_epilogue"]
    assert len(matmul_kernels) == 4  # a0, a2, b0, b2
    for k in info["kernels"]:
        assert k["launches"] == 1 and 1 <= k["block_dim"] <= 32
        assert k["modeled_cycles"] > 0 and k["bound"] > 0
    assert sorted(k["name"] for k in info["kernels"]) == sorted(k["name"] for k in mf.load_model(two_branch[1]).definition["kernels"])


def test_mode1_streams_and_events(two_branch):
    _, om, info = two_branch
    model = mf.load_model(om)
    streams = info["streams"]
    assert streams["count"] == model.definition["streams"] == info["compile_report"]["streams"] == 2
    assert sum(len(s["tasks"]) for s in streams["tasks"]) == len(model.tasks)
    assert len(streams["event_uses"]) == info["compile_report"]["events"] > 0
    for use in streams["event_uses"]:  # every event is recorded on one stream and waited on another
        assert use["records"] and use["waits"]
        assert {r["stream"] for r in use["records"]}.isdisjoint({w["stream"] for w in use["waits"]})
    launches = [t for s in streams["tasks"] for t in s["tasks"] if " launch @" in t]
    assert len(launches) == info["compile_report"]["launches"]


def test_mode1_memory_plan_and_weights(two_branch):
    _, om, info = two_branch
    model = mf.load_model(om)
    memory = info["memory"]
    assert memory["arena_bytes"] == model.definition["arena"]
    assert memory["activation_peak_bytes"] == info["compile_report"]["memory"]["activation_peak_bytes"]
    assert len(memory["tensors"]) == len(model.definition["tensors"])
    for t in memory["tensors"]:
        assert 0 <= t["offset"] and t["offset"] + t["bytes"] <= memory["arena_bytes"]
    w = info["weights"]
    assert w["count"] == 4 and w["bytes"] == memory["regions"]["weights"]["bytes"] == len(model.weights)
    assert w["bytes"] >= 4 * 64 * 64 * 4  # four 64x64 f32 weights (f32 kept: must_keep_origin_dtype)
    assert w["sha256"] == hashlib.sha256(bytes(model.weights)).hexdigest()
    assert [x["shape"] for x in w["largest"]] and all(x["bytes"] == 64 * 64 * 4 for x in w["largest"])


def test_mode1_prints_without_json(two_branch):
    _, om, info = two_branch
    printed = json.loads(ok(tool("ge_compile", "--mode", "1", "--om", om)).stdout)
    assert printed == info


def test_mode1_lists_the_gears(tmp_path):
    src, om = tmp_path / "dyn.onnx", tmp_path / "dyn.om"
    onnx.save(two_branch_model("N"), src)
    ge.compile(src, ge.CompileOptions(kernel_level="tile", precision_mode=F32, input_shape="x:-1,64",
                                      dynamic_batch_size="1,4")).save(om)
    info = json.loads(ok(tool("ge_compile", "--mode", "1", "--om", om)).stdout)
    assert [g["batch"] for g in info["gears"]] == [1, 4]
    assert info["inputs"][0]["shape"] == [-1, 64]
    assert all(k["name"].startswith(("b1_", "b4_")) for k in info["kernels"])


def test_mode1_refuses_what_is_not_a_model_file(tmp_path):
    bad = tmp_path / "x.om"
    bad.write_bytes(b"not a model at all" * 20)
    line = error_line(tool("ge_compile", "--mode", "1", "--om", bad), "ge-compile")
    assert f"{bad}: not a ge model file" in line
    assert "--mode 1 needs the model file" in error_line(tool("ge_compile", "--mode", "1"), "ge-compile")


# --------------------------------------------------------------------------------------
# ge-opt model.om
# --------------------------------------------------------------------------------------


def test_ge_opt_prints_the_task_level_ir(two_branch):
    _, om, info = two_branch
    text = ok(tool("ge_opt", om)).stdout
    assert text == mf.load_model(om).ir_text
    assert "task.model @main" in text
    for k in info["kernels"]:
        assert f"tile.kernel @{k['name']}" in text and f"task.launch @{k['name']}" in text


def test_ge_opt_on_a_model_file_without_ir(tmp_path):
    src, om = tmp_path / "m.onnx", tmp_path / "m.om"
    onnx.save(two_branch_model(), src)
    ok(tool("ge_compile", src, "-o", om, "--kernel-level", "tile"))  # no IR text by default
    line = error_line(tool("ge_opt", om), "ge-opt")
    assert line == (f"ge-opt: error: {om}: the model file holds no IR text (it was written without ge-compile "
                    f"--ir-text); ge-compile --mode 1 --om {om} describes it as JSON")
    assert "a model file can only be printed" in error_line(tool("ge_opt", om, "-p", "cse"), "ge-opt")


# --------------------------------------------------------------------------------------
# --mode 3: operator support without building
# --------------------------------------------------------------------------------------


def test_mode3_all_supported_and_the_compile_agrees(tmp_path):
    src, report_path = tmp_path / "conv_pool.onnx", tmp_path / "check.json"
    onnx.save(conv_pool_model(), src)
    result = ok(tool("ge_compile", "--mode", "3", src, "--check-report", report_path))
    assert result.stdout.strip().endswith(f"{src}: all 4 ONNX node(s) supported on ascend910 (checked up to to-isa)")
    report = json.loads(report_path.read_text())
    assert report["supported"] is True and report["summary"] == {SUPPORTED: 4, UNSUPPORTED: 0, UNCHECKED: 0}
    assert report["stages"][0] == "import" and "tile" in report["stages"] and "fuse" in report["stages"]
    by_node = {n["node"]: n for n in report["nodes"]}
    assert by_node["conv1"]["kernels"] == by_node["relu1"]["kernels"]  # the epilogue fused into the Cube kernel
    assert by_node["pool1"]["kernels"] and by_node["pool1"]["kernels"] != by_node["conv1"]["kernels"]
    compiled = ge.compile(conv_pool_model())  # what mode 3 promised: the build goes through
    assert compiled.report["kernels"] >= 3


def unsupported_operator_model() -> onnx.ModelProto:
    """relu1 -> hm1 (an ONNX operator ge lacks) -> sig1 -> custom1 (another domain's) -> neg1;
    and tanh1 beside them."""
    model = _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("Hardmax", ["r"], ["h"], name="hm1"),
        helper.make_node("Sigmoid", ["h"], ["s"], name="sig1"),
        helper.make_node("FindMax", ["s"], ["f"], name="custom1", domain="com.acme"),
        helper.make_node("Neg", ["f"], ["n"], name="neg1"),
        helper.make_node("Tanh", ["x"], ["t"], name="tanh1"),
        helper.make_node("Concat", ["n", "t"], ["y"], name="cat1", axis=0),
    ], (4, 8))
    model.opset_import.append(helper.make_opsetid("com.acme", 1))
    return model


def test_mode3_unsupported_operators_at_import(tmp_path):
    """Refused nodes are cut out and the others checked: past hm1 (its output type is
    inferred), but not past custom1 (another domain: unknown type)."""
    src, report_path = tmp_path / "unsup.onnx", tmp_path / "check.json"
    onnx.save(unsupported_operator_model(), src)
    result = tool("ge_compile", "--mode", "3", src, "--check-report", report_path)
    line = error_line(result, "ge-compile")
    assert line == (f"ge-compile: error: {src}: 2 of 7 ONNX node(s) unsupported on ascend910, 2 not reached: "
                    "'hm1' (Hardmax) at import: operator ai.onnx::Hardmax is not supported by ge; 'custom1' "
                    "(FindMax) at import: operator com.acme::FindMax is not supported by ge")
    report = json.loads(report_path.read_text())
    status = {n["node"]: (n["status"], n["level"]) for n in report["nodes"]}
    assert status == {
        "relu1": (SUPPORTED, "to-isa"), "hm1": (UNSUPPORTED, "import"), "sig1": (SUPPORTED, "to-isa"),
        "custom1": (UNSUPPORTED, "import"), "neg1": (UNCHECKED, "import"), "tanh1": (SUPPORTED, "to-isa"),
        "cat1": (UNCHECKED, "import"),
    }
    by_node = {n["node"]: n for n in report["nodes"]}
    assert by_node["neg1"]["reason"] == "not reached: it needs the output of 'custom1', whose type is unknown"
    assert all(by_node[n]["kernels"] for n in ("relu1", "sig1", "tanh1"))  # really built and tiled
    assert report["summary"] == {SUPPORTED: 3, UNSUPPORTED: 2, UNCHECKED: 2}
    assert "neg1" in result.stdout and "unchecked" in result.stdout  # the per-node table


def test_mode3_nodes_the_importer_refuses():
    model = _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], storage_order=1),
        helper.make_node("Sigmoid", ["p"], ["q"], name="sig1"),
        helper.make_node("MaxPool", ["q"], ["y"], name="pool2", kernel_shape=[2, 2], storage_order=1),
    ], (1, 16, 8, 8))
    report = check_support(model)
    assert [(n.node, n.level, n.reason) for n in report.unsupported] == [
        ("pool1", "import", "storage_order = 1 is not supported"),
        ("pool2", "import", "storage_order = 1 is not supported"),
    ]
    assert all(n.status == SUPPORTED and n.kernels for n in report.nodes if n.node in ("relu1", "sig1"))


def big_softmax_model() -> onnx.ModelProto:
    """relu1 -> sm (a Softmax over 300000 elements: more than UB holds, no multi-pass reduction)."""
    return _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("Softmax", ["r"], ["s"], name="sm", axis=-1),
        helper.make_node("Sigmoid", ["x"], ["g"], name="sig1"),
        helper.make_node("Add", ["s", "g"], ["y"], name="add1"),
    ], (1, 300000))


def test_mode3_tiling_refuses_one_kernel_and_checks_the_others(tmp_path):
    switch = tmp_path / "no_fusion.json"  # one kernel per node, whatever the fusion rules become
    switch.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}))
    options = ge.CompileOptions(precision_mode=F32, fusion_switch_file=str(switch))
    report = check_support(big_softmax_model(), options)
    by_node = {n.node: n for n in report.nodes}
    sm = by_node["sm"]
    assert (sm.status, sm.level, len(sm.kernels)) == (UNSUPPORTED, "tile", 1)
    assert re.fullmatch(rf"kernel @{sm.kernels[0]} \(node sm\): UB overflow on ascend910: the live buffers need "
                        r"\d+ bytes, UB holds 262144 bytes \(smallest tiling\): graph.softmax \(node sm\) needs its "
                        r"whole normalized extent in UB; a chunked \(two-pass\) softmax is not implemented",
                        sm.reason), sm.reason
    for name in ("relu1", "sig1", "add1"):  # the kernels before and after the failing one were tiled
        assert by_node[name].status == SUPPORTED and by_node[name].kernels != sm.kernels
    assert report.summary() == f"g: 1 of 4 ONNX node(s) unsupported on ascend910: 'sm' (Softmax) at tile: {sm.reason}"
    # the real compile stops at the same kernel for the same reason
    with pytest.raises(ge.CompileError, match=rf"tile failed: kernel @{sm.kernels[0]} \(node sm\): UB overflow"):
        ge.compile(big_softmax_model(), dataclasses.replace(options, kernel_level="tile"))


def test_mode3_isa_vector_table_agrees_with_to_isa(monkeypatch):
    """With sigmoid taken out of the isa vector lowering's table, mode 3 refuses the node at
    to-isa and the compile fails there; at kernel level tile, both accept it."""
    primitive = isa_vector.is_primitive
    monkeypatch.setattr(isa_vector, "is_primitive", lambda op: op.name != "graph.sigmoid" and primitive(op))
    report = check_support(conv_pool_model())
    (bad,) = report.unsupported
    assert (bad.node, bad.level) == ("sig1", "to-isa")
    assert re.match(r"kernel @\w+: no isa vector lowering for 1 op\(s\) of a tile.vector: graph.sigmoid .*\(node sig1\)",
                    bad.reason), bad.reason
    with pytest.raises(ge.CompileError, match=r"to-isa failed: .*no isa vector lowering .*graph\.sigmoid"):
        ge.compile(conv_pool_model())
    assert check_support(conv_pool_model(), ge.CompileOptions(kernel_level="tile")).supported


def test_mode3_needs_static_shapes(tmp_path):
    src = tmp_path / "dyn.onnx"
    onnx.save(two_branch_model("N"), src)
    line = error_line(tool("ge_compile", "--mode", "3", src), "ge-compile")
    assert "input 'x' [N, 64] has symbolic dim 'N' (dim 0)" in line
    ok(tool("ge_compile", "--mode", "3", src, "--input-shape", "x:8,64", "--kernel-level", "tile"))


# --------------------------------------------------------------------------------------
# --log
# --------------------------------------------------------------------------------------


def test_log_levels_of_ge_compile(tmp_path):
    src = tmp_path / "conv_pool.onnx"
    onnx.save(conv_pool_model(), src)
    debug = ok(tool("ge_compile", src, "-o", tmp_path / "a.om", "--kernel-level", "tile", "--log", "debug")).stderr
    assert "ge-compile: info: conv_pool.onnx: fuse took" in debug
    assert "[fuse] TbeConvElemwiseFusionPass: group #1 (cube_epilogue) = conv1 + relu1" in debug
    assert "[tile] @k1_conv1 block_dim" in debug and "// graph-optimize{debug=true}" in debug
    info = ok(tool("ge_compile", src, "-o", tmp_path / "b.om", "--kernel-level", "tile", "--log", "info")).stderr
    assert "ge-compile: info: conv_pool.onnx: tile took" in info and "[fuse]" not in info
    quiet = ok(tool("ge_compile", src, "-o", tmp_path / "c.om", "--kernel-level", "tile", "--log", "error")).stderr
    assert quiet == ""


def test_log_levels_of_ge_opt_and_ge_run(tmp_path):
    src = tmp_path / "conv_pool.onnx"
    onnx.save(conv_pool_model(), src)
    debug = ok(tool("ge_opt", src, "-p", "graph-optimize,assign-layouts,fuse", "--log", "debug")).stderr
    assert "[fuse] TbeConvElemwiseFusionPass" in debug and "ge-opt: info: fuse took" in debug
    assert ok(tool("ge_opt", src, "-p", "graph-optimize,fuse")).stderr == ""
    om = tmp_path / "m.om"
    ge.compile(src, ge.CompileOptions(kernel_level="tile")).save(om)
    info = ok(tool("ge_run", om, "--log", "info")).stderr
    assert f"ge-run: info: {om}: seeded (seed 0) random inputs 'x' [1, 3, 16, 16] float32" in info


@pytest.mark.slow
def test_mode3_on_a_light_model_agrees_with_its_compile():
    """squeezenet: every node supported, and the kernels mode 3 names are the compiled ones."""
    from ge.dialects.blobs import blob_scope
    from ge.testing import light_model_path, with_random_weights

    with blob_scope():
        model = with_random_weights(light_model_path("squeezenet"))
        options = ge.CompileOptions(kernel_level="tile", precision_mode=F32)
        report = check_support(model, options)
        assert report.supported and len(report.nodes) == len(model.graph.node)
        named = {k for n in report.nodes for k in n.kernels}
        compiled = ge.compile(model, options)
    kernels = {k["name"] for k in compiled.model.definition["kernels"]}
    assert named == kernels and len(kernels) == compiled.report["kernels"]
    convs = [n for n in report.nodes if n.op_type == "Conv"]
    assert len(convs) == 26 and all(len(n.kernels) == 1 for n in convs)
