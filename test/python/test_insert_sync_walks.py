"""insert-sync's shortcuts past xDSL's generic walks and `isinstance` checks (issue 17, compile
speed) find what the plain forms find: the kernels of a module without walking their bodies,
a sync op by its type, and the affine forms of index values by the exact class of their
defining op -- a subclass of an index op still reads through it."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp

from ge.dialects import isa
from ge.ir import parse_module, run_passes
from ge.transforms import insert_sync as sync
from ge.transforms import isa_analysis as ia

UB = "memref<64xf32, #isa.space<ub>>"
GM = "memref<64xf32, #isa.space<gm>>"


def _kernel(name: str) -> str:
    return f"""isa.kernel @{name} ins(%x: {GM}) outs(%y: {GM}) block_dim 1 {{
    %a = isa.buffer offset 0 : {UB}
    %b = isa.buffer offset 256 : {UB}
    isa.copy_gm_to_ub %x to %a sizes [64] : {GM} to {UB}
    isa.vabs %b, %a repeat 1 : {UB}, {UB}
    isa.copy_ub_to_gm %b to %y sizes [64] : {UB} to {GM}
  }}"""


def test_kernels_found_without_walking_their_bodies_in_walk_order():
    module = parse_module(f"""builtin.module attributes {{ge.target = "ascend910"}} {{
  {_kernel("k0")}
  builtin.module {{
    {_kernel("k1")}
  }}
  {_kernel("k2")}
}}""")
    walked = [op for op in module.walk() if isinstance(op, isa.KernelOp)]
    assert [k.sym_name.data for k in sync.isa_kernels(module)] == ["k0", "k1", "k2"]
    assert sync.isa_kernels(module) == walked


def test_sync_ops_found_by_type():
    module = parse_module(f"""builtin.module attributes {{ge.target = "ascend910"}} {{
  {_kernel("k")}
}}""")
    kernel = next(op for op in module.walk() if isinstance(op, isa.KernelOp))
    assert not sync._has_sync(ia.kernel_ops(kernel.body.block))
    run_passes(module, "insert-sync")
    ops = ia.kernel_ops(kernel.body.block)
    assert sync._has_sync(ops) and any(isinstance(op, isa.SYNC_OPS) for op in ops)
    assert sync._has_sync([op for op in ops if isinstance(op, isa.PipeBarrierOp | isa.SetFlagOp)])


class _MyAddi(arith.AddiOp):
    """An arith.addi subclass: `_affine` reads it through its base class's entry."""


def test_affine_reads_through_index_ops_and_their_subclasses():
    index = IndexType()
    c3 = arith.ConstantOp(IntegerAttr(3, index))
    c5 = arith.ConstantOp(IntegerAttr(5, index))
    mul = arith.MuliOp(c3.result, c5.result)
    plain = arith.AddiOp(mul.result, c3.result)
    mine = _MyAddi(mul.result, c3.result)
    ModuleOp([c3, c5, mul, plain, mine])  # (an owner for the ops)
    assert ia.affine(plain.result) == ia.Affine((), 18)
    assert ia.affine(mine.result) == ia.Affine((), 18)  # the subclass fallback; a leaf without it
    assert ia.affine(c5.result, 16) == ia.Affine(((c5.result, 1),), 0)  # past the depth bound: a leaf
    assert ia._static(c5.result) == 5 and ia._static(mul.result) is None
