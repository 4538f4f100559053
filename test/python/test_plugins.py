"""Extending ge without forking it (ge.plugins, README "Extending ge").

The example package examples/ge_plugin_example (installed by test/run_all.sh) brings the
custom operator com.example::RMSNorm and the pass fuse-rmsnorm by entry points. Checked here:
- an ONNX model using com.example::RMSNorm compiles and runs on the simulator and matches the
  operator's numpy reference (f32 `must_keep_origin_dtype`: within 1e-4 of the output's
  scale, max |reference|; f16 `force_fp16`: within 1e-2 of it);
- fuse-rmsnorm is listed by `ge-opt --help`, rewrites RMSNorm written with standard ONNX ops
  (the IR after it is the operator's decomposition), and the compiled model matches
  onnxruntime on the original model (f32, 1e-4 of scale);
- an operator registered in process (com.acme::SwiGLU, matmuls + sigmoid) end to end;
- broken plugins (missing reference, shape inference that disagrees with the decomposition,
  a decomposition that disagrees with the reference, a pass that raises or breaks the IR, an entry point that does not load) are one clear
  error naming the plugin, through the API, `ge-opt` and `ge-compile`.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import plugins
from ge.dialects import graph

F32 = "must_keep_origin_dtype"
SHAPE = (2, 16, 64)


def _example_installed() -> None:
    try:
        importlib.metadata.distribution("ge-plugin-example")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("the example plugin is not installed: pip install -e examples/ge_plugin_example "
                    "(test/run_all.sh does it)")


@pytest.fixture(scope="module")
def example():
    _example_installed()
    from ge_plugin_example import ops

    return ops


def scale_of(a: np.ndarray) -> float:
    return float(np.abs(a).max())


def rmsnorm_model(shape=SHAPE, eps=1e-5):
    gamma = np.random.default_rng(0).uniform(0.5, 1.5, shape[-1]).astype(np.float32)
    node = helper.make_node("RMSNorm", ["x", "gamma"], ["y"], domain="com.example", name="rms", epsilon=eps)
    g = helper.make_graph([node], "rmsnorm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(gamma, "gamma")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    return model, gamma


def pattern_model(shape=SHAPE, eps=1e-5, square="Mul"):
    """RMSNorm with standard ops, as PyTorch exports `x * torch.rsqrt(x.pow(2).mean(-1) + eps) * w`
    (the square as Mul(x, x) or Pow(x, 2)), followed by a Relu so the rewritten value has a user."""
    gamma = np.random.default_rng(0).uniform(0.5, 1.5, shape[-1]).astype(np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"], name="square") if square == "Mul"
        else helper.make_node("Pow", ["x", "two"], ["sq"], name="square"),
        helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], name="mean", keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"], name="add_eps"),
        helper.make_node("Sqrt", ["mse"], ["rms"], name="sqrt"),
        helper.make_node("Div", ["one", "rms"], ["inv"], name="rsqrt"),
        helper.make_node("Mul", ["x", "inv"], ["n"], name="normalize"),
        helper.make_node("Mul", ["gamma", "n"], ["s"], name="scale"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    inits = [numpy_helper.from_array(gamma, "gamma"), numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             numpy_helper.from_array(np.array(eps, np.float32), "eps"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    if square == "Pow":
        inits.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
    g = helper.make_graph(nodes, "rmsnorm_pattern", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def x_input(shape=SHAPE) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def graph_op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.dialect_name() == "graph" and op.name != "graph.constant"]


# --------------------------------------------------------------------------------------
# The example package, through its entry points
# --------------------------------------------------------------------------------------


def test_entry_points_register_the_example(example):
    assert plugins.registered_passes()["fuse-rmsnorm"].plugin == "ge-plugin-example"
    assert plugins.registered_passes()["fuse-rmsnorm"].stage == "after-import"
    entry = plugins.find_op("com.example", "RMSNorm")
    assert entry is not None and entry.plugin == "ge-plugin-example"
    assert entry.inputs == ("X", "Scale") and entry.attributes == {"epsilon": 1e-6}


def test_custom_op_imports_as_its_decomposition(example):
    model, _ = rmsnorm_model()
    module = ge.load_onnx(model)
    assert graph_op_names(module) == ["graph.mul", "graph.reduce_mean", "graph.add", "graph.sqrt",
                                      "graph.reciprocal", "graph.mul", "graph.mul"]
    computed = [op for op in module.walk() if op.dialect_name() == "graph" and op.name != "graph.constant"]
    assert {str(op.location) for op in computed} == {'loc("rms")'}  # errors and profiles name the ONNX node
    eps = [plugins.constant_value(op.output) for op in module.walk() if isinstance(op, graph.ConstantOp)
           and op.output.type.get_shape() == ()]
    assert len(eps) == 1 and eps[0].dtype == np.float32 and eps[0] == np.float32(1e-5)


@pytest.mark.parametrize("precision, tol", [(F32, 1e-4), ("force_fp16", 1e-2)])
def test_custom_op_runs_on_the_simulator(example, precision, tol):
    model, gamma = rmsnorm_model()
    x = x_input()
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=precision))
    y = compiled.run({"x": x})["y"]
    expected = example.reference(x, gamma, epsilon=1e-5)
    assert y.shape == SHAPE and compiled.report["kernels"] >= 1
    assert np.abs(y - expected).max() <= tol * scale_of(expected)


def test_support_check_and_backend_run_the_custom_op(example, tmp_path):
    from ge.backend import GeBackend
    from ge.precheck import check_support

    model, _ = rmsnorm_model()
    path = tmp_path / "rmsnorm.onnx"
    onnx.save(model, path)
    report = check_support(str(path), ge.CompileOptions(precision_mode=F32))
    assert report.supported, report.table()
    assert GeBackend.is_compatible(model)
    x = x_input()
    expected = example.reference(x, rmsnorm_model()[1], epsilon=1e-5)
    y = GeBackend.prepare(model).run([x])[0]  # the graph reference interpreter on the decomposition
    assert np.abs(y - expected).max() <= 1e-5 * scale_of(expected)
    model.graph.node[0].domain = "com.unknown"
    assert not GeBackend.is_compatible(model)
    assert not check_support(model, ge.CompileOptions(precision_mode=F32)).supported


def test_ge_opt_help_lists_the_example_pass(example):
    out = subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "fuse-rmsnorm" in out.stdout.replace("\n", "").replace(" ", "")


def test_fuse_rmsnorm_rewrites_the_pattern(example, tmp_path):
    path = tmp_path / "pattern.onnx"
    onnx.save(pattern_model(), path)
    before = subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", str(path)], capture_output=True, text=True,
                            timeout=120)
    after = subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", str(path), "-p", "fuse-rmsnorm"],
                           capture_output=True, text=True, timeout=120)
    assert before.returncode == 0 and after.returncode == 0, before.stderr + after.stderr
    assert "graph.div" in before.stdout and "graph.reciprocal" not in before.stdout
    assert "graph.div" not in after.stdout and after.stdout.count("graph.reciprocal") == 1
    module = ge.load_onnx(pattern_model())
    plugins.registered_passes()["fuse-rmsnorm"].cls().apply(None, module)
    # the decomposition, then the model's own Relu
    assert graph_op_names(module) == ["graph.mul", "graph.reduce_mean", "graph.add", "graph.sqrt",
                                      "graph.reciprocal", "graph.mul", "graph.mul", "graph.relu"]


def test_fuse_rmsnorm_in_compile_matches_onnxruntime(example):
    model = pattern_model()
    x = x_input()
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    plain = ge.compile(model, ge.CompileOptions(precision_mode=F32))
    fused = ge.compile(model, ge.CompileOptions(precision_mode=F32, passes="fuse-rmsnorm"))
    for compiled in (plain, fused):
        y = compiled.run({"x": x})["y"]
        assert np.abs(y - expected).max() <= 1e-4 * scale_of(expected)
    # the compile ran the pass at its stage (a stage of its own in the timings)
    assert "fuse-rmsnorm" in fused.report["compile_seconds"]
    assert "fuse-rmsnorm" not in plain.report["compile_seconds"]


def test_fuse_rmsnorm_compiles_the_pow_spelling_to_one_kernel(example):
    """Pow(x, 2) as the square: after the rewrite, one fused kernel that matches onnxruntime."""
    model = pattern_model(square="Pow")
    x = x_input()
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    fused = ge.compile(model, ge.CompileOptions(precision_mode=F32, passes=["fuse-rmsnorm"]))
    assert fused.report["kernels"] == 1
    y = fused.run({"x": x})["y"]
    assert np.abs(y - expected).max() <= 1e-4 * scale_of(expected)


def test_ge_compile_runs_the_pass_at_its_stage(example, tmp_path):
    path, dump = tmp_path / "pattern.onnx", tmp_path / "ir"
    onnx.save(pattern_model(), path)
    result = subprocess.run([sys.executable, "-m", "ge.tools.ge_compile", str(path), "-o", str(tmp_path / "p.om"),
                             "--kernel-level", "tile", "--passes", "fuse-rmsnorm", "--dump-ir", str(dump)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in dump.iterdir())
    assert files[:3] == ["00_import.mlir", "01_fuse-rmsnorm.mlir", "02_graph-optimize.mlir"]
    assert "graph.div" in (dump / "00_import.mlir").read_text()
    rewritten = (dump / "01_fuse-rmsnorm.mlir").read_text()
    assert "graph.div" not in rewritten and rewritten.count("graph.reciprocal") == 1


@dataclass(frozen=True)
class _Noop(ge.GraphPass):
    def run(self, module):
        pass


def test_custom_passes_are_placed_after_their_stage():
    from ge.compiler import pass_stages, resolve_target

    made = {name: type(name, (_Noop,), {"name": name, "stage": stage}) for name, stage in
            (("test-a", "after-import"), ("test-b", "after-fuse"), ("test-c", "after-import"), ("test-d", "after-tile"))}
    for cls in made.values():
        ge.register_pass(cls, plugin="test")
    try:
        options = ge.CompileOptions(passes="test-c,test-b,test-a,test-d", kernel_level="tile")
        labels = [label for label, _ in pass_stages(options, resolve_target(options.soc_version))]
        assert labels == ["test-c", "test-a", "graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data",
                          "fuse", "test-b", "bufferize", "tile", "test-d"]
        isa = [label for label, _ in pass_stages(dataclasses.replace(options, kernel_level="isa", passes=["test-d"]),
                                                 resolve_target(options.soc_version))]
        assert isa[isa.index("tile") + 1] == "test-d" and isa[-1] == "insert-sync"
    finally:
        for name in made:
            plugins.unregister_pass(name)


# --------------------------------------------------------------------------------------
# An operator registered in process: com.acme::SwiGLU
# --------------------------------------------------------------------------------------


def _swiglu_reference(x, w_gate, w_up):
    x64 = x.astype(np.float64)
    gate = x64 @ w_gate
    return (gate / (1.0 + np.exp(-gate)) * (x64 @ w_up)).astype(x.dtype)


def _swiglu_decompose(b, x, w_gate, w_up):
    gate = b.matmul(x, w_gate)
    return b.mul(b.mul(gate, b.sigmoid(gate)), b.matmul(x, w_up))


def _swiglu_shape(shapes):
    x, w_gate, _ = shapes
    return [(*x[:-1], w_gate[-1])]


@pytest.fixture
def swiglu():
    entry = ge.register_op("com.acme", "SwiGLU", inputs=["X", "Wgate", "Wup"], infer_shape=_swiglu_shape,
                           reference=_swiglu_reference, decompose=_swiglu_decompose, plugin="acme-test")
    yield entry
    plugins.unregister_op("com.acme", "SwiGLU")


def swiglu_model(m=32, k=64, n=48):
    rng = np.random.default_rng(2)
    wg, wu = (rng.standard_normal((k, n)).astype(np.float32) / 8 for _ in range(2))
    node = helper.make_node("SwiGLU", ["x", "wg", "wu"], ["y"], domain="com.acme", name="ffn")
    g = helper.make_graph([node], "swiglu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (m, k))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (m, n))],
                          [numpy_helper.from_array(wg, "wg"), numpy_helper.from_array(wu, "wu")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)]), wg, wu


def test_registered_swiglu_runs_on_the_simulator(swiglu):
    model, wg, wu = swiglu_model()
    x = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32))
    y = compiled.run({"x": x})["y"]
    expected = swiglu.run_reference(x, wg, wu)[0]
    assert np.abs(y - expected).max() <= 1e-4 * scale_of(expected)


def test_unregistered_domain_is_refused(swiglu):
    model, _, _ = swiglu_model()
    model.graph.node[0].domain = "com.other"
    with pytest.raises(ge.UnsupportedModelError, match=r"'ffn' \(com.other::SwiGLU"):
        ge.load_onnx(model)


# --------------------------------------------------------------------------------------
# Broken plugins
# --------------------------------------------------------------------------------------


def test_missing_reference_is_refused_at_registration():
    with pytest.raises(ge.PluginError, match=r"plugin broken-pkg: custom operator com.acme::Foo: missing reference"):
        ge.register_op("com.acme", "Foo", inputs=["X"], infer_shape=lambda s: s, reference=None,
                       decompose=lambda b, x: b.relu(x), plugin="broken-pkg")
    assert plugins.find_op("com.acme", "Foo") is None


def test_standard_domain_is_refused():
    with pytest.raises(ge.PluginError, match="needs its own domain"):
        ge.register_op("", "Relu", inputs=["X"], infer_shape=lambda s: s, reference=np.abs,
                       decompose=lambda b, x: b.relu(x), plugin="broken-pkg")


def test_wrong_shape_inference_names_the_plugin_and_node(swiglu):
    plugins.unregister_op("com.acme", "SwiGLU")
    ge.register_op("com.acme", "SwiGLU", inputs=["X", "Wgate", "Wup"], infer_shape=lambda shapes: [shapes[0]],
                   reference=_swiglu_reference, decompose=_swiglu_decompose, plugin="acme-broken")
    model, _, _ = swiglu_model()
    with pytest.raises(ge.UnsupportedModelError) as info:
        ge.load_onnx(model)
    message = str(info.value)
    assert "node 'ffn'" in message and "com.acme::SwiGLU (plugin acme-broken)" in message
    assert "infer_shape gives [32, 64]" in message and "the decomposition's result is [32, 48]" in message


def test_decompose_exception_names_the_plugin(swiglu):
    plugins.unregister_op("com.acme", "SwiGLU")
    ge.register_op("com.acme", "SwiGLU", inputs=["X", "Wgate", "Wup"], infer_shape=_swiglu_shape,
                   reference=_swiglu_reference, decompose=lambda b, x, wg, wu: b.no_such_op(x), plugin="acme-broken")
    model, _, _ = swiglu_model()
    with pytest.raises(ge.UnsupportedModelError, match=r"node 'ffn'.*\(plugin acme-broken\): decompose raised "
                                                       r"AttributeError: the graph dialect has no op 'graph.no_such_op'"):
        ge.load_onnx(model)


def test_decomposition_that_disagrees_with_the_reference(swiglu):
    plugins.unregister_op("com.acme", "SwiGLU")
    ge.register_op("com.acme", "SwiGLU", inputs=["X", "Wgate", "Wup"], infer_shape=_swiglu_shape,
                   reference=_swiglu_reference, plugin="acme-broken",
                   decompose=lambda b, x, wg, wu: b.mul(b.sigmoid(b.matmul(x, wg)), b.matmul(x, wu)))  # no gate *
    model, _, _ = swiglu_model()
    with pytest.raises(ge.UnsupportedModelError, match=r"node 'ffn'.*SwiGLU \(plugin acme-broken\): output 'Y': the "
                                                       r"decomposition disagrees with the reference on random inputs "
                                                       r"of shapes \[\[32, 64\], \[64, 48\], \[64, 48\]\]"):
        ge.load_onnx(model)


@dataclass(frozen=True)
class RaisingPass(ge.GraphPass):
    name = "test-raising"
    stage = "after-graph-optimize"

    def run(self, module):
        raise RuntimeError("something went wrong")


@dataclass(frozen=True)
class BreakingPass(ge.GraphPass):
    """Gives the first graph.relu a property it does not define: IR that does not verify."""

    name = "test-breaking"
    stage = "after-fuse"

    def run(self, module):
        for op in module.walk():
            if isinstance(op, graph.ReluOp):
                op.properties["alpha"] = graph.float_attr(1.0)
                return
        raise AssertionError("no relu")


@pytest.fixture
def broken_passes():
    ge.register_pass(RaisingPass, plugin="broken-pkg")
    ge.register_pass(BreakingPass, plugin="broken-pkg")
    yield
    plugins.unregister_pass("test-raising")
    plugins.unregister_pass("test-breaking")


def _relu_model():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    g = helper.make_graph([node], "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (4, 32))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (4, 32))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_raising_pass_is_reported_by_compile(broken_passes):
    with pytest.raises(ge.PluginError, match=r"^pass 'test-raising' \(plugin broken-pkg\) at stage "
                                             r"after-graph-optimize: RuntimeError: something went wrong$"):
        ge.compile(_relu_model(), ge.CompileOptions(passes=["test-raising"], kernel_level="tile"))


def test_pass_breaking_the_ir_is_reported_by_compile(broken_passes):
    with pytest.raises(ge.PluginError, match=r"^pass 'test-breaking' \(plugin broken-pkg\) at stage after-fuse: "
                                             r"the IR it leaves does not verify"):
        ge.compile(_relu_model(), ge.CompileOptions(passes="test-breaking", kernel_level="tile"))


def test_broken_pass_through_the_tools(broken_passes, tmp_path, capsys):
    from ge.tools import ge_compile, ge_opt

    path = tmp_path / "relu.onnx"
    onnx.save(_relu_model(), path)
    assert ge_opt.main([str(path), "-p", "test-raising"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ge-opt: error: pass 'test-raising' (plugin broken-pkg) at stage after-graph-optimize: "
                   "RuntimeError: something went wrong"]
    assert ge_compile.main([str(path), "-o", str(tmp_path / "relu.om"), "--kernel-level", "tile",
                            "--passes", "test-raising"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ge-compile: error: pass 'test-raising' (plugin broken-pkg) at stage after-graph-optimize: "
                   "RuntimeError: something went wrong"]
    assert ge_compile.main([str(path), "-o", str(tmp_path / "relu.om"), "--passes", "no-such-pass"]) == 1
    assert "unknown custom pass 'no-such-pass'" in capsys.readouterr().err


def test_plain_module_pass_is_guarded_too(tmp_path, capsys):
    from xdsl.passes import ModulePass

    from ge.tools import ge_opt

    @dataclass(frozen=True)
    class Plain(ModulePass):
        name = "test-plain"

        def apply(self, ctx, op):
            raise ValueError("plain failure")

    ge.register_pass(Plain, stage="after-decompose", plugin="plain-pkg")
    try:
        path = tmp_path / "relu.onnx"
        onnx.save(_relu_model(), path)
        assert ge_opt.main([str(path), "-p", "test-plain"]) == 1
        assert capsys.readouterr().err.strip() == ("ge-opt: error: pass 'test-plain' (plugin plain-pkg) at stage "
                                                   "after-decompose: ValueError: plain failure")
        with pytest.raises(ge.PluginError, match=r"^pass 'test-plain' \(plugin plain-pkg\) at stage after-decompose"):
            ge.compile(_relu_model(), ge.CompileOptions(passes=["test-plain"], kernel_level="tile"))
    finally:
        plugins.unregister_pass("test-plain")


def test_bad_pass_registrations():
    @dataclass(frozen=True)
    class NoName(ge.GraphPass):
        pass

    with pytest.raises(ge.PluginError, match="needs a kebab-case `name`"):
        ge.register_pass(NoName, plugin="broken-pkg")

    @dataclass(frozen=True)
    class Shadow(ge.GraphPass):
        name = "fuse"

    with pytest.raises(ge.PluginError, match="'fuse' is one of ge's own passes"):
        ge.register_pass(Shadow, plugin="broken-pkg")

    @dataclass(frozen=True)
    class Nowhere(ge.GraphPass):
        name = "test-nowhere"

    with pytest.raises(ge.PluginError, match="stage 'after-lunch'; stages: after-import"):
        ge.register_pass(Nowhere, stage="after-lunch", plugin="broken-pkg")


class _FakeDist:
    name = "broken-dist"


class _FakeEntryPoint:
    name, value, module, dist = "bad", "broken_dist.missing:Pass", "broken_dist.missing", _FakeDist()

    def load(self):
        raise ModuleNotFoundError("No module named 'broken_dist'")


def test_entry_point_that_does_not_load(monkeypatch):
    monkeypatch.setattr(plugins, "_loaded", False)  # restored afterwards: the real entry points stay loadable
    monkeypatch.setattr(plugins, "_entry_points", lambda group: [_FakeEntryPoint()] if group == "ge.passes" else [])
    with pytest.raises(ge.PluginError, match=r"plugin broken-dist: entry point ge.passes 'bad' = "
                                             r"broken_dist.missing:Pass cannot be loaded: ModuleNotFoundError"):
        plugins.load_entry_points(force=True)
