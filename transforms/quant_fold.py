"""`quant-fold`: QDQ patterns -> int8 Cube ops (graph level, before graph-optimize).

A QDQ model (onnxruntime's `quantize_static(quant_format=QDQ)`, or `ge.quantize`) imports
as float Conv / MatMul / Gemm whose operands are `graph.dequantize` of int8 values:

    dequantize(x_i8, sx, zx) -> conv2d <- dequantize(const w_i8, sw[M], 0)   (<- bias)

This pass rewrites each such op into what GE's AMCT + ATC run (INT8_SPEC.md):

    quant_conv2d(x_i8, w_i8, bias_i32, input_offset = zx) -> dequantize(sx * sw[M]) -> f32

(quant_matmul for MatMul and Gemm; a Gemm's B is transposed into [K, N] when trans_b and
its alpha goes into the dequantize scale). The quantize that produced x_i8 stays; a
quantize that follows the new dequantize is the requantization the NPU path fuses into the
epilogue. Bias: a `dequantize(const i32, sx * sw)` bias (what the quantizers write) is used
as is; a float bias, or an i32 one with another scale, is requantized to
int32 = round(b / (alpha * sx * sw)) in f64, half to even, as onnxruntime's
`quantize_bias_static_impl` does. The one rounding this adds is the bias's (|error| <= scale / 2).

A pattern that does not match (an activation quantized per channel, a weight that is not a
constant or whose zero point leaves the int8 range, a Gemm with trans_a or beta != 1, a
bias of another shape) is left alone: its quantize / dequantize run elementwise and the
float op between them, which is still the model's meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ge.dialects import dtypes, graph
from ge.dialects.graph import get_float, get_int, has_flag, int_attr
from ge.transforms.graph_utils import constant_value, elem_of, erase_dead, loc_name, make_constant, shape_of

I8 = dtypes.element_type(np.int8)
I32 = dtypes.element_type(np.int32)


@dataclass
class Quantized:
    """An int8 value behind a `graph.dequantize`: the value, its scale and zero point."""

    value: SSAValue
    scale: np.ndarray  # [] or [C]
    axis: int
    offset: int


def _dequantized(v: SSAValue, elem=I8) -> Quantized | None:
    """`v` = dequantize(q) of an `elem` tensor with a constant scale, else None."""
    op = v.owner
    if not isinstance(op, graph.DequantizeOp) or elem_of(op.input) != elem:
        return None
    scale = constant_value(op.scale)
    if scale is None:
        return None
    return Quantized(op.input, scale.astype(np.float32), get_int(op.properties, "axis"), get_int(op.properties, "offset"))


def _activation(v: SSAValue) -> Quantized | None:
    """An int8 activation quantized per tensor."""
    q = _dequantized(v)
    return q if q is not None and q.scale.size == 1 else None


def _weight(v: SSAValue, channel_axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A constant int8 weight, centered on its zero point (must stay in int8), with its
    scale per tensor or per channel along `channel_axis`: (w_i8, scale [] or [C])."""
    q = _dequantized(v)
    if q is None:
        return None
    w = constant_value(q.value)
    if w is None or (q.scale.size > 1 and q.axis != channel_axis):
        return None
    centered = w.astype(np.int64) - q.offset
    if centered.min(initial=0) < -128 or centered.max(initial=0) > 127:
        return None
    return centered.astype(np.int8), q.scale.reshape(-1) if q.scale.size > 1 else q.scale.reshape(())


def _bias(v: SSAValue | None, scale: np.ndarray, channels: int) -> np.ndarray | bool | None:
    """The bias as int32 [channels] for an accumulator of scale `scale`, None when there
    is no bias, False when it cannot be folded (not a constant, another shape)."""
    if v is None:
        return None
    exact = _dequantized(v, I32)
    if exact is not None and exact.offset == 0:
        b = constant_value(exact.value)
        if b is None or b.shape != (channels,):
            return False
        if np.array_equal(np.broadcast_to(exact.scale, (channels,)), np.broadcast_to(scale, (channels,))):
            return b.astype(np.int32)
        real = b.astype(np.float64) * exact.scale.astype(np.float64)
    else:
        real = constant_value(v)
        if real is None or real.shape != (channels,):
            return False
    return quantize_bias(real, scale)


def quantize_bias(real: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """onnxruntime's `quantize_bias_static_impl`: round(b / scale) in f64, clipped to int32."""
    q = np.round(np.asarray(real, np.float64) / np.asarray(scale, np.float64))
    info = np.iinfo(np.int32)
    return np.clip(q, info.min, info.max).astype(np.int32)


def _product_scale(sx: np.ndarray, sw: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """The accumulator's scale alpha * sx * sw (per tensor or per channel), rounded once to f32."""
    return (np.float64(alpha) * sx.astype(np.float64).reshape(()) * sw.astype(np.float64)).astype(np.float32)


def _rewrite(rewriter: PatternRewriter, op: Operation, cls, x: SSAValue, w_i8: np.ndarray, bias: np.ndarray | None,
             props: dict, scale: np.ndarray, axis: int) -> None:
    """Replace the float `op` by `cls`(x, w_i8, bias) -> dequantize(scale along `axis`), with
    op's location, and erase the dequantize ops and constants this leaves unused."""
    name = loc_name(op)
    w = make_constant(w_i8, I8, f"{name}_w_i8", op)
    new: list[Operation] = [w]
    if bias is not None:
        new.append(make_constant(bias, I32, f"{name}_b_i32", op))
    acc = cls.make([x, w.output, new[1].results[0] if bias is not None else None], props)
    s = make_constant(scale, None, f"{name}_deq_scale", op)
    deq = graph.DequantizeOp.to(acc.output, s.output, elem_of(op.results[0]), axis if scale.ndim else 0, 0)
    new += [acc, s, deq]
    for n in new:
        n.location = op.location
    rewriter.insert(new)
    old = list(op.operands)
    rewriter.replace(op, [], [deq.output])
    erase_dead(rewriter, old)


class FoldQuantConv(RewritePattern):
    """dequantize -> conv2d <- dequantize(const): quant_conv2d + dequantize."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter, /):
        x = _activation(op.input)
        w = _weight(op.weight, 0)
        if x is None or w is None:
            return
        w_i8, sw = w
        scale = _product_scale(x.scale, sw)
        channels = shape_of(op.weight)[0]
        bias = _bias(op.bias, np.broadcast_to(scale, (channels,)), channels)
        if bias is False:
            return
        props = {k: op.properties[k] for k in ("strides", "pads", "dilations", "group")}
        props["input_offset"] = int_attr(x.offset)
        _rewrite(rewriter, op, graph.QuantConv2dOp, x.value, w_i8, bias, props, scale, 1)


class FoldQuantMatMul(RewritePattern):
    """dequantize -> matmul / gemm <- dequantize(const 2-D): quant_matmul + dequantize."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp | graph.GemmOp, rewriter: PatternRewriter, /):
        is_gemm = isinstance(op, graph.GemmOp)
        a_val, b_val = (op.a, op.b) if is_gemm else (op.lhs, op.rhs)
        trans_b = is_gemm and has_flag(op.properties, "trans_b")
        if is_gemm and (has_flag(op.properties, "trans_a") or get_float(op.properties, "beta", 1.0) != 1.0):
            return
        x = _activation(a_val)
        if x is None or len(shape_of(b_val)) != 2:
            return
        w = _weight(b_val, 0 if trans_b else 1)
        if w is None:
            return
        w_i8, sw = w
        if trans_b:
            w_i8 = np.ascontiguousarray(w_i8.T)
        alpha = get_float(op.properties, "alpha", 1.0) if is_gemm else 1.0
        scale = _product_scale(x.scale, sw, alpha)
        n = w_i8.shape[1]
        bias = _bias(op.c, np.broadcast_to(scale, (n,)), n) if is_gemm else None
        if bias is False:
            return
        _rewrite(rewriter, op, graph.QuantMatMulOp, x.value, w_i8, bias, {"lhs_offset": int_attr(x.offset)}, scale,
                 len(shape_of(op.results[0])) - 1)


class FoldBatchedZeroPoint(RewritePattern):
    """quant_matmul(a, const b of rank > 2, lhs_offset = z): the Cube takes no zero point and
    assign-layouts folds one into the [N] bias only for a 2-D weight; a batched weight's
    correction differs per batch, so it is added in int32 after a zero-offset product:
    (a - z) @ b = a @ b - z * sum_k(b) (shape [..., 1, N], exact in int32 as the product)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantMatMulOp, rewriter: PatternRewriter, /):
        z = get_int(op.properties, "lhs_offset")
        b = constant_value(op.rhs)
        if z == 0 or b is None or b.ndim <= 2:
            return
        correction = (-z * b.astype(np.int64).sum(axis=-2, keepdims=True)).astype(np.int32)
        name = loc_name(op)
        props = dict(op.properties)
        props["lhs_offset"] = int_attr(0)
        acc = graph.QuantMatMulOp.make([op.lhs, op.rhs, op.bias], props)
        c = make_constant(correction, I32, f"{name}_zero_point_sum", op)
        add = graph.AddOp.make([acc.output, c.output], {})
        for n in (acc, c, add):
            n.location = op.location
        rewriter.insert([acc, c, add])
        rewriter.replace(op, [], [add.results[0]])


@dataclass(frozen=True)
class QuantFoldPass(ModulePass):
    """Fold dequantize -> Conv / MatMul / Gemm <- dequantize(const) into int8 Cube ops."""

    name = "quant-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([FoldQuantConv(), FoldQuantMatMul(), FoldBatchedZeroPoint()],
                                               dce_enabled=False)
        PatternRewriteWalker(patterns).rewrite_module(op)
