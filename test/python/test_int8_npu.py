"""The int8 path of issue 21: graph.quantize / dequantize / quant_conv2d / quant_matmul.

Reference semantics (ge.runtime.reference) against onnxruntime, with this mapping:
- graph.quantize(x, scale, offset)        == QuantizeLinear(x, scale, zero_point=offset) int8
- graph.dequantize(x, s, axis, offset)    == DequantizeLinear(x, s, zero_point=offset, axis)
  (i8 input; for an i32 input ONNX DequantizeLinear requires zero_point 0, which ours is too)
- graph.quant_conv2d(x, w) (no bias)      == ConvInteger(x, w, x_zero_point=input_offset)
  (onnxruntime's CPU ConvInteger takes uint8 activations: x + 128 with zero point
  input_offset + 128 is the same centered value)
- graph.quant_matmul(a, b)                == MatMulInteger(a, b, a_zero_point=lhs_offset)
- quantize(dequantize(quant_conv2d(x, w, b), sx * sw) , sy, zy) == QLinearConv(x, sx, zx, w,
  sw, 0, sy, zy, b) within 1 (QLinearConv multiplies the accumulator by sx * sw / sy once;
  the chain multiplies by sx * sw, then divides by sy: the two f32 roundings can move a value
  that lands within an ulp of a .5 tie to the other integer).
Integer results are compared exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType, f16, f32
from xdsl.dialects.builtin import i8 as xi8
from xdsl.dialects.func import Func
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from ge.dialects import graph as g
from ge.dialects.graph import Graph
from ge.runtime import reference

_ELEM = {np.dtype(k): v for k, v in {
    np.float32: "f32", np.float16: "f16", np.int32: "i32", np.int8: "i8", np.uint8: "ui8",
}.items()}
_ONNX = {np.dtype(k): v for k, v in {
    np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int32: TensorProto.INT32,
    np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
}.items()}


def T(shape, dtype) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{_ELEM[np.dtype(dtype)]}>"


def parse(src: str) -> ModuleOp:
    ctx = Context()
    for d in (Builtin, Func, Graph):
        ctx.load_dialect(d)
    module = Parser(ctx, src).parse_module()
    module.verify()
    return module


def run_ir(body: str, inputs: list[np.ndarray], out_shape, out_dtype) -> np.ndarray:
    args = ", ".join(f"%a{i}: {T(x.shape, x.dtype)}" for i, x in enumerate(inputs))
    t = T(out_shape, out_dtype)
    src = f"func.func @main({args}) -> {t} {{\n{body}\n  func.return %r : {t}\n}}"
    (y,) = reference.run(parse(src), inputs)
    return y


def onnx_run(op_type: str, inputs: dict, consts: dict, out_dtype, opset: int = 21, **attrs) -> np.ndarray:
    node = helper.make_node(op_type, [*inputs, *consts], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "t",
        [helper.make_tensor_value_info(k, _ONNX[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", _ONNX[np.dtype(out_dtype)], None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)[0]


def ints(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def conv_props(strides, pads, offset, group=1) -> str:
    return (f"strides = {ints(strides)}, pads = {ints(pads)}, dilations = {ints((1, 1))}, "
            f"group = {group} : i64, input_offset = {offset} : i64")


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def i8(shape, seed: int, lo: int = -128, hi: int = 128) -> np.ndarray:
    return rng(seed).integers(lo, hi, shape).astype(np.int8)


# --------------------------------------------------------------------------------------
# Reference semantics against onnxruntime
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("scale,offset", [(0.05, 0), (0.013, -7), (0.5, 100)])
def test_quantize_matches_quantize_linear(dtype, scale, offset):
    x = (rng(1).standard_normal((2, 3, 5, 7)) * 3).astype(dtype)
    x.flat[:6] = np.array([0.025, -0.025, 0.075, 1e4, -1e4, 0.0], dtype=dtype)  # ties and saturation
    got = run_ir(f"  %r = graph.quantize %a0 {{scale = {scale} : f32, offset = {offset} : i64}} "
                 f": {T(x.shape, dtype)} to {T(x.shape, np.int8)}", [x], x.shape, np.int8)
    want = onnx_run("QuantizeLinear", {"x": x.astype(np.float32)},
                    {"s": np.array(scale, np.float32), "z": np.array(offset, np.int8)}, np.int8)
    np.testing.assert_array_equal(got, want)
    assert got.min() == -128 and got.max() == 127


@pytest.mark.parametrize("per_channel", [False, True])
def test_dequantize_i8_matches_dequantize_linear(per_channel):
    x = i8((2, 4, 3, 3), 2)
    s = (rng(3).random(4 if per_channel else ()) * 0.1 + 0.01).astype(np.float32)
    st = T(s.shape, np.float32)
    got = run_ir(f"  %s = \"graph.constant\"() <{{value = dense<{s.tolist()}> : {st}}}> : () -> {st}\n"
                 f"  %r = graph.dequantize %a0, %s {{axis = 1 : i64, offset = 0 : i64}} "
                 f": ({T(x.shape, np.int8)}, {st}) -> {T(x.shape, np.float32)}", [x], x.shape, np.float32)
    want = onnx_run("DequantizeLinear", {"x": x}, {"s": s, "z": np.zeros(s.shape, np.int8)}, np.float32, axis=1)
    np.testing.assert_array_equal(got, want)


def test_dequantize_i32_offset_and_f16_result():
    x = rng(4).integers(-(2**30), 2**30, (3, 5)).astype(np.int32)
    s = np.float32(3e-6)
    got = run_ir(f"  %s = \"graph.constant\"() <{{value = dense<{float(s)}> : tensor<f32>}}> : () -> tensor<f32>\n"
                 f"  %r = graph.dequantize %a0, %s {{axis = 1 : i64, offset = 0 : i64}} "
                 f": ({T(x.shape, np.int32)}, tensor<f32>) -> {T(x.shape, np.float16)}", [x], x.shape, np.float16)
    want = onnx_run("DequantizeLinear", {"x": x}, {"s": np.array(s)}, np.float32)
    np.testing.assert_array_equal(got, want.astype(np.float16))  # one rounding f32 -> f16
    x8 = i8((6,), 5)
    got8 = run_ir(f"  %s = \"graph.constant\"() <{{value = dense<0.5> : tensor<f32>}}> : () -> tensor<f32>\n"
                  f"  %r = graph.dequantize %a0, %s {{axis = 0 : i64, offset = -3 : i64}} "
                  f": ({T((6,), np.int8)}, tensor<f32>) -> {T((6,), np.float32)}", [x8], (6,), np.float32)
    want8 = onnx_run("DequantizeLinear", {"x": x8}, {"s": np.array(0.5, np.float32), "z": np.array(-3, np.int8)},
                     np.float32)
    np.testing.assert_array_equal(got8, want8)


@pytest.mark.parametrize("xs,ws,strides,pads,offset", [
    ((1, 3, 9, 9), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), 0),
    ((2, 40, 7, 6), (5, 40, 3, 3), (1, 1), (1, 0, 2, 1), -5),
    ((1, 16, 8, 8), (33, 16, 1, 1), (2, 2), (0, 0, 0, 0), 12),
])
def test_quant_conv2d_matches_conv_integer(xs, ws, strides, pads, offset):
    x, w = i8(xs, 6), i8(ws, 7)
    want = onnx_run("ConvInteger", {"x": (x.astype(np.int16) + 128).astype(np.uint8)},
                    {"w": w, "xz": np.array(offset + 128, np.uint8)}, np.int32,
                    strides=list(strides), pads=list(pads))
    got = run_ir(f"  %w = \"graph.constant\"() <{{value = dense<{w.tolist()}> : {T(ws, np.int8)}}}> : () -> {T(ws, np.int8)}\n"
                 f"  %r = graph.quant_conv2d %a0, %w {{{conv_props(strides, pads, offset)}}} "
                 f": ({T(xs, np.int8)}, {T(ws, np.int8)}) -> {T(want.shape, np.int32)}", [x], want.shape, np.int32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a_shape,b_shape,offset", [((5, 40), (40, 7), 0), ((2, 3, 33), (33, 17), 9)])
def test_quant_matmul_matches_matmul_integer(a_shape, b_shape, offset):
    a, b = i8(a_shape, 8), i8(b_shape, 9)
    want = onnx_run("MatMulInteger", {"a": a}, {"b": b, "az": np.array(offset, np.int8)}, np.int32)
    got = run_ir(f"  %b = \"graph.constant\"() <{{value = dense<{b.tolist()}> : {T(b_shape, np.int8)}}}> : () -> {T(b_shape, np.int8)}\n"
                 f"  %r = graph.quant_matmul %a0, %b {{lhs_offset = {offset} : i64}} "
                 f": ({T(a_shape, np.int8)}, {T(b_shape, np.int8)}) -> {T(want.shape, np.int32)}", [a], want.shape, np.int32)
    np.testing.assert_array_equal(got, want)


def test_qlinear_conv_is_the_quant_chain():
    """QLinearConv == quantize(dequantize(quant_conv2d + bias)) within 1 (see the docstring)."""
    x, w = i8((1, 8, 10, 10), 10), i8((16, 8, 3, 3), 11, -127)
    b = rng(12).integers(-2000, 2000, 16).astype(np.int32)
    sx, zx, sy, zy = np.float32(0.02), -4, np.float32(0.7), 3
    sw = (rng(13).random(16) * 0.01 + 0.002).astype(np.float32)
    want = onnx_run("QLinearConv", {"x": x}, {
        "sx": np.array(sx), "zx": np.array(zx, np.int8), "w": w, "sw": sw, "zw": np.zeros(16, np.int8),
        "sy": np.array(sy), "zy": np.array(zy, np.int8), "b": b}, np.int8, strides=[2, 2], pads=[1, 1, 1, 1])
    deq = (sx * sw).astype(np.float32)
    wt, bt, st = T(w.shape, np.int8), T(b.shape, np.int32), T(deq.shape, np.float32)
    got = run_ir(
        f"  %w = \"graph.constant\"() <{{value = dense<{w.tolist()}> : {wt}}}> : () -> {wt}\n"
        f"  %b = \"graph.constant\"() <{{value = dense<{b.tolist()}> : {bt}}}> : () -> {bt}\n"
        f"  %s = \"graph.constant\"() <{{value = dense<{deq.tolist()}> : {st}}}> : () -> {st}\n"
        f"  %acc = graph.quant_conv2d %a0, %w, %b {{{conv_props((2, 2), (1, 1, 1, 1), zx)}}} "
        f": ({T(x.shape, np.int8)}, {wt}, {bt}) -> {T(want.shape, np.int32)}\n"
        f"  %f = graph.dequantize %acc, %s {{axis = 1 : i64, offset = 0 : i64}} "
        f": ({T(want.shape, np.int32)}, {st}) -> {T(want.shape, np.float32)}\n"
        f"  %r = graph.quantize %f {{scale = {float(sy)} : f32, offset = {zy} : i64}} "
        f": {T(want.shape, np.float32)} to {T(want.shape, np.int8)}", [x], want.shape, np.int8)
    diff = np.abs(got.astype(np.int16) - want)
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01, (diff.max(), (diff > 0).mean())


def test_verifier_rejects_bad_quant_ops():
    x8 = T((1, 4, 5, 5), np.int8)
    with pytest.raises(VerifyException, match="input must have element type i8"):
        parse(f"func.func @f(%x: {T((1, 4, 5, 5), np.float32)}, %w: {T((2, 4, 1, 1), np.int8)}) {{\n"
              f"  %r = graph.quant_conv2d %x, %w {{{conv_props((1, 1), (0, 0, 0, 0), 0)}}} : "
              f"({T((1, 4, 5, 5), np.float32)}, {T((2, 4, 1, 1), np.int8)}) -> {T((1, 2, 5, 5), np.int32)}\n"
              f"  func.return\n}}")
    with pytest.raises(VerifyException, match="offset 200 is outside the int8 range"):
        parse(f"func.func @f(%x: {T((3,), np.float32)}) {{\n"
              f"  %r = graph.quantize %x {{scale = 1.0 : f32, offset = 200 : i64}} : {T((3,), np.float32)} to {T((3,), np.int8)}\n"
              f"  func.return\n}}")
    with pytest.raises(VerifyException, match=r"scale must have shape \[\] or \[4\]"):
        parse(f"func.func @f(%x: {x8}, %s: tensor<5xf32>) {{\n"
              f"  %r = graph.dequantize %x, %s {{axis = 1 : i64, offset = 0 : i64}} : ({x8}, tensor<5xf32>) -> {T((1, 4, 5, 5), np.float32)}\n"
              f"  func.return\n}}")
    with pytest.raises(VerifyException, match="result must be an f32 or f16 tensor"):
        parse(f"func.func @f(%x: {x8}, %s: tensor<f32>) {{\n"
              f"  %r = graph.dequantize %x, %s {{axis = 1 : i64, offset = 0 : i64}} : ({x8}, tensor<f32>) -> {T((1, 4, 5, 5), np.int32)}\n"
              f"  func.return\n}}")


def test_builders_infer_types():
    blk = Block(arg_types=[TensorType(f32, [1, 4, 6, 6]), TensorType(xi8, [8, 4, 3, 3]), TensorType(f32, [8])])
    x, w, s = blk.args
    q = g.QuantizeOp.make([x], {"scale": g.float_attr(0.1), "offset": g.int_attr(0)})
    conv = g.QuantConv2dOp.make([q.output, w, None], {
        "strides": g.int_array((2, 2)), "pads": g.int_array((1, 1, 1, 1)), "dilations": g.int_array((1, 1)),
        "group": g.int_attr(1), "input_offset": g.int_attr(0)})
    assert str(conv.output.type) == "tensor<1x8x3x3xi32>"
    d32 = g.DequantizeOp.make([conv.output, s], {"axis": g.int_attr(1), "offset": g.int_attr(0)})
    d16 = g.DequantizeOp.to(conv.output, s, f16, axis=1)
    assert str(d32.output.type) == "tensor<1x8x3x3xf32>" and str(d16.output.type) == "tensor<1x8x3x3xf16>"
    for op in (q, conv, d32, d16):
        op.verify()


# --------------------------------------------------------------------------------------
# The int8 Cube path on the simulated ascend910: int8 FRACTAL_Z / NC1HWC0 (C0 = 32), mmad
# 16x32x16 into i32 L0C, dequantize / requantize in the epilogue (L0C -> UB -> Vector)
# --------------------------------------------------------------------------------------


def const(name: str, arr: np.ndarray) -> str:
    t = T(arr.shape, arr.dtype)
    return f"  %{name} = \"graph.constant\"() <{{value = dense<{arr.tolist()}> : {t}}}> : () -> {t}\n"


class Net:
    """A graph function written op by op (shapes from the reference kernels' own rules)."""

    def __init__(self, x_shape, x_dtype):
        self.args = f"%x: {T(x_shape, x_dtype)}"
        self.body = ""
        self.shapes = {"x": (tuple(x_shape), np.dtype(x_dtype))}
        self.n = 0

    def _new(self, shape, dtype) -> str:
        self.n += 1
        name = f"v{self.n}"
        self.shapes[name] = (tuple(shape), np.dtype(dtype))
        return name

    def t(self, v: str) -> str:
        return T(*self.shapes[v])

    def quantize(self, v: str, scale: float, offset: int = 0) -> str:
        r = self._new(self.shapes[v][0], np.int8)
        self.body += (f"  %{r} = graph.quantize %{v} {{scale = {scale} : f32, offset = {offset} : i64}} "
                      f": {self.t(v)} to {self.t(r)}\n")
        return r

    def conv(self, v: str, w: np.ndarray, bias=None, strides=(1, 1), pads=(1, 1, 1, 1), offset: int = 0) -> str:
        (n, _, h, wd), _ = self.shapes[v]
        m, _, kh, kw = w.shape
        oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
        ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
        r = self._new((n, m, oh, ow), np.int32)
        self.body += const(f"{r}_w", w)
        operands, types = f"%{v}, %{r}_w", f"{self.t(v)}, {T(w.shape, np.int8)}"
        if bias is not None:
            self.body += const(f"{r}_b", bias)
            operands, types = operands + f", %{r}_b", types + f", {T(bias.shape, np.int32)}"
        self.body += (f"  %{r} = graph.quant_conv2d {operands} {{{conv_props(strides, pads, offset)}}} "
                      f": ({types}) -> {self.t(r)}\n")
        return r

    def matmul(self, v: str, w: np.ndarray, bias=None, offset: int = 0) -> str:
        shape, _ = self.shapes[v]
        r = self._new((*shape[:-1], w.shape[1]), np.int32)
        self.body += const(f"{r}_w", w)
        operands, types = f"%{v}, %{r}_w", f"{self.t(v)}, {T(w.shape, np.int8)}"
        if bias is not None:
            self.body += const(f"{r}_b", bias)
            operands, types = operands + f", %{r}_b", types + f", {T(bias.shape, np.int32)}"
        self.body += f"  %{r} = graph.quant_matmul {operands} {{lhs_offset = {offset} : i64}} : ({types}) -> {self.t(r)}\n"
        return r

    def dequantize(self, v: str, scale: np.ndarray, axis: int = 1, dtype=np.float32) -> str:
        r = self._new(self.shapes[v][0], dtype)
        self.body += const(f"{r}_s", scale.astype(np.float32))
        self.body += (f"  %{r} = graph.dequantize %{v}, %{r}_s {{axis = {axis} : i64, offset = 0 : i64}} "
                      f": ({self.t(v)}, {T(scale.shape, np.float32)}) -> {self.t(r)}\n")
        return r

    def relu(self, v: str) -> str:
        r = self._new(*self.shapes[v])
        self.body += f"  %{r} = graph.relu %{v} : {self.t(r)}\n"
        return r

    def module(self, out: str) -> ModuleOp:
        return parse(f"func.func @main({self.args}) -> {self.t(out)} {{\n{self.body}"
                     f"  func.return %{out} : {self.t(out)}\n}}")


def npu_run(net: Net, out: str, x: np.ndarray, precision: str = "must_keep_origin_dtype", soc: str = "ascend910",
            dump_ir: str | None = None):
    """(simulated output on `soc`, reference output, the compiled model)."""
    import ge

    (want,) = reference.run(net.module(out), [x])
    compiled = ge.compile(net.module(out), ge.CompileOptions(soc_version=soc, precision_mode=precision, dump_ir=dump_ir))
    (got,) = compiled.run({"x": x}).values()
    return got, want, compiled


def weights(shape, seed: int) -> np.ndarray:
    return i8(shape, seed, -127, 128)


@pytest.mark.parametrize("c,m,hw,strides,pads", [
    (40, 24, 9, (2, 2), (1, 1, 1, 1)),   # C not a multiple of 32, M not of 16
    (64, 32, 8, (1, 1), (1, 1, 1, 1)),   # two C0 blocks
    (3, 16, 10, (2, 2), (1, 0, 2, 1)),   # a first layer: 3 channels, uneven pads
])
def test_quant_conv2d_int32_is_bit_exact_on_the_npu(c, m, hw, strides, pads):
    net = Net((2, c, hw, hw), np.int8)
    bias = rng(20).integers(-5000, 5000, m).astype(np.int32)
    out = net.conv("x", weights((m, c, 3, 3), 21), bias, strides, pads)
    x = i8((2, c, hw, hw), 22)
    got, want, _ = npu_run(net, out, x)
    assert got.dtype == np.int32 and np.abs(want).max() > 2**15
    np.testing.assert_array_equal(got, want)


def test_quant_conv2d_dequantized_to_f16_rounds_once():
    """force_fp16: the epilogue's f32 product is rounded once to f16 (the graph output is cast
    back to f32 at the boundary): equal to the reference rounded to f16."""
    net = Net((1, 40, 9, 9), np.int8)
    acc = net.conv("x", weights((24, 40, 3, 3), 23), strides=(2, 2))
    y = net.dequantize(acc, (rng(24).random(24) * 1e-3 + 1e-4).astype(np.float32))
    got, want, _ = npu_run(net, y, i8((1, 40, 9, 9), 25), precision="force_fp16")
    np.testing.assert_array_equal(got, want.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("m,k,n,bias", [(20, 40, 24, True), (64, 96, 48, False)])
def test_quant_matmul_on_the_npu(m, k, n, bias):
    net = Net((m, k), np.int8)
    b = rng(26).integers(-3000, 3000, n).astype(np.int32) if bias else None
    acc = net.matmul("x", weights((k, n), 27), b)
    x = i8((m, k), 28)
    got, want, _ = npu_run(net, acc, x)
    np.testing.assert_array_equal(got, want)
    y = net.dequantize(acc, (rng(29).random(n) * 1e-3).astype(np.float32), axis=1)
    got, want, _ = npu_run(net, y, x)
    np.testing.assert_array_equal(got, want)


def small_cnn(c: int = 8) -> tuple[Net, str]:
    """quantize -> quant_conv2d -> dequantize -> relu -> quantize -> quant_conv2d -> dequantize."""
    net = Net((2, c, 12, 12), np.float32)
    q = net.quantize("x", 0.03)
    a1 = net.conv(q, weights((40, c, 3, 3), 30), rng(31).integers(-400, 400, 40).astype(np.int32), (2, 2))
    h = net.relu(net.dequantize(a1, np.full(40, 0.03 * 0.004, np.float32)))
    a2 = net.conv(net.quantize(h, 0.02), weights((16, 40, 3, 3), 32))
    return net, net.dequantize(a2, (rng(33).random(16) * 2e-4 + 1e-4).astype(np.float32))


def test_small_int8_cnn_end_to_end():
    net, y = small_cnn()
    x = rng(34).standard_normal((2, 8, 12, 12)).astype(np.float32)
    got, want, compiled = npu_run(net, y, x)
    np.testing.assert_array_equal(got, want)  # f32 everywhere: the same roundings in the same order
    kernels = compiled.last_run.kernels
    assert len(kernels) == 3, [k.kernel for k in kernels]  # quantize; conv+deq+relu+quantize; conv+deq


def _roofline_helper():
    """test_sim_roofline's bound of one launch (tests import in importlib mode: loaded by path)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("sim_roofline", Path(__file__).with_name("test_sim_roofline.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.roofline


@pytest.mark.slow  # ~10-15 s per chip: two models compiled and simulated
@pytest.mark.parametrize("soc", ["ascend910", "ascend910b"])  # the Vector epilogue / FixPipe's quant mode
def test_int8_kernels_respect_the_roofline(soc):
    """Every launch of the int8 CNN (and of an int8 matmul) takes at least its bound: Cube
    fractals at the int8 rate (16x32x16 per cycle), Vector repeats, HBM bytes."""
    from ge.targets import load_target

    roofline = _roofline_helper()
    target = load_target(soc)
    net, y = small_cnn(40)
    _, _, compiled = npu_run(net, y, rng(35).standard_normal((2, 40, 12, 12)).astype(np.float32), soc=soc)
    mm = Net((128, 256), np.int8)
    _, _, compiled_mm = npu_run(mm, mm.matmul("x", weights((256, 96), 36)), i8((128, 256), 37), soc=soc)
    runs = compiled.last_run.kernels + compiled_mm.last_run.kernels
    assert sum(r.work["fractals"] > 0 for r in runs) == 3
    for r in runs:
        bound = roofline(target, r)
        assert r.alone >= max(bound.values()), f"{r.kernel} ({r.node}): {r.alone:.0f} cycles < bound {bound}"


@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 0, 0, 0)])
def test_activation_zero_points_on_the_npu(pads):
    """A nonzero activation zero point: absorbed into the i32 bias (and, for a padded conv,
    an explicit pad with the zero point): still bit-exact."""
    net = Net((1, 40, 9, 9), np.int8)
    out = net.conv("x", weights((24, 40, 3, 3), 40), None, (2, 2), pads, offset=-7)
    x = i8((1, 40, 9, 9), 41)
    got, want, compiled = npu_run(net, out, x)
    np.testing.assert_array_equal(got, want)
    assert len(compiled.last_run.kernels) == (2 if any(pads) else 1)  # the pad kernel
    mm = Net((20, 40), np.int8)
    acc = mm.matmul("x", weights((40, 24), 42), rng(43).integers(-99, 99, 24).astype(np.int32), offset=11)
    got, want, _ = npu_run(mm, acc, i8((20, 40), 44))
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow  # ~15 s: a 4 x 64 x 28 x 28 conv compiled twice
def test_int8_conv_halves_the_cube_work_of_f16():
    """The same 3x3 conv (64 -> 64 channels, 28 x 28, batch 4) in f16 and in int8: the int8
    Cube does half the fractals (16x32x16 instead of 16x16x16, one per cycle), so its Cube
    pipe is busy about half as long."""
    import ge

    w = rng(50).standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    f16 = ge.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                     ge.CompileOptions(soc_version="ascend910"))
    f16.run({"x": rng(51).standard_normal((4, 64, 28, 28)).astype(np.float32)}, timing_only=True)
    net = Net((4, 64, 28, 28), np.int8)
    acc = net.conv("x", weights((64, 64, 3, 3), 52))
    _, _, int8 = npu_run(net, acc, i8((4, 64, 28, 28), 53))
    (k16,) = [k for k in f16.last_run.kernels if k.work["fractals"]]
    (k8,) = [k for k in int8.last_run.kernels if k.work["fractals"]]
    assert k8.work["fractals"] * 2 == k16.work["fractals"]
    assert k8.pipe_busy["M"] < 0.6 * k16.pipe_busy["M"], (k8.pipe_busy, k16.pipe_busy)


def test_standalone_quantize_with_a_zero_point_on_the_npu():
    """A quantize kernel of its own (vdiv, vconv rint to i32, vadds of the zero point,
    clamp, vconv to i8) and one with offset 0 (one saturating vconv), saturating values."""
    x = (rng(60).standard_normal((2, 3, 7, 9)) * 4).astype(np.float32)
    x.flat[:4] = [0.125, -0.125, 1e3, -1e3]  # ties at scale 0.05 x 2.5 and both saturations
    for offset in (-5, 0):
        net = Net(x.shape, np.float32)
        got, want, _ = npu_run(net, net.quantize("x", 0.05, offset), x)
        np.testing.assert_array_equal(got, want)
        assert got.min() == -128 and got.max() == 127


def residual_block(dtype) -> tuple[Net, str]:
    """quantize -> conv -> deq -> relu (h) -> quantize -> conv -> deq -> + h -> relu -> quantize."""
    net = Net((1, 40, 8, 8), dtype)
    a1 = net.conv(net.quantize("x", 0.03), weights((40, 40, 3, 3), 61))
    h = net.relu(net.dequantize(a1, np.full(40, 0.03 * 0.004, np.float32), dtype=dtype))
    a2 = net.conv(net.quantize(h, 0.05), weights((40, 40, 3, 3), 62))
    y = net.dequantize(a2, np.full(40, 0.05 * 0.003, np.float32), dtype=dtype)
    s = net._new(net.shapes[y][0], dtype)
    net.body += f"  %{s} = graph.add %{y}, %{h} : ({net.t(y)}, {net.t(h)}) -> {net.t(s)}\n"
    return net, net.quantize(net.relu(s), 0.08)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_residual_block_requantized_in_the_epilogue(dtype):
    """A ResNet block in int8: the block input h (an f16 / f32 NC1HWC0 tensor, C0 16 / 8) is
    both requantized for the conv and added back in the conv's epilogue, whose output is int8
    (C0 32): the residual's tile is re-laid in UB to the output's C0. The graph computes in
    `dtype` already (f32 kept by must_keep_origin_dtype), so the compiled model does the same
    roundings as the reference."""
    net, out = residual_block(dtype)
    x = rng(63).standard_normal((1, 40, 8, 8)).astype(dtype)
    precision = "force_fp16" if dtype == np.float16 else "must_keep_origin_dtype"
    got, want, compiled = npu_run(net, out, x, precision=precision)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 50
    # quantize; conv1 + deq + relu; h to NCHW and its standalone quantize (h has two users);
    # conv2 + deq + add + relu + quantize; the int8 result to NCHW (a kernel of its own: the
    # epilogue writes NCHW only in the residual's C0)
    assert len(compiled.last_run.kernels) == 6, [k.kernel for k in compiled.last_run.kernels]


def test_batch_norm_between_dequantize_and_requantize_joins_the_epilogue():
    """quant_conv2d -> dequantize -> batch_norm -> relu -> quantize (a QDQ model whose
    BatchNorm was not folded into the int8 conv): one cube kernel, bit-exact."""
    net = Net((1, 40, 9, 9), np.float32)
    acc = net.conv(net.quantize("x", 0.03), weights((32, 40, 3, 3), 70), strides=(2, 2))
    f = net.dequantize(acc, np.full(32, 1e-4, np.float32))
    params = [(rng(71 + i).random(32) + 0.5).astype(np.float32) for i in range(4)]
    bn = net._new(net.shapes[f][0], np.float32)
    for i, p in enumerate(params):
        net.body += const(f"{bn}_p{i}", p)
    pt = T((32,), np.float32)
    net.body += (f"  %{bn} = graph.batch_norm %{f}, %{bn}_p0, %{bn}_p1, %{bn}_p2, %{bn}_p3 {{epsilon = 1.0e-05 : f32}} "
                 f": ({net.t(f)}, {pt}, {pt}, {pt}, {pt}) -> {net.t(bn)}\n")
    out = net.quantize(net.relu(bn), 0.02)
    got, want, compiled = npu_run(net, out, rng(75).standard_normal((1, 40, 9, 9)).astype(np.float32))
    np.testing.assert_array_equal(got, want)
    assert len(compiled.last_run.kernels) == 2, [k.kernel for k in compiled.last_run.kernels]  # quantize; conv


@pytest.mark.parametrize("c", [1, 3, 33])
def test_quant_conv2d_few_input_channels_on_the_npu(c):
    """C_in below / just past int8's C0 = 32 (a first layer: 1 or 3 channels), the int8
    result requantized and the f32 result dequantized: bit-exact."""
    net = Net((2, c, 8, 8), np.float32)
    acc = net.conv(net.quantize("x", 0.02), weights((8, c, 3, 3), 80), rng(81).integers(-300, 300, 8).astype(np.int32))
    y = net.dequantize(net.conv(net.quantize(net.relu(net.dequantize(acc, np.full(8, 1e-3, np.float32))), 0.05),
                                weights((16, 8, 3, 3), 82)), np.full(16, 2e-4, np.float32))
    got, want, _ = npu_run(net, y, rng(83).standard_normal((2, c, 8, 8)).astype(np.float32))
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(want) > want.size // 2


def test_quant_matmul_narrower_than_one_int8_column_block():
    """N = 10 (a classifier head) is less than one 32-wide int8 FRACTAL_NZ column block: the
    N tile is a whole block (a 16-wide tile had no block at all: sizes [1, 0, ...])."""
    net = Net((60, 64), np.int8)
    acc = net.matmul("x", weights((64, 10), 84), rng(85).integers(-999, 999, 10).astype(np.int32))
    y = net.dequantize(acc, (rng(86).random(10) * 1e-3).astype(np.float32), axis=1)
    got, want, _ = npu_run(net, y, i8((60, 64), 87))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,c", [((), 40), ((1,), 1)])
def test_standalone_dequantize_with_one_scale_on_the_npu(shape, c):
    """A dequantize of an int8 activation by one scale (rank 0, as onnxruntime's QDQ models
    write it, or [1] for one channel) feeding a float op, a Vector kernel of its own: the
    constant scale is an immediate of a vmuls, not a GM input (the kernel reads x only, one
    copy-in per tile)."""
    net = Net((2, c, 9, 9), np.int8)
    y = net.relu(net.dequantize("x", np.full(shape, 0.037, np.float32)))
    x = i8((2, c, 9, 9), 88)
    got, want, compiled = npu_run(net, y, x)
    np.testing.assert_array_equal(got, want)
    (k,) = compiled.last_run.kernels
    assert k.work["gm_read"] == x.nbytes and k.instructions["MTE2"] == k.blocks


# --------------------------------------------------------------------------------------
# FixPipe's quant mode (ascend910b / ascend310b): the L0C read-out dequantizes, ReLUs and
# requantizes on the way (isa.fixpipe quant_pre), the Vector unit does the rest
# --------------------------------------------------------------------------------------


def _isa_text(dump: Path) -> str:
    (path,) = dump.glob("*_to-isa.mlir")
    return path.read_text()


@pytest.mark.parametrize("soc", ["ascend910b", "ascend310b"])
@pytest.mark.parametrize("case,precision,modes", [
    ("cnn", "must_keep_origin_dtype", {"VREQ8"}),  # deq (f32) -> relu -> quantize; the f32 output stays on V
    ("cnn", "force_fp16", {"VREQ8", "VDEQF16"}),
    ("residual", "force_fp16", {"VDEQF16"}),  # both convs: deq [relu] to f16 by FixPipe; + h, relu, quantize on V
])
def test_fixpipe_quant_mode_is_bit_exact(soc, case, precision, modes, tmp_path):
    """The int8 epilogues in FixPipe's quant mode give the 910's results (its Vector
    epilogue, bit-exact with the reference: the tests above) bit for bit, and the reference's
    own under must_keep_origin_dtype."""
    if case == "cnn":
        net, out = small_cnn(40)
        x = rng(34).standard_normal((2, 40, 12, 12)).astype(np.float32)
    else:
        net, out = residual_block(np.float32)
        x = rng(63).standard_normal((1, 40, 8, 8)).astype(np.float32)
    got, want, compiled = npu_run(net, out, x, precision, soc, dump_ir=str(tmp_path))
    vector_epilogue, _, _ = npu_run(net, out, x, precision)
    np.testing.assert_array_equal(got, vector_epilogue)
    if precision == "must_keep_origin_dtype":
        np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 50
    text = _isa_text(tmp_path)
    assert {m for m in ("DEQF16", "VDEQF16", "REQ8", "VREQ8") if f'quant_pre "{m}"' in text} == modes
    assert sum(k.instructions["FIX"] for k in compiled.last_run.kernels) > 0


def test_fixpipe_quant_mode_with_one_scale_and_a_matmul(tmp_path):
    """A one-value deq scale (rank 0, as onnxruntime writes it) staged in UB is read with
    stride 0 everywhere (VREQ8 with scale strides all 0); an int8 matmul's epilogue takes the
    per-column scale (VDEQF16)."""
    net = Net((1, 40, 9, 9), np.float32)
    acc = net.conv(net.quantize("x", 0.03), weights((32, 40, 3, 3), 90), strides=(2, 2))
    out = net.quantize(net.relu(net.dequantize(acc, np.full((), 1.5e-4, np.float32))), 0.02)
    x = rng(91).standard_normal((1, 40, 9, 9)).astype(np.float32)
    got, want, _ = npu_run(net, out, x, "must_keep_origin_dtype", "ascend910b", dump_ir=str(tmp_path / "conv"))
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 20
    text = _isa_text(tmp_path / "conv")
    assert 'quant_pre "VREQ8" scale %' in text and "strides [0, 0] deq_f32 relu quant_scale 2.000000e-02" in text
    mm = Net((20, 64), np.int8)
    y = mm.dequantize(mm.matmul("x", weights((64, 48), 92)), (rng(93).random(48) * 1e-3).astype(np.float32),
                      axis=1, dtype=np.float16)
    a = i8((20, 64), 94)
    got, want, compiled = npu_run(mm, y, a, "must_keep_origin_dtype", "ascend910b", dump_ir=str(tmp_path / "mm"))
    np.testing.assert_array_equal(got, want)
    assert 'quant_pre "VDEQF16" scale %' in _isa_text(tmp_path / "mm")
    import ge  # the quant mode's properties survive the model file

    compiled.save(tmp_path / "mm.om")
    (again,) = ge.load_model(tmp_path / "mm.om").run({"x": a}).values()
    np.testing.assert_array_equal(again, got)


def _vector_ops(module) -> dict[str, int]:
    """Vector instructions per isa kernel (static count in the kernel body)."""
    from ge.dialects import isa

    return {k.sym_name.data: sum(isinstance(o, isa.VECTOR_OPS) for o in k.walk())
            for k in module.body.block.ops if isinstance(k, isa.KernelOp)}


def test_fixpipe_quant_mode_shortens_the_int8_epilogue(tmp_path):
    """The same tile kernels lowered with and without FixPipe's quant mode
    (`to-isa{fixpipe-quant=false}`): the int8 conv kernels lose their epilogue's Vector
    instructions (all of them where the requantized result goes straight to GM), and the
    simulated kernels get faster."""
    from ge.ir import parse_module
    from ge.lowering.to_isa import ToIsaPass

    net, out = small_cnn(40)
    x = rng(34).standard_normal((2, 40, 12, 12)).astype(np.float32)
    _, _, compiled = npu_run(net, out, x, "force_fp16", "ascend910b", dump_ir=str(tmp_path))
    (tile_ir,) = tmp_path.glob("*_tile.mlir")
    counts = {}
    for fix in (True, False):
        module = parse_module(tile_ir.read_text())
        ToIsaPass(fixpipe_quant=fix).apply(None, module)
        counts[fix] = _vector_ops(module)
    cube = [k.kernel for k in compiled.last_run.kernels if k.work["fractals"]]
    assert len(cube) == 2
    for name in cube:
        assert counts[True][name] < counts[False][name], (name, counts)
    assert min(counts[True][n] for n in cube) == 0  # conv1 + deq + relu + requantize: FixPipe alone
    for name in set(counts[True]) - set(cube):
        assert counts[True][name] == counts[False][name]
    # simulated: a conv kernel without Vector instructions runs none, its read-outs on FIX
    ran = {k.kernel: k.instructions for k in compiled.last_run.kernels}
    for name in (n for n in cube if counts[True][n] == 0):
        assert ran[name]["V"] == 0 and ran[name]["FIX"] > 0, ran[name]
