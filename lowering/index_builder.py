"""Appending ops to a kernel body with index arithmetic that folds constants.

The base of `KernelBuilder` (tile level, lowering/tile_ir.py) and `IsaBuilder` (isa level,
lowering/isa_builder.py): constants are created once at the top of the kernel, and
`x * 1`, `x + 0`, `c1 * c2` never reach the IR, so a kernel stays tens of ops.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

Index = int | SSAValue  # a static or a dynamic index


class IndexBuilder:
    """Appends ops at `at` (the current insertion block) of a kernel whose body is `top`."""

    # Reuse an identical binary op already built in the same block (tile emitters ask for
    # the same offsets many times); the isa builder keeps every op the caller asks for.
    MEMOIZE: ClassVar[bool] = False

    def __init__(self, top: Block):
        self.top = top
        self.at = top
        self.constants: dict[tuple[int, Attribute], SSAValue] = {}
        self.memo: dict[tuple, SSAValue] = {}
        self._anchor: Operation | None = None

    def add(self, op: Operation) -> Operation:
        self.at.add_op(op)
        return op

    def const(self, value: int, ty: Attribute | None = None) -> SSAValue:
        """An index (or `ty`) constant, created once at the top of the kernel."""
        ty = ty or IndexType()
        key = (int(value), ty)
        if key not in self.constants:
            op = arith.ConstantOp(IntegerAttr(int(value), ty))
            if ty == IndexType():
                op.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            self.insert_at_top(op, self._anchor)
            self._anchor = op
            self.constants[key] = op.result
        return self.constants[key]

    def insert_at_top(self, op: Operation, after: Operation | None) -> None:
        """Put `op` in the kernel's top block right after `after`, or first without it."""
        if after is not None:
            self.top.insert_op_after(op, after)
        elif self.top.first_op is None:
            self.top.add_op(op)
        else:
            self.top.insert_op_before(op, self.top.first_op)

    @contextmanager
    def loop(self, lo: Index, hi: Index, step: int = 1, name: str = "i",
             attributes: dict[str, Attribute] | None = None) -> Iterator[SSAValue]:
        """`scf.for` from lo to hi; ops built inside the `with` go into its body."""
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = name
        op = self.add(scf.ForOp(self.value(lo), self.value(hi), self.const(step), [], Region(body)))
        op.attributes.update(attributes or {})
        outer = self.at
        self.at = body
        try:
            yield body.args[0]
        finally:
            body.add_op(scf.YieldOp())
            self.at = outer

    def value(self, x: Index) -> SSAValue:
        return self.const(x) if isinstance(x, int) else x

    def _binary(self, cls, a: Index, b: Index, name: str | None = None) -> SSAValue:
        key = (cls, self.value(a), self.value(b), self.at)
        if self.MEMOIZE and (hit := self.memo.get(key)) is not None:
            return hit
        op = self.add(cls(self.value(a), self.value(b)))
        if name:
            op.results[0].name_hint = name
        if self.MEMOIZE:
            self.memo[key] = op.results[0]
        return op.results[0]

    def add_(self, a: Index, b: Index, name: str | None = None) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._binary(arith.AddiOp, a, b, name)

    def sub(self, a: Index, b: Index, name: str | None = None) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self._binary(arith.SubiOp, a, b, name)

    def mul(self, a: Index, b: int, name: str | None = None) -> Index:
        if isinstance(a, int):
            return a * b
        if b == 1:
            return a
        if b == 0:
            return 0
        return self._binary(arith.MuliOp, a, b, name)

    def div(self, a: Index, b: int, name: str | None = None) -> Index:
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        return self._binary(arith.DivUIOp, a, b, name)

    def rem(self, a: Index, b: int, name: str | None = None) -> Index:
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        return self._binary(arith.RemUIOp, a, b, name)

    def min_(self, a: Index, b: Index, name: str | None = None) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self._binary(arith.MinUIOp, a, b, name)
