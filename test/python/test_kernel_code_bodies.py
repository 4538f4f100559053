"""kernel_code.partition stores each distinct code once without keying every code: `_Bodies`
gives the index `body_key` (JSON with sorted keys) would -- codes equal but for the order of
their dicts' keys share one body, codes that differ anywhere (even with the same
instructions) are each stored, in order -- and computes `body_key` only for codes that
share a signature."""

from __future__ import annotations

import copy
import random

import pytest

from ge.runtime import kernel_code


def _code(instrs=("isa.vadd", "isa.copy_ub_to_gm"), props=None, block_dim=1, registers=(0, 1)):
    code = [{"op": name, "id": i, "pipe": "V", "opnds": {"dst": [0, None]}} for i, name in enumerate(instrs)]
    if props is not None:
        code[0]["props"] = props
    return {"block_dim": block_dim, "num_ins": 1, "buffers": [[0, 0, 64, "float16"]], "data_dependent": False,
            "args": [["float16", 32]], "registers": list(registers), "instrs": list(instrs), "code": code}


def _reordered(code):
    """The same code with every dict's keys in reverse order."""
    if isinstance(code, dict):
        return {k: _reordered(code[k]) for k in reversed(list(code))}
    if isinstance(code, list):
        return [_reordered(v) for v in code]
    return code


def _by_key(codes, key=kernel_code.body_key):
    """The indexes `body_key` dedup gives (the partition's former rule)."""
    index, out = {}, []
    for c in codes:
        out.append(index.setdefault(key(c), len(index)))
    return out


def test_reordered_codes_share_a_body():
    bodies = kernel_code._Bodies()
    a = _code(props={"a": 1, "b": [2, 3]})
    assert bodies.index(a) == 0
    assert bodies.index(_reordered(copy.deepcopy(a))) == 0
    assert bodies.codes == [a]


@pytest.mark.parametrize("what", ["props", "block_dim", "registers", "instrs"])
def test_different_codes_are_each_stored(what):
    a = _code(props={"a": 1})
    b = {"props": _code(props={"a": 2}), "block_dim": _code(props={"a": 1}, block_dim=2),
         "registers": _code(props={"a": 1}, registers=(0, 5)),
         "instrs": _code(instrs=("isa.vmul", "isa.copy_ub_to_gm"), props={"a": 1})}[what]
    bodies = kernel_code._Bodies()
    assert [bodies.index(a), bodies.index(b), bodies.index(_reordered(b))] == [0, 1, 1]
    assert bodies.codes == [a, b]


def test_same_indexes_as_body_key_dedup(monkeypatch):
    """Random streams of codes (many equal, some reordered): the same indexes as keying every
    code, and `body_key` computed only for codes whose signature was met before (at most
    once per such code and once per stored code)."""
    rng = random.Random(17)
    pool = [_code(instrs=rng.choice([("isa.vadd",), ("isa.vadd", "isa.vmul")]), props={"x": rng.randint(0, 3)},
                  block_dim=rng.randint(1, 2)) for _ in range(12)]
    real = kernel_code.body_key
    keyed: list[int] = []
    monkeypatch.setattr(kernel_code, "body_key", lambda c: (keyed.append(1), real(c))[1])
    for _ in range(20):
        codes = [rng.choice([c, _reordered(c)]) for c in rng.choices(pool, k=15)]
        keyed.clear()
        bodies = kernel_code._Bodies()
        got = [bodies.index(c) for c in codes]
        assert got == _by_key(codes, real)
        seen, repeats = set(), 0
        for c in codes:
            sig = (c["block_dim"], c["num_ins"], len(c["registers"]), tuple(c["instrs"]))
            repeats += sig in seen
            seen.add(sig)
        assert len(keyed) <= repeats + len(bodies.codes)
        assert len(bodies.codes) == max(got) + 1


def test_distinct_signatures_are_never_keyed(monkeypatch):
    monkeypatch.setattr(kernel_code, "body_key", lambda c: pytest.fail("keyed"))
    bodies = kernel_code._Bodies()
    codes = [_code(block_dim=n) for n in range(1, 5)]
    assert [bodies.index(c) for c in codes] == [0, 1, 2, 3]
