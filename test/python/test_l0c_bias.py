"""The 910's Cube epilogue with the bias in L0C (no FixPipe): `isa.broadcast_ub_to_l0c`
(CCE broadcast_ub_to_cc, Ascend C BroadCastVecToMM) puts the per-channel f32 bias into the
accumulator's fractals before the mmad chain, the mmads accumulate onto it, and the
converting read-out `copy_l0c_to_ub` (f32 -> f16 [+ ReLU]) replaces the epilogue's bias add
and accumulator cast on the Vector unit.

Here: the instruction's semantics and timing on the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from ge.dialects import isa
from ge.ir import parse_module, run_passes
from ge.runtime import isa_kernels as K
from ge.runtime.sim_timing import CostModel
from ge.runtime.simulator import run_kernel
from ge.targets import load_target

RNG = np.random.default_rng(7)


def nz_to_matrix(c: np.ndarray, m: int, n: int) -> np.ndarray:
    return K.nz_to_matrix(c, m, n, 16, 16)


def module(body: str, ins: str, outs: str, target: str = "ascend910"):
    m = parse_module(f"""builtin.module attributes {{ge.target = "{target}"}} {{
  isa.kernel @k ins({ins}) outs({outs}) block_dim 1 {{
{body}
  }}
}}""")
    return run_passes(m, "plan-local-memory,insert-sync")


def test_broadcast_kernel_function_repeats_each_group_over_16_rows():
    src = np.arange(2 * 32, dtype=np.float32).reshape(2, 32)  # 2 blocks of 2 groups
    out = K.broadcast_ub_to_l0c(src).reshape(2, 2, 16, 16)
    for b in range(2):
        for g in range(2):
            assert (out[b, g] == src[b, g * 16:(g + 1) * 16][None, :]).all()


@pytest.mark.parametrize("m, n", [(16, 16), (32, 48), (64, 32)])
def test_broadcast_fills_every_row_of_an_nz_tile_with_the_bias(m, n):
    """One instruction per row fractal (count n / 16, len 1, dst_gap m / 16 - 1) gives every
    row of the [m, n] NZ tile the bias vector; read out as a plain f32 matrix."""
    m1, n1 = m // 16, n // 16
    ub_b, l0c = f"memref<{n}xf32, #isa.space<ub>>", f"memref<{m * n}xf32, #isa.space<l0c>>"
    ub_o, gm_b, gm_o = f"memref<{m * n}xf32, #isa.space<ub>>", f"memref<{n}xf32, #isa.space<gm>>", \
        f"memref<{m * n}xf32, #isa.space<gm>>"
    consts = "\n".join(f"    %o{i} = arith.constant {i * 256} : index" for i in range(m1))
    brc = "\n".join(f"    isa.broadcast_ub_to_l0c %b to %c[%o{i}] count {n1} len 1 src_gap 0 dst_gap {m1 - 1} : "
                    f"{ub_b} to {l0c}" for i in range(m1))
    body = f"""{consts}
    %b = isa.buffer : {ub_b}
    %c = isa.buffer : {l0c}
    %u = isa.buffer : {ub_o}
    isa.copy_gm_to_ub %bias to %b sizes [{n}] : {gm_b} to {ub_b}
{brc}
    isa.copy_l0c_to_ub %c to %u sizes [{m * n}] : {l0c} to {ub_o}
    isa.copy_ub_to_gm %u to %y sizes [{m * n}] : {ub_o} to {gm_o}"""
    mod = module(body, f"%bias: {gm_b}", f"%y: {gm_o}")
    bias = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(m * n, np.float32)
    report, _ = run_kernel(mod, [bias, out])
    report.check()
    np.testing.assert_array_equal(nz_to_matrix(out, m, n), np.broadcast_to(bias, (m, n)))
    assert report.kernels[0].instructions.get("V", 0) >= m1 + 1


def test_mmad_accumulates_onto_the_broadcast_bias_and_the_read_out_converts_and_relus():
    """bias -> L0C, mmad without init (accumulate), copy_l0c_to_ub f32 -> f16 with ReLU:
    relu(f16(A @ B + bias)) in one rounding, as the graph's f32 add then cast."""
    m, k, n = 32, 32, 32
    a = (RNG.standard_normal((m, k)) * 0.5).astype(np.float16)
    b = (RNG.standard_normal((k, n)) * 0.5).astype(np.float16)
    bias = RNG.standard_normal(n).astype(np.float32)
    az, bz = K.matrix_to_zz(a, 16, 16), K.matrix_to_zn(b, 16, 16)
    t = {"a1": "memref<1024xf16, #isa.space<l1>>", "b1": "memref<1024xf16, #isa.space<l1>>",
         "a0": "memref<1024xf16, #isa.space<l0a>>", "b0": "memref<1024xf16, #isa.space<l0b>>",
         "c": "memref<1024xf32, #isa.space<l0c>>", "ub": "memref<32xf32, #isa.space<ub>>",
         "o": "memref<1024xf16, #isa.space<ub>>", "ga": "memref<1024xf16, #isa.space<gm>>",
         "gb": "memref<32xf32, #isa.space<gm>>"}
    body = f"""    %c256 = arith.constant 256 : index
    %a1 = isa.buffer : {t['a1']}
    %b1 = isa.buffer : {t['b1']}
    %a0 = isa.buffer : {t['a0']}
    %b0 = isa.buffer : {t['b0']}
    %c = isa.buffer : {t['c']}
    %bu = isa.buffer : {t['ub']}
    %o = isa.buffer : {t['o']}
    isa.copy_gm_to_ub %bias to %bu sizes [32] : {t['gb']} to {t['ub']}
    isa.broadcast_ub_to_l0c %bu to %c count 2 len 1 src_gap 0 dst_gap 1 : {t['ub']} to {t['c']}
    isa.broadcast_ub_to_l0c %bu to %c[%c256] count 2 len 1 src_gap 0 dst_gap 1 : {t['ub']} to {t['c']}
    isa.copy_gm_to_l1 %a to %a1 sizes [1024] : {t['ga']} to {t['a1']}
    isa.copy_gm_to_l1 %bm to %b1 sizes [1024] : {t['ga']} to {t['b1']}
    isa.copy_l1_to_l0a %a1 to %a0 sizes [1024] : {t['a1']} to {t['a0']}
    isa.copy_l1_to_l0b %b1 to %b0 sizes [1024] : {t['b1']} to {t['b0']}
    isa.mmad %c, %a0, %b0 m 32 k 32 n 32 : {t['c']}, {t['a0']}, {t['b0']}
    isa.copy_l0c_to_ub %c to %o sizes [2, 32, 16] dst_strides [16, 32, 1] relu : {t['c']} to {t['o']}
    isa.copy_ub_to_gm %o to %y sizes [1024] : {t['o']} to {t['ga']}"""
    mod = module(body, f"%a: {t['ga']}, %bm: {t['ga']}, %bias: {t['gb']}", f"%y: {t['ga']}")
    out = np.zeros(m * n, np.float16)
    report, _ = run_kernel(mod, [az, bz, bias, out])
    report.check()
    want = np.maximum((a.astype(np.float32) @ b.astype(np.float32) + bias).astype(np.float16), 0)
    np.testing.assert_array_equal(out.reshape(m, n), want)


def test_broadcast_timing_is_the_vector_start_up_plus_8_cycles_per_f32_fractal():
    target = load_target("ascend910")
    cost = CostModel(target)
    startup, busy, gm = cost.broadcast(6, "f32", 6 * 1024)
    assert (startup, busy, gm) == (target.startup.vector, 48.0, 0.0)
    # never faster than the Cube's own L0C write (one f32 fractal per cycle)
    assert busy >= 6
    # f16 fractals are half the bytes
    assert cost.broadcast(6, "f16", 6 * 512)[1] == 24.0
    # a chip whose table has no figure: the bytes at the L0C read-out rate
    b = load_target("ascend910b")
    assert "broadcast_ub_to_l0c" not in b.vector_cost
    assert CostModel(b).broadcast(2, "f32", 2048)[1] == pytest.approx(2048 / b.onchip.l0c_out)


def test_simulated_broadcast_occupies_the_vector_pipe():
    """A kernel whose only V instruction is one broadcast of 4 f32 fractals: V busy = its
    start-up + 4 x 8 cycles."""
    ub, l0c = "memref<64xf32, #isa.space<ub>>", "memref<1024xf32, #isa.space<l0c>>"
    gm = "memref<64xf32, #isa.space<gm>>"
    body = f"""    %b = isa.buffer : {ub}
    %c = isa.buffer : {l0c}
    isa.copy_gm_to_ub %x to %b sizes [64] : {gm} to {ub}
    isa.broadcast_ub_to_l0c %b to %c count 4 len 1 src_gap 0 dst_gap 0 : {ub} to {l0c}"""
    mod = module(body, f"%x: {gm}", "")
    report, _ = run_kernel(mod, [RNG.standard_normal(64).astype(np.float32)])
    report.check()
    stats = report.kernels[0]
    target = load_target("ascend910")
    assert stats.pipe_busy["V"] == pytest.approx(target.startup.vector + 4 * 8)
    assert stats.instructions["V"] == 1


def test_a_broadcast_read_before_its_bias_arrives_is_a_hazard():
    """Without insert-sync the broadcast (V) reads UB that MTE2 is still writing: RAW."""
    ub, l0c = "memref<64xf32, #isa.space<ub>>", "memref<1024xf32, #isa.space<l0c>>"
    gm = "memref<64xf32, #isa.space<gm>>"
    mod = parse_module(f"""builtin.module attributes {{ge.target = "ascend910"}} {{
  isa.kernel @k ins(%x: {gm}) outs() block_dim 1 {{
    %b = isa.buffer offset 0 : {ub}
    %c = isa.buffer offset 0 : {l0c}
    isa.copy_gm_to_ub %x to %b sizes [64] : {gm} to {ub}
    isa.broadcast_ub_to_l0c %b to %c count 4 len 1 src_gap 0 dst_gap 0 : {ub} to {l0c}
  }}
}}""")
    report, _ = run_kernel(mod, [RNG.standard_normal(64).astype(np.float32)])
    assert any(str(p).startswith("RAW: isa.broadcast_ub_to_l0c") for p in report.problems), report.problems


def test_broadcast_is_an_instruction_on_the_vector_pipe():
    assert isa.BroadcastUbToL0cOp.PIPE == isa.Pipe.V
    assert isa.BroadcastUbToL0cOp in isa.INSTRUCTION_OPS


# --------------------------------------------------------------------------------------
# to-isa: the epilogue head goes into L0C and the read-out
# --------------------------------------------------------------------------------------


def conv_model(residual: bool, relu: bool = True, hw: int = 14, cin: int = 32, cout: int = 48, seed: int = 0):
    """Conv + bias [+ residual Add] [+ ReLU], f32 ONNX (compiled force_fp16)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv")]
    out = "c"
    if residual:
        nodes.append(helper.make_node("Add", ["c", "r"], ["a"], name="add"))
        out = "a"
    if relu:
        nodes.append(helper.make_node("Relu", [out], ["y"], name="relu"))
        out = "y"
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])]
    if residual:
        ins.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, cout, hw, hw]))
    g = helper.make_graph(nodes, "g", ins,
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, cout, hw, hw])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def isa_module(model, target: str = "ascend910", l0c_bias: bool = True):
    from xdsl.dialects.builtin import StringAttr

    from ge.frontend.onnx import import_model

    m = import_model(model)
    run_passes(m, "graph-optimize{precision=force_fp16}")
    m.attributes["ge.target"] = StringAttr(target)
    flag = "" if l0c_bias else "{l0c-bias=false}"
    return run_passes(m, f"assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa{flag}")


def cube_kernel(module) -> isa.KernelOp:
    (k,) = [op for op in module.body.block.ops if isinstance(op, isa.KernelOp)
            and any(isinstance(o, isa.MmadOp) for o in op.walk())]
    return k


def names(kernel: isa.KernelOp) -> list[str]:
    return [op.name for op in kernel.walk() if isinstance(op, isa.InstructionOp)]


@pytest.mark.parametrize("residual, relu", [(False, True), (True, True), (False, False)])
def test_conv_bias_goes_into_l0c_and_the_read_out_converts(residual, relu):
    k = cube_kernel(isa_module(conv_model(residual, relu)))
    ops = names(k)
    assert "isa.broadcast_ub_to_l0c" in ops
    # every broadcast precedes the first mmad of its tile, and the mmads accumulate (init false)
    assert ops.index("isa.broadcast_ub_to_l0c") < ops.index("isa.mmad")
    mmads = [op for op in k.walk() if isinstance(op, isa.MmadOp)]
    assert all(isa.static_init(op) is False for op in mmads)
    reads = [op for op in k.walk() if isinstance(op, isa.CopyL0cToUbOp)]
    assert reads and all(op.dst.type.element_type.name == "f16" for op in reads)
    # ReLU on the read-out only when it follows the cast directly (not after a residual add)
    assert all((op.relu is not None) == (relu and not residual) for op in reads)
    # no f32 vector work is left: neither the bias add nor the accumulator's cast
    f32_vec = [op for op in k.walk() if isinstance(op, isa.VAddOp | isa.VConvOp)
               and any(v.type.element_type.name == "f32" and isa.space_of(v.type) == isa.MemSpace.UB
                       for v in op.operands if hasattr(v.type, "element_type"))]
    assert all(isinstance(op, isa.VConvOp) and op.src.type.element_type.name == "f16" for op in f32_vec)
    # a ReLU after the residual add runs on the add's pass (`isa_vector.relu_after`)
    assert ("isa.vaddrelu" in ops) == (relu and residual) and "isa.vrelu" not in ops


def test_l0c_bias_false_keeps_the_vector_epilogue():
    k = cube_kernel(isa_module(conv_model(True), l0c_bias=False))
    ops = names(k)
    assert "isa.broadcast_ub_to_l0c" not in ops
    reads = [op for op in k.walk() if isinstance(op, isa.CopyL0cToUbOp)]
    assert all(op.dst.type.element_type.name == "f32" and op.relu is None for op in reads)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310b"])
def test_fixpipe_chips_do_not_broadcast(target):
    k = cube_kernel(isa_module(conv_model(True), target))
    assert "isa.broadcast_ub_to_l0c" not in names(k)


def onnxruntime_run(model, inputs):
    import onnxruntime as ort

    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, inputs)[0]


@pytest.mark.parametrize("residual, relu", [(False, True), (True, True), (False, False)])
def test_conv_epilogue_in_l0c_matches_onnxruntime(residual, relu):
    """force_fp16 within 2% of the output scale (test_l0c_route's tolerance), hazard-free."""
    import ge

    model = conv_model(residual, relu)
    x = {"x": RNG.standard_normal((1, 32, 14, 14)).astype(np.float32)}
    if residual:
        x["r"] = RNG.standard_normal((1, 48, 14, 14)).astype(np.float32)
    want = onnxruntime_run(model, x)
    compiled = ge.compile(model, ge.CompileOptions(soc_version="ascend910", precision_mode="force_fp16",
                                                   keep_ir_text=False))
    got = next(iter(compiled.run(x).values()))
    assert compiled.last_run.problems == []
    assert sum(body["instrs"].count("isa.broadcast_ub_to_l0c") for body in compiled.model.kernels["bodies"]) > 0
    err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert err < 2e-2, err


# --------------------------------------------------------------------------------------
# The tiler's cost of the new epilogue (tile_cost.l0c_epilogue_program)
# --------------------------------------------------------------------------------------


def test_cost_program_charges_the_broadcast_instead_of_the_bias_add_and_the_cast():
    from ge.lowering.tile_cost import Machine, l0c_epilogue_program

    mach = Machine(load_target("ascend910"))
    conv = (("vadd", "f32", 4, True), ("vconv", "f32", 4, False), ("vadd", "f16", 2, False),
            ("vrelu", "f16", 2, False))
    assert l0c_epilogue_program(mach, conv) == (("broadcast_ub_to_l0c", "f32", 1, False), ("vadd", "f16", 2, False),
                                                ("vrelu", "f16", 2, False))
    # a ReLU right after the cast goes to the read-out; no bias: the cast alone goes
    assert l0c_epilogue_program(mach, (("vadd", "f32", 4, True), ("vconv", "f32", 4, False),
                                       ("vrelu", "f16", 2, False))) == (("broadcast_ub_to_l0c", "f32", 1, False),)
    assert l0c_epilogue_program(mach, (("vconv", "f32", 4, False), ("vrelu", "f16", 2, False))) == ()
    # an f32 epilogue (no cast) and a FixPipe chip keep their programs
    f32 = (("vadd", "f32", 4, True), ("vrelu", "f32", 4, False))
    assert l0c_epilogue_program(mach, f32) == f32
    assert l0c_epilogue_program(Machine(load_target("ascend910b")), conv) == conv
    # a 112 x 64 tile: 28 fractals at 8 cycles + one start-up, vs the add and the cast's 2 x 112 repeats x 2
    target = load_target("ascend910")
    bpr = target.vector.bytes_per_repeat
    new = mach.instruction("broadcast_ub_to_l0c", "f32", 112 * 64 * 1 // bpr)
    assert new == target.startup.vector + 28 * 8
    old = mach.instruction("vadd", "f32", 112 * 64 * 4 // bpr) + mach.instruction("vconv", "f32", 112 * 64 * 4 // bpr)
    assert new < old


def test_tiler_charges_the_l0c_epilogue_only_in_one_slice():
    """tile_cube._epilogue_stages charges the 910's bias-in-L0C program for an epilogue in
    one row slice, and the vector program for a sliced one: its slices' read-outs share one
    UB tile, which to-isa leaves to the Vector unit (its vconv stays: bert_base's q
    projection, 4 slices, 291 cycles per slice); the 910B keeps its program either way."""
    from ge.lowering import tile_cube
    from ge.lowering.tile_cost import Machine, l0c_epilogue_program

    conv = (("vadd", "f32", 4, True), ("vconv", "f32", 4, False), ("vrelu", "f16", 2, False))
    for chip, l0c in (("ascend910", True), ("ascend910b", False)):
        mach = Machine(load_target(chip))
        for es in (1, 4):
            s = tile_cube._Sizes(0, 0, 0, 0, 128 * 64 * 4, 0, 0, 128 * 64 * 2, 3, conv, epi_split=es)
            vec = tile_cube._epilogue_stages(mach, s, 128, 64, 1)[2]
            program = l0c_epilogue_program(mach, conv) if es == 1 else conv
            assert vec == es * tile_cube.epilogue_cycles(mach, program, 128 // es, 64)
            if es == 1:
                assert (vec < es * tile_cube.epilogue_cycles(mach, conv, 128, 64)) == l0c


def test_the_next_tiles_bias_is_armed_after_this_tiles_epilogue():
    """In a loop whose L0C tile rotates over 2 slots, a tile's bias is broadcast after the
    epilogue of the tile before it in the same slot (a guarded loop of at most one trip:
    none past the loop's end) and before the loop for the first two: the V pipe runs in
    order, and a broadcast at the K loop would make the other slot's mmads wait for this
    tile's whole epilogue."""
    from xdsl.dialects import scf

    k = cube_kernel(isa_module(conv_model(True)))
    brc = [op for op in k.walk() if isinstance(op, isa.BroadcastUbToL0cOp)]
    assert brc
    for op in brc:
        loop = op.parent_op()
        assert isinstance(loop, scf.ForOp) and loop.attributes[isa.MAX_TRIPS_ATTR].value.data == 1
    # in the loop body, an armed broadcast follows the epilogue's vrelu of its slot
    for body_loop in [op for op in k.walk() if isinstance(op, scf.ForOp)]:
        ops = list(body_loop.body.block.ops)
        relus = [i for i, o in enumerate(ops) if isinstance(o, isa.VReluOp)]
        armed = [i for i, o in enumerate(ops) if isinstance(o, scf.ForOp) and any(
            isinstance(x, isa.BroadcastUbToL0cOp) for x in o.walk())]
        if relus and armed:
            assert min(armed) > min(relus)
