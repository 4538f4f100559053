"""insert-sync builds its sync ops field by field (`sync_op`) and links them into the blocks
directly (`_link`), not through `Operation.create` and `Block.insert_op_before` (issue 17:
their setters and checks were most of `_emit`): the ops must be what `create` makes, and the
blocks' op lists must stay consistent both ways."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import IntegerAttr, i64

from ge.dialects import isa
from ge.ir import parse_module, print_module, run_passes
from ge.transforms import insert_sync as sync

HERE = Path(__file__).parent
LIT_CASES = [c for c in (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
             if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]


def _flag_props() -> dict:
    return {"src_pipe": isa.PipeAttr(isa.Pipe.V), "dst_pipe": isa.PipeAttr(isa.Pipe.MTE3), "event": IntegerAttr(2, i64)}


@pytest.mark.parametrize("cls, props", [(isa.SetFlagOp, _flag_props()), (isa.WaitFlagOp, _flag_props()),
                                        (isa.PipeBarrierOp, {"pipe": isa.PipeAttr(isa.Pipe.V)})])
def test_sync_op_is_created_op(cls, props):
    mine, theirs = sync.sync_op(cls, props), cls.create(properties=props)
    assert vars(mine).keys() == vars(theirs).keys()
    for name, value in vars(theirs).items():
        assert getattr(mine, name) == value, name
    assert mine.properties is not props and mine.parent is None and mine.next_op is None and mine.prev_op is None
    mine.verify()
    assert str(mine) == str(theirs)


def _blocks(op):
    for o in op.walk():
        for r in o.regions:
            yield from r.blocks


def _consistent(module) -> int:
    """The number of sync ops; asserts every block's list is the same forwards and backwards."""
    n = 0
    for b in _blocks(module):
        forward = list(b.ops)
        backward = []
        o = b.last_op
        while o is not None:
            backward.append(o)
            o = o.prev_op
        assert forward == backward[::-1]
        assert (b.first_op is None) == (not forward)
        assert all(o.parent is b for o in forward)
        n += sum(isinstance(o, isa.SYNC_OPS) for o in forward)
    return n


@pytest.mark.parametrize("text", LIT_CASES[:12])
def test_emitted_blocks_are_linked_both_ways(text):
    module = parse_module(text)
    run_passes(module, "insert-sync")
    module.verify()
    _consistent(module)
    again = parse_module(print_module(module))  # the text reads back as the same module
    assert print_module(again) == print_module(module)


def test_link_at_start_middle_and_end():
    module = parse_module(LIT_CASES[0])
    kernel = next(op for op in module.walk() if isinstance(op, isa.KernelOp))
    block = kernel.body.block
    ops = list(block.ops)
    make = sync.sync_op
    first = [make(isa.PipeBarrierOp, {"pipe": isa.PipeAttr(isa.Pipe.V)}) for _ in range(2)]
    middle = [make(isa.PipeBarrierOp, {"pipe": isa.PipeAttr(isa.Pipe.MTE2)})]
    last = [make(isa.PipeBarrierOp, {"pipe": isa.PipeAttr(isa.Pipe.MTE3)}) for _ in range(3)]
    sync._link(block, first, None, ops[0])
    sync._link(block, middle, ops[0], ops[1] if len(ops) > 1 else None)
    sync._link(block, last, ops[-1], None)
    got = list(block.ops)
    assert got[:2] == first and got[2] is ops[0] and got[3] is middle[0] and got[-3:] == last
    assert len(got) == len(ops) + 6
    assert _consistent(module) == 6
