"""The Cube plan search's per-shape terms and array bounds change no cost and no plan
(lowering/tile_cube.py `CubeBounds.of_tilings`, `_ShapeSchedules`, `CubeBounds.through`;
issue 17, compile speed).

`_cheapest` orders a search's tilings by `CubeBounds.of_tilings` (numpy arrays over every
tiling, with a bound of the K loop from its mmads and L1 -> L0 moves), asks a tile shape's
schedules their tiles per core, L2 misses and epilogue terms once (`_ShapeSchedules`) and
hands them to `cube_cost`, and costs a candidate only below its `CubeBounds.through` too.
Checked on every tiling of real kernels' searches (test_plan_search_speed's ResNet-50
convs and transformer / GEMV matmuls, on the 910 and the 910B), each on a fresh `Machine`:
the array bound of a tiling never exceeds any of its schedules' `CubeBounds.of_schedule`
(nor so their costs), equals the one-tiling `CubeBounds.of_tiling`, and its K-loop term is
what binds for some convs' tilings; `CubeBounds.through` never exceeds a candidate's cost
and is tighter than `of_schedule` for many; a cost with the shape's terms is bit-identical to the
plain one; the chosen plan is the first cheapest of a plain scan.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_search_speed import conv_model, matmul_model, spied_searches

from ge.lowering import tile_cube
from ge.lowering.tile_cost import Machine, elem_name


@pytest.fixture(scope="module", params=["ascend910", "ascend910b"])
def searches(request):
    """(problem, machine, candidates as the search got them, chosen index, chosen cost)."""
    return spied_searches((m, request.param) for m in (conv_model(), matmul_model()))


def _shapes(p, found):
    """Each tiling's `_ShapeSchedules` (one per schedules tuple, as `_cheapest` makes them)."""
    shapes: dict[int, tile_cube._ShapeSchedules] = {}
    return [shapes.setdefault(id(t[-1]), tile_cube._ShapeSchedules(p, t[1], t[2], t[-1])) for t in found.tilings]


def _without_moves(p, mach, tm, tn, tk, kl1, blocks, s, a_whole):
    """The tiling bound before the moves term (the previous `_tiling_bound`)."""
    tiles = p.batch * p.groups * -(-p.m // tm) * -(-p.n // tn)
    chunks = -(-p.k // kl1)
    shared, is_gemv = tile_cube._shares_reads(p, mach), tile_cube.gemv(p, mach)
    a_in = s.a_l1 if chunks > 1 and not a_whole and not is_gemv and not (p.conv or {}).get("c04") \
        and not shared else 0
    mmads = -(-kl1 // tk) * mach.cube(tm, tk, tn, elem_name(p.elem))
    reads = 0.0
    if shared:
        if tile_cube.PIPELINED_K:
            mmads -= -(-kl1 // tk) * mach.target.startup.cube
        reads = chunks * (s.a_l1 + s.b_l1 if chunks > 1 else min(s.a_l1, s.b_l1)) / tile_cube._fastest_read(mach, 1)
    return max(-(-tiles // blocks) * max(chunks * mmads, chunks * mach.dma("gm_to_l1", a_in), reads),
               tiles * (chunks * a_in + s.epi_in + s.out_hbm) / mach.hbm_bytes_per_cycle() * (1 - 1e-9))


def test_tiling_bounds_never_exceed_a_schedule_bound(searches):
    checked = tighter = 0
    for p, mach, found, *_ in searches:
        fresh = Machine(mach.target)
        bounds_of = tile_cube.CubeBounds(p, fresh)
        shapes = _shapes(p, found)
        most = np.array([shape.most for shape in shapes])
        bounds = bounds_of.of_tilings(found, most)
        assert bounds.shape == (len(found.tilings),)
        for n, ((_, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules), shape) in enumerate(zip(found.tilings,
                                                                                                shapes)):
            sched = [bounds_of.of_schedule(tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole)
                     for order, blocks, split, bin_ in schedules]
            assert 0 < bounds[n] <= min(sched), (tm, tn, tk, kl1)
            assert bounds[n] == bounds_of.of_tiling(tm, tn, tk, kl1, shape.most, s, whole, l0d=l0d)
            assert bounds_of.of_tiling(tm, tn, tk, kl1, shape.most, s, whole) <= bounds[n]
            old = _without_moves(p, fresh, tm, tn, tk, kl1, shape.most, s, whole)
            assert bounds[n] >= old * (1 - 1e-8)  # (less its rounding margins)
            tighter += bool(bounds[n] > old)  # the moves term binds
            checked += 1
    assert checked > 1000
    assert tighter > 100


def test_cost_with_the_shape_terms_is_the_plain_cost(searches):
    checked = 0
    for p, mach, found, *_ in searches:
        shared = tile_cube._shares_reads(p, Machine(mach.target))
        for (_, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules), shape in zip(found.tilings,
                                                                                  _shapes(p, found)):
            fresh = Machine(mach.target)
            assert shape.epilogue(fresh, s) == tile_cube._epilogue_compute(Machine(mach.target), s, tm, tn)
            parts = tile_cube._TileParts(p, fresh, tm, tn, tk, kl1, s, l0d, epilogue=shape.epilogue(fresh, s))
            chunks = -(-p.k // kl1)
            for k, (order, blocks, split, bin_) in enumerate(schedules):
                args = (tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole)
                assert shape.core[k] == tile_cube._core_tiles(p, tm, tn, order, blocks, split, bin_)
                misses = shape.misses(fresh, k, chunks == 1) if shared else None
                plain = tile_cube.cube_cost(p, Machine(mach.target), *args)
                assert tile_cube.cube_cost(p, fresh, *args, parts, shape.core[k], misses) == plain, args[:10]
                if shared:
                    assert tile_cube.CubeBounds.loads(order, chunks, s, shape.tiles[k], misses) == \
                        tile_cube.CubeBounds(p, Machine(mach.target)).of_loads(tm, tn, order, blocks, split, bin_,
                                                                               chunks, s)
                checked += 1
    assert checked > 5000


def test_through_bound_never_exceeds_the_cost(searches):
    tighter = checked = 0
    for p, mach, found, *_ in searches:
        fresh = Machine(mach.target)
        bounds = tile_cube.CubeBounds(p, fresh)
        for _, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules in found.tilings:
            parts = tile_cube._TileParts(p, fresh, tm, tn, tk, kl1, s, l0d)
            for order, blocks, split, bin_ in schedules:
                args = (tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole)
                per_core, inner = tile_cube._core_tiles(p, tm, tn, order, blocks, split, bin_)
                through = bounds.through(parts, per_core * inner)  # (with the stream's start-up, as searched)
                assert 0 < through <= tile_cube.cube_cost(p, fresh, *args), args[:10]
                tighter += through > bounds.of_schedule(*args)
                checked += 1
    assert checked > 5000
    assert tighter > 1000  # it prunes what of_schedule lets through


def test_the_plan_is_the_first_cheapest_of_a_plain_scan(searches):
    for p, mach, found, i, cyc in searches:
        fresh = Machine(mach.target)
        costs = [tile_cube.cube_cost(p, fresh, *args) for args in found]
        best = min(costs)
        assert (i, cyc) == (costs.index(best), best)
        assert tile_cube._cheapest(p, Machine(mach.target), list(found)) == (i, cyc)  # from a plain list too
