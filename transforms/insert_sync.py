"""`insert-sync`: set_flag / wait_flag pairs and pipe barriers for isa kernels
(AscendNPU-IR's InjectSync, ascend.md §1.5).

Run after `plan-local-memory`: dependencies are found on the planned bytes, so buffers
that share bytes are ordered too.

1. Dependencies. For every two instructions that may touch a common byte with at least
   one write (`isa_analysis.may_overlap`), take their innermost common block C: the
   first must finish before the second starts in the same run of C (a forward dep).
   Across iterations of the innermost loop around C that may run twice (C's own loop, or
   an outer one when C's loop runs at most once: constant bounds or `isa.max_trips`),
   the second must finish before the first runs again (a loop-carried dep), and the first
   before the second runs again when one run does not already order them. An
   instruction that rewrites its own bytes depends on itself across iterations.
2. Cross-pipe dependencies get a set/wait pair: set_flag on the first pipe right after
   the op holding the first side, wait_flag on the second pipe right before the op holding
   the second. Forward dependencies of one block and pipe pair share pairs where one pair
   can serve several (the fewest pairs: an interval stabbing). A loop-carried pair is set
   after its first side and waited before its second inside the body, set once before the
   loop (so the first iteration does not wait; for a loop of the kernel body, above the
   work its pipe does before the loop when nothing after the loop needs the set there:
   `_early_presets`) and waited once after it (so every set is consumed) -- the
   double-buffering pattern: with two slots, each slot's pairs let the
   loads of one slot run while the other slot is computed on. Blocks are done innermost
   first, so a block's dependencies can be ordered by the pairs inside its loops.
3. Pairs that others imply are removed, each removal checked against all the block's
   dependencies: a chain set -> wait -> later set on the waiting pipe -> ... may start
   inside the loop holding the first side and leave it through the wait after the loop,
   pass through a loop that runs at least once, enter the loops holding the second side,
   and go round the block's own loop once (a carried dependency must, a forward one must
   not), through a carried pair or along one pipe's program order.
4. Same-pipe dependencies need a `pipe_barrier` on pipelined pipes (the movers, V, FIX;
   the Cube and the scalar unit finish each instruction before the next), unless flags
   already order them or a barrier lies between the two sides (in the block, in a loop
   that always runs, or inside the loops holding them); barriers go as late as possible.
5. Event ids: pairs of one (set pipe, wait pipe) whose lifetimes (set to wait; a
   loop-carried pair: the whole loop) overlap get different ids, at most the chip's
   `isa.event_ids` (4 on the Atlas training 910, 8 on the A2 parts); the least recently
   used free id is taken, so ids are reused as late as possible. When more would be live,
   the two nearest pairs of one block merge into one (set after both sets, waited before
   both waits) until the ids suffice.

The analysis is conservative: what it cannot prove disjoint or ordered gets a pair or a
barrier. A kernel that already has sync ops is left as it is. Kernels whose bodies are the
same but for SSA names (repeated layers: resnet50's 58 kernels are 29 different ones) are
analysed once; the others get the same sync ops at the same places.

Steps 1-5 only read the IR and end in a `SyncPlan` per kernel (plain data: which sync ops
go before which op of which block); emitting the plans is the last, separate step (`_put`,
HIVM's codegen). Kernels are planned independently, so with several CPU cores forked
worker processes plan shares of them (`_plans`, the pass's `jobs`) and send their plans
back: the same IR as planning every kernel in this process.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import heapq
import itertools
import os
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import UNKNOWN_LOC, IntegerAttr, LocationAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, SSAValues
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import isa
from ge.errors import GeError
from ge.forked import Forked, can_fork
from ge.transforms.isa_analysis import (
    Instr,
    Linear,
    MemAccess,
    Patterns,
    Positions,
    UnplacedBufferError,
    fixed_class,
    fixed_overlap,
    instructions,
    kernel_ops,
    may_overlap,
    may_repeat,
    min_trips,
)
from ge.transforms.plan_local_memory import describe_kernel, isa_kernels, module_target

# Pipes whose instructions may overlap in time (the Cube and the scalar unit do not).
PIPELINED = {isa.Pipe.V, isa.Pipe.MTE1, isa.Pipe.MTE2, isa.Pipe.MTE3, isa.Pipe.FIX}


class SyncError(PassFailedException, GeError):
    """insert-sync cannot synchronize a kernel (unplaced buffers, too many events)."""


class _TooManyEvents(Exception):
    def __init__(self, src: isa.Pipe, dst: isa.Pipe):
        self.src, self.dst = src, dst


@dataclass(eq=False, slots=True)  # (not frozen: that sets each field through object.__setattr__, 4x slower)
class Dep:
    """`first` (at path xs below `block`: its ancestor's index in `block`, then in that
    op's body, ...) must finish before `second` (at path ys) starts; carried: second runs
    in a later iteration of `loop`, whose body is `block`. `dependencies` makes each one
    once (its paths name its two instructions), so a dep is its own identity: hashing it
    does not hash the block and the loop (an IR node's hash is a Python call)."""

    block: Block
    loop: scf.ForOp | None
    src: isa.Pipe
    dst: isa.Pipe
    xs: tuple[int, ...]
    ys: tuple[int, ...]
    carried: bool

    @property
    def x(self) -> int:
        return self.xs[0]

    @property
    def y(self) -> int:
        return self.ys[0]


@dataclass(frozen=True)
class Pair:
    """A set_flag after op s and a wait_flag before op w of `block` (plus the set before
    and the wait after `loop` when carried; the set before op `early` of the loop's block
    instead when `_early_presets` moved it up)."""

    block: Block
    loop: scf.ForOp | None
    src: isa.Pipe
    dst: isa.Pipe
    s: int
    w: int
    carried: bool
    early: int | None = None


def _repeating_loop(block: Block) -> scf.ForOp | None:
    """The innermost loop around `block` (its own loop included) that may run its body twice."""
    b: Block | None = block
    while b is not None:
        op = b.parent_op()
        if isinstance(op, scf.ForOp) and may_repeat(op):
            return op
        b = None if op is None else op.parent_block()
    return None


def dependencies(kernel: isa.KernelOp, instrs: list[Instr], ops: list[Operation] | None = None) -> list[Dep]:
    """Every ordering the kernel's instructions need (step 1 of the module docstring).

    For two instructions, first before second in program order, with innermost common
    block C: within one run of C, first must finish before second starts (a forward dep
    in C). Across iterations of the innermost loop L around C that may repeat (C's own
    loop, or an outer one when C's loop runs at most once), in L's body C': second of
    iteration i before first of a later iteration (a carried dep), and first of
    iteration i before second of a later one when the same run does not already order
    them -- a forward dep in C' when their ancestors there differ, a carried one when the
    two share an ancestor. An instruction may depend on itself across iterations. `ops`:
    the kernel's `kernel_ops`, when the caller has them."""
    deps: list[Dep] = []  # each instruction pair gives distinct deps (their paths differ)
    index: dict[int, int] = {}  # id(op) -> its index in its block (an op's own hash is a Python call)
    top = kernel.body.block
    for b in [top, *(b for op in (kernel_ops(top) if ops is None else ops) for r in op.regions for b in r.blocks)]:
        i, o = 0, b._first_op
        while o is not None:
            index[id(o)] = i
            i, o = i + 1, o._next_op

    # tails[i][k]: instruction i's path below the block at depth k (the kernel body is 0).
    tails = [_tails([index[id(o)] for o in ins.path]) for ins in instrs]
    loop_of: dict[int, tuple] = {}  # id(block) -> (block's repeating loop, its body, the body's depth)
    blocks = [[o.parent for o in ins.path] for ins in instrs]  # [i][k]: the block of i's ancestor at depth k

    def overlap(cands: list[tuple], block: Block, loop: scf.ForOp | None, later: bool, back: bool = False) -> bool:
        if cands is _MEET_LIST:
            return True
        for p, q in cands:
            if may_overlap(q, p, block, loop, later, kernel) if back else may_overlap(p, q, block, loop, later, kernel):
                return True
        return False

    meeting, sure = meeting_accesses(instrs)
    pipes = [ins.pipe for ins in instrs]
    # A pair of pipes needs ordering unless it is one unpipelined pipe (the Cube, the scalar unit).
    needed = {(a, b): a != b or a in PIPELINED for a in set(pipes) for b in set(pipes)}
    paths = [ins.path for ins in instrs]
    for i, j in sorted(meeting.keys() | sure):
        # (a pair in `sure`: may_overlap says so in any block, loop and iteration)
        forward = _MEET_LIST if (i, j) in sure else meeting[(i, j)]
        fp, sp = paths[i], paths[j]
        d = 0
        if len(fp) > 1:
            while d < len(fp) - 1 and fp[d] is sp[d]:
                d += 1
        block = blocks[i][d]
        assert block is not None
        fpipe, spipe = pipes[i], pipes[j]
        same_run = False
        if i != j and (forward is _MEET_LIST or overlap(forward, block, None, False)):
            same_run = True
            if needed[(fpipe, spipe)]:
                deps.append(Dep(block, None, fpipe, spipe, tails[i][d], tails[j][d], False))
        facts = loop_of.get(id(block))
        if facts is None:
            loop = _repeating_loop(block)
            body = None if loop is None else loop.body.block
            facts = loop_of[id(block)] = (loop, body, None if body is None else _depth(body))
        loop, body, k = facts
        if loop is None:
            continue
        xs, ys = tails[i][k], tails[j][k]
        if needed[(spipe, fpipe)] and (forward is _MEET_LIST or overlap(forward, body, loop, True, back=True)):
            deps.append(Dep(body, loop, spipe, fpipe, ys, xs, True))
        if (i != j and not same_run and needed[(fpipe, spipe)]
                and (forward is _MEET_LIST or overlap(forward, body, loop, True))):
            carried = xs[0] == ys[0]
            deps.append(Dep(body, loop if carried else None, fpipe, spipe, xs, ys, carried))
    return deps


_MEET_LIST: list = []  # `dependencies`' mark for an instruction pair `meeting_accesses` knows to meet


def _tails(path: list[int]) -> list[tuple[int, ...]]:
    """[tuple(path[k:]) for each k], each tail built from the next (no generator per tail)."""
    out = []
    tail: tuple[int, ...] = ()
    for i in reversed(path):
        tail = (i, *tail)
        out.append(tail)
    out.reverse()
    return out


def meeting_accesses(instrs: list[Instr]) -> tuple[dict[tuple[int, int], list[tuple[MemAccess, MemAccess]]],
                                                   set[tuple[int, int]]]:
    """The instruction pairs (i, j), i <= j (positions in `instrs`), that may touch a common
    byte: (the access pairs of each that `may_overlap` must still try, the pairs known to
    meet). Only one memory, with at least one write, can meet.

    Accesses at constant offsets touch the same bytes in every iteration: those of one
    `fixed_class` are tested once against each other class whose byte span they meet
    (`fixed_overlap`), and every instruction pair of two classes that meet is known to
    meet -- a few dozen classes stand for a kernel's hundreds of accesses, and interleaved
    ones (a layer norm's columns) are told apart without a test per instruction pair.
    The other accesses are swept in order of their first byte (`access_span`; an access
    without a span meets every access of its memory) with the writes and the reads still
    open kept apart, so one meets only the open accesses it can overlap: O(n log n + the
    pairs found), where trying every instruction pair is O(n^2). Within one instruction
    both orders of two accesses are listed, and a write with itself."""
    by_key: dict[tuple, list[tuple[int, MemAccess]]] = defaultdict(list)
    for i, ins in enumerate(instrs):
        for a in ins.accesses:
            by_key[a.key].append((i, a))
    out: dict[tuple[int, int], list[tuple[MemAccess, MemAccess]]] = defaultdict(list)
    sure: set[tuple[int, int]] = set()

    def meet(i: int, p: MemAccess, j: int, q: MemAccess) -> None:
        if i < j:
            out[(i, j)].append((p, q))
        elif j < i:
            out[(j, i)].append((q, p))
        else:
            out[(i, i)] += [(p, q), (q, p)]

    for entries in by_key.values():
        classes: dict[tuple, list[int]] = defaultdict(list)
        for n, (_, a) in enumerate(entries):
            c = fixed_class(a)
            if c is not None:
                classes[c].append(n)
        if classes:
            _fixed_meetings(entries, list(classes.values()), sure)
        fixed = {n for ns in classes.values() for n in ns}
        spanned = sorted(((a.span, n) for n, (_, a) in enumerate(entries) if a.span is not None),
                         key=lambda t: t[0][0])
        # (end, n) of the reads, of the writes still open, by end: the others', the fixed ones'
        open_: tuple[tuple[list, list], tuple[list, list]] = (([], []), ([], []))
        for (lo, hi), n in spanned:
            i, a = entries[n]
            f = n in fixed
            for side in open_:
                for ends in side:
                    del ends[:bisect.bisect_right(ends, (lo, len(entries)))]  # those ending by lo meet nothing more
            for side in open_[:1] if f else open_:  # two fixed accesses were met above
                for ends in (side if a.write else side[1:]):
                    for _, m in ends:  # each starts by lo and ends after it
                        j, b = entries[m]
                        if b.span[0] < hi:  # (not when this span is empty)
                            meet(j, b, i, a)
            bisect.insort(open_[f][a.write], (hi, n))
            if a.write and lo < hi and not f:
                out[(i, i)].append((a, a))
        unspanned = [n for n, (_, a) in enumerate(entries) if a.span is None]
        for n in unspanned:
            i, a = entries[n]
            if a.write:
                out[(i, i)].append((a, a))
            for m, (j, b) in enumerate(entries):
                if m != n and (a.write or b.write) and (b.span is not None or m < n):
                    meet(j, b, i, a)
    return out, sure


def _fixed_meetings(entries: list[tuple[int, MemAccess]], classes: list[list[int]], sure: set[tuple[int, int]]) -> None:
    """Add to `sure` the instruction pairs whose constant-offset accesses of one memory
    (`entries`, grouped into `classes` of equal `fixed_class`) meet, one with a write: each
    class against itself and against the classes whose spans it meets (a sweep by first
    byte), one `fixed_overlap` test per class pair."""
    spans = [entries[ns[0]][1].span for ns in classes]
    writers = [sorted({entries[n][0] for n in ns if entries[n][1].write}) for ns in classes]
    users = [sorted({entries[n][0] for n in ns}) for ns in classes]

    def pairs(w: list[int], u: list[int]) -> None:
        sure.update([(i, j) if i <= j else (j, i) for i in w for j in u])

    open_: list[tuple[int, int]] = []  # (end, class) of the classes still open, by end
    for k in sorted(range(len(classes)), key=lambda k: spans[k][0]):
        lo, hi = spans[k]
        del open_[:bisect.bisect_right(open_, (lo, len(classes)))]  # those ending by lo meet nothing more
        x = entries[classes[k][0]][1]
        for _, m in open_:  # each starts by lo and ends after it
            if (writers[k] or writers[m]) and spans[m][0] < hi and fixed_overlap(entries[classes[m][0]][1], x):
                pairs(writers[m], users[k])
                pairs(users[m], writers[k])
        if writers[k] and fixed_overlap(x, x):
            pairs(writers[k], users[k])
        bisect.insort(open_, (hi, k))


# --------------------------------------------------------------------------------------
# Is a dependency already ordered by pairs?
# --------------------------------------------------------------------------------------


@dataclass
class Level:
    """The pairs that can order dependencies of one block: its forward pairs, the carried
    pairs of its loop, the pairs inside each loop directly nested in it (by index), and
    the Levels of those loops' bodies (to follow a chain further in)."""

    forward: list[Pair]
    carried: list[Pair]
    nested: dict[int, list[Pair]]
    inner: dict[int, Level] = field(default_factory=dict)
    always: set[int] = field(default_factory=set)  # nested loops that run at least once
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # `_inside` results on this body
    entered: dict = field(default_factory=dict, repr=False, compare=False)  # `_enters` results from this block
    by_src: dict = field(default_factory=dict, repr=False, compare=False)  # `_pairs_from` by pipe


# Program points inside a block are (gap, phase): gap g is between ops g-1 and g; in a gap
# the set_flags come first (phase 0), then the wait_flags (phase 1). Op x's work is
# complete "just after" it, (x + 1, -1); op y starts after its gap's waits, (y, 2).


def implied(dep: Dep, level: Level, witness: list | None = None) -> bool:
    """Does a chain of pairs order dep's first side before its second side? A chain runs
    set -> wait -> (a later set on the waiting pipe) -> ...; it may leave a loop nested in
    the block through the wait after it (when it starts inside that loop), enter loops
    nested in the block as its last steps, and go round the block's own loop once (a
    carried dep must, a forward dep must not) -- through a carried pair or along one
    pipe's program order (a set in the next iteration comes after everything before it).

    A state is (where, pipe, point, wrapped, waited): "at" a point of the block or "in"
    the loop holding the first side; `waited` once the pipe has waited for the first side
    (its work after the point is ordered), before that only its later sets carry it.

    With `witness`, a found chain's pairs are appended to it (each state keeps the state
    and pair it was reached from): the chain holds in any level that keeps them."""
    if not (level.forward or level.carried or level.nested):
        return False  # no pair and no loop in the block: no chain can start (the search below finds none)
    src, dst, xs, ys, carried = dep.src, dep.dst, dep.xs, dep.ys, dep.carried
    y = (ys[0], 2)
    todo: list[tuple] = [("at", src, (xs[0] + 1, -1), False, False)]  # a set after the op holding the first side
    if len(xs) > 1 and xs[0] in level.nested:
        todo.append(("in", src, (xs[1] + 1, -1), False, False))  # a set inside that loop, after it
    came: dict[tuple, tuple] = {s: (None, None) for s in todo}  # state -> (state, pair) it came from

    def found(frm: tuple | None, pair: Pair | None) -> bool:
        if witness is not None:
            while True:
                if pair is not None:
                    witness.append(pair)
                if frm is None:
                    return True
                frm, pair = came[frm]
        return True

    def push(state: tuple, frm: tuple, pair: Pair | None) -> None:
        if state not in came:
            came[state] = (frm, pair)
            todo.append(state)

    def reach_at(state: tuple, frm: tuple, pair: Pair | None) -> bool:
        _, pipe, pos, wrapped, _ = state
        if pipe == dst and wrapped == carried and pos <= y:
            return found(frm, pair)
        push(state, frm, pair)
        return False

    def reach(state: tuple, frm: tuple, pair: Pair | None) -> bool:
        """A wait: the new state's pipe has waited. (Not recursive: a closure that calls
        itself is a reference cycle, and each search's states would wait for the
        garbage collector -- most of the pass's collections' work on densenet121.)"""
        if state[0] == "in":  # a wait inside the loop: everything after the loop comes later too
            if reach_at(("at", state[1], (xs[0] + 1, -1), state[3], True), frm, pair):
                return True
            push(state, frm, pair)
            return False
        return reach_at(state, frm, pair)

    while todo:
        cur = todo.pop()
        kind, pipe, pos, wrapped, waited = cur
        if kind == "in":  # inside the loop at xs[0], in the iteration of the first side
            for p in level.nested[xs[0]]:
                if p.src != pipe or (p.s + 1, 0) <= pos:
                    continue
                state = ("at", p.dst, (xs[0] + 1, 1), False, True) if p.carried else ("in", p.dst, (p.w, 1), False, True)
                if reach(state, cur, p):
                    return True
            continue
        if wrapped == carried and _enters(level, pipe, pos, dst, ys, waited):
            return found(cur, None)
        if carried and not wrapped:  # the pipe's own program order round the back edge
            push(("at", pipe, (-1, 0), True, waited), cur, None)
        forward, carried_pairs, nested = _pairs_from(level, pipe)
        for p in forward:
            if (p.s + 1, 0) > pos and reach(("at", p.dst, (p.w, 1), wrapped, True), cur, p):
                return True
        if not wrapped:
            for p in carried_pairs:
                if (p.s + 1, 0) > pos and reach(("at", p.dst, (p.w, 1), True, True), cur, p):
                    return True
        for at, pairs, always in nested:
            for p in pairs:  # leave a nested loop through the wait after it
                if (at, 0) > pos and reach(("at", p.dst, (at + 1, 1), wrapped, True), cur, p):
                    return True
            if always:  # through a loop that runs at least once: its first iteration
                for r, _ in _inside(level, at, pipe, pos, waited):
                    if reach(("at", r, (at + 1, -1), wrapped, True), cur, None):
                        return True
    return False


def _pairs_from(level: Level, pipe: isa.Pipe) -> tuple[list[Pair], list[Pair], list[tuple[int, list[Pair], bool]]]:
    """The steps `implied` may take from a state on `pipe`, in the order it tries them:
    the level's forward and carried pairs that set on it, and per nested loop (in order)
    its carried pairs that do and whether it always runs (loops with neither are left
    out). Kept on the level: a search tries them from every state it takes."""
    got = level.by_src.get(pipe)
    if got is None:
        nested = [(at, [p for p in pairs if p.carried and p.src == pipe], at in level.always)
                  for at, pairs in level.nested.items()]
        got = level.by_src[pipe] = ([p for p in level.forward if p.src == pipe],
                                    [p for p in level.carried if p.src == pipe],
                                    [n for n in nested if n[1] or n[2]])
    return got


class Searches:
    """`implied` for many deps of one level, one search per start: the search from a first
    side (its pipe, its op and, when that is a loop, its place inside; carried or not) runs
    to its end once, keeping the least point each pipe reaches (by wrapped) and each state
    it leaves from (by pipe, waited, wrapped); a dep is then implied when its second pipe is
    reached by its second side, or `_enters` the loop holding the second side from such a
    state. The same answers as `implied`: a state that answers it is reached without
    passing one (so `implied` finds it too), and `_enters` only weakens as the point moves
    later. A block's n instructions may have O(n^2) deps, but only O(n) starts; the first
    sides inside one loop that reach the same waits there share a search (`_ends`)."""

    def __init__(self, level: Level) -> None:
        self.level = level
        self.empty = not (level.forward or level.carried or level.nested)
        self.ends: dict[tuple, tuple[dict, list]] = {}
        self.entered: dict[tuple, bool] = {}  # (search, second pipe, second side) -> `_enters` from its states
        # The steps out of the block's points, by the pipe that sets: (False for a forward
        # pair, True for a carried one, None for a nested loop's carried pair (left through
        # the wait after the loop); the point the set must follow; the waiting pipe; its
        # point), by the point the set must follow, with those points apart (a state takes
        # the steps after its point: one bisect instead of a test per pair).
        steps: dict[isa.Pipe, list[tuple]] = defaultdict(list)
        for p in level.forward:
            steps[p.src].append(((p.s + 1, 0), False, p.dst, (p.w, 1)))
        for p in level.carried:
            steps[p.src].append(((p.s + 1, 0), True, p.dst, (p.w, 1)))
        for at, pairs in level.nested.items():  # leave a nested loop through the wait after it
            for p in pairs:
                if p.carried:
                    steps[p.src].append(((at, 0), None, p.dst, (at + 1, 1)))
        self.steps: dict[isa.Pipe, tuple[list[tuple], list[tuple]]] = {}
        for pipe, out in steps.items():
            out.sort(key=lambda step: step[0])
            self.steps[pipe] = ([step[0] for step in out], _least_waits(out))
        # The always-running nested loops' last points before their bodies, ascending (a
        # state at a later point cannot enter them: `_inside`).
        self.loops = sorted((at, 1) for at in level.always if at in level.nested)
        self.sets: dict[tuple, list[int]] = {}  # (pipe, x0) -> where the loop at x0's pairs on pipe set, ascending
        self.waits: dict[tuple, dict] = {}  # `_inside_waits` by (pipe, x0, how many of those sets come before x1)
        self.nodes: dict[tuple, tuple[dict, list]] = {}  # `_search`es by (pipe, point after x0, waits inside, carried)

    def implied(self, dep: Dep) -> bool:
        if self.empty:
            return False
        level, xs, carried = self.level, dep.xs, dep.carried
        x1 = xs[1] if len(xs) > 1 and xs[0] in level.nested else None
        key = (dep.src, xs[0], x1, carried)
        ends = self.ends.get(key)
        if ends is None:
            ends = self.ends[key] = self._ends(dep.src, xs[0], x1, carried)
        arrived, starts = ends
        ys = dep.ys
        pos = arrived.get((dep.dst, carried))
        if pos is not None and pos <= (ys[0], 2):
            return True
        if len(ys) < 2:
            return False
        # The answer depends on the search's states (shared by the first sides that reach
        # the same waits) and the second side only.
        entered = (id(starts), dep.dst, ys)
        hit = self.entered.get(entered)
        if hit is None:
            last = (ys[0], 1)  # (a state after the loop holding the second side cannot enter it: `_enters`)
            hit = self.entered[entered] = any(pos <= last and _enters(level, pipe, pos, dep.dst, ys, waited)
                                              for pipe, pos, waited in starts)
        return hit

    def _ends(self, src: isa.Pipe, x0: int, x1: int | None, carried: bool) -> tuple[dict, list[tuple]]:
        """The search from a first side at x0 (x1 inside the loop there): from the point
        after x0 and from the waits its pairs inside that loop reach. The first sides in
        one loop that reach the same waits share one search (a loop's instructions reach
        few distinct sets of waits)."""
        waits = {}
        if x1 is not None:
            # Its pairs whose set follows x1 (those with s >= x1) are all the answer depends on.
            sets = self.sets.get((src, x0))
            if sets is None:
                sets = self.sets[(src, x0)] = sorted(p.s for p in self.level.nested[x0] if p.src == src)
            inside = (src, x0, bisect.bisect_left(sets, x1))
            waits = self.waits.get(inside)
            if waits is None:
                waits = self.waits[inside] = _inside_waits(self.level.nested[x0], x0, x1, src)
        key = (src, x0, frozenset(waits.items()), carried)
        got = self.nodes.get(key)
        if got is None:
            starts = [(src, (x0 + 1, -1), False), *((pipe, pos, True) for pipe, pos in waits.items())]
            arrived, left = _search(self.level, self.steps, self.loops, starts, carried)
            # (the states `implied` tries to enter a loop from: those left with `wrapped` as the
            # search's `carried`, kept by the search, which lives as long as these answers)
            got = self.nodes[key] = (arrived, [(pipe, pos, waited) for (pipe, waited, wrapped), pos in left.items()
                                               if wrapped == carried])
        return got


def _least_waits(steps: list[tuple]) -> list[tuple[dict, dict]]:
    """For each k, the least point each waiting pipe reaches through steps[k:] (one pipe's
    steps by the point their set follows): (through forward pairs and nested loops'
    carried pairs, through the block's carried pairs). A state takes every step after
    its point, and only each pipe's least wait can matter (`_search`): one table row
    instead of a pass over the steps."""
    rows: list[tuple[dict, dict]] = [({}, {})] * (len(steps) + 1)
    for k in range(len(steps) - 1, -1, -1):
        _, kind, dst, to = steps[k]
        plain, wrapping = rows[k + 1]
        mins = wrapping if kind else plain
        old = mins.get(dst)
        if old is None or to < old:
            mins = {**mins, dst: to}
            rows[k] = (plain, mins) if kind else (mins, wrapping)
        else:
            rows[k] = rows[k + 1]
    return rows


def _inside_waits(pairs: list[Pair], x0: int, x1: int, src: isa.Pipe) -> dict[isa.Pipe, tuple]:
    """The least point of the block each pipe waits at for a first side at x1 inside the
    loop at x0 (whose pairs are `pairs`), in the first side's iteration: a wait inside the
    loop orders everything after the loop too, a carried pair's wait after it does."""
    waits: dict[isa.Pipe, tuple] = {}
    todo: list[tuple] = [(src, (x1 + 1, -1))]
    seen = set(todo)
    while todo:
        pipe, pos = todo.pop()
        for p in pairs:
            if p.src == pipe and (p.s + 1, 0) > pos:
                to = (x0 + 1, 1) if p.carried else (x0 + 1, -1)
                old = waits.get(p.dst)
                if old is None or to < old:
                    waits[p.dst] = to
                if not p.carried:
                    state = (p.dst, (p.w, 1))
                    if state not in seen:
                        seen.add(state)
                        todo.append(state)
    return waits


def _search(level: Level, steps: dict[isa.Pipe, tuple[list[tuple], list[tuple[dict, dict]]]], loops: list[tuple],
            starts: list[tuple[isa.Pipe, tuple, bool]], carried: bool) -> tuple[dict, dict]:
    """`implied`'s search from `starts` (pipe, point of the block, waited: a wait there),
    to its end: (least point reached by a wait, by (pipe, wrapped); least point left
    from, by (pipe, waited, wrapped)). A state at a later point than one already left
    from with the same (pipe, waited, wrapped) reaches nothing more (every step's
    condition only weakens as the point moves earlier, and where a step lands does not
    depend on the point), so the states of the block are taken in order of (wrapped,
    point) -- every step from one goes to a later point or wraps -- and each of those keys
    is left from once; a wait is queued only when it is its (pipe, wrapped)'s least point
    so far (the waited state at that least point is taken first and reaches all this one
    would), so a state takes only each pipe's least wait after its point (`_least_waits`).
    `steps` and `loops` as `Searches` keeps them."""
    heap: list[tuple] = []
    tie = itertools.count()
    arrived: dict[tuple, tuple] = {}
    left: dict[tuple, tuple] = {}
    push = heapq.heappush
    for pipe, pos, waited in starts:
        if waited:
            arrived[(pipe, False)] = pos  # (`_inside_waits` gives each pipe once)
        push(heap, (False, pos, next(tie), pipe, waited))

    def reach(pipe: isa.Pipe, pos: tuple, wrapped: bool) -> None:
        """A wait: `pipe` has waited at pos."""
        old = arrived.get((pipe, wrapped))
        if old is None or pos < old:
            arrived[(pipe, wrapped)] = pos
            push(heap, (wrapped, pos, next(tie), pipe, True))

    while heap:
        wrapped, pos, _, pipe, waited = heapq.heappop(heap)
        if (pipe, waited, wrapped) in left:
            continue  # an earlier point of the same key was left from
        left[(pipe, waited, wrapped)] = pos
        if carried and not wrapped:
            push(heap, (True, (-1, 0), next(tie), pipe, waited))
        out = steps.get(pipe)
        if out is not None:  # forward, carried and nested loops' carried pairs whose set follows pos
            afters, rows = out
            plain, wrapping = rows[bisect.bisect_right(afters, pos)]
            for dst, to in plain.items():
                reach(dst, to, wrapped)
            if not wrapped:
                for dst, to in wrapping.items():
                    reach(dst, to, True)
        for k in range(bisect.bisect_left(loops, pos), len(loops)):  # through a loop that runs at least once
            at = loops[k][0]
            for r, _ in _inside(level, at, pipe, pos, waited):
                reach(r, (at + 1, -1), wrapped)
    return arrived, left


def _inside(level: Level, at: int, pipe: isa.Pipe, pos: tuple, waited: bool) -> set[tuple]:
    """The (pipe, point) states inside the body of the loop at `at` that are ordered after
    `pipe`'s work from `pos` on (a point before the loop), in every iteration: the whole
    body comes after pos, so a chain may start at any pair in the body whose set is on
    `pipe`, at a carried pair of the loop (its first wait consumes the set placed before
    the loop, when that comes after pos), and leave loops nested in the body through the
    waits after them. `waited`: pipe itself waited at pos (else only its sets count)."""
    inner = level.inner.get(at)
    if inner is None or pos > (at, 1):
        return set()
    before = (at, 0) > pos
    key = (pipe, before, waited)  # all the answer depends on (the body's pairs are fixed)
    if key not in inner.memo:
        inner.memo[key] = _inside_body(inner, pipe, before, waited)
    return inner.memo[key]


def _inside_body(inner: Level, pipe: isa.Pipe, before: bool, waited: bool) -> set[tuple]:
    start = (pipe, (-1, 0))
    todo, seen, out = [start], {start}, set()
    while todo:
        state = todo.pop()
        r, pt = state
        if state != start or waited:
            out.add(state)
        new = [(p.dst, (p.w, 1)) for p in inner.forward if p.src == r and (p.s + 1, 0) > pt]
        if state == start and before:
            new += [(p.dst, (p.w, 1)) for p in inner.carried if p.src == r]
        for a, pairs in inner.nested.items():
            new += [(p.dst, (a + 1, 1)) for p in pairs if p.carried and p.src == r and (a, 0) > pt]
        for st in new:
            if st not in seen:
                seen.add(st)
                todo.append(st)
    return out


def _enters(level: Level, pipe: isa.Pipe, pos: tuple, dst: isa.Pipe, ys: tuple[int, ...], waited: bool) -> bool:
    """Do pairs inside the loop at ys[0] of `level`'s block order the second side (at ys,
    inside that loop) after `pipe`'s work from `pos` on (a point before the loop), in
    every iteration -- directly or further in? The answer depends on pos only through
    where it lies from the loop (before it, at it, after it: `_inside`), and only on the
    loops' bodies, which are final: it is kept on the level (by that place)."""
    if len(ys) < 2:
        return False
    at = ys[0]
    key = (pipe, 0 if (at, 0) > pos else 1 if pos <= (at, 1) else 2, dst, ys, waited)
    got = level.entered.get(key)
    if got is None:
        got = level.entered[key] = _enters_loop(level, pipe, pos, dst, ys, waited)
    return got


def _enters_loop(level: Level, pipe: isa.Pipe, pos: tuple, dst: isa.Pipe, ys: tuple[int, ...], waited: bool) -> bool:
    inner = level.inner.get(ys[0])
    for r, pt in _inside(level, ys[0], pipe, pos, waited):
        if r == dst and pt <= (ys[1], 2):
            return True
        if inner is not None and _enters(inner, r, pt, dst, ys[1:], True):
            return True
    if not waited and inner is not None:  # the first side's own sets, further in
        return _enters(inner, pipe, (-1, 0), dst, ys[1:], False) if pos <= (ys[0], 1) else False
    return False


# --------------------------------------------------------------------------------------
# Pairs
# --------------------------------------------------------------------------------------


def _stab(deps: list[Dep]) -> dict[Pair, list[Dep]]:
    """Forward pairs for the deps of one block and pipe pair: each dep's tightest pair (set
    right after its first side, waited right before its second), dropping those a kept pair
    already orders -- a pair (s, w) orders a dep (x, y) when x <= s < w <= y. One pair per
    overlapping group (the fewest pairs) would set after the group's latest first side, so
    in an unrolled K chunk step i's moves would wait for mmad i - 1, not the mmad that last
    read their buffer."""
    kept: list[Pair] = []
    for d in sorted(deps, key=lambda d: (d.y - d.x, d.y, d.x, d.xs, d.ys)):
        if not any(p.s >= d.x and p.w <= d.y for p in kept):
            kept.append(Pair(d.block, d.loop, d.src, d.dst, d.x, d.y, False))
    return {p: [d for d in deps if d.x <= p.s and p.w <= d.y] for p in kept}


def _carried_pairs(deps: list[Dep]) -> dict[Pair, list[Dep]]:
    """Loop-carried pairs: the tightest pair of each dep, dropping those another kept pair
    already orders (no merging: merging would make one slot of a double buffer wait for
    the other)."""
    kept: list[Pair] = []
    for d in sorted(deps, key=lambda d: (d.x - d.y, -d.x, d.xs, d.ys)):
        if not any(p.s >= d.x and p.w <= d.y for p in kept):
            kept.append(Pair(d.block, d.loop, d.src, d.dst, d.x, d.y, True))
    return {p: [d for d in deps if p.s >= d.x and p.w <= d.y] for p in kept}


def _prune(candidates: dict[Pair, list[Dep]], nested: dict[int, list[Pair]], inner: dict[int, Level],
           always: set[int]) -> list[Pair]:
    """Drop pairs without which every dependency is still ordered (step 3). Each removal
    is checked against all the block's dependencies -- a pair may be a link in the chain
    that orders another pair's dependency."""
    kept = list(candidates)
    # A dep that a kept pair covers directly (its set after the first side, its wait before
    # the second) is ordered without a search: only deps whose covering pairs are all gone
    # need `implied`.
    covers: dict[Dep, list[int]] = defaultdict(list)
    for q, covered in candidates.items():
        for d in covered:
            covers[d].append(id(q))
    alive = {id(q) for q in kept}
    exposed: list[Dep] = []  # the deps no kept pair covers directly (none of them is p's)

    def level(pairs) -> Level:
        return Level([p for p in pairs if not p.carried], [p for p in pairs if p.carried], nested, inner, always)

    # A chain found for a dep (its pairs, `implied`'s witness) still orders it while all
    # of them are kept: only the deps whose chain went through the pair tried are searched
    # again (the same answers as searching them all: a chain in a level is one in any
    # level that keeps its pairs; bert's FFN output kernel: 49k searches -> a few hundred).
    chains: dict[Dep, set[int]] = {}

    def chained(d: Dep, p: Pair, others: Level) -> bool:
        chain = chains.get(d)
        if chain is not None and id(p) not in chain:
            return True
        witness: list[Pair] = []
        if not implied(d, others, witness):
            return False
        chains[d] = {id(q) for q in witness}
        return True

    for p in sorted(kept, key=lambda p: (p.carried, p.w - p.s, p.s, p.src, p.dst)):
        alive.discard(id(p))
        others = level([q for q in kept if q is not p])

        def ordered(d: Dep, p=p, others=others) -> bool:
            return any(q in alive for q in covers[d]) or chained(d, p, others)

        own = candidates[p]  # checked first: a pair that is needed fails on its own deps
        if all(ordered(d) for d in own) and all(chained(d, p, others) for d in exposed):
            kept.remove(p)
            exposed += [d for d in dict.fromkeys(own) if not any(q in alive for q in covers[d])]
        else:
            alive.add(id(p))
    return kept


class Barriers:
    """The barriers placed so far in one kernel (block -> pipe -> gaps holding one), and
    its blocks' op lists and always-running loops (the ops do not move until `_put`)."""

    def __init__(self, block_ops: dict[int, list[Operation]] | None = None) -> None:
        # (all by id(block): a block's own hash is a Python call)
        self.at: dict[int, dict[isa.Pipe, list[int]]] = {}  # sorted gaps
        self._ops: dict[int, list[Operation]] = {} if block_ops is None else block_ops
        self._loops: dict[int, list[tuple[int, scf.ForOp]]] = {}
        self._bodies: dict[tuple[int, int], Block | None] = {}
        self.anywhere: dict[tuple[int, isa.Pipe], bool] = {}  # `_has_barrier` without bounds
        self.loops_with: dict[tuple[int, isa.Pipe], list[int]] = {}  # `_barrier_loops`

    def ops(self, block: Block) -> list[Operation]:
        got = self._ops.get(id(block))
        if got is None:
            got = self._ops[id(block)] = list(block.ops)
        return got

    def running_loops(self, block: Block) -> list[tuple[int, scf.ForOp]]:
        """(index, loop) of the loops in `block` that run at least once."""
        got = self._loops.get(id(block))
        if got is None:
            got = self._loops[id(block)] = [(i, op) for i, op in enumerate(self.ops(block))
                                            if op.regions and isinstance(op, scf.ForOp) and min_trips(op) >= 1]
        return got


def _has_barrier(block: Block, pipe: isa.Pipe, bars: Barriers, lo: int | None = None, hi: int | None = None) -> bool:
    """Is there a barrier on `pipe` in `block` at a gap in (lo, hi] -- between ops lo and
    hi -- or inside a loop strictly between them that runs at least once?"""
    gaps = bars.at.get(id(block), {}).get(pipe, ())
    if gaps:
        k = 0 if lo is None else bisect.bisect_right(gaps, lo)  # the first gap after lo
        if k < len(gaps) and (hi is None or gaps[k] <= hi):
            return True
    loops = _barrier_loops(block, pipe, bars)
    if loops:
        k = 0 if lo is None else bisect.bisect_right(loops, lo)  # the first such loop after lo
        if k < len(loops) and (hi is None or loops[k] < hi):
            return True
    return False


def _barrier_loops(block: Block, pipe: isa.Pipe, bars: Barriers) -> list[int]:
    """The indices (ascending) of `block`'s always-running loops with a barrier on `pipe`
    somewhere in their bodies: asked only of the block being done and blocks inside it,
    whose loops' bodies are final (innermost blocks are done first), so the answer is
    kept (one bisect per question instead of a test per loop)."""
    key = (id(block), pipe)
    got = bars.loops_with.get(key)
    if got is None:
        got = bars.loops_with[key] = [i for i, _ in bars.running_loops(block)
                                      if _anywhere(_nested_body(block, i, bars), pipe, bars)]
    return got


def _anywhere(body: Block, pipe: isa.Pipe, bars: Barriers) -> bool:
    """A barrier on `pipe` anywhere in a nested loop's body (or its always-running loops):
    asked only of blocks inside the one being done, whose barriers are final (innermost
    blocks are done first), so the answer is kept."""
    key = (id(body), pipe)
    got = bars.anywhere.get(key)
    if got is None:
        got = bars.anywhere[key] = _has_barrier(body, pipe, bars)
    return got


def _nested_body(block: Block, at: int, bars: Barriers) -> Block | None:
    key = (id(block), at)
    got = bars._bodies.get(key, False)
    if got is False:
        op = bars.ops(block)[at]
        got = bars._bodies[key] = op.body.block if isinstance(op, scf.ForOp) else None
    return got


def _barrier_after(block: Block, xs: tuple[int, ...], pipe: isa.Pipe, bars: Barriers) -> bool:
    """A barrier after the op at xs, in the same run of `block`."""
    if _has_barrier(block, pipe, bars, lo=xs[0]):
        return True
    inner = _nested_body(block, xs[0], bars) if len(xs) > 1 else None
    return inner is not None and _barrier_after(inner, xs[1:], pipe, bars)


def _barrier_before(block: Block, ys: tuple[int, ...], pipe: isa.Pipe, bars: Barriers) -> bool:
    """A barrier before the op at ys, in the same run of `block`."""
    if _has_barrier(block, pipe, bars, hi=ys[0]):
        return True
    inner = _nested_body(block, ys[0], bars) if len(ys) > 1 else None
    return inner is not None and _barrier_before(inner, ys[1:], pipe, bars)


def _barriers(deps: list[Dep], level: Level, bars: Barriers) -> list[tuple[Block, int, isa.Pipe]]:
    """Barrier positions (block, before op g, pipe) for the same-pipe deps of one block; a
    dep is covered by a barrier between its two sides -- in the block, in a loop between
    them that always runs, or inside the loops holding them -- or by flags (step 4)."""
    block = deps[0].block
    mine = bars.at.setdefault(id(block), defaultdict(list))
    placed: list[tuple[Block, int, isa.Pipe]] = []
    searches = Searches(level)
    # Inside the loops holding a side the barriers are final (inner blocks are done first):
    # the answers there are kept by side and pipe (an instruction has deps with many others).
    after: dict[tuple, bool] = {}
    before: dict[tuple, bool] = {}
    loops_of: dict[isa.Pipe, list[int]] = {}  # `_barrier_loops` of the block, by pipe
    # A dep flags order, or one a barrier already covers, places nothing: the cheap barrier
    # test first, the chain search only for the deps it leaves.
    for d in sorted(deps, key=lambda d: (d.carried, d.y, d.x, d.xs, d.ys)):
        p = d.src
        covered = False
        if len(d.xs) > 1:
            covered = after.get((d.xs, p))
            if covered is None:
                inner_x = _nested_body(block, d.x, bars)
                covered = after[(d.xs, p)] = inner_x is not None and _barrier_after(inner_x, d.xs[1:], p, bars)
        if not covered and len(d.ys) > 1:
            covered = before.get((d.ys, p))
            if covered is None:
                inner_y = _nested_body(block, d.y, bars)
                covered = before[(d.ys, p)] = inner_y is not None and _barrier_before(inner_y, d.ys[1:], p, bars)
        if not covered:
            # `_has_barrier(block, p, bars, lo=d.x)` or `(..., hi=d.y)` when carried, else
            # `(..., lo=d.x, hi=d.y)`, on this block's gaps and barrier loops taken once per
            # pipe (the gaps grow in place; the loops are final: `_barrier_loops`)
            x, y = d.x, d.y
            gaps = mine.get(p, ())
            loops = loops_of.get(p)
            if loops is None:
                loops = loops_of[p] = _barrier_loops(block, p, bars)
            k, j = bisect.bisect_right(gaps, x), bisect.bisect_right(loops, x)
            if d.carried:
                covered = k < len(gaps) or j < len(loops) or (gaps and gaps[0] <= y) or (loops and loops[0] < y)
            else:
                covered = (k < len(gaps) and gaps[k] <= y) or (j < len(loops) and loops[j] < y)
        if not covered and not searches.implied(d):
            gaps = mine[p]
            k = bisect.bisect_left(gaps, d.y)
            if k == len(gaps) or gaps[k] != d.y:
                gaps.insert(k, d.y)
            placed.append((block, d.y, p))
    return placed


def _events(kernel: isa.KernelOp, pairs: list[Pair], event_ids: int, lin: Linear | Positions | None = None
            ) -> dict[Pair, int]:
    """An event id per pair (step 5), out of the chip's `event_ids` per pipe pair; `lin`:
    the kernel's `Linear` or `Positions` (the ops do not move until `_put`), when the caller
    has it."""
    lin = Linear.of(kernel) if lin is None else lin

    def span(p: Pair) -> tuple[float, float]:
        if p.carried:
            assert p.loop is not None
            start = lin.first(p.loop) - 0.5 if p.early is None else lin.gap(p.loop.parent_block(), p.early)
            return start, lin.last_in(p.loop) + 0.5
        return lin.gap(p.block, p.s + 1), lin.gap(p.block, p.w)

    ids: dict[Pair, int] = {}
    by_pipes: dict[tuple[isa.Pipe, isa.Pipe], list[Pair]] = defaultdict(list)
    for p in pairs:
        by_pipes[(p.src, p.dst)].append(p)
    spans = {p: span(p) for p in pairs}
    order = {p: (*spans[p], lin.gap(p.block, p.s + 1), lin.gap(p.block, p.w)) for p in pairs}

    for (src, dst), group in by_pipes.items():
        last_end = [float("-inf")] * event_ids
        for p in sorted(group, key=order.__getitem__):
            start, end = spans[p]
            free = [e for e in range(event_ids) if last_end[e] < start]
            if not free:
                raise _TooManyEvents(src, dst)
            e = min(free, key=lambda e: (last_end[e], e))
            ids[p] = e
            last_end[e] = end
    return ids


@dataclass
class SyncPlan:
    """Where one kernel's sync ops go, as plain data (it crosses from a worker process:
    `_plans`): (block number, gap) -> the (set pipe, wait pipe, event) keys of the
    set_flags and of the wait_flags there, and the pipes of the barriers. A block's number
    is its place in `_blocks` (the same in every process: the IR is the same)."""

    sets: dict[tuple[int, int], list[tuple[isa.Pipe, isa.Pipe, int]]]
    waits: dict[tuple[int, int], list[tuple[isa.Pipe, isa.Pipe, int]]]
    barriers: dict[tuple[int, int], list[isa.Pipe]]


def _blocks(kernel: isa.KernelOp, ops: list[Operation]) -> list[Block]:
    """The kernel's blocks, numbered for `SyncPlan`: its body, then the regions' blocks of
    `ops` (its `kernel_ops`) in order."""
    return [kernel.body.block, *(b for op in ops for r in op.regions for b in r.blocks)]


def _places(pairs: list[Pair], ids: dict[Pair, int], barriers: list[tuple[Block, int, isa.Pipe]],
            blocks: list[Block], block_ops: dict[int, list[Operation]]) -> SyncPlan:
    """The pairs' set/wait places and the barriers' as a `SyncPlan`; `block_ops`: each
    block's ops by id(block) (they do not move until `_put`)."""
    number = {id(b): i for i, b in enumerate(blocks)}
    where: dict[int, dict[int, int]] = {}  # id(block) -> id(op) -> its index

    def index_of(block: Block, op: Operation) -> int:
        got = where.get(id(block))
        if got is None:
            got = where[id(block)] = {id(o): i for i, o in enumerate(_ops_of(block, block_ops))}
        return got[id(op)]

    sets: dict[tuple[int, int], list] = defaultdict(list)
    waits: dict[tuple[int, int], list] = defaultdict(list)
    bars: dict[tuple[int, int], list] = defaultdict(list)
    for p in pairs:
        key = (p.src, p.dst, ids[p])
        b = number[id(p.block)]
        sets[(b, p.s + 1)].append(key)
        waits[(b, p.w)].append(key)
        if p.carried:
            assert p.loop is not None
            parent = p.loop.parent_block()
            assert parent is not None
            at = index_of(parent, p.loop)
            sets[(number[id(parent)], at if p.early is None else p.early)].append(key)
            waits[(number[id(parent)], at + 1)].append(key)
    for block, g, pipe in barriers:
        bars[(number[id(block)], g)].append(pipe)
    return SyncPlan(dict(sets), dict(waits), dict(bars))


def _ops_of(block: Block, block_ops: dict[int, list[Operation]]) -> list[Operation]:
    got = block_ops.get(id(block))
    if got is None:
        got = block_ops[id(block)] = list(block.ops)
    return got


def _put(plan: SyncPlan, blocks: list[Block], block_ops: dict[int, list[Operation]] | None = None,
         make: _SyncOps | None = None) -> None:
    """Put a plan's set/wait ops and barriers in place; `block_ops`: each block's ops by
    id(block), when the caller has them; `make`: the pass's sync-op builder (its
    attributes shared by all kernels)."""
    block_ops = {} if block_ops is None else block_ops
    order = {p: i for i, p in enumerate(isa.PIPES)}

    def sort_key(k):
        return order[k[0]], order[k[1]], k[2]

    gaps: dict[int, set[int]] = defaultdict(set)
    for b, g in (*plan.sets, *plan.waits, *plan.barriers):
        gaps[b].add(g)
    make = _SyncOps() if make is None else make
    for b, used in gaps.items():
        block = blocks[b]
        ops = _ops_of(block, block_ops)
        for g in sorted(used):
            new: list[Operation] = [make.flag(isa.SetFlagOp, k) for k in sorted(plan.sets.get((b, g), []), key=sort_key)]
            new += [make.flag(isa.WaitFlagOp, k) for k in sorted(plan.waits.get((b, g), []), key=sort_key)]
            new += [make.barrier(p) for p in sorted(plan.barriers.get((b, g), []), key=order.__getitem__)]
            _link(block, new, ops[g - 1] if g > 0 else None, ops[g] if g < len(ops) else None)


def _link(block: Block, new: list[Operation], prev: Operation | None, nxt: Operation | None) -> None:
    """Put the fresh detached ops `new` into `block` between its neighbouring ops `prev`
    and `nxt` (None: the block's start or end), as `Block.insert_op_before` / `add_op`
    link them, without their checks (each walks the block's ancestors: O(depth) per op)."""
    for op in new:
        op.parent = block
        op._prev_op = prev
        if prev is None:
            block._first_op = op
        else:
            prev._next_op = op
        prev = op
    if prev is not None:
        prev._next_op = nxt
        if nxt is None:
            block._last_op = prev
        else:
            nxt._prev_op = prev


class _SyncOps:
    """Builds sync ops from shared property attributes (attributes are immutable): the same
    ops as their constructors build (`sync_op`), without the IRDL argument checks and a new
    attribute per op (densenet121: 13.7k ops)."""

    def __init__(self) -> None:
        self._props: dict[tuple, dict] = {}

    def flag(self, cls: type[isa.SetFlagOp] | type[isa.WaitFlagOp], key: tuple[isa.Pipe, isa.Pipe, int]) -> Operation:
        props = self._props.get(key)
        if props is None:
            src, dst, event = key
            props = self._props[key] = {"src_pipe": isa.PipeAttr(src), "dst_pipe": isa.PipeAttr(dst),
                                        "event": IntegerAttr(event, i64)}
        return sync_op(cls, props)

    def barrier(self, pipe: isa.Pipe) -> Operation:
        props = self._props.get(pipe)
        if props is None:
            props = self._props[pipe] = {"pipe": isa.PipeAttr(pipe)}
        return sync_op(isa.PipeBarrierOp, props)


_NO_VALUES = SSAValues()  # (immutable: shared by every op without operands or results)


def sync_op(cls: type[Operation], properties: dict, attributes: dict | None = None,
            location: LocationAttr = UNKNOWN_LOC) -> Operation:
    """A detached op of `cls` without operands, results, successors or regions: the fields
    `Operation.create` sets, set directly (`create` goes through the operand, successor
    and region setters; `test_sync_op_is_created_op` checks the fields)."""
    op = cls.__new__(cls)
    op._operands = _NO_VALUES
    op._operand_uses = ()
    op.results = _NO_VALUES
    op.properties = dict(properties)
    op.attributes = {} if attributes is None else dict(attributes)
    op.location = location
    op._successors = ()
    op._successor_uses = ()
    op.regions = ()
    return op


def _has_sync(ops: list[Operation]) -> bool:
    """Is one of `ops` a sync op? Asked of each op's type once (an `isinstance` against
    the sync ops' abstract bases is a Python call per op)."""
    return any(issubclass(t, isa.SYNC_OPS) for t in {type(op) for op in ops})


def _depth(block: Block) -> int:
    d = 0
    p = block.parent_op()
    while p is not None and not isinstance(p, isa.KernelOp):
        d += 1
        p = p.parent_op()
    return d


def insert_sync(kernel: isa.KernelOp, target: targets.Target, patterns: Patterns | None = None,
                ops: list[Operation] | None = None, make: _SyncOps | None = None) -> None:
    """Synchronize one kernel; `patterns`: the byte patterns' memo, shared by one pass's
    kernels; `ops`: the kernel's `kernel_ops`, when the caller has them; `make`: the
    pass's sync-op builder (an IntegerAttr per event id per kernel was half of emitting)."""
    ops = kernel_ops(kernel.body.block) if ops is None else ops
    if _has_sync(ops):
        return
    block_ops: dict[int, list[Operation]] = {}
    _put(plan_sync(kernel, target, patterns, ops, block_ops), _blocks(kernel, ops), block_ops, make)


def plan_sync(kernel: isa.KernelOp, target: targets.Target, patterns: Patterns | None, ops: list[Operation],
              block_ops: dict[int, list[Operation]] | None = None) -> SyncPlan:
    """Steps 1-5 of the module docstring for one kernel without sync ops (`ops`: its
    `kernel_ops`): where its sync ops go. The IR is not changed; `block_ops` (a dict),
    when given, gets each block's ops by id(block), for `_put`."""
    try:
        instrs = instructions(kernel, target, patterns, ops)
    except UnplacedBufferError as e:
        raise SyncError(f"insert-sync: {describe_kernel(kernel)}: {e}; run plan-local-memory first") from None
    # Each block's ops, in order (they do not move until `_put`), from the one walk.
    block_ops = {} if block_ops is None else block_ops
    block_ops[id(kernel.body.block)] = []
    for op in ops:
        block_ops[id(op.parent)].append(op)
        for r in op.regions:
            for b in r.blocks:
                block_ops[id(b)] = []
    by_block: dict[int, list[Dep]] = defaultdict(list)  # by id(block) (a block's own hash is a Python call)
    for d in dependencies(kernel, instrs, ops):
        by_block[id(d.block)].append(d)
    blocks = _blocks(kernel, ops)
    placed: dict[Block, list[Pair]] = {}
    levels: dict[Block, Level] = {}
    bars = Barriers(block_ops)
    pairs: list[Pair] = []
    barriers: list[tuple[Block, int, isa.Pipe]] = []
    # Innermost blocks first: a block's dependencies may be ordered by the pairs of the
    # loops nested in it.
    for block in sorted(blocks, key=_depth, reverse=True):
        body_ops = block_ops[id(block)]
        loops = {i: op.body.block for i, op in enumerate(body_ops) if op.regions and isinstance(op, scf.ForOp)}
        nested = {i: placed.get(b, []) for i, b in loops.items()}
        inner = {i: levels[b] for i, b in loops.items() if b in levels}
        deps = by_block.get(id(block), [])
        always = {i for i, b in loops.items() if min_trips(body_ops[i]) >= 1}
        inherited = Level([], [], nested, inner, always)
        cross: dict[tuple, list[Dep]] = defaultdict(list)
        searches = Searches(inherited)
        for d in deps:
            if d.src != d.dst and not searches.implied(d):
                cross[(d.src, d.dst, d.carried)].append(d)
        candidates: dict[Pair, list[Dep]] = {}
        for (_, _, carried), group in sorted(cross.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
            for pair, covered in (_carried_pairs(group) if carried else _stab(group)).items():
                candidates.setdefault(pair, []).extend(covered)
        kept = _prune(candidates, nested, inner, always)
        placed[block] = kept
        pairs += kept
        level = levels[block] = Level([p for p in kept if not p.carried], [p for p in kept if p.carried], nested, inner,
                                      always)
        same = [d for d in deps if d.src == d.dst]
        if same:
            barriers += _barriers(same, level, bars)
    lin = Positions(ops, block_ops)  # (once: `_merge_closest` may ask for the ids again)
    merged, ids, merges = _with_events(kernel, pairs, target.isa.event_ids, lin)
    top = kernel.body.block
    top_index = {id(o): i for i, o in enumerate(block_ops[id(top)])}
    top_pipes: dict[int, set[isa.Pipe]] = defaultdict(set)  # a body op -> the pipes of the instructions at or in it
    for ins in instrs:
        top_pipes[top_index[id(ins.path[0])]].add(ins.pipe)
    for old, new, added in _early_presets(pairs, top, top_index, by_block.get(id(top), []), placed.get(top, []),
                                          barriers, top_pipes):
        moved = [new if p is old else p for p in pairs] + [p for p in added if p not in pairs]
        try:
            got = _with_events(kernel, moved, target.isa.event_ids, lin)
        except SyncError:
            continue
        if got[2] <= merges:  # (not when its event ids cost more merges than at its loop)
            pairs, (merged, ids, merges) = moved, got
    pairs = merged
    return _places(pairs, ids, barriers, blocks, block_ops)


def _early_presets(pairs: list[Pair], top: Block, index: dict[int, int], deps: list[Dep], kept: list[Pair],
                   barriers: list[tuple[Block, int, isa.Pipe]], pipes: dict[int, set[isa.Pipe]]
                   ) -> list[tuple[Pair, Pair, list[Pair]]]:
    """(pair, the pair with its pre-set moved up, the pairs that takes) for the loops of the
    kernel body whose pre-sets can move up past ops before the loop; `plan_sync` takes each
    whose event ids cost no more merges. A loop's pre-set (step 2) fires when its pipe has
    done everything before it, so a loop's first loads waited for whatever that pipe did
    before the loop -- a Cube kernel's set-up of its resident L0 blocks
    (`tile_cube.cube_bias_block`) held its first A / B loads ~190 cycles. Above op j the
    set orders less: the chains through it (first side -> ... -> the set's pipe -> the
    pre-set -> the loop's first wait -> ... -> second side) that enter the set's pipe at or
    after j break. So every dependency into the loop or after it from before the loop
    must be ordered without the pre-set -- by a kept forward pair of the body (set after
    its first side, waited no later than its second), a barrier between them, or one
    unpipelined pipe -- or have its first side on the set's pipe before j, or get a pair
    of its own (a cross-pipe one: set after its first side, waited before the loop); and
    no other pair of the same two pipes may set or wait at or inside the ops passed (its
    event id would be the pre-set's). It goes no higher than the first op it passes with
    work on its pipe (`pipes`: each body op's instructions' pipes): above that it orders
    nothing less and fires no sooner. `index`: the body's ops' places, by id."""
    bars = {(g, pipe) for b, g, pipe in barriers if b is top}
    forward = [p for p in kept if not p.carried]
    out = []
    for p in pairs:
        if not p.carried or p.loop is None or p.loop.parent_block() is not top:
            continue
        at = index[id(p.loop)]
        into = [d for d in deps if not d.carried and d.x < at <= d.y and not _ordered_without(d, forward, bars)]
        busy = {i for q in pairs if q is not p and (q.src, q.dst) == (p.src, p.dst)
                for i in _top_indices(q, top, index)}
        best, added = at, []
        j = at
        while j > 0 and j - 1 not in busy:
            j -= 1
            loose = [d for d in into if not (d.src == p.src and d.x < j)]
            if any(d.src == d.dst for d in loose):
                break
            if p.src in pipes.get(j, ()):
                best, added = j, loose
        if best < at:
            own = list(dict.fromkeys(Pair(top, None, d.src, d.dst, d.x, at, False) for d in added))
            out.append((p, replace(p, early=best), own))
    return out


def _top_indices(q: Pair, top: Block, index: dict[int, int]) -> list[int]:
    """The kernel body's ops at or inside which pair `q` sets or waits."""
    if q.block is top:
        out = [q.s, q.w]
    else:
        op = q.block.parent_op()
        while op is not None and op.parent_block() is not top:
            op = op.parent_block().parent_op() if op.parent_block() is not None else None
        out = [] if op is None else [index[id(op)]]
    if q.carried and q.loop is not None and q.loop.parent_block() is top:
        out.append(index[id(q.loop)])
    return out


def _ordered_without(d: Dep, forward: list[Pair], bars: set[tuple[int, isa.Pipe]]) -> bool:
    """Is forward dependency `d` of the kernel body ordered by a kept pair of its own (set
    after its first side, waited no later than its second), a barrier between them, or
    one unpipelined pipe?"""
    if d.src == d.dst:
        return d.src not in PIPELINED or any((g, d.src) in bars for g in range(d.x + 1, d.y + 1))
    return any(p.src == d.src and p.dst == d.dst and d.x <= p.s and p.w <= d.y for p in forward)


def _with_events(kernel: isa.KernelOp, pairs: list[Pair], event_ids: int, lin: Positions
                 ) -> tuple[list[Pair], dict[Pair, int], int]:
    """(the pairs, merged until the chip's event ids suffice (`_merge_closest`), their ids,
    the merges it took); `SyncError` when no merge is left."""
    pairs = list(pairs)
    merges = 0
    while True:
        try:
            return pairs, _events(kernel, pairs, event_ids, lin), merges
        except _TooManyEvents as e:
            if not _merge_closest(pairs, e.src, e.dst):
                raise SyncError(f"insert-sync: {describe_kernel(kernel)}: more than {event_ids} "
                                f"{e.src.value} -> {e.dst.value} events are live at once") from None
            merges += 1


def _merge_closest(pairs: list[Pair], src: isa.Pipe, dst: isa.Pipe) -> bool:
    """Step 5's fallback when more pairs of one pipe pair are live at once than the chip has
    event ids: the two nearest pairs of one block (and loop) become one, set after the
    later of their sets and waited before the earlier of their waits -- it orders everything both did, at
    the price of some overlap (e.g. a kernel double-buffering five inputs needs ten
    carried V -> MTE2 pairs; merged, the loads of one slot wait together). False when no
    two pairs can merge."""
    groups: dict[tuple, list[Pair]] = defaultdict(list)
    for p in pairs:
        if (p.src, p.dst) == (src, dst):
            groups[(p.block, p.loop, p.carried)].append(p)
    best = None
    for group in groups.values():
        group.sort(key=lambda p: (p.w, p.s))
        for a, b in itertools.pairwise(group):
            s, w = max(a.s, b.s), min(a.w, b.w)
            if not a.carried and s >= w:
                continue  # a forward pair's set must come before its wait
            cost = abs(a.s - b.s) + abs(a.w - b.w)
            if best is None or cost < best[0]:
                best = (cost, a, b, replace(a, s=s, w=w, early=a.early if a.early == b.early else None))
    if best is None:
        return False
    _, a, b, merged = best
    pairs.remove(a)
    pairs.remove(b)
    if merged not in pairs:
        pairs.append(merged)
    return True


@dataclass(frozen=True)
class InsertSyncPass(ModulePass):
    """Order every cross-pipe dependency of each isa kernel with set_flag / wait_flag and
    every same-pipe one with pipe_barrier (see the module docstring). `jobs`: processes
    that plan the kernels (`_plans`; 0: one per CPU core this process may use, for enough
    work; 1: this process alone) -- the same IR either way."""

    name = "insert-sync"

    jobs: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.jobs < 0:
            raise SyncError(f"insert-sync: jobs={self.jobs}: expected 0 (one per core) or more")
        with _old_objects_frozen():
            self._apply(op)

    def _apply(self, op: ModuleOp) -> None:
        target = module_target(op)
        done: dict[Hashable, isa.KernelOp] = {}
        kernels = isa_kernels(op)
        # Only kernels that share a cheap signature can be twins: the others are not keyed.
        shapes = [_shape(k) for k in kernels]
        counts = Counter(shapes)
        todo: list[tuple[isa.KernelOp, list[Operation]]] = []  # the kernels to plan
        steps: list[tuple[isa.KernelOp, isa.KernelOp | None]] = []  # (kernel, its twin planned before or None)
        for kernel, shape in zip(kernels, shapes):
            ops = kernel_ops(kernel.body.block)
            if _has_sync(ops):
                continue
            twin = None
            if counts[shape] > 1:
                key = structure_key(kernel)
                twin = done.setdefault(key, kernel)
            if twin is None or twin is kernel:
                todo.append((kernel, ops))
                twin = None
            steps.append((kernel, twin))
        ahead = PLANNED_AHEAD.get()
        plans = _plans([x for x in todo if ahead is None or not ahead.covers(x[0])], target, self.jobs)
        if ahead is not None:
            plans.update(ahead.plans([x for x in todo if ahead.covers(x[0])], target))
        make = _SyncOps()
        for kernel, twin in steps:
            if twin is None:
                plan, ops, block_ops = plans[kernel]
                _put(plan, _blocks(kernel, ops), block_ops, make)
            else:
                replay_sync(twin.body.block, kernel.body.block)


# Planning in other processes pays (a fork, the plans' bytes back) from about this many ops
# to analyse (densenet121's distinct kernels: 12k instructions, 3 s of planning).
PARALLEL_MIN_OPS = 2000


def _plans(todo: list[tuple[isa.KernelOp, list[Operation]]], target: targets.Target,
           jobs: int) -> dict[isa.KernelOp, tuple[SyncPlan, list[Operation], dict | None]]:
    """Each kernel's plan (with its ops, and its blocks' ops when planned here). The kernels are independent, so with several
    processes (`_processes`) each forked worker plans a share of them (by op count) and
    sends the plans back through a pipe as plain data, while this process plans its own
    share; a worker that fails or dies leaves its kernels to this process (which raises
    their errors). Forked, a worker sees the module as it is (copy-on-write)."""
    n = _processes(todo, jobs)
    shares: list[list[int]] = [[] for _ in range(n)]
    load = [0] * n
    for i in sorted(range(len(todo)), key=lambda i: -len(todo[i][1])):  # the biggest first, to the least loaded
        k = load.index(min(load))
        shares[k].append(i)
        load[k] += len(todo[i][1])
    pending = [Forked(partial(_plan_share, todo, target, share)) for share in shares[1:]]
    got: dict[int, SyncPlan] = {}
    here: dict[int, dict] = {}  # the blocks' ops of the kernels planned here
    try:
        patterns = Patterns()  # (this pass's: no memo outlives it)
        for i in sorted(shares[0]):
            got[i] = plan_sync(todo[i][0], target, patterns, todo[i][1], here.setdefault(i, {}))
        while pending:
            outcome, plans = pending.pop(0).result()
            if outcome == "ok":
                got.update(plans)
        for i in range(len(todo)):  # a worker's failures: planned here (raising their errors)
            if i not in got:
                got[i] = plan_sync(todo[i][0], target, patterns, todo[i][1])
    finally:
        for worker in pending:  # left by an error here: stopped
            worker.stop()
    return {todo[i][0]: (got[i], todo[i][1], here.get(i)) for i in range(len(todo))}


class PlansAhead:
    """Kernels' plans made in a forked copy before the pass runs on their copies.

    Why: `ge.compile`'s fusion probes build most distinct kernels of a model at `fuse`
    (lowering/fusion_legality.py); their plans (which depend only on the isa kernel) are
    made beside the stages that lower the other kernels (bufferize to plan-local-memory),
    on the CPU core the compile leaves idle there. The pass later finds a plan for each
    kernel the compile names a copy of a planned one (`copied`: a renamed clone, the same
    ops in the same order -- a `SyncPlan` names ops by position), and plans the rest
    itself. A copy that died, or a kernel it could not plan, is planned by the pass as if
    there were no plans ahead: the same IR either way."""

    def __init__(self, kernels: list[isa.KernelOp], target: targets.Target):
        self.index = {id(k): i for i, k in enumerate(kernels)}
        self.worker: Forked | None = Forked(partial(_plan_share, [(k, None) for k in kernels], target,
                                                    list(range(len(kernels)))))
        self.copies: dict[isa.KernelOp, int] = {}
        self.got: dict[int, SyncPlan] | None = None

    def copied(self, copy: isa.KernelOp, original: Operation) -> None:
        """`copy` (in the module the pass runs on) is `original` (a planned kernel) renamed."""
        if id(original) in self.index:
            self.copies[copy] = self.index[id(original)]

    def covers(self, kernel: isa.KernelOp) -> bool:
        return kernel in self.copies

    def plans(self, todo: list[tuple[isa.KernelOp, list[Operation]]], target: targets.Target,
              ) -> dict[isa.KernelOp, tuple[SyncPlan, list[Operation], None]]:
        """The plans of `todo`'s kernels (all `covers`ed): the copy's, waited for, or planned here."""
        if self.got is None:
            outcome, got = self.worker.result() if self.worker is not None else ("lost", None)
            self.worker, self.got = None, got if outcome == "ok" else {}
        patterns = Patterns()
        out = {}
        for kernel, ops in todo:
            plan = self.got.get(self.copies[kernel])
            out[kernel] = (plan if plan is not None else plan_sync(kernel, target, patterns, ops), ops, None)
        return out

    def stop(self) -> None:
        """The copy stopped, its plans dropped (the compile failed first, or no pass ran)."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


# The plans ahead the pass takes (`planned_ahead`): none outside a `ge.compile` that made them.
PLANNED_AHEAD: ContextVar[PlansAhead | None] = ContextVar("ge_sync_plans_ahead", default=None)


@contextlib.contextmanager
def planned_ahead(ahead: PlansAhead | None) -> Iterator[None]:
    token = PLANNED_AHEAD.set(ahead)
    try:
        yield
    finally:
        PLANNED_AHEAD.reset(token)


def _processes(todo: list[tuple[isa.KernelOp, list[Operation]]], jobs: int) -> int:
    """How many processes plan `todo`: `jobs`, or with 0 one per CPU core this process may
    use when there is enough work; one where a process cannot fork safely (`can_fork`)."""
    if jobs == 1 or len(todo) < 2 or not can_fork():
        return 1
    if jobs == 0:
        if sum(len(ops) for _, ops in todo) < PARALLEL_MIN_OPS:
            return 1
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(jobs, len(todo)))


def _plan_share(todo: list[tuple[isa.KernelOp, list[Operation] | None]], target: targets.Target,
                share: list[int]) -> dict[int, SyncPlan]:
    """A worker's plans, {index: plan}, of the kernels `share` of `todo` (ops None: the
    kernel's `kernel_ops`; one it could not plan is left out: the parent plans it again and
    reports its error)."""
    patterns = Patterns()
    out: dict[int, SyncPlan] = {}
    for i in share:
        kernel, ops = todo[i]
        try:
            out[i] = plan_sync(kernel, target, patterns, kernel_ops(kernel.body.block) if ops is None else ops)
        except Exception:  # planned again by the parent, which reports it
            pass
    return out


@contextlib.contextmanager
def _old_objects_frozen() -> Iterator[None]:
    """The pass makes many short-lived containers while the module and the rest of the
    compile stay alive, and each of the garbage collector's full collections walks all of
    those (about a third of the pass on densenet121): the objects that exist before the
    pass are frozen (`gc.freeze`) so that collections see only the pass's own objects,
    which are collected as before. Left alone when someone else froze objects."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _shape(kernel: isa.KernelOp) -> tuple:
    """A cheap part of `structure_key`: the argument types and the top-level op names."""
    return tuple(a.type for a in kernel.body.block.args), tuple(o.name for o in kernel.body.block.ops)


def structure_key(kernel: isa.KernelOp):
    """The kernel without its names (`ge.lowering.kernel_dedup.structure_key`: ops,
    properties, types and operand numbering): two kernels with one key have the same
    instructions, buffers, offsets and loops (resnet50's 58 kernels have 29 keys), so they
    need the same synchronization."""
    from ge.lowering.kernel_dedup import structure_key as key

    return key(kernel)


def replay_sync(src: Block, dst: Block) -> None:
    """Give `dst` (the same ops as `src` had before insert-sync) `src`'s sync ops, at the
    same places in every nested block."""
    ops = list(dst.ops)
    j = 0
    for op in list(src.ops):
        if isinstance(op, isa.SYNC_OPS):  # (no operands, results or regions: `clone`'s walk is not needed)
            copy = sync_op(type(op), op.properties, op.attributes, op.location)
            if j < len(ops):
                dst.insert_op_before(copy, ops[j])
            else:
                dst.add_op(copy)
            continue
        twin = ops[j]
        j += 1
        for r1, r2 in zip(op.regions, twin.regions):
            for b1, b2 in zip(r1.blocks, r2.blocks):
                replay_sync(b1, b2)
