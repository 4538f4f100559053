"""The L2 bookkeeping's block sets (computed once per rectangle and start phase, unioned
by mask) against a per-byte brute force, and L2 hits / misses / arrivals / evictions
against a dict model of the rules in `sim_timing`'s docstring."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np

from ge.runtime.sim_timing import L2, touched_blocks


def _brute_blocks(first: int, rect, block: int) -> list[int]:
    shape, strides, size = rect
    out = set()
    for idx in itertools.product(*(range(n) for n in shape)):
        byte = first + sum(i * s for i, s in zip(idx, strides)) * size
        out.update(range(byte // block, (byte + size - 1) // block + 1))
    return sorted(out)


def _random_rects(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        rank = rng.randint(1, 3)
        shape = tuple(rng.randint(1, 6) for _ in range(rank))
        strides = tuple(rng.choice([0, 1, 2, 3, 5, 8, 16, 17, 40]) for _ in range(rank))
        yield rng.randint(0, 300), (shape, strides, rng.choice([1, 2, 4]))


def test_touched_blocks_match_every_byte():
    for first, rect in _random_rects(0, 400):
        assert touched_blocks(first, rect, 32).tolist() == _brute_blocks(first, rect, 32), (first, rect)


def test_l2_hits_arrivals_and_evictions_match_a_dict_model():
    """Reads at random times (not in time order, as blocks simulated one after another
    are): a block hits when a read that started no later fetched it; the hit waits for its
    arrival; a read earlier than the fetch fetches again and the block keeps the earlier
    arrival; past the capacity the earliest-arrived blocks go, down to 15/16 of it (blocks
    that arrived at the same time: the first-seen region's, lowest block first)."""
    capacity_blocks = 32
    l2 = L2(capacity_blocks * 32, 32)
    rng = random.Random(5)
    model: dict[tuple[int, int], tuple[float, float]] = {}  # (region, block) -> (fetch start, arrival)
    evictions = refetched = waited = 0
    regions: list[int] = []  # in the order the L2 first saw them
    for n, (first, rect) in enumerate(_random_rects(1, 400)):
        region, t = n % 2, float(rng.randint(0, 2000))
        end = t + rng.randint(1, 300)
        if region not in regions:
            regions.append(region)
        blocks = [(region, b) for b in _brute_blocks(first, rect, 32)]
        hits = [b for b in blocks if b in model and model[b][0] <= t]
        latest = max((model[b][1] for b in hits), default=-math.inf)
        misses, count, got_latest, handle = l2.lookup(region, first, rect, t)
        assert (misses, count, got_latest) == (len(blocks) - len(hits), len(blocks), latest), n
        refetched += sum(b in model and b not in hits for b in blocks)
        waited += latest > t
        l2.fill(handle, t, end)
        for b in blocks:
            if b not in hits:
                model[b] = (t, min(model[b][1], end) if b in model else end)
        if len(model) > capacity_blocks:  # the earliest arrived go (ties: region 0 first, then lowest block)
            order = sorted(model, key=lambda b: (model[b][1], regions.index(b[0]), b[1]))
            for b in order[:len(model) - (capacity_blocks - capacity_blocks // 16)]:
                del model[b]
            evictions += 1
        assert l2.resident == len(model), n
    assert evictions > 10 and refetched > 10 and waited > 10  # every rule ran
    assert l2.evictions == evictions
    for region in (0, 1):
        resident = {b for r, b in model if r == region}
        assert set(np.flatnonzero(l2.arrive[region] < np.inf).tolist()) == resident
        for b in resident:
            assert (l2.fetched[region][b], l2.arrive[region][b]) == model[region, b]
