"""`constant-fold`: replace every graph op whose operands are all constants by constants.

Graph level (DESIGN.md §2), the first pass of `graph-optimize`, as GE's ConstantFoldingPass
and DimensionComputePass and onnxruntime's ConstantFolding. Values come from the reference
kernels (`ge.runtime.reference.evaluate`), applied to whole numpy arrays -- a weight
transpose or cast is one numpy call, never a walk over text.

Shape arithmetic folds too: `graph.shape` is a constant because every type is static, so
`Shape -> Gather -> Concat -> Reshape` chains end with a constant shape operand, and
`ConstantOfShape` becomes a (splat) constant.

Not folded:
- ops carrying the discardable attribute `ge.no_fold` (GE's `_do_not_constant_folding`);
- a result that would grow the model: more than `size-limit` elements and more than all
  the op's inputs together, unless every element is the same (a splat prints as
  `dense<v>` at any size);
- an op whose kernel fails on its constant inputs (it is left to fail at run time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ge.dialects import dtypes, graph
from ge.transforms.graph_utils import (
    NO_FOLD_ATTR,
    constant_value,
    elem_of,
    erase_dead,
    is_splat,
    loc_name,
    make_constant,
    shape_of,
)

# Kernel failures that mean "this op cannot be evaluated on these values".
_EVAL_ERRORS = (ValueError, IndexError, TypeError, ArithmeticError, NotImplementedError)


def _shape_only_input(op: graph.ShapeOp) -> np.ndarray:
    """A zero-cost array with the input's shape and dtype: all `graph.shape` reads of it."""
    v = op.input
    return np.broadcast_to(np.zeros((), dtypes.numpy_dtype(elem_of(v))), shape_of(v))


def _result_size(op: Operation) -> int:
    return sum(int(np.prod(shape_of(r), dtype=np.int64)) for r in op.results)


@dataclass
class FoldConstantOp(RewritePattern):
    """Evaluate one op on its constant operands and replace its results by constants."""

    size_limit: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.GraphOp) or NO_FOLD_ATTR in op.attributes:
            return
        if isinstance(op, graph.ShapeOp):
            args = [_shape_only_input(op)]
        else:
            if not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands):
                return  # (no value read: a weight may still be computed aside)
            args = [constant_value(v) for v in op.operands]
            if any(a is None for a in args):
                return
        from ge.runtime.reference import evaluate

        try:
            values = evaluate(op, args)
        except _EVAL_ERRORS:
            return
        grows = _result_size(op) > max(self.size_limit, sum(a.size for a in args if not isinstance(op, graph.ShapeOp)))
        if grows and not all(is_splat(v) for v in values):
            return
        name = loc_name(op)
        new_ops = [
            make_constant(v, elem_of(r), r.name_hint or name, like=op) for v, r in zip(values, op.results)
        ]
        operands = list(op.operands)
        rewriter.replace(op, new_ops, [c.output for c in new_ops])
        erase_dead(rewriter, operands)


@dataclass(frozen=True)
class ConstantFoldPass(ModulePass):
    """Fold every graph op whose operands are constants (see the module docstring)."""

    name = "constant-fold"

    size_limit: int = 1 << 16
    """Largest non-splat result, in elements, that may exceed the op's inputs in size."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldConstantOp(self.size_limit)).rewrite_module(op)
