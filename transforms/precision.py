"""`precision-mode`: choose the float type each graph op computes in (ATC `--precision_mode`).

Graph level (DESIGN.md §2), the last stage of `graph-optimize`, after folding so that every
weight is converted once. The mode is recorded on the module as `ge.precision_mode`.

- `force_fp16` (ATC's default for inference): every op that computes on f32 tensors
  computes on f16 instead. Weights are converted at compile time (new f16 constants, no
  cast at run time); graph inputs and outputs keep their type through a `graph.cast` at
  the boundary. Cube ops (conv2d, matmul, gemm) still accumulate in f32 and round once:
  that is how the reference kernels evaluate f16 operands.
- `must_keep_origin_dtype`: every op keeps its type (f32 stays f32).
- `allow_mix_precision` (also spelled `allow_mix_precision_fp16`): automatic mixed
  precision from three lists, as ATC's `precision_reduce` flags in the op info library:
  * f16 (white): `WHITE` below -- Cube ops and pools;
  * f32 (black): `BLACK` below -- softmax, log_softmax, layer_norm, lrn, the sum-type
    reductions (reduce_mean/sum/sum_square/l2/prod), exp, log, pow, sqrt;
  * every other op (gray) follows the ops that produce its inputs: f32 when one of them
    computes in f32, else f16 -- and a gray op that feeds a black op, or is fed by one,
    stays f32 (the neighbours of a black op: `x - mean`, `+ eps` around a decomposed
    normalization are never rounded to f16 in between).

Only f32 values change type; f64, f16 and integer tensors are left as they are. A
`graph.cast` never has its input converted (a cast from f32 to an integer converts the
value as computed), and a cast between two float types keeps its types, so running the
pass twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr, TensorType, UnknownLoc, f16, f32
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ge.dialects import dtypes, graph
from ge.dialects.blobs import attr_array, dense_attr, head_of
from ge.dialects.dtypes import numpy_dtype
from ge.transforms.deferred_weights import constant
from ge.transforms.graph_utils import build_form_operands, constant_data, elem_of, erase_dead, value_name

MODE_ATTR = "ge.precision_mode"
MODES = ("force_fp16", "must_keep_origin_dtype", "allow_mix_precision")
ALIASES = {"allow_mix_precision_fp16": "allow_mix_precision"}

WHITE: tuple[type[Operation], ...] = (
    graph.Conv2dOp, graph.MatMulOp, graph.GemmOp,
    graph.MaxPoolOp, graph.AvgPoolOp, graph.GlobalAvgPoolOp, graph.GlobalMaxPoolOp,
)
BLACK: tuple[type[Operation], ...] = (
    graph.SoftmaxOp, graph.LogSoftmaxOp, graph.LayerNormOp, graph.LrnOp,
    graph.ReduceMeanOp, graph.ReduceSumOp, graph.ReduceSumSquareOp, graph.ReduceL2Op, graph.ReduceProdOp,
    graph.ExpOp, graph.LogOp, graph.PowOp, graph.SqrtOp,
)


def normalize_mode(mode: str) -> str:
    """The canonical name of an ATC precision mode (ValueError for an unknown one)."""
    mode = ALIASES.get(mode, mode)
    if mode not in MODES:
        raise ValueError(f"unknown precision mode '{mode}'; expected one of {', '.join(MODES + tuple(ALIASES))}")
    return mode


def _computes_in_f32(op: Operation) -> bool:
    """A graph op that reads or writes an f32 tensor, so a precision mode can change it.

    A cast from one float type to another is left alone: it converts on purpose (a boundary
    cast of an earlier run, a model's own mixed precision); ops around it adapt."""
    if not isinstance(op, graph.GraphOp):
        return False
    if isinstance(op, graph.CastOp) and dtypes.is_float(elem_of(op.input)):
        return False
    return any(isinstance(v.type, TensorType) and elem_of(v) == f32 for v in (*op.operands, *op.results))


def mixed_precision_plan(block_ops: list[Operation]) -> dict[Operation, Attribute]:
    """allow_mix_precision: the float type each op of a block computes in."""
    plan: dict[Operation, Attribute] = {}
    for op in block_ops:
        if not _computes_in_f32(op):
            continue
        if isinstance(op, WHITE):
            plan[op] = f16
        elif isinstance(op, BLACK):
            plan[op] = f32
        else:
            fed_by_f32 = any(plan.get(v.owner) == f32 for v in op.operands if isinstance(v.owner, Operation))
            feeds_black = any(isinstance(u.operation, BLACK) for r in op.results for u in r.uses)
            plan[op] = f32 if fed_by_f32 or feeds_black else f16
    return plan


@dataclass
class ApplyPrecision(RewritePattern):
    """Visit each op once, in order, and give it operands of its planned type.

    A value whose type was f32 before the pass is presented to each op as that op's
    planned type (f32 for ops outside the plan, `func.return` included, so outputs keep
    their type): a converted constant, or one `graph.cast` shared by all such users.
    Planned ops are rebuilt on their new operands, so their results follow.
    """

    plan: dict[Operation, Attribute]
    origin: dict[SSAValue, Attribute] = field(default_factory=dict)
    """Element type before the pass of each value this pass retyped."""
    converted: dict[tuple[SSAValue, Attribute], SSAValue] = field(default_factory=dict)
    sources: list[SSAValue] = field(default_factory=list)
    """Constants that were converted (erased at the end once unused)."""

    def convert(self, v: SSAValue, elem: Attribute, rewriter: PatternRewriter) -> SSAValue:
        """`v` as `elem`: a constant converted at compile time or a `graph.cast`, made once."""
        if elem_of(v) == elem:
            return v
        if (hit := self.converted.get((v, elem))) is not None:
            return hit
        arr = constant_data(v)
        name = f"{v.name_hint or 'v'}_{'f16' if elem == f16 else 'f32'}"
        if arr is not None:  # (a weight's cast on the background thread)
            dtype = numpy_dtype(elem)
            new: Operation = constant(_cast, (arr, dtype), arr.shape, elem, _cast(head_of(arr), dtype), name, v.owner)
            self.sources.append(v)
        else:
            new = graph.CastOp.to(v, elem)
            new.results[0].name_hint = value_name(name)
            new.location = _location_of(v)
        rewriter.insert(new)
        self.converted[(v, elem)] = new.results[0]
        return new.results[0]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, graph.ConstantOp):
            return
        target = self.plan.get(op, f32)
        changed = False

        def present(v: SSAValue) -> SSAValue:
            nonlocal changed
            if not isinstance(v.type, TensorType) or self.origin.get(v, elem_of(v)) != f32 or elem_of(v) == target:
                return v
            if isinstance(op, graph.CastOp):  # a cast converts whatever it is given
                return v
            if isinstance(op, graph.DequantizeOp) and v is op.scale:  # deq scales stay f32 (as GE's)
                return v
            changed = True
            return self.convert(v, target, rewriter)

        if not isinstance(op, graph.GraphOp):
            operands = [present(v) for v in op.operands]
            if changed:
                op.operands = operands
                rewriter.notify_op_modified(op)
            return
        groups = [
            None if g is None else [present(v) for v in g] if isinstance(g, list) else present(g)
            for g in build_form_operands(op)
        ]
        if target == f32 and not changed:
            return
        new = _rebuild(op, groups, target)
        for old, r in zip(op.results, new.results):
            if r.type != old.type:
                self.origin[r] = self.origin.get(old, elem_of(old))
        rewriter.replace(op, new)


def _cast(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return arr.astype(dtype)


def _location_of(v: SSAValue) -> Attribute:
    """Where `v` comes from: its op's location, or a graph input's name (`loc("data_0")`)."""
    if isinstance(v, BlockArgument):
        fn = v.block.parent_op()
        if isinstance(fn, func.FuncOp):
            return NameLoc(StringAttr(graph.argument_names(fn)[v.index]), NoneAttr())
        return UnknownLoc()
    assert isinstance(v.owner, Operation)
    return v.owner.location


def _rebuild(op: graph.GraphOp, operands: list, target: Attribute) -> Operation:
    """`op` again on new operands, its f32 results retyped to `target` (every f32 operand
    is now `target` too, so that is what the op's inference gives)."""
    props = dict(op.properties)
    if isinstance(op, graph.ConstantOfShapeOp) and op.value.get_element_type() == f32:
        value = attr_array(op.value)
        props["value"] = dense_attr(value.astype(numpy_dtype(target)), graph.tensor(target, value.shape))
    types = [graph.tensor(target, r.type.get_shape()) if elem_of(r) == f32 else r.type for r in op.results]
    defs = type(op).get_irdl_definition().results
    result_types = types if len(defs) == len(types) else [types]  # one variadic result group (split)
    new = type(op).build(
        operands=[[] if o is None else o for o in operands],
        result_types=result_types,
        properties=props,
        attributes=dict(op.attributes),
    )
    new.location = op.location
    return new


@dataclass(frozen=True)
class PrecisionModePass(ModulePass):
    """Apply an ATC precision mode to every function (see the module docstring)."""

    name = "precision-mode"

    mode: str = "force_fp16"

    def __post_init__(self) -> None:
        normalize_mode(self.mode)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mode = normalize_mode(self.mode)
        op.attributes[MODE_ATTR] = StringAttr(mode)
        if mode == "must_keep_origin_dtype":
            return
        plan: dict[Operation, Attribute] = {}
        for f in op.walk():
            if not isinstance(f, func.FuncOp) or not f.body.blocks:
                continue
            ops = list(f.body.block.ops)
            if mode == "force_fp16":
                plan.update({o: f16 for o in ops if _computes_in_f32(o)})
            else:
                plan.update(mixed_precision_plan(ops))
        pattern = ApplyPrecision(plan)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        erase_dead(None, pattern.sources)
