"""Imported models print as text that re-parses to the identical text, weights included
(`ge-opt M.onnx | ge-opt` is a fixed point), and the reparsed module computes the same."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest

from ge.frontend.onnx import import_model
from ge.ir import parse_module, print_module
from ge.runtime.reference import run
from ge.testing import LIGHT_MODELS, light_model_path, random_inputs, with_random_weights


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_text_round_trip(name):
    """`ge-opt M.onnx | ge-opt` reproduces the identical text."""
    first = _ge_opt(str(light_model_path(name)))
    assert _ge_opt(stdin=first) == first
    model = onnx.shape_inference.infer_shapes(onnx.load(str(light_model_path(name))))
    graph_ops = len(re.findall(r"= graph\.(?!constant )", first))
    assert graph_ops == len(model.graph.node) + 2 * _legacy_softmax_coercions(model)


def _legacy_softmax_coercions(model: onnx.ModelProto) -> int:
    """Opset < 13 Softmax over a non-last axis is imported as reshape, softmax, reshape."""
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in [*model.graph.value_info, *model.graph.input]}
    count = 0
    for n in model.graph.node:
        if n.op_type == "Softmax":
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
            count += axis % ranks[n.input[0]] != ranks[n.input[0]] - 1
    return count


def test_in_process_round_trip_keeps_values():
    """Parsing in a process that already holds the same resource handles (the global blob
    store renames them) still binds every constant to its own data."""
    model = with_random_weights(light_model_path("squeezenet"), seed=5)
    module = import_model(model)
    reparsed = parse_module(print_module(module))
    inputs = list(random_inputs(model, seed=6).values())
    np.testing.assert_array_equal(run(module, inputs)[0], run(reparsed, inputs)[0])


def _ge_opt(*args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "ge.tools.ge_opt", *args], input=stdin, capture_output=True, text=True, check=True
    )
    return proc.stdout


def test_cli_round_trip_with_real_weights(tmp_path):
    """squeezenet with 1.2M seeded weights: `ge-opt m.onnx | ge-opt` gives identical text
    and the reparsed weights compute the same outputs."""
    model = with_random_weights(light_model_path("squeezenet"), seed=3)
    path = tmp_path / "squeezenet.onnx"
    onnx.save(model, str(path))
    first = _ge_opt(str(path))
    assert "dense_resource<" in first and "dialect_resources" in first
    second = _ge_opt(stdin=first)
    assert second == first
    inputs = list(random_inputs(model, seed=4).values())
    direct = run(import_model(model), inputs)
    reparsed = run(parse_module(second), inputs)
    np.testing.assert_array_equal(direct[0], reparsed[0])
