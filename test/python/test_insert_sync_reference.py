"""insert-sync's fast paths against straightforward references (issue 17): the chain
search the pass runs per first side (`Searches`: per-pipe tables of the least wait each
step suffix reaches, first sides in one loop sharing a search, `_enters` kept per level)
must answer every dependency as the plain per-dependency search does, `implied` (indexed
by pipe) must find the same chains, and the dependency loop must find the same deps. The
references are the code of commit 3237968, kept here verbatim but for their names and the
`_inside` memo; they are compared on random kernels with loops nested up to three deep,
loops that may run zero times, once or many, and buffers that share bytes."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from ge.dialects import isa
from ge.ir import parse_module, print_module, run_passes
from ge.transforms import insert_sync as sync
from ge.transforms import isa_analysis as ia
from ge.transforms.isa_analysis import Instr
from ge.transforms.plan_local_memory import module_target

sys.path.insert(0, str(Path(__file__).parent))
from test_insert_sync_scaling import _random_kernel as random_kernel

HERE = Path(__file__).parent
LIT_CASES = [c for c in (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
             if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]


# --------------------------------------------------------------------------------------
# The references (insert_sync.py at 3237968)
# --------------------------------------------------------------------------------------


def ref_implied(dep: sync.Dep, level: sync.Level, witness: list | None = None) -> bool:
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

    def found(frm: tuple | None, pair: sync.Pair | None) -> bool:
        if witness is not None:
            while True:
                if pair is not None:
                    witness.append(pair)
                if frm is None:
                    return True
                frm, pair = came[frm]
        return True

    def push(state: tuple, frm: tuple, pair: sync.Pair | None) -> None:
        if state not in came:
            came[state] = (frm, pair)
            todo.append(state)

    def reach(state: tuple, frm: tuple, pair: sync.Pair | None) -> bool:
        """A wait: the new state's pipe has waited."""
        kind, pipe, pos, wrapped, _ = state
        if kind == "in":  # a wait inside the loop: everything after the loop comes later too
            if reach(("at", pipe, (xs[0] + 1, -1), wrapped, True), frm, pair):
                return True
        elif pipe == dst and wrapped == carried and pos <= y:
            return found(frm, pair)
        push(state, frm, pair)
        return False

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
        if wrapped == carried and ref_enters(level, pipe, pos, dst, ys, waited):
            return found(cur, None)
        if carried and not wrapped:  # the pipe's own program order round the back edge
            push(("at", pipe, (-1, 0), True, waited), cur, None)
        for p in level.forward:
            if p.src == pipe and (p.s + 1, 0) > pos and reach(("at", p.dst, (p.w, 1), wrapped, True), cur, p):
                return True
        if not wrapped:
            for p in level.carried:
                if p.src == pipe and (p.s + 1, 0) > pos and reach(("at", p.dst, (p.w, 1), True, True), cur, p):
                    return True
        for at, pairs in level.nested.items():
            for p in pairs:  # leave a nested loop through the wait after it
                if (p.carried and p.src == pipe and (at, 0) > pos
                        and reach(("at", p.dst, (at + 1, 1), wrapped, True), cur, p)):
                    return True
            if at in level.always:  # through a loop that runs at least once: its first iteration
                for r, _ in ref_inside(level, at, pipe, pos, waited):
                    if reach(("at", r, (at + 1, -1), wrapped, True), cur, None):
                        return True
    return False


def ref_inside(level: sync.Level, at: int, pipe: isa.Pipe, pos: tuple, waited: bool) -> set[tuple]:
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
    return ref_inside_body(inner, pipe, before, waited)


def ref_inside_body(inner: sync.Level, pipe: isa.Pipe, before: bool, waited: bool) -> set[tuple]:
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


def ref_enters(level: sync.Level, pipe: isa.Pipe, pos: tuple, dst: isa.Pipe, ys: tuple[int, ...], waited: bool) -> bool:
    """Do pairs inside the loop at ys[0] of `level`'s block order the second side (at ys,
    inside that loop) after `pipe`'s work from `pos` on (a point before the loop), in
    every iteration -- directly or further in?"""
    if len(ys) < 2:
        return False
    inner = level.inner.get(ys[0])
    for r, pt in ref_inside(level, ys[0], pipe, pos, waited):
        if r == dst and pt <= (ys[1], 2):
            return True
        if inner is not None and ref_enters(inner, r, pt, dst, ys[1:], True):
            return True
    if not waited and inner is not None:  # the first side's own sets, further in
        return ref_enters(inner, pipe, (-1, 0), dst, ys[1:], False) if pos <= (ys[0], 1) else False
    return False


def ref_dependencies(kernel: isa.KernelOp, instrs: list[Instr], ops: list[Operation] | None = None) -> list[sync.Dep]:
    """`insert_sync.dependencies` as of 3237968."""
    deps: list[sync.Dep] = []  # each instruction pair gives distinct deps (their paths differ)
    index: dict[int, int] = {}  # id(op) -> its index in its block (an op's own hash is a Python call)
    top = kernel.body.block
    for b in [top, *(b for op in (sync.kernel_ops(top) if ops is None else ops) for r in op.regions for b in r.blocks)]:
        i, o = 0, b._first_op
        while o is not None:
            index[id(o)] = i
            i, o = i + 1, o._next_op

    # tails[i][k]: instruction i's path below the block at depth k (the kernel body is 0).
    tails = [[tuple(index[id(o)] for o in ins.path[k:]) for k in range(len(ins.path))] for ins in instrs]
    loop_of: dict[int, tuple] = {}  # id(block) -> (block's repeating loop, its body, the body's depth)
    blocks = [[o.parent for o in ins.path] for ins in instrs]  # [i][k]: the block of i's ancestor at depth k

    def overlap(cands: list[tuple], block: Block, loop: scf.ForOp | None, later: bool, back: bool = False) -> bool:
        if cands is sync._MEET_LIST:
            return True
        for p, q in cands:
            if sync.may_overlap(q, p, block, loop, later, kernel) if back else sync.may_overlap(p, q, block, loop, later, kernel):
                return True
        return False

    def needed(src: isa.Pipe, dst: isa.Pipe) -> bool:
        return src != dst or src in sync.PIPELINED

    meeting, sure = sync.meeting_accesses(instrs)
    for i, j in sorted(meeting.keys() | sure):
        forward = meeting.get((i, j), [])
        if (i, j) in sure:  # (sync.may_overlap says so in any block, loop and iteration)
            forward = sync._MEET_LIST
        first, second = instrs[i], instrs[j]
        fp, sp = first.path, second.path
        d = 0
        while d < len(fp) - 1 and fp[d] is sp[d]:
            d += 1
        block = blocks[i][d]
        assert block is not None
        same_run = False
        if i != j and overlap(forward, block, None, False):
            same_run = True
            if needed(first.pipe, second.pipe):
                deps.append(sync.Dep(block, None, first.pipe, second.pipe, tails[i][d], tails[j][d], False))
        facts = loop_of.get(id(block))
        if facts is None:
            loop = sync._repeating_loop(block)
            body = None if loop is None else loop.body.block
            facts = loop_of[id(block)] = (loop, body, None if body is None else sync._depth(body))
        loop, body, k = facts
        if loop is None:
            continue
        xs, ys = tails[i][k], tails[j][k]
        if needed(second.pipe, first.pipe) and overlap(forward, body, loop, True, back=True):
            deps.append(sync.Dep(body, loop, second.pipe, first.pipe, ys, xs, True))
        if i != j and not same_run and needed(first.pipe, second.pipe) and overlap(forward, body, loop, True):
            carried = xs[0] == ys[0]
            deps.append(sync.Dep(body, loop if carried else None, first.pipe, second.pipe, xs, ys, carried))
    return deps


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------


def _random_kernel(rng: random.Random) -> str:
    """test_insert_sync_scaling's random kernels, bigger: up to 7 statements per body, loops
    nested three deep -- cross-pipe pairs inside loops that the blocks around them chain
    through."""
    return random_kernel(rng, statements=7, depth_limit=3, cuts=(0.25, 0.45, 0.6, 0.8))


KERNELS = [_random_kernel(random.Random(seed)) for seed in range(1700, 1760)]


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def _checked(text: str, monkeypatch, seen: dict) -> str:
    """The synced module, every chain question the pass asks answered by both the fast
    path and the reference and compared (counts in `seen`)."""
    fast_ask, fast_implied = sync.Searches.implied, sync.implied

    def ask(self, dep):
        got = fast_ask(self, dep)
        assert got == ref_implied(dep, self.level), (dep, text)
        seen["asked"] += 1
        seen["yes"] += got
        seen["inside"] += len(dep.xs) > 1 and dep.x in self.level.nested and bool(self.level.nested[dep.x])
        seen["into"] += len(dep.ys) > 1
        return got

    def chain(dep, level, witness=None):
        mine, theirs = [], []
        got = fast_implied(dep, level, mine)
        assert got == ref_implied(dep, level, theirs) and mine == theirs, (dep, text)
        seen["chains"] += 1
        if witness is not None:
            witness += mine
        return got

    module = parse_module(text)
    monkeypatch.setattr(sync.Searches, "implied", ask)
    monkeypatch.setattr(sync, "implied", chain)
    run_passes(module, "insert-sync")
    monkeypatch.undo()
    return print_module(module)


def _reference(text: str, monkeypatch) -> str:
    """The synced module with every chain question answered by the reference alone."""
    module = parse_module(text)
    monkeypatch.setattr(sync.Searches, "implied", lambda self, dep: ref_implied(dep, self.level))
    monkeypatch.setattr(sync, "implied", ref_implied)
    monkeypatch.setattr(sync, "dependencies", ref_dependencies)
    run_passes(module, "insert-sync")
    monkeypatch.undo()
    return print_module(module)


def test_searches_answer_as_the_reference_on_random_kernels(monkeypatch):
    seen = dict.fromkeys(["asked", "yes", "inside", "into", "chains"], 0)
    for text in KERNELS:
        out = _checked(text, monkeypatch, seen)
        assert out == _reference(text, monkeypatch), text
    # the kernels exercise what the fast paths take apart: first sides inside loops with
    # pairs, second sides inside loops, chains found and not, pruning searches
    assert seen["asked"] > 2000 and 0.05 * seen["asked"] < seen["yes"] < 0.95 * seen["asked"], seen
    assert seen["inside"] > 200 and seen["into"] > 500 and seen["chains"] > 200, seen


@pytest.mark.parametrize("text", LIT_CASES, ids=[f"case{i}" for i in range(len(LIT_CASES))])
def test_searches_answer_as_the_reference_on_the_lit_kernels(text, monkeypatch):
    seen = dict.fromkeys(["asked", "yes", "inside", "into", "chains"], 0)
    assert _checked(text, monkeypatch, seen) == _reference(text, monkeypatch)


def test_dependencies_as_the_reference_on_random_kernels():
    total = 0
    for text in KERNELS:
        module = parse_module(text)
        target = module_target(module)
        for k in module.walk():
            if isinstance(k, isa.KernelOp):
                instrs = ia.instructions(k, target)
                fast, ref = sync.dependencies(k, instrs), ref_dependencies(k, instrs)
                key = [(id(d.block), id(d.loop), d.src, d.dst, d.xs, d.ys, d.carried) for d in fast]
                assert key == [(id(d.block), id(d.loop), d.src, d.dst, d.xs, d.ys, d.carried) for d in ref], text
                total += len(fast)
    assert total > 3000
