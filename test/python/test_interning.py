"""Integer attributes interned for one compile (dialects/interning.py): one object per value
inside a scope, equal to what xDSL builds; a fresh attribute outside any scope; the tables
belong to the outermost scope and are gone after it (issue 17: no module-global caches)."""

from __future__ import annotations

import threading

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, f16, i32, i64

from ge.dialects import interning, isa
from ge.dialects.interning import int_array, int_attr, intern_scope, segment_sizes
from ge.lowering import index_builder
from ge.lowering.isa_builder import IsaBuilder


def test_one_object_per_value_inside_a_scope():
    with intern_scope() as tables:
        assert int_attr(7) is int_attr(7) and int_attr(7) == IntegerAttr(7, i64)
        assert int_attr(7, i32) is not int_attr(7) and int_attr(7, i32) == IntegerAttr(7, i32)
        assert int_array([1, 2]) is int_array((1, 2)) is isa.int_array(iter([1, 2]))
        assert int_array([1, 2]) == DenseArrayBase.from_list(i64, [1, 2])
        seg = segment_sizes((1, 0, 2))
        assert seg is segment_sizes((1, 0, 2)) and seg == DenseArrayBase.from_list(i32, [1, 0, 2])
        assert seg != int_array([1, 0, 2]) and int_array([1, 0, 2]).elt_type == i64  # i32 and i64 kept apart
        assert len(tables.ints) == 2 and len(tables.arrays) == 3 and len(tables) == 5


def test_fresh_attributes_outside_a_scope():
    assert interning._TABLES.get() is None
    a, b = int_attr(3), int_attr(3)
    assert a == b and a is not b
    x, y = int_array([4, 5]), isa.int_array([4, 5])
    assert x == y and x is not y
    assert segment_sizes((1, 1)) == segment_sizes((1, 1)) and segment_sizes((1, 1)) is not segment_sizes((1, 1))


def test_tables_live_for_the_outermost_scope():
    with intern_scope() as outer:
        a = int_attr(11)
        with intern_scope() as inner:  # (ge.compile inside a compile: the dynamic-shape mode)
            assert inner is outer and int_attr(11) is a
        assert interning._TABLES.get() is outer
    assert interning._TABLES.get() is None and int_attr(11) is not a
    with intern_scope() as later:
        assert later is not outer and len(later) == 0 and int_attr(11) is not a


def test_a_thread_outside_the_scope_builds_fresh():
    seen = []
    with intern_scope():
        worker = threading.Thread(target=lambda: seen.append((interning._TABLES.get(), int_attr(5) is int_attr(5))))
        worker.start()
        worker.join()
    assert seen == [(None, False)]


def test_create_op_shares_the_segment_sizes_inside_a_scope():
    """The isa emitters' `create_op` and `int_attr` (re-exported by index_builder) intern
    through the same tables."""
    assert index_builder.int_attr is int_attr
    b = IsaBuilder.new_kernel("k", [], [])
    src, dst = (b.buffer(isa.MemSpace.UB, [256], f16)[0] for _ in range(2))
    off = b.const(16)

    def vadd():
        return index_builder.create_op(isa.VAddOp, [dst, [off], src, [], src, [off]], {"repeat": int_attr(2)})

    with intern_scope() as tables:
        first, second = vadd(), vadd()
        assert first.properties["operandSegmentSizes"] is second.properties["operandSegmentSizes"]
        assert first.properties["repeat"] is second.properties["repeat"]
        assert ((1, 1, 1, 0, 1, 1), i32) in tables.arrays
    third = vadd()
    assert third.properties == first.properties and third.properties["operandSegmentSizes"] is not (
        first.properties["operandSegmentSizes"])


def test_a_compile_interns_in_its_own_tables_and_changes_no_result(monkeypatch):
    """`ge.compile` interns in tables of its own, gone when it returns; building every
    attribute fresh instead (no scope) gives the same model (kernels, tasks, weights, IR
    text), outputs and simulated cycles."""
    import contextlib

    import numpy as np

    import ge
    from ge.dialects.blobs import blob_scope
    from ge.testing import two_branch_model

    model = two_branch_model().SerializeToString()
    options = ge.CompileOptions(precision_mode="must_keep_origin_dtype", keep_ir_text=True)
    sizes, real = [], interning.intern_scope

    @contextlib.contextmanager
    def watched():
        with real() as tables:
            yield tables
        sizes.append((len(tables.ints), len(tables.arrays)))

    monkeypatch.setattr(interning, "intern_scope", watched)
    with blob_scope():
        shared = ge.compile(model, options)
    assert len(sizes) == 1 and sizes[0][0] >= 1 and sizes[0][1] >= 10 and interning._TABLES.get() is None
    monkeypatch.setattr(interning, "intern_scope", contextlib.nullcontext)
    with blob_scope():
        fresh = ge.compile(model, options)
    a, b = shared.model, fresh.model
    assert a.ir_text and "isa.kernel" in a.ir_text and a.ir_text == b.ir_text
    assert (a.kernels, a.tasks, a.definition, bytes(a.weights)) == (b.kernels, b.tasks, b.definition, bytes(b.weights))
    assert {k: v for k, v in a.metadata.items() if k != "compile_report"} == (
        {k: v for k, v in b.metadata.items() if k != "compile_report"})
    x = {"x": np.random.default_rng(11).standard_normal((32, 64)).astype(np.float32)}
    np.testing.assert_array_equal(shared.run(x)["y"], fresh.run(x)["y"])
    assert shared.last_run.total_cycles == fresh.last_run.total_cycles > 0
