"""The simulator's memories and what its checks remember about them.

A `Region` is one tracked byte range -- a local memory of a core or one GM kernel argument.
What the checks (`ge.runtime.simulator`) remember:

- per buffer, an access log (`Entry` tuples: span, pattern, pipe, index, write, instruction) of
  the accesses some pipe may not yet know have finished, kept by the simulator's
  `RunState`. An access is checked against the entries of the buffers sharing a byte with
  its own (known when the kernel is decoded) that its pipe does not know finished:
  disjoint spans are ruled out by two integer comparisons, overlapping spans of strided
  patterns by an exact byte-set test (`overlap`, cached per pair of patterns and
  distance). This replaced a per-byte shadow (8 int32 per data byte, 2/3 of the run time);
- per region, the bytes ever written (reads of never-written bytes are reported);
- on GM, per byte the block of the launch that wrote it and the block that read it (-2:
  several), to find races between the blocks of a launch, which run on different cores
  with nothing ordering them.
"""

from __future__ import annotations

import functools
import math

import numpy as np

MANY = -2  # rblock: read by more than one block


class Pattern:
    """Elements `idx . strides` for idx < shape (relative to an operand's offset) of
    `k`-byte elements, with what `touch` needs precomputed: the span [lo, hi) in
    elements, whether it is one contiguous run, and byte strides."""

    __slots__ = ("_offsets", "byte_shape", "byte_strides", "byte_view_strides", "contiguous", "count", "hi", "k",
                 "lo", "once_shape", "once_strides", "shape", "span", "strides")

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], k: int):
        self.shape, self.strides, self.k = shape, strides, k
        self.lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
        self.hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides)) + 1
        self.count = math.prod(shape)
        self.span = (self.lo * k, self.hi * k)  # in bytes
        step, row_major = 1, True
        for n, st in reversed(list(zip(shape, strides))):
            if n > 1:
                row_major = row_major and st == step
                step *= n
        self.contiguous = self.lo == 0 and self.hi == self.count and row_major
        self.byte_strides = tuple(st * k for st in strides)
        self.byte_shape = (*shape, k)  # a per-byte array seen through the pattern
        self.byte_view_strides = (*self.byte_strides, 1)
        dims = [(n, b) for n, b in zip(shape, self.byte_strides) if n > 1 and b != 0]  # broadcast dims dropped
        self.once_shape = (*(n for n, _ in dims), k)
        self.once_strides = (*(b for _, b in dims), 1)
        self._offsets: np.ndarray | None = None

    def offsets(self) -> np.ndarray:
        """The byte offsets the pattern touches (relative to its origin), sorted, unique."""
        if self._offsets is None:
            grid = np.zeros(1, dtype=np.int64)
            for n, b in zip(self.byte_shape, self.byte_view_strides):
                grid = np.add.outer(grid, np.arange(n, dtype=np.int64) * b).reshape(-1)
            self._offsets = np.unique(grid)
        return self._offsets

    def view(self, typed: np.ndarray, first: int) -> np.ndarray:
        """The elements of a contiguous 1-D `typed` array at the pattern from element `first`."""
        return np.ndarray(self.shape, typed.dtype, typed, first * self.k, self.byte_strides)

    def bytes_once(self, array: np.ndarray, start: int) -> np.ndarray:
        """Like `bytes_of` on a byte (uint8 / bool) array, without the stride-0 dims (each
        byte once)."""
        if self.contiguous:
            return array[start:start + self.count * self.k]
        return np.ndarray(self.once_shape, array.dtype, array, start, self.once_strides)

    def bytes_of(self, array: np.ndarray, start: int) -> np.ndarray:
        """The view of a contiguous per-byte `array` at the pattern's bytes from byte `start`."""
        if self.contiguous:
            return array[start:start + self.count * self.k]
        size = array.itemsize
        return np.ndarray(self.byte_shape, array.dtype, array, start * size,
                          tuple(s * size for s in self.byte_view_strides))


@functools.lru_cache(maxsize=4096)
def pattern(shape: tuple[int, ...], strides: tuple[int, ...], k: int) -> Pattern:
    return Pattern(shape, strides, k)


_OVERLAPS: dict[tuple[Pattern, Pattern, int], bool] = {}


def overlap(a: Pattern, b: Pattern, distance: int) -> bool:
    """Whether pattern `a` at 0 and pattern `b` at byte `distance` share a byte."""
    key = (a, b, distance)
    hit = _OVERLAPS.get(key)
    if hit is None:
        oa, ob = a.offsets(), b.offsets() + distance
        ob = ob[(ob >= oa[0]) & (ob <= oa[-1])]
        if ob.size:
            mask = np.zeros(int(oa[-1] - oa[0]) + 1, dtype=bool)
            mask[oa - oa[0]] = True
            hit = bool(mask[ob - oa[0]].any())
        else:
            hit = False
        if len(_OVERLAPS) > 200_000:
            _OVERLAPS.clear()
        _OVERLAPS[key] = hit
    return hit


# One logged access, a plain tuple (made once per access: a class costs an __init__ call):
# bytes [lo, hi) spanned, `pat` from byte `start`, instruction number `index` of `pipe`,
# whether it writes, program instruction `instr`.
Entry = tuple  # (lo, hi, start, pat, pipe, index, write, instr)


class _NoView:
    """What an access gives when the numerics are skipped (timing only)."""

    def __getitem__(self, key: object) -> _NoView:
        return self


NO_VIEW = _NoView()


class Region:
    """A tracked byte range (see the module docstring). `written` is None for a GM input:
    every byte counts as written by the host before the launch."""

    def __init__(self, name: str, data: np.ndarray, initialized: bool):
        self.name = name
        self.data = data
        self.written: np.ndarray | None = None if initialized else np.zeros(data.size, dtype=bool)
        self.dirty = 0  # bytes [0, dirty) may be marked written
        self.wblock: np.ndarray | None = None  # GM: the block that wrote each byte (-1 none)
        self.rblock: np.ndarray | None = None  # GM: the block that read it (-1 none, MANY)
        self.read_mask: np.ndarray | None = None  # GM: bytes some read of the launch touched (timing)
        self._typed: dict[np.dtype, np.ndarray] = {}

    def typed(self, dtype: np.dtype) -> np.ndarray:
        view = self._typed.get(dtype)
        if view is None:
            usable = self.data.size - self.data.size % dtype.itemsize
            view = self._typed[dtype] = self.data[:usable].view(dtype)
        return view

    def forget_writes(self) -> None:
        """Every byte becomes never-written (a new block on this core)."""
        if self.written is not None and self.dirty:
            self.written[:self.dirty] = False
        self.dirty = 0

    # -- races between the blocks of a launch ------------------------------------------

    def race(self, block: int, start: int, pat: Pattern, write: bool) -> tuple[int, np.ndarray] | None:
        """Record `block`'s access; the other block and the region bytes it conflicts on,
        if any (a write meets another block's write or read, a read another's write)."""
        if self.wblock is None:
            self.wblock = np.full(self.data.size, -1, dtype=np.int32)
            self.rblock = np.full(self.data.size, -1, dtype=np.int32)
        assert self.rblock is not None
        wb, rb = pat.bytes_of(self.wblock, start), pat.bytes_of(self.rblock, start)
        bad = (wb >= 0) & (wb != block)
        if write:
            bad |= (rb != -1) & (rb != block)
        found = None
        if bad.any():
            others = np.where((wb >= 0) & (wb != block), wb, rb)[bad]
            other = int(others[0]) if int(others[0]) != MANY else -1
            where = np.nonzero(bad.reshape(-1))[0]
            found = (other, start + self._byte_offsets(pat, where))
        if write:
            wb[...] = block
        else:
            rb[...] = np.where((rb == -1) | (rb == block), block, MANY)
        return found

    @staticmethod
    def _byte_offsets(pat: Pattern, flat: np.ndarray) -> np.ndarray:
        if pat.contiguous:
            return flat
        idx = np.unravel_index(flat, pat.byte_shape)
        return sum(i * s for i, s in zip(idx, pat.byte_view_strides))


def byte_ranges(offsets: np.ndarray, limit: int = 3) -> str:
    """Sorted byte offsets as "[a, b), [c, d)" runs (the first `limit` of them)."""
    offsets = np.unique(offsets)
    breaks = np.nonzero(np.diff(offsets) != 1)[0]
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [offsets.size - 1]])
    runs = [f"[{int(offsets[s]):#x}, {int(offsets[e]) + 1:#x})" for s, e in zip(starts[:limit], ends[:limit])]
    more = f" and {len(starts) - limit} more ranges" if len(starts) > limit else ""
    return ", ".join(runs) + more
