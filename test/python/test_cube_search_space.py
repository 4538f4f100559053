"""The Cube plan search's array enumeration and tighter bounds change no candidate, no cost
and no plan (lowering/tile_cube.py `_search_space`, `CubeBounds.keys`, `CubeBounds.serial`;
issue 17, compile speed).

`_search_space` finds a problem's candidates with numpy over the (M tile, N tile, K option)
grid and makes a tiling's `_Sizes` when first asked; `_cheapest` visits the tilings in the
order of `CubeBounds.keys` (`CubeBounds.of_tilings` or an array `CubeBounds.through`) and
skips a candidate whose `through` plus `CubeBounds.serial` (the cost's first load and
start-up, outside the tiles' pipeline) exceeds the cheapest cost found. Checked on the searches of
test_plan_search_speed's ResNet-50 convs and transformer / GEMV matmuls on the 910 and the
910B: the candidates are those of the plain scalar scan (below: the search before the
arrays), also on the same chips with smaller local memories, where the nearest miss a
failing search reports is the plain scan's; every new bound is at most the cost of each
candidate it bounds; and the search costs fewer candidates and visits fewer tilings than
without the new bounds, picking the same one.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_search_speed import conv_model, matmul_model, spied_searches

from ge.lowering import tile_cube as tc
from ge.lowering.tile_cost import Machine, align, elem_name
from ge.lowering.tile_vector import CapacityShortfall


@pytest.fixture(scope="module", params=["ascend910", "ascend910b"])
def searches(request):
    """(problem, machine, candidates as the search got them, chosen index, chosen cost)."""
    return spied_searches((m, request.param) for m in (conv_model(), matmul_model()))


def _plain_scan(p, mach):
    """(every candidate as `cube_cost` arguments, the nearest miss) by the scalar loops the
    search ran before `_search_space`: M tile, N tile, K chunk, K step, a_whole, schedule."""
    tg = mach.target
    m0, k0, n0 = mach.fractal(elem_name(p.elem))
    cores = mach.cores(cube=True)
    mem, al = tg.memory, tg.alignment
    fixed = tc._fixed(p, tg)
    ab = fixed.ab
    wholes = (False, True) if tc.gemv(p, mach) else (False,)
    out, smallest = [], None
    for tm in tc._m_candidates(p, m0):
        for tn in tc._n_candidates(p, n0):
            for es in tc._epi_splits(p, tm, tn, fixed):
                ub, temps, epi_in, serial = tc._ub_sizes(p, tm, tn, fixed, es)
                if ub <= mem.ub:
                    break
            l0c = align(tm * tn * 4, al.l0c)
            epid = 2 * l0c <= mem.l0c and 2 * ub - temps <= mem.ub
            for kl1, tks in tc._k_options(p, k0):
                for tk in sorted(tks, reverse=True):
                    if p.kind == "conv" and tk < kl1 and -(-kl1 // tk) * tk - kl1 >= tk // 2 and kl1 % tk:
                        continue
                    l0a, l0b = align(tm * tk * ab, al.l0a), align(tk * tn * ab, al.l0b)
                    for whole in wholes if kl1 < p.k else (False,):
                        a_l1, a_cap = tc._a_sizes(p, tm, kl1, ab, whole)
                        l1 = align(a_cap or a_l1, al.l1) + align(kl1 * tn * ab, al.l1)
                        need = (("l0a", l0a, mem.l0a), ("l0b", l0b, mem.l0b), ("l0c", l0c, mem.l0c),
                                ("l1", l1, mem.l1), ("ub", ub, mem.ub))
                        miss = next(((s, n, h) for s, n, h in need if n > h), None)
                        if miss:
                            if smallest is None or miss[1] - miss[2] < smallest[1] - smallest[2]:
                                smallest = miss
                            continue
                        s = tc._Sizes(a_l1, kl1 * tn * ab, tm * tk * ab, tk * tn * ab, tm * tn * 4, ub, epi_in,
                                      fixed.outs * tm * tn * fixed.ob, fixed.vec_ops, fixed.program, temps, es, serial,
                                      a_cap, tc._epi_bytes(fixed, tm, tn, True), fixed.out_l2)
                        l0d = 2 * l0a <= mem.l0a and 2 * l0b <= mem.l0b
                        for order, blocks, split, bin_ in tc._schedules(p, tm, tn, whole, cores):
                            out.append((tm, tn, tk, kl1, order, blocks, 2 * l1 <= mem.l1, l0d, epid, split, s, bin_,
                                        whole))
    return out, smallest or ("ub", 0, 0)


def _shrunk(target, factor):
    """`target` with its local memories `factor` times smaller."""
    m = target.memory
    return dataclasses.replace(target, memory=dataclasses.replace(
        m, l1=m.l1 // factor, l0a=m.l0a // factor, l0b=m.l0b // factor, l0c=m.l0c // factor, ub=m.ub // factor))


def test_search_space_is_the_plain_scan(searches):
    checked = failed = 0
    for p, mach, found, *_ in searches:
        plain, _ = _plain_scan(p, Machine(mach.target))
        assert list(found) == plain and len(found) == len(plain) > 100
        assert [t[:-1] for t in tc._Candidates.of(plain).tilings] == [t[:-1] for t in found.tilings]
        for factor in (4, 16, 64, 256):
            small = Machine(_shrunk(mach.target, factor))
            plain, smallest = _plain_scan(p, small)
            try:
                got = tc._search_space(p, small)
            except CapacityShortfall as e:
                assert not plain and (e.space, e.need, e.have) == smallest, factor
                failed += 1
                continue
            assert list(got) == plain, factor
            checked += 1
    assert checked >= 8 and failed >= 4  # both sides of the edge


def test_new_bounds_never_exceed_the_cost(searches):
    tighter = checked = 0
    for p, mach, found, _, cyc in searches:
        fresh = Machine(mach.target)
        bounds_of = tc.CubeBounds(p, fresh)
        shared = tc._shares_reads(p, fresh)
        shape_of, keys = found.shape_index()
        most = np.array([max(b for _, b, _, _ in sch) for _, _, sch in keys])[shape_of]
        bounds = bounds_of.of_tilings(found, most)
        tiling_keys = bounds_of.keys(found, most)
        assert np.all(tiling_keys >= bounds)
        for n, (_, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules) in enumerate(found.tilings):
            parts = tc._TileParts(p, fresh, tm, tn, tk, kl1, s, l0d)
            chunks = parts.chunks
            costs = []
            for order, blocks, split, bin_ in schedules:
                args = (tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole)
                cost = tc.cube_cost(p, fresh, *args)
                costs.append(cost)
                per_core, inner = tc._core_tiles(p, tm, tn, order, blocks, split, bin_)
                misses = tc._shared_misses(p, fresh, tm, tn, order, blocks, split, bin_, chunks == 1, per_core) \
                    if shared else None
                loads = bounds_of.loads(order, chunks, s, 1, misses) if shared else 0.0
                plain = bounds_of.through(parts, per_core * inner, serial=0.0)  # (the old bound)
                assert bounds_of.through(parts, per_core * inner, loads, serial=0.0) >= plain
                serial = bounds_of.serial(parts, order, per_core, l1d, whole, misses)
                through = bounds_of.through(parts, per_core * inner, loads, serial)
                assert 0 < through <= cost, args[:10]
                tighter += through > cyc >= plain
                checked += 1
            assert tiling_keys[n] <= min(costs), (tm, tn, tk, kl1)
    assert checked > 5000
    assert tighter > 100  # candidates the old bound had costed


def test_search_costs_fewer_candidates_for_the_same_plan(searches, monkeypatch):
    def counted(p, mach, found):
        counts = {"costs": 0, "tilings": 0}
        real_cost, real_parts = tc.cube_cost, tc._TileParts

        def cost(*a, **k):
            counts["costs"] += 1
            return real_cost(*a, **k)

        def parts(*a, **k):
            counts["tilings"] += 1
            return real_parts(*a, **k)

        with monkeypatch.context() as m:
            m.setattr(tc, "cube_cost", cost)
            m.setattr(tc, "_TileParts", parts)
            return tc._cheapest(p, Machine(mach.target), found), counts

    new = {"costs": 0, "tilings": 0}
    old = dict(new)
    for p, mach, found, i, cyc in searches:
        got, counts = counted(p, mach, found)
        assert got == (i, cyc)
        for k in new:
            new[k] += counts[k]
        with monkeypatch.context() as m:  # without the new bounds
            m.setattr(tc.CubeBounds, "serial", lambda *a: 0.0)
            m.setattr(tc.CubeBounds, "keys", tc.CubeBounds.of_tilings)
            got, counts = counted(p, mach, found)
        assert got == (i, cyc)
        for k in old:
            old[k] += counts[k]
    assert new["costs"] < old["costs"] and new["tilings"] < old["tilings"], (new, old)
