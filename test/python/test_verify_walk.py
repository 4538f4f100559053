"""dialects/fast_verify.py's `verify` (what `ge.compile` verifies a module with) gives xDSL's
`module.verify()` verdict: a compiled model's graph-, tile- and isa-level modules pass both,
and a module broken in each way xDSL's walk checks -- an op's own verifier, a launch without
its kernel, a missing terminator, an empty block, an erased operand, a wrong parent
pointer -- is refused by both with the same exception and message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, SymbolRefAttr, i64
from xdsl.ir import Block, ErasedSSAValue

from ge.dialects import fast_verify, isa
from ge.dialects.kernel_base import symbols_indexed

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import test_fast_verify  # noqa: E402

levels = test_fast_verify.levels  # the fixture: a compiled model's graph-, tile- and isa-level modules


def _outcome(fn, module):
    try:
        with symbols_indexed():
            fn(module)
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def _both(module):
    """(xDSL's outcome, fast_verify's outcome) on `module`."""
    return _outcome(lambda m: m.verify(), module), _outcome(fast_verify.verify, module)


@pytest.mark.parametrize("level", ["graph", "tile", "isa"])
def test_valid_modules_pass_both(levels, level):
    assert _both(levels[level]) == (None, None)


def _first(module, cls):
    return next(op for op in module.walk() if isinstance(op, cls))


def _check_refused(module, apply, undo, words: str):
    apply()
    try:
        xdsl, fast = _both(module)
    finally:
        undo()
    assert xdsl is not None and words in xdsl[1], xdsl
    assert fast == xdsl
    assert _both(module) == (None, None)  # restored


def test_an_ops_own_verifier(levels):
    """An event id out of the target's range: the flag's verifier, as xDSL's diagnostic."""
    module = levels["isa"]
    flag = _first(module, isa.SetFlagOp)
    event = flag.properties["event"]
    _check_refused(module, lambda: flag.properties.__setitem__("event", IntegerAttr(99, i64)),
                   lambda: flag.properties.__setitem__("event", event), "event id 99 is out of range")


def test_a_launch_without_its_kernel(levels):
    module = levels["isa"]
    launch = _first(module, isa.LaunchOp)
    callee = launch.properties["callee"]
    _check_refused(module, lambda: launch.properties.__setitem__("callee", SymbolRefAttr("missing")),
                   lambda: launch.properties.__setitem__("callee", callee), "no isa.kernel named @missing")


def test_a_missing_terminator(levels):
    module = levels["isa"]
    loop = _first(module, scf.ForOp)
    block = loop.body.block
    yield_op = block.last_op
    _check_refused(module, lambda: block.detach_op(yield_op), lambda: block.add_op(yield_op),
                   "single-block region but is not a terminator")


def test_an_empty_block(levels):
    module = levels["isa"]
    loop = _first(module, scf.ForOp)
    region = loop.body
    full = region.block
    empty = Block(arg_types=[a.type for a in full.args])

    def apply():
        region.detach_block(full)
        region.add_block(empty)

    def undo():
        region.detach_block(empty)
        region.add_block(full)

    _check_refused(module, apply, undo, "contains empty block")


def test_an_erased_operand(levels):
    module = levels["isa"]
    user = next(op for op in module.walk() if isinstance(op, isa.InstructionOp) and op.operands)
    operands = tuple(user.operands)
    erased = ErasedSSAValue(operands[0].type, operands[0])

    def apply():
        user.operands = (erased, *operands[1:])

    def undo():
        user.operands = operands

    _check_refused(module, apply, undo, "Erased SSA value")


def test_a_wrong_parent_pointer(levels):
    module = levels["isa"]
    loop = _first(module, scf.ForOp)
    op = loop.body.block.first_op
    elsewhere = Block()

    def apply():
        op.parent = elsewhere

    def undo():
        op.parent = loop.body.block

    _check_refused(module, apply, undo, "Parent pointer of operation")


def test_an_op_class_with_its_own_verify_keeps_it(levels, monkeypatch):
    """An op class overriding `verify` itself (a test's counter, a dialect's override) is
    verified through it, as xDSL's walk would."""
    from xdsl.dialects.builtin import ModuleOp

    calls = []
    real = ModuleOp.verify
    monkeypatch.setattr(ModuleOp, "verify", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    fast_verify.verify(levels["graph"])
    assert calls == [1]
