"""The Python API (`ge.compile`, `ge.CompileOptions`, `ge.load_model`, `ge.CompiledModel`)
and `ge.backend`'s NPU path; end to end (`-m slow`): the nine light model-zoo graphs and
the encoder layer compiled to the isa level and run through the API on the AI
Core simulator against onnxruntime (the tile level's model sweep is test_tile_models.py).

- Every run is hazard-free: the simulator reports no RAW / WAR / WAW, no read of
  never-written memory, no out-of-bounds access, no lost or leftover flag.
- f32 (`must_keep_origin_dtype`): every output within 1e-3 of its scale (max |onnxruntime|);
  the logits before a final Softmax are exposed as an output too (Softmax saturates). The
  activation peak is within 5% of its lower bound.
- f16 (`force_fp16`, the default): alexnet, zfnet512, vgg19, squeezenet, inception_v1 and
  the encoder layer, with weights calibrated on the inputs (random deep nets are chaotic in
  f16), within 2% of the output scale, with the same argmax.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import ge
import ge.backend
from ge.testing import (
    LIGHT_MODELS,
    calibrate_weights,
    encoder_layer_model,
    light_model_path,
    random_inputs,
    two_branch_model,
    with_random_weights,
)

ISA = "isa"
LEVELS = ["tile", ISA]
F32 = "must_keep_origin_dtype"
F16_MODELS = ("bvlc_alexnet", "zfnet512", "vgg19", "squeezenet", "inception_v1", "encoder_layer")


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs)))


def error_of_scale(got: np.ndarray, expected: np.ndarray) -> float:
    g, e = got.astype(np.float64), expected.astype(np.float64)
    return float(np.abs(g - e).max() / max(1e-30, np.abs(e).max()))


def slice_model() -> onnx.ModelProto:
    """A reflect Pad wider than its input has no tiling: the compiler refuses it at the
    tile stage."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["s"], name="sl", mode="reflect"),
             helper.make_node("Relu", ["s"], ["y"], name="r")]
    graph = helper.make_graph(
        nodes, "slice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 24])],
        initializer=[helper.make_tensor("pads", TensorProto.INT64, [4], [0, 8, 0, 8])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# --------------------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------------------


def test_compile_from_a_path_save_and_load(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(two_branch_model(), path)
    compiled = ge.compile(path, ge.CompileOptions(kernel_level="tile", precision_mode=F32))
    assert isinstance(compiled, ge.CompiledModel)
    assert compiled.report["model"] == "m.onnx" and compiled.report["kernel_level"] == "tile"
    assert [io["name"] for io in compiled.inputs] == ["x"] and [io["name"] for io in compiled.outputs] == ["y"]
    compiled.save(tmp_path / "m.om")
    loaded = ge.load_model(tmp_path / "m.om")
    assert loaded.report == {k: v for k, v in compiled.report.items() if k != "model_file_bytes"}
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    y = loaded.run({"x": x})["y"]
    expected = onnxruntime_outputs(two_branch_model(), {"x": x})["y"]
    assert error_of_scale(y, expected) <= 1e-5
    assert loaded.last_run.total_cycles > 0


def test_default_options_are_atc_defaults():
    options = ge.CompileOptions()
    assert (options.soc_version, options.precision_mode, options.kernel_level) == ("ascend910", "force_fp16", "isa")
    assert not options.disable_reuse_memory and not options.enable_single_stream


def test_force_fp16_runs_in_f16_with_f32_boundary():
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    compiled = ge.compile(two_branch_model(), ge.CompileOptions(kernel_level="tile"))
    assert compiled.model.metadata["precision_mode"] == "force_fp16"
    assert any(t["dtype"] == "float16" for t in compiled.model.definition["tensors"])
    y = compiled.run({"x": x})["y"]
    expected = onnxruntime_outputs(two_branch_model(), {"x": x})["y"]
    assert y.dtype == np.float32
    assert 0 < error_of_scale(y, expected) <= 1e-2  # f16 rounding, not f32 exactness


@pytest.mark.parametrize(("options", "error", "message"), [
    (dict(precision_mode="fp64"), ge.CompileError, r"precision mode 'fp64' is not one of force_fp16"),
    (dict(kernel_level="graph"), ge.CompileError, r"kernel level 'graph' is not one of isa, tile"),
    (dict(soc_version="npu9"), ge.CompileError, r"unknown soc version 'npu9'; known: ascend310b"),
    (dict(fusion_switch_file="/nonexistent.json"), ge.CompileError, r"/nonexistent.json: no such file"),
    (dict(input_shape="x:1,2,3"), ge.ShapeError, r"input_shape gives 'x' rank 3"),
])
def test_option_errors(options, error, message):
    with pytest.raises(error, match=message):
        ge.compile(two_branch_model(), ge.CompileOptions(**{"kernel_level": "tile", **options}))


def test_lowering_refusal_names_model_stage_and_node():
    with pytest.raises(ge.CompileError, match=r"slice: tile failed: .*kernel @k\d+_sl \(node sl\).*pad mode 'reflect'"):
        ge.compile(slice_model(), ge.CompileOptions(kernel_level="tile"))


def test_vector_lowering_refusal_names_the_op_and_node(monkeypatch):
    """Every claimed op has a vector lowering now; with sigmoid's taken out of the table the
    compile must stop at to-isa naming the op and its ONNX node."""
    from ge.lowering import isa_vector

    primitive = isa_vector.is_primitive
    monkeypatch.setattr(isa_vector, "is_primitive", lambda op: op.name != "graph.sigmoid" and primitive(op))
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="my_sigmoid"),
             helper.make_node("Relu", ["s"], ["y"], name="r")]
    graph = helper.make_graph(nodes, "sig", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ge.CompileError,
                       match=r"sig: to-isa failed: no isa vector lowering for 1 op\(s\) .*graph\.sigmoid %s \(node my_sigmoid\)"):
        ge.compile(model)


def test_fusion_switch_file_changes_the_kernels(tmp_path):
    switch = tmp_path / "switch.cfg"
    switch.write_text("ALL:off\n")
    fused = ge.compile(two_branch_model(), ge.CompileOptions(kernel_level="tile", precision_mode=F32))
    unfused = ge.compile(two_branch_model(), ge.CompileOptions(kernel_level="tile", precision_mode=F32,
                                                               fusion_switch_file=str(switch)))
    assert unfused.report["kernels"] == len(two_branch_model().graph.node) > fused.report["kernels"]


def test_progress_reports_every_stage():
    seen = []
    ge.compile(two_branch_model(), ge.CompileOptions(kernel_level="tile"),
               progress=lambda stage, done, total: seen.append((stage, done, total)))
    stages = [s for s, _, _ in seen]
    assert stages == ["import", "graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data", "fuse",
                      "bufferize", "tile", "build-model", "serialize", "done"]
    assert [d for _, d, _ in seen] == list(range(len(seen) - 1)) + [seen[-1][2]]


# --------------------------------------------------------------------------------------
# ge.backend
# --------------------------------------------------------------------------------------


def test_backend_npu_runs_the_compiled_model():
    rep = ge.backend.prepare(two_branch_model(), device="NPU", kernel_level="tile")
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (y,) = rep.run([x])
    assert rep.fallbacks == []
    assert len(rep._compiled) == 1 and next(iter(rep._compiled.values())).last_run.total_cycles > 0
    assert error_of_scale(y, onnxruntime_outputs(two_branch_model(), {"x": x})["y"]) <= 1e-5


def test_backend_npu_falls_back_with_a_warning():
    rep = ge.backend.prepare(slice_model(), device="NPU", kernel_level="tile")
    x = np.arange(32, dtype=np.float32).reshape(4, 8) - 10
    with pytest.warns(UserWarning, match=r"reference interpreter.*pad mode 'reflect'"):
        (y,) = rep.run([x])
    np.testing.assert_array_equal(y, np.maximum(np.pad(x, ((0, 0), (8, 8)), mode="reflect"), 0))
    assert len(rep.fallbacks) == 1


def test_backend_cpu_stays_on_the_reference_interpreter():
    rep = ge.backend.prepare(two_branch_model(), device="CPU")
    assert type(rep) is ge.backend.GeBackendRep
    assert ge.backend.supports_device("NPU") and ge.backend.supports_device("CPU")
    assert not ge.backend.supports_device("GPU")


# --------------------------------------------------------------------------------------
# End to end: light models and the encoder layer vs onnxruntime
# --------------------------------------------------------------------------------------


def _expose_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    if softmax:
        model.graph.output.append(helper.make_tensor_value_info(softmax[-1].input[0], TensorProto.FLOAT, None))
    return model


def _light(name: str) -> onnx.ModelProto:
    if name == "encoder_layer":
        return encoder_layer_model()
    return _expose_logits(with_random_weights(light_model_path(name), seed=1))


def _compile_and_run(model, inputs, level, precision):
    start = time.perf_counter()
    compiled = ge.compile(model, ge.CompileOptions(kernel_level=level, precision_mode=precision, keep_ir_text=False))
    compiled_at = time.perf_counter()
    got = compiled.run(inputs)
    done = time.perf_counter()
    problems = compiled.last_run.problems
    assert problems == [], "\n".join(map(str, problems[:5]))
    print(f"compile {compiled_at - start:.1f} s, run {done - compiled_at:.1f} s, "
          f"{compiled.last_run.total_cycles:.0f} cycles ({compiled.last_run.cycles_source})")
    return compiled, got


@pytest.mark.slow
@pytest.mark.parametrize("level", [ISA])
@pytest.mark.parametrize("name", (*LIGHT_MODELS, "encoder_layer"))
def test_f32_light_models_match_onnxruntime(name, level):
    model = _light(name)
    inputs = random_inputs(model, seed=2)
    expected = onnxruntime_outputs(model, inputs)
    compiled, got = _compile_and_run(model, inputs, level, F32)
    assert list(got) == list(expected)
    for out, e in expected.items():
        assert got[out].shape == e.shape and got[out].dtype == e.dtype
        assert error_of_scale(got[out], e) <= 1e-3, f"{name} {out}: {error_of_scale(got[out], e):.3g} of the scale"
    memory = compiled.report["memory"]
    assert memory["activation_peak_bytes"] <= 1.05 * memory["activation_lower_bound_bytes"]


@pytest.mark.slow
@pytest.mark.parametrize("level", [ISA])
@pytest.mark.parametrize("name", F16_MODELS)
def test_f16_light_models_match_onnxruntime(name, level):
    raw = _light(name)
    inputs = random_inputs(raw, seed=2)
    model = calibrate_weights(raw, inputs)
    expected = onnxruntime_outputs(model, inputs)
    _, got = _compile_and_run(model, inputs, level, "force_fp16")
    for out, e in expected.items():
        assert error_of_scale(got[out], e) <= 2e-2, f"{name} {out}: {error_of_scale(got[out], e):.3g} of the scale"
        assert got[out].reshape(e.shape[0], -1).argmax(axis=1).tolist() == e.reshape(e.shape[0], -1).argmax(axis=1).tolist()
