"""Custom operators with their own tile kernel (ge.register_op(..., kernel=), ge/plugin_tile.py).

The example package examples/ge_plugin_example (installed by test/run_all.sh) brings
com.example::SwiGLU, whose kernel is written with ge's tile-kernel API, and the pass
fuse-swiglu that rewrites SwiGLU spelled with standard ONNX ops (Split, Sigmoid, Mul, Mul)
into it. Checked here:
- the node imports as one opaque graph.custom op and runs on the simulator: f32
  (`must_keep_origin_dtype`) within 1e-5 of the output's scale (max |reference|) of the
  operator's numpy reference and of onnxruntime on the standard-op model; f16
  (`force_fp16`) within 1e-2 of it; edge tiles (rows not a multiple of the tile) and rows
  wider than UB (column chunks) included;
- fuse-swiglu changes the kernel count: the compiled models' kernel lists are counted with
  and without the pass (both computed here), and both match onnxruntime;
- broken tile kernels (a builder that raises, a rectangle that leaves its tensor, a kernel
  that leaves output elements unwritten or computes something else, a non-primitive compute
  op, a reference whose shape disagrees with infer_shape) are one PluginError naming the
  plugin, the operator and the ONNX node, through the API and ge-compile.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import plugins

F32 = "must_keep_origin_dtype"


@pytest.fixture(scope="module")
def swiglu():
    try:
        importlib.metadata.distribution("ge-plugin-example")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("the example plugin is not installed: pip install -e examples/ge_plugin_example "
                    "(test/run_all.sh does it)")
    if plugins.find_op("com.example", "SwiGLU") is None:
        pytest.fail("the installed example plugin predates com.example::SwiGLU: "
                    "pip install --no-deps -e examples/ge_plugin_example")
    from ge_plugin_example import swiglu

    return swiglu


def scale_of(a: np.ndarray) -> float:
    return float(np.abs(a).max())


def custom_model(shape, domain="com.example", op_type="SwiGLU"):
    out = (*shape[:-1], shape[-1] // 2)
    node = helper.make_node(op_type, ["x"], ["y"], domain=domain, name="swiglu")
    g = helper.make_graph([node], "swiglu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])


def pattern_model(shape, silu_first=True):
    """SwiGLU with standard ops, as PyTorch exports `a, g = x.chunk(2, -1); F.silu(a) * g`."""
    h = shape[-1] // 2
    out = (*shape[:-1], h)
    nodes = [
        helper.make_node("Split", ["x", "split"], ["a", "g"], axis=-1, name="chunk"),
        helper.make_node("Sigmoid", ["a"], ["s"], name="sigmoid"),
        helper.make_node("Mul", ["a", "s"] if silu_first else ["s", "a"], ["silu"], name="silu"),
        helper.make_node("Mul", ["silu", "g"] if silu_first else ["g", "silu"], ["y"], name="gate"),
    ]
    g = helper.make_graph(nodes, "swiglu_pattern", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
                          [numpy_helper.from_array(np.array([h, h], np.int64), "split")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def x_input(shape, seed=1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def launches(compiled) -> list[dict]:
    """The kernel launches of the compiled model's task list (one per kernel run)."""
    return [task for task in compiled.model.tasks if task["op"] == "launch"]


def computed_ops(module) -> list:
    return [op for op in module.walk() if op.dialect_name() == "graph" and op.name != "graph.constant"]


# --------------------------------------------------------------------------------------
# The example operator
# --------------------------------------------------------------------------------------


def test_entry_points_register_swiglu_and_its_pass(swiglu):
    entry = plugins.find_op("com.example", "SwiGLU")
    assert entry.plugin == "ge-plugin-example" and entry.kernel is swiglu.kernel and entry.decompose is None
    assert plugins.registered_passes()["fuse-swiglu"].stage == "after-import"
    assert plugins.registered_passes()["fuse-swiglu"].plugin == "ge-plugin-example"


def test_swiglu_imports_as_one_opaque_op(swiglu):
    module = ge.load_onnx(custom_model((4, 64)))
    (op,) = computed_ops(module)
    assert op.name == "graph.custom" and str(op.location) == 'loc("swiglu")'
    assert op.properties["domain"].data == "com.example" and op.properties["op_type"].data == "SwiGLU"
    assert op.results[0].type.get_shape() == (4, 32)
    # the text form parses back (the registered plugin's shape inference verifies it)
    from ge.ir import parse_module

    again = parse_module(str(module))
    assert [o.name for o in computed_ops(again)] == ["graph.custom"]


def test_graph_passes_leave_the_custom_op(swiglu):
    """graph-optimize and decompose leave it; assign-layouts keeps its tensors plain; fuse
    makes it an opaque group of its own."""
    from ge.ir import run_passes

    module = run_passes(ge.load_onnx(custom_model((4, 64))), "graph-optimize{precision=must_keep_origin_dtype},decompose,assign-layouts")
    (op,) = computed_ops(module)
    assert op.name == "graph.custom" and "#layout" not in str(op)
    module = run_passes(module, "fuse")
    groups = [o for o in module.walk() if o.name == "fusion.group"]
    assert len(groups) == 1 and groups[0].kind.data == "opaque"
    assert [o.name for o in groups[0].body.block.ops] == ["graph.custom", "fusion.yield"]


@pytest.mark.parametrize("shape", [(2, 48, 128), (3, 37, 96)])
def test_swiglu_runs_on_the_simulator_f32(swiglu, shape):
    """(3, 37, 96): 111 rows on 32 cores, the last tile partly past the rows."""
    x = x_input(shape)
    compiled = ge.compile(custom_model(shape), ge.CompileOptions(precision_mode=F32))
    assert len(launches(compiled)) == 1
    y = compiled.run({"x": x})["y"]
    expected = swiglu.reference(x)
    assert y.shape == expected.shape
    assert np.abs(y - expected).max() <= 1e-5 * scale_of(expected)


def test_swiglu_rows_wider_than_ub_run_in_column_chunks(swiglu):
    shape = (4, 2 * 6144)  # a 6144-wide f32 row needs more UB than there is: column chunks, the last partial
    x = x_input(shape)
    compiled = ge.compile(custom_model(shape), ge.CompileOptions(precision_mode=F32))
    y = compiled.run({"x": x})["y"]
    expected = swiglu.reference(x)
    assert np.abs(y - expected).max() <= 1e-5 * scale_of(expected)


def test_swiglu_runs_on_the_simulator_f16(swiglu):
    shape = (2, 16, 64)
    x = x_input(shape)
    compiled = ge.compile(custom_model(shape), ge.CompileOptions(precision_mode="force_fp16"))
    y = compiled.run({"x": x})["y"]
    expected = swiglu.reference(x)
    assert np.abs(y - expected).max() <= 1e-2 * scale_of(expected)


def test_reference_interpreter_runs_the_custom_op(swiglu):
    from ge.backend import GeBackend
    from ge.precheck import check_support

    model = custom_model((4, 64))
    x = x_input((4, 64))
    assert check_support(model, ge.CompileOptions(precision_mode=F32)).supported
    y = GeBackend.prepare(model).run([x])[0]
    expected = swiglu.reference(x)
    assert np.abs(y - expected).max() <= 1e-6 * scale_of(expected)


def test_custom_op_between_matmuls_is_a_kernel_of_its_own(swiglu):
    """An FFN: MatMul -> SwiGLU -> MatMul. The custom op is opaque: no epilogue absorbs it,
    three kernels; f32 within 1e-4 of the output's scale of the float64 numpy chain."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((64, 256)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((128, 64)) / 8).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
             helper.make_node("SwiGLU", ["h"], ["s"], domain="com.example", name="act"),
             helper.make_node("MatMul", ["s", "w2"], ["y"], name="down")]
    g = helper.make_graph(nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (32, 64))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (32, 64))],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    x = rng.standard_normal((32, 64)).astype(np.float32)
    expected = swiglu.reference(x.astype(np.float64) @ w1) @ w2
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32))
    assert len(launches(compiled)) == 3
    y = compiled.run({"x": x})["y"]
    assert np.abs(y - expected).max() <= 1e-4 * scale_of(expected)


def test_ir_naming_an_unregistered_operator_does_not_verify():
    from ge.ir import parse_module

    text = """func.func @main(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
      %y = graph.custom "Nope"(%x) {domain = "com.nobody"} : (tensor<4x64xf32>) -> tensor<4x32xf32>
      func.return %y : tensor<4x32xf32>
    }"""
    with pytest.raises(Exception, match=r"no custom operator com.nobody::Nope with a tile kernel is registered"):
        parse_module(text).verify()


# --------------------------------------------------------------------------------------
# fuse-swiglu: the kernel count before and after
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("silu_first", [True, False])
def test_fuse_swiglu_changes_the_kernel_count(swiglu, silu_first):
    shape = (2, 48, 128)
    model = pattern_model(shape, silu_first)
    x = x_input(shape)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    plain = ge.compile(model, ge.CompileOptions(precision_mode=F32))
    fused = ge.compile(model, ge.CompileOptions(precision_mode=F32, passes=["fuse-swiglu"]))
    before, after = len(launches(plain)), len(launches(fused))
    assert before >= 2 and after == 1
    assert plain.report["kernels"] == before and fused.report["kernels"] == after
    for compiled in (plain, fused):
        y = compiled.run({"x": x})["y"]
        assert np.abs(y - expected).max() <= 1e-5 * scale_of(expected)
    assert np.abs(fused.run({"x": x})["y"] - swiglu.reference(x)).max() <= 1e-5 * scale_of(expected)


def test_fuse_swiglu_leaves_other_patterns(swiglu):
    """The gate taken from the first half is another computation: not rewritten."""
    model = pattern_model((4, 64))
    for node in model.graph.node:
        if node.name == "gate":
            node.input[:] = ["silu", "a"]
    module = ge.load_onnx(model)
    plugins.registered_passes()["fuse-swiglu"].cls().apply(None, module)
    assert "graph.custom" not in [op.name for op in computed_ops(module)]


def test_ge_opt_runs_fuse_swiglu(swiglu, tmp_path):
    path = tmp_path / "pattern.onnx"
    onnx.save(pattern_model((4, 64)), path)
    help_text = subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", "--help"], capture_output=True, text=True,
                               timeout=120)
    assert "fuse-swiglu" in help_text.stdout.replace("\n", "").replace(" ", "")
    out = subprocess.run([sys.executable, "-m", "ge.tools.ge_opt", str(path), "-p", "fuse-swiglu"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("graph.custom") == 1 and "graph.split" not in out.stdout
    assert "graph.sigmoid" not in out.stdout


# --------------------------------------------------------------------------------------
# Broken tile kernels
# --------------------------------------------------------------------------------------


@pytest.fixture
def acme(swiglu):
    """Registers com.acme::SwiGLU with the example's reference and a kernel given per test."""

    def register(kernel, reference=swiglu.reference, infer_shape=swiglu.infer_shape):
        plugins.unregister_op("com.acme", "SwiGLU")
        return ge.register_op("com.acme", "SwiGLU", inputs=["X"], infer_shape=infer_shape, reference=reference,
                              kernel=kernel, plugin="acme-broken")

    yield register
    plugins.unregister_op("com.acme", "SwiGLU")


def _rows_kernel(compute, cols_of=lambda h: h, store_cols=None):
    """A one-row-per-tile kernel of [rows, 2h] -> [rows, h] with a given compute."""

    def kernel(k, x, y):
        rows, h = y.shape
        x3, y3 = k.view(x, [rows, 2, h]), k.view(y, [rows, 1, h])
        with k.tiles(rows, 1) as r:
            a = k.load(x3, [r, 0, 0], [1, 1, cols_of(h)])
            g = k.load(x3, [r, 1, 0], [1, 1, cols_of(h)])
            k.store(k.compute(compute, a, g), y3, [r, 0, store_cols or 0])

    return kernel


def _compile_acme(shape=(8, 64)):
    return ge.compile(custom_model(shape, "com.acme"), ge.CompileOptions(precision_mode=F32))


NAMES = r"custom operator com.acme::SwiGLU \(plugin acme-broken\), kernel @\w+ \(node swiglu\)"


def test_the_acme_kernel_itself_is_correct(acme, swiglu):
    """The helper kernel the broken variants below start from does compile and run."""
    acme(_rows_kernel(swiglu.silu_times_gate))
    x = x_input((8, 64))
    y = _compile_acme().run({"x": x})["y"]
    assert np.abs(y - swiglu.reference(x)).max() <= 1e-5 * scale_of(swiglu.reference(x))


def test_builder_that_raises(acme):
    def kernel(k, x, y):
        raise RuntimeError("no kernel today")

    acme(kernel)
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel builder raised RuntimeError: no kernel today"):
        _compile_acme()


def test_rectangle_that_leaves_the_output(acme, swiglu):
    acme(_rows_kernel(swiglu.silu_times_gate, store_cols=16))
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel: k.store: the rectangle \[16, 48\) of dim 2 "
                                                     r"leaves Y, whose shape is \[8, 1, 32\]"):
        _compile_acme()


def test_kernel_that_leaves_elements_unwritten(acme, swiglu):
    acme(_rows_kernel(swiglu.silu_times_gate, cols_of=lambda h: h // 2))
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel leaves 128 of 256 elements of output 'Y' "
                                                     r"\[8, 32\] unwritten \(the first at \[0, 16\]\)"):
        _compile_acme()


def test_kernel_that_disagrees_with_the_reference(acme):
    acme(_rows_kernel(lambda b, a, g: b.mul(b.sigmoid(a), g)))  # forgot the a *
    with pytest.raises(ge.PluginError, match=NAMES + r": output 'Y': the tile kernel disagrees with the reference "
                                                     r"on random inputs of shapes \[\[8, 64\]\]"):
        _compile_acme()


def test_compute_with_a_non_primitive_op(acme):
    acme(_rows_kernel(lambda b, a, g: b.mul(b.sin(a), g)))
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel: k.compute: graph.sin has no vector "
                                                     r"instruction sequence"):
        _compile_acme()


def test_kernel_that_never_stores_an_output(acme):
    def kernel(k, x, y):
        k.load(x, [0, 0], [1, 16])

    acme(kernel)
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel never stores output 'Y'"):
        _compile_acme()


def test_store_into_an_input(acme, swiglu):
    def kernel(k, x, y):
        t = k.load(x, [0, 0], list(x.shape))
        k.store(t, x, [0, 0])

    acme(kernel)
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel: k.store writes an output of the kernel, "
                                                     r"not 'X'"):
        _compile_acme()


def test_tiles_that_overflow_ub(acme, swiglu):
    """All 1024 rows in one tile: 3 MiB of f32 tiles for a 256 KiB UB."""

    def kernel(k, x, y):
        rows, h = y.shape
        x3, y3 = k.view(x, [rows, 2, h]), k.view(y, [rows, 1, h])
        with k.tiles(rows, rows) as r:
            a, g = k.load(x3, [r, 0, 0], [rows, 1, h]), k.load(x3, [r, 1, 0], [rows, 1, h])
            k.store(k.compute(swiglu.silu_times_gate, a, g), y3, [r, 0, 0])

    acme(kernel)
    with pytest.raises(ge.PluginError, match=NAMES + r": the tile kernel does not build: .*UB overflow on ascend910"):
        _compile_acme((1024, 512))


def test_reference_shape_that_disagrees_with_infer_shape(acme, swiglu):
    acme(_rows_kernel(swiglu.silu_times_gate), infer_shape=lambda shapes: [shapes[0]])
    with pytest.raises(ge.UnsupportedModelError) as info:
        ge.load_onnx(custom_model((8, 64), "com.acme"))
    message = str(info.value)
    assert "node 'swiglu'" in message and "com.acme::SwiGLU (plugin acme-broken)" in message
    assert "infer_shape gives [8, 64] for inputs [[8, 64]], but the reference's result is [8, 32]" in message


def test_broken_kernel_through_ge_compile(acme, tmp_path, capsys):
    from ge.tools import ge_compile

    def kernel(k, x, y):
        raise ValueError("bad tile")

    acme(kernel)
    path = tmp_path / "acme.onnx"
    onnx.save(custom_model((8, 64), "com.acme"), path)
    assert ge_compile.main([str(path), "-o", str(tmp_path / "acme.om"), "--precision-mode", F32]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ge-compile: error: custom operator com.acme::SwiGLU (plugin "
                                               "acme-broken), kernel @")
    assert err[0].endswith("(node swiglu): the tile kernel builder raised ValueError: bad tile")


def test_register_op_needs_exactly_one_kernel(swiglu):
    for kw in ({}, {"kernel": swiglu.kernel, "decompose": lambda b, x: x}):
        with pytest.raises(ge.PluginError, match=r"plugin broken-pkg: custom operator com.acme::Both: give a kernel "
                                                 r"as exactly one of decompose="):
            ge.register_op("com.acme", "Both", inputs=["X"], infer_shape=swiglu.infer_shape,
                           reference=swiglu.reference, plugin="broken-pkg", **kw)
    assert plugins.find_op("com.acme", "Both") is None


# --------------------------------------------------------------------------------------
# An operator with two outputs, registered in process
# --------------------------------------------------------------------------------------


def _halves_reference(x):
    h = x.shape[-1] // 2
    a, g = x[..., :h].astype(np.float64), x[..., h:].astype(np.float64)
    return np.maximum(a, g).astype(x.dtype), (a - g).astype(x.dtype)


def _halves_kernel(k, x, larger, diff):
    """Two rows a tile (7 rows: the last tile half past the end), both outputs stored."""
    rows, h = larger.shape
    x3 = k.view(x, [rows, 2, h])
    with k.tiles(rows, 2) as r:
        a, g = k.load(x3, [r, 0, 0], [2, 1, h]), k.load(x3, [r, 1, 0], [2, 1, h])
        m, d = k.compute(lambda b, a, g: [b.max(a, g), b.sub(a, g)], a, g)
        k.store(m, k.view(larger, [rows, 1, h]), [r, 0, 0])
        k.store(d, k.view(diff, [rows, 1, h]), [r, 0, 0])


def test_operator_with_two_outputs():
    ge.register_op("com.acme", "Halves", inputs=["X"], outputs=["Max", "Diff"], reference=_halves_reference,
                   infer_shape=lambda shapes: [(*shapes[0][:-1], shapes[0][-1] // 2)] * 2, kernel=_halves_kernel,
                   plugin="acme-test")
    try:
        node = helper.make_node("Halves", ["x"], ["m", "d"], domain="com.acme", name="halves")
        g = helper.make_graph([node], "halves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (7, 32))],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, (7, 16)) for n in "md"])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)])
        x = x_input((7, 32))
        larger, diff = _halves_reference(x)
        f32 = ge.compile(model, ge.CompileOptions(precision_mode=F32))
        out = f32.run({"x": x})
        assert len(launches(f32)) == 1
        assert np.array_equal(out["m"], larger) and np.array_equal(out["d"], diff)  # max and one subtraction: exact
        out = ge.compile(model, ge.CompileOptions(precision_mode="force_fp16")).run({"x": x})
        assert np.abs(out["m"] - larger).max() <= 1e-2 * scale_of(larger)
        assert np.abs(out["d"] - diff).max() <= 1e-2 * scale_of(diff)
    finally:
        plugins.unregister_op("com.acme", "Halves")
