"""What `to-isa` and `plan-local-memory` keep between emissions must not change what they
build (issue 17's compile speed):

- `to_isa.CopyStatics`: a `tile.copy` emitted again (one copy of a loop body per slot, the
  armed bias of the next tile) reuses its digits, its per-dim split and its plain move;
- the compile's memos of move properties and buffer types (`scope_memo`, inside an
  `intern_scope` only);
- `IsaBuilder`'s constants, loops and buffers, built by `create` rather than the IRDL
  constructors;
- `plan_local_memory._spans`, one walk instead of `isa_analysis.Linear` and a walk up the
  parents of every instruction.

Each is compared against a build that keeps nothing, on the lit inputs of the lowering
(double-buffered loops, edge windows, pads, the 910's bias in L0C, FixPipe's int8
read-out) and the hand-written kernels of test_to_isa.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, f16, f32, i1
from xdsl.ir import Block

from ge.dialects import isa
from ge.dialects.interning import int_attr, intern_scope
from ge.ir import parse_module, print_module, run_passes
from ge.lowering import to_isa
from ge.lowering.index_builder import INDEX
from ge.lowering.isa_builder import IsaBuilder
from ge.transforms import plan_local_memory as plm
from ge.transforms.isa_analysis import Linear

ROOT = Path(__file__).resolve().parents[2]


def _split(path: str) -> list[str]:
    return [c for c in (ROOT / path).read_text().split("// -----") if "module" in c]


def _tile_level() -> list[tuple[str, str]]:
    """(name, module text at the tile level) for every case that lowers."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_to_isa import EDGES, MATMUL_K_LOOP, STRIDED

    cases = [("matmul_k_loop", MATMUL_K_LOOP), ("edges", EDGES), ("strided", STRIDED)]
    for path in ("test/lowering/to-isa.mlir", "test/lowering/to-isa-l0c-bias.mlir"):
        cases += [(f"{path}#{i}", text) for i, text in enumerate(_split(path))]
    for i, text in enumerate(_split("test/lowering/tile-cube-int8.mlir")):
        module = parse_module(text)
        run_passes(module, "fuse,bufferize,tile")
        cases.append((f"tile-cube-int8#{i}", print_module(module)))
    return cases


CASES = _tile_level()


@pytest.fixture(scope="module")
def models():
    """Two models' modules at the tile level: resnet50's stage-1 conv pair (double-buffered
    Cube loops, the 910's bias in L0C, residual epilogues) and an FFN matmul + GEMV."""
    from ge.dialects.blobs import blob_scope
    from ge.frontend.onnx import import_model

    sys.path.insert(0, str(Path(__file__).parent))
    from test_plan_search_speed import conv_model, matmul_model

    with blob_scope():
        out = []
        for model in (conv_model(), matmul_model()):
            module = import_model(model.SerializeToString())
            run_passes(module, "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile")
            out.append(module)
        yield out


def _lower(text, keep: bool, monkeypatch) -> str:
    """The module (text, or a module to clone) after to-isa and plan-local-memory, its isa
    kernels printed generic; `keep=False`: every copy's statics are rebuilt at each
    emission and no compile memo is open."""
    module = parse_module(text) if isinstance(text, str) else text.clone()
    with monkeypatch.context() as m:
        if not keep:
            copy = to_isa.KernelLowering.copy

            def fresh(self, op, quant=None):
                self.copies.clear()
                return copy(self, op, quant)

            m.setattr(to_isa.KernelLowering, "copy", fresh)
        with intern_scope() if keep else contextlib.nullcontext():
            try:
                run_passes(module, "to-isa,plan-local-memory")
            except Exception as e:  # the same refusal either way
                return f"error: {type(e).__name__}: {e}"
    return "\n".join(_generic(k) for k in module.body.block.ops if isinstance(k, isa.KernelOp))


@pytest.mark.parametrize("name,text", CASES, ids=[n for n, _ in CASES])
def test_kept_statics_and_memos_build_the_same_kernels(name, text, monkeypatch):
    kept, fresh = _lower(text, True, monkeypatch), _lower(text, False, monkeypatch)
    assert kept == fresh


def test_model_kernels_are_the_same(models, monkeypatch):
    for module in models:
        kept, fresh = _lower(module, True, monkeypatch), _lower(module, False, monkeypatch)
        assert kept.count("isa.kernel") >= 2 and "isa.mmad" in kept and kept == fresh


def test_cases_reach_the_reused_paths(models, monkeypatch):
    """The cases above emit copies more than once, plain and windowed."""
    seen = {"again": 0, "plain": 0, "windowed": 0}
    emit_plain, emit_move = to_isa.KernelLowering.emit_plain, to_isa.KernelLowering.emit_move

    def plain(self, *a, **k):
        seen["plain"] += 1
        return emit_plain(self, *a, **k)

    def move(self, op, src_space, dst_space, so, do, sizes, ss, ds, windows, *a, **k):
        seen["windowed"] += windows is not None
        seen["again"] += op in self.copies and self.copies[op].split is not None
        return emit_move(self, op, src_space, dst_space, so, do, sizes, ss, ds, windows, *a, **k)

    monkeypatch.setattr(to_isa.KernelLowering, "emit_plain", plain)
    monkeypatch.setattr(to_isa.KernelLowering, "emit_move", move)
    for text in [text for _, text in CASES] + models:
        _lower(text, True, monkeypatch)
    assert seen["plain"] >= 10 and seen["windowed"] >= 10 and seen["again"] >= 10, seen


def _generic(op) -> str:
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(op)
    return out.getvalue()


def test_builder_ops_are_the_irdl_constructors_ops():
    """The builder's constants, loops, buffers and mmads are the ops xDSL's constructors make."""
    with intern_scope():
        b = IsaBuilder.new_kernel("k", [], [])
        c = b.const(-3)
        assert _generic(c.owner) == _generic(arith.ConstantOp(IntegerAttr(-3, INDEX))).replace("%0", "%cm3")
        assert b.const(-3) is c and b.value(-3) is c and b.const(-3, INDEX) is c
        flag = b.const(1, i1)
        assert flag is not b.const(1) and flag.type == i1
        with b.loop(0, c, 2, "j", max_trips=1) as iv:
            pass
        loop = iv.owner.parent_op()
        ref = scf.ForOp(b.const(0), c, b.const(2), [], [Block(arg_types=[INDEX])])
        ref.attributes[isa.MAX_TRIPS_ATTR] = int_attr(1)
        assert type(loop) is scf.ForOp and list(loop.operands) == list(ref.operands)
        assert loop.attributes == ref.attributes and loop.properties == ref.properties
        assert loop.result_types == ref.result_types == ()
        assert [a.type for a in loop.body.block.args] == [INDEX] and iv.name_hint == "j"
        assert [type(o) for o in loop.body.block.ops] == [scf.YieldOp]
        assert _generic(loop.body.block.last_op) == _generic(scf.YieldOp())
        ub, l0a, l0b, l0c = (b.buffer(s, [256], e, slots=n)
                             for s, e, n in ((isa.MemSpace.UB, f16, 2), (isa.MemSpace.L0A, f16, 1),
                                             (isa.MemSpace.L0B, f16, 1), (isa.MemSpace.L0C, f32, 1)))
        buf = ub[0].owner
        assert [r.type for r in buf.results] == [isa.buffer_type([256], f16, isa.MemSpace.UB)] * 2
        assert dict(buf.properties) == dict(isa.BufferOp(isa.buffer_type([256], f16, "ub"), 2).properties)
        from ge.lowering.index_builder import create_op

        mm = create_op(isa.MmadOp, [l0c[0], [], l0a[0], [], l0b[0], [], [flag]],
                       {"m": int_attr(16), "k": int_attr(16), "n": int_attr(16)})
        ref_mm = isa.MmadOp(l0c[0], l0a[0], l0b[0], 16, 16, 16, init=flag)
        assert list(mm.properties) == list(ref_mm.properties) and _generic(mm) == _generic(ref_mm)


def _old_lifetimes(kernel: isa.KernelOp, target) -> dict:
    """plan-local-memory's lifetimes as they were computed before `_spans`."""
    lin = Linear.of(kernel)
    out = {}
    for op in lin.number:
        if not isinstance(op, isa.InstructionOp):
            continue
        lo = hi = lin.number[op]
        p = op.parent_op()
        while p is not None and p is not kernel:
            if isinstance(p, scf.ForOp):
                lo, hi = min(lo, lin.number[p]), max(hi, lin.end[p])
            p = p.parent_op()
        for buffer in plm._buffers(op, target):
            if isinstance(buffer.owner, isa.BufferOp):
                start, end, pipes = out.get(buffer.owner, (1 << 60, -1, set()))
                out[buffer.owner] = (min(start, lo), max(end, hi), pipes | {op.PIPE})
    return out


def _nested_kernel() -> isa.KernelOp:
    """A buffer used only in an inner loop lives over the whole outer loop; one used after
    the loops from then on; one used before them only until then."""
    from ge.lowering.isa_builder import move_op

    b = IsaBuilder.new_kernel("nested", [isa.buffer_type([256], f16, isa.MemSpace.GM)], [])
    (gm,) = b.args
    early, inner, late = (b.buffer(isa.MemSpace.UB, [256], f16)[0] for _ in range(3))
    b.add(move_op(isa.CopyGmToUbOp, gm, early, [256]))
    b.add(move_op(isa.CopyUbToGmOp, early, gm, [256]))
    with b.loop(0, 4, 1, "i"):
        b.add(move_op(isa.CopyGmToUbOp, gm, late, [256]))
        with b.loop(0, 2, 1, "j"):
            b.add(move_op(isa.CopyGmToUbOp, gm, inner, [256]))
            b.add(move_op(isa.CopyUbToGmOp, inner, gm, [256]))
    b.add(move_op(isa.CopyUbToGmOp, late, gm, [256]))
    return b.kernel


def test_spans_give_the_lifetimes_of_the_parent_walk(models):
    nested = 0
    target910 = plm.targets.load_target("ascend910")
    kernel = _nested_kernel()
    lin = Linear.of(kernel)
    outer = next(op for op in kernel.body.block.ops if isinstance(op, scf.ForOp))
    moves = [op for op in lin.number if isinstance(op, isa.InstructionOp)]
    got = [(b.start, b.end) for b in plm.lifetimes(kernel, target910).values()]
    assert got == [(lin.number[moves[0]], lin.number[moves[1]]),  # early: its own two moves
                   (lin.number[outer], lin.end[outer]),  # inner: the whole outer loop
                   (lin.number[outer], lin.number[moves[-1]])]  # late: from the outer loop on
    assert {op: (b.start, b.end, b.pipes) for op, b in plm.lifetimes(kernel, target910).items()} == \
        _old_lifetimes(kernel, target910)
    modules = []
    for text in [text for _, text in CASES] + models:
        module = parse_module(text) if isinstance(text, str) else text.clone()
        try:
            run_passes(module, "to-isa")
        except Exception:
            continue
        modules.append(module)
    for module in modules:
        target = plm.module_target(module)
        for kernel in plm.isa_kernels(module):
            got = plm.lifetimes(kernel, target)
            want = _old_lifetimes(kernel, target)
            assert {op: (b.start, b.end, b.pipes) for op, b in got.items() if b.end >= 0} == want
            lin = Linear.of(kernel)
            assert [(op, n) for op, n, _ in plm._spans(kernel)] == list(lin.number.items())
            nested += any(isinstance(o, scf.ForOp) and isinstance(o.parent_op(), scf.ForOp) for o in kernel.walk())
    assert nested >= 1  # a loop in a loop: the outermost one's span counts
