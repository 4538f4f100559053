"""dialects/fast_verify.py gives the same verdict as xDSL's generated `verify_`: on every op
(ge's, and the arith and scf ops in the kernels) of a compiled model's graph-, tile- and
isa-level IR both pass, and on ops broken in the
ways a pass could break them (a required property dropped, an unknown one added, one of
another kind or width, an operand of the wrong type, wrong operand segment sizes, an
operand too many) both raise the same error."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, i1, i32
from xdsl.irdl import OptPropertyDef
from xdsl.utils.exceptions import VerifyException

from ge.dialects import fusion, graph, isa, layout, task, tile
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes

HERE = Path(__file__).parent
DIALECTS = (graph.Graph, layout.Layout, fusion.Fusion, tile.Tile, task.Task, isa.Isa)


def _repeated_blocks():
    spec = importlib.util.spec_from_file_location("dedup_models", HERE / "test_kernel_dedup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.repeated_blocks(n=2)


@pytest.fixture(scope="module")
def levels():
    """The module after import, after tile and after insert-sync (with the launches)."""
    from ge.frontend.onnx import import_model

    out = {}
    with blob_scope():
        module = import_model(_repeated_blocks().SerializeToString())
        out["graph"] = module.clone()
        run_passes(module, "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile")
        out["tile"] = module.clone()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
        out["isa"] = module
        yield out


def _outcome(fn, op):
    try:
        fn(op)
    except VerifyException as e:
        return ("VerifyException", str(e))
    except Exception as e:  # a custom verifier meeting a broken op: must be the same either way
        return (type(e).__name__, str(e))
    return None


def _ge_ops(module):
    return [op for op in module.walk() if hasattr(type(op).verify_, "generated")]


def test_installed_on_most_ops():
    installed = [c for d in DIALECTS for c in d.operations if hasattr(c.verify_, "generated")]
    assert len(installed) >= 120
    assert isa.VAddOp in installed and isa.MmadOp in installed and tile.CopyOp in installed
    assert graph.AddOp in installed and task.LaunchOp in installed
    assert hasattr(arith.MuliOp.verify_, "generated") and hasattr(scf.ForOp.verify_, "generated")  # in the kernels


@pytest.mark.parametrize("level", ["graph", "tile", "isa"])
def test_valid_ops_pass_both(levels, level):
    ops = _ge_ops(levels[level])
    kinds = Counter(op.name for op in ops)
    assert len(kinds) >= {"graph": 3, "tile": 6, "isa": 10}[level], kinds
    for op in ops:
        cls = type(op)
        assert _outcome(cls.verify_, op) is None, op.name
        assert _outcome(cls.verify_.generated, op) is None, op.name


def _mutations(op):
    """(what, apply, undo) for ways to break `op`."""
    cls = type(op)
    op_def = cls.get_irdl_definition()
    props = dict(op.properties)

    def set_props(new):
        def apply():
            op.properties.clear()
            op.properties.update(new)
        return apply

    restore = set_props(props)
    required = [n for n, d in op_def.properties.items() if not isinstance(d, OptPropertyDef) and n in props]
    if required:
        yield "drop " + required[0], set_props({k: v for k, v in props.items() if k != required[0]}), restore
    yield "unknown property", set_props({**props, "ge_bogus": UnitAttr()}), restore
    for name in list(props)[:2]:  # a value of another kind, or an integer of another width
        yield f"{name} as text", set_props({**props, name: StringAttr("x")}), restore
        yield f"{name} as i1", set_props({**props, name: IntegerAttr(1, i1)}), restore
    if "operandSegmentSizes" in props:
        sizes = [int(v) for v in props["operandSegmentSizes"].get_values()]
        wrong = DenseArrayBase.from_list(i32, [sizes[0] + 1, *sizes[1:]])
        yield "segment sizes", set_props({**props, "operandSegmentSizes": wrong}), restore
    operands = tuple(op.operands)
    bad = xdsl_test.TestOp(result_types=[i1]).results[0]

    def set_operands(new):
        def apply():
            op.operands = new
        return apply

    if operands:
        yield "operand type", set_operands((bad, *operands[1:])), set_operands(operands)
    yield "extra operand", set_operands((*operands, bad)), set_operands(operands)


@pytest.mark.parametrize("level", ["graph", "tile", "isa"])
def test_broken_ops_fail_alike(levels, level):
    per_class = Counter()
    failed = 0
    for op in _ge_ops(levels[level]):
        cls = type(op)
        if per_class[cls] >= 3:
            continue
        per_class[cls] += 1
        for what, apply, undo in list(_mutations(op)):
            apply()
            try:
                fast, xdsl = _outcome(cls.verify_, op), _outcome(cls.verify_.generated, op)
            finally:
                undo()
            assert fast == xdsl, (op.name, what)
            failed += xdsl is not None
        assert _outcome(cls.verify_, op) is None, op.name  # restored
    assert failed >= 3 * len(per_class)


def test_a_compile_verifies_the_module_four_times(monkeypatch):
    """The whole module is verified after the import, at the graph and kernel levels' ends
    and once after the last stage (insert-sync) -- not after every stage (issue 17: 0.9 s of
    resnet50's CPU was verifying); `verify_each` verifies after each of the ten stages. (In
    this process: the last one otherwise runs in a forked copy, test_verify_aside.py.)"""
    from xdsl.dialects.builtin import ModuleOp

    import ge

    data = _repeated_blocks().SerializeToString()
    real = ModuleOp.verify
    counts = []

    def counting(self, *args, **kwargs):
        counts.append(sum(1 for _ in self.walk()))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ModuleOp, "verify", counting)
    with blob_scope():
        ge.compile(data, ge.CompileOptions(verify_aside=False))
    default = list(counts)
    counts.clear()
    with blob_scope():
        ge.compile(data, ge.CompileOptions(verify_each=True, verify_aside=False))
    assert len(default) == 4 and len(counts) == 11, (default, counts)
    assert max(default) == default[-1] > 200  # the last: the isa kernels


def test_isolated_kernels_checked_without_xdsls_walk(levels, monkeypatch):
    """A kernel's IsolatedFromAbove check is fast_verify's one pass over its body: on the
    valid isa kernels xDSL's own trait check never runs, and a kernel whose op uses a value
    of another kernel is refused with xDSL's error (the fast pass says no, xDSL words it)."""
    from xdsl.traits import IsolatedFromAbove

    module = levels["isa"]
    kernels = [op for op in module.ops if isinstance(op, isa.KernelOp)]
    assert len(kernels) >= 2
    real = IsolatedFromAbove.verify
    calls = []

    def counted(self, op):
        calls.append(op.name)
        return real(self, op)

    monkeypatch.setattr(IsolatedFromAbove, "verify", counted)
    for k in kernels:
        k.verify_()
    assert calls == []
    user = next(op for op in kernels[0].walk() if isinstance(op, arith.AddiOp | arith.MuliOp | arith.SubiOp))
    outside = next(op for op in kernels[1].walk() if isinstance(op, arith.ConstantOp)
                   and op.result.type == user.operands[0].type).result
    operands = tuple(user.operands)
    user.operands = (outside, *operands[1:])
    try:
        fast, xdsl = _outcome(isa.KernelOp.verify_, kernels[0]), _outcome(isa.KernelOp.verify_.generated, kernels[0])
    finally:
        user.operands = operands
    assert fast == xdsl and fast is not None and "IsolatedFromAbove" in fast[1], fast
    assert calls  # xDSL's check worded it
    assert _outcome(isa.KernelOp.verify_, kernels[0]) is None


def _values(*types):
    return xdsl_test.TestOp(result_types=list(types)).results


@pytest.mark.parametrize("case", ["same", "lhs i32", "result i32", "cmpi f32", "cmpi same"])
def test_variables_and_alternatives_like_xdsl(case):
    """arith's `T` (lhs, rhs and result of one type) and `AnyOf` (an integer, an index or a
    vector/tensor of them) are checked plainly, binding `T` as xDSL's context binds it: a
    mismatched or wrong type is refused with xDSL's message, a valid op passes both."""
    from xdsl.dialects.builtin import IndexType, f32

    index = IndexType()
    if case.startswith("cmpi"):
        a, b = _values(f32, f32) if case == "cmpi f32" else _values(index, index)
        op = arith.CmpiOp(a, b, "slt")
    else:
        a, b = _values(i32 if case == "lhs i32" else index, index)
        op = arith.AddiOp(a, b, result_type=i32 if case == "result i32" else index)
    cls = type(op)
    fast, xdsl = _outcome(cls.verify_, op), _outcome(cls.verify_.generated, op)
    assert fast == xdsl
    assert (fast is None) == (case in ("same", "cmpi same")), fast


def test_rect_bounds_are_the_formula():
    """Rect.lo / hi (loops, for the verifiers' bounds checks) equal base + the sums of
    min(0, (n-1)*s) and max(0, (n-1)*s) (+ 1), negative and zero strides and sizes included."""
    import random

    rng = random.Random(17)
    for _ in range(3000):
        rank = rng.randint(0, 4)
        shape = tuple(rng.randint(0, 6) for _ in range(rank))
        strides = tuple(rng.randint(-9, 9) for _ in range(rank))
        base = rng.randint(-40, 40)
        r = isa.Rect(base, shape, strides)
        assert r.lo == base + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        assert r.hi == base + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + 1
