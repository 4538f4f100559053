"""The Cube plan search's shortcuts change no plan (lowering/tile_cube.py `_cheapest`,
`CubeBounds.of_schedule`, `CubeBounds.of_tiling`; lowering/tile_cost.py's memos).

The search collects every candidate (tiling and schedule) the plain scan would cost and
costs only those whose lower bound is at most the cheapest cost found. Checked on the
candidates of real kernels -- a ResNet-50 3x3 conv + ReLU, a 1x1 conv with a residual
Add + ReLU epilogue, a MatMul with a bias epilogue, a GEMV classifier (Gemm 2048 -> 1000
at batch 1) -- against a plain scan in order that costs every candidate on a fresh
`Machine` (no memo): the same candidate (the first of the cheapest) at the bit-identical
cost; every bound at most its candidate's cost; a memoized `Machine` costs every
candidate exactly as a fresh one does. Also: `elem_name` and the `Machine` memos agree
with the numpy dtypes and the simulator's cost table they cache.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.dialects.dtypes import SUPPORTED, numpy_dtype
from ge.lowering import tile_cube
from ge.lowering.tile_cost import GM_PATHS, PATHS, Machine, elem_name
from ge.runtime.sim_timing import CostModel
from ge.targets import load_target


def _model(nodes, inputs, output, inits):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weights(name, shape, rng):
    return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)


def spied_searches(compiles) -> list[tuple]:
    """(problem, machine, candidates as the search got them, chosen index, chosen cost) of
    every Cube plan search of `compiles`' (model, soc version) compiles, in order."""
    out = []
    real = tile_cube._ranked

    def spy(p, mach, found, keep):
        ranked = real(p, mach, found, keep)
        if keep == 1:  # (the plan search; operator tuning asks for more)
            out.append((p, mach, found, ranked[0][1], ranked[0][0]))
        return ranked

    mp = pytest.MonkeyPatch()
    mp.setattr(tile_cube, "_ranked", spy)
    try:
        for model, soc in compiles:
            ge.compile(model, ge.CompileOptions(soc_version=soc, keep_ir_text=False))
    finally:
        mp.undo()
    return out


def conv_model():
    """ResNet-50's stage-1 pair: a 3x3 conv 64 -> 64 + ReLU, then a 1x1 conv 64 -> 64 whose
    epilogue adds the block input (residual) and applies ReLU."""
    rng = np.random.default_rng(0)
    inits = [_weights("w1", (64, 64, 3, 3), rng), _weights("w2", (64, 64, 1, 1), rng),
             numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return _model(nodes, [("x", [1, 64, 56, 56])], ("y", [1, 64, 56, 56]), inits)


def matmul_model():
    """A transformer's FFN matmul with its bias (128 x 768 x 3072), then a GEMV
    classifier: Gemm 2048 -> 1000 (transB, bias) at batch 1."""
    rng = np.random.default_rng(1)
    inits = [_weights("w", (768, 3072), rng), numpy_helper.from_array(rng.standard_normal(3072).astype(np.float32), "b"),
             _weights("wc", (1000, 2048), rng), numpy_helper.from_array(rng.standard_normal(1000).astype(np.float32), "bc")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"]),
             helper.make_node("Gemm", ["v", "wc", "bc"], ["z"], transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 768]),
                                           helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, 3072]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1000])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def searches():
    """Every Cube plan search of the two models: (problem, machine, candidates, chosen
    index, chosen cost, plan)."""
    out = []
    real = tile_cube._ranked

    def spy(p, mach, found, keep):
        ranked = real(p, mach, found, keep)
        out.append([p, mach, list(found), ranked[0][1], ranked[0][0]])
        return ranked

    mp = pytest.MonkeyPatch()
    mp.setattr(tile_cube, "_ranked", spy)
    real_plan = tile_cube._plan_cube

    def plan_spy(p, mach):
        plan = real_plan(p, mach)
        out[-1].append(plan)
        return plan

    mp.setattr(tile_cube, "_plan_cube", plan_spy)
    try:
        for model in (conv_model(), matmul_model()):
            ge.compile(model, ge.CompileOptions(keep_ir_text=False))
    finally:
        mp.undo()
    return out


def _kind(p) -> str:
    if p.kind == "conv":
        return f"conv{p.conv['kh']}x{p.conv['kw']}" + ("+" + "+".join(o.name.split(".")[1] for o in p.epilogue_ops))
    return "gemv" if tile_cube.gemv(p, Machine(load_target("ascend910b"))) else "matmul"


def test_the_searches_cover_the_kernels(searches):
    kinds = {_kind(p) for p, *_ in searches}
    assert {"conv3x3+relu", "conv1x1+add+relu", "matmul", "gemv"} <= kinds, kinds
    assert all(len(found) > 100 for _, _, found, *_ in searches)


def test_the_chosen_plan_is_the_first_cheapest_of_a_plain_scan(searches):
    for p, mach, found, i, cyc, plan in searches:
        fresh = Machine(mach.target)  # nothing memoized
        best_i, best = -1, None
        for j, args in enumerate(found):
            c = tile_cube.cube_cost(p, fresh, *args)
            if best is None or c < best:
                best_i, best = j, c
        assert (i, cyc) == (best_i, best), _kind(p)
        tm, tn, tk, kl1, order, blocks, l1d, l0d, _, split, _, batch_inner, a_whole = found[i]
        assert (plan.tm, plan.tn, plan.tk, plan.kl1, plan.order, plan.blocks, plan.split, plan.batch_inner,
                plan.a_whole) == (tm, tn, tk, kl1, order, blocks, split, batch_inner, a_whole)
        assert plan.candidates == len(found)
        if plan.b_direct:  # the chosen tiling with B straight into L0B (`_b_direct_fits`), cheaper still
            s = found[i][10]
            direct = tile_cube.cube_cost(p, fresh, *found[i], parts=tile_cube._TileParts(
                p, fresh, tm, tn, tk, kl1, s, l0d, b_direct=True))
            assert plan.cycles == direct < best
        else:
            assert plan.cycles == best
        assert plan.l1_buffers == (2 if l1d else 1) and plan.l0_buffers == (2 if l0d else 1)


def test_bounds_never_exceed_the_cost(searches):
    for p, mach, found, *_ in searches:
        fresh = Machine(mach.target)
        bounds_of = tile_cube.CubeBounds(p, fresh)
        costs = [tile_cube.cube_cost(p, fresh, *args) for args in found]
        tilings: dict[int, list[int]] = {}
        for j, args in enumerate(found):
            tilings.setdefault(id(args[10]), []).append(j)
        for js in tilings.values():
            tm, tn, tk, kl1, _, _, _, l0d, _, _, s, _, _ = found[js[0]]
            floor = bounds_of.parts(tm, tn, tk, kl1, s, l0d).floor()
            most = max(found[j][5] for j in js)
            bounds = []
            for j in js:
                bound = bounds_of.of_schedule(*found[j])
                assert bound == bounds_of.of_schedule(*found[j], floor=floor)
                assert 0 < bound <= costs[j], (_kind(p), found[j][:10])
                bounds.append(bound)
            tiles = p.batch * p.groups * -(-p.m // tm) * -(-p.n // tn)
            assert -(-tiles // most) * floor[1] <= min(bounds)
            assert bounds_of.of_tiling(tm, tn, tk, kl1, most, s, found[js[0]][12]) <= min(bounds)


def test_a_memoized_machine_costs_as_a_fresh_one(searches):
    for p, mach, found, *_ in searches:
        warm = Machine(mach.target)
        for args in found:  # memoized by the first pass, costed again from the memos
            tile_cube.cube_cost(p, warm, *args)
        for args in found[:: max(1, len(found) // 500)]:
            assert tile_cube.cube_cost(p, warm, *args) == tile_cube.cube_cost(p, Machine(mach.target), *args)


def test_elem_name_is_the_numpy_dtype_name():
    short = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
             "int64": "i64", "uint8": "ui8", "bool": "i1"}
    for attr in SUPPORTED:
        name = numpy_dtype(attr).name
        assert elem_name(attr) == short.get(name, name)
        assert elem_name(attr) == short.get(name, name)  # the memo's answer


@pytest.mark.parametrize("target", ["ascend910", "ascend910b", "ascend310b"])
def test_machine_memos_are_the_target_figures(target):
    tg = load_target(target)
    mach, sim = Machine(tg), CostModel(tg)
    for _ in range(2):  # computed, then memoized
        for op, elem, reps in [("vadd", "f16", 1), ("vadd", "f32", 7), ("vconv", "f32", 40), ("default", "f16", 3)]:
            startup, busy, _ = sim.vector(reps, op, elem)
            assert mach.instruction(op, elem, reps) == startup + busy
        for path, (bw, startup) in PATHS.items():
            for blocks in (1, 4, 32):
                if path in GM_PATHS:
                    rate = tg.bytes_per_cycle(min(getattr(tg.dma, bw), tg.dma.hbm_total / blocks))
                else:
                    rate = getattr(tg.onchip, bw)
                if not rate:
                    continue  # a path this chip does not have (the 910B's L1 -> UB)
                first = getattr(tg.startup, "vector" if path == "l0c_to_ub" and not tg.isa.fixpipe else startup)
                assert mach.dma(path, 4096, blocks, count=3) == 3 * first + 4096 / rate
        assert tuple(mach.fractal("f16")) == tuple(tg.cube_fractal("f16"))
