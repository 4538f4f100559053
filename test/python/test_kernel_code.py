"""Kernel code (runtime/kernel_code.py): isa kernels stored pre-decoded in the model file.

Loading and running an isa-level model parses no MLIR (the parser is patched to fail);
kernels with the same code share one stored body (each keeps its own names) and one
timing-and-checks analysis; the simulator runs kernel code read back from JSON exactly as
it runs the kernel from IR; the timing and checks of each body are computed once and
reused by later launches and runs (same cycles, same outputs); `timing_only` gives the
same cycles without outputs. Tolerance of the MatMul + Relu twins against numpy: 1e-5.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import StringAttr

import ge
import ge.ir
from ge.dialects import isa
from ge.dialects.blobs import blob_scope
from ge.runtime import kernel_code
from ge.runtime.simulator import KernelProgram, Simulator
from ge.targets import load_target
from ge.testing import two_branch_model

F32 = "must_keep_origin_dtype"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[str, ge.CompiledModel]:
    with blob_scope():
        compiled = ge.compile(two_branch_model(), ge.CompileOptions(precision_mode=F32, keep_ir_text=True))
    path = str(tmp_path_factory.mktemp("code") / "m.om")
    compiled.save(path)
    return path, compiled


def test_loading_and_running_parse_no_mlir(saved, monkeypatch):
    path, compiled = saved
    x = {"x": np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)}
    expected = compiled.run(x)

    def refuse(*args, **kwargs):
        raise AssertionError("the load path parsed MLIR")

    import xdsl.parser

    monkeypatch.setattr(ge.ir, "parse_module", refuse)
    monkeypatch.setattr(xdsl.parser.Parser, "__init__", refuse)
    loaded = ge.load_model(path)
    got = loaded.run(x)
    np.testing.assert_array_equal(got["y"], expected["y"])
    assert loaded.model.kernels["format"] == "isa-code"
    assert loaded.last_run.total_cycles == compiled.last_run.total_cycles > 0


def test_identical_bodies_are_stored_once(saved):
    _, compiled = saved
    module = ge.ir.parse_module(compiled.model.ir_text)
    kernels = [op for op in module.walk() if isinstance(op, isa.KernelOp)]
    twin = kernels[0].clone()
    twin.properties["sym_name"] = StringAttr("twin")
    target = load_target("ascend910")
    part = kernel_code.partition([*kernels, twin], target)
    assert len(part["kernels"]) == len(kernels) + 1
    first = part["kernels"][kernels[0].sym_name.data]
    assert part["kernels"]["twin"] == first
    codes = {kernel_code.body_key(kernel_code.strip(kernel_code.encode(k, target))[0]) for k in kernels}
    assert len(part["bodies"]) == len(codes)
    # a body holds no names: the kernel's own labels and locations come back with it
    assert kernel_code.label(part["bodies"][first["body"]], first["names"]) == kernel_code.encode(kernels[0], target)
    assert all(len(a) == 2 for b in part["bodies"] for a in b["args"])


def twins() -> onnx.ModelProto:
    """Two MatMul + Relu branches of the same shapes: two kernels with the same code."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((64, 64)) / 8).astype(np.float32), f"w{i}") for i in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="a"), helper.make_node("Relu", ["a"], ["y0"], name="y0"),
             helper.make_node("MatMul", ["x", "w1"], ["b"], name="b"), helper.make_node("Relu", ["b"], ["y1"], name="y1")]

    def t(name: str):
        return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [32, 64])

    graph = helper.make_graph(nodes, "twins", [t("x")], [t("y0"), t("y1")], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_kernels_with_the_same_code_share_body_and_checks(tmp_path):
    model = twins()
    with blob_scope():
        compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32, keep_ir_text=True))
    part = compiled.model.kernels
    refs = part["kernels"]
    assert len(refs) == 2 and len(part["bodies"]) == 1 and {r["body"] for r in refs.values()} == {0}
    assert refs["k0_a"]["names"] != refs["k1_b"]["names"]  # each keeps its own labels and locations
    compiled.save(tmp_path / "twins.om")
    loaded = ge.load_model(tmp_path / "twins.om")
    x = {"x": np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)}
    got = loaded.run(x)
    assert len(loaded.executor.analyses) == 1  # the second launch reused the first one's timing and checks
    kernels = loaded.last_run.kernels
    assert [k.kernel for k in kernels] == ["k0_a", "k1_b"] and kernels[0].cycles == kernels[1].cycles
    w = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for out, weight in (("y0", "w0"), ("y1", "w1")):
        np.testing.assert_allclose(got[out], np.maximum(x["x"] @ w[weight], 0), rtol=1e-5, atol=1e-5)


def test_code_from_json_runs_like_the_kernel(saved):
    _, compiled = saved
    module = ge.ir.parse_module(compiled.model.ir_text)
    target = load_target("ascend910")
    for kernel in (op for op in module.walk() if isinstance(op, isa.KernelOp)):
        body = json.loads(json.dumps(kernel_code.encode(kernel, target)))
        from_json, from_ir = KernelProgram(body, target, "k"), KernelProgram.from_kernel(kernel, target)
        rng = np.random.default_rng(1)
        ins = [rng.standard_normal(n).astype(d) for d, n in from_ir.args[:from_ir.num_ins]]
        outs = []
        for prog in (from_json, from_ir):
            bufs = [*(a.copy() for a in ins), *(np.zeros(n, d) for d, n in prog.args[prog.num_ins:])]
            sim = Simulator(target)
            stats = sim.run_kernel(prog, bufs)
            outs.append((bufs[prog.num_ins:], stats.cycles, sim.report.problems))
        (a, ca, pa), (b, cb, pb) = outs
        assert ca == cb and pa == pb == []
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_timing_and_checks_once_per_body(saved):
    path, _ = saved
    model = ge.load_model(path)
    x = {"x": np.random.default_rng(2).standard_normal((32, 64)).astype(np.float32)}
    first = model.run(x)
    ex = model.executor
    bodies = {k.program.analysis_key for k in ex.kernels}
    assert len(ex.analyses) == len(bodies)
    cycles = ex.last_report.total_cycles
    kernels = [(k.kernel, k.cycles) for k in ex.last_report.kernels]
    x2 = {"x": x["x"] * 2}
    again = model.run(x2)  # numerics only: the analyses are reused
    np.testing.assert_array_equal(again["y"], ge.load_model(path).run(x2)["y"])  # as a fresh executor computes
    assert not np.array_equal(again["y"], first["y"])
    assert ex.last_report.total_cycles == cycles
    assert [(k.kernel, k.cycles) for k in ex.last_report.kernels] == kernels
    assert model.run(x, timing_only=True) == {}
    assert ex.last_report.total_cycles == cycles
    ex.analyses.clear()  # timing only from scratch: the same cycles
    model.run(x, timing_only=True)
    assert ex.last_report.total_cycles == cycles
