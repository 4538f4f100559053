"""`executor._l2_bound`: the tiler's bound for a launch that finds inputs in the L2 and
writes into it. The HBM and the L2 move bytes at the same time (separate bandwidths in the
simulator, as on the chip), so their times are a max, not a sum: resnet50_b16's k10_n26
(a 1 x 1 conv reading from the HBM while writing into the L2) ran 13,892 cycles against the
summed 14,041."""

from __future__ import annotations

import numpy as np
import pytest

from ge import targets
from ge.runtime.executor import _l2_bound

T = targets.load_target("ascend910")
HBM, L2 = T.bytes_per_cycle(T.dma.hbm_total), T.bytes_per_cycle(T.dma.l2_total)


def arrays(*nbytes: int) -> list[np.ndarray]:
    return [np.zeros(n, np.uint8) for n in nbytes]


def test_writes_into_the_l2_overlap_the_hbm_reads():
    """A memory-bound launch (1.2 MB in, 1.2 MB out at the HBM rate): its writes go into the
    L2 while its reads come from the HBM, so the bound is the reads' time, not reads + writes
    at the L2 rate."""
    ins, outs = arrays(1_200_000), arrays(1_200_000)
    bound = (1_200_000 + 1_200_000) / HBM
    got = _l2_bound(T, bound, {"gm_read_warm": 0, "gm_write": 1_200_000}, ins, outs)
    assert got == pytest.approx(1_200_000 / HBM)
    summed = bound - 1_200_000 * (1 / HBM - 1 / L2)  # the old form
    assert got < summed


def test_all_in_the_l2_is_its_rate_and_never_above_the_bound():
    ins, outs = arrays(640_000), arrays(320_000)
    bound = 960_000 / HBM
    got = _l2_bound(T, bound, {"gm_read_warm": 640_000, "gm_write": 320_000}, ins, outs)
    assert got == pytest.approx(960_000 / L2)
    # a compute-bound launch: never above its bound, whatever moved
    assert _l2_bound(T, 10 * bound, {"gm_read_warm": 640_000, "gm_write": 320_000}, ins, outs) <= 10 * bound
    # nothing through the L2: the bound itself
    assert _l2_bound(T, bound, {"gm_read_warm": 0, "gm_write": 0}, ins, outs) == bound


def test_re_reads_split_between_the_hbm_and_the_l2():
    """Four cores read the same 1 MB (the tiler's bound counts 4 MB): the 3 MB read again
    cross the HBM or the L2, so the bound is the least max over their split -- the split
    that balances the two terms -- not all 4 MB at the HBM rate."""
    ins, outs = arrays(1_000_000), arrays(0)
    bound = 4_000_000 / HBM
    work = {"gm_read": 4_000_000, "gm_read_new": 1_000_000, "gm_read_warm": 0, "gm_write": 0}
    got = _l2_bound(T, bound, work, ins, outs)
    via_l2 = 4_000_000 * L2 / (HBM + L2)
    assert got == pytest.approx((4_000_000 - via_l2) / HBM) == pytest.approx(via_l2 / L2)
    assert 1_000_000 / HBM < got < bound  # more than the new bytes alone, less than all at the HBM
    for share in np.linspace(0, 3_000_000, 7):  # no split does better
        assert got <= max((4_000_000 - share) / HBM, share / L2) + 1e-9
