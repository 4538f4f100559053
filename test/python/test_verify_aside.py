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

    def counted(fn, **kw):
        names.append(getattr(getattr(fn, "func", fn), "__name__", "?"))
        return real(fn, **kw)

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


def _encodes_here(monkeypatch) -> list[str]:
    """The kernels this process encodes for the model file (the forked copy's are not seen)."""
    from ge.runtime import kernel_code

    names: list[str] = []
    real = kernel_code._encode
    me = os.getpid()

    def counted(kernel, target):
        if os.getpid() == me:
            names.append(kernel.sym_name.data)
        return real(kernel, target)

    monkeypatch.setattr(kernel_code, "_encode", counted)
    return names


def test_the_copy_encodes_the_kernels(monkeypatch):
    """The verify copy encodes the distinct kernels first (`Forked`'s `first`); this process
    takes its encoding: the same KERNELS partition, nothing encoded here."""
    here = _encodes_here(monkeypatch)
    aside = ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=True))
    assert here == []
    alone = ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=False))
    assert len(here) == len(alone.model.kernels["kernels"]) >= 1
    assert aside.model.kernels == alone.model.kernels


def test_an_encoding_that_fails_in_the_copy_is_done_here(monkeypatch):
    from ge.runtime import kernel_code

    here = _encodes_here(monkeypatch)
    monkeypatch.setattr(kernel_code, "encode_kernels", lambda kernels, target: int("x"))
    failed = ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=True))
    assert len(here) == len(failed.model.kernels["kernels"]) >= 1  # encoded here instead
    assert failed.model.kernels == ge.compile(_relu_conv(), ge.CompileOptions(verify_aside=False)).model.kernels


def test_forked_sends_a_first_result_before_the_last():
    import time

    big = list(range(200_000))  # more than a pipe holds: the copy must not wait for the reader
    worker = forked.Forked(lambda: (time.sleep(0.05), "done")[1], first=lambda: big)
    assert worker.first_result() == ("ok", big)
    assert worker.result() == ("ok", "done")
    worker = forked.Forked(lambda: "done", first=lambda: int("x"))
    outcome, error = worker.first_result()
    assert outcome == "raised" and isinstance(error, ValueError)
    assert worker.result() == ("ok", "done")
    unread = forked.Forked(lambda: 7, first=lambda: big)  # the first never asked for: skipped
    assert unread.result() == ("ok", 7)
    died = forked.Forked(lambda: 7, first=lambda: os._exit(3))
    assert died.first_result() == ("lost", None) and died.result() == ("lost", None)


def test_compile_to_file_writes_before_the_verify_ends(tmp_path, monkeypatch):
    """`ge-compile`'s path: the file is written, then the forked verify waited for; the same
    file as `compile(...).save`; a verify that fails removes the file and raises."""
    from ge.compiler import compile_to_file

    order: list[str] = []
    verified = compiler._Pipeline.verified
    monkeypatch.setattr(compiler._Pipeline, "verified", lambda self, r: (order.append("verified"), verified(self, r)))
    save = compiler.CompiledModel.save
    monkeypatch.setattr(compiler.CompiledModel, "save", lambda self, p: (order.append("saved"), save(self, p))[1])
    _, size = compile_to_file(_relu_conv(), tmp_path / "a.om")
    assert order == ["saved", "verified"]
    assert size == (tmp_path / "a.om").stat().st_size
    ge.compile(_relu_conv()).save(tmp_path / "b.om")
    a, b = ge.load_model(tmp_path / "a.om").model, ge.load_model(tmp_path / "b.om").model
    assert a.kernels == b.kernels and a.tasks == b.tasks and bytes(a.weights) == bytes(b.weights)

    _broken_sync(monkeypatch)
    with pytest.raises(GeError, match=r"insert-sync failed: .*outside its"):
        compile_to_file(_relu_conv(), tmp_path / "c.om")
    assert not (tmp_path / "c.om").exists()
    with pytest.raises(ChildProcessError):  # no forked copy left behind
        os.waitpid(-1, os.WNOHANG)
