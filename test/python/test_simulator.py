"""The AI Core simulator on hand-written isa kernels: a double-buffered tiled matmul, a
double-buffered elementwise kernel and a softmax-like row reduction run through
plan-local-memory + insert-sync and match numpy with no hazard; deleting any single
set_flag / wait_flag (or pipe_barrier) that insert-sync placed makes the simulator report
a problem; double buffering lowers the cycles of a load-bound kernel; the timeline is
valid Chrome trace JSON with one track per pipe; and the checks themselves (RAW / WAR / WAW,
out-of-bounds, never-written reads, hangs, lost and leftover signals) fire where they must.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr, f16, f32, f64, i64
from xdsl.utils.exceptions import VerifyException

from ge.dialects import isa
from ge.dialects.isa import MemSpace as S
from ge.ir import parse_module, print_module, run_passes
from ge.lowering.isa_builder import IsaBuilder
from ge.mutation import mutants, pair_mutants, pairs
from ge.runtime.simulator import IsaProgram, Simulator, find_kernel, run_kernel

RNG = np.random.default_rng(3)


def module_of(kernel: isa.KernelOp, target: str = "ascend910") -> ModuleOp:
    m = ModuleOp([kernel])
    m.attributes["ge.target"] = StringAttr(target)
    m.verify()
    return m


def compiled(kernel: isa.KernelOp, target: str = "ascend910") -> ModuleOp:
    return run_passes(module_of(kernel, target), "plan-local-memory,insert-sync")


def vec(cls, operands, repeat, **props):
    p = {"repeat": IntegerAttr(repeat, i64)}
    for k, v in props.items():
        p[k] = isa.int_array(v) if k.endswith("stride") else FloatAttr(float(v), f64) if k == "scalar" else IntegerAttr(v, i64)
    ops = []
    for o in operands:
        ops += [o, []]
    return cls.build(operands=ops, properties=p)


def block_range(b: IsaBuilder, ntiles: int, block_dim: int):
    if block_dim == 1:
        return 0, ntiles
    per = -(-ntiles // block_dim)
    lo = b.mul(b.block_idx(), per, "lo")
    return lo, b.min_(b.add_(lo, per), ntiles, "hi")


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------


def eltwise_kernel(n: int, tile: int, slots: int, block_dim: int, elem=f16) -> isa.KernelOp:
    """z = relu(x + y) over n elements in tiles of `tile`, split over `block_dim` blocks."""
    t = isa.buffer_type([n], elem, S.GM)
    b = IsaBuilder.new_kernel("eltwise", [t, t], [t], block_dim, ["x", "y", "z"])
    x, y, z = b.args
    xu, yu, zu = (b.buffer(S.UB, [tile], elem, slots, name) for name in ("xu", "yu", "zu"))
    reps = tile * isa.itemsize(elem) // 256

    def body(it, s):
        off = b.value(b.mul(it, tile, "off"))
        b.add(isa.CopyGmToUbOp(x, xu[s], [tile], src_offset=off))
        b.add(isa.CopyGmToUbOp(y, yu[s], [tile], src_offset=off))
        b.add(vec(isa.VAddOp, [zu[s], xu[s], yu[s]], reps))
        b.add(vec(isa.VReluOp, [zu[s], zu[s]], reps))
        b.add(isa.CopyUbToGmOp(zu[s], z, [tile], dst_offset=off))

    b.pipelined(*block_range(b, n // tile, block_dim), slots, body)
    return b.kernel


def matmul_kernel(M: int, K: int, N: int, tm: int, tk: int, tn: int, slots: int, block_dim: int,
                  fixpipe: bool = False) -> isa.KernelOp:
    """C[M, N] (f16) = A[M, K] x Bt[N, K]^T (f16), f32 accumulation in L0C; output tiles
    over blocks, the K loop double-buffered in L1 and L0A / L0B. The accumulator leaves
    L0C as on the 910 (the Vector unit's copy_l0c_to_ub into UB, converting to f16, then
    MTE3 to GM), or with `fixpipe` straight to GM as on the 910B."""
    ta, tb, tc = (isa.buffer_type(s, f16, S.GM) for s in ([M, K], [N, K], [M, N]))
    b = IsaBuilder.new_kernel("matmul", [ta, tb], [tc], block_dim, ["a", "bt", "c"])
    a, bt, c = b.args
    a1, b1 = b.buffer(S.L1, [tm * tk], f16, slots, "a_l1"), b.buffer(S.L1, [tk * tn], f16, slots, "b_l1")
    a0, b0 = b.buffer(S.L0A, [tm * tk], f16, slots, "a_l0"), b.buffer(S.L0B, [tk * tn], f16, slots, "b_l0")
    acc = b.buffer(S.L0C, [tm * tn], f32, 1, "acc")[0]
    out_ub = None if fixpipe else b.buffer(S.UB, [tm * tn], f16, 1, "c_ub")[0]
    nn = N // tn
    lo, hi = block_range(b, (M // tm) * nn, block_dim)
    with b.loop(lo, hi, 1, "t") as t:
        mt, nt = b.div(t, nn, "mt"), b.rem(t, nn, "nt")
        a_base, b_base = b.mul(mt, tm * K, "a_base"), b.mul(nt, tn * K, "b_base")

        def body(kt, s):
            koff = b.mul(kt, tk, "koff")
            b.add(isa.CopyGmToL1Op(a, a1[s], [tm // 16, tk // 16, 16, 16], src_offset=b.value(b.add_(a_base, koff)),
                                   src_strides=[16 * K, 16, K, 1]))  # ND -> ZZ fractals
            b.add(isa.CopyGmToL1Op(bt, b1[s], [tk // 16, tn // 16, 16, 16], src_offset=b.value(b.add_(b_base, koff)),
                                   src_strides=[16, 16 * K, K, 1]))  # Bt (ND) -> ZN fractals
            b.add(isa.CopyL1ToL0aOp(a1[s], a0[s], [tm * tk]))
            b.add(isa.CopyL1ToL0bOp(b1[s], b0[s], [tk * tn]))
            b.add(isa.MmadOp(acc, a0[s], b0[s], tm, tk, tn, init=b.eq(kt, 0)))

        b.pipelined(0, K // tk, slots, body, "k")
        c_off = b.add_(b.mul(mt, tm * N), b.mul(nt, tn), "c_off")
        if fixpipe:
            b.add(isa.FixpipeOp(acc, c, [tn // 16, tm // 16, 16, 16], dst_offset=b.value(c_off),
                                dst_strides=[16, 16 * N, N, 1]))  # NZ -> ND, f32 -> f16
        else:
            b.add(isa.CopyL0cToUbOp(acc, out_ub, [tn // 16, tm // 16, 16, 16],
                                    dst_strides=[16, 16 * tn, tn, 1]))  # NZ -> ND, f32 -> f16
            b.add(isa.CopyUbToGmOp(out_ub, c, [tm, tn], dst_offset=b.value(c_off), dst_strides=[N, 1]))
    return b.kernel


def softmax_kernel(R: int, C: int, rows: int, slots: int, block_dim: int) -> isa.KernelOp:
    """y = softmax(x) over the rows of x[R, C] (f32, C = 64: one repeat per row): row max,
    broadcast to blocks, subtract with a block-stride-0 operand, exp, row sum, divide."""
    t = isa.buffer_type([R, C], f32, S.GM)
    b = IsaBuilder.new_kernel("softmax", [t], [t], block_dim, ["x", "y"])
    x, y = b.args
    xu, yu = b.buffer(S.UB, [rows, C], f32, slots, "xu"), b.buffer(S.UB, [rows, C], f32, slots, "yu")
    mx, sm = b.buffer(S.UB, [rows], f32, 1, "mx")[0], b.buffer(S.UB, [rows], f32, 1, "sm")[0]
    mb, sb = b.buffer(S.UB, [rows, 8], f32, 1, "mb")[0], b.buffer(S.UB, [rows, 8], f32, 1, "sb")[0]
    e = b.buffer(S.UB, [rows, C], f32, 1, "e")[0]
    bcast = dict(blk_stride=[1, 1, 0], rep_stride=[8, 8, 1])

    def body(it, s):
        off = b.value(b.mul(it, rows * C, "off"))
        b.add(isa.CopyGmToUbOp(x, xu[s], [rows * C], src_offset=off))
        b.add(vec(isa.VReduceMaxOp, [mx, xu[s]], rows))
        b.add(vec(isa.VBrcbOp, [mb, mx], rows // 8))
        b.add(vec(isa.VSubOp, [e, xu[s], mb], rows, **bcast))
        b.add(vec(isa.VExpOp, [e, e], rows))
        b.add(vec(isa.VReduceSumOp, [sm, e], rows))
        b.add(vec(isa.VBrcbOp, [sb, sm], rows // 8))
        b.add(vec(isa.VDivOp, [yu[s], e, sb], rows, **bcast))
        b.add(isa.CopyUbToGmOp(yu[s], y, [rows * C], dst_offset=off))

    b.pipelined(*block_range(b, R // rows, block_dim), slots, body)
    return b.kernel


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# Each case: the kernel, its inputs, and the numpy result of its output. Block ranges are
# chosen so that the double-buffered loops run both their pair loop (twice or more) and
# their leftover loop.
def cases():
    x16, y16 = (RNG.standard_normal(10 * 512).astype(np.float16) for _ in range(2))
    a, bt = RNG.standard_normal((64, 80)).astype(np.float16), RNG.standard_normal((64, 80)).astype(np.float16)
    xs = RNG.standard_normal((80, 64)).astype(np.float32)
    return {
        "eltwise": (eltwise_kernel(10 * 512, 512, 2, 2), [x16, y16],
                    np.maximum(x16.astype(np.float32) + y16, 0).astype(np.float16)),
        "matmul": (matmul_kernel(64, 80, 64, 32, 16, 32, 2, 2), [a, bt],
                   (a.astype(np.float32) @ bt.astype(np.float32).T).astype(np.float16)),
        "softmax": (softmax_kernel(80, 64, 8, 2, 2), [xs], _softmax(xs)),
    }


def test_matmul_reads_l0c_out_by_the_route_of_the_target():
    """The same matmul on the 910 (copy_l0c_to_ub on V, then MTE3) and on the 910B
    (FixPipe): equal results, no hazard; the 910's read-out is ordered M -> V -> MTE3 and
    runs on the Vector pipe, the 910B's M -> FIX."""
    a, bt = RNG.standard_normal((64, 80)).astype(np.float16), RNG.standard_normal((64, 80)).astype(np.float16)
    want = (a.astype(np.float32) @ bt.astype(np.float32).T).astype(np.float16)
    outs = {}
    for target, fix in (("ascend910", False), ("ascend910b", True)):
        module = compiled(matmul_kernel(64, 80, 64, 32, 16, 32, 2, 2, fixpipe=fix), target)
        flags = {(op.src_pipe.data, op.dst_pipe.data) for op in module.walk() if isinstance(op, isa.SetFlagOp)}
        if fix:
            assert (isa.Pipe.M, isa.Pipe.FIX) in flags and (isa.Pipe.M, isa.Pipe.V) not in flags
        else:
            assert {(isa.Pipe.M, isa.Pipe.V), (isa.Pipe.V, isa.Pipe.MTE3)} <= flags
            assert not any(isa.Pipe.FIX in f for f in flags)
        out, report, _ = simulate(module, [a, bt], want)
        report.check()
        busy = report.kernels[0].pipe_busy
        assert (busy.get("FIX", 0) > 0, busy.get("V", 0) > 0) == (fix, not fix)  # nothing else uses V here
        outs[target] = out
    np.testing.assert_array_equal(outs["ascend910"], outs["ascend910b"])
    np.testing.assert_allclose(outs["ascend910"].astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def simulate(module: ModuleOp, inputs, like: np.ndarray, **kw):
    out = np.zeros_like(like)
    report, sim = run_kernel(module, [*inputs, out], **kw)
    return out, report, sim


@pytest.mark.parametrize("name", ["eltwise", "matmul", "softmax"])
def test_kernels_match_numpy_without_hazards(name):
    kernel, inputs, want = cases()[name]
    module = compiled(kernel)
    out, report, _ = simulate(module, inputs, want)
    report.check()
    if name == "eltwise":
        np.testing.assert_array_equal(out, want)
    else:  # sums in another order than numpy's: a rounding step apart (f16 for matmul)
        tol = 2e-3 if name == "matmul" else 1e-5
        np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
    stats = report.kernels[0]
    assert stats.cycles > 0 and stats.blocks == 2 and stats.cores == 2


def test_kernels_survive_a_text_round_trip():
    """The compiled IR printed, re-parsed and run again gives the same result."""
    kernel, inputs, want = cases()["matmul"]
    module = parse_module(print_module(compiled(kernel)))
    out, report, _ = simulate(module, inputs, want)
    report.check()
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------------------
# Mutation test
# --------------------------------------------------------------------------------------


def test_deleting_any_sync_op_is_caught(capsys):
    counts = {"isa.set_flag": [0, 0], "isa.wait_flag": [0, 0], "isa.pipe_barrier": [0, 0]}
    missed = []
    for name, (kernel, inputs, want) in cases().items():
        for op_name, desc, mutant in mutants(compiled(kernel)):
            _, report, _ = simulate(mutant, inputs, want)
            counts[op_name][0] += 1
            if report.problems:
                counts[op_name][1] += 1
            else:
                missed.append(f"{name}: {desc}")
    with capsys.disabled():
        for op_name, (tried, caught) in counts.items():
            print(f"\nmutation test: deleted {tried} {op_name}, caught {caught}", end="")
        print()
    assert not missed, "deletions the simulator did not catch:\n" + "\n".join(missed)

    assert counts["isa.set_flag"][0] > 20 and counts["isa.wait_flag"][0] > 20


def test_deleting_any_pair_leaves_a_data_hazard():
    """Deleting a whole set/wait pair keeps the flags balanced: what the simulator then
    reports is the RAW / WAR / WAW the pair ordered -- so no pair insert-sync placed is
    redundant."""
    tried, missed = 0, []
    for name, (kernel, inputs, want) in cases().items():
        for desc, mutant in pair_mutants(compiled(kernel)):
            _, report, _ = simulate(mutant, inputs, want)
            tried += 1
            if not report.hazards:
                missed.append(f"{name}: {desc}: {[str(p) for p in report.problems]}")
    print(f"\npair mutation test: deleted {tried} set/wait pairs, {tried - len(missed)} left a data hazard")
    assert tried > 25 and not missed, "\n".join(missed)


def test_a_deleted_wait_is_reported_as_a_hazard_with_both_instructions():
    kernel, inputs, want = cases()["eltwise"]
    module = compiled(kernel)
    for op in module.walk():  # the first wait before the vector op: MTE2 -> V
        if isinstance(op, isa.WaitFlagOp) and op.key[:2] == (isa.Pipe.MTE2, isa.Pipe.V):
            op.detach()
            op.erase()
            break
    _, report, _ = simulate(module, inputs, want)
    raw = [p for p in report.hazards if p.kind == "RAW"]
    assert raw, [str(p) for p in report.problems]
    assert "isa.vadd" in raw[0].message and "isa.copy_gm_to_ub" in raw[0].message and "no flag orders them" in raw[0].message


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


def test_double_buffering_lowers_the_cycles_of_a_load_bound_kernel():
    n = 32 * 2048
    x = RNG.standard_normal(n).astype(np.float16)
    cycles = {}
    for slots in (1, 2):
        out, report, _ = simulate(compiled(eltwise_kernel(n, 2048, slots, 1)), [x, x], x)
        report.check()
        np.testing.assert_array_equal(out, np.maximum(x.astype(np.float32) * 2, 0).astype(np.float16))
        stats = report.kernels[0]
        assert stats.pipe_busy["MTE2"] > stats.pipe_busy["V"]  # load-bound
        cycles[slots] = stats.cycles
    assert cycles[2] < cycles[1]


def test_more_cores_take_fewer_cycles_and_blocks_wrap_round_the_cores():
    n = 64 * 512
    x = RNG.standard_normal(n).astype(np.float16)
    want = np.maximum(x.astype(np.float32) * 2, 0).astype(np.float16)
    stats = {}
    for blocks in (1, 4, 64):  # 64 blocks on the 910's 32 cores: two blocks per core
        out, report, _ = simulate(compiled(eltwise_kernel(n, 512, 2, blocks)), [x, x], x)
        report.check()
        np.testing.assert_array_equal(out, want)
        stats[blocks] = report.kernels[0]
    assert stats[4].cycles < stats[1].cycles
    assert stats[64].cores == 32 and stats[64].blocks == 64


def test_gm_bandwidth_is_shared_by_the_cores_in_time():
    """A core streaming alone gets its path's full rate however many cores the launch has;
    32 cores streaming 64 KB each at once share the HBM: the first-simulated gets its path
    rate, the last ends no sooner than the HBM can move all 2 MB at hbm_total and, as the
    earlier ones leave bandwidth free for it, at most one 64 KB path time later."""
    from ge.runtime.sim_timing import CostModel
    from ge.targets import load_target

    t = load_target("ascend910")
    path, hbm = t.bytes_per_cycle(t.dma.gm_to_ub), t.bytes_per_cycle(t.dma.hbm_total)
    rect = ((1 << 15,), (1,), 2)  # 64 KB of f16
    alone = CostModel(t, t.cores.vector)
    start, end = alone.pipes(0).issue(4, *alone.move("isa.copy_gm_to_ub", rect, rect, (9, 0)))
    assert end - start == pytest.approx(t.startup.mte2 + 65536 / path)
    many = CostModel(t, t.cores.vector)
    ends = [many.pipes(c).issue(4, *many.move("isa.copy_gm_to_ub", rect, rect, (9 + c, 0)))[1] for c in range(32)]
    assert ends[0] == pytest.approx(end)
    assert t.startup.mte2 + 32 * 65536 / hbm <= max(ends) <= t.startup.mte2 + 32 * 65536 / hbm + 65536 / path
    assert many.hbm_bytes == 32 * 65536
    assert many.move("isa.copy_l1_to_l0a", rect, rect) == alone.move("isa.copy_l1_to_l0a", rect, rect)


def test_timeline_json(tmp_path):
    kernel, inputs, want = cases()["matmul"]
    _, report, sim = simulate(compiled(kernel), inputs, want, trace=True)
    path = tmp_path / "timeline.json"
    sim.trace.write(path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    tracks = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    pipes = [p.value for p in isa.PIPES]
    assert {name for _, name in tracks} == set(pipes)
    assert len(tracks) == len(pipes) * report.kernels[0].cores  # one track per pipe and core
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 for e in spans)
    used = {(e["pid"], e["cat"]) for e in spans}
    assert {"MTE2", "MTE1", "M", "V", "MTE3"} <= {c for _, c in used}  # the 910 reads L0C out on V


def test_profile_table_reports_busy_and_idle_per_pipe():
    kernel, inputs, want = cases()["softmax"]
    _, report, _ = simulate(compiled(kernel), inputs, want)
    stats = report.kernels[0]
    table = stats.table()
    assert "kernel @softmax" in table and "V " in table and "idle" in table
    assert 0 < stats.utilization()["V"] <= 1


# --------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------

UB = "memref<64xf32, #isa.space<ub>>"
GMT = "memref<64xf32, #isa.space<gm>>"


def text_kernel(body: str, ins: str = f"%x: {GMT}", outs: str = f"%y: {GMT}") -> ModuleOp:
    return parse_module(f"""builtin.module attributes {{ge.target = "ascend910"}} {{
  isa.kernel @k ins({ins}) outs({outs}) block_dim 1 {{
    %a = isa.buffer offset 0 : {UB}
    %b = isa.buffer offset 256 : {UB}
{body}
  }}
}}""")


def problems(module: ModuleOp, n_in: int = 1, n_out: int = 1) -> list[str]:
    args = [RNG.standard_normal(64).astype(np.float32) for _ in range(n_in)] + [np.zeros(64, np.float32)] * n_out
    report, _ = run_kernel(module, args)
    return [str(p) for p in report.problems]


def test_unsynchronized_read_is_a_raw_hazard():
    m = text_kernel(f"""    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}
    isa.vexp %b, %a repeat 1 : {UB}, {UB}""", outs="")
    found = problems(m, 1, 0)
    assert any(p.startswith("RAW: isa.vexp #1") and "isa.copy_gm_to_ub #0" in p for p in found), found


def test_write_over_a_range_still_being_read_is_a_war_hazard():
    m = text_kernel(f"""    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}
    isa.set_flag [MTE2, V, 0]
    isa.wait_flag [MTE2, V, 0]
    isa.vexp %b, %a repeat 1 : {UB}, {UB}
    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}""", outs="")
    found = problems(m, 1, 0)
    assert any(p.startswith("WAR: isa.copy_gm_to_ub #4") and "isa.vexp #3" in p for p in found), found


def test_dependent_vector_ops_need_a_barrier():
    body = f"""    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}
    isa.set_flag [MTE2, V, 0]
    isa.wait_flag [MTE2, V, 0]
    isa.vexp %b, %a repeat 1 : {UB}, {UB}
    {{barrier}}isa.vln %b, %b repeat 1 : {UB}, {UB}"""
    assert any(p.startswith("RAW: isa.vln") for p in problems(text_kernel(body.format(barrier=""), outs=""), 1, 0))
    assert problems(text_kernel(body.format(barrier="isa.pipe_barrier [V]\n    "), outs=""), 1, 0) == []


def test_out_of_bounds_and_never_written_reads():
    """(A static offset past the buffer is a verifier error; a computed one is caught here.)"""
    m = text_kernel(f"""    %c32 = arith.constant 32 : index
    %blk = isa.block_idx : index
    %off = arith.addi %blk, %c32 : index
    isa.copy_gm_to_ub %x[%off] to %a sizes [64] : {GMT} to {UB}
    isa.vexp %b, %b repeat 1 : {UB}, {UB}""", outs="")
    found = problems(m, 1, 0)
    assert any(p.startswith("out-of-bounds: isa.copy_gm_to_ub #0") and "elements [32, 96)" in p for p in found), found
    assert any(p.startswith("uninitialized: isa.vexp #1") and "%b (ub @ 0x100)" in p for p in found), found


def test_misaligned_vector_operand():
    m = text_kernel(f"""    %c4 = arith.constant 4 : index
    %blk = isa.block_idx : index
    %off = arith.addi %blk, %c4 : index
    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}
    isa.pipe_barrier [ALL]
    isa.vexp %b[%off], %a repeat 1 mask 32 : {UB}, {UB}""", outs="")
    found = problems(m, 1, 0)
    assert any(p.startswith("misaligned: isa.vexp #2") for p in found), found


def test_sync_errors_hang_lost_and_leftover():
    hang = text_kernel("    isa.wait_flag [MTE2, V, 3]", outs="")
    assert any(p.startswith("deadlock: isa.wait_flag #0") for p in problems(hang, 1, 0))
    leftover = text_kernel("    isa.set_flag [MTE2, V, 3]", outs="")
    assert any(p.startswith("unbalanced: isa.set_flag #0") for p in problems(leftover, 1, 0))
    # Two loads each signal the same event while the Vector unit is still busy: by the
    # time it waits, both sets have fired and the second one is lost.
    lost = text_kernel(f"""    %big = isa.buffer offset 1024 : memref<32640xf16, #isa.space<ub>>
    isa.vdup %big scalar 0.0 repeat 255 : memref<32640xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [64] : {GMT} to {UB}
    isa.set_flag [MTE2, V, 0]
    isa.copy_gm_to_ub %x to %b sizes [64] : {GMT} to {UB}
    isa.set_flag [MTE2, V, 0]
    isa.wait_flag [MTE2, V, 0]
    isa.wait_flag [MTE2, V, 0]""", outs="")
    assert any(p.startswith("lost-signal: isa.set_flag #4") for p in problems(lost, 1, 0))


def test_unplaced_buffers_are_refused():
    from ge.runtime.simulator import SimulatorError

    m = parse_module(f"""builtin.module {{
  isa.kernel @k ins() outs() block_dim 1 {{
    %a = isa.buffer : {UB}
  }}
}}""")
    with pytest.raises(SimulatorError, match="run plan-local-memory first"):
        Simulator().program(find_kernel(m))


def test_module_with_launches_runs_on_the_simulator():
    """A graph function that launches an isa kernel on its GM buffers."""
    kernel, (x, y), want = cases()["eltwise"]
    t = f"memref<{x.size}xf16>"
    module = compiled(kernel)
    text = print_module(module).rstrip().removesuffix("}") + f"""
  func.func @main(%x: {t}, %y: {t}) -> memref<{x.size}xf16, #tile.space<gm>> {{
    %z = tile.alloc buffers 1 : memref<{x.size}xf16, #tile.space<gm>>
    isa.launch @eltwise ins(%x, %y : {t}, {t}) outs(%z : memref<{x.size}xf16, #tile.space<gm>>)
    func.return %z : memref<{x.size}xf16, #tile.space<gm>>
  }}
}}"""
    prog = IsaProgram(parse_module(text))
    (out,) = prog.run([x, y])
    prog.sim.report.check()
    np.testing.assert_array_equal(out, want)
    assert prog.sim.report.cycles == prog.sim.report.kernels[0].cycles > 0


# --------------------------------------------------------------------------------------
# Random kernels: insert-sync is sound, and every sync op it places is needed
# --------------------------------------------------------------------------------------


def random_kernel(seed: int, nbuf: int = 4, depth: int = 2, statements: int = 6) -> ModuleOp:
    """Loads, vector ops, UB -> UB, UB <-> L1 moves and stores on a few 64-float buffers in
    random loop nests (constant trip counts 1..3). Each store writes its own bytes of GM,
    so every conflict is in local memory."""
    import random

    rnd = random.Random(seed)
    t = isa.buffer_type([64 * 256], f32, S.GM)
    b = IsaBuilder.new_kernel("fuzz", [t], [t], 1, ["x", "y"])
    x, y = b.args
    u = [b.buffer(S.UB, [64], f32, 1, f"u{i}")[0] for i in range(nbuf)]
    l1 = b.buffer(S.L1, [64], f32, 1, "l")[0]
    for i, ui in enumerate(u):  # everything starts written
        b.add(isa.CopyGmToUbOp(x, ui, [64], src_offset=b.offset(i * 64)))
    b.add(isa.CopyGmToL1Op(x, l1, [64]))
    region = [nbuf]

    def statement(d: int, ivs: list) -> None:
        if d < depth and rnd.random() < 0.2:
            with b.loop(0, rnd.randint(1, 3), 1, f"i{d}") as iv:
                for _ in range(rnd.randint(1, 4)):
                    statement(d + 1, [*ivs, iv])
            return
        a, c, dst = rnd.choice(u), rnd.choice(u), rnd.choice(u)
        kind = rnd.randrange(7)
        if kind == 0:
            b.add(isa.CopyGmToUbOp(x, dst, [64], src_offset=b.offset(rnd.randrange(12) * 64)))
        elif kind == 1:
            b.add(vec(rnd.choice([isa.VAddOp, isa.VMaxOp, isa.VMinOp]), [dst, a, c], 1))
        elif kind == 2:
            b.add(vec(isa.VAbsOp, [dst, a], 1))
        elif kind == 3:
            region[0] += 4
            off = region[0] * 64 if not ivs else b.add_(b.mul(ivs[-1], 64), region[0] * 64)
            b.add(isa.CopyUbToGmOp(a, y, [64], dst_offset=b.offset(off)))
        elif kind == 4:
            b.add(isa.CopyUbToUbOp(a, dst, [64]))
        elif kind == 5:
            b.add(isa.CopyUbToL1Op(a, l1, [64]))
        else:
            b.add(isa.CopyL1ToUbOp(l1, dst, [64]))

    for _ in range(statements):
        statement(0, [])
    for i, ui in enumerate(u):
        b.add(isa.CopyUbToGmOp(ui, y, [64], dst_offset=b.offset(i * 64)))
    return compiled(b.kernel)


def test_random_kernels_are_hazard_free_and_their_sync_is_needed():
    """insert-sync must be sound on any kernel: no hazard is left. Every single sync op
    deleted is noticed; of the set/wait pairs and barriers, the static analysis proves most
    necessary (it does not follow every chain through nested loops): at least 85% of
    their deletions leave a data hazard."""
    x = RNG.standard_normal(64 * 256).astype(np.float32)
    counts = {"flags": [0, 0], "pairs": [0, 0], "barriers": [0, 0]}
    for seed in range(12):
        module = random_kernel(seed)
        _, report, _ = simulate(module, [x], x)
        assert not report.problems, f"seed {seed}: {[str(p) for p in report.problems]}\n{print_module(module)}"
        for name, _, mutant in mutants(module):
            _, report, _ = simulate(mutant, [x], x)
            key, found = ("barriers", report.hazards) if name == "isa.pipe_barrier" else ("flags", report.problems)
            counts[key][0] += 1
            counts[key][1] += bool(found)
        text = print_module(module)
        for k in range(len(pairs(parse_module(text)))):
            mutant = parse_module(text)
            for o in pairs(mutant)[k]:
                o.detach()
                o.erase()
            _, report, _ = simulate(mutant, [x], x)
            counts["pairs"][0] += 1
            counts["pairs"][1] += bool(report.hazards)
    print("\nrandom kernels: " + ", ".join(f"{k} {c}/{n}" for k, (n, c) in counts.items()))
    assert counts["flags"][0] > 100 and counts["flags"][1] == counts["flags"][0]
    for key in ("pairs", "barriers"):
        tried, caught = counts[key]
        assert caught >= 0.85 * tried, counts


def test_event_ids_are_those_of_the_chip():
    """The 910 has event ids 0..3 per pipe pair, the 910B 0..7: event 5 verifies on the
    910B only."""
    body = """    isa.set_flag [MTE2, V, 3]
    isa.wait_flag [MTE2, V, 3]"""
    text = print_module(text_kernel(body))
    parse_module(text.replace(", 3]", ", 5]").replace('"ascend910"', '"ascend910b"')).verify()
    with pytest.raises(VerifyException, match=r"event id 5 is out of range 0\.\.3 on ascend910"):
        parse_module(text.replace(", 3]", ", 5]")).verify()
