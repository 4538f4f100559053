"""fast_verify's walk checks the operand counts, types, properties and attributes of one op
signature (class and the identities of those attributes) once per `verify`; an op whose
signature passed still runs its traits and its own verifier. Here one instruction of a
repeated signature gets an out-of-bounds offset (same types, same properties), and both
xDSL's `module.verify()` and `fast_verify.verify` refuse it with the same message."""

from __future__ import annotations

import sys
from pathlib import Path

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr

from ge.dialects import isa

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import test_fast_verify  # noqa: E402
from test_verify_walk import _both  # noqa: E402

levels = test_fast_verify.levels  # the fixture: a compiled model's graph-, tile- and isa-level modules


def _signature(op) -> tuple:
    """What `fast_verify._Walk` keys an op's checks by."""
    return (type(op), tuple(id(v.type) for v in op.operands), tuple(id(r.type) for r in op.results),
            tuple(op.properties), tuple(id(a) for a in op.properties.values()),
            tuple(op.attributes), tuple(id(a) for a in op.attributes.values()))


def _copy_out_of_bounds(first, role):
    """A copy of `first` right after it (the same signature), its `role` offset a constant
    far past its buffer, of the very same index type object; undone by the returned call."""
    op = first.clone()
    old = op.offset_of(role)
    bad = arith.ConstantOp(IntegerAttr(1 << 40, old.type))
    index = next(i for i, v in enumerate(op.operands) if v is old)
    op.operands = (*op.operands[:index], bad.result, *op.operands[index + 1:])
    block = first.parent
    block.insert_ops_after([bad, op], first)
    assert _signature(op) == _signature(first)  # (so the walk has passed op's signature at `first`)

    def undo():
        block.detach_op(op).erase()
        block.detach_op(bad).erase()

    return undo


def test_a_passed_signature_still_runs_the_ops_verifier(levels):
    module = levels["isa"]
    refused = 0
    for first in [op for op in module.walk() if isinstance(op, isa.InstructionOp)]:
        for role in first.BUFFERS:
            if first.offset_of(role) is None:
                continue
            undo = _copy_out_of_bounds(first, role)
            try:
                xdsl, fast = _both(module)
            finally:
                undo()
            assert fast == xdsl
            refused += xdsl is not None and "are outside its" in xdsl[1]  # (a window's reads are not bounded)
    assert refused >= 1
    assert _both(module) == (None, None)  # restored
