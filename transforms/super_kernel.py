"""SuperKernel: the consecutive launches of a stream dispatched once (GE's SuperKernelPass).

Dispatching a task costs `overhead.launch` (about 1 us); ResNet-50 at batch 1 launches 58
kernels of 2-5 us each, so a quarter of its time is dispatch. CANN's SuperKernel
(hiascend.com "SuperKernel Development"; cann/graph-autofusion super_kernel/README) builds
one kernel that calls the kernels of a scope in turn, with a full-core barrier between two
of them so that each sees everything the one before it wrote: N launches cost one dispatch
and N - 1 barriers (`overhead.sync_all`, a soft SyncAll through GM flags on the chips that
have no hardware one).

The pass marks the groups at the task level: every maximal run of at least two launches on
one stream with no other task of that stream between them (an event record or wait, a
copy) gets `super_kernel N` on each of its launches. An event ends a group, as a
SuperKernel cannot stop mid-way for another stream; a group holds the cores of its largest
sub-kernel from its first sub-kernel to its last (runtime/executor.py), so the streams of
a model with branches still run side by side between the groups. `max-sub-kernels` caps a
group's length (0: no cap).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from ge.dialects import task


def group_launches(model: task.ModelOp, max_sub_kernels: int = 0) -> list[list[task.LaunchOp]]:
    """Mark the SuperKernels of `model` (module docstring); returns them, each a list of
    its launches in order. Marks from an earlier run are replaced."""
    runs: dict[int, list[task.LaunchOp]] = {}  # stream -> its current run of launches
    done: list[list[task.LaunchOp]] = []

    def close(stream: int) -> None:
        run = runs.pop(stream, [])
        while len(run) >= 2:
            cut = len(run) if max_sub_kernels <= 0 else max_sub_kernels
            done.append(run[:cut])
            run = run[cut:]

    place: dict[int, int] = {}  # id(launch) -> its place among the tasks
    for op in model.body.block.ops:
        if not isinstance(op, task.LaunchOp | task.CopyOp | task.EventRecordOp | task.EventWaitOp):
            continue
        stream = op.stream.value.data
        if isinstance(op, task.LaunchOp):
            op.properties.pop("super_kernel", None)
            place[id(op)] = len(place)
            runs.setdefault(stream, []).append(op)
        else:
            close(stream)
    for stream in list(runs):
        close(stream)
    done.sort(key=lambda group: place[id(group[0])])  # numbered in issue order
    for n, group in enumerate(done):
        for op in group:
            op.properties["super_kernel"] = IntegerAttr(n, i64)
    return done


@dataclass(frozen=True)
class SuperKernelPass(ModulePass):
    """Group each stream's consecutive launches into SuperKernels (module docstring)."""

    name = "super-kernel"
    max_sub_kernels: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for model in op.ops:
            if isinstance(model, task.ModelOp):
                group_launches(model, self.max_sub_kernels)
