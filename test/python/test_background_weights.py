"""Weights computed on the background thread (ge/background.py, dialects/blobs.py `Deferred`,
issue 17): the same arrays as computed at once, chains (BN-scaled -> f16 -> FRACTAL_Z) that
never wait on the compile thread, errors raised where the value is read, and no thread
left when the compile forks."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, f16, f32

from ge import background
from ge.dialects import graph
from ge.dialects import layout as lt
from ge.dialects.blobs import _ARRAYS, Deferred, attr_array, blob_array, defer, register_blob
from ge.dialects.layout import Format
from ge.forked import Forked, can_fork
from ge.frontend.onnx import import_model
from ge.runtime import layouts
from ge.transforms.fold_batch_norm import FoldBatchNormPass
from ge.transforms.layout_utils import fold_constant
from ge.transforms.precision import PrecisionModePass


def _slow_cast(arr: np.ndarray, dtype) -> np.ndarray:
    time.sleep(0.05)  # still running when the test reads it
    return arr.astype(dtype)


def _fail(arr: np.ndarray) -> np.ndarray:
    raise ValueError(f"cannot convert {arr.shape}")


def _deferred_of(v) -> bool:
    """The constant defining `v` holds a blob registered as a deferred value."""
    attr = v.owner.value
    return isinstance(attr, DenseResourceAttr) and isinstance(_ARRAYS.get(attr.resource_handle.data), Deferred)


def test_deferred_blob_is_the_eager_array():
    w = np.random.default_rng(0).standard_normal((64, 3, 7, 7)).astype(np.float32)
    key = register_blob("w", defer(_slow_cast, w, np.float16, shape=w.shape, dtype=np.float16))
    t = graph.tensor(f16, w.shape)
    got = blob_array(key, t)
    assert got.dtype == np.float16 and np.array_equal(got.view(np.uint16), w.astype(np.float16).view(np.uint16))
    assert blob_array(key, t) is got  # resolved once, then kept


def test_chained_cast_then_layout_conversion():
    """An f16 cast of a weight, then its FRACTAL_Z conversion: the conversion's job takes
    the cast's result (nothing waited for on this thread) and gives to_storage's array."""
    w = np.random.default_rng(1).standard_normal((20, 5, 3, 3)).astype(np.float32)
    cast = defer(_slow_cast, w, np.float16, shape=w.shape, dtype=np.float16)
    plain = graph.tensor(f16, w.shape)
    const = graph.ConstantOp(DenseResourceAttr.from_params(register_blob("w_f16", cast), plain))
    const.output.name_hint = "w_f16"
    want = lt.encode(plain, Format.FRACTAL_Z, Format.NCHW)
    folded = fold_constant(const, want)
    assert cast.job.state != background._DONE  # the cast was not waited for
    assert _deferred_of(folded.output)
    got = attr_array(folded.value)
    expected = layouts.to_storage(w.astype(np.float16), want)
    assert got.shape == tuple(want.get_shape()) and np.array_equal(got, expected)


def test_error_in_a_job_surfaces_on_read():
    w = np.ones((8, 8), np.float32)
    key = register_blob("bad", defer(_fail, w, shape=w.shape, dtype=np.float32))
    background.settle()  # (it failed on the background thread)
    with pytest.raises(ValueError, match=r"cannot convert \(8, 8\)"):
        blob_array(key, graph.tensor(f32, w.shape))


def test_settled_before_fork():
    """Pending work, then `can_fork`: it waits, the thread ends, and a fork works."""
    before = threading.active_count()
    w = np.zeros((256, 256), np.float32)
    pending = [defer(_slow_cast, w, np.float16, shape=w.shape, dtype=np.float16) for _ in range(3)]
    assert background.busy() and threading.active_count() == before + 1
    assert can_fork() == (before == 1)
    assert not background.busy() and threading.active_count() == before
    assert all(p.job.state == background._DONE for p in pending)
    if before == 1:  # (a test runner's own threads: no fork)
        defer(_slow_cast, w, np.float16, shape=w.shape, dtype=np.float16)
        child = Forked(lambda: threading.active_count())  # settles too
        assert child.result() == ("ok", 1)


def _conv_bn_model(w: np.ndarray) -> onnx.ModelProto:
    m, c = w.shape[:2]
    rng = np.random.default_rng(3)
    gamma, beta, mean = (rng.standard_normal(m).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2.0, m).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (gamma, "g"), (beta, "be"), (mean, "mu"), (var, "var")]]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["y", "g", "be", "mu", "var"], ["z"], name="bn1", epsilon=1e-5),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 8, 8])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, m, 8, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _fold_and_cast(w: np.ndarray, settle_between: bool):
    module = import_model(_conv_bn_model(w))
    FoldBatchNormPass().apply(Context(), module)
    if settle_between:
        background.settle()
        for key, arr in list(_ARRAYS.items()):  # as if computed at once
            if isinstance(arr, Deferred):
                _ARRAYS[key] = arr.result()
    PrecisionModePass().apply(Context(), module)
    conv = next(op for op in module.walk() if isinstance(op, graph.Conv2dOp))
    return conv.weight


def test_fold_and_cast_deferred_equal_eager():
    """BN-scaled then f16 weights: deferred as a chain, the same bits and handle as when
    each step's input is a computed array."""
    w = np.random.default_rng(5).standard_normal((64, 32, 3, 3)).astype(np.float32)  # 72 KB: deferred
    chained = _fold_and_cast(w, settle_between=False)
    assert _deferred_of(chained) and chained.type == graph.tensor(f16, w.shape)
    eager = _fold_and_cast(w, settle_between=True)  # (an f16 cast of 36 KB from an array: at once)
    assert not _deferred_of(eager)
    a, b = attr_array(chained.owner.value), attr_array(eager.owner.value)
    assert a.dtype == np.float16 and np.array_equal(a.view(np.uint16), b.view(np.uint16))


def test_splat_weight_stays_inline():
    """A weight whose every element is equal after the cast is an inline `dense` (as
    `make_constant` decides), not a deferred blob."""
    w = np.full((16, 4, 3, 3), 0.5, np.float32)
    w.reshape(-1)[-1] = 0.5 + 2.0**-20  # equal to the others only in f16
    module = import_model(_conv_bn_model(w))
    PrecisionModePass().apply(Context(), module)
    conv = next(op for op in module.walk() if isinstance(op, graph.Conv2dOp))
    assert isinstance(conv.weight.owner.value, DenseIntOrFPElementsAttr)
    assert np.all(attr_array(conv.weight.owner.value) == np.float16(0.5))
