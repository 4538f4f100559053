"""The nine light model-zoo graphs with seeded random weights through `assign-layouts` +
`eliminate-trans-data`, run by the reference interpreter on their storage formats, against
onnxruntime; and the number of `layout.trans_data` each keeps.

Tolerances as in test_light_models.py (f32: 1e-4 of the output scale) and
test_graph_optimize.py (f16 through graph-optimize's force_fp16, on the shallow models with
calibrated weights: 1e-2 of the scale and the same argmax). On top, the layouted module must
compute exactly what the module before assign-layouts computes: formats move data, they do
not change arithmetic.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument
from xdsl.passes import PassPipeline

import ge
from ge.runtime.reference import run
from ge.testing import LIGHT_MODELS, calibrate_weights, light_model_path, random_inputs, with_random_weights
from ge.transforms import get_all_ge_passes

pytestmark = pytest.mark.slow

LAYOUTS = "assign-layouts,eliminate-trans-data"

# trans_data left after elimination on the raw import: the graph input's conversion and the
# one before the flatten/reshape that feeds the classifier (densenet121: its output is the
# pool's 4-D result); shufflenet converts around each of its 16 channel shuffles
# (reshape / transpose / reshape has no NC1HWC0 form).
TRANS_DATA = dict.fromkeys(LIGHT_MODELS, 2) | {"shufflenet": 34}

F16_MODELS = ("bvlc_alexnet", "zfnet512", "vgg19", "squeezenet", "inception_v1")


def _with_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    if softmax:
        model.graph.output.append(helper.make_tensor_value_info(softmax[-1].input[0], onnx.TensorProto.FLOAT, None))
    return model


def _apply(module: ModuleOp, spec: str) -> ModuleOp:
    PassPipeline.parse_spec(get_all_ge_passes(), spec).apply(Context(), module)
    module.verify()
    return module


def _trans_data(module: ModuleOp) -> int:
    return collections.Counter(op.name for op in module.walk())["layout.trans_data"]


def _onnxruntime(model: onnx.ModelProto, inputs) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def _scaled_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want))) / max(float(np.max(np.abs(want))), 1e-30)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_layouts_match_onnxruntime_f32(name):
    model = _with_logits(with_random_weights(light_model_path(name), seed=1))
    inputs = random_inputs(model, seed=2)
    expected = _onnxruntime(model, inputs)
    plain = run(ge.load_onnx(model), inputs)
    module = _apply(ge.load_onnx(model), LAYOUTS)
    assert _trans_data(module) == TRANS_DATA[name]
    got = run(module, inputs)
    for g, p, e in zip(got, plain, expected):
        np.testing.assert_array_equal(g, p)
        assert _scaled_error(g, e) <= 1e-4, name
    assert int(np.argmax(got[0])) == int(np.argmax(expected[0]))


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_layouts_after_graph_optimize_f32(name):
    """The criterion's setting: BatchNorm folded and constants folded first."""
    model = _with_logits(with_random_weights(light_model_path(name), seed=1))
    inputs = random_inputs(model, seed=2)
    expected = _onnxruntime(model, inputs)
    module = _apply(ge.load_onnx(model), "graph-optimize{precision=must_keep_origin_dtype}")
    optimized = run(module, inputs)
    module = _apply(module, LAYOUTS)
    assert _trans_data(module) <= TRANS_DATA[name]
    got = run(module, inputs)
    for g, o, e in zip(got, optimized, expected):
        np.testing.assert_array_equal(g, o)
        assert _scaled_error(g, e) <= 1e-4, name


@pytest.mark.parametrize("name", F16_MODELS)
def test_layouts_f16(name):
    """force_fp16 (C0 = 16 everywhere) on the shallow models."""
    model = _with_logits(with_random_weights(light_model_path(name), seed=1))
    inputs = random_inputs(model, seed=2)
    model = calibrate_weights(model, inputs)
    expected = _onnxruntime(model, inputs)
    module = _apply(ge.load_onnx(model), "graph-optimize{precision=force_fp16}")
    assert any("f16" in str(r.type) for op in module.walk() for r in op.results)
    before = run(module, inputs)
    module = _apply(module, LAYOUTS)
    assert _trans_data(module) <= TRANS_DATA[name]
    assert any("x16xf16, #layout.fmt<NC1HWC0" in str(r.type) for op in module.walk() for r in op.results)
    got = run(module, inputs)
    for g, b, e in zip(got, before, expected):
        np.testing.assert_array_equal(g, b)
        assert _scaled_error(g, e) <= 1e-2, name
    assert int(np.argmax(got[0])) == int(np.argmax(expected[0]))


def test_resnet50_keeps_two_trans_data_where_expected():
    """The graph input's conversion, and the one before the reshape that feeds the Gemm."""
    module = _apply(ge.load_onnx(with_random_weights(light_model_path("resnet50"), seed=1)), LAYOUTS)
    conversions = [op for op in module.walk() if op.name == "layout.trans_data"]
    assert len(conversions) == 2
    first, last = conversions
    assert isinstance(first.input, BlockArgument)
    assert [u.operation.name for u in last.output.uses] == ["graph.reshape"]
