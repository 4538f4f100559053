"""`isa_vector.row_plan` (the tiler's question "which reduction plan will the lowering take")
is memoized in the compile's scope (dialects/interning.py's `intern_scope`, the memo Cube
plans use), not in a module global: nothing outlives a compile, another target object with
a reused id is not a hit, and the region-less planner (`_PlanOnly`) reads the target's
Vector figures through the same helper as the lowering."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ge import targets
from ge.dialects.interning import intern_scope, scope_memo
from ge.lowering import isa_vector
from ge.lowering.isa_vector import _ROW_PLAN_MEMO, _PlanOnly, row_plan

ARGS = ("sum", 16, 768, 16 * 384, False, 2)  # BERT's f16 LayerNorm tile: the sums of x and x^2


def test_memo_lives_in_the_compile_scope():
    t = targets.load_target("ascend910")
    assert not hasattr(isa_vector, "_ROW_PLANS")
    with intern_scope():
        plan = row_plan(t, *ARGS)
        memo = scope_memo(_ROW_PLAN_MEMO)
        assert [v for v in memo.values()] == [(t, plan)]
        assert row_plan(t, *ARGS) is plan  # a hit: the same tuple
    assert scope_memo(_ROW_PLAN_MEMO) is None  # dropped with the scope
    assert row_plan(t, *ARGS) == plan  # outside a scope: planned each time, same answer


def test_compile_fills_and_drops_the_memo():
    import ge
    from ge.testing import encoder_layer_model

    with intern_scope():
        ge.compile(encoder_layer_model(), ge.CompileOptions(keep_ir_text=False))
        kept = dict(scope_memo(_ROW_PLAN_MEMO))
    assert kept  # the tiler asked (the encoder layer's LayerNorms and Softmax)
    assert scope_memo(_ROW_PLAN_MEMO) is None


def test_another_target_with_a_stale_key_is_planned_afresh():
    t = targets.load_target("ascend910")
    # the same figures but far dearer group reductions: group_plan takes none of them
    dear = replace(t, vector_cost={**t.vector_cost, "vcgadd": {"f16": 1000, "f32": 1000, "default": 1000}})
    with intern_scope():
        plan = row_plan(t, *ARGS)
        assert plan is not None and "cg" in plan
        memo = scope_memo(_ROW_PLAN_MEMO)
        (key,) = memo
        memo[(id(dear), *key[1:])] = memo[key]  # as if `dear` had reused t's id
        assert row_plan(dear, *ARGS) != plan


@pytest.mark.parametrize("name", ["ascend910", "ascend910b"])
def test_plan_only_takes_the_lowerings_target_fields(name):
    t = targets.load_target(name)
    p = _PlanOnly(t)
    vec = t.vector
    assert (p.target, p.startup, p.bpr, p.block, p.max_rep, p.per_blocks) == (
        t, t.startup.vector, vec.bytes_per_repeat, vec.block_bytes, vec.max_repeats,
        vec.bytes_per_repeat // vec.block_bytes)
