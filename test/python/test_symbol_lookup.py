"""dialects/kernel_base.py's `lookup_symbol` (the launches' kernel lookup) gives xDSL's
answer, with or without the index of `symbols_indexed`, and a launch the verifier refused
before is refused with the same message."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from ge.dialects import isa
from ge.dialects.kernel_base import lookup_symbol, symbols_indexed
from ge.ir import parse_module

MODULE = """
builtin.module {
  isa.kernel @a ins(%x: memref<16xf16, #isa.space<gm>>) outs() block_dim 1 {
  }
  isa.kernel @b ins(%x: memref<8xf16, #isa.space<gm>>) outs() block_dim 1 {
  }
  func.func @main(%p: memref<16xf16>, %q: memref<8xf16>) {
    isa.launch @a ins(%p : memref<16xf16>)
    isa.launch @b ins(%q : memref<8xf16>)
    func.return
  }
}
"""


def _module():
    return parse_module(MODULE)


def _parts(module):
    ops = list(module.body.block.ops)
    launches = [op for op in ops[2].body.block.ops if isinstance(op, isa.LaunchOp)]
    return ops[0], ops[1], launches


def _refused(op) -> str | None:
    try:
        op.verify()
    except VerifyException as e:
        return str(e)
    return None


@pytest.mark.parametrize("indexed", [False, True])
def test_same_answer_as_xdsl(indexed):
    module = _module()
    a, _, (la, _) = _parts(module)
    with symbols_indexed() if indexed else _nothing():
        for name in ("a", "b", "main", "missing"):
            ref = SymbolRefAttr(name)
            assert lookup_symbol(la, ref) is SymbolTable.lookup_symbol(la, ref)
    assert lookup_symbol(la, SymbolRefAttr("a")) is a
    assert lookup_symbol(la, SymbolRefAttr("missing")) is None


@pytest.mark.parametrize("indexed", [False, True])
def test_first_of_two_like_xdsl(indexed):
    module = _module()
    a, b, (la, _) = _parts(module)
    b.properties["sym_name"] = StringAttr("a")  # two @a: the first one is the answer
    with symbols_indexed() if indexed else _nothing():
        assert lookup_symbol(la, SymbolRefAttr("a")) is a is SymbolTable.lookup_symbol(la, SymbolRefAttr("a"))


def test_index_does_not_keep_a_removed_or_renamed_symbol():
    module = _module()
    a, b, (la, lb) = _parts(module)
    with symbols_indexed():
        assert lookup_symbol(la, SymbolRefAttr("a")) is a  # (the index is built)
        a.detach()
        assert lookup_symbol(la, SymbolRefAttr("a")) is None
        b.properties["sym_name"] = StringAttr("c")
        assert lookup_symbol(lb, SymbolRefAttr("b")) is None
        assert lookup_symbol(lb, SymbolRefAttr("c")) is b  # not in the index: found by the scan


def test_the_index_lives_in_its_scope_only():
    module = _module()
    a, b, (la, _) = _parts(module)
    with symbols_indexed():
        assert lookup_symbol(la, SymbolRefAttr("a")) is a  # (the index is built)
    b.detach()
    b.properties["sym_name"] = StringAttr("a")
    module.body.block.insert_op_before(b, a)  # a second @a before the first: now the answer
    assert lookup_symbol(la, SymbolRefAttr("a")) is b is SymbolTable.lookup_symbol(la, SymbolRefAttr("a"))


@pytest.mark.parametrize("indexed", [False, True])
def test_broken_launches_refused_with_the_same_message(indexed):
    module = _module()
    _, _, (la, _) = _parts(module)
    with symbols_indexed() if indexed else _nothing():
        assert _refused(module) is None
        la.properties["callee"] = SymbolRefAttr("missing")
        assert _refused(la) == "no isa.kernel named @missing"
        la.properties["callee"] = SymbolRefAttr("b")  # 16 elements into @b's 8
        assert _refused(la) == "the launch's buffers do not match the arguments of @b"
        la.properties["callee"] = SymbolRefAttr("main")  # a symbol, not a kernel
        assert _refused(la) == "no isa.kernel named @main"
        assert _refused(module) == "no isa.kernel named @main"  # (the module's verify: the launch's error)


class _nothing:  # (contextlib.nullcontext, named for what the test leaves out)
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
