"""Element types the graph level supports, and their numpy counterparts.

ONNX's signed integers map to signless MLIR integers (as in onnx-mlir and torch-mlir's
`onnx` import), unsigned ones to `ui*`, bool to `i1`.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)
ui64 = IntegerType(64, Signedness.UNSIGNED)

_PAIRS: list[tuple[Attribute, np.dtype]] = [
    (f32, np.dtype(np.float32)),
    (f16, np.dtype(np.float16)),
    (f64, np.dtype(np.float64)),
    (i64, np.dtype(np.int64)),
    (i32, np.dtype(np.int32)),
    (i16, np.dtype(np.int16)),
    (i8, np.dtype(np.int8)),
    (i1, np.dtype(np.bool_)),
    (ui8, np.dtype(np.uint8)),
    (ui16, np.dtype(np.uint16)),
    (ui32, np.dtype(np.uint32)),
    (ui64, np.dtype(np.uint64)),
]
_TO_NUMPY = {t: d for t, d in _PAIRS}
_FROM_NUMPY = {d: t for t, d in _PAIRS}


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float16Type | Float32Type | Float64Type | BFloat16Type)


def is_bool(t: Attribute) -> bool:
    return t == i1


def is_integer(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t != i1


def numpy_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype holding values of element type `t`."""
    try:
        return _TO_NUMPY[t]
    except KeyError:
        raise ValueError(f"element type {t} is not supported by the graph level") from None


def element_type(dtype: np.dtype | type) -> Attribute:
    """The MLIR element type for a numpy dtype."""
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"numpy dtype {np.dtype(dtype)} has no graph-level element type") from None


SUPPORTED = tuple(t for t, _ in _PAIRS)
BF16 = bf16
