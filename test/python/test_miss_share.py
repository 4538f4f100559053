"""The share of the HBM a matmul's L2 misses get when its cores share their reads
(`tile_cube.MISS_SHARE`), and its A read from the L2 when the kernel before wrote it
(`tile_cube.WARM_INPUTS`; issue 16: BERT-base's projections).

In a run, a matmul's activations were just written by the kernel before it and sit in the
L2 (the simulator keeps it across launches), so only the first readers of each weight
tile fetch from HBM. The simulator (`sim_timing.CostModel.start_block`) gives a block's
transfers what the blocks still to come in its round leave free: the round's second block
(the one the model takes as the slowest core) gets two fair shares of the HBM while block
0 is not fetching. The model used to charge its misses at one fair share (hbm / blocks),
which made 32-block plans look dearer than 24-block ones that the simulator runs 17%
slower. Checked here on warm runs (the L2 kept across launches, as in bench/kernels.py);
the tests of the other switches run cold launches with the old share.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_tile_cube_shared import bert_part, feed

import ge
from ge import targets
from ge.lowering import tile_cube

pytestmark = pytest.mark.slow


def warm_run(kind: str, monkeypatch, **patches):
    """[(simulated cycles, modeled cycles, plan)] of the Cube kernels of a warm run."""
    plans = []
    with monkeypatch.context() as mp:
        for name, value in patches.items():
            mp.setattr(tile_cube, name, value)
        plan = tile_cube._plan_cube

        def planned(p, mach):
            plans.append(plan(p, mach))
            return plans[-1]

        mp.setattr(tile_cube, "_plan_cube", planned)
        compiled = ge.compile(bert_part(kind), ge.CompileOptions(keep_ir_text=False, soc_version="ascend910",
                                                                 precision_mode="force_fp16", super_kernel=False))
        compiled.run({"x": feed()}, timing_only=True)
    cube = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    modeled = {k.name: float(k.modeled) for k in compiled.executor.kernels}
    assert len(cube) == len(plans)
    return [(k.cycles, modeled[k.kernel], pl) for k, pl in zip(cube, plans)]


def test_second_blocks_misses_take_two_fair_shares(recorded):
    """FFN out on 32 cores, its A warm in the L2: the cores after block 0 that fetch
    weight tiles from HBM move their misses at 1.5-2 fair shares (hbm_total / 32), not
    one -- what MISS_SHARE = 2 charges the slowest core -- and never faster than their path."""
    target = targets.load_target("ascend910")
    with tile_cube.plans_planned():
        compiled = ge.compile(bert_part("ffn"), ge.CompileOptions(keep_ir_text=False, soc_version="ascend910",
                                                                  precision_mode="force_fp16"))
        compiled.run({"x": feed()}, timing_only=True)
    # FFN out: the launch that serves the most bytes from the L2 (its A, 8 x 128 x 3072, once per N tile)
    ffn_out = max(recorded, key=lambda c: c.l2_bytes)
    assert ffn_out.active == target.cores.cube
    fair = target.bytes_per_cycle(target.dma.hbm_total) / ffn_out.active
    rates = {}
    for core, start, end, hbm, hit, *_ in ffn_out.transfers:
        if core > 0 and hbm and not hit and end > start:
            moved, took = rates.get(core, (0.0, 0.0))
            rates[core] = (moved + hbm, took + end - start)
    assert len(rates) >= 3  # block 0 is not the only first reader
    per_core = [moved / took for moved, took in rates.values()]
    assert 1.5 * fair <= float(np.median(per_core)) <= target.bytes_per_cycle(target.dma.gm_to_l1) + 1e-6, \
        (per_core, fair)


@pytest.mark.parametrize("kind,within", [("ffn", 0.1), ("qkv", 0.2)])
def test_warm_plans_take_every_core(kind, within, monkeypatch):
    """FFN out (K = 3072) and the q projection (K = 768), warm: with MISS_SHARE (and
    WARM_INPUTS) the plan runs on all 32 cores, 24 with the model before them, and the
    simulator runs it at least 15% faster (when written: FFN out 30,101 -> 22,302 cycles,
    q 9,833 -> 7,843), modeled within 10% / 20% (the q projection's model: 9,344 with the
    launch)."""
    new = warm_run(kind, monkeypatch)
    old = warm_run(kind, monkeypatch, MISS_SHARE=1.0, WARM_INPUTS=False)
    (cycles, modeled, plan), (old_cycles, _, old_plan) = new[-1], old[-1]
    assert plan.blocks == 32 and old_plan.blocks == 24, (plan.describe(), old_plan.describe())
    assert cycles < 0.85 * old_cycles, (cycles, old_cycles)
    assert modeled == pytest.approx(cycles, rel=within), (modeled, cycles)


@pytest.mark.parametrize("kind", ["ffn", "qkv"])
def test_warm_inputs_take_longer_k_steps(kind, monkeypatch):
    """The same with A costed as an L2 hit for every core (`tile_cube.WARM_INPUTS`: the
    kernel before wrote it): the cores' loads are cheaper, so K steps of 32 (half the
    copies and their start-ups) beat steps of 16, and the simulator agrees: FFN out 24,969
    -> 22,302 cycles, q 8,353 -> 7,843 when written."""
    new = warm_run(kind, monkeypatch)
    old = warm_run(kind, monkeypatch, WARM_INPUTS=False)
    (cycles, _, plan), (old_cycles, _, old_plan) = new[-1], old[-1]
    assert plan.tk == 32 and old_plan.tk == 16, (plan.describe(), old_plan.describe())
    assert cycles < 0.95 * old_cycles, (cycles, old_cycles)
