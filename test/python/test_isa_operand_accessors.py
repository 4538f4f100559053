"""The isa ops' named operand accessors (dialects/isa.py `_SegmentAccessor`, which decode
the segment sizes once per distinct sizes) return what the segment sizes say: every named
operand of every op in the dialect's round-trip test, an operand replaced in place, and
the verifiers that read operands by name still refuse bad IR."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.irdl import AttrSizedOperandSegments, OptOperandDef, VarOperandDef
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from ge.dialects import isa
from ge.ir import make_context

OPS = Path(__file__).resolve().parents[1] / "dialects" / "isa" / "ops.mlir"


def _module(text: str):
    return Parser(make_context(), text).parse_module()


def _expected(op, name: str):
    """The operand `name` of `op` from its segment sizes, counted here by hand."""
    defs = op.get_irdl_definition().operands
    sizes = op.properties["operandSegmentSizes"].get_values()
    i = [n for n, _ in defs].index(name)
    start, size = sum(sizes[:i]), sizes[i]
    d = defs[i][1]
    values = list(op.operands)[start:start + size]
    if isinstance(d, OptOperandDef):
        return values[0] if values else None
    if isinstance(d, VarOperandDef):
        return values
    assert size == 1
    return values[0]


def _segmented(module):
    return [op for op in module.walk() if isinstance(op, isa.InstructionOp)
            and any(isinstance(o, AttrSizedOperandSegments) for o in op.get_irdl_definition().options)]


def test_every_named_operand_matches_its_segment():
    module = _module(OPS.read_text())
    ops = _segmented(module)
    assert len(ops) >= 30
    checked = optional_present = variadic = 0
    for op in ops:
        for name, d in op.get_irdl_definition().operands:
            got, want = getattr(op, name), _expected(op, name)
            if isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef):
                assert list(got) == want, (op.name, name)
                variadic += bool(want)
            else:
                assert got is want, (op.name, name)
                optional_present += isinstance(d, OptOperandDef) and want is not None
            checked += 1
    assert checked > 100 and optional_present >= 3 and variadic >= 2


def test_accessor_follows_a_replaced_operand():
    module = _module(OPS.read_text())
    vadd = next(op for op in module.walk() if isinstance(op, isa.VAddOp))
    src0, src1 = vadd.src0, vadd.src1
    assert vadd.src1_offset is not None and vadd.src0_offset is None
    vadd.operands[1] = src1  # dst, src0, src0_offset absent: operand 1 is src0
    assert vadd.src0 is src1 and vadd.src1 is src1 and vadd.dst is not src0
    with pytest.raises(NotImplementedError):
        vadd.src0 = src0


KERNEL = """builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<256xf16, #isa.space<gm>>) outs(%y: memref<256xf16, #isa.space<gm>>) block_dim 1 {
    %c = arith.constant OFFSET : index
    %a, %b = isa.buffer offset 0 slots 2 : memref<256xf16, #isa.space<ub>>
    isa.vadd %b, %a, %a[%c] repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}"""


@pytest.mark.parametrize(("offset", "error"), [
    (128, None),
    (192, "src1 elements [192, 320) are outside its 256 elements"),
    (8, "src1 offset 8 is not 32-byte aligned"),
])
def test_verifier_still_reads_operands_by_name(offset, error):
    """vadd's src1 offset (an optional operand after two others) is checked: its rectangle
    must fit the buffer and start on a 32-byte block."""
    module = _module(KERNEL.replace("OFFSET", str(offset)))
    if error is None:
        module.verify()
    else:
        with pytest.raises(VerifyException, match=re.escape(error)):
            module.verify()
