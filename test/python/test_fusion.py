"""The fuse pass at model level and the fusion switch file."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import ge
from ge.frontend.onnx import import_model
from ge.ir import make_context, run_passes
from ge.lowering.fuse import FusePass, count_kernels
from ge.lowering.fusion_rules import RULES, FusionSwitchError, parse_switch_file, parse_switch_text
from ge.runtime.reference import run
from ge.testing import (
    LIGHT_MODELS,
    calibrate_weights,
    encoder_layer_model,
    light_model_path,
    random_inputs,
    with_random_weights,
)

ALL_ON = {r.name: True for r in RULES}


def test_switch_json_all_off_then_one_on():
    text = json.dumps({"Switch": {"UBFusion": {"ALL": "off", "TbeEltwiseFusionPass": "on"}, "GraphFusion": {}}})
    enabled = parse_switch_text(text)
    assert enabled["TbeEltwiseFusionPass"] is True
    assert [n for n, on in enabled.items() if on] == ["TbeEltwiseFusionPass"]


def test_switch_lines_with_comments():
    enabled = parse_switch_text("# switch\nTbeConvElemwiseFusionPass:off  # no epilogues\n\nTbePoolElemwiseFusionPass : off\n")
    assert enabled == {**ALL_ON, "TbeConvElemwiseFusionPass": False, "TbePoolElemwiseFusionPass": False}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"Switch": {"UBFusion": {"Nope": "off"}}}', "unknown UBFusion rule 'Nope'; known rules: TbeConvElemwiseFusionPass"),
        ('{"Switch": {"GraphFusion": {"TbeEltwiseFusionPass": "off"}}}', "unknown GraphFusion rule"),
        ('{"Switch": {"UBFusion": {"TbeEltwiseFusionPass": "maybe"}}}', 'must be "on" or "off"'),
        ('{"Switch": {"Other": {}}}', "unknown section 'Other'"),
        ('{"Switch": [1, 2', "not valid JSON"),
        ("{}", 'expected {"Switch"'),
        ("TbeEltwiseFusionPass off", "expected 'RuleName:on' or 'RuleName:off'"),
        ("Nope:off", "cfg:1: unknown fusion rule 'Nope'; known rules: TbeConvElemwiseFusionPass"),
    ],
)
def test_switch_errors(text, message):
    with pytest.raises(FusionSwitchError, match=message.replace("(", r"\(").replace("{", r"\{")):
        parse_switch_text(text, "cfg")


def test_switch_file_missing(tmp_path):
    with pytest.raises(FusionSwitchError, match="cannot read the fusion switch file"):
        parse_switch_file(tmp_path / "none.json")


def _fused(module, **options):
    FusePass(**options).apply(make_context(), module)
    module.verify()
    return module


def test_encoder_layer_fuses_and_computes_the_same():
    model = encoder_layer_model(seq=32, hidden=64, heads=4, ffn=128, seed=1)
    inputs = random_inputs(model, seed=2)
    module = import_model(model)
    before = run(module, inputs)
    fused = _fused(module)
    np.testing.assert_array_equal(run(fused, inputs)[0], before[0])  # same kernels, same order
    groups = [op for op in fused.walk() if op.name == "fusion.group"]
    assert len(groups) == count_kernels(fused) == 15
    rules = sorted(r for g in groups for r in g.rule_names)
    assert rules.count("TbeMatmulElemwiseFusionPass") == 7
    assert rules.count("TbeReduceElemwiseFusionPass") == 1
    assert rules.count("TbeEltwiseFusionPass") == 0  # the Erf GELU is the ffn_in MatMul's epilogue


def test_switching_everything_off_gives_one_kernel_per_compute_op(tmp_path):
    model = encoder_layer_model(seq=16, hidden=32, heads=2, ffn=64, seed=3)
    module = import_model(model)
    compute = sum(
        1 for op in module.walk()
        if op.name.startswith("graph.") and op.name not in ("graph.constant", "graph.reshape")
    )
    path = tmp_path / "off.cfg"
    path.write_text("ALL:off\n")
    fused = _fused(module, switch_file=str(path))
    assert count_kernels(fused) == compute
    assert all(not op.rule_names for op in fused.walk() if op.name == "fusion.group")


# Kernel counts after graph-optimize (f32), assign-layouts, eliminate-trans-data and fuse.
PIPELINE = "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data"
SHALLOW = ("bvlc_alexnet", "zfnet512", "vgg19", "squeezenet", "inception_v1")


def _fuse_model(model, pipeline: str, inputs):
    module = run_passes(import_model(model), pipeline)
    before = run(module, inputs)
    fused = run_passes(module, "fuse")
    return before, run(fused, inputs), count_kernels(fused), fused


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_fusion_keeps_outputs(name):
    """Fusion moves ops into groups; the reference interpreter runs the same kernels in the
    same order, so outputs are bit-identical (f32 here, f16 below)."""
    model = with_random_weights(light_model_path(name), seed=7)
    inputs = random_inputs(model, seed=8)
    before, after, kernels, fused = _fuse_model(model, PIPELINE, inputs)
    np.testing.assert_array_equal(after[0], before[0])
    assert 0 < kernels <= KERNEL_BUDGET[name]
    (main,) = fused.body.block.ops
    outside = {op.name for op in main.body.block.ops} - {"fusion.group", "func.return"}
    assert outside <= {"graph.constant", "graph.reshape", "graph.flatten", "graph.squeeze", "graph.unsqueeze"}


# Kernels measured after this pipeline (README "Fusion"), kept as upper bounds so a
# regression in any stage shows; resnet50's was 57 (the issue's 59) before its 4 projection
# shortcuts joined their blocks' last convs (`SummedConvsFusionPass`).
KERNEL_BUDGET = {
    "bvlc_alexnet": 14, "densenet121": 242, "inception_v1": 84, "inception_v2": 94, "resnet50": 53,
    "shufflenet": 78, "squeezenet": 39, "vgg19": 25, "zfnet512": 14,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", SHALLOW)
def test_shallow_model_fusion_in_f16(name):
    model = with_random_weights(light_model_path(name), seed=9)
    inputs = random_inputs(model, seed=10)
    before, after, _, _ = _fuse_model(model, "graph-optimize{precision=force_fp16},assign-layouts,eliminate-trans-data", inputs)
    np.testing.assert_array_equal(after[0], before[0])


def test_encoder_layer_fusion_in_f16():
    model = encoder_layer_model(seq=32, hidden=64, heads=4, ffn=128, seed=11)
    inputs = random_inputs(model, seed=12)
    before, after, kernels, _ = _fuse_model(model, "graph-optimize{precision=force_fp16}", inputs)
    np.testing.assert_array_equal(after[0], before[0])
    assert kernels <= 16  # the 15 kernels of f32 plus the input's f32 -> f16 cast


def _ops_of(group) -> list[str]:
    return [op.name for op in group.body.block.ops][:-1]


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_erf_gelu_joins_the_matmul_epilogue_and_matches_onnxruntime(precision):
    """x * 0.5 * (1 + erf(x / sqrt 2)) reads the MatMul + bias result twice: the epilogue
    takes the five ops whole (GE's MatMul + GELU UB fusion), one launch fewer, and the
    compiled layer still matches onnxruntime (f32: 1e-3 of the output's scale; f16 with
    calibrated weights: 2e-2)."""
    raw = encoder_layer_model(seq=32, hidden=64, heads=4, ffn=128, seed=1)
    inputs = random_inputs(raw, seed=2)
    model = calibrate_weights(raw, inputs) if precision == "force_fp16" else raw
    fused = run_passes(import_model(model), f"graph-optimize{{precision={precision}}},assign-layouts,"
                                            "eliminate-trans-data,fuse")
    groups = [op for op in fused.walk() if op.name == "fusion.group"]
    (ffn_in,) = [g for g in groups if "graph.erf" in _ops_of(g)]
    assert [o for o in _ops_of(ffn_in) if o != "graph.constant"] == [
        "graph.matmul", "graph.add", "graph.div", "graph.erf", "graph.add", "graph.mul", "graph.mul"]
    assert _ops_of(ffn_in).count("graph.constant") == 3  # sqrt 2, 1, 0.5: immediates (test_cube_immediates)
    assert list(ffn_in.rule_names) == ["TbeMatmulElemwiseFusionPass"]
    assert not [g for g in groups if _ops_of(g)[0] == "graph.div" and g is not ffn_in]
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=precision, keep_ir_text=False))
    assert compiled.report["kernels"] == len(groups) == (15 if precision == "must_keep_origin_dtype" else 16)
    (got,) = compiled.run(inputs).values()
    assert compiled.last_run.problems == []
    (want,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert err <= (1e-3 if precision == "must_keep_origin_dtype" else 2e-2), err


def _silu_model(h_is_an_output: bool):
    """MatMul + bias + x * sigmoid(x) (SiLU): the bias result is read twice."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 96)).astype(np.float32) * 0.1, "w")
    b = numpy_helper.from_array(rng.standard_normal(96).astype(np.float32) * 0.1, "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], "mm"), helper.make_node("Add", ["mm", "b"], ["h"], "bias"),
             helper.make_node("Sigmoid", ["h"], ["s"], "sig"), helper.make_node("Mul", ["h", "s"], ["y"], "silu")]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 96])]
    if h_is_an_output:
        outs.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [32, 96]))
    g = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])], outs, [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("h_is_an_output", [False, True])
def test_silu_joins_the_matmul_epilogue_only_when_nothing_else_reads_its_input(h_is_an_output):
    """The pointwise region closes only when every value but its last result is used
    inside it: with the bias result also a graph output it stays out (two kernels)."""
    model = _silu_model(h_is_an_output)
    precision = "must_keep_origin_dtype"
    fused = run_passes(import_model(model), f"graph-optimize{{precision={precision}}},assign-layouts,"
                                            "eliminate-trans-data,fuse")
    groups = [_ops_of(g) for g in fused.walk() if g.name == "fusion.group"]
    if h_is_an_output:
        assert groups == [["graph.gemm"], ["graph.sigmoid", "graph.mul"]]
    else:
        assert groups == [["graph.gemm", "graph.sigmoid", "graph.mul"]]
    inputs = {"x": np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)}
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=precision, keep_ir_text=False))
    got = compiled.run(inputs)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    assert compiled.report["kernels"] == len(groups)
    for g, w in zip(got.values(), want, strict=True):
        assert np.abs(g.astype(np.float64) - w).max() <= 1e-3 * np.abs(w).max()
