"""`to-isa` on hand-written tile kernels: the isa kernel, after plan-local-memory and
insert-sync, computes on the simulator exactly what the tile interpreter computes, with no
hazard. The cases cover what the lowering itself decides: the fractal orders of L0A / L0B /
L0C as move strides, permuted copies, windows for reads before / past the input (pad) and
writes past the output, the slot rotation of double-buffered loops (including the
accumulator, which must not rotate inside its K loop), and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from ge import targets
from ge.dialects import isa
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.ir import parse_module, run_passes
from ge.lowering.to_isa import IsaLoweringError, lower_kernel
from ge.runtime.simulator import Simulator
from ge.runtime.tile_interp import KernelProgram

HEADER = 'builtin.module attributes {ge.target = "ascend910"} {\n'

MATMUL_K_LOOP = HEADER + """
  tile.kernel @mm ins(%a: memref<32x128xf16, #tile.space<gm>>, %b: memref<128x48xf16, #tile.space<gm>>) outs(%c: memref<48x32xf32, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %a_l1 = tile.alloc buffers 1 : memref<32x128xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<128x48xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 2 : memref<32x64xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 2 : memref<64x48xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 2 : memref<32x48xf32, #tile.space<l0c>>
    %c_ub = tile.alloc buffers 1 : memref<48x32xf32, #tile.space<ub>>
    tile.copy %a[%c0, %c0] to %a_l1[%c0, %c0] sizes [32, 128] : memref<32x128xf16, #tile.space<gm>> to memref<32x128xf16, #tile.space<l1>>
    tile.copy %b[%c0, %c0] to %b_l1[%c0, %c0] sizes [128, 48] : memref<128x48xf16, #tile.space<gm>> to memref<128x48xf16, #tile.space<l1>>
    scf.for %s = %c0 to %c2 step %c1 {
      %k = arith.muli %s, %c64 : index
      tile.copy %a_l1[%c0, %k] to %a_l0[%c0, %c0] sizes [32, 64] : memref<32x128xf16, #tile.space<l1>> to memref<32x64xf16, #tile.space<l0a>>
      tile.copy %b_l1[%k, %c0] to %b_l0[%c0, %c0] sizes [64, 48] : memref<128x48xf16, #tile.space<l1>> to memref<64x48xf16, #tile.space<l0b>>
      %first = arith.cmpi eq, %s, %c0 : index
      tile.mmad %a_l0, %b_l0, %c_l0 init %first : memref<32x64xf16, #tile.space<l0a>>, memref<64x48xf16, #tile.space<l0b>>, memref<32x48xf32, #tile.space<l0c>>
    }
    tile.copy %c_l0[%c0, %c0] to %c_ub[%c0, %c0] sizes [32, 48] perm [1, 0] : memref<32x48xf32, #tile.space<l0c>> to memref<48x32xf32, #tile.space<ub>>
    tile.copy %c_ub[%c0, %c0] to %c[%c0, %c0] sizes [48, 32] : memref<48x32xf32, #tile.space<ub>> to memref<48x32xf32, #tile.space<gm>>
  }
}
"""

EDGES = HEADER + """
  tile.kernel @edges ins(%x: memref<1x2x10x10x16xf16, #tile.space<gm>>) outs(%y: memref<1x2x10x10x16xf16, #tile.space<gm>>) block_dim 2 kind "elementwise" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %in = tile.alloc buffers 2 : memref<1x1x4x10x16xf16, #tile.space<ub>>
    %block = tile.block_idx : index
    scf.for %t = %c0 to %c3 step %c1 {
      %r = arith.muli %t, %c4 : index
      %h = arith.subi %r, %c1 : index
      tile.copy %x[%c0, %block, %h, %c0, %c0] to %in[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 4, 10, 16] {pad = -1.0 : f32} : memref<1x2x10x10x16xf16, #tile.space<gm>> to memref<1x1x4x10x16xf16, #tile.space<ub>>
      tile.copy %in[%c0, %c0, %c0, %c0, %c0] to %y[%c0, %block, %r, %c0, %c0] sizes [1, 1, 4, 10, 16] : memref<1x1x4x10x16xf16, #tile.space<ub>> to memref<1x2x10x10x16xf16, #tile.space<gm>>
    }
  }
}
"""

# A strided read (every second column) from a padded window and a transposing UB -> UB move.
STRIDED = HEADER + """
  tile.kernel @strided ins(%x: memref<6x20xf32, #tile.space<gm>>) outs(%y: memref<8x8xf32, #tile.space<gm>>) block_dim 1 kind "opaque" {
    %c0 = arith.constant 0 : index
    %cm1 = arith.constant -1 : index
    %cm3 = arith.constant -3 : index
    %u = tile.alloc buffers 1 : memref<8x8xf32, #tile.space<ub>>
    %v = tile.alloc buffers 1 : memref<8x8xf32, #tile.space<ub>>
    tile.copy %x[%cm1, %cm3] to %u[%c0, %c0] sizes [8, 8] strides [1, 2] {pad = 7.0 : f32} : memref<6x20xf32, #tile.space<gm>> to memref<8x8xf32, #tile.space<ub>>
    tile.copy %u[%c0, %c0] to %v[%c0, %c0] sizes [8, 8] perm [1, 0] : memref<8x8xf32, #tile.space<ub>> to memref<8x8xf32, #tile.space<ub>>
    tile.copy %v[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] : memref<8x8xf32, #tile.space<ub>> to memref<8x8xf32, #tile.space<gm>>
  }
}
"""


def _kernels(text: str):
    module = parse_module(text)
    kernel = next(op for op in module.walk() if isinstance(op, t.KernelOp))
    lowered = run_passes(parse_module(text), "to-isa,plan-local-memory,insert-sync")
    return module, kernel, next(op for op in lowered.walk() if isinstance(op, isa.KernelOp))


def _compare(text: str, seed: int = 0) -> isa.KernelOp:
    _, tile_kernel, isa_kernel = _kernels(text)
    rng = np.random.default_rng(seed)
    args = tile_kernel.body.block.args
    n_in = tile_kernel.num_ins.value.data
    bufs = [rng.standard_normal(a.type.get_shape()).astype(numpy_dtype(a.type.element_type)) if i < n_in
            else np.zeros(a.type.get_shape(), numpy_dtype(a.type.element_type)) for i, a in enumerate(args)]
    expected = [b.copy() for b in bufs]
    KernelProgram(tile_kernel).run(expected)
    got = [b.copy() for b in bufs]
    sim = Simulator("ascend910")
    sim.run_kernel(isa_kernel, got)
    assert sim.report.problems == []
    for e, g in zip(expected[n_in:], got[n_in:]):
        np.testing.assert_array_equal(g, e)
    return isa_kernel


def test_fractal_orders_and_accumulation_match_the_tile_interpreter():
    kernel = _compare(MATMUL_K_LOOP)
    mmads = [op for op in kernel.walk() if isinstance(op, isa.MmadOp)]
    # the K loop of 2 steps is unrolled per slot of the double-buffered L0A / L0B ...
    assert len(mmads) == 2
    # ... but both steps accumulate into the same L0C slot: its copies rotate in no loop
    assert len({op.c for op in mmads}) == 1
    assert len({op.a for op in mmads}) == 2


def test_windows_pad_reads_and_drop_writes_at_the_edges():
    kernel = _compare(EDGES)
    loads = [op for op in kernel.walk() if isinstance(op, isa.CopyGmToUbOp)]
    assert loads and all(op.window and op.pad_value == -1.0 for op in loads)


def test_strided_padded_reads_and_transposes():
    _compare(STRIDED)


def test_each_output_row_is_written_once_from_the_row_above():
    # the tile kernel shifts the image down by one row (row -1 is the pad value -1); the
    # last tile's rows 10 and 11 fall past the output and must not be written anywhere
    _, _, isa_kernel = _kernels(EDGES)
    x = np.arange(2 * 10 * 10 * 16, dtype=np.float32).astype(np.float16).reshape(1, 2, 10, 10, 16)
    y = np.full_like(x, 5)
    Simulator("ascend910").run_kernel(isa_kernel, [x, y])
    np.testing.assert_array_equal(y[:, :, 1:], x[:, :, :-1])
    assert (y[:, :, 0] == -1).all()


def test_unsupported_op_is_a_located_error():
    text = MATMUL_K_LOOP.replace("%a_l1 = tile.alloc buffers 1 : memref<32x128xf16, #tile.space<l1>>",
                                 '%a_l1 = tile.alloc buffers 1 : memref<32x128xf16, #tile.space<l1>>\n'
                                 '    %sum = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %c0) -> (index) {\n'
                                 '      scf.yield %acc : index\n    }')
    module = parse_module(text)
    kernel = next(op for op in module.walk() if isinstance(op, t.KernelOp))
    with pytest.raises(IsaLoweringError, match=r"kernel @mm.*scf\.for: loop-carried values are not supported"):
        lower_kernel(kernel, targets.load_target("ascend910"))


def test_l0_buffer_that_is_not_whole_fractals_is_refused():
    text = MATMUL_K_LOOP.replace("x48x", "x40x").replace("48x", "40x").replace("x48", "x40").replace(", 48]", ", 40]")
    module = parse_module(text)
    kernel = next(op for op in module.walk() if isinstance(op, t.KernelOp))
    with pytest.raises(IsaLoweringError, match="whole"):
        lower_kernel(kernel, targets.load_target("ascend910"))


def test_double_buffering_lowers_the_cycles_of_a_load_bound_kernel():
    def cycles(passes: str) -> tuple[float, int]:
        kernel = next(op for op in run_passes(parse_module(EDGES), passes).walk() if isinstance(op, isa.KernelOp))
        x = np.ones((1, 2, 10, 10, 16), np.float16)
        sim = Simulator("ascend910")
        stats = sim.run_kernel(kernel, [x, np.zeros_like(x)])
        assert sim.report.problems == []
        slots = max(len(op.slots) for op in kernel.walk() if isinstance(op, isa.BufferOp))
        return stats.cycles, slots

    double, two = cycles("to-isa,plan-local-memory,insert-sync")
    single, one = cycles("to-isa{double-buffer=false},plan-local-memory,insert-sync")
    assert (two, one) == (2, 1)
    assert double < single


def test_l0c_read_out_follows_the_target():
    """L0C -> UB is the Vector unit's copy_l0c_to_ub on the 910 (no FixPipe) and a
    fixpipe on the 910B; both compute what the tile interpreter computes."""
    kernel = _compare(MATMUL_K_LOOP)
    names = [op.name for op in kernel.walk() if isinstance(op, isa.InstructionOp)]
    assert names.count("isa.copy_l0c_to_ub") == 1 and "isa.fixpipe" not in names
    read_out = next(op for op in kernel.walk() if isinstance(op, isa.CopyL0cToUbOp))
    assert read_out.PIPE == isa.Pipe.V
    text = MATMUL_K_LOOP.replace(HEADER, HEADER.replace("ascend910", "ascend910b"))
    _, _, kernel_b = _kernels(text)
    names_b = [op.name for op in kernel_b.walk() if isinstance(op, isa.InstructionOp)]
    assert names_b.count("isa.fixpipe") == 1 and "isa.copy_l0c_to_ub" not in names_b


def test_l0c_straight_to_gm_needs_fixpipe():
    """The 910 has no path from L0C to GM (its read-out goes to UB only): a located error;
    the 910B's FixPipe writes GM directly."""
    text = MATMUL_K_LOOP.replace(
        "tile.copy %c_l0[%c0, %c0] to %c_ub[%c0, %c0] sizes [32, 48] perm [1, 0] : memref<32x48xf32, #tile.space<l0c>> "
        "to memref<48x32xf32, #tile.space<ub>>",
        "tile.copy %c_l0[%c0, %c0] to %c[%c0, %c0] sizes [32, 48] perm [1, 0] : memref<32x48xf32, #tile.space<l0c>> "
        "to memref<48x32xf32, #tile.space<gm>>")
    assert text != MATMUL_K_LOOP
    kernel = next(op for op in parse_module(text).walk() if isinstance(op, t.KernelOp))
    with pytest.raises(IsaLoweringError, match=r"kernel @mm.*tile\.copy: no isa move from l0c to gm on ascend910 "
                                               r"\(it has no FixPipe"):
        lower_kernel(kernel, targets.load_target("ascend910"))
    lowered = lower_kernel(kernel, targets.load_target("ascend910b"))
    assert any(isinstance(op, isa.FixpipeOp) for op in lowered.walk())


def _generic(op) -> str:
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(op)
    return out.getvalue()


def test_fast_builders_make_the_ops_of_the_irdl_constructors():
    """`move_op`, `create_op` and the builder's binary ops skip xDSL's IRDL argument
    building: the ops (operands, segment sizes, properties in order, results) are the same."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f16

    from ge.lowering.index_builder import create_op, int_attr
    from ge.lowering.isa_builder import IsaBuilder, move_op

    b = IsaBuilder.new_kernel("k", [], [])
    src, dst = (b.buffer(isa.MemSpace.UB, [256], f16)[0] for _ in range(2))
    off, lo, hi = b.const(16), b.const(0), b.const(3)
    cases = [
        (isa.CopyUbToUbOp(src, dst, [4, 8], src_offset=off, src_strides=[16, 1], window=[lo, hi, lo, hi], pad=0.0),
         move_op(isa.CopyUbToUbOp, src, dst, [4, 8], src_offset=off, src_strides=[16, 1], window=[lo, hi, lo, hi],
                 pad=0.0)),
        (isa.CopyUbToUbOp(src, dst, [32], dst_offset=off, dst_strides=[1]),
         move_op(isa.CopyUbToUbOp, src, dst, [32], dst_offset=off, dst_strides=[1])),
        (isa.VAddOp.build(operands=[dst, [off], src, [], src, [off]], properties={"repeat": int_attr(2)}),
         create_op(isa.VAddOp, [dst, [off], src, [], src, [off]], {"repeat": int_attr(2)})),
    ]
    for slow, fast in cases:
        assert type(fast) is type(slow)
        assert list(fast.operands) == list(slow.operands)
        assert list(fast.properties) == list(slow.properties)  # the order the printer follows
        assert _generic(fast) == _generic(slow)
        assert fast.result_types == slow.result_types == ()
    # the builder's second add of a kind is created from the first's properties
    i = b.add(arith.AddiOp(off, hi)).result
    first, second = b._binary(arith.AddiOp, i, 5), b._binary(arith.AddiOp, i, 7)
    assert first.owner.properties == second.owner.properties == arith.AddiOp(i, i).properties
    assert second.type == i.type and list(second.owner.operands) == [i, b.const(7)]


def _pipelined_loops(lo, hi, slots: int, guarded: bool) -> tuple[list[tuple], list[int]]:
    """The loops `IsaBuilder.pipelined` emits over lo .. hi (each loop's induction name,
    static step, `isa.max_trips` and the name of the loop around it) and the slots the body
    was emitted for, in order. A `None` hi: a core's share, lo = core x lo, hi = min(lo + 3,
    10) (neither static)."""
    from xdsl.dialects import scf

    from ge.lowering.isa_builder import IsaBuilder
    from ge.transforms.isa_analysis import _static

    b = IsaBuilder.new_kernel("k", [], [], 2)
    if hi is None:
        lo = b.mul(b.block_idx(), lo)
        hi = b.min_(b.add_(lo, 3), 10)
    emitted = []
    b.pipelined(lo, hi, slots, lambda it, s: emitted.append(s), guarded=guarded)

    def outer(op):
        parent = op.parent_op()
        return parent.body.block.args[0].name_hint if isinstance(parent, scf.ForOp) else None

    def trips(op):
        hint = op.attributes.get(isa.MAX_TRIPS_ATTR)
        return None if hint is None else hint.value.data

    loops = [(op.body.block.args[0].name_hint, _static(op.step), trips(op), outer(op))
             for op in b.kernel.walk() if isinstance(op, scf.ForOp)]
    return loops, emitted


@pytest.mark.parametrize("lo,hi,slots,guarded,loops,emitted", [
    # whole rounds: the rounds' loop only, guarded or not
    (0, 6, 2, False, [("t", 2, None, None)], [0, 1]),
    (0, 6, 2, True, [("t", 2, None, None)], [0, 1]),
    # a leftover: after the rounds in a loop of at most slots - 1 trips, or (guarded) in
    # the last round, the later slots each in a loop of at most one trip inside the rounds' loop
    (0, 5, 2, False, [("t", 2, None, None), ("t_rest", 1, 1, None)], [0, 1, 0]),
    (0, 5, 2, True, [("t", 2, None, None), ("t1_if", 1, 1, "t")], [0, 1]),
    (0, 7, 3, True, [("t", 3, None, None), ("t1_if", 1, 1, "t"), ("t2_if", 1, 1, "t")], [0, 1, 2]),
    # fewer iterations than slots: the leftover loop alone
    (0, 1, 2, False, [("t_rest", 1, 1, None)], [0]),
    # a core's share (bounds not static): the guarded form whatever the count
    (3, None, 2, False, [("t", 2, None, None), ("t_rest", 1, 1, None)], [0, 1, 0]),
    (3, None, 2, True, [("t", 2, None, None), ("t1_if", 1, 1, "t")], [0, 1]),
    # one slot: a plain loop
    (0, 5, 1, False, [("t", 1, None, None)], [0]),
    (0, 5, 1, True, [("t", 1, None, None)], [0]),
])
def test_pipelined_rounds_and_their_leftover(lo, hi, slots, guarded, loops, emitted):
    assert _pipelined_loops(lo, hi, slots, guarded) == (loops, emitted)
