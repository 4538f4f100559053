"""Graph constants whose values are computed on the background thread (dialects/blobs.py
`Deferred`, ge/background.py): the weights fold-batch-norm scales and precision-mode casts.

`make_constant` (transforms/graph_utils.py) looks at a value to choose its attribute: a
splat (every element equal) or a small value is an inline `dense`, anything else a
`dense_resource` blob. `constant` makes the same choice from the value's first two
elements, computed beforehand: when they differ the value is no splat, its blob is
registered now under the same handle and only its data is deferred; otherwise the value is
computed at once and `make_constant` asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseResourceAttr
from xdsl.ir import Attribute, Operation

from ge.dialects import dtypes, graph
from ge.dialects.blobs import (
    INLINE_LIMIT,
    defer,
    register_blob,
    value_of,
    worth_deferring,
)
from ge.transforms.graph_utils import make_constant, value_name


def constant(fn: Callable[..., np.ndarray], inputs: tuple[Any, ...], shape: tuple[int, ...], elem: Attribute,
             head: np.ndarray, name: str, like: Operation | None = None) -> graph.ConstantOp:
    """`make_constant(fn(*inputs), elem, name, like)` -- the same op, the same blob handle --
    with `fn` run on the background thread when the value is a weight (more than
    INLINE_LIMIT elements whose first two, `head` as `fn` computes them, differ) that is
    `worth_deferring`.
    `inputs` may be deferred; `fn` gives the dtype of `elem`."""
    dtype = dtypes.numpy_dtype(elem)
    size = int(np.prod(shape, dtype=np.int64))
    if (size <= INLINE_LIMIT or head.size < 2 or head[1] == head[0]
            or not worth_deferring(size * dtype.itemsize, *inputs)):
        return make_constant(fn(*(value_of(a) for a in inputs)), elem, name, like)
    data = defer(fn, *inputs, shape=shape, dtype=dtype, head=head)
    op = graph.ConstantOp(DenseResourceAttr.from_params(register_blob(name, data), graph.tensor(elem, shape)))
    op.output.name_hint = value_name(name)
    if like is not None:
        op.location = like.location
    return op


def broadcast_head(arr: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The first two elements (flat order) of `arr` broadcast to `shape`."""
    n = min(2, int(np.prod(shape, dtype=np.int64)))
    return np.broadcast_to(arr, shape)[np.unravel_index(np.arange(n), shape)]
