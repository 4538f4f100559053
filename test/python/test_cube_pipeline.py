"""The Cube kernel's K loop (issue 16: Cube-bound kernels kept the Cube 55-67% busy).

A loop over a chunk's K steps with double-buffered L0A / L0B drains at its end: insert-sync
sets the loop's flags before it and waits for them after it, so the next chunk's (or
tile's) first L1 -> L0 moves wait for this chunk's last mmad, and the Cube waits for those
moves (resnet50's 3 x 3 convs at batch 16: ~175-270 cycles per chunk or tile). The emitter
unrolls a chunk's steps over two single L0 buffers instead (`tile_cube._unrolled_steps`,
`tile_cube.UNROLLED_K`): with 2 steps per chunk the chunk runs as the loop did, without the
loop's drain on every other chunk; chunks of up to 16 steps unroll because insert-sync gives
each forward dependency its own pair (`tile_cube.TIGHT_FORWARD_SYNC`; merged pairs would make
step i's moves wait for mmad i - 1).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import ge
from ge.dialects import tile as t
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.lowering import tile_cube
from ge.lowering.tile_cost import Machine
from ge.testing import conv_relu_model

SHAPE = (128, 128, 14, 3)  # a resnet50 layer-3 3 x 3 conv at 14 x 14: plan k=144 k_l1=288 (2 steps per chunk)


def tile_allocs(model, space: t.MemSpace) -> list[int]:
    """The buffer counts of the Cube kernel's allocs in `space`, after the tile pass."""
    m = import_model(model)
    run_passes(m, "graph-optimize{level=0 precision=force_fp16},assign-layouts{target=ascend910},fuse,bufferize,"
                  "tile{target=ascend910}")
    return [op.count.value.data for op in m.walk() if isinstance(op, t.AllocOp) and t.space_of(op.result.type) == space]


def simulate(model, shape) -> tuple[list[tile_cube.CubePlan], float, np.ndarray]:
    """(the plans made, the Cube kernel's simulated cycles, the output)."""
    with tile_cube.plans_planned() as plans:
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False, soc_version="ascend910",
                                                       precision_mode="force_fp16"))
    made = [replace(p, cycles=0) for p in plans.values()]
    y = compiled.run({"x": np.random.default_rng(1).standard_normal(shape).astype(np.float32)})
    assert not compiled.last_run.problems, compiled.last_run.problems[:3]
    (kernel,) = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    return made, kernel.alone, next(iter(y.values())) if isinstance(y, dict) else y[0]


def problem(model, monkeypatch) -> tuple[tile_cube.CubeProblem, Machine]:
    """The Cube problem of `model`'s one Cube kernel and the machine it is planned for."""
    got = []
    plan_of = tile_cube._plan_cube

    def planned(p, mach):
        got.append((p, mach))
        return plan_of(p, mach)

    with monkeypatch.context() as mp:
        mp.setattr(tile_cube, "_plan_cube", planned)
        ge.compile(model, ge.CompileOptions(keep_ir_text=False, soc_version="ascend910", precision_mode="force_fp16"))
    return got[-1]


def test_two_steps_unrolled_over_two_l0_buffers(monkeypatch):
    """2 K steps per chunk: two single L0A (and L0B) buffers, not one double buffer."""
    model, _ = conv_relu_model(*SHAPE)
    monkeypatch.setattr(tile_cube, "UNROLLED_K", True)
    assert tile_allocs(model, t.MemSpace.L0A) == [1, 1]
    assert tile_allocs(model, t.MemSpace.L0B) == [1, 1]
    monkeypatch.setattr(tile_cube, "UNROLLED_K", False)
    assert tile_allocs(model, t.MemSpace.L0A) == [2]


@pytest.mark.slow
def test_unrolled_chunk_runs_without_the_step_loops_drain(monkeypatch):
    """The same plan and the same sums (bit-identical output), fewer cycles: the loop
    version's chunks start with their first moves after the previous chunk's last mmad
    (simulated 2,807 -> 2,711 cycles)."""
    model, shape = conv_relu_model(*SHAPE)
    monkeypatch.setattr(tile_cube, "UNROLLED_K", True)
    plans, cycles, y = simulate(model, shape)
    monkeypatch.setattr(tile_cube, "UNROLLED_K", False)
    old_plans, old_cycles, old_y = simulate(model, shape)
    assert plans == old_plans
    assert {(tile_cube._ceil(p.kl1, p.tk), p.l0_buffers) for p in plans} == {(2, 2)}
    assert np.array_equal(y, old_y)
    assert cycles < old_cycles - 50, (cycles, old_cycles)


def test_longer_chunks_unrolled_only_with_tight_forward_sync(monkeypatch):
    """More than 2 steps per chunk stay a loop while insert-sync merges overlapping forward
    pairs (unrolled, each step's moves would wait for the mmad just before them); with
    TIGHT_FORWARD_SYNC they unroll and the cost model drops the chunk's fill from `_k_loop`,
    paying it once per tile (`_k_fill`)."""
    monkeypatch.setattr(tile_cube, "UNROLLED_K", True)
    monkeypatch.setattr(tile_cube, "TIGHT_FORWARD_SYNC", False)
    plan = tile_cube.CubePlan(128, 64, 96, 576, "nm", 2, 2, 2, 2, 32, 0.0)
    assert tile_cube._unrolled_steps(plan, 2) and not tile_cube._unrolled_steps(plan, 6)
    assert not tile_cube._unrolled_steps(replace(plan, l0_buffers=1), 2)
    assert not tile_cube._unrolled_steps(plan, 3)
    p, mach = problem(conv_relu_model(256, 256, 14, 3)[0], monkeypatch)
    s = tile_cube.sizes(p, 208, 64, 48, 288)
    looped = tile_cube._k_loop(p, mach, 208, 64, 48, 288, s, True)  # 6 steps: a loop
    assert tile_cube._k_fill(p, mach, 208, 64, 48, 288, s, True) == 0.0
    monkeypatch.setattr(tile_cube, "TIGHT_FORWARD_SYNC", True)
    assert tile_cube._unrolled_steps(plan, 6)
    unrolled = tile_cube._k_loop(p, mach, 208, 64, 48, 288, s, True)
    fill = tile_cube._k_fill(p, mach, 208, 64, 48, 288, s, True)
    assert fill > 0 and unrolled == pytest.approx(looped - fill)
