"""Appending ops to a kernel body with index arithmetic that folds constants.

The base of `KernelBuilder` (tile level, lowering/tile_ir.py) and `IsaBuilder` (isa level,
lowering/isa_builder.py): constants are created once at the top of the kernel, and
`x * 1`, `x + 0`, `c1 * c2` never reach the IR, so a kernel stays tens of ops.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import ClassVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, IRDLOperation

from ge.dialects.interning import int_attr as int_attr  # (the isa emitters import it from here)
from ge.dialects.interning import segment_sizes

Index = int | SSAValue  # a static or a dynamic index

INDEX = IndexType()  # built once: `IndexType()` verifies itself on every construction

# -- building ops and attributes fast ------------------------------------------------------
# Why: a lowering builds ~10k ops per model, and xDSL's IRDL constructors re-check every
# argument and rebuild the same attributes each time. Integer attributes and segment sizes
# are interned by value for the compile (ge/dialects/interning.py).
_SEGMENTED: dict[type, bool] = {}  # op class -> built by `create_op` (static op metadata)


def _segmented(cls: type) -> bool:
    """Whether `cls(...)` is IRDL's generic build of an op with operand segments as a
    property, no results, regions or other options (then `create_op` builds the same op)."""
    known = _SEGMENTED.get(cls)
    if known is None:
        op_def = cls.get_irdl_definition()
        known = (issubclass(cls, IRDLOperation) and not op_def.results and not op_def.regions
                 and not op_def.successors and
                 [o for o in op_def.options if isinstance(o, AttrSizedOperandSegments)] ==
                 [AttrSizedOperandSegments(as_property=True)])
        _SEGMENTED[cls] = known
    return known


def create_op(cls: type[Operation], groups: Sequence[SSAValue | Sequence[SSAValue]],
              properties: Mapping[str, Attribute]) -> Operation:
    """`cls.build(operands=groups, properties=properties)` for an op whose operands are
    sized by an `operandSegmentSizes` property: the same operands, properties (in the same
    order, the segment sizes last) and no results, without IRDL's argument checks (the
    kernel is verified later). Other ops go through `build`."""
    if not _segmented(cls):
        return cls.build(operands=list(groups), properties=dict(properties))
    flat: list[SSAValue] = []
    sizes: list[int] = []
    for g in groups:
        if isinstance(g, SSAValue):
            flat.append(g)
            sizes.append(1)
        else:
            flat.extend(g)
            sizes.append(len(g))
    props = {k: v for k, v in properties.items() if v is not None}
    props[AttrSizedOperandSegments.attribute_name] = segment_sizes(tuple(sizes))
    return cls.create(operands=flat, properties=props)


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
        self._binary_props: dict[type, dict[str, Attribute]] = {}  # each binary op class's properties

    def add(self, op: Operation) -> Operation:
        self.at.add_op(op)
        return op

    def const(self, value: int, ty: Attribute | None = None) -> SSAValue:
        """An index (or `ty`) constant, created once at the top of the kernel."""
        ty = ty or INDEX
        key = (int(value), ty)
        hit = self.constants.get(key)
        if hit is not None:
            return hit
        op = arith.ConstantOp(IntegerAttr(int(value), ty))
        if ty == INDEX:
            op.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
        self.insert_at_top(op, self._anchor)
        self._anchor = op
        self.constants[key] = op.result
        return op.result

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
        body = Block(arg_types=[INDEX])
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
        a, b = self.value(a), self.value(b)
        if self.MEMOIZE:
            key = (cls, a, b, self.at)
            if (hit := self.memo.get(key)) is not None:
                return hit
        props = self._binary_props.get(cls)
        if props is None:  # the first of its class through xDSL's constructor, the rest alike
            op = self.add(cls(a, b))
            self._binary_props[cls] = dict(op.properties)
        else:
            op = self.add(cls.create(operands=(a, b), result_types=(a.type,), properties=props))
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
