"""Helpers shared by the layout-level passes (lowering/assign_layouts.py,
transforms/trans_data_elimination.py): conversions folded into constants, `trans_data`
with readable value names, and graph ops rebuilt on other storage formats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.blobs import attr_array, constant_attr
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


def new_constant(data: np.ndarray, want: TensorType, source: SSAValue) -> g.ConstantOp:
    """A `graph.constant` of type `want` holding `data`: the value `source` converted at
    compile time, named (`%w_fractal_z`) and located after it."""
    name = f"{source.name_hint or 'cst'}_{suffix(want, source.type)}"
    new = g.ConstantOp(constant_attr(np.ascontiguousarray(data), want, name))
    new.output.name_hint = value_name(source, want)
    if isinstance(source.owner, Operation):
        new.location = source.owner.location
    return new


def fold_constant(const: g.ConstantOp, want: TensorType) -> g.ConstantOp:
    """`const`'s value in type `want` (converted by the runtime's format functions); a
    plain constant may also gain leading dims of 1 on the way (see `broadcast_type`)."""
    data, have = attr_array(const.value), const.output.type
    logical = lt.logical_type(want)
    assert isinstance(logical, TensorType)
    if lt.layout_of(have) is None and have.get_shape() != logical.get_shape():
        data, have = data.reshape(logical.get_shape()), logical
    return new_constant(layouts.convert(data, have, want), want, const.output)


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
