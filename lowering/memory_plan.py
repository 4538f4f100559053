"""GM memory plan: an offset for every activation tensor of a kernel sequence, with reuse.

Part of `build-model` (DESIGN.md §2, the step down to the `task` level), GE's
GraphMemoryAssigner (ascend.md §4.5). The input is abstract: each tensor has a size in
bytes and a lifetime `[start, end]` in steps of the kernel sequence (inclusive: the step
that writes it through the last step that may still touch it). Two tensors whose
lifetimes overlap must not share a byte; two that do not may.

Offsets come from greedy by size (Pisarchyk & Lee 2020, "Efficient Memory Management for
Deep Neural Net Inference", "Greedy by Size for Offset Calculation"): tensors in
decreasing size, each placed in the smallest gap between already placed tensors whose
lifetimes overlap its own, or above all of them. Equal sizes are frequent, so it runs with
three tie-breaks; the same paper's greedy by breadth (steps in decreasing live bytes, their
tensors in decreasing size) and a longest-lifetime-first order use the same placement. The
smallest plan is kept, as GE's HybridMemAssigner keeps the better of its assigners.

A plan reports its `peak` (the arena the tensors need), the `lower_bound` (the largest
number of bytes live at one step: no plan can do better) and `no_reuse` (every tensor in a
slot of its own). `check_no_overlap` verifies a plan step by step.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ge.errors import GeError


class MemoryPlanError(GeError):
    """A memory plan in which two live tensors share bytes (or a malformed plan)."""


@dataclass(frozen=True)
class Tensor:
    """A tensor to place: `size` bytes live from step `start` through step `end`."""

    name: str
    size: int
    start: int
    end: int

    def overlaps(self, other: Tensor) -> bool:
        """Are both alive at some step?"""
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class MemoryPlan:
    offsets: tuple[int, ...]  # one per tensor, in the order given
    peak: int  # bytes of the arena the plan needs
    lower_bound: int  # most aligned bytes live at one step
    no_reuse: int  # every tensor in its own aligned slot
    strategy: str  # "greedy-by-size", "greedy-by-breadth" or "no-reuse"


def align_up(nbytes: int, alignment: int) -> int:
    """`nbytes` rounded up to a multiple of `alignment`."""
    return -(-nbytes // alignment) * alignment


def live_bytes(tensors: Sequence[Tensor], alignment: int) -> list[int]:
    """Aligned bytes live at each step 0 .. last end."""
    steps = max((t.end for t in tensors), default=-1) + 1
    delta = [0] * (steps + 1)
    for t in tensors:
        delta[t.start] += align_up(t.size, alignment)
        delta[t.end + 1] -= align_up(t.size, alignment)
    live, total = [], 0
    for d in delta[:steps]:
        total += d
        live.append(total)
    return live


def lower_bound(tensors: Sequence[Tensor], alignment: int) -> int:
    """The largest number of aligned bytes live at one step."""
    return max(live_bytes(tensors, alignment), default=0)


def _best_fit(size: int, placed: list[tuple[int, int]]) -> int:
    """Lowest-waste offset for `size` bytes beside `placed` (offset, end) ranges sorted by
    offset: the smallest gap that holds it, else the top of the highest range."""
    best, best_gap, top = None, None, 0
    for offset, end in placed:
        gap = offset - top
        if gap >= size and (best_gap is None or gap < best_gap):
            best, best_gap = top, gap
        top = max(top, end)
    return top if best is None else best


def _place(order: Sequence[int], tensors: Sequence[Tensor], sizes: Sequence[int]) -> list[int]:
    """Place tensors in `order`, each by best fit among the placed ones it overlaps."""
    offsets = [-1] * len(tensors)
    done: list[int] = []
    for i in order:
        t = tensors[i]
        placed = sorted((offsets[j], offsets[j] + sizes[j]) for j in done if t.overlaps(tensors[j]))
        offsets[i] = _best_fit(sizes[i], placed)
        done.append(i)
    return offsets


def _by_size(tie: Callable[[Tensor], object]) -> Callable[[Sequence[Tensor], int], list[int]]:
    def plan(tensors: Sequence[Tensor], alignment: int) -> list[int]:
        sizes = [align_up(t.size, alignment) for t in tensors]
        order = sorted(range(len(tensors)), key=lambda i: (-sizes[i], tie(tensors[i]), i))
        return _place(order, tensors, sizes)

    return plan


# Pisarchyk & Lee's greedy by size leaves the order of equal sizes open (a model has many
# tensors of one shape); each tie-break below wins on some of the light models.
greedy_by_size = _by_size(lambda t: t.start - t.end)  # the longest lifetime first
greedy_by_size_earliest = _by_size(lambda t: t.start)  # the earliest first
greedy_by_size_latest = _by_size(lambda t: -t.end)  # the latest to die first


def greedy_by_lifetime(tensors: Sequence[Tensor], alignment: int) -> list[int]:
    """The longest-lived tensors first (at the bottom of the arena), larger first on ties."""
    sizes = [align_up(t.size, alignment) for t in tensors]
    order = sorted(range(len(tensors)), key=lambda i: (tensors[i].start - tensors[i].end, -sizes[i], i))
    return _place(order, tensors, sizes)


def greedy_by_breadth(tensors: Sequence[Tensor], alignment: int) -> list[int]:
    """Pisarchyk & Lee's greedy by breadth: the step with the most live bytes first, its
    tensors largest first; then the next broadest step, and so on."""
    sizes = [align_up(t.size, alignment) for t in tensors]
    live = live_bytes(tensors, alignment)
    by_step: list[list[int]] = [[] for _ in live]
    for i, t in enumerate(tensors):
        for s in range(t.start, t.end + 1):
            by_step[s].append(i)
    order, seen = [], set()
    for s in sorted(range(len(live)), key=lambda s: (-live[s], s)):
        for i in sorted(by_step[s], key=lambda i: (-sizes[i], i)):
            if i not in seen:
                seen.add(i)
                order.append(i)
    return _place(order, tensors, sizes)


def no_reuse(tensors: Sequence[Tensor], alignment: int) -> list[int]:
    """Every tensor in a slot of its own, in the order given."""
    offsets, top = [], 0
    for t in tensors:
        offsets.append(top)
        top += align_up(t.size, alignment)
    return offsets


STRATEGIES: dict[str, Callable[[Sequence[Tensor], int], list[int]]] = {
    "greedy-by-size": greedy_by_size,
    "greedy-by-size/earliest": greedy_by_size_earliest,
    "greedy-by-size/latest": greedy_by_size_latest,
    "greedy-by-breadth": greedy_by_breadth,
    "greedy-by-lifetime": greedy_by_lifetime,
}


def plan_memory(tensors: Sequence[Tensor], alignment: int, reuse: bool = True) -> MemoryPlan:
    """Offsets for `tensors` (multiples of `alignment`); with `reuse`, the smaller of the
    greedy plans, else one slot per tensor."""
    for t in tensors:
        if t.size < 0 or t.start < 0 or t.end < t.start:
            raise MemoryPlanError(f"tensor '{t.name}': bad size {t.size} or lifetime [{t.start}, {t.end}]")
    bound = lower_bound(tensors, alignment)
    total = sum(align_up(t.size, alignment) for t in tensors)
    candidates = {"no-reuse": no_reuse(tensors, alignment)}
    if reuse:
        candidates = {name: f(tensors, alignment) for name, f in STRATEGIES.items()}
    best, best_peak = "", -1
    for name, offsets in candidates.items():
        peak = max((o + align_up(t.size, alignment) for o, t in zip(offsets, tensors)), default=0)
        if best_peak < 0 or peak < best_peak:
            best, best_peak = name, peak
    return MemoryPlan(tuple(candidates[best]), best_peak, bound, total, best)


def check_no_overlap(tensors: Sequence[Tensor], offsets: Sequence[int], alignment: int = 1) -> None:
    """Raise MemoryPlanError unless, at every step, the tensors live at that step occupy
    disjoint byte ranges (and every offset is a non-negative multiple of `alignment`)."""
    if len(offsets) != len(tensors):
        raise MemoryPlanError(f"{len(offsets)} offsets for {len(tensors)} tensors")
    for t, o in zip(tensors, offsets):
        if o < 0 or o % alignment:
            raise MemoryPlanError(f"tensor '{t.name}' at offset {o}: not a non-negative multiple of {alignment}")
    steps = max((t.end for t in tensors), default=-1) + 1
    starting: list[list[int]] = [[] for _ in range(steps)]
    for i, t in enumerate(tensors):
        starting[t.start].append(i)
    live: list[int] = []
    for s in range(steps):
        live = [i for i in live if tensors[i].end >= s] + starting[s]
        ranges = sorted((offsets[i], offsets[i] + tensors[i].size, i) for i in live if tensors[i].size)
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(ranges):
            if start_b < end_a:
                ta, tb = tensors[a], tensors[b]
                raise MemoryPlanError(
                    f"step {s}: '{ta.name}' [{offsets[a]}, {offsets[a] + ta.size}) and '{tb.name}' "
                    f"[{offsets[b]}, {offsets[b] + tb.size}) are both live and share bytes"
                )
