"""The Cube plan search's shared terms and second bound change no cost and no plan
(lowering/tile_cube.py `_TileParts`, `CubeBounds.of_loads`; issue 17, compile speed).

`_cheapest` computes a tiling's K loop, L0C read-out and vector ops once for all its
schedules (`_TileParts`) and, when the cores share their reads, skips a candidate whose
loads at its L2 misses (`CubeBounds.of_loads`) already cost more than the cheapest plan
found. Checked on every candidate of real kernels' searches (test_plan_search_speed's
ResNet-50 convs and transformer / GEMV matmuls, on the 910 and the 910B), each on a fresh
`Machine`: a cost with the shared parts is bit-identical to one without; the second
bound never exceeds the cost, is at least `CubeBounds.of_schedule`'s share of loads and prunes
candidates that bound lets through. (That the chosen plan is the first cheapest of a plain
scan, on the same searches: test_cube_search_shapes.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_search_speed import conv_model, matmul_model, spied_searches

from ge.lowering import tile_cube
from ge.lowering.tile_cost import Machine


@pytest.fixture(scope="module", params=["ascend910", "ascend910b"])
def searches(request):
    """(problem, machine, candidates, chosen index, chosen cost) of every search of the two models."""
    return [(p, mach, list(found), i, cyc)
            for p, mach, found, i, cyc in spied_searches((m, request.param) for m in (conv_model(), matmul_model()))]


def _tilings(found):
    """Candidate indices by tiling (the schedules sharing one `_Sizes`)."""
    out: dict[int, list[int]] = {}
    for j, args in enumerate(found):
        out.setdefault(id(args[10]), []).append(j)
    return out.values()


def test_shared_parts_cost_as_the_plain_cost(searches):
    checked = 0
    for p, mach, found, *_ in searches:
        for js in _tilings(found):
            tm, tn, tk, kl1, _, _, _, l0d, _, _, s, _, _ = found[js[0]]
            parts = tile_cube._TileParts(p, Machine(mach.target), tm, tn, tk, kl1, s, l0d)
            bounds = tile_cube.CubeBounds(p, Machine(mach.target))  # (the traits computed once)
            assert parts.floor() == bounds.parts(tm, tn, tk, kl1, s, l0d).floor()
            for j in js[:: max(1, len(js) // 3)]:
                plain = tile_cube.cube_cost(p, Machine(mach.target), *found[j])
                assert tile_cube.cube_cost(p, Machine(mach.target), *found[j], parts) == plain
                assert bounds.of_schedule(*found[j], floor=parts.floor()) == \
                    tile_cube.CubeBounds(p, Machine(mach.target)).of_schedule(*found[j])
                checked += 1
    assert checked > 1000


def test_shared_loads_bound_never_exceeds_the_cost(searches):
    tighter = shared = 0
    for p, mach, found, *_ in searches:
        fresh = Machine(mach.target)
        bounds = tile_cube.CubeBounds(p, fresh)
        if not bounds.shared:
            continue
        shared += 1
        for args in found:
            tm, tn, _, kl1, order, blocks, _, _, _, split, s, batch_inner, _ = args
            chunks = -(-p.k // kl1)
            loads = bounds.of_loads(tm, tn, order, blocks, split, batch_inner, chunks, s)
            cost = tile_cube.cube_cost(p, fresh, *args)
            assert 0 < loads <= cost, args[:10]
            tighter += loads > bounds.of_schedule(*args)
    assert shared >= 2  # the convs (and the 910's unbatched matmul)
    assert tighter > 100  # it prunes what of_schedule lets through
