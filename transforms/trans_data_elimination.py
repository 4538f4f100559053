"""`eliminate-trans-data`: removes format conversions the layout level does not need (GE's
TransOpSymmetryEliminationPass, TransOpBreadthFusionPass and TransOpWithoutReshapeFusionPass,
ascend.md §4.3). Within the layout level; one pattern per rewrite:

- a conversion of a constant (or of a value computed from constants only) becomes a new
  constant holding the converted data;
- a conversion of a conversion: back to the original type cancels, to a third format
  becomes one direct conversion;
- identical sibling conversions of one value are merged into the first;
- conversions are pushed through elementwise ops so that they meet their inverse and
  cancel: down, when an op on a converted value has its result converted back; up, when a
  conversion of an op's result leads back (through single-use elementwise ops) to values
  converted from the target format. Other operands are converted along when they are
  constants (at compile time) or single elements (no conversion needed).

A conversion that some consumer still needs stays: only its other uses are rewired.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import Pure

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.runtime.reference import evaluate
from ge.transforms.layout_utils import (
    CONSTANT,
    broadcast_type,
    fold_constant,
    formatted,
    has_padding,
    new_constant,
    padding_fill,
    padding_of,
    rebuild,
    scalar_value,
    single_element,
    trans_data,
    verifies,
)

# Largest subgraph of constant-only ops evaluated to fold a conversion of its result.
_MAX_FOLD_OPS = 16


def _constant_subgraph(v: SSAValue) -> list[Operation] | None:
    """The ops computing `v` from `graph.constant`s only, in order (at most _MAX_FOLD_OPS),
    or None if `v` depends on anything else."""
    ops: list[Operation] = []
    seen: set[Operation] = set()

    def visit(value: SSAValue) -> bool:
        op = value.owner
        if op in seen:
            return True
        if not isinstance(op, g.GraphOp | g.ConstantOp) or not op.has_trait(Pure) or op.regions:
            return False
        seen.add(op)
        if not all(visit(o) for o in op.operands) or len(ops) >= _MAX_FOLD_OPS:
            return False
        ops.append(op)
        return True

    return ops if visit(v) else None


def _discard(ops: list[Operation]) -> None:
    """Erase ops built for a rewrite that was abandoned (they still use the IR's values)."""
    for op in reversed(ops):
        op.erase()


def _erase_dead(rewriter: PatternRewriter, ops: list[Operation]) -> None:
    """Erase those of `ops` (in definition order) that lost their last use."""
    for op in reversed(ops):
        if op.parent is not None and not any(r.uses for r in op.results):
            rewriter.erase(op)


class FoldTransDataOfConstant(RewritePattern):
    """trans_data(constant) -> constant in the converted format."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lt.TransDataOp, rewriter: PatternRewriter, /):
        src = op.input
        if isinstance(src.owner, g.ConstantOp):
            rewriter.replace(op, fold_constant(src.owner, op.output.type))
            _erase_dead(rewriter, [src.owner])
            return
        ops = _constant_subgraph(src)
        if ops is None:
            return
        env: dict[SSAValue, np.ndarray] = {}
        for o in ops:  # the reference interpreter's kernels compute the subgraph
            env.update(zip(o.results, evaluate(o, [env[x] for x in o.operands])))
        rewriter.replace(op, new_constant(evaluate(op, [env[src]])[0], op.output.type, src))
        _erase_dead(rewriter, ops)


class CancelInverseTransData(RewritePattern):
    """trans_data(trans_data(x)) -> x when it converts back, else one direct conversion."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lt.TransDataOp, rewriter: PatternRewriter, /):
        inner = op.input.owner
        if not isinstance(inner, lt.TransDataOp):
            return
        x = inner.input
        if x.type == op.output.type:
            rewriter.replace(op, [], [x])
        else:
            direct = trans_data(x, op.output.type)
            if not verifies(direct):
                _discard([direct])
                return
            rewriter.replace(op, direct)
        if not inner.output.uses:
            rewriter.erase(inner)


class MergeSiblingTransData(RewritePattern):
    """Identical conversions of one value: the later ones reuse the first (breadth fusion)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lt.TransDataOp, rewriter: PatternRewriter, /):
        for use in op.input.uses:
            other = use.operation
            if (other is not op and isinstance(other, lt.TransDataOp) and other.output.type == op.output.type
                    and other.parent is op.parent and other.is_before_in_block(op)):
                rewriter.replace(op, [], [other.output])
                return


def _format(t) -> tuple[lt.Format | None, lt.Format]:
    """(storage format or None for plain, origin format) of a type."""
    enc = lt.layout_of(t)
    return (enc.fmt, enc.origin_fmt) if enc is not None else (None, lt.Format.ND)


def _is_elementwise(op) -> bool:
    return isinstance(op, g.GraphOp) and lt.is_elementwise(op) and len(op.results) == 1


def _converted_from(v: SSAValue, fmt: lt.Format | None, origin: lt.Format) -> bool:
    """`v` is a conversion of a value that has the type `v` would have in `fmt`."""
    return isinstance(v.owner, lt.TransDataOp) and v.owner.input.type == formatted(v.type, fmt, origin)


def _leads_back(op: Operation, fmt: lt.Format | None, origin: lt.Format) -> bool:
    """Every operand of elementwise `op` is free to have in `fmt` (a constant, a single
    element, a conversion from `fmt`, or the result of a single-use elementwise op that
    leads back itself), and at least one is a conversion from `fmt` somewhere up."""
    rank = op.results[0].type.get_num_dims()
    found = False
    for v in op.operands:
        if _converted_from(v, fmt, origin):
            found = True
        elif _is_elementwise(v.owner) and v.has_one_use() and _leads_back(v.owner, fmt, origin):
            found = True
        elif not (isinstance(v.owner, g.ConstantOp) or single_element(v, rank)):
            return False
    return found


def _operands_in(e: Operation, fmt: lt.Format | None, origin: lt.Format, hoist: bool):
    """E's operands in format `fmt` and the ops that make some of them (constants converted
    at compile time; with `hoist`, conversions of single-use elementwise results that lead
    back), or None if an operand cannot be had in `fmt` that way, or E's padding there
    would not be finite (`padding_fill`; its constants are padded so that it is)."""
    rank = e.results[0].type.get_num_dims()
    operands: list[SSAValue | tuple[g.ConstantOp, TensorType]] = []
    new_ops, pads = [], []
    memo: dict[SSAValue, float | None] = {}
    for v in e.operands:
        want = broadcast_type(v.type, fmt, origin, rank)  # (a constant gains the dims of 1 it needs)
        if want is None:
            return None
        same_rank = lt.logical_type(want).get_num_dims() == v.type.get_num_dims()
        if single_element(v, rank):
            operands.append(v)
            pads.append(scalar_value(v))
        elif v.type == want:
            operands.append(v)
            pads.append(padding_of(v, memo))
        elif isinstance(v.owner, lt.TransDataOp) and v.owner.input.type == want:
            operands.append(v.owner.input)
            pads.append(padding_of(v.owner.input, memo))
        elif isinstance(v.owner, g.ConstantOp):
            operands.append((v.owner, want))
            pads.append(CONSTANT)
        elif hoist and same_rank and _is_elementwise(v.owner) and v.has_one_use() and _leads_back(v.owner, fmt, origin):
            new_ops.append(trans_data(v, want))
            operands.append(new_ops[-1].results[0])
            pads.append(0.0)
        else:
            _discard(new_ops)
            return None
    fill = 0.0
    if has_padding(formatted(e.results[0].type, fmt, origin)):
        fill = padding_fill(e, pads)
        if fill is None:
            _discard(new_ops)
            return None
    for i, o in enumerate(operands):
        if isinstance(o, tuple):
            new_ops.append(fold_constant(*o, fill))
            operands[i] = new_ops[-1].results[0]
    return operands, new_ops


def _old_operands(e: Operation) -> list[Operation]:
    """The conversions and constants feeding `e`: dead once `e` is rebuilt without them."""
    return [v.owner for v in e.operands if isinstance(v.owner, lt.TransDataOp | g.ConstantOp)]


class HoistTransDataAboveElementwise(RewritePattern):
    """trans_data(E(...)) where E is elementwise, used only by the conversion, and leads
    back to values converted from the target format: E computes in the target format and
    the conversion moves onto E's operands, on its way to its inverse."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lt.TransDataOp, rewriter: PatternRewriter, /):
        e = op.input.owner
        if not _is_elementwise(e) or not e.results[0].has_one_use():
            return
        fmt, origin = _format(op.output.type)
        if formatted(e.results[0].type, fmt, origin) != op.output.type or not _leads_back(e, fmt, origin):
            return
        planned = _operands_in(e, fmt, origin, hoist=True)
        if planned is None:
            return
        operands, new_ops = planned
        new_op = rebuild(e, operands, [op.output.type])
        if not verifies(new_op):
            _discard([*new_ops, new_op])
            return
        old = _old_operands(e)
        rewriter.insert([*new_ops, new_op], InsertPoint.before(e))
        rewriter.replace(op, [], [new_op.results[0]])
        rewriter.erase(e)
        _erase_dead(rewriter, old)


class PushTransDataBelowElementwise(RewritePattern):
    """E(trans_data(x), ...) whose result is converted back to x's format: compute E in
    x's format instead. Other operands must be conversions from that format, constants
    (converted at compile time) or single elements. Consumers that need E's old format get
    one conversion of the new result."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not _is_elementwise(op):
            return
        source = next((v.owner.input for v in op.operands if isinstance(v.owner, lt.TransDataOp)), None)
        if source is None:
            return
        fmt, origin = _format(source.type)
        result = op.results[0]
        new_type = formatted(result.type, fmt, origin)
        if new_type is None or new_type == result.type:
            return
        back = [u.operation for u in result.uses
                if isinstance(u.operation, lt.TransDataOp) and u.operation.output.type == new_type]
        if not back:
            return
        planned = _operands_in(op, fmt, origin, hoist=False)
        if planned is None:
            return
        operands, new_ops = planned
        new_op = rebuild(op, operands, [new_type])
        if not verifies(new_op):
            _discard([*new_ops, new_op])
            return
        old = _old_operands(op)
        rewriter.insert([*new_ops, new_op], InsertPoint.before(op))
        for u in back:
            rewriter.replace(u, [], [new_op.results[0]])
        if result.uses:
            rewriter.replace(op, trans_data(new_op.results[0], result.type))
        else:
            rewriter.erase(op)
        _erase_dead(rewriter, old)


class EraseDeadTransData(RewritePattern):
    """A conversion nobody uses."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: lt.TransDataOp, rewriter: PatternRewriter, /):
        if not op.output.uses:
            rewriter.erase(op)


@dataclass(frozen=True)
class EliminateTransDataPass(ModulePass):
    """Cancel, merge, push and fold `layout.trans_data` (see the module docstring)."""

    name = "eliminate-trans-data"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    FoldTransDataOfConstant(),
                    CancelInverseTransData(),
                    MergeSiblingTransData(),
                    PushTransDataBelowElementwise(),
                    HoistTransDataAboveElementwise(),
                    EraseDeadTransData(),
                ],
                dce_enabled=False,
            ),
        ).rewrite_module(op)

