"""The L2 bookkeeping's block sets (computed once per rectangle and start phase, unioned
by mask) against a per-byte brute force, and L2 hits / misses against a set model."""

from __future__ import annotations

import itertools
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


def test_l2_hits_and_flushes_match_a_set_model():
    capacity_blocks = 12
    l2 = L2(capacity_blocks * 32, 32)
    seen: dict[int, set[int]] = {}
    resident = flushes = 0
    for n, (first, rect) in enumerate(_random_rects(1, 300)):
        region = n % 2
        blocks = set(_brute_blocks(first, rect, 32))
        misses = len(blocks - seen.setdefault(region, set()))
        if resident + misses > capacity_blocks:
            seen = {r: set() for r in seen}
            resident, misses = 0, len(blocks)
            flushes += 1
        seen[region] |= blocks
        resident += misses
        assert l2.access(region, first, rect) == (misses, len(blocks)), n
    assert resident == l2.resident
    assert flushes > 10  # the flush path ran
    assert np.count_nonzero(l2.read[0]) + np.count_nonzero(l2.read[1]) == sum(len(s) for s in seen.values())
