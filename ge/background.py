"""Numpy work on weights done on a second thread while the compile's Python goes on.

Why: a compile is one Python thread, and the machines it runs on have a second core. The
bulk conversions of a model's weights (BN folding's scaled weights, precision's f16 casts,
the storage-format conversions of assign-layouts) are numpy copies and casts that release
the GIL, and their values are needed only much later (the model file), or by a pass that
reads that one constant. A `Job` is such a computation: `submit(fn, *args)` queues
`fn(*args)` for the one background thread (an argument that is itself a `Job` is its
result), and `Job.result()` gives the value -- waited for when the thread runs it,
computed by the reader itself when it has not started yet. An exception raised by `fn`
is raised by `result()`, where the value is read.

The thread ends when the queue has stayed empty for `LINGER` seconds (a pass submits its
jobs one by one, between stretches of Python), and `settle()` ends it now, its queue done: a
process forks only without other threads (ge/forked.py settles first).

While the thread runs, the interpreter's switch interval is short (`SWITCH_INTERVAL`):
the thread takes the GIL back after each numpy call, and at the default 5 ms the compile
thread would hold it that long each time.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

SWITCH_INTERVAL = 0.0002
"""Seconds (`sys.setswitchinterval`) while the background thread runs."""

LINGER = 0.1
"""Seconds the thread waits for more work before it ends."""

_QUEUED, _RUNNING, _DONE = 0, 1, 2

_lock = threading.Lock()
_wake = threading.Condition(_lock)
_ending = False
"""`settle()` asks the thread to end once its queue is done."""
_queue: deque[Job] = deque()
_worker: threading.Thread | None = None
"""The thread while it takes jobs (None once it found the queue empty)."""
_last: threading.Thread | None = None
"""The thread started last (it may still be ending)."""
_interval: float | None = None
"""The switch interval before the thread started (restored when it ends)."""


class Job:
    """`fn(*args)`, computed once by the background thread or by its first reader."""

    __slots__ = ("args", "done", "error", "fn", "state", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]):
        self.fn, self.args = fn, args
        self.state = _QUEUED
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.value = self.fn(*(a.result() if isinstance(a, Job) else a for a in self.args))
        except BaseException as e:  # raised again where the value is read
            self.error = e
        self.fn = self.args = None  # (the inputs may be freed)
        self.state = _DONE
        self.done.set()

    def result(self) -> Any:
        """The value, computed here if the background thread has not started it, else
        waited for; `fn`'s exception raised."""
        if self.state != _DONE:
            with _lock:
                mine = self.state == _QUEUED
                if mine:
                    self.state = _RUNNING  # (the thread skips it)
            if mine:
                self.run()
            else:
                self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


def submit(fn: Callable[..., Any], *args: Any) -> Job:
    """`fn(*args)` queued for the background thread (started if it is not running)."""
    global _worker, _last, _interval
    job = Job(fn, args)
    with _lock:
        _queue.append(job)
        if _worker is not None:
            _wake.notify()
        else:
            if _interval is None:
                _interval = sys.getswitchinterval()
                sys.setswitchinterval(min(_interval, SWITCH_INTERVAL))
            _worker = threading.Thread(target=_work, name="ge-background", daemon=True)
            _worker.start()
            _last = _worker
    return job


def _work() -> None:
    global _worker, _interval
    while True:
        with _lock:
            while True:
                while _queue and _queue[0].state != _QUEUED:
                    _queue.popleft()  # taken by a reader
                if _queue or _ending or not _wake.wait(LINGER):
                    break
            if not _queue:
                _worker = None
                if _interval is not None:
                    sys.setswitchinterval(_interval)
                    _interval = None
                return
            job = _queue.popleft()
            job.state = _RUNNING
        job.run()


def settle() -> None:
    """Wait until the background thread has done every queued job and ended."""
    global _ending
    with _lock:
        worker = _last
        _ending = True
        _wake.notify()
    try:
        if worker is not None:
            worker.join()
    finally:
        with _lock:
            _ending = False


def busy() -> bool:
    """Whether the background thread is alive (working, or waiting for more work)."""
    return _worker is not None
