"""insert-sync plans kernels in forked worker processes (issue 17: `_plans`, `jobs`): the
plans come back as plain data and are emitted here, so the IR must be the same as planning
every kernel in this process -- with any number of workers, when a worker fails on a
kernel or dies (its kernels are planned here), and a kernel's error is the same error."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from ge.dialects import isa
from ge.ir import parse_module, print_module, run_passes
from ge.transforms import insert_sync as sync

HERE = Path(__file__).parent
CASES = (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
LIT_CASES = [c for c in CASES if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]
UNPLACED = next(c for c in CASES if "without an offset" in c)


def _merged(texts: list[str], copies: int = 3) -> ModuleOp:
    """One ascend910 module holding the kernels of `texts`, `copies` times over (renamed
    apart; a copy of a kernel is its twin, which insert-sync replays rather than plans)."""
    kernels = []
    for n in range(copies):
        for text in texts:
            module = parse_module(text)
            for k in [op for op in module.body.block.ops if isinstance(op, isa.KernelOp)]:
                k.detach()
                k.sym_name = type(k.sym_name)(f"{k.sym_name.data}_{n}")
                kernels.append(k)
    module = ModuleOp(kernels)
    module.attributes.update(parse_module(texts[0]).attributes)
    return module


def _synced(jobs: int, texts: list[str] = LIT_CASES, copies: int = 3) -> str:
    module = _merged(texts, copies)
    run_passes(module, f"insert-sync{{jobs={jobs}}}")
    module.verify()
    return print_module(module)


def _forks(monkeypatch) -> list[int]:
    """The number of kernels each forked worker is given, as the pass forks them."""
    shares: list[int] = []
    forked = sync.Forked

    def counted(plan_share):  # (a partial of `_plan_share`: todo, target, share)
        shares.append(len(plan_share.args[2]))
        return forked(plan_share)

    monkeypatch.setattr(sync, "Forked", counted)
    return shares


def test_lit_kernels_cover_loops_and_pairs():
    text = _synced(1)
    assert len(LIT_CASES) >= 6
    assert text.count("isa.kernel @") == 3 * len(sync.isa_kernels(_merged(LIT_CASES, 1))) == 33
    assert text.count("isa.set_flag") > 30 and text.count("isa.pipe_barrier") > 3 and "scf.for" in text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_workers_give_the_same_ir(jobs, monkeypatch):
    serial = _synced(1)
    shares = _forks(monkeypatch)
    assert _synced(jobs) == serial
    # the distinct kernels (the copies are twins) are split over the workers and this process
    distinct = len(sync.isa_kernels(_merged(LIT_CASES, 1)))
    assert len(shares) == jobs - 1 and all(shares) and sum(shares) < distinct


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_worker_that_fails_or_dies_leaves_its_kernels_here(monkeypatch):
    serial = _synced(1)
    parent = os.getpid()
    plan = sync.plan_sync

    def failing(*args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("a worker's failure")
        return plan(*args, **kwargs)

    monkeypatch.setattr(sync, "plan_sync", failing)
    shares = _forks(monkeypatch)
    assert _synced(2) == serial and len(shares) == 1 and shares[0] > 0

    def dying(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(3)
        return plan(*args, **kwargs)

    monkeypatch.setattr(sync, "plan_sync", dying)
    assert _synced(3) == serial and len(shares) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_kernels_error_is_the_same_error():
    texts = [*LIT_CASES, UNPLACED]
    errors = []
    for jobs in (1, 2):
        with pytest.raises(sync.SyncError) as e:
            _synced(jobs, texts, copies=1)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "run plan-local-memory first" in errors[0]


def test_how_many_processes(monkeypatch):
    module = _merged(LIT_CASES, 1)
    todo = [(k, sync.kernel_ops(k.body.block)) for k in sync.isa_kernels(module)]
    ops = sum(len(o) for _, o in todo)
    assert sync._processes(todo, 1) == 1 and sync._processes(todo[:1], 4) == 1
    assert sync._processes(todo, 4) == (4 if hasattr(os, "fork") else 1)
    assert sync._processes(todo, 100) == (len(todo) if hasattr(os, "fork") else 1)
    assert ops < sync.PARALLEL_MIN_OPS and sync._processes(todo, 0) == 1  # too little work to fork for
    monkeypatch.setattr(sync, "PARALLEL_MIN_OPS", ops)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert sync._processes(todo, 0) == (min(cores, len(todo)) if hasattr(os, "fork") else 1)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:  # another thread running: forking is not safe
        assert sync._processes(todo, 4) == 1
    finally:
        stop.set()
        thread.join()


def test_negative_jobs_refused():
    with pytest.raises(sync.SyncError, match="jobs=-1"):
        _synced(-1)
