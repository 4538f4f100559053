"""Integer attributes interned by value, for one compile.

Why: a lowering builds ~10k ops per model, and xDSL rebuilds (and re-checks) the same
`IntegerAttr` and `DenseArrayBase` for each. xDSL attributes are immutable and compare
and hash by value, so handing out one object per value changes nothing in the IR.

The tables live for one compile, not for the process (issue 17: no module-global
caches): `ge.compile` opens an `intern_scope`, and a scope opened inside another shares
the outer one's tables. Outside any scope every call builds a fresh attribute -- the same
value, only slower -- so a pass run on its own (ge-opt, a test) needs no scope.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i32, i64
from xdsl.ir import Attribute


class InternTables:
    """One scope's tables: (value, type) -> IntegerAttr; (values, element type) -> array."""

    __slots__ = ("arrays", "ints", "memos")

    def __init__(self) -> None:
        self.ints: dict[tuple[int, Attribute], IntegerAttr] = {}
        self.arrays: dict[tuple[tuple[int, ...], Attribute], DenseArrayBase] = {}
        self.memos: dict[str, dict] = {}  # other per-compile memos, by name (`scope_memo`)

    def __len__(self) -> int:
        return len(self.ints) + len(self.arrays)


_TABLES: ContextVar[InternTables | None] = ContextVar("ge_intern_tables", default=None)


@contextmanager
def intern_scope() -> Iterator[InternTables]:
    """Intern the attributes built inside the block in one set of tables, dropped when the
    outermost scope ends."""
    outer = _TABLES.get()
    if outer is not None:
        yield outer
        return
    tables = InternTables()
    token = _TABLES.set(tables)
    try:
        yield tables
    finally:
        _TABLES.reset(token)


def scope_memo(name: str) -> dict | None:
    """The current scope's memo `name` (a dict, made on first use; e.g. lowering/tile_cube.py's
    Cube plans by problem), None outside any scope."""
    tables = _TABLES.get()
    return None if tables is None else tables.memos.setdefault(name, {})


def scope_cached(name: str, key: Hashable, make: Callable[[], Any]) -> Any:
    """`make()`, kept under `key` in the current scope's memo `name` (`scope_memo`); made
    each time outside any scope."""
    memo = scope_memo(name)
    if memo is None:
        return make()
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = make()
    return hit


def int_attr(value: int, ty: Attribute = i64) -> IntegerAttr:
    """`IntegerAttr(value, ty)`, interned in the current scope."""
    tables = _TABLES.get()
    if tables is None:
        return IntegerAttr(value, ty)
    key = (value, ty)
    attr = tables.ints.get(key)
    if attr is None:
        attr = tables.ints[key] = IntegerAttr(value, ty)
    return attr


def int_array(values: Sequence[int], elt: Attribute = i64) -> DenseArrayBase:
    """`DenseArrayBase.from_list(elt, values)` (i64 by default), interned in the current scope."""
    key = tuple(int(v) for v in values)
    tables = _TABLES.get()
    if tables is None:
        return DenseArrayBase.from_list(elt, key)
    arr = tables.arrays.get((key, elt))
    if arr is None:
        arr = tables.arrays[(key, elt)] = DenseArrayBase.from_list(elt, key)
    return arr


def segment_sizes(sizes: tuple[int, ...]) -> DenseArrayBase:
    """An `operandSegmentSizes` property (i32) for `sizes` (ints), interned in the current scope."""
    tables = _TABLES.get()
    if tables is None:
        return DenseArrayBase.from_list(i32, sizes)
    key = (sizes, i32)
    arr = tables.arrays.get(key)
    if arr is None:
        arr = tables.arrays[key] = DenseArrayBase.from_list(i32, sizes)
    return arr


__all__ = ["InternTables", "int_array", "int_attr", "intern_scope", "scope_cached", "scope_memo", "segment_sizes"]
