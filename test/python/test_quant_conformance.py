"""The quantization operators on the NPU path (issue 21): their ONNX node cases are claimed
(ge/conformance.py), and the two fixes they needed, checked on larger shapes against
onnxruntime on the simulator (integer outputs: exact).

- QLinearConv with an asymmetric uint8 weight: the centered weight leaves int8, so the
  importer splits it into int8 parts whose quant_conv2d accumulators add in int32; fuse
  keeps that add, the dequantize and the requantize in one Cube epilogue (before, the
  dequantize was left as a Vector kernel on NC1HWC0 whose C0 changes 8 -> 32: no tile).
- QLinearMatMul with a batched (3-D) constant weight and an activation zero point:
  quant-fold adds -z * sum_k(b) in int32 after a zero-offset product.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.conformance import CLAIMED_OPS, excluded_reason, node_cases

QUANT_OPS = {"ConvInteger", "MatMulInteger", "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"}


def test_quantization_ops_are_claimed():
    assert QUANT_OPS <= set(CLAIMED_OPS)
    cases = [(n, op) for n, op, _ in node_cases() if op in QUANT_OPS]
    run = [n for n, _ in cases if excluded_reason(n) is None]
    excluded = {n: excluded_reason(n) for n, _ in cases if excluded_reason(n) is not None}
    assert len(run) == 20 and len(excluded) == 19
    assert "blocked quantization" in excluded["test_quantizelinear_blocked_symmetric"]
    assert "float8" in excluded["test_dequantizelinear_e4m3fn_float16"]


def _model(node, inputs: dict, inits: dict, out_type, opset: int) -> onnx.ModelProto:
    types = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info(k, types[v.dtype], v.shape)
                                            for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", out_type, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _npu(model: onnx.ModelProto, inputs: dict) -> tuple[np.ndarray, ge.CompiledModel]:
    compiled = ge.compile(model, ge.CompileOptions(input_shape={k: v.shape for k, v in inputs.items()},
                                                   precision_mode="must_keep_origin_dtype"))
    return compiled.run(inputs)["y"], compiled


def _ort(model: onnx.ModelProto, inputs: dict) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]


@pytest.mark.parametrize(("c_in", "c_out", "y_scale"), [(3, 40, 5.0), (33, 20, 0.7)])
def test_qlinearconv_with_an_asymmetric_uint8_weight_on_the_npu(c_in, c_out, y_scale):
    r = np.random.default_rng(c_in)
    x = r.integers(0, 256, (2, c_in, 9, 9)).astype(np.uint8)
    inits = dict(xs=np.float32(0.02), xz=np.uint8(120), w=r.integers(0, 256, (c_out, c_in, 3, 3)).astype(np.uint8),
                 ws=(r.random(c_out) * 0.01 + 0.001).astype(np.float32), wz=r.integers(0, 256, c_out).astype(np.uint8),
                 ys=np.float32(y_scale), yz=np.uint8(100), b=r.integers(-5000, 5000, c_out).astype(np.int32))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            name="qconv", pads=[1, 1, 1, 1])
    model = _model(node, {"x": x}, inits, TensorProto.UINT8, 13)
    got, compiled = _npu(model, {"x": x})
    want = _ort(model, {"x": x})
    assert len(np.unique(want)) > 10  # not saturated
    np.testing.assert_array_equal(got, want)
    cube = [k for k in compiled.last_run.kernels if k.work.get("fractals")]
    assert len(cube) == 2  # two int8 weight parts
    # the second part's kernel ends in the requantize: the parts' sum, dequantize and
    # quantize ran in its epilogue, and no kernel works on the dequantized f32 alone
    kinds = [k["kind"] for k in compiled.model.definition["kernels"]]
    assert kinds.count("cube_epilogue") == 2 and "elementwise" in kinds
    outs = [k["outs"][0]["dtype"] for k in compiled.model.definition["kernels"] if k["kind"] == "cube_epilogue"]
    assert sorted(outs) == ["int32", "int8"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinearmatmul_with_a_batched_weight_and_zero_points_on_the_npu(dtype):
    r = np.random.default_rng(5)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = r.integers(lo, hi + 1, (3, 20, 48)).astype(dtype)
    b = r.integers(lo, hi + 1, (3, 48, 24)).astype(dtype)
    signed = dtype == np.int8
    za, zb, zy = (np.array(v, dtype) for v in ((7, 0, -3) if signed else (140, 128, 125)))
    inits = dict(sa=np.float32(0.01), za=za, b=b, sb=np.float32(0.02), zb=zb, sy=np.float32(0.3), zy=zy)
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"], name="qmm")
    model = _model(node, {"a": a}, inits, TensorProto.INT8 if signed else TensorProto.UINT8, 10)
    got, _ = _npu(model, {"a": a})
    want = _ort(model, {"a": a})
    assert len(np.unique(want)) > 10
    # onnxruntime requantizes by sa * sb / sy once, ge by sa * sb then / sy: a value within
    # an ulp of a .5 tie may round the other way (test_int8_npu.py's tolerance for QLinear*)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert np.mean(got == want) > 0.99


def _conv_then(op: str) -> onnx.ModelProto:
    """QDQ: quantize x -> conv (int8 weight) -> op(1, y) -> quantize -> dequantize."""
    r = np.random.default_rng(0)
    inits = {"s": np.float32(0.05), "z": np.int8(0), "w": r.integers(-100, 100, (32, 16, 3, 3)).astype(np.int8),
             "ws": np.full(32, 0.002, np.float32), "wz": np.zeros(32, np.int8), "one": np.float32(1.0),
             "s2": np.float32(0.1)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(op, ["one", "c"], ["t"], name="t"),
             helper.make_node("QuantizeLinear", ["t", "s2", "z"], ["tq"]),
             helper.make_node("DequantizeLinear", ["tq", "s2", "z"], ["y"])]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 16, 8, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("op", ["Sub", "Div", "Max"])
def test_int8_conv_epilogue_takes_the_chain_assign_layouts_planned(op):
    """quant_conv2d -> dequantize -> 1 - y (or 1 / y, max(1, y): not a stage of the f16
    epilogue rule) -> quantize: assign-layouts plans the chain in NC1HWC0 for the epilogue
    (the quantize changes C0 16 -> 32), so fuse takes it whole (before: a Vector kernel of
    sub + quantize on NC1HWC0, which no tile covers). Bit-exact with the reference
    interpreter; onnxruntime runs the QDQ conv in float: within one quantization step."""
    from ge.backend import prepare

    model = _conv_then(op)
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    got, compiled = _npu(model, {"x": x})
    np.testing.assert_array_equal(got, prepare(model).run([x])[0])
    assert np.abs(got - _ort(model, {"x": x})).max() <= 0.1 * 1.0001
    kinds = [k["kind"] for k in compiled.model.definition["kernels"]]
    assert kinds.count("cube_epilogue") == 1 and len(kinds) == 3  # quantize x; conv + chain; dequantize y
