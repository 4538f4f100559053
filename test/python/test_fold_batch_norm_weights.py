"""fold-batch-norm's scaled weights: computed in float64 and rounded once to the weight's
type, bit for bit as `(w.astype(float64) * s).astype(type)` (issue 17: the fold no longer
makes float64 copies of the weights, and must not change a compiled result)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import f16, f32, f64

from ge.dialects import graph
from ge.dialects.blobs import attr_array, blob_scope
from ge.frontend.onnx import import_model
from ge.transforms.fold_batch_norm import FoldBatchNormPass, _scaled


def _awkward(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Weights with the values where rounding differs: ties, subnormals, huge, inf, NaN."""
    w = rng.standard_normal(shape) * 0.05
    flat = w.reshape(-1)
    flat[:8] = [0.0, -0.0, 1e-42, -3e-45, 3.0e38, np.inf, np.nan, 1.0 + 2.0**-24]
    return w


@pytest.mark.parametrize("elem", [f32, f16, f64])
@pytest.mark.parametrize(
    "wshape, sshape",
    [((16, 3, 3, 3), (16, 1, 1, 1)), ((24, 40), (24, 1)), ((24, 40), (1, 40))],
    ids=["conv", "gemm_trans_b", "matmul"],
)
def test_scaled_is_float64_rounded_once(elem, wshape, sshape):
    rng = np.random.default_rng(7)
    dtype = {f32: np.float32, f16: np.float16, f64: np.float64}[elem]
    with np.errstate(over="ignore", invalid="ignore"):  # 3e38 and inf are meant to overflow
        w = _awkward(rng, wshape).astype(dtype)
    s = rng.standard_normal(sshape) * 3.0  # float64, as the fold's scale vectors are
    s.reshape(-1)[0] = 2.0**-30  # pushes a normal weight towards a subnormal result
    with np.errstate(over="ignore", invalid="ignore"):
        got = _scaled(w, s, _value(elem, wshape))
        want = (w.astype(np.float64) * s).astype(dtype)
    assert got.dtype == dtype and got.shape == wshape
    bits = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype]
    assert np.array_equal(got.view(bits), want.view(bits))


def _value(elem, shape):
    """An SSA value of type tensor<shape x elem> (what `_scaled` reads the type from)."""
    from xdsl.dialects.test import TestOp

    return TestOp(result_types=[graph.tensor(elem, shape)]).results[0]


def test_conv_batch_norm_fold_weights_match_float64_reference():
    """End to end: Conv + BatchNorm imported from ONNX and folded; the new weight and bias
    are float64 arithmetic rounded once to f32."""
    rng = np.random.default_rng(3)
    m, c = 8, 4
    w = rng.standard_normal((m, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    gamma, beta, mean = (rng.standard_normal(m).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2.0, m).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (b, "b"), (gamma, "g"), (beta, "be"), (mean, "mu"), (var, "var")]]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["y", "g", "be", "mu", "var"], ["z"], name="bn1", epsilon=1e-5),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 8, 8])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, m, 8, 8])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    with blob_scope():
        module = import_model(model)
        FoldBatchNormPass().apply(Context(), module)
        convs = [op for op in module.walk() if isinstance(op, graph.Conv2dOp)]
        assert len(convs) == 1 and not any(isinstance(op, graph.BatchNormOp) for op in module.walk())
        got_w = attr_array(convs[0].weight.owner.value)
        got_b = attr_array(convs[0].bias.owner.value)
    s = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + 1e-5)
    t = beta.astype(np.float64) - mean.astype(np.float64) * s
    want_w = (w.astype(np.float64) * s[:, None, None, None]).astype(np.float32)
    want_b = (b.astype(np.float64) * s + t).astype(np.float32)
    assert got_w.dtype == np.float32 and np.array_equal(got_w.view(np.uint32), want_w.view(np.uint32))
    assert np.array_equal(got_b.view(np.uint32), want_b.view(np.uint32))
