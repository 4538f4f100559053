"""A function run in a forked copy of this process while this one goes on; its result comes
back through a pipe, pickled.

Why: the machines ge compiles on have several cores and a compile is one Python thread.
Work whose answer is small and whose input is the state at the fork -- checking the final
IR while the model file is built (`ge.compile`), planning some kernels' synchronization
(transforms/insert_sync.py) -- runs beside the rest at the cost of a fork (copy-on-write).
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections.abc import Callable
from typing import Any

from ge import background


def can_fork() -> bool:
    """Whether this process may fork safely: `os.fork` exists and no other thread runs (a
    forked copy of another thread's lock may stay locked). The background thread's work on
    weights (ge/background.py) is waited for first: it ends when it has none."""
    background.settle()
    return hasattr(os, "fork") and threading.active_count() == 1


class Forked:
    """`fn()` running in a forked child from construction; `result()` waits for it.

    The child sends ("ok", value) or ("raised", exception) -- an exception that does not
    pickle is sent as ("raised", None). A child that dies or sends nothing gives
    ("lost", None); the caller then does the work itself. With `first`, the child runs
    `first()` before `fn()` and sends its outcome at once: `first_result()` has it while
    `fn()` still runs (the compile takes the kernels' encoding from its verify copy so)."""

    def __init__(self, fn: Callable[[], Any], first: Callable[[], Any] | None = None):
        background.settle()  # (no thread of ours is copied mid-job)
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid:
            os.close(w)
            self.file = os.fdopen(r, "rb")
            self.pending_first = first is not None
            return
        code = 1
        try:  # the child: never returns into the caller
            os.close(r)
            with os.fdopen(w, "wb") as f:
                writer = None
                if first is not None:  # written beside `fn()`: a pipe holds 64 KB until the parent reads
                    writer = threading.Thread(target=_send, args=(f, _outcome(first)))
                    writer.start()
                last = _outcome(fn)
                if writer is not None:
                    writer.join()
                f.write(last)
            code = 0
        finally:
            os._exit(code)

    def first_result(self) -> tuple[str, Any]:
        """The outcome of `first()` (as `result` gives `fn()`'s), waited for."""
        assert self.pending_first, "Forked.first_result: no `first`, or taken already"
        self.pending_first = False
        try:
            return pickle.load(self.file)
        except Exception:  # the child died before sending it (or sent part of it)
            return "lost", None

    def result(self) -> tuple[str, Any]:
        """("ok", value), ("raised", exception or None) or ("lost", None); the child is
        waited for (stopped if reading its pipe is interrupted)."""
        out, done = None, False
        try:
            with self.file as f:
                if self.pending_first:
                    self.first_result()
                try:
                    out = pickle.load(f)
                except Exception:  # the child died, or a truncated pipe
                    out = None
                done = True
        finally:
            if not done:
                os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        return out if status == 0 and out is not None else ("lost", None)

    def stop(self) -> None:
        """The child killed and waited for, its answer dropped (the caller failed first)."""
        self.file.close()
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def _send(f, data: bytes) -> None:
    f.write(data)
    f.flush()


def _outcome(fn: Callable[[], Any]) -> bytes:
    """("ok", fn()) or ("raised", its exception), pickled (an unpicklable value or
    exception as None)."""
    try:
        out: tuple[str, Any] = ("ok", fn())
    except BaseException as e:  # every outcome goes back to the parent
        out = ("raised", e)
    try:
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return pickle.dumps((out[0], None), protocol=pickle.HIGHEST_PROTOCOL)
