"""Weights as `dense_resource` blobs: numpy arrays <-> builtin resource handles.

A whole model must round-trip as text, so weights live in the builtin dialect's resource
store (`{-# dialect_resources: {builtin: {...}} #-}`). That store is process-global and
keeps hex strings, which double the bytes; we keep the numpy array beside the hex in our
own table so that passes and the interpreter never decode hex twice, and build hex only when
a handle is registered (the printer needs it).

A registered value may also be `Deferred`: a numpy computation of a known shape and type
running on the background thread (ge/background.py), resolved when it is first read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    TensorType,
)
from xdsl.ir import Attribute

from ge import background
from ge.dialects.dtypes import numpy_dtype


class Deferred:
    """A weight's value computed on the background thread: `fn(*inputs)` (`Deferred`
    inputs are their values), of a known shape and dtype. `head` is its first two
    elements (flat order) when they were cheap to know beforehand (see `head_of`)."""

    __slots__ = ("dtype", "head", "job", "shape")

    def __init__(self, fn: Callable[..., np.ndarray], inputs: tuple[Any, ...], shape: tuple[int, ...],
                 dtype: np.dtype, head: np.ndarray | None = None):
        self.shape, self.dtype, self.head = tuple(shape), np.dtype(dtype), head
        args = tuple(a.job if isinstance(a, Deferred) else a for a in inputs)
        self.job = background.submit(_checked, fn, self.shape, self.dtype, *args)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def result(self) -> np.ndarray:
        """The value (waited for, or computed here); the computation's error raised."""
        return self.job.result()


def _checked(fn: Callable[..., np.ndarray], shape: tuple[int, ...], dtype: np.dtype, *args: Any) -> np.ndarray:
    out = np.asarray(fn(*args), order="C")
    if out.shape != shape or out.dtype != dtype:
        raise AssertionError(f"a deferred weight computed {out.dtype}{list(out.shape)}, not {dtype}{list(shape)}")
    return out


def defer(fn: Callable[..., np.ndarray], *inputs: Any, shape: tuple[int, ...], dtype: Any,
          head: np.ndarray | None = None) -> Deferred:
    """`fn(*inputs)` computed on the background thread (see `Deferred`)."""
    return Deferred(fn, inputs, shape, dtype, head)


DEFER_BYTES = 1 << 16
"""Smallest result (bytes) computed on the background thread: below it, computing the value
at once costs the compile less than handing it over."""


def worth_deferring(nbytes: int, *inputs: Any) -> bool:
    """Compute a value of `nbytes` from `inputs` on the background thread? When it is large,
    or an input is deferred (never waited for only because the result is small)."""
    return nbytes >= DEFER_BYTES or any(isinstance(a, Deferred) for a in inputs)


def value_of(arr: np.ndarray | Deferred) -> np.ndarray:
    """An array, or a deferred one's value."""
    return arr.result() if isinstance(arr, Deferred) else arr


def head_of(arr: np.ndarray | Deferred) -> np.ndarray:
    """The first two elements (flat order; fewer if it has fewer) of a value, without
    waiting for a deferred one whose head is known."""
    if isinstance(arr, Deferred) and arr.head is not None:
        return arr.head
    return value_of(arr).reshape(-1)[:2]


_ARRAYS: dict[str, np.ndarray | Deferred] = {}

# Largest constant printed inline as `dense<...>`; larger ones become `dense_resource`.
INLINE_LIMIT = 16


class _LazyBlobStore(dict):
    """The builtin resource store, with hex built on demand for arrays we registered.

    xDSL keeps every blob as a hex string; building that for every weight at import time
    triples the memory of a model and is wasted unless the module is printed.
    """

    def __getitem__(self, key: str) -> str:
        value = dict.__getitem__(self, key)
        if value == "" and key in _ARRAYS:
            value = _hex(_resolved(key))
            dict.__setitem__(self, key, value)
        return value

    def get(self, key: str, default=None):
        return self[key] if key in self else default


def _resolved(key: str) -> np.ndarray:
    """The array registered under `key` (a deferred one waited for, then kept)."""
    arr = _ARRAYS[key]
    if isinstance(arr, Deferred):
        arr = _ARRAYS[key] = arr.result()
    return arr


def _hex(arr: np.ndarray) -> str:
    data = arr.astype(np.uint8) if arr.dtype == np.bool_ else arr
    return "0x" + _alignment(data).to_bytes(4, "little").hex() + data.tobytes().hex()


def _store() -> OpAsmDialectInterface:
    iface = Builtin.get_interface(OpAsmDialectInterface)
    assert iface is not None
    if not isinstance(iface._blob_storage, _LazyBlobStore):
        iface._blob_storage = _LazyBlobStore(iface._blob_storage)
    return iface


def install_resource_handle_fix() -> None:
    """Make the parser map each resource handle in a text to one store key.

    xDSL 0.75 renames a `dense_resource<k>` whose key `k` is already in the (process-global)
    store to `k_0`, but renames the same key in the `dialect_resources` section separately
    (to `k_1`), so the attribute points at an empty blob whenever a module is parsed in a
    process that already holds a module using the same handle. We keep one mapping per parse.
    """
    from xdsl.parser import AttrParser as Parser

    if getattr(Parser, "_ge_resource_fix", False):
        return

    def parse_handle(self, dialect_name: str, interface: OpAsmDialectInterface) -> str:
        key = self.parse_identifier(context_msg=" for resource handle")
        renames = self.__dict__.setdefault("_ge_resource_keys", {})
        if (dialect_name, key) not in renames:
            renames[(dialect_name, key)] = interface.declare_resource(key)
            self.dialect_resources.add((dialect_name, renames[(dialect_name, key)]))
        return renames[(dialect_name, key)]

    Parser._parse_dialect_resource_handle = parse_handle
    Parser._ge_resource_fix = True
    _store()


def _alignment(arr: np.ndarray) -> int:
    return max(1, arr.dtype.itemsize)


@contextmanager
def blob_scope() -> Iterator[None]:
    """Forget the blobs registered (or parsed) inside the block when it ends.

    The store is process-global and otherwise keeps every weight for the life of the
    process; tests and benchmarks that import and optimize many models in one process wrap
    each model in a scope. Modules that use those blobs must not be printed or run after it.
    """
    store = _store()._blob_storage
    before = set(store)
    try:
        yield
    finally:
        background.settle()  # (no work of the scope's weights left running)
        for key in set(store) - before:
            del store[key]
            _ARRAYS.pop(key, None)


def register_blob(name: str, arr: np.ndarray | Deferred) -> str:
    """Store `arr` under a fresh handle derived from `name` and return the handle (a
    `Deferred` value is computed on; the handle is the same)."""
    if not isinstance(arr, Deferred):
        arr = np.asarray(arr, order="C")
    key = _store().declare_resource(_sanitize(name))
    _ARRAYS[key] = arr  # the store keeps "" for it; hex is built when printed
    return key


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    if not out or not (out[0].isalpha() or out[0] == "_"):
        out = "_" + out
    return out


def blob_array(handle: str, type: TensorType) -> np.ndarray:
    """The numpy value of a resource handle (decoded from hex once, then cached)."""
    if handle in _ARRAYS:
        return _resolved(handle)
    text = _store().lookup(handle)
    if not text or text == "0x":
        raise KeyError(f"dense_resource<{handle}> has no data in the module's resource section")
    raw = bytes.fromhex(text[2:])[4:]
    dtype = numpy_dtype(type.element_type)
    storage = np.uint8 if dtype == np.bool_ else dtype
    shape = tuple(type.get_shape())
    arr = np.frombuffer(raw, dtype=storage)
    if arr.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(
            f"dense_resource<{handle}> holds {arr.size} elements but its type {type} needs "
            f"{int(np.prod(shape, dtype=np.int64))}"
        )
    arr = arr.reshape(shape).astype(dtype) if dtype == np.bool_ else arr.reshape(shape)
    _ARRAYS[handle] = arr
    return arr


def dense_attr(arr: np.ndarray, type: TensorType) -> DenseIntOrFPElementsAttr:
    """An inline `dense<...>` attribute holding `arr`."""
    data = np.ascontiguousarray(arr, dtype=numpy_dtype(type.element_type))
    if data.dtype == np.bool_:
        data = data.astype(np.uint8)
    return DenseIntOrFPElementsAttr(type, BytesAttr(data.tobytes()))


def attr_value(attr: Attribute) -> np.ndarray | Deferred:
    """`attr_array`, but a deferred value as it is (not waited for)."""
    if isinstance(attr, DenseResourceAttr) and isinstance(arr := _ARRAYS.get(attr.resource_handle.data), Deferred):
        return arr
    return attr_array(attr)


def attr_array(attr: Attribute) -> np.ndarray:
    """The numpy value of a constant's `dense` or `dense_resource` attribute."""
    if isinstance(attr, DenseResourceAttr):
        assert isinstance(attr.type, TensorType)
        return blob_array(attr.resource_handle.data, attr.type)
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    type = attr.type
    dtype = numpy_dtype(type.element_type)
    storage = np.uint8 if dtype == np.bool_ else dtype
    shape = tuple(type.get_shape())
    arr = np.frombuffer(attr.data.data, dtype=storage)
    n = int(np.prod(shape, dtype=np.int64))
    if arr.size == 1 and n != 1:
        arr = np.broadcast_to(arr, (n,))
    return arr.reshape(shape).astype(dtype, copy=False)


def constant_attr(arr: np.ndarray | Deferred, type: TensorType, name: str) -> Attribute:
    """`dense<...>` for small values (readable IR), `dense_resource` for weights."""
    if arr.size <= INLINE_LIMIT:
        return dense_attr(value_of(arr), type)
    return DenseResourceAttr.from_params(register_blob(name, arr), type)
