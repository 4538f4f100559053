"""insert-sync's cheaper bookkeeping (issue 17) gives what the code it replaced gave:
`isa_analysis.Positions` (numbered from `kernel_ops` by id) the same numbers, ends and gaps
as `Linear.of`'s walk; `_bounds` the same loop bounds as the IRDL accessors; `_tails` the
paths' suffixes; and `instructions` (window operands read once per op, forms memoized by
id) the same accesses as the accessor path -- on the insert-sync lit kernels."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects import scf

from ge.dialects import isa
from ge.ir import parse_module
from ge.transforms import insert_sync as sync
from ge.transforms import isa_analysis as ia
from ge.transforms.plan_local_memory import module_target

HERE = Path(__file__).parent
LIT_CASES = [c for c in (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
             if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]


def _kernels(modules=None):
    for module in modules if modules is not None else (parse_module(text) for text in LIT_CASES):
        for k in module.walk():
            if isinstance(k, isa.KernelOp):
                yield module, k


def _compiled():
    """A compiled model's isa kernels before insert-sync (test_kernel_dedup's repeated blocks)."""
    sys.path.insert(0, str(HERE))
    from test_insert_sync_spans import repeated_blocks_isa

    return [repeated_blocks_isa()]


def _block_ops(kernel, ops):
    out = {id(kernel.body.block): []}
    for op in ops:
        out[id(op.parent)].append(op)
        for r in op.regions:
            for b in r.blocks:
                out[id(b)] = []
    return out


def _positions_match_linear(modules=None) -> tuple[int, int]:
    checked = loops = 0
    for _, k in _kernels(modules):
        ops = ia.kernel_ops(k.body.block)
        lin, pos = ia.Linear.of(k), ia.Positions(ops, _block_ops(k, ops))
        assert pos.last == lin.last
        for op in ops:
            assert pos.first(op) == lin.first(op)
            assert pos.last_in(op) == lin.last_in(op), op.name
            loops += isinstance(op, scf.ForOp)
        for block in [k.body.block, *(b for op in ops for r in op.regions for b in r.blocks)]:
            for i in range(len(list(block.ops)) + 1):
                assert pos.gap(block, i) == lin.gap(block, i)
        checked += 1
    return checked, loops


def test_positions_match_linear():
    checked, loops = _positions_match_linear()
    assert checked >= 9 and loops >= 4, (checked, loops)


def _bounds_match(modules=None) -> int:
    seen = 0
    for _, k in _kernels(modules):
        for op in ia.kernel_ops(k.body.block):
            if isinstance(op, scf.ForOp):
                assert ia._bounds(op) == [ia._static(v) for v in (op.lb, op.ub, op.step)]
                seen += 1
    return seen


def test_bounds_match_the_accessors():
    assert _bounds_match() >= 4


@pytest.mark.slow
def test_positions_and_bounds_on_a_compiled_model():
    modules = _compiled()
    checked, loops = _positions_match_linear(modules)
    assert checked >= 3 and loops > 10, (checked, loops)
    assert _bounds_match(modules) > 10
    for module, k in _kernels(modules):  # and the same plan with the memo shared or not
        target = module_target(module)
        ops = ia.kernel_ops(k.body.block)
        a, b = sync.plan_sync(k, target, ia.Patterns(), ops), sync.plan_sync(k, target, None, ops)
        assert (a.sets, a.waits, a.barriers) == (b.sets, b.waits, b.barriers)
        assert a.sets and a.waits


def test_tails():
    assert sync._tails([3, 1, 4]) == [(3, 1, 4), (1, 4), (4,)]
    assert sync._tails([7]) == [(7,)]
    assert sync._tails([]) == []


def test_instructions_match_the_accessor_path(monkeypatch):
    """The accesses `instructions` resolves with its shortcuts equal those of a run where
    `_windowed` reads the window through the accessor and the forms are not memoized."""

    def plain(module, k):
        target = module_target(module)
        return [(i.op, i.pipe, i.path, [(a.key, a.base, a.size, a.offset, a.lo, a.hi, a.write, a.buffer, a.rects, a.span)
                                        for a in i.accesses]) for i in ia.instructions(k, target)]

    fast = [plain(m, k) for m, k in _kernels()]
    windowed = ia._windowed
    monkeypatch.setattr(ia, "_windowed", lambda op, a, form, bounds, window=None: windowed(op, a, ia.affine, bounds))
    slow = [plain(m, k) for m, k in _kernels()]
    assert len(fast) >= 9 and sum(len(k) for k in fast) > 30
    # (the kernels are parsed again: compare by structure, not by op identity)
    assert [[(i[1], len(i[2]), [x[:3] + x[4:7] + x[8:] for x in i[3]]) for i in k] for k in fast] == \
           [[(i[1], len(i[2]), [x[:3] + x[4:7] + x[8:] for x in i[3]]) for i in k] for k in slow]


def test_plans_match_with_barrier_and_search_shortcuts():
    """`plan_sync` on every lit kernel, twice (fresh memo each time): the same plan -- and
    the plan `insert_sync` puts in place is the lit file's (checked by `lit`)."""
    for module, k in _kernels():
        target = module_target(module)
        ops = ia.kernel_ops(k.body.block)
        if sync._has_sync(ops):
            continue
        a = sync.plan_sync(k, target, ia.Patterns(), ops)
        b = sync.plan_sync(k, target, None, ops)
        assert (a.sets, a.waits, a.barriers) == (b.sets, b.waits, b.barriers)
