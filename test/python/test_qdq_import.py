"""Import of quantized ONNX models (QDQ and QOperator / Integer ops) against onnxruntime.

Each model runs in onnxruntime and in ge's reference interpreter, imported as is (the
graph.quantize / dequantize / quant_* ops, frontend/onnx_ops.py) and after `quant-fold`
(transforms/quant_fold.py). Tolerances:
- QuantizeLinear / DequantizeLinear / ConvInteger / MatMulInteger: exact (integer results,
  or one f32 multiply on both sides).
- QLinearConv / QLinearMatMul: within 1 (one quantization step) of the integer output:
  onnxruntime multiplies the accumulator by sx * sw / sy once, ge dequantizes (x sx * sw)
  and then quantizes (/ sy), and the two f32 roundings can move a value that is within an
  ulp of a .5 tie to the other integer.
- Whole QDQ models written by onnxruntime's quantizer: onnxruntime runs them with its
  fused QLinear kernels (the requantization rounding above, in every layer), so outputs
  are compared with a tolerance of 2% of the output scale and the argmax must agree.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import UnsupportedModelError
from ge.ir import make_context
from ge.runtime.reference import find_function, run_function
from ge.transforms.quant_fold import QuantFoldPass

_ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32}


def _model(nodes, inputs: dict[str, np.ndarray], outputs: dict[str, tuple[np.dtype, list | None]],
           inits: dict[str, np.ndarray], opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info(n, _ONNX_TYPE[a.dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, _ONNX_TYPE[np.dtype(t)], s) for n, (t, s) in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model


def run_ort(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def run_ge(model: onnx.ModelProto, inputs: dict[str, np.ndarray], fold: bool) -> list[np.ndarray]:
    module = ge.load_onnx(model, input_shape={k: v.shape for k, v in inputs.items()})
    if fold:
        QuantFoldPass().apply(make_context(), module)
        module.verify()
    return run_function(find_function(module), list(inputs.values()))


def _ops(model: onnx.ModelProto, shapes: dict, fold: bool) -> list[str]:
    module = ge.load_onnx(model, input_shape=shapes)
    if fold:
        QuantFoldPass().apply(make_context(), module)
    return [op.name for op in module.walk() if op.name.startswith("graph.") and op.name != "graph.constant"]


rng = np.random.default_rng(0)


# --------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_quantize_dequantize_per_tensor(dtype):
    """Q -> DQ with the quantized tensor also a graph output: uint8 comes back as uint8."""
    x = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
    zp = np.array(5 if dtype == np.int8 else 131, dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq")]
    model = _model(nodes, {"x": x}, {"q": (dtype, None), "y": (np.float32, None)},
                   {"s": np.array(0.02, np.float32), "z": zp})
    expected = run_ort(model, {"x": x})
    got = run_ge(model, {"x": x}, fold=False)
    assert got[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert np.any(expected[0] == np.iinfo(dtype).min) and np.any(expected[0] == np.iinfo(dtype).max)  # saturates


def test_uint8_carried_as_int8_between_quant_aware_ops():
    """A uint8 Q whose only reader is a DQ is one graph.quantize with offset z - 128."""
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq")]
    model = _model(nodes, {"x": x}, {"y": (np.float32, None)}, {"s": np.array(0.03, np.float32),
                                                                 "z": np.array(140, np.uint8)})
    module = ge.load_onnx(model)
    ops = {op.name: op for op in module.walk()}
    assert ops["graph.quantize"].properties["offset"].value.data == 12
    assert ops["graph.dequantize"].properties["offset"].value.data == 12
    assert "graph.cast" not in ops
    np.testing.assert_array_equal(run_ge(model, {"x": x}, fold=False)[0], run_ort(model, {"x": x})[0])


def test_dequantize_per_channel_constants():
    """Per-channel DequantizeLinear of constants: int8 with zero point 0 stays a
    graph.dequantize; uint8 with per-channel zero points is folded at import."""
    w8 = rng.integers(-127, 128, (4, 3, 2, 2)).astype(np.int8)
    wu = rng.integers(0, 256, (4, 3, 2, 2)).astype(np.uint8)
    s = np.array([0.1, 0.02, 0.5, 0.003], np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w8", "s", "z8"], ["y8"], name="dq8", axis=0),
             helper.make_node("DequantizeLinear", ["wu", "s", "zu"], ["yu"], name="dqu", axis=0),
             helper.make_node("Add", ["y8", "x"], ["o8"], name="add8"),
             helper.make_node("Add", ["yu", "x"], ["ou"], name="addu")]
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    model = _model(nodes, {"x": x}, {"o8": (np.float32, None), "ou": (np.float32, None)},
                   {"w8": w8, "wu": wu, "s": s, "z8": np.zeros(4, np.int8),
                    "zu": np.array([0, 128, 7, 255], np.uint8)})
    for got, expected in zip(run_ge(model, {"x": x}, fold=False), run_ort(model, {"x": x})):
        np.testing.assert_array_equal(got, expected)
    assert _ops(model, {}, fold=False).count("graph.dequantize") == 1


# --------------------------------------------------------------------------------------
# QOperator and Integer ops
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("x_dtype", [np.uint8, np.int8])
def test_qlinear_conv(x_dtype):
    x = rng.integers(np.iinfo(x_dtype).min, np.iinfo(x_dtype).max + 1, (2, 3, 7, 7)).astype(x_dtype)
    w = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-2000, 2000, 8).astype(np.int32)
    inits = {"xs": np.array(0.02, np.float32), "xz": np.array(130 if x_dtype == np.uint8 else -3, x_dtype),
             "ws": (rng.random(8) * 0.01 + 0.001).astype(np.float32), "wz": np.zeros(8, np.int8), "w": w,
             "ys": np.array(0.4, np.float32), "yz": np.array(120 if x_dtype == np.uint8 else 4, x_dtype), "b": b}
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                              name="qconv", pads=[1, 1, 1, 1], strides=[2, 2])]
    model = _model(nodes, {"x": x}, {"y": (x_dtype, None)}, inits)
    (expected,) = run_ort(model, {"x": x})
    for fold in (False, True):
        (got,) = run_ge(model, {"x": x}, fold)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
        assert diff.max() <= 1 and np.mean(diff == 0) > 0.99
    ops = _ops(model, {}, fold=False)
    start = ops.index("graph.quant_conv2d")
    assert ops[start:start + 3] == ["graph.quant_conv2d", "graph.dequantize", "graph.quantize"]


def test_qlinear_matmul_int8():
    a = rng.integers(-128, 128, (5, 16)).astype(np.int8)
    b = rng.integers(-127, 128, (16, 6)).astype(np.int8)
    inits = {"as": np.array(0.05, np.float32), "az": np.array(-7, np.int8), "b": b,
             "bs": np.array(0.01, np.float32), "bz": np.array(0, np.int8),
             "ys": np.array(0.3, np.float32), "yz": np.array(2, np.int8)}
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")]
    model = _model(nodes, {"a": a}, {"y": (np.int8, None)}, inits)
    (expected,) = run_ort(model, {"a": a})
    (got,) = run_ge(model, {"a": a}, fold=False)
    assert np.abs(got.astype(np.int32) - expected).max() <= 1
    assert "graph.quant_matmul" in _ops(model, {}, fold=False)


def test_conv_integer_and_matmul_integer():
    """Exact int32 results; a uint8 weight with zero point 128 is centered into int8."""
    x = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)
    a = rng.integers(0, 256, (3, 8)).astype(np.uint8)
    b = rng.integers(-128, 128, (8, 5)).astype(np.int8)
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], name="convint", pads=[1, 1, 1, 1]),
             helper.make_node("MatMulInteger", ["a", "b", "az"], ["m"], name="mmint")]
    model = _model(nodes, {"x": x, "a": a}, {"y": (np.int32, None), "m": (np.int32, None)},
                   {"w": w, "b": b, "xz": np.array(100, np.uint8), "wz": np.array(128, np.uint8),
                    "az": np.array(9, np.uint8)}, opset=13)
    inputs = {"x": x, "a": a}
    for got, expected in zip(run_ge(model, inputs, fold=False), run_ort(model, inputs)):
        np.testing.assert_array_equal(got, expected)


def test_quantize_linear_in_graph_ops():
    """What graph.quantize / graph.dequantize do not take runs as elementwise graph ops:
    per-channel QuantizeLinear of an activation, a run-time scale, int16, per-channel zero
    points on an activation -- exact against onnxruntime."""
    x = (rng.standard_normal((2, 4, 3)) * 4).astype(np.float32)
    s = np.array([0.1, 0.02, 0.5, 0.05], np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="per_channel_q", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="per_channel_dq", axis=1),
             helper.make_node("QuantizeLinear", ["x", "rs", "z16"], ["q16"], name="int16_q"),
             helper.make_node("DequantizeLinear", ["q16", "rs", "z16"], ["y16"], name="int16_dq")]
    model = _model(nodes, {"x": x, "rs": np.array(0.003, np.float32)},
                   {"q": (np.uint8, None), "y": (np.float32, None), "y16": (np.float32, None)},
                   {"s": s, "z": np.array([0, 128, 7, 255], np.uint8), "z16": np.array(-5, np.int16)}, opset=21)
    inputs = {"x": x, "rs": np.array(0.003, np.float32)}
    for got, expected in zip(run_ge(model, inputs, fold=False), run_ort(model, inputs)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert "graph.quantize" not in _ops(model, {}, fold=False)


def test_unsupported_quantization_names_the_node():
    x = np.zeros((2, 4), np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="blocked_q", axis=1, block_size=2),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", axis=1, block_size=2)]
    model = _model(nodes, {"x": x}, {"y": (np.float32, None)},
                   {"s": np.full((2, 2), 0.1, np.float32), "z": np.zeros((2, 2), np.int8)}, opset=21)
    with pytest.raises(UnsupportedModelError, match=r"'blocked_q'.*blocked quantization \(block_size\)"):
        ge.load_onnx(model)


def test_asymmetric_weights_as_sums_of_int8_products():
    """A uint8 weight with zero point 0 centers to [0, 255]: two int8 parts (127 + 128 ->
    three) whose int32 products add up exactly."""
    a = rng.integers(0, 256, (3, 8)).astype(np.uint8)
    w = rng.integers(0, 256, (8, 5)).astype(np.uint8)
    w[0, 0] = 255
    nodes = [helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["m"], name="asym_w")]
    model = _model(nodes, {"a": a}, {"m": (np.int32, None)},
                   {"w": w, "az": np.array(3, np.uint8), "wz": np.array(0, np.uint8)}, opset=13)
    np.testing.assert_array_equal(run_ge(model, {"a": a}, fold=False)[0], run_ort(model, {"a": a})[0])
    assert _ops(model, {}, fold=False).count("graph.quant_matmul") == 3


_QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}
# Node cases of these operators ge does not run: (name regex, reason).
_NOT_RUN = ((r"blocked", "blocked quantization (block_size)"),
            (r"e4m3fn|e5m2|float4|int4|int2", "float8 / 4-bit / 2-bit types have no graph-level element type"))


def _quant_node_cases():
    import re
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return sorted((c for c in cases if {n.op_type for n in c.model.graph.node} & _QUANT_OPS
                   and not any(re.search(p, c.name) for p, _ in _NOT_RUN)), key=lambda c: c.name)


@pytest.mark.parametrize("case", _quant_node_cases(), ids=lambda c: c.name)
def test_onnx_node_case(case):
    """The official ONNX node cases of the six operators (their expected outputs), through
    ge.backend as ge/conformance.py runs the claimed operators' cases."""
    from ge.conformance import run_case

    run_case(case)


def test_onnx_node_cases_counted():
    assert len(_quant_node_cases()) == 23


# --------------------------------------------------------------------------------------
# QDQ models written by onnxruntime's quantizer
# --------------------------------------------------------------------------------------


class _Reader:
    """onnxruntime's CalibrationDataReader over a list of feeds."""

    def __init__(self, feeds: list[dict[str, np.ndarray]]):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def ort_quantize(model: onnx.ModelProto, feeds, tmp_path, per_channel: bool, fmt=None, **kwargs) -> onnx.ModelProto:
    from onnxruntime.quantization import QuantFormat, quantize_static

    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save_model(model, str(src))
    quantize_static(str(src), str(dst), _Reader(feeds), quant_format=fmt or QuantFormat.QDQ,
                    per_channel=per_channel, **kwargs)
    return onnx.load_model(str(dst))


def small_cnn(seed: int = 0) -> onnx.ModelProto:
    """Conv-Relu-Conv-Relu-GlobalAveragePool-Flatten-Gemm: the shape of most CNN heads."""
    r = np.random.default_rng(seed)

    def w(*shape):
        return (r.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8) * 0.1, "w2": w(16, 8, 3, 3), "b2": w(16) * 0.1,
             "w3": w(10, 16), "b3": w(10) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1)]
    x = np.zeros((4, 3, 12, 12), np.float32)
    return _model(nodes, {"x": x}, {"y": (np.float32, [4, 10])}, inits, opset=17)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("activation", ["QInt8", "QUInt8"])
def test_onnxruntime_qdq_model(tmp_path, per_channel, activation):
    from onnxruntime.quantization import QuantType

    r = np.random.default_rng(1)
    feeds = [{"x": r.standard_normal((4, 3, 12, 12)).astype(np.float32)} for _ in range(4)]
    qdq = ort_quantize(small_cnn(), feeds, tmp_path, per_channel, activation_type=getattr(QuantType, activation))
    x = {"x": r.standard_normal((4, 3, 12, 12)).astype(np.float32)}
    (expected,) = run_ort(qdq, x)
    ops = _ops(qdq, {}, fold=True)
    assert ops.count("graph.quant_conv2d") == 2 and ops.count("graph.quant_matmul") == 1
    assert "graph.conv2d" not in ops and "graph.gemm" not in ops
    for fold in (False, True):
        (got,) = run_ge(qdq, x, fold)
        scale = float(np.abs(expected).max())
        assert float(np.abs(got - expected).max()) <= 0.02 * scale
        np.testing.assert_array_equal(got.argmax(1), expected.argmax(1))


def test_onnxruntime_qoperator_model(tmp_path):
    """QOperator format: QLinearConv (with Relu fused into its output range) and the
    quantized Gemm as QGemm (com.microsoft) is not ge's: Gemm stays float by op type."""
    from onnxruntime.quantization import QuantFormat

    r = np.random.default_rng(2)
    feeds = [{"x": r.standard_normal((4, 3, 12, 12)).astype(np.float32)} for _ in range(4)]
    qop = ort_quantize(small_cnn(), feeds, tmp_path, False, fmt=QuantFormat.QOperator, op_types_to_quantize=["Conv"])
    assert [n.op_type for n in qop.graph.node].count("QLinearConv") == 2
    x = {"x": r.standard_normal((4, 3, 12, 12)).astype(np.float32)}
    (expected,) = run_ort(qop, x)
    (got,) = run_ge(qop, x, fold=False)
    assert float(np.abs(got - expected).max()) <= 0.02 * float(np.abs(expected).max())
    np.testing.assert_array_equal(got.argmax(1), expected.argmax(1))


def resnet50_qdq(tmp_path) -> tuple[onnx.ModelProto, onnx.ModelProto, float]:
    """(the float light resnet50 at opset 13, its QDQ model by onnxruntime's quantize_static
    -- per-channel int8 weights, symmetric int8 activations, 4 seeded calibration inputs --
    with the pre-softmax logits as a second output, the logits' quantization step)."""
    from onnx import version_converter

    from ge.testing import calibrated_model, random_inputs

    model = version_converter.convert_version(calibrated_model("resnet50"), 13)  # per-channel DQ needs opset 13
    feeds = [random_inputs(model, seed=10 + i) for i in range(4)]
    qdq = ort_quantize(model, feeds, tmp_path, per_channel=True, extra_options={"ActivationSymmetric": True})
    softmax = [n for n in qdq.graph.node if n.op_type == "Softmax"][-1]
    qdq.graph.output.append(helper.make_tensor_value_info(softmax.input[0], TensorProto.FLOAT, None))
    logits_dq = next(n for n in qdq.graph.node if softmax.input[0] in n.output)
    step = float(numpy_helper.to_array(next(t for t in qdq.graph.initializer if t.name == logits_dq.input[1])))
    return model, qdq, step


@pytest.mark.slow
def test_resnet50_qdq_matches_onnxruntime(tmp_path):
    """The light resnet50 (seeded, calibrated weights; ge.testing) quantized by onnxruntime's
    `quantize_static` (QDQ, per-channel int8 weights, symmetric int8 activations -- ge's
    Cube path -- calibrated on 4 seeded inputs), imported by ge, quant-folded and run by the
    reference interpreter, against onnxruntime's run of the same QDQ model.

    Tolerance, on the pre-softmax logits (themselves quantized, step = their QDQ scale,
    about 1/116 of their range): at most 12 steps, 3 steps on average, and the same argmax
    (measured: 9 steps max, 2 on average). Both sides compute the same integer convolutions,
    but a requantization that lands within an ulp of a .5 tie rounds either way
    (onnxruntime's fused QLinearConv scales once by sx * sw / sy; ge dequantizes then
    quantizes; a float BatchNorm between sums in another order), and one step of difference
    in a layer moves the next layers' rounding: onnxruntime's own fused and unfused
    (ORT_DISABLE_ALL) runs of this model differ by 8 steps the same way."""
    from ge.testing import random_inputs

    model, qdq, step = resnet50_qdq(tmp_path)
    module = ge.load_onnx(qdq)
    QuantFoldPass().apply(make_context(), module)
    module.verify()
    ops = [op.name for op in module.walk()]
    assert ops.count("graph.quant_conv2d") == 53 and "graph.conv2d" not in ops
    session = ort.InferenceSession(qdq.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed in (3, 4):
        x = random_inputs(model, seed=seed)
        expected = session.run(None, x)[1]
        got = run_function(find_function(module), list(x.values()))[1]
        steps = np.abs(got - expected) / step
        assert float(steps.max()) <= 12 and float(steps.mean()) <= 3, (steps.max(), steps.mean())
        assert int(got.argmax()) == int(expected.argmax())


@pytest.mark.slow  # ~2.5 min: resnet50 compiled and simulated twice
def test_resnet50_qdq_compiled_matches_onnxruntime(tmp_path):
    """The same QDQ resnet50 compiled by ge.compile for the ascend910 (quant-fold, int8 Cube
    kernels with fused dequantize / requantize, standalone dequantize kernels by a rank-0
    scale before the float batch norms and pools) and run on the simulator, against
    onnxruntime's run: the same argmax and the reference path's tolerance on the logits (at
    most 12 quantization steps, 3 on average; measured 9 / 2.0 and 10 / 2.2). Precision
    must_keep_origin_dtype: the float ops in f32, as onnxruntime computes them (force_fp16,
    the default, moves the logits by up to 21 steps, with the same argmax)."""
    from ge.testing import random_inputs

    model, qdq, step = resnet50_qdq(tmp_path)
    compiled = ge.compile(qdq, ge.CompileOptions(soc_version="ascend910", precision_mode="must_keep_origin_dtype"))
    session = ort.InferenceSession(qdq.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed in (3, 4):
        x = random_inputs(model, seed=seed)
        expected = session.run(None, x)[1]
        got = list(compiled.run(x).values())[1]
        steps = np.abs(got - expected) / step
        assert float(steps.max()) <= 12 and float(steps.mean()) <= 3, (steps.max(), steps.mean())
        assert int(got.argmax()) == int(expected.argmax())
    kernels = compiled.last_run.kernels
    assert sum(k.work["fractals"] > 0 for k in kernels) >= 53  # the 53 int8 convs on the Cube
