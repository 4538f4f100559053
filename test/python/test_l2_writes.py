"""The tiler's cost model stores a Cube kernel's output tiles into the L2 when the output is
at most half the L2 (`tile_cube.L2_WRITES`, `_Fixed.out_l2`): at the core's share of the L2
bandwidth, outside the HBM budget, as the simulator's L2 takes the writes (its dirty
blocks reach the HBM when evicted). At the HBM share a 28 KB tile's store was priced at
805 cycles where the simulator took ~290 (resnet50_b16's k29_n84). With it the cost model's
kernels within 15% of the simulated cycles went 78% -> 90% on resnet50, 76% -> 86% on
resnet50_b16, 69% -> 88% on bert_base (bench/results/tile_cost_accuracy.*)."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_converted_ub import _conv, _inputs

from ge import targets
from ge.lowering import tile_cube
from ge.lowering.tile_cost import Machine
from ge.testing import kernel_ir


def _problem(monkeypatch):
    seen, plan = [], tile_cube._plan_one

    def spy(p, mach, *keep):
        seen.append(p)
        return plan(p, mach, *keep)

    monkeypatch.setattr(tile_cube, "_plan_one", spy)
    return seen


def test_stores_into_the_l2_leave_the_hbm_term(tmp_path, monkeypatch):
    seen = _problem(monkeypatch)
    kernel_ir(_conv(), tmp_path, soc_version="ascend910")
    p = seen[-1]
    assert (p.n, p.k) == (256, 1024)
    t910 = targets.load_target("ascend910")
    assert tile_cube._fixed(p, t910).out_l2  # 1.6 MB of output, a 32 MB L2
    small = replace(t910, memory=replace(t910.memory, l2=2 * 1024 * 1024))  # half of it: 1 MB
    assert not tile_cube._fixed(p, small).out_l2
    assert not tile_cube._fixed(p, targets.load_target("ascend310b")).out_l2  # no L2
    mach = Machine(t910)
    s = tile_cube.sizes(p, 208, 128, 32, 64, tile_cube._fixed(p, t910))
    assert s.out == 208 * 128 * 2 and s.out_hbm == 0
    store = tile_cube._epilogue_traffic(mach, s, 32)[1]
    l2_share = t910.bytes_per_cycle(t910.dma.l2_total) / 32
    assert store == t910.startup.mte3 + s.out / min(l2_share, mach.bytes_per_cycle("ub_to_gm", 1))
    cold = replace(s, out_l2=False)
    assert cold.out_hbm == s.out and tile_cube._epilogue_traffic(mach, cold, 32)[1] > 2 * store


def test_the_model_meets_the_simulator(tmp_path, monkeypatch):
    """The 1024 -> 256 1 x 1 conv at batch 16: modeled within 3% of the simulated cycles
    (measured 10,702 against 10,662), 8.7% over them without (11,592). (Its weights
    through L1, as when measured: with B from GM (`B_DIRECT`) the same plan is modeled
    3.0% under.)"""
    ratio = {}
    monkeypatch.setattr(tile_cube, "B_DIRECT", False)
    for on in (True, False):
        monkeypatch.setattr(tile_cube, "L2_WRITES", on)
        compiled, kernel = kernel_ir(_conv(), tmp_path / str(on), soc_version="ascend910", super_kernel=False)
        compiled.run(_inputs(), timing_only=True)
        (k,) = [k for k in compiled.last_run.kernels if k.pipe_busy.get("M")]
        ratio[on] = int(re.search(r"tile\.cycles = (\d+)", kernel)[1]) / k.cycles
    assert abs(ratio[True] - 1) < 0.03, ratio
    assert ratio[False] > ratio[True] + 0.05, ratio
