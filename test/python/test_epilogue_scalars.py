"""One-value constants of an elementwise region are scalar-operand instructions, and the
tiler prices them so (issue 16: bert_base's GELU epilogue x * 0.5 * (1 + erf(x / sqrt 2))).

- isa_vector: a constant on the left of a commutative Add / Mul / Max / Min is swapped to
  the right -- one vadds / vmuls / vmaxs / vmins, not a vdup of a block and a tensor op;
- tile_cost.op_program: an op with a one-value constant operand costs its scalar form
  (vadds / vmuls ... at the target's cycles per repeat; x - c and a float x / c too), the
  constant itself nothing when every reader takes it as an immediate.
Numerics against the reference interpreter at the element type's tolerance (`Result.check`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ge import targets
from ge.lowering.tile_cost import Machine, op_program, scalar_form

sys.path.insert(0, str(Path(__file__).parent))
from test_isa_vector import Result, random_args, region
from test_to_isa import _kernels

TARGET = "ascend910"
T = "tensor<128x64xf16>"
C = "tensor<f16>"


def _gelu_region():
    """bert_base's k13 epilogue after the read-out, its constants inside the region."""
    return region(f"""
    func.func @f(%x: {T}) -> {T} {{
      %s = graph.constant dense<1.414060e+00> : {C}
      %one = graph.constant dense<1.000000e+00> : {C}
      %half = graph.constant dense<5.000000e-01> : {C}
      %d = graph.div %x, %s : ({T}, {C}) -> {T}
      %e = graph.erf %d : {T}
      %a = graph.add %one, %e : ({C}, {T}) -> {T}
      %m = graph.mul %x, %a : ({T}, {T}) -> {T}
      %y = graph.mul %half, %m : ({C}, {T}) -> {T}
      func.return %y : {T}
    }}""")


def _run(vop, seed: int = 0) -> Result:
    res = Result(vop, random_args(vop, np.random.default_rng(seed)))
    res.check()
    return res


def test_constants_on_the_left_are_scalar_operands():
    res = _run(_gelu_region())
    names = [op.name for op in res.vector_ops()]
    assert names == ["isa.vmuls", "isa.verf", "isa.vadds", "isa.vmul", "isa.vmuls"], names
    assert not [op for op in res.kernel.walk() if op.name in ("isa.vdup", "isa.copy_ub_to_ub")]


@pytest.mark.parametrize("op,first,form", [
    ("add", True, "vadds"), ("add", False, "vadds"), ("mul", True, "vmuls"), ("max", True, "vmaxs"),
    ("min", False, "vmins"), ("sub", False, "vadds"), ("div", False, "vmuls"), ("sub", True, None),
    ("div", True, None),
])
def test_scalar_form_is_what_the_lowering_emits(op, first, form):
    ops = f"%c, %x : ({C}, {T})" if first else f"%x, %c : ({T}, {C})"
    vop = region(f"""
    func.func @f(%x: {T}) -> {T} {{
      %c = graph.constant dense<1.750000e+00> : {C}
      %y = graph.{op} {ops} -> {T}
      func.return %y : {T}
    }}""")
    res = _run(vop)
    graph_op = next(o for o in vop.body.block.ops if o.name == f"graph.{op}")
    assert scalar_form(graph_op) == form
    emitted = [o.name.split(".")[1] for o in res.vector_ops() if o.name not in ("isa.vdup",)]
    if form is not None:
        assert emitted == [form]
    else:
        assert form not in emitted


def test_op_program_prices_the_scalar_forms_as_simulated():
    """The region's model cost (sum of its ops' programs) is the simulator's V busy time
    within 5%; before, each constant cost a repeat and each scalar op a tensor op's price."""
    vop = _gelu_region()
    res = _run(vop)
    mach = Machine(targets.load_target(TARGET))
    programs = [op_program(mach, o, (128, 64)) for o in vop.body.block.ops if o.name != "tile.yield"]
    assert [p for p, o in zip(programs, vop.body.block.ops) if o.name == "graph.constant"] == [[], [], []]
    assert [i[0] for p in programs for i in p] == ["vmuls", "verf", "vadds", "vmul", "vmuls"]
    model = sum(mach.program(p) for p in programs)
    simulated = res.sim.report.kernels[0].pipe_busy["V"]
    assert abs(model / simulated - 1) <= 0.05, (model, simulated)


def test_a_constant_read_as_a_tensor_costs_one_block():
    """c - x: the constant becomes one block written by vdup, then a vsub."""
    vop = region(f"""
    func.func @f(%x: {T}) -> {T} {{
      %c = graph.constant dense<1.750000e+00> : {C}
      %y = graph.sub %c, %x : ({C}, {T}) -> {T}
      func.return %y : {T}
    }}""")
    res = _run(vop)
    assert [o.name for o in res.vector_ops()] == ["isa.vdup", "isa.vsub"]
    mach = Machine(targets.load_target(TARGET))
    const, sub = [o for o in vop.body.block.ops if o.name != "tile.yield"]
    assert op_program(mach, const, ()) == [("default", "f16", 1)]
    assert op_program(mach, sub, (128, 64)) == [("vsub", "f16", 64)]


# --------------------------------------------------------------------------------------
# Row slices of one tile: the second reuses the first's spread blocks (to_isa.slice_blocks)
# --------------------------------------------------------------------------------------

ROWS = 128  # a row slice of bert_base's k13 epilogue: the bias row repeated pays there
_SLICE = """
    tile.copy %x[{r}, %c0] to %x_ub[%c0, %c0] sizes [{n}, 64] : memref<{m}x64xf16, #tile.space<gm>> to memref<{n}x64xf16, #tile.space<ub>>
    tile.vector ins(%x_ub, %b_ub, %s_ub : memref<{n}x64xf16, #tile.space<ub>>, memref<64xf16, #tile.space<ub>>, memref<f16, #tile.space<ub>>) outs(%y_ub : memref<{n}x64xf16, #tile.space<ub>>) {{
    ^bb0(%xa: tensor<{n}x64xf16>, %ba: tensor<64xf16>, %sa: tensor<f16>):
      %a = graph.add %xa, %ba : (tensor<{n}x64xf16>, tensor<64xf16>) -> tensor<{n}x64xf16>
      %d = graph.div %a, %sa : (tensor<{n}x64xf16>, tensor<f16>) -> tensor<{n}x64xf16>
      %e = graph.erf %d : tensor<{n}x64xf16>
      tile.yield %e : tensor<{n}x64xf16>
    }}
    tile.copy %y_ub[%c0, %c0] to %y[{r}, %c0] sizes [{n}, 64] : memref<{n}x64xf16, #tile.space<ub>> to memref<{m}x64xf16, #tile.space<gm>>"""


def _sliced_kernel(rewrite: bool) -> str:
    """Two tiles of 2 ROWS rows, each in two row slices that read one bias row and one
    divisor; `rewrite`: the divisor's UB tile is loaded again (from another GM value)
    between the slices."""
    between = ("\n    tile.copy %s2[] to %s_ub[] sizes [] : memref<f16, #tile.space<gm>> to memref<f16, #tile.space<ub>>"
               if rewrite else "")
    return HEADER + """
  tile.kernel @slices ins(%x: memref<{m}x64xf16, #tile.space<gm>>, %b: memref<64xf16, #tile.space<gm>>, %s: memref<f16, #tile.space<gm>>, %s2: memref<f16, #tile.space<gm>>) outs(%y: memref<{m}x64xf16, #tile.space<gm>>) block_dim 1 kind "elementwise" {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cn = arith.constant {n} : index
    %c2n = arith.constant {n2} : index
    %c64 = arith.constant 64 : index
    %x_ub = tile.alloc buffers 1 : memref<{n}x64xf16, #tile.space<ub>>
    %b_ub = tile.alloc buffers 1 : memref<64xf16, #tile.space<ub>>
    %s_ub = tile.alloc buffers 1 : memref<f16, #tile.space<ub>>
    %y_ub = tile.alloc buffers 1 : memref<{n}x64xf16, #tile.space<ub>>
    scf.for %t = %c0 to %c2 step %c1 {{
    %r0 = arith.muli %t, %c2n : index
    %r1 = arith.addi %r0, %cn : index
    tile.copy %b[%c0] to %b_ub[%c0] sizes [64] : memref<64xf16, #tile.space<gm>> to memref<64xf16, #tile.space<ub>>
    tile.copy %s[] to %s_ub[] sizes [] : memref<f16, #tile.space<gm>> to memref<f16, #tile.space<ub>>""".format(n=ROWS, n2=2 * ROWS, m=4 * ROWS) + \
        _SLICE.format(r="%r0", n=ROWS, m=4 * ROWS) + between + _SLICE.format(r="%r1", n=ROWS, m=4 * ROWS) + """
    }
  }
}
"""


HEADER = 'builtin.module attributes {ge.target = "ascend910"} {\n'


@pytest.mark.parametrize("rewrite", [False, True])
def test_second_row_slice_reuses_the_spread_blocks(rewrite):
    from ge.dialects.dtypes import numpy_dtype
    from ge.runtime.simulator import Simulator
    from ge.runtime.tile_interp import KernelProgram

    _, tile_kernel, kernel = _kernels(_sliced_kernel(rewrite))
    names = [op.name for op in kernel.walk()]
    # once per tile: the divisor's block (+ its vrec) and the bias row repeated to a full repeat;
    # again in the second slice only when its divisor was loaded again
    assert names.count("isa.copy_ub_to_ub") == (3 if rewrite else 2)
    assert names.count("isa.vrec") == (2 if rewrite else 1)
    rng = np.random.default_rng(0)
    args = tile_kernel.body.block.args
    bufs = [rng.standard_normal(a.type.get_shape()).astype(numpy_dtype(a.type.element_type)) for a in args[:4]]
    bufs[2], bufs[3] = np.array(1.414, np.float16), np.array(0.5, np.float16)
    bufs.append(np.zeros((4 * ROWS, 64), np.float16))
    want = [b.copy() for b in bufs]
    KernelProgram(tile_kernel).run(want)
    got = [b.copy() for b in bufs]
    sim = Simulator("ascend910")
    sim.run_kernel(kernel, got)
    assert sim.report.problems == []
    # x * (1 / c) for x / c, in f16: within a few f16 ulps of the quotient before the erf
    np.testing.assert_allclose(got[4].astype(np.float32), want[4].astype(np.float32), rtol=0, atol=4e-3)
