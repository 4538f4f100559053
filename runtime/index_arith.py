"""What the `arith` index ops that loops and offsets use compute, on Python ints.

Shared by the tile interpreter and the isa simulator, which both decode kernels into
closures over integer registers."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.ir import Operation

from ge.errors import GeError

INT_BINARY: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivUIOp: lambda a, b: a // b,
    arith.DivSIOp: lambda a, b: int(a / b),
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.CeilDivUIOp: lambda a, b: -(-a // b),
    arith.CeilDivSIOp: lambda a, b: -(-a // b),
    arith.RemUIOp: lambda a, b: a % b,
    arith.RemSIOp: lambda a, b: a - b * int(a / b),
    arith.MinUIOp: min,
    arith.MinSIOp: min,
    arith.MaxUIOp: max,
    arith.MaxSIOp: max,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
}

# arith.cmpi predicate number -> comparison (signed and unsigned agree on the
# non-negative values index arithmetic produces).
CMPI: dict[int, Callable[[int, int], bool]] = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
    4: lambda a, b: a > b, 5: lambda a, b: a >= b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
    8: lambda a, b: a > b, 9: lambda a, b: a >= b,
}


class IndexOutOfRange(GeError):
    """A Gather index outside [-bound, bound) met at run time."""


def wrap_index(value: int, bound: int) -> int:
    """An ONNX index into a dim of `bound` entries: v in [-bound, 0) counts from the end;
    anything outside [-bound, bound) is an error, never a read of another row."""
    if not -bound <= value < bound:
        raise IndexOutOfRange(f"index {value} is out of range [-{bound}, {bound})")
    return value + bound if value < 0 else value
