"""The nine model-zoo graphs shipped in the onnx wheel, with seeded random weights, through
`ge.backend` (import + reference interpreter) against onnxruntime.

Tolerance: both sides compute in f32, but in different summation orders (im2col + BLAS vs
onnxruntime's MLAS kernels); over 20-150 layers those rounding differences grow to about
1e-5 of the output scale on these nets, so we allow 1e-4 of the output scale. The final
softmax saturates on resnet50 and shufflenet, so the pre-softmax logits are compared too.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import ge.backend
from ge.testing import LIGHT_MODELS, light_model_path, random_inputs, with_random_weights

pytestmark = pytest.mark.slow


def _expose_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """Add the input of the last Softmax (if any; densenet121 ends in a pool) as an output."""
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    if softmax:
        model.graph.output.append(helper.make_tensor_value_info(softmax[-1].input[0], onnx.TensorProto.FLOAT, None))
    return model


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_onnxruntime(name):
    model = _expose_logits(with_random_weights(light_model_path(name), seed=1))
    inputs = random_inputs(model, seed=2)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    got = ge.backend.prepare(model).run(inputs)
    assert len(got) == len(expected) == len(model.graph.output)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        scale = float(np.max(np.abs(e)))
        err = float(np.max(np.abs(g - e)))
        assert err <= 1e-4 * scale, f"{name}: max error {err:.3g} vs output scale {scale:.3g}"
    assert int(np.argmax(got[0])) == int(np.argmax(expected[0]))
