"""What `plan-local-memory` and `insert-sync` need to know about an isa kernel: where each
instruction sits in the loop nest, which bytes it may touch, and whether two instructions
may touch the same bytes in the same or in different loop iterations.

Element offsets are read as affine forms over loop induction variables and other index
values (`arith.constant`, `addi`, `subi`, `muli` by a constant); two accesses through one
buffer whose offsets differ by a constant are compared exactly, others are assumed to
overlap. Across iterations of a loop, offsets are compared only for a loop that is not
nested in another one and forms over its induction variable and values defined before
every loop (so the last iteration of one run of a loop and the first of the next run are
never compared wrongly); otherwise the accesses are assumed to overlap.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from ge import targets
from ge.dialects import isa

# --------------------------------------------------------------------------------------
# Affine index forms
# --------------------------------------------------------------------------------------


@dataclass(unsafe_hash=True)  # (not frozen: that sets each field through object.__setattr__; never mutated)
class Affine:
    """sum(coeff * leaf) + const over index values (leaves)."""

    terms: tuple[tuple[SSAValue, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(terms: dict[SSAValue, int], const: int) -> Affine:
        return Affine(tuple((v, c) for v, c in terms.items() if c), const)

    def scaled(self, k: int) -> Affine:
        return Affine(tuple((v, c * k) for v, c in self.terms), self.const * k)

    def minus(self, other: Affine) -> Affine:
        if self.terms == other.terms:  # the common case: the same loop counters (or none)
            return Affine((), self.const - other.const)
        terms = dict(self.terms)
        for v, c in other.terms:
            terms[v] = terms.get(v, 0) - c
        return Affine.of(terms, self.const - other.const)

    @property
    def leaves(self) -> tuple[SSAValue, ...]:
        return tuple(v for v, _ in self.terms)


def affine(v: SSAValue | None, depth: int = 0, memo: dict | None = None) -> Affine:
    """The affine form of index value `v` (0 for an absent offset). `memo` keeps the forms
    of the values met, by (value, depth) (window bounds and offsets share subexpressions;
    the depth bounds the expansion, so a form is reused only at its own depth)."""
    if memo is None:
        return _affine(v, depth, None)
    key = (id(v), depth)  # (an SSA value's own hash is a Python call; the memo lives shorter than the values)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _affine(v, depth, memo)
    return hit


def _affine(v: SSAValue | None, depth: int, memo: dict | None) -> Affine:
    if v is None:
        return Affine()
    owner = v.owner
    if depth < 16:
        kind = _INDEX_OPS.get(type(owner))  # (an isinstance against an op class is an ABC check: a Python call)
        exact = kind is not None
        if kind is None and isinstance(owner, Operation):
            kind = next((k for cls, k in _INDEX_OPS.items() if isinstance(owner, cls)), None)  # (a subclass)
        if kind == "const":
            if isinstance(owner.value, IntegerAttr):
                return Affine((), owner.value.value.data)
        elif kind == "cast":
            return affine(owner.input, depth + 1, memo)
        elif kind is not None:
            # (one of arith's binary ops itself: its operands are (lhs, rhs), unpacked from
            # `operands`, not through IRDL's named accessors, a Python call each)
            lhs, rhs = owner.operands if exact else (owner.lhs, owner.rhs)
            a, b = affine(lhs, depth + 1, memo), affine(rhs, depth + 1, memo)
            if kind == "sub":
                return a.minus(b)
            if kind == "add":
                return a.minus(b.scaled(-1))
            if not b.terms:
                return a.scaled(b.const)
            if not a.terms:
                return b.scaled(a.const)
    return Affine(((v, 1),), 0)


# The index ops `_affine` reads through, by class (in the order it tests them).
_INDEX_OPS: dict[type, str] = {arith.ConstantOp: "const", arith.IndexCastOp: "cast", arith.AddiOp: "add",
                               arith.SubiOp: "sub", arith.MuliOp: "mul"}


# --------------------------------------------------------------------------------------
# Instructions in the loop nest
# --------------------------------------------------------------------------------------


@dataclass(unsafe_hash=True)  # (not frozen, as Affine; never mutated)
class MemAccess:
    """One access in bytes: `key` names the memory (a local space, or a GM argument),
    bytes [base + (offset + lo) * size, base + (offset + hi) * size)."""

    key: tuple
    base: int
    size: int
    offset: Affine
    lo: int
    hi: int
    write: bool
    buffer: SSAValue
    rects: tuple[isa.Rect, ...] = field(default=(), compare=False)  # the elements, when known

    # Computed once per access (an access lives as long as one kernel's analysis).
    @functools.cached_property
    def form(self) -> Affine:
        """The byte offset's affine form (element offset times the element size)."""
        return self.offset.scaled(self.size)

    @functools.cached_property
    def span(self) -> tuple[int, int] | None:
        return _span(self)

    patterns: Patterns | None = field(default=None, compare=False, repr=False)  # the kernel's memo


class Patterns:
    """A memo of byte patterns and of which shifted patterns meet (vector instructions
    repeat a few rectangle shapes many times, in one kernel and across a model's kernels)."""

    def __init__(self) -> None:
        self.bytes: dict[tuple, np.ndarray | None] = {}
        self.meets: dict[tuple, bool] = {}
        self.shapes: dict[tuple, int] = {}  # (rects, size) -> a number (cheaper to hash than the rects)
        self.numbers: dict[int, tuple[MemAccess, int]] = {}  # id(access) -> (access, its shape's number)

    def number(self, a: MemAccess) -> int:
        hit = self.numbers.get(id(a))
        if hit is None or hit[0] is not a:
            hit = self.numbers[id(a)] = (a, self.shapes.setdefault((a.rects, a.size), len(self.shapes)))
        return hit[1]

    def meet(self, x: MemAccess, y: MemAccess, shift: int) -> bool:
        key = (self.number(x), self.number(y), shift)
        hit = self.meets.get(key)
        if hit is None:
            hit = self.meets[key] = _patterns_meet(self.pattern(x), self.pattern(y), shift)
        return hit

    def pattern(self, a: MemAccess) -> np.ndarray | None:
        key = (a.rects, a.size)
        if key not in self.bytes:
            self.bytes[key] = _bytes(a.rects, a.size)
        return self.bytes[key]


@dataclass
class Instr:
    """An instruction with its pipe, its ancestors (outermost first: the ops of each
    enclosing block, the instruction last) and its accesses."""

    op: Operation
    pipe: isa.Pipe
    path: list[Operation]
    accesses: list[MemAccess]
    index: int = 0  # program order

    @property
    def loops(self) -> list[scf.ForOp]:
        return [p for p in self.path if isinstance(p, scf.ForOp)]


def block_of(op: Operation) -> Block:
    b = op.parent_block()
    assert b is not None
    return b


def position(op: Operation) -> int:
    return block_of(op).get_operation_index(op)


def kernel_ops(block: Block) -> list[Operation]:
    """The ops inside `block`, nested ones included, in pre-order (each op before the
    ops of its regions). Walked through the block links (`first_op`, `next_op`): xDSL's
    `Block.ops` iterator and a generator per nesting level cost more than the walk itself."""
    out: list[Operation] = []
    stack: list[Operation | None] = [block.first_op]
    while stack:
        op = stack.pop()
        while op is not None:
            out.append(op)
            if op.regions:
                stack.append(op.next_op)
                for r in reversed(op.regions):
                    for b in reversed(r.blocks):
                        stack.append(b.first_op)
                break
            op = op.next_op
    return out


def buffer_location(v: SSAValue, target: targets.Target) -> tuple[tuple, int, int] | None:
    """(memory key, byte base, bytes) of a buffer value: a GM argument or a placed slot."""
    t = v.type
    assert isinstance(t, MemRefType)
    if isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), isa.KernelOp):
        return ("gm", v.index), 0, isa.nbytes(t)
    owner = v.owner
    if isinstance(owner, isa.BufferOp):
        if owner.byte_offset is None:
            return None
        slot = list(owner.slots).index(v)
        return (owner.space.value,), owner.slot_offset(slot, target), isa.nbytes(t)
    return None


class UnplacedBufferError(Exception):
    """A buffer has no offset yet (run plan-local-memory first)."""


def instructions(kernel: isa.KernelOp, target: targets.Target, memo: Patterns | None = None,
                 ops: list[Operation] | None = None) -> list[Instr]:
    """Every instruction of the kernel in program order, with its resolved accesses; `memo`
    (byte patterns, which depend only on rectangles and sizes) may serve several kernels;
    `ops`: the kernel's `kernel_ops`, when the caller has them."""
    out = []
    memo = Patterns() if memo is None else memo
    places: dict[int, tuple[tuple, int, int] | None] = {}  # id(buffer) -> (key, base, element size) or None
    forms: dict[tuple, Affine] = {}  # many instructions share an offset or a window bound, or parts of them

    def form(v: SSAValue | None) -> Affine:
        return affine(v, 0, forms)

    ranges: dict[tuple, tuple[int, int] | None] = {}  # a window bound's range, by its terms

    def bounds(terms: tuple) -> tuple[int, int] | None:
        if terms not in ranges:
            ranges[terms] = _range(Affine(terms))
        return ranges[terms]

    top = kernel.body.block
    above: dict[Block, list[Operation]] = {top: []}  # a block's ancestor ops inside the kernel, outermost first

    def ancestors(block: Block) -> list[Operation]:
        got = above.get(block)
        if got is None:
            owner = block.parent.parent  # (block -> region -> op)
            got = above[block] = [*ancestors(owner.parent), owner]
        return got

    for op in kernel_ops(top) if ops is None else ops:
        if not isinstance(op, isa.InstructionOp):
            continue
        path = [*ancestors(op.parent), op]
        accesses = []
        window = tuple(getattr(op, "window", ()))  # (once per op, not per access: an accessor call each)
        for a in op.accesses(target):
            place = places.get(id(a.buffer), False)  # (by id: an SSA value's own hash is a Python call)
            if place is False:
                loc = buffer_location(a.buffer, target)
                place = places[id(a.buffer)] = None if loc is None else (loc[0], loc[1], isa.itemsize(a.buffer.type))
            if place is None:
                raise UnplacedBufferError(f"{op.name} uses a buffer without an offset")
            key, base, size = place
            rects = _windowed(op, a, form, bounds, window)
            if len(rects) == 1:  # (most accesses: no generator)
                lo, hi = rects[0].lo, rects[0].hi
            else:
                lo, hi = min(r.lo for r in rects), max(r.hi for r in rects)
            offset = form(a.offset)
            access = MemAccess(key, base, size, offset, lo, hi, a.write, a.buffer, rects, memo)
            # `span` (as `_span` computes it) from the kernel's ranges by terms: the range
            # of the byte form is the offset's range times the element size
            r = bounds(offset.terms) if offset.terms else (0, 0)
            start = base + offset.const * size
            access.__dict__["span"] = None if r is None else (start + r[0] * size + lo * size,
                                                             start + r[1] * size + hi * size)
            accesses.append(access)
        out.append(Instr(op, op.PIPE, path, accesses, len(out)))
    return out


def _windowed(op: Operation, a: isa.Access, form: Callable[[SSAValue | None], Affine] = affine,
              bounds: Callable[[tuple], tuple[int, int] | None] = lambda terms: _range(Affine(terms)),
              window: tuple[SSAValue, ...] | None = None) -> tuple[isa.Rect, ...]:
    """A move's rectangle cut to the window it can have in any iteration: its reads always,
    its writes when it has no pad (an edge tile's copy to GM writes only the window, so two
    copies of adjacent row ranges through one strided rectangle do not overlap). Each
    window bound is an affine form over loop counters with constant bounds, or the dim is
    left whole. `window`: the op's window operands, when the caller has them."""
    if window is None:
        window = tuple(getattr(op, "window", ()))  # the moves (isa._MoveOp)
    if not window or (a.write and op.pad is not None) or len(a.rects) != 1:
        return a.rects
    rect, sizes = a.rects[0], op.static_sizes
    if rect.base or rect.shape != sizes:
        return a.rects
    base, shape = 0, []
    for d, (n, stride) in enumerate(zip(sizes, rect.strides)):
        lo_form, hi_form = form(window[2 * d]), form(window[2 * d + 1])
        lo_r, hi_r = bounds(lo_form.terms), bounds(hi_form.terms)
        first = 0 if lo_r is None else max(0, lo_r[0] + lo_form.const)
        last = n if hi_r is None else min(n, hi_r[1] + hi_form.const)
        if last <= first:
            return a.rects  # never runs with a non-empty window: keep the plain rectangle
        base += first * stride
        shape.append(last - first)
    return (isa.Rect(base, tuple(shape), rect.strides),)


# --------------------------------------------------------------------------------------
# May two accesses touch the same bytes?
# --------------------------------------------------------------------------------------


def _top_level(v: SSAValue, kernel: isa.KernelOp) -> bool:
    """Is `v` defined outside every loop of the kernel (the same in every iteration)?"""
    owner_block = v.owner if isinstance(v, BlockArgument) else v.owner.parent_block()
    return owner_block is kernel.body.block


def _visible(v: SSAValue, block: Block) -> bool:
    """Is `v` defined in `block` or a block around it (one value per run of `block`)?"""
    owner_block = v.owner if isinstance(v, BlockArgument) else v.owner.parent_block()
    b: Block | None = block
    while b is not None:
        if b is owner_block:
            return True
        parent = b.parent_op()
        b = None if parent is None else parent.parent_block()
    return False


def _ranges(a: MemAccess) -> tuple[int, int]:
    return a.lo * a.size, a.hi * a.size


def may_overlap(x: MemAccess, y: MemAccess, block: Block, loop: scf.ForOp | None, later: bool,
                kernel: isa.KernelOp) -> bool:
    """May access x and a later access y touch a common byte? Both run in `block` (their
    innermost common block, the body of `loop` when that is a loop). With `later`, y runs
    one or more iterations of `loop` after x; otherwise in the same run of `block` or, when
    `loop` is given, any number of iterations later."""
    if x.key != y.key or not (x.write or y.write):
        return False
    xl, xh = _ranges(x)
    yl, yh = _ranges(y)
    # x starts at base_x + size_x * off_x; const is that minus the same for y.
    diff = x.form.minus(y.form)
    const = x.base - y.base + diff.const
    if not x.offset.terms and not y.offset.terms:  # the same bytes in every iteration
        return fixed_overlap(x, y)
    if _apart(x, y):
        return False
    if not later:
        leaves = (*x.offset.leaves, *y.offset.leaves)
        if not diff.terms and all(_visible(v, block) for v in leaves):
            if yl - xh < const < yh - xl and _touch(x, y, const):
                return True
        else:  # offsets over loop counters with constant bounds: compare their ranges
            span = _range(diff)
            if span is None or (span[0] + const < yh - xl and span[1] + const > yl - xh):
                return True
        if loop is None:
            return False
    assert loop is not None
    # Across iterations: only a top-level loop, offsets over its induction variable and
    # values defined before every loop.
    iv = loop.body.block.args[0]
    step = _static(loop.step)
    if loop.parent_op() is not kernel or step is None:
        return True
    if not all(v is iv or _top_level(v, kernel) for v in (*x.offset.leaves, *y.offset.leaves)):
        return True
    cx = dict(x.offset.terms).get(iv, 0) * x.size
    cy = dict(y.offset.terms).get(iv, 0) * y.size
    if cx != cy or any(c for v, c in diff.terms if v is not iv):
        return True
    # y runs d iterations later: its iv is larger by d * step, so const shrinks by cy * step * d.
    return _exists(const, -cy * step, yl - xh, yh - xl, 1)


def fixed_overlap(x: MemAccess, y: MemAccess) -> bool:
    """`may_overlap` of two accesses of one memory with constant offsets (the same bytes in
    every iteration, so the block, the loop and `later` do not matter): their byte patterns
    meet. The answer depends only on each access's `fixed_class` (not on which access
    writes: the caller pairs only accesses with a write)."""
    xl, xh = _ranges(x)
    yl, yh = _ranges(y)
    const = x.base - y.base + x.form.const - y.form.const
    if _apart(x, y):
        return False
    return yl - xh < const < yh - xl and _touch(x, y, const)


def fixed_class(a: MemAccess) -> tuple | None:
    """For an access with a constant offset, all `fixed_overlap` reads of it: its first
    byte, element size, element range and rectangles (accesses of one memory with one class
    touch the same bytes); None for an offset over loop counters or other values."""
    if a.offset.terms:
        return None
    return a.base + a.offset.const * a.size, a.size, a.lo, a.hi, a.rects  # (the form's const, without the form)


def access_span(a: MemAccess) -> tuple[int, int] | None:
    """All bytes `a` may touch in any iteration, when its offset ranges over loop counters
    with constant bounds (or is constant)."""
    return a.span


def _span(a: MemAccess) -> tuple[int, int] | None:
    form = a.form
    r = _range(form) if form.terms else (0, 0)
    if r is None:
        return None
    start = a.base + form.const
    return start + r[0] + a.lo * a.size, start + r[1] + a.hi * a.size


def _apart(x: MemAccess, y: MemAccess) -> bool:
    """Are the whole byte ranges x and y may ever touch disjoint?"""
    sx, sy = x.span, y.span
    return sx is not None and sy is not None and (sx[1] <= sy[0] or sy[1] <= sx[0])


EXACT_LIMIT = 1 << 16  # elements: beyond this, overlapping ranges count as overlapping


def _touch(x: MemAccess, y: MemAccess, shift: int) -> bool:
    """Do x's bytes, moved by `shift`, meet y's? Exact for strided patterns (two vector
    instructions on interleaved blocks of one buffer do not conflict); ranges overlapping
    is enough when a pattern is unknown or large."""
    if not x.rects or not y.rects:
        return True
    memo = x.patterns or y.patterns or Patterns()
    return memo.meet(x, y, shift)


def _patterns_meet(xr: np.ndarray | None, yr: np.ndarray | None, shift: int) -> bool:
    """Does a byte of runs xr, moved by `shift`, lie in runs yr? Per x run, only the last y
    run starting before its end can meet it (the runs are disjoint and sorted)."""
    if xr is None or yr is None:
        return True
    if not len(xr) or not len(yr):
        return False
    last = np.searchsorted(yr[:, 0], xr[:, 1] + shift) - 1
    some = last >= 0
    return bool((yr[last[some], 1] > xr[some, 0] + shift).any())


def _bytes(rects: tuple[isa.Rect, ...], size: int) -> np.ndarray | None:
    """The bytes the rectangles' elements cover, as sorted disjoint runs [start, end) (an
    (n, 2) array; adjacent elements make one run, so a row is one run, not its bytes)."""
    if sum(r.count for r in rects) > EXACT_LIMIT:
        return None
    parts = []
    for r in rects:
        elems = np.full((), r.base, dtype=np.int64)
        for n, st in zip(r.shape, r.strides):
            elems = elems[..., None] + np.arange(n, dtype=np.int64) * st
        parts.append(elems.reshape(-1))
    elems = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    if elems.size > 1:  # distinct (np.unique's result; a sort and a compare are cheaper)
        elems = elems[np.concatenate(([True], elems[1:] != elems[:-1]))]
    breaks = np.flatnonzero(elems[1:] != elems[:-1] + 1) + 1  # where a run of adjacent elements ends
    starts = elems[np.concatenate(([0], breaks))] if elems.size else elems
    ends = elems[np.concatenate((breaks - 1, [elems.size - 1]))] + 1 if elems.size else elems
    return np.stack((starts * size, ends * size), axis=1)


def _range(form: Affine) -> tuple[int, int] | None:
    """[min, max] of a form without constant whose leaves are all induction variables of
    loops with constant bounds, None otherwise."""
    lo = hi = 0
    for v, c in form.terms:
        if not (isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), scf.ForOp)):
            return None
        loop = v.owner.parent_op()
        bounds = _bounds(loop)
        if None in bounds or bounds[2] <= 0 or bounds[1] <= bounds[0]:
            return None
        first, last = bounds[0], bounds[0] + (bounds[1] - bounds[0] - 1) // bounds[2] * bounds[2]
        lo, hi = lo + min(c * first, c * last), hi + max(c * first, c * last)
    return lo, hi


def _exists(c0: int, k: int, lo: int, hi: int, dmin: int) -> bool:
    """Is there an integer d >= dmin with lo < c0 + k * d < hi?"""
    if k == 0:
        return lo < c0 < hi
    # d in the open interval ((lo - c0) / k, (hi - c0) / k), bounds swapped when k < 0.
    a, b = (lo - c0) / k, (hi - c0) / k
    if a > b:
        a, b = b, a
    first = max(dmin, math.floor(a) + 1)
    return first < b


def _static(v: SSAValue) -> int | None:
    owner = v.owner
    if (type(owner) is arith.ConstantOp or isinstance(owner, arith.ConstantOp)) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _bounds(loop: scf.ForOp) -> list[int | None]:
    """[lb, ub, step] of an `scf.for`, each a constant or None (`_static`)."""
    if type(loop) is scf.ForOp:  # (its first operands, unpacked, not through IRDL's named accessors)
        lb, ub, step, *_ = loop.operands
        return [_static(lb), _static(ub), _static(step)]
    return [_static(w) for w in (loop.lb, loop.ub, loop.step)]


# --------------------------------------------------------------------------------------
# Trip counts
# --------------------------------------------------------------------------------------

def max_trips(loop: scf.ForOp) -> int | None:
    """An upper bound on the loop's iterations when one is known (constant bounds, or the
    `isa.max_trips` attribute), else None."""
    bounds = _bounds(loop)
    counts = []
    if None not in bounds:
        lb, ub, step = bounds
        counts.append(max(0, -(-(ub - lb) // step)) if step > 0 else 0)
    hint = loop.attributes.get(isa.MAX_TRIPS_ATTR)
    if isinstance(hint, IntegerAttr):
        counts.append(hint.value.data)
    return min(counts) if counts else None


def min_trips(loop: scf.ForOp) -> int:
    """A lower bound on the loop's iterations: the count for constant bounds, else 0."""
    bounds = _bounds(loop)
    if None in bounds or bounds[2] <= 0:
        return 0
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step))


def may_repeat(loop: scf.ForOp) -> bool:
    """Can the loop run its body twice (so that dependencies can cross iterations)?"""
    n = max_trips(loop)
    return n is None or n > 1


# --------------------------------------------------------------------------------------
# Linear positions (for lifetimes and event-id ranges)
# --------------------------------------------------------------------------------------


@dataclass
class Linear:
    """Pre-order numbers of the kernel's ops; `end[op]` is the last number inside op."""

    number: dict[Operation, int] = field(default_factory=dict)
    end: dict[Operation, int] = field(default_factory=dict)
    last: int = 0
    ops: dict[Block, list[Operation]] = field(default_factory=dict)  # each block's ops (they do not move)

    @staticmethod
    def of(kernel: isa.KernelOp) -> Linear:
        lin = Linear()
        lin._walk(kernel.body.block)
        lin.last = len(lin.number)
        return lin

    def _walk(self, block: Block) -> None:
        self.ops[block] = list(block.ops)
        for op in self.ops[block]:
            self.number[op] = len(self.number)
            for r in op.regions:
                for b in r.blocks:
                    self._walk(b)
            self.end[op] = len(self.number) - 1

    def first(self, op: Operation) -> int:
        return self.number[op]

    def last_in(self, op: Operation) -> int:
        return self.end[op]

    def gap(self, block: Block, index: int) -> float:
        """The linear position of the gap before op `index` of `block` (or after its last op)."""
        ops = self.ops[block]
        if index < len(ops):
            return self.number[ops[index]] - 0.5
        if not ops:
            return float(self.last)
        return self.end[ops[-1]] + 0.5


class Positions:
    """`Linear`'s numbers (`first`, `last_in`, `gap`) from what a caller has already: the
    kernel's `kernel_ops` (the same pre-order) and each block's ops by id(block). Why: the
    few positions `insert-sync` asks for (event-id ranges) do not pay for `Linear.of`'s walk
    and its dicts keyed by op (an op's own hash is a Python call): ops are numbered by id
    in one pass, and an op's last number is found when asked."""

    def __init__(self, ops: list[Operation], block_ops: dict[int, list[Operation]]):
        self.at = {id(op): i for i, op in enumerate(ops)}
        self.last = len(ops)
        self.block_ops = block_ops

    def first(self, op: Operation) -> int:
        return self.at[id(op)]

    def last_in(self, op: Operation) -> int:
        """The number of the last op inside `op` in pre-order (its own when it holds none)."""
        while True:
            inner = next((b.last_op for r in reversed(op.regions) for b in reversed(r.blocks)
                          if b.last_op is not None), None)
            if inner is None:
                return self.at[id(op)]
            op = inner

    def gap(self, block: Block, index: int) -> float:
        """The position of the gap before op `index` of `block` (or after its last op)."""
        ops = self.block_ops[id(block)]
        if index < len(ops):
            return self.at[id(ops[index])] - 0.5
        if not ops:
            return float(self.last)
        return self.last_in(ops[-1]) + 0.5
