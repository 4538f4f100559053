"""Helpers shared by the layout-level passes (lowering/assign_layouts.py,
transforms/trans_data_elimination.py): conversions folded into constants, `trans_data`
with readable value names, and graph ops rebuilt on other storage formats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.blobs import (
    INLINE_LIMIT,
    Deferred,
    attr_array,
    attr_value,
    constant_attr,
    defer,
    value_of,
    worth_deferring,
)
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.layout import Format
from ge.runtime import layouts


def suffix(t: Attribute, source: Attribute | None = None) -> str:
    """Short name of a type's format for value names: `nc1hwc0`, `fractal_z`; a plain
    type converted from `source` is named after the origin format (`nchw`, `nd`)."""
    enc = lt.layout_of(t) or lt.layout_of(source)
    if enc is None:
        return "nd"
    return (enc.format if lt.layout_of(t) is not None else enc.origin_format).data.lower()


def value_name(v: SSAValue, t: Attribute) -> str | None:
    """`%x` converted to `t` is `%x_<format>` (suffixes do not stack: `%x_nc1hwc0` back
    to plain is `%x_nchw`)."""
    base = v.name_hint
    if base is None:
        return None
    for f in Format:
        if base.endswith("_" + f.lower()):
            base = base[: -len(f) - 1]
            break
    return f"{base}_{suffix(t, v.type)}"


def new_constant(data: np.ndarray | Deferred, want: TensorType, source: SSAValue) -> g.ConstantOp:
    """A `graph.constant` of type `want` holding `data`: the value `source` converted at
    compile time, named (`%w_fractal_z`) and located after it."""
    name = f"{source.name_hint or 'cst'}_{suffix(want, source.type)}"
    if not isinstance(data, Deferred):
        data = np.ascontiguousarray(data)
    new = g.ConstantOp(constant_attr(data, want, name))
    new.output.name_hint = value_name(source, want)
    if isinstance(source.owner, Operation):
        new.location = source.owner.location
    return new


def fold_constant(const: g.ConstantOp, want: TensorType, fill: float = 0.0) -> g.ConstantOp:
    """`const`'s value in type `want` (converted by the runtime's format functions); a
    plain constant may also gain leading dims of 1 on the way (see `broadcast_type`), and
    its padding holds `fill` instead of the format's 0 (see `padding_fill`). A weight is
    converted on the background thread (dialects/blobs.py `Deferred`)."""
    data, have = attr_value(const.value), const.output.type
    logical = lt.logical_type(want)
    assert isinstance(logical, TensorType)
    if lt.layout_of(have) is None and have.get_shape() != logical.get_shape():
        have = logical
    size = math.prod(want.get_shape())
    if size <= INLINE_LIMIT or not worth_deferring(size * data.dtype.itemsize, data):
        return new_constant(_converted(value_of(data), have, want, fill), want, const.output)
    shape = tuple(want.get_shape())
    return new_constant(defer(_converted, data, have, want, fill, shape=shape, dtype=data.dtype), want, const.output)


def _converted(data: np.ndarray, have: TensorType, want: TensorType, fill: float) -> np.ndarray:
    """`data` (of `have`, or of its shape) converted to `want`, its padding `fill`."""
    data = data.reshape(have.get_shape())
    out = layouts.convert(data, have, want)
    if fill:
        valid = layouts.convert(np.ones_like(data), have, want)  # 1 where the tensor is, 0 in the padding
        out = np.where(valid != 0, out, np.asarray(fill, out.dtype))
    return np.ascontiguousarray(out)


# A padding operand of `padding_fill`: a constant converted at compile time (its padding is
# ours to pick).
CONSTANT = "constant"
# Values a single element known only at run time is tried with.
_RUNTIME_SCALARS = (1.0, -1.0, 0.5)


def has_padding(t: Attribute) -> bool:
    """A storage-formatted type whose storage holds more elements than its origin."""
    enc = lt.layout_of(t)
    return enc is not None and math.prod(t.get_shape()) > math.prod(enc.shape)


def _on_padding(op: Operation, values: Sequence[float]) -> float:
    """What elementwise `op` computes from operand elements `values` (its reference kernel)."""
    from ge.runtime.reference import KERNELS

    args = [np.full((1,), x, dtype=numpy_dtype(v.type.element_type)) for x, v in zip(values, op.operands)]
    with np.errstate(all="ignore"):
        return float(np.asarray(KERNELS[type(op)](op, *args)).astype(np.float64).flat[0])


def scalar_value(v: SSAValue) -> float | None:
    """The value of a single-element constant, None for anything else."""
    if isinstance(v.owner, g.ConstantOp) and lt.layout_of(v.type) is None:
        return float(np.asarray(attr_array(v.owner.value), dtype=np.float64).flat[0])
    return None


def padding_of(v: SSAValue, memo: dict[SSAValue, float | None]) -> float | None:
    """The value the padding of storage-formatted `v` holds (None: known only at run time,
    or not one value): 0 from conversions, the Cube, pools; a constant's own; what an
    elementwise op computes from its operands' paddings (a plain operand there is a single
    element that broadcasts into the padding)."""
    if v in memo:
        return memo[v]
    owner = v.owner
    value: float | None = 0.0
    if not has_padding(v.type):
        pass
    elif isinstance(owner, g.ConstantOp):
        data = attr_array(owner.value)
        logical = lt.logical_type(v.type)
        valid = layouts.to_storage(np.ones(logical.get_shape(), data.dtype), v.type)
        pad = np.unique(np.asarray(data)[valid == 0])
        value = float(pad[0]) if pad.size == 1 else None
    elif isinstance(owner, g.GraphOp) and lt.is_elementwise(owner) and owner.results[0] is v:
        pads = [padding_of(o, memo) if lt.layout_of(o.type) is not None else scalar_value(o) for o in owner.operands]
        value = None if any(p is None for p in pads) else _on_padding(owner, pads)
    memo[v] = value
    return value


def padding_fill(op: Operation, pads: Sequence[float | str | None]) -> float | None:
    """An elementwise op in a padded storage format computes on the padding too, where
    operand i holds `pads[i]`: a value (`padding_of`, `scalar_value`), None (known only
    at run time) or CONSTANT. The padding must stay finite: the Cube sums over a padded K
    (the zero-padded weight times it), and 0 * NaN is NaN (e.g. x / c in FRACTAL_NZ: 0 / 0
    in the padding; fuzz seed 1731). Returns the value to pad the CONSTANT operands with --
    0 (the format's own), else 1 (a divisor) -- or None when the result's padding is not
    finite either way (the op then computes on plain tensors)."""
    from ge.runtime.reference import KERNELS

    if type(op) not in KERNELS:
        return None
    for fill in (0.0, 1.0):
        samples = _RUNTIME_SCALARS if None in pads else (0.0,)
        if all(math.isfinite(_on_padding(op, [fill if p == CONSTANT else x if p is None else p for p in pads]))
               for x in samples):
            return fill
        if CONSTANT not in pads:
            return None
    return None


def trans_data(v: SSAValue, want: TensorType) -> lt.TransDataOp:
    op = lt.TransDataOp(v, want)
    op.output.name_hint = value_name(v, want)
    return op


def formatted(t: TensorType, fmt: Format | None, origin: Format) -> TensorType | None:
    """The logical tensor of `t` in storage format `fmt` (None: plain), or None when the
    format cannot hold it (wrong rank)."""
    plain = lt.logical_type(t)
    assert isinstance(plain, TensorType)
    if fmt is None:
        return plain
    try:
        return lt.encode(plain, fmt, origin)
    except VerifyException:
        return None


def broadcast_type(t: TensorType, fmt: Format | None, origin: Format, rank: int) -> TensorType | None:
    """A broadcast operand of type `t` in `fmt` against a result of `rank` dims: `formatted`,
    at the origin rank the format needs (`layout.broadcast_rank`: leading dims of 1 added)."""
    plain = lt.logical_type(t)
    assert isinstance(plain, TensorType)
    if fmt is not None:
        want = lt.broadcast_rank(fmt, origin, plain.get_num_dims(), rank)
        if want != plain.get_num_dims():
            plain = TensorType(plain.element_type, [1] * (want - plain.get_num_dims()) + list(plain.get_shape()))
    return formatted(plain, fmt, origin)


def single_element(v: SSAValue, rank: int) -> bool:
    """A plain operand of at most `rank` dims holding one element: it broadcasts the same
    way in every storage format, so an elementwise op takes it as it is."""
    t = v.type
    assert isinstance(t, TensorType)
    return lt.layout_of(t) is None and all(d == 1 for d in t.get_shape()) and t.get_num_dims() <= rank


def rebuild(op: Operation, operands: Sequence[SSAValue], result_types: Sequence[Attribute]) -> Operation:
    """A copy of graph op `op` on other operands and result types (same properties,
    attributes and location); not inserted."""
    new = type(op).create(
        operands=list(operands), result_types=list(result_types),
        properties=dict(op.properties), attributes=dict(op.attributes),
    )
    new.location = op.location
    for old, r in zip(op.results, new.results):
        r.name_hint = old.name_hint
    return new


def verifies(op: Operation) -> bool:
    try:
        op.verify_()
    except VerifyException:
        return False
    return True
