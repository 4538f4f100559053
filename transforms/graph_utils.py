"""Helpers shared by the graph-level passes (constant-fold, simplify-graph, fold-batch-norm,
precision-mode, graph-optimize): reading constant operands, making new constants that keep
the replaced op's location, and op histograms for the debug summary.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable

import numpy as np
from xdsl.dialects.builtin import ModuleOp, NameLoc, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import Rewriter

from ge.dialects import dtypes, graph
from ge.dialects.blobs import (
    INLINE_LIMIT,
    Deferred,
    attr_value,
    constant_attr,
    dense_attr,
    value_of,
)

# A discardable attribute that keeps an op out of constant folding (GE's
# `_do_not_constant_folding`): `graph.add %a, %b {ge.no_fold}`.
NO_FOLD_ATTR = "ge.no_fold"


def constant_value(v: SSAValue) -> np.ndarray | None:
    """The value of `v` if a `graph.constant` defines it, else None."""
    data = constant_data(v)
    return None if data is None else value_of(data)


def constant_data(v: SSAValue) -> np.ndarray | Deferred | None:
    """`constant_value`, but a weight still computed on the background thread as it is
    (dialects/blobs.py `Deferred`, not waited for)."""
    if not isinstance(v.owner, graph.ConstantOp):
        return None
    try:
        return attr_value(v.owner.value)
    except (KeyError, ValueError):  # a dense_resource without data: not a usable constant
        return None


def is_splat(arr: np.ndarray) -> bool:
    """All elements equal (NaN never is): such constants print as `dense<v>` at any size."""
    if arr.size <= 1:
        return True
    if arr.flat[1] != arr.flat[0]:  # a weight, nearly always: no pass over all of it (BERT-base's f16 copies)
        return False
    return bool(np.all(arr == arr.reshape(-1)[0]))


def loc_name(op: Operation) -> str:
    """A name for what `op` makes: the ONNX node name it carries as its location
    (`loc("conv1")`), else its result's name, else its kind."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if op.results and op.results[0].name_hint:
        return op.results[0].name_hint
    return op.name.split(".")[-1]


def make_constant(arr: np.ndarray, elem: Attribute | None, name: str, like: Operation | None = None) -> graph.ConstantOp:
    """A `graph.constant` holding `arr` (converted to `elem` if given).

    Weights go to a `dense_resource` blob named after `name`; small values and splats (every
    element equal, e.g. a folded ConstantOfShape) are inline `dense` attributes, so a
    folded constant never costs more text than the ops it replaces. The new op takes the
    location of `like` so ONNX node names survive.
    """
    arr = np.asarray(arr)
    elem = elem if elem is not None else dtypes.element_type(arr.dtype)
    arr = arr.astype(dtypes.numpy_dtype(elem), copy=False)
    t = graph.tensor(elem, arr.shape)
    if arr.size > INLINE_LIMIT and is_splat(arr):
        attr = dense_attr(arr.reshape(-1)[:1], t)
    else:
        attr = constant_attr(np.ascontiguousarray(arr), t, name)
    op = graph.ConstantOp(attr)
    op.output.name_hint = value_name(name)
    if like is not None:
        op.location = like.location
    return op


def value_name(name: str) -> str:
    """`name` as a printable SSA name hint (`%conv1_w`)."""
    out = re.sub(r"[^\w$.-]", "_", name)
    return out if out and not out[0].isdigit() else "v" + out


def tensor_type(v: SSAValue) -> TensorType:
    t = v.type
    assert isinstance(t, TensorType)
    return t


def shape_of(v: SSAValue) -> tuple[int, ...]:
    return tuple(tensor_type(v).get_shape())


def elem_of(v: SSAValue) -> Attribute:
    return tensor_type(v).element_type


def build_form_operands(op: Operation) -> list:
    """The operands grouped per operand definition, as `GraphOp.make` takes them: a value,
    None for an absent optional operand, a list for a variadic one."""
    out = []
    for name, _ in type(op).get_irdl_definition().operands:
        v = getattr(op, name)
        out.append(list(v) if v is not None and not isinstance(v, SSAValue) else v)
    return out


def single_user(v: SSAValue) -> Operation | None:
    """The one op using `v`, if it has exactly one use."""
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


def erase_dead(rewriter: PatternRewriter | None, values: Iterable[SSAValue]) -> None:
    """Erase the graph ops (constants included) among `values`' owners that have lost
    their last use, and then their own producers that this leaves unused.

    Patterns call it on the operands of an op they replaced, so they remove exactly what
    they made dead and nothing else (pre-existing dead code is `dce`'s business).
    """
    work = list(values)
    while work:
        owner = work.pop().owner
        if (
            isinstance(owner, graph.ConstantOp | graph.GraphOp)
            and owner.parent is not None
            and all(not r.uses for r in owner.results)
        ):
            work.extend(owner.operands)
            if rewriter is None:
                Rewriter.erase_op(owner)
            else:
                rewriter.erase(owner)


# --------------------------------------------------------------------------------------
# Histograms (the debug summary)
# --------------------------------------------------------------------------------------


def histogram(module: ModuleOp) -> collections.Counter[str]:
    """How many ops of each kind the module holds (graph ops without the `graph.` prefix)."""
    out: collections.Counter[str] = collections.Counter()
    for op in module.walk():
        if op.name.startswith("graph."):
            out[op.name[len("graph."):]] += 1
    return out


def compute_ops(hist: collections.Counter[str]) -> int:
    """Graph ops other than constants."""
    return sum(n for k, n in hist.items() if k != "constant")


def format_histogram(hist: collections.Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))


def format_delta(before: collections.Counter[str], after: collections.Counter[str]) -> str:
    """`batch_norm -53, constant_of_shape -239, constant +12` (only what changed)."""
    keys = sorted(set(before) | set(after), key=lambda k: (-(abs(after[k] - before[k])), k))
    parts = [f"{k} {after[k] - before[k]:+d}" for k in keys if after[k] != before[k]]
    return ", ".join(parts) if parts else "no change"
