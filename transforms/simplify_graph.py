"""`simplify-graph`: remove ops that compute nothing and merge chains of data-movement ops.

Graph level (DESIGN.md §2), part of `graph-optimize` from level 2, in the spirit of GE's
shape_optimize / TransOpSymmetryElimination passes and onnxruntime's basic-level
eliminations (Identity, Dropout, Unsqueeze/Reshape chains, Transpose pairs, Gemm fixes):

- `graph.identity`, `graph.dropout` (inference), one-input `graph.sum/max/min/mean`,
  one-input `graph.concat`, a cast to the same type, and reshapes, expands, tiles, pads,
  slices and transposes that leave their input as it is -> the input;
- a chain of reshape / flatten / squeeze / unsqueeze -> one `graph.reshape` to the final
  shape; a reshape's shape operand becomes the static result shape (no 0 or -1 left);
- transpose of a transpose -> one transpose with the composed permutation, or nothing
  when the two are inverse;
- a cast of a cast whose first step is exact (a widening: f16 -> f32, i8 -> i32,
  i16 -> f32, ...) -> one cast, or nothing when it converts back to the first type;
- `x * 1`, `1 * x`, `x / 1`, `x + 0`, `0 + x`, `x - 0` with a constant of all ones / zeros
  that does not broadcast `x` to a larger shape -> x (`-0.0 + 0.0` is `+0.0`, so `x + 0`
  can turn a negative zero positive; no other value changes);
- `graph.gemm` with a constant B: `trans_b` and `alpha` are folded into B, and with a
  constant C `beta` is folded into C, so every Gemm that reaches the Cube is `A @ B + C`.

Each rewrite removes what it made dead and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, IntegerType, ModuleOp, Signedness, UnitAttr, i1, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ge.dialects import graph
from ge.dialects.graph import float_attr, get_float, get_ints, has_flag
from ge.transforms.graph_utils import (
    constant_value,
    elem_of,
    erase_dead,
    loc_name,
    make_constant,
    shape_of,
    single_user,
)

VIEW_OPS = (graph.ReshapeOp, graph.FlattenOp, graph.SqueezeOp, graph.UnsqueezeOp)


def _forward(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace `op`'s single result by `value` and drop what that leaves dead."""
    operands = list(op.operands)
    rewriter.replace(op, [], [value])
    erase_dead(rewriter, operands)


def _is_noop(op: Operation) -> SSAValue | None:
    """The value `op` passes through unchanged, if it is a no-op."""
    if isinstance(op, graph.IdentityOp | graph.DropoutOp):
        return op.input
    if isinstance(op, graph.VariadicOp | graph.ConcatOp) and len(op.inputs) == 1:
        x = op.inputs[0]
    elif isinstance(op, graph.CastOp | graph.ExpandOp | graph.TileOp | graph.PadOp | graph.SliceOp | graph.TransposeOp):
        x = op.input
    elif isinstance(op, VIEW_OPS):
        x = op.input
    else:
        return None
    if x.type != op.results[0].type:
        return None
    if isinstance(op, graph.SliceOp) and any(s != 1 for s in get_ints(op.properties, "steps")):
        return None  # a reversal keeps the shape
    if isinstance(op, graph.TransposeOp) and list(get_ints(op.properties, "perm")) != sorted(get_ints(op.properties, "perm")):
        return None  # swaps two dims of equal size
    if isinstance(op, graph.PadOp) and any(get_ints(op.properties, "pads")):
        return None  # pads one side and crops the other
    return x


class RemoveNoOp(RewritePattern):
    """Identity, Dropout, one-input Sum/Max/Min/Mean/Concat, and ops that keep their input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (x := _is_noop(op)) is not None:
            _forward(rewriter, op, x)


def _shape_constant(shape: tuple[int, ...], like: Operation) -> graph.ConstantOp:
    return make_constant(np.array(shape, dtype=np.int64), i64, f"{loc_name(like)}_shape", like=like)


class MergeViewChain(RewritePattern):
    """reshape/flatten/squeeze/unsqueeze of one of those -> one reshape; and a reshape's
    shape operand -> the static result shape."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, VIEW_OPS):
            return
        out = shape_of(op.results[0])
        inner = op.input.owner
        if not isinstance(inner, VIEW_OPS):
            if not isinstance(op, graph.ReshapeOp):
                return
            current = constant_value(op.shape)
            static = current is not None and tuple(int(d) for d in current) == out
            if static and (op.allowzero is not None) == (0 in out):
                return
        source = inner.input if isinstance(inner, VIEW_OPS) else op.input
        shape = _shape_constant(out, op)
        # A 0 in the shape copies the input dim unless `allowzero`: say what we mean.
        props = {"allowzero": UnitAttr()} if 0 in out else {}
        new = graph.ReshapeOp.make([source, shape.output], props, [None, np.array(out, dtype=np.int64)])
        new.location = op.location
        operands = list(op.operands)
        rewriter.replace(op, [shape, new])
        erase_dead(rewriter, operands)


class MergeTransposes(RewritePattern):
    """transpose(transpose(x, p1), p2) -> transpose(x, p1[p2]) or x when that is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.TransposeOp):
            return
        p1, p2 = get_ints(inner.properties, "perm"), get_ints(op.properties, "perm")
        perm = [p1[i] for i in p2]
        if perm == sorted(perm):
            _forward(rewriter, op, inner.input)
            return
        if single_user(inner.output) is not op:
            return  # merging would keep both transposes
        new = graph.TransposeOp.make([inner.input], {"perm": graph.int_array(perm)})
        new.location = op.location
        rewriter.replace(op, new)
        erase_dead(rewriter, [inner.output])


def _exact(a: Attribute, b: Attribute) -> bool:
    """Every value of element type `a` is a value of element type `b`."""
    if a == b or a == i1:
        return True
    if not isinstance(a, IntegerType | AnyFloat) or not isinstance(b, IntegerType | AnyFloat) or b == i1:
        return False
    if isinstance(a, AnyFloat):
        return isinstance(b, AnyFloat) and a.bitwidth < b.bitwidth
    if isinstance(b, AnyFloat):
        return a.width.data <= {16: 11, 32: 24, 64: 53}[b.bitwidth]  # integers the mantissa holds
    unsigned_a = a.signedness.data == Signedness.UNSIGNED
    unsigned_b = b.signedness.data == Signedness.UNSIGNED
    if unsigned_a == unsigned_b:
        return a.width.data < b.width.data
    return unsigned_a and a.width.data < b.width.data


class MergeCasts(RewritePattern):
    """cast(cast(x, A -> B), B -> C) with an exact first step -> cast(x, A -> C), or x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.CastOp) or not _exact(elem_of(inner.input), elem_of(inner.output)):
            return
        if inner.input.type == op.output.type:
            _forward(rewriter, op, inner.input)
            return
        new = graph.CastOp.to(inner.input, elem_of(op.output))
        new.location = op.location
        rewriter.replace(op, new)
        erase_dead(rewriter, [inner.output])


def _all_equal(v: SSAValue, value: float) -> bool:
    arr = constant_value(v)
    return arr is not None and arr.size > 0 and bool(np.all(arr == value))


class RemoveNeutralOperand(RewritePattern):
    """x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 -> x (when that keeps x's type)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, graph.MulOp):
            candidates = [(op.lhs, op.rhs, 1), (op.rhs, op.lhs, 1)]
        elif isinstance(op, graph.AddOp):
            candidates = [(op.lhs, op.rhs, 0), (op.rhs, op.lhs, 0)]
        elif isinstance(op, graph.DivOp):
            candidates = [(op.lhs, op.rhs, 1)]
        elif isinstance(op, graph.SubOp):
            candidates = [(op.lhs, op.rhs, 0)]
        else:
            return
        for x, c, neutral in candidates:
            if x.type == op.output.type and _all_equal(c, neutral):
                _forward(rewriter, op, x)
                return


class NormalizeGemm(RewritePattern):
    """Gemm with a constant B: fold trans_b and alpha into B; with a constant C fold beta
    into C (numpy on the weights, once)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter, /) -> None:
        if not (has_flag(op.properties, "trans_b") or get_float(op.properties, "alpha") != 1.0
                or (op.c is not None and get_float(op.properties, "beta") != 1.0)):
            return  # nothing to fold (no weight read: it may still be computed aside)
        b = constant_value(op.b)
        if b is None:
            return
        c = constant_value(op.c) if op.c is not None else None
        alpha, beta = get_float(op.properties, "alpha"), get_float(op.properties, "beta")
        trans_b = has_flag(op.properties, "trans_b")
        drop_c = op.c is not None and beta == 0.0
        fold_c = not drop_c and c is not None and beta != 1.0
        if not (trans_b or alpha != 1.0 or drop_c or fold_c):
            return
        name = loc_name(op)
        new_ops: list[Operation] = []
        wt = b.T if trans_b else b
        if alpha != 1.0:
            wt = wt.astype(np.float64) * alpha
        w = make_constant(wt, elem_of(op.b), f"{name}_b", like=op)
        new_ops.append(w)
        c_value = None if drop_c else op.c
        if fold_c:
            cc = make_constant(c.astype(np.float64) * beta, elem_of(op.c), f"{name}_c", like=op)
            new_ops.append(cc)
            c_value = cc.output
        props = dict(op.properties)
        props.pop("trans_b", None)
        props["alpha"] = float_attr(1.0)
        if drop_c or fold_c:
            props["beta"] = float_attr(1.0)
        new = graph.GemmOp.make([op.a, w.output, c_value], props)
        new.location = op.location
        new_ops.append(new)
        operands = list(op.operands)
        rewriter.replace(op, new_ops, [new.output])
        erase_dead(rewriter, operands)


PATTERNS: tuple[RewritePattern, ...] = (
    RemoveNoOp(), MergeViewChain(), MergeTransposes(), MergeCasts(), RemoveNeutralOperand(), NormalizeGemm(),
)


@dataclass(frozen=True)
class SimplifyGraphPass(ModulePass):
    """Remove no-op ops and merge view / transpose chains (see the module docstring)."""

    name = "simplify-graph"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=False)).rewrite_module(op)
