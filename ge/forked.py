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


def can_fork() -> bool:
    """Whether this process may fork safely: `os.fork` exists and no other thread runs (a
    forked copy of another thread's lock may stay locked)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Forked:
    """`fn()` running in a forked child from construction; `result()` waits for it.

    The child sends ("ok", value) or ("raised", exception) -- an exception that does not
    pickle is sent as ("raised", None). A child that dies or sends nothing gives
    ("lost", None); the caller then does the work itself."""

    def __init__(self, fn: Callable[[], Any]):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid:
            os.close(w)
            self.fd = r
            return
        code = 1
        try:  # the child: never returns into the caller
            os.close(r)
            try:
                out: tuple[str, Any] = ("ok", fn())
            except BaseException as e:  # every outcome goes back to the parent
                out = ("raised", e)
            with os.fdopen(w, "wb") as f:
                try:
                    data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # an unpicklable value or exception
                    data = pickle.dumps((out[0], None), protocol=pickle.HIGHEST_PROTOCOL)
                f.write(data)
            code = 0
        finally:
            os._exit(code)

    def result(self) -> tuple[str, Any]:
        """("ok", value), ("raised", exception or None) or ("lost", None); the child is
        waited for (stopped if reading its pipe is interrupted)."""
        data = None
        try:
            with os.fdopen(self.fd, "rb") as f:
                data = f.read()
        finally:
            if data is None:
                os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        if status != 0 or not data:
            return "lost", None
        try:
            return pickle.loads(data)
        except Exception:  # a truncated pipe
            return "lost", None

    def stop(self) -> None:
        """The child killed and waited for, its answer dropped (the caller failed first)."""
        os.close(self.fd)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
