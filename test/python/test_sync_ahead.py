"""The sync of the kernels fuse's probes built, planned in a forked copy while the compile
lowers the other kernels (`CompileOptions.sync_ahead`, transforms/insert_sync.py
`PlansAhead`): the same model file as planning them in insert-sync, the plans taken from
the copy, and the same result when the copy is lost, plans nothing or is left behind by a
failing compile."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import PassFailedException

import ge
from ge import forked
from ge.errors import GeError
from ge.lowering.tile import TilePass
from ge.transforms import insert_sync

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")


def _blocks() -> bytes:
    """Two conv + bias + relu blocks of the same shape (twins: one probe kernel for both),
    a residual add and a max pool (a kernel of its own)."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2, f"w{i}")
             for i in range(2)]
    inits += [numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), f"b{i}") for i in range(2)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Add", ["r1", "x"], ["s"], name="add"),
             helper.make_node("MaxPool", ["s"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.fixture
def taken(monkeypatch) -> list[tuple[int, int]]:
    """Per insert-sync run with plans ahead: (kernels it took from them, plans the copy made)."""
    out: list[tuple[int, int]] = []
    plans = insert_sync.PlansAhead.plans

    def counted(self, todo, target):
        got = plans(self, todo, target)
        out.append((len(todo), len(self.got)))
        return got

    monkeypatch.setattr(insert_sync.PlansAhead, "plans", counted)
    return out


def _same(a: ge.CompiledModel, b: ge.CompiledModel) -> None:
    assert a.model.kernels == b.model.kernels
    assert a.model.tasks == b.model.tasks and a.model.definition == b.model.definition
    assert bytes(a.model.weights) == bytes(b.model.weights)


def test_the_same_model_file_with_the_plans_taken(taken):
    model = _blocks()
    ahead = ge.compile(model, ge.CompileOptions(sync_ahead=True))
    assert len(taken) == 1
    took, made = taken[0]
    assert took >= 1 and made >= took  # the fused conv kernel at least, planned in the copy
    here = ge.compile(model, ge.CompileOptions(sync_ahead=False))
    assert len(taken) == 1  # (not made without the option)
    _same(ahead, here)
    inputs = {"x": np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype(np.float32)}
    assert np.array_equal(ahead.run(inputs)["y"], here.run(inputs)["y"])


def test_a_lost_copy_leaves_the_plans_here(taken, monkeypatch):
    monkeypatch.setattr(insert_sync, "Forked", lambda fn: forked.Forked(lambda: os._exit(3)))
    lost = ge.compile(_blocks(), ge.CompileOptions(sync_ahead=True))
    assert len(taken) == 1 and taken[0][0] >= 1 and taken[0][1] == 0  # nothing came back: all planned here
    _same(lost, ge.compile(_blocks(), ge.CompileOptions(sync_ahead=False)))


def test_a_kernel_the_copy_did_not_plan_is_planned_here(taken, monkeypatch):
    monkeypatch.setattr(insert_sync, "_plan_share", lambda todo, target, share: {})
    none = ge.compile(_blocks(), ge.CompileOptions(sync_ahead=True))
    assert len(taken) == 1 and taken[0][1] == 0
    _same(none, ge.compile(_blocks(), ge.CompileOptions(sync_ahead=False)))


def test_a_failing_compile_stops_the_copy(monkeypatch):
    stopped = []
    stop = insert_sync.PlansAhead.stop
    monkeypatch.setattr(insert_sync.PlansAhead, "stop", lambda self: (stopped.append(self.worker is not None), stop(self)))

    def fails(self, ctx, module):
        raise PassFailedException("tile: refused on purpose")

    monkeypatch.setattr(TilePass, "apply", fails)
    with pytest.raises(GeError, match="tile failed: tile: refused on purpose"):
        ge.compile(_blocks(), ge.CompileOptions(sync_ahead=True))
    assert stopped == [True]  # the copy was running and was stopped
    with pytest.raises(ChildProcessError):  # and waited for: no child left
        os.waitpid(-1, os.WNOHANG)
