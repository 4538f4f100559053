"""The fuse pass at model level and the fusion switch file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ge.frontend.onnx import import_model
from ge.ir import make_context
from ge.lowering.fuse import FusePass, count_kernels
from ge.lowering.fusion_rules import RULES, FusionSwitchError, parse_switch_file, parse_switch_text
from ge.runtime.reference import run
from ge.testing import encoder_layer_model, random_inputs

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
    assert len(groups) == count_kernels(fused) == 16
    rules = sorted(r for g in groups for r in g.rule_names)
    assert rules.count("TbeMatmulElemwiseFusionPass") == 7
    assert rules.count("TbeReduceElemwiseFusionPass") == 1
    assert rules.count("TbeEltwiseFusionPass") == 1


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
