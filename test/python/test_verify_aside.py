"""`ge.compile`'s final verify in a forked copy (`CompileOptions.verify_aside`, ge/forked.py):
the same model file as verifying in process, the same error for a broken kernel, and the
verify done here when the copy is lost."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IntegerAttr

import ge
from ge import compiler, forked
from ge.dialects import isa
from ge.errors import GeError
from ge.transforms import insert_sync

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")


def _relu_conv() -> bytes:
    w = numpy_helper.from_array(np.linspace(-1, 1, 8 * 4 * 3 * 3, dtype=np.float32).reshape(8, 4, 3, 3), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.fixture
def forks(monkeypatch) -> list[str]:
    """The names of the functions `ge.compile` runs in a forked copy."""
    names: list[str] = []
    real = forked.Forked

    def counted(fn):
        names.append(getattr(getattr(fn, "func", fn), "__name__", "?"))
        return real(fn)

    monkeypatch.setattr(compiler, "Forked", counted)
    return names


def _broken_sync(monkeypatch) -> None:
    """insert-sync that leaves one vector instruction repeating far past its buffers."""
    apply = insert_sync.InsertSyncPass.apply

    def broken(self, ctx, module):
        apply(self, ctx, module)
        op = next(o for o in module.walk() if isinstance(o, isa.InstructionOp) and "repeat" in o.properties)
        op.properties["repeat"] = IntegerAttr(200, op.properties["repeat"].type)

    monkeypatch.setattr(insert_sync.InsertSyncPass, "apply", broken)


def test_the_same_model_file(forks):
    model = _relu_conv()
    aside = ge.compile(model, ge.CompileOptions(verify_aside=True))
    assert forks == ["_verify"]
    here = ge.compile(model, ge.CompileOptions(verify_aside=False))
    assert forks == ["_verify"]  # (no second fork)
    assert aside.model.kernels == here.model.kernels
    assert bytes(aside.model.weights) == bytes(here.model.weights) and aside.model.tasks == here.model.tasks


def test_a_broken_kernel_gives_the_same_error(forks, monkeypatch):
    _broken_sync(monkeypatch)
    errors = []
    for aside in (True, False):
        with pytest.raises(GeError) as e:
            ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=aside))
        errors.append(str(e.value))
    assert forks == ["_verify"]
    assert errors[0] == errors[1]
    assert "insert-sync failed" in errors[0] and "outside its" in errors[0]


def test_a_lost_copy_leaves_the_verify_here(forks, monkeypatch):
    monkeypatch.setattr(forked.Forked, "result", lambda self: (self.stop(), ("lost", None))[1])
    ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=True))  # verified here: passes
    _broken_sync(monkeypatch)
    with pytest.raises(GeError) as e:
        ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=True))
    assert forks == ["_verify", "_verify"]
    assert "insert-sync failed" in str(e.value) and "outside its" in str(e.value)


def test_forked_returns_values_and_exceptions():
    assert forked.Forked(lambda: {"a": [1, 2]}).result() == ("ok", {"a": [1, 2]})
    outcome, error = forked.Forked(lambda: int("x")).result()
    assert outcome == "raised" and isinstance(error, ValueError) and "invalid literal" in str(error)
    assert forked.Forked(lambda: os._exit(3)).result() == ("lost", None)
