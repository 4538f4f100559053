"""The differential fuzzer (ge/fuzz.py) and its graph generator (ge.testing.random_graph).

A fixed range of seeds runs in CI (each compiles to the isa level, runs on the simulator
and is compared with onnxruntime: f32 within 1e-3 of the output scale); a longer range is
marked slow. No seed may give a wrong answer or an internal error; a refusal must be a
GeError saying what is unsupported.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from ge.fuzz import _variants, check, compare, parse_seeds, run_seed, shrink, signature, summary
from ge.testing import random_graph, random_inputs

CI_SEEDS = range(0, 12)
SLOW_SEEDS = range(12, 60)


def test_random_graphs_are_valid_and_seeded():
    ops = set()
    for seed in range(40):
        model = random_graph(seed)
        onnx.checker.check_model(model, full_check=True)
        ops.update(n.op_type for n in model.graph.node)
        assert model.SerializeToString() == random_graph(seed).SerializeToString()
    # the generator covers the operator families it promises
    assert {"Conv", "BatchNormalization", "Concat", "MatMul", "Gemm", "Softmax", "LayerNormalization",
            "Transpose", "Reshape", "Add", "MaxPool", "AveragePool"} <= ops
    assert ops & {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}
    assert ops & {"GlobalAveragePool", "GlobalMaxPool"}


def test_random_graphs_depend_on_their_input():
    """Calibrated weights keep the output a function of the input (no drift to a constant)."""
    from ge.fuzz import reference

    dependent = 0
    for seed in range(15):
        model = random_graph(seed)
        a = reference(model, random_inputs(model, seed))[0]
        b = reference(model, random_inputs(model, seed + 1000))[0]
        if np.max(np.abs(a - b)) > 1e-3 * max(np.max(np.abs(a)), 1e-6):
            dependent += 1
    assert dependent >= 13


def test_conv1d_graphs_have_rank3_feature_maps():
    model = random_graph(3, conv1d=True)
    assert len(model.graph.input[0].type.tensor_type.shape.dim) == 3
    onnx.checker.check_model(model, full_check=True)


def test_compare_tolerances():
    want = np.array([1.0, -2.0, 4.0], np.float32)
    assert compare(want + 1e-4, want, "f32")[0]
    ok, err, what = compare(want + np.array([0, 0, 0.01], np.float32), want, "f32")
    assert not ok and abs(err - 0.01 / 4) < 1e-6 and "max error" in what
    assert compare(want * 1.01, want, "f16")[0]
    assert not compare(-want, want, "f16")[0]
    assert not compare(want[:2], want, "f32")[0]


def test_signature_strips_graph_specific_parts():
    a = signature("refusal", "CompileError: g: tile failed: kernel @k3_conv12 (nodes conv12, relu13): cannot tile: x 16")
    b = signature("refusal", "CompileError: g: tile failed: kernel @k7_conv2 (node conv2): cannot tile: x 32")
    assert a == b and "cannot tile" in a


def test_parse_seeds():
    assert parse_seeds("0-3,7,10-11") == [0, 1, 2, 3, 7, 10, 11]


def _two_relu_model() -> onnx.ModelProto:
    from onnx import helper

    nodes = [helper.make_node("Relu", ["x"], ["a"], name="a"), helper.make_node("Neg", ["a"], ["b"], name="b"),
             helper.make_node("Relu", ["b"], ["y"], name="y")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", 1, [1, 2, 3, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shrink_keeps_the_failure_and_drops_nodes(monkeypatch):
    """The shrinker deletes nodes while the same failure persists: a fake checker that
    fails whenever a Neg is present reduces the graph to the Neg alone."""
    import ge.fuzz as fz

    def fake(model, inputs, precision="f32", plan_rank=0):
        has_neg = any(n.op_type == "Neg" for n in model.graph.node)
        return ("refusal", "GeError: no Neg", 0.0) if has_neg else ("pass", "", 0.0)

    model = _two_relu_model()
    assert len(list(_variants(model))) >= 2
    monkeypatch.setattr(fz, "check", fake)
    small = fz.shrink(model, {"x": np.ones((1, 2, 3, 3), np.float32)}, "refusal", signature("refusal", "GeError: no Neg"))
    assert [n.op_type for n in small.graph.node] == ["Neg"]
    onnx.checker.check_model(small)
    assert shrink is fz.shrink


def test_summary_groups_causes():
    from ge.fuzz import Outcome

    outs = [Outcome(0, "pass"), Outcome(1, "refusal", "x", "refusal: x"), Outcome(2, "refusal", "x", "refusal: x")]
    text = summary(outs)
    assert text.startswith("3 seeds: 1 pass, 0 wrong, 0 traceback, 2 refusal")
    assert "2  refusal: x   seeds 1, 2" in text


def test_check_classifies_a_passing_model():
    model = _two_relu_model()
    status, detail, err = check(model, random_inputs(model, 0))
    assert (status, detail) == ("pass", "") and err == 0.0


def _assert_seed(seed: int, **kwargs) -> None:
    outcome, _ = run_seed(seed, **kwargs)
    assert outcome.status in ("pass", "refusal"), f"seed {seed}: {outcome.status}: {outcome.detail}"
    if outcome.status == "refusal":
        assert "GeError" in outcome.detail or "Error:" in outcome.detail


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fuzz_seed(seed):
    _assert_seed(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_fuzz_seed_slow(seed):
    _assert_seed(seed)


@pytest.mark.parametrize("seed", range(0, 3))
def test_fuzz_seed_conv1d(seed):
    """1-D convolutions and pools (rank-3 feature maps, through the 2-D path with H = 1)."""
    _assert_seed(seed, conv1d=True)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(0, 10))
def test_fuzz_seed_f16(seed):
    """force_fp16: within 3% of the output scale and cosine >= 0.999."""
    _assert_seed(seed, precision="f16")


@pytest.mark.parametrize("seed, rank", [(0, 1), (1, 7), (4, 5), (9, 3), (11, 2), (11, 3)])
def test_fuzz_seed_other_plans(seed, rank):
    """The plans operator tuning may pick are right too: every Cube problem on its rank-th
    plan among those ge-aoe times (`--plan-rank`; the last when it has fewer). Each seed
    has a Cube problem with more than `rank` plans (checked first)."""
    import ge
    from ge.lowering import op_bank

    probe = op_bank.Trial(choice=rank)
    with op_bank.using(probe):
        ge.compile(random_graph(seed), ge.CompileOptions(precision_mode="must_keep_origin_dtype", keep_ir_text=False))
    assert max(len(a) for a in probe.alternatives.values()) > rank
    _assert_seed(seed, plan_rank=rank)
