"""What the `arith` index ops that loops and offsets use compute, on Python ints.

Shared by the tile interpreter and the isa simulator, which both decode kernels into
closures over integer registers."""

from __future__ import annotations

import operator
from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.ir import Operation

from ge.errors import GeError

INT_BINARY: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: operator.add,  # C functions: cheaper calls than lambdas
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.DivUIOp: operator.floordiv,
    arith.DivSIOp: lambda a, b: int(a / b),
    arith.FloorDivSIOp: operator.floordiv,
    arith.CeilDivUIOp: lambda a, b: -(-a // b),
    arith.CeilDivSIOp: lambda a, b: -(-a // b),
    arith.RemUIOp: operator.mod,
    arith.RemSIOp: lambda a, b: a - b * int(a / b),
    arith.MinUIOp: min,
    arith.MinSIOp: min,
    arith.MaxUIOp: max,
    arith.MaxSIOp: max,
    arith.AndIOp: operator.and_,
    arith.OrIOp: operator.or_,
    arith.XOrIOp: operator.xor,
}

# arith.cmpi predicate number -> comparison (signed and unsigned agree on the
# non-negative values index arithmetic produces).
CMPI: dict[int, Callable[[int, int], bool]] = {
    0: operator.eq, 1: operator.ne, 2: operator.lt, 3: operator.le, 4: operator.gt, 5: operator.ge,
    6: operator.lt, 7: operator.le, 8: operator.gt, 9: operator.ge,
}


class IndexOutOfRange(GeError):
    """A Gather index outside [-bound, bound) met at run time."""


def wrap_index(value: int, bound: int) -> int:
    """An ONNX index into a dim of `bound` entries: v in [-bound, 0) counts from the end;
    anything outside [-bound, bound) is an error, never a read of another row."""
    if not -bound <= value < bound:
        raise IndexOutOfRange(f"index {value} is out of range [-{bound}, {bound})")
    return value + bound if value < 0 else value
