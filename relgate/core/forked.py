"""Pure-Python work spread over the machine's cores: a list cut into contiguous chunks, each
chunk but the first computed in a forked child, the answers brought back in order.

Only where a fork is safe and cheap: Linux, and no other thread running in this process
(a child gets a copy of one thread only). Elsewhere, and for short lists, everything runs
here. A child that fails (an exception, a signal) costs nothing but time: its chunk is
computed again here, where an error surfaces as it would have without the children.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["map_chunks", "workers_for"]

T = TypeVar("T")
R = TypeVar("R")

_MAX_WORKERS = 8
_STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def workers_for(items: int, min_per_worker: int) -> int:
    """How many processes (this one included) ``items`` are worth: one per ``min_per_worker``
    items, at most one per core this process may run on (and eight)."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except OSError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_WORKERS, items // max(1, min_per_worker)))


def map_chunks(fn: Callable[[Sequence[T]], list[R]], items: Sequence[T], *, min_per_worker: int) -> list[R]:
    """``fn(items)``, computed as ``fn`` of contiguous chunks on up to one process per core.
    ``fn`` must be pure (its answer depends on its chunk alone) and its answer picklable."""
    workers = workers_for(len(items), min_per_worker)
    if workers < 2:
        return fn(items)
    bounds = [len(items) * w // workers for w in range(workers + 1)]
    children: list[tuple[int, int, int]] = []  # (pid, read end of its pipe, chunk)
    try:
        for w in range(1, workers):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: compute, send, leave without running anything of the parent's
                _child(fn, items[bounds[w] : bounds[w + 1]], read_end, write_end)
            os.close(write_end)
            children.append((pid, read_end, w))
        out = fn(items[bounds[0] : bounds[1]])
        while children:
            pid, read_end, w = children[0]
            with os.fdopen(read_end, "rb", closefd=False) as answer:
                data = answer.read()
            # Reaped and struck off together (a stop in between would kill a pid no longer ours);
            # the child closed its pipe, so it is ending and the wait is short.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                _, status = os.waitpid(pid, 0)
                children.pop(0)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
            os.close(read_end)
            part = pickle.loads(data) if status == 0 and data else None  # noqa: S301 (our own child's)
            out.extend(fn(items[bounds[w] : bounds[w + 1]]) if part is None else part)
        return out
    finally:
        for pid, read_end, _ in children:  # this process failed or was stopped: end its children
            try:
                os.close(read_end)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except ProcessLookupError:
                pass


def _child(fn: Callable[[Sequence[T]], list[R]], chunk: Sequence[T], read_end: int, write_end: int) -> None:
    code = 1
    try:
        os.close(read_end)
        for sig in _STOPS:  # the parent's handlers are not ours
            signal.signal(sig, signal.SIG_DFL)
        data = pickle.dumps(fn(chunk), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)
