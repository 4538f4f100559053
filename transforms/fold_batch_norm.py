"""`fold-batch-norm`: fold inference BatchNorm and per-channel Mul / Add by constants into
the Conv / Gemm / MatMul (or BatchNorm) that produces their input.

Graph level (DESIGN.md §2), part of `graph-optimize` at level 3, like onnxruntime's basic
ConvBNFusion, ConvMulFusion, ConvAddFusion, MatMulAddFusion and BatchNormalization+Mul/Add
fusions, and GE's BN-into-conv fusion. A BatchNorm in inference computes `y = x * s + t` per
channel with `s = scale / sqrt(var + eps)` and `t = bias - mean * s`; a Mul / Add by a
constant that is the same along every axis but the channel axis is the same kind of affine
map. When `x` is the output of

- `graph.conv2d x = conv(in, W, b)`: `W'[m] = W[m] * s[m]`, `b' = b * s + t`;
- `graph.gemm x = alpha * A @ op(B) + beta * C` (channel = column n):
  `op(B)'[:, n] = op(B)[:, n] * s[n]`, `C' = beta * C * s + t`, beta' = 1;
- `graph.matmul x = A @ B` with a constant 2-D B and a rank-2 result: `B' = B * s` and,
  when `t` is not zero, the MatMul becomes `graph.gemm(A, B', t)`; a Mul along the last
  axis folds at any rank;
- `graph.batch_norm`: `scale' = scale * s`, `bias' = bias * s + t`,

the pair becomes one op. Then two convs whose results only meet in one Add carry one bias,
the sum of theirs, on the first (`OneBiasForSummedConvs`: `fuse` may then compute the sum
as one GEMM). This is exact algebra, done only when it is exact for the graph:
the producer's result has no other user (else that user would see scaled values), its
weights and the affine parameters are constants, and the constant does not broadcast the
result to a larger shape. The arithmetic is numpy in float64 on the weights, rounded once
to the weight's type, so the folded weights are the correctly rounded `W * s`; the
remaining difference to the unfolded graph is the rounding of one multiply-add per output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ge.dialects import dtypes, graph
from ge.dialects.blobs import Deferred, head_of, value_of
from ge.dialects.graph import float_attr, get_float, has_flag
from ge.transforms import deferred_weights
from ge.transforms.deferred_weights import broadcast_head
from ge.transforms.graph_utils import (
    constant_data,
    constant_value,
    elem_of,
    erase_dead,
    loc_name,
    make_constant,
    shape_of,
    single_user,
)


@dataclass
class Affine:
    """y = x * scale + shift along `axis` of x (vectors in float64; shift None = 0)."""

    x: SSAValue
    scale: np.ndarray | None
    shift: np.ndarray | None


def _channel_vector(c: np.ndarray, out_shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """`c` as a vector along `axis` of `out_shape`, if it is constant along every other
    axis and broadcasting it does not enlarge the result."""
    if c.ndim > len(out_shape) or c.size == 0:
        return None
    aligned = (1,) * (len(out_shape) - c.ndim) + c.shape
    for i, (d, o) in enumerate(zip(aligned, out_shape)):
        if d != 1 and (i != axis or d != o):
            return None
    vec = c.reshape(-1) if c.size > 1 else np.full(out_shape[axis], c.reshape(-1)[0])
    return vec.astype(np.float64)


def _affine_of(op: Operation, axis_of) -> Affine | None:
    """The per-channel affine map `op` applies to its non-constant operand.

    `axis_of(x)` gives the channel axis for the producer of x (None: not foldable)."""
    if isinstance(op, graph.BatchNormOp):
        params = [constant_value(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if any(p is None for p in params) or axis_of(op.input) != 1:
            return None
        scale, bias, mean, var = (p.astype(np.float64) for p in params)
        s = scale / np.sqrt(var + get_float(op.properties, "epsilon"))
        return Affine(op.input, s, bias - mean * s)
    if not isinstance(op, graph.MulOp | graph.AddOp | graph.SubOp):
        return None
    pairs = [(op.lhs, op.rhs)] if isinstance(op, graph.SubOp) else [(op.lhs, op.rhs), (op.rhs, op.lhs)]
    for x, c in pairs:
        value = constant_value(c)
        axis = axis_of(x)
        if value is None or axis is None or x.type != op.output.type:
            continue
        vec = _channel_vector(value, shape_of(x), axis)
        if vec is None:
            continue
        if isinstance(op, graph.MulOp):
            return Affine(x, vec, None)
        return Affine(x, None, vec if isinstance(op, graph.AddOp) else -vec)
    return None


def _scale_of(a: Affine, n: int) -> np.ndarray:
    return a.scale if a.scale is not None else np.ones(n)


def _shift_of(a: Affine, n: int) -> np.ndarray:
    return a.shift if a.shift is not None else np.zeros(n)


def _producer_axis(x: SSAValue) -> int | None:
    """The channel axis of the foldable producer of x (a single-use conv / gemm / matmul /
    batch_norm with constant weights), else None."""
    p = x.owner
    if not isinstance(p, graph.Conv2dOp | graph.GemmOp | graph.MatMulOp | graph.BatchNormOp):
        return None
    if single_user(x) is None or not dtypes.is_float(elem_of(x)):
        return None
    if isinstance(p, graph.Conv2dOp):
        ok = constant_data(p.weight) is not None and (p.bias is None or constant_value(p.bias) is not None)
        return 1 if ok else None
    if isinstance(p, graph.GemmOp):
        ok = constant_data(p.b) is not None and (p.c is None or constant_value(p.c) is not None)
        return 1 if ok else None
    if isinstance(p, graph.MatMulOp):
        b = constant_data(p.rhs)
        ok = b is not None and len(b.shape) == 2 and len(shape_of(x)) >= 2
        return len(shape_of(x)) - 1 if ok else None
    params = [constant_value(v) for v in (p.scale, p.bias, p.mean, p.var)]
    return 1 if all(v is not None for v in params) else None


def _rounded(arr: np.ndarray, like: SSAValue) -> np.ndarray:
    """float64 arithmetic rounded once to the type of `like`."""
    return arr.astype(dtypes.numpy_dtype(elem_of(like)))


def _scaled(w: np.ndarray, s: np.ndarray, like: SSAValue) -> np.ndarray:
    """`_rounded(w.astype(float64) * s, like)` without the float64 copies of a weight:
    numpy's multiply computes in float64 chunk by chunk and rounds each product once into
    the result (the same bits; resnet50's weights were two 200 MB temporaries)."""
    return _scaled_to(w, s, dtypes.numpy_dtype(elem_of(like)))


def _scaled_to(w: np.ndarray, s: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`_scaled` rounded to `dtype` (no IR read: it runs on the background thread)."""
    out = np.empty(np.broadcast_shapes(w.shape, s.shape), dtype)
    return np.multiply(w, s, dtype=np.float64, out=out, casting="same_kind")


def _scaled_constant(w: np.ndarray | Deferred, s: np.ndarray, like: SSAValue, name: str,
                     at: Operation) -> graph.ConstantOp:
    """A constant holding weight `w` scaled by `s` (broadcast), rounded once to the type
    of `like`; computed on the background thread (transforms/deferred_weights.py)."""
    dtype = dtypes.numpy_dtype(elem_of(like))
    shape = np.broadcast_shapes(w.shape, s.shape)
    if isinstance(w, Deferred) and w.shape == shape:
        w_head = head_of(w)
    else:
        w = value_of(w)
        w_head = broadcast_head(w, shape)
    head = _scaled_to(w_head, broadcast_head(s, shape), dtype)
    return deferred_weights.constant(_scaled_to, (w, s, dtype), shape, dtypes.element_type(dtype), head, name, at)


class FoldAffineIntoProducer(RewritePattern):
    """BatchNorm / Mul / Add / Sub by per-channel constants -> rewritten producer weights."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        a = _affine_of(op, _producer_axis)
        if a is None:
            return
        p = a.x.owner
        assert isinstance(p, Operation)
        if isinstance(p, graph.Conv2dOp):
            new_ops = _fold_conv(p, a)
        elif isinstance(p, graph.GemmOp):
            new_ops = _fold_gemm(p, a)
        elif isinstance(p, graph.MatMulOp):
            new_ops = _fold_matmul(p, a)
        else:
            assert isinstance(p, graph.BatchNormOp)
            new_ops = _fold_batch_norm(p, a)
        if not new_ops:
            return
        operands = list(op.operands)
        rewriter.replace(op, new_ops, [new_ops[-1].results[0]])
        erase_dead(rewriter, operands)


def _fold_conv(conv: graph.Conv2dOp, a: Affine) -> list[Operation]:
    w = constant_data(conv.weight)
    assert w is not None
    m = w.shape[0]
    s, t = _scale_of(a, m), _shift_of(a, m)
    b = constant_value(conv.bias) if conv.bias is not None else np.zeros(m)
    assert b is not None
    name = loc_name(conv)
    w_new = _scaled_constant(w, s[:, None, None, None], conv.weight, f"{name}_w", conv)
    b_new = make_constant(_rounded(b.astype(np.float64) * s + t, conv.output), None, f"{name}_b", conv)
    new = graph.Conv2dOp.make([conv.input, w_new.output, b_new.output], dict(conv.properties))
    new.location = conv.location
    return [w_new, b_new, new]


class OneBiasForSummedConvs(RewritePattern):
    """`conv(x, Wa, ba) + conv(y, Wb, bb)` -> `conv(x, Wa, ba + bb) + conv(y, Wb)`: a sum of
    two convs (ResNet's projection shortcut and its block's last conv, after their
    BatchNorms folded) carries one bias. The same algebra (one rounding of the bias sum),
    one bias add fewer, and the form in which `fuse` may compute the sum as one GEMM of the
    two K's concatenated (fuse.py `_k_partner`): the accumulator then adds one bias."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.AddOp | graph.SumOp) or len(op.operands) != 2:
            return
        a, b = (v.owner for v in op.operands)
        if not (isinstance(a, graph.Conv2dOp) and isinstance(b, graph.Conv2dOp)) or a is b:
            return
        if a.bias is None or b.bias is None or any(single_user(c.output) is not op for c in (a, b)):
            return
        ba, bb = constant_value(a.bias), constant_value(b.bias)
        if ba is None or bb is None or ba.shape != bb.shape or not dtypes.is_float(elem_of(a.output)):
            return
        bias = make_constant(_rounded(ba.astype(np.float64) + bb.astype(np.float64), a.bias), None,
                             f"{loc_name(a)}_b", a)
        new_a = graph.Conv2dOp.make([a.input, a.weight, bias.output], dict(a.properties))
        new_b = graph.Conv2dOp.make([b.input, b.weight, None], dict(b.properties))
        new_a.location, new_b.location = a.location, b.location
        old = [a.bias, b.bias]
        rewriter.replace(a, [bias, new_a], [new_a.output])
        rewriter.replace(b, [new_b], [new_b.output])
        erase_dead(rewriter, old)


def _fold_gemm(gemm: graph.GemmOp, a: Affine) -> list[Operation]:
    b = constant_data(gemm.b)
    assert b is not None
    n = shape_of(gemm.output)[1]
    s, t = _scale_of(a, n), _shift_of(a, n)
    trans_b = has_flag(gemm.properties, "trans_b")
    beta = get_float(gemm.properties, "beta")
    c = constant_value(gemm.c) if gemm.c is not None else None
    c_new = t if c is None or beta == 0.0 else c.astype(np.float64) * beta * s + t
    name = loc_name(gemm)
    ops: list[Operation] = [_scaled_constant(b, s[:, None] if trans_b else s[None, :], gemm.b, f"{name}_b", gemm)]
    c_op = None
    if gemm.c is not None or np.any(t != 0):
        c_op = make_constant(_rounded(c_new, gemm.output), None, f"{name}_c", gemm)
        ops.append(c_op)
    props = dict(gemm.properties)
    props["beta"] = float_attr(1.0)
    new = graph.GemmOp.make([gemm.a, ops[0].results[0], c_op.output if c_op else None], props)
    new.location = gemm.location
    return [*ops, new]


def _fold_matmul(mm: graph.MatMulOp, a: Affine) -> list[Operation]:
    b = constant_data(mm.rhs)
    assert b is not None
    n = b.shape[1]
    s, t = _scale_of(a, n), _shift_of(a, n)
    shifted = bool(np.any(t != 0))
    if shifted and len(shape_of(mm.lhs)) != 2:
        return []  # a bias on a batched matmul stays a separate add (decided before the weights are scaled)
    name = loc_name(mm)
    b_op = _scaled_constant(b, s[None, :], mm.rhs, f"{name}_b", mm)
    if not shifted:
        new = graph.MatMulOp.make([mm.lhs, b_op.output])
        new.location = mm.location
        return [b_op, new]
    c_op = make_constant(_rounded(t, mm.output), None, f"{name}_c", mm)
    props = {"alpha": float_attr(1.0), "beta": float_attr(1.0)}
    new = graph.GemmOp.make([mm.lhs, b_op.output, c_op.output], props)
    new.location = mm.location
    return [b_op, c_op, new]


def _fold_batch_norm(bn: graph.BatchNormOp, a: Affine) -> list[Operation]:
    scale, bias = constant_value(bn.scale), constant_value(bn.bias)
    assert scale is not None and bias is not None
    n = scale.shape[0]
    s, t = _scale_of(a, n), _shift_of(a, n)
    name = loc_name(bn)
    scale_op = make_constant(_rounded(scale.astype(np.float64) * s, bn.scale), None, f"{name}_scale", bn)
    bias_op = make_constant(_rounded(bias.astype(np.float64) * s + t, bn.bias), None, f"{name}_bias", bn)
    new = graph.BatchNormOp.make([bn.input, scale_op.output, bias_op.output, bn.mean, bn.var], dict(bn.properties))
    new.location = bn.location
    return [scale_op, bias_op, new]


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold BatchNorm and per-channel Mul/Add into Conv/Gemm/MatMul/BatchNorm weights."""

    name = "fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldAffineIntoProducer()).rewrite_module(op)
        PatternRewriteWalker(OneBiasForSummedConvs()).rewrite_module(op)
