"""Streams and events for a task sequence: independent branches run on separate streams.

Part of `build-model` (DESIGN.md §2), after GE's logical stream allocation (ascend.md §4.4):
a stream is an in-order device queue; tasks on different streams may run at the same time.
The input is the task sequence in issue order (a topological order) with each task's
predecessors (the tasks whose results it reads, or whose reads it overwrites).

- Stream assignment, GE's AssignByDependencyPass idea: a task continues the stream of a
  predecessor that is still that stream's last task (it is that predecessor's first
  consumer); otherwise it takes a stream whose last task it depends on anyway (no false
  ordering), else a new stream (up to `max_streams`), else the stream that went idle
  first. `single_stream` (ATC's `--enable_single_stream`) puts everything on stream 0.
- Events (InsertSyncEvents + OptimizeSyncEvents): a dependency on another stream's task
  becomes `event_record` after the producer and `event_wait` before the consumer, unless
  the consumer's stream is already ordered after the producer (through earlier events).
- Event ids (ReuseEvent): an id is reused once its previous wait is ordered before the new
  record, so every id's record/wait pairs follow one another.

`check_schedule` re-derives the ordering from the streams and events alone and checks
every dependency and every event id against it. `makespan` estimates a schedule's cycles
from the kernels' modeled cycles, as the executor would run it (with SuperKernels, which
an event cuts: build-model then keeps several streams only where they pay).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ge.errors import GeError


class StreamScheduleError(GeError):
    """A stream schedule that misses a dependency or misuses an event."""


@dataclass(frozen=True)
class Event:
    """`event_record id` on the stream of task `src` right after it, `event_wait id` on the
    stream of task `dst` right before it."""

    id: int
    src: int
    dst: int


@dataclass(frozen=True)
class StreamSchedule:
    stream_of: tuple[int, ...]  # per task
    events: tuple[Event, ...]  # in the order of their records (src), then waits (dst)
    num_streams: int
    num_events: int  # distinct event ids
    before: tuple[int, ...]  # per task: bit set of the tasks ordered before it (streams + events)

    def ordered(self, a: int, b: int) -> bool:
        """Does task `a` finish before task `b` starts, whatever the streams' speeds?"""
        return bool(self.before[b] >> a & 1)


def _bits(indices) -> int:
    out = 0
    for i in indices:
        out |= 1 << i
    return out


def data_ancestors(preds: Sequence[Sequence[int]]) -> list[int]:
    """Per task, the bit set of its transitive predecessors."""
    anc: list[int] = []
    for i, ps in enumerate(preds):
        a = 0
        for p in ps:
            if not 0 <= p < i:
                raise StreamScheduleError(f"task {i} depends on task {p}, which is not issued before it")
            a |= anc[p] | 1 << p
        anc.append(a)
    return anc


def _pick_stream(i: int, preds: Sequence[int], anc: int, stream_of: list[int], tails: list[int],
                 max_streams: int) -> int:
    """The stream task `i` goes on (appending a new stream to `tails` if it needs one)."""
    continuing = [stream_of[p] for p in preds if tails[stream_of[p]] == p]
    if continuing:
        return min(continuing)
    idle = [s for s, t in enumerate(tails) if anc >> t & 1]
    if idle:
        return idle[0]
    if not max_streams or len(tails) < max_streams:
        tails.append(-1)
        return len(tails) - 1
    return min(range(len(tails)), key=lambda s: tails[s])


def assign_streams(preds: Sequence[Sequence[int]], single_stream: bool = False, max_streams: int = 0) -> StreamSchedule:
    """Streams and events for tasks 0..n-1 issued in order; `preds[i]` are the tasks task i
    must wait for. `max_streams` = 0 means no limit."""
    anc = data_ancestors(preds)
    stream_of: list[int] = []
    tails: list[int] = []  # per stream: its last task
    before: list[int] = []
    pairs: list[tuple[int, int]] = []
    for i, ps in enumerate(preds):
        if single_stream or not tails:
            s = 0
            if not tails:
                tails.append(-1)
        else:
            s = _pick_stream(i, ps, anc[i], stream_of, tails, max_streams)
        prev = tails[s]
        seen = before[prev] | 1 << prev if prev >= 0 else 0
        for p in sorted(set(ps), reverse=True):
            if not seen >> p & 1:
                pairs.append((p, i))
                seen |= before[p] | 1 << p
        stream_of.append(s)
        tails[s] = i
        before.append(seen)
    events = _number_events(sorted(pairs), before)
    return StreamSchedule(
        tuple(stream_of), tuple(events), max(1, len(tails)), len({e.id for e in events}), tuple(before)
    )


def _number_events(pairs: list[tuple[int, int]], before: list[int]) -> list[Event]:
    """Give each (record after src, wait before dst) pair an id, reusing an id once its
    last wait is ordered before the new record."""
    last_dst: list[int] = []  # per id: the task its latest wait guards
    events = []
    for src, dst in pairs:
        free = [k for k, d in enumerate(last_dst) if d == src or before[src] >> d & 1]
        if free:
            k = free[0]
        else:
            k = len(last_dst)
            last_dst.append(-1)
        last_dst[k] = dst
        events.append(Event(k, src, dst))
    return events


def check_schedule(preds: Sequence[Sequence[int]], stream_of: Sequence[int], events: Sequence[Event]) -> None:
    """Raise StreamScheduleError unless every dependency is ordered by the streams and
    events alone, and every event id is recorded and waited in strict alternation."""
    n = len(preds)
    if len(stream_of) != n:
        raise StreamScheduleError(f"{len(stream_of)} stream ids for {n} tasks")
    waits: list[list[Event]] = [[] for _ in range(n)]
    for e in events:
        if not 0 <= e.src < e.dst < n:
            raise StreamScheduleError(f"event {e.id}: record after task {e.src}, wait before task {e.dst}: not in issue order")
        waits[e.dst].append(e)
    tails: dict[int, int] = {}
    before: list[int] = []
    for i in range(n):
        s = stream_of[i]
        prev = tails.get(s, -1)
        seen = before[prev] | 1 << prev if prev >= 0 else 0
        for e in waits[i]:
            seen |= before[e.src] | 1 << e.src
        for p in preds[i]:
            if not seen >> p & 1:
                raise StreamScheduleError(
                    f"task {i} (stream {s}) reads what task {p} (stream {stream_of[p]}) writes, "
                    "but nothing orders them"
                )
        tails[s] = i
        before.append(seen)
    by_id: dict[int, list[Event]] = {}
    for e in sorted(events, key=lambda e: (e.src, e.dst)):
        by_id.setdefault(e.id, []).append(e)
    for k, uses in by_id.items():
        for a, b in itertools.pairwise(uses):
            if not (a.dst == b.src or before[b.src] >> a.dst & 1):
                raise StreamScheduleError(
                    f"event {k} is recorded again after task {b.src} before its wait before task {a.dst} "
                    "is sure to have happened"
                )


@dataclass(frozen=True)
class TaskCost:
    """What the makespan estimate knows of a task: its cycles without a dispatch (a launch's
    modeled cycles less `overhead.launch`, a copy's DMA time), the cores it needs (0 for a
    copy) and their pool ("cube" / "vector"; one pool on a coupled chip)."""

    cycles: float
    cores: int
    pool: str = "cube"


def makespan(schedule: StreamSchedule, costs: Sequence[TaskCost], pools: dict[str, int], launch: float,
             sync_all: float, super_kernels: bool) -> float:
    """The cycles the schedule's tasks take on `pools` (cores per pool), as the executor
    runs them: each stream in order, a task after the events it waits for, a launch when
    its cores are free. With `super_kernels` each stream's runs of launches between events
    and copies (transforms/super_kernel.py) take one dispatch, a barrier (`sync_all`)
    between two launches, and hold the cores of the largest from the first to the last."""
    n = len(costs)
    waits: list[list[int]] = [[] for _ in range(n)]
    recorded = [False] * n
    for e in schedule.events:
        waits[e.dst].append(e.src)
        recorded[e.src] = True
    queues: dict[int, list[int]] = {}
    for i in range(n):
        queues.setdefault(schedule.stream_of[i], []).append(i)
    pending: dict[int, list[list[int]]] = {}  # per stream, its tasks cut into runs
    for stream, tasks in queues.items():
        runs: list[list[int]] = []
        for i in tasks:
            prev = runs[-1][-1] if runs else None
            if (super_kernels and prev is not None and costs[i].cores and costs[prev].cores and not recorded[prev]
                    and not waits[i]):
                runs[-1].append(i)
            else:
                runs.append([i])
        pending[stream] = runs
    free = {pool: [0.0] * count for pool, count in pools.items()}
    stream_free = dict.fromkeys(queues, 0.0)
    end = [-1.0] * n
    while any(pending.values()):
        ready = {}
        for s, rs in pending.items():
            if rs and all(end[w] >= 0 for w in waits[rs[0][0]]):
                ready[s] = max([stream_free[s], *(end[w] for w in waits[rs[0][0]])])
        if not ready:
            raise StreamScheduleError("the schedule's streams wait for each other forever")
        s = min(ready, key=lambda k: (ready[k], pending[k][0][0]))
        run = pending[s].pop(0)
        wanted: dict[str, int] = {}
        for i in run:
            if costs[i].cores:
                wanted[costs[i].pool] = max(wanted.get(costs[i].pool, 0), costs[i].cores)
        start, chosen = ready[s], {}
        for pool, count in wanted.items():
            cores = sorted(range(len(free[pool])), key=lambda c: free[pool][c])[:count]
            chosen[pool] = cores
            start = max([start, *(free[pool][c] for c in cores)])
        t = start
        for k, i in enumerate(run):
            t += costs[i].cycles + (0.0 if not costs[i].cores else launch if k == 0 else sync_all)
            end[i] = t
        for pool, cores in chosen.items():
            for c in cores:
                free[pool][c] = t
        stream_free[s] = t
    return max(end, default=0.0)
