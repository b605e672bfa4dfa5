"""A step never outlives relgate: a guardian process, and a tag on every step's processes.

Why not ``PR_SET_PDEATHSIG`` alone: it reaches only the direct child (the shell), not the
processes it starts, and it fires when the *thread* that forked the child ends, not the
process. A subreaper (``PR_SET_CHILD_SUBREAPER``) dies with relgate. So relgate starts, once
per executor, a small guardian in its own session that holds the read end of a pipe: relgate
tells it each step's process group as the step starts and ends; when relgate dies in any way
(a SIGKILL included) the pipe reaches end of file and the guardian ends every group still
registered (SIGTERM, then SIGKILL after a grace) and every process carrying the step's tag.

The tag is an environment variable (``RELGATE_STEP=<token>``) every process of a step
inherits; :func:`tagged` finds the ones still alive, also those that left the process group
with ``setsid``, so they can be reported and stopped. A process that clears its own
environment (``env -i``) and leaves the group is out of reach of both. Only the processes
created since the step began are read (see :func:`fork_mark`), not every process of the machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

__all__ = ["TAG_VAR", "new_tag", "fork_mark", "ring", "tagged", "describe", "kill_pids", "Guardian", "guardian"]

TAG_VAR = "RELGATE_STEP"


def new_tag() -> str:
    return os.urandom(16).hex()  # 32 hex digits, as uuid4().hex; importing uuid cost more than a step


# Which processes a step can have made, without reading every process of the machine after
# every command (≈2–3 µs a process on the 2-core machine; a GPU box lists a thousand or more,
# its kernel threads included). The kernel hands out pids in rising order, wrapping at
# pid_max (32768 on many machines) to the low ones and skipping pids in use, so every process
# made after the step's own (pid P) has a pid in the ring from P up to the last one handed out
# (/proc/loadavg), as long as the allocator did not come round past P again. Between two reads
# of the kernel's count of tasks made (/proc/stat "processes", threads included), it moved
# past at most the new tasks and the pids in use, which are at most the tasks alive at the
# start (/proc/loadavg) and the new ones: while twice the new tasks and the tasks alive at the
# start stay below pid_max, less a margin, the ring holds them all. Otherwise, or when
# anything cannot be read, every process is read.
_RING_MARGIN = 1024  # the pids below 300 the kernel skips on a wrap, tasks being made as it is read


def fork_mark() -> tuple[int, int] | None:
    """The kernel's count of the tasks it made so far and of those alive now, read just before
    a step starts (None where they cannot be read: :func:`tagged` then reads every process)."""
    try:
        if os.readlink("/proc/self") != str(os.getpid()):  # a /proc of another pid namespace
            return None
        return _made(), _loadavg()[1]
    except (OSError, IndexError, ValueError):
        return None


def _made() -> int:
    """How many tasks (processes and threads) the kernel made since it started."""
    with open("/proc/stat", "rb") as fh:
        return int(fh.read().split(b"\nprocesses ", 1)[1].split(None, 1)[0])


def _loadavg() -> tuple[int, int]:
    """The last pid handed out and the number of tasks alive, from /proc/loadavg."""
    with open("/proc/loadavg", "rb") as fh:
        fields = fh.read().split()
    return int(fields[4]), int(fields[3].split(b"/")[1])


def _pid_max() -> int:
    with open("/proc/sys/kernel/pid_max", "rb") as fh:
        return int(fh.read())


def ring(first: int, last: int, *, made: int, alive_before: int, pid_max: int) -> tuple[int, int] | None:
    """The pids the tasks made since a mark can have: ``(first, last)``, from the first pid made
    after the mark up to the last one handed out, wrapping when ``last < first``; None when
    ``made`` tasks since the mark (with ``alive_before`` alive at it) may have taken the
    allocator round past ``first`` again."""
    if made < 0 or 2 * made + alive_before >= pid_max - _RING_MARGIN:
        return None
    return first, last


def _in_ring(pid: int, span: tuple[int, int]) -> bool:
    first, last = span
    return first <= pid <= last if first <= last else pid >= first or pid <= last


def _span_since(since: tuple[tuple[int, int], int] | None) -> tuple[int, int] | None:
    if since is None:
        return None
    (made_before, alive_before), first = since
    try:
        made = _made()
        last, _alive = _loadavg()
        return ring(first, last, made=made - made_before, alive_before=alive_before, pid_max=_pid_max())
    except (OSError, IndexError, ValueError):
        return None


def tagged(tag: str, *, since: tuple[tuple[int, int], int] | None = None) -> list[int]:
    """Live processes (not zombies) whose environment carries ``RELGATE_STEP=tag``; with
    ``since`` (the :func:`fork_mark` read before the step started, and the step's pid), only
    the processes created since are read."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    span = _span_since(since)
    for name in os.listdir("/proc"):  # runs after every command: plain reads, the environment first
        if not name.isdigit() or (span is not None and not _in_ring(int(name), span)):
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
            if needle not in environ or needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            found.append(int(name))
    return found


def describe(pid: int) -> str:
    """``pid 123 (sleep 1000)``: the command line, made printable."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        text = " ".join(a.decode("utf-8", "replace") for a in argv)
    except OSError:
        text = "?"
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return f"pid {pid} ({text[:80]})"


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# The guardian itself: a POSIX shell script (a Python guardian cost ≈15 ms of CPU a run, more
# than everything relgate does around a short step); reads "+ PGID TAG" and "- PGID TAG" lines
# (a later line for a tag replaces the earlier; PGID "-": the step is about to start, its group
# not known yet — a process it makes before relgate learns the group is found by its tag);
# at end of file (relgate is gone) ends what is still registered: each group, then every
# process whose environment carries a registered tag (grep over /proc/*/environ: NUL-separated
# entries, one whole entry matched; a grep without -z first finds the files holding a tag
# anywhere in one call, then reads those one process at a time, not every process of the
# machine through its own pipeline).
# $1 is the grace between SIGTERM and SIGKILL.
_GUARDIAN = r"""
trap '' INT HUP TERM
live=
while read -r op pgid tag; do
  keep=; for e in $live; do [ "${e#*:}" = "$tag" ] || keep="$keep $e"; done; live=$keep
  [ "$op" = + ] && live="$live $pgid:$tag"
done
[ -n "$live" ] || exit 0
send() {
  pats=
  for e in $live; do
    [ "${e%%:*}" = - ] || kill -s "$1" -- "-${e%%:*}" 2>/dev/null
    pats="$pats -e TAG_VAR=${e#*:}"
  done
  if printf 'x\0' | grep -q -z -x x 2>/dev/null; then
    found=$(grep -l -z -x -F $pats /proc/[0-9]*/environ 2>/dev/null)
  else  # a grep without -z (BusyBox): the files holding a tag anywhere, then those entry by entry
    found=$(for f in $(grep -l -F $pats /proc/[0-9]*/environ 2>/dev/null); do
      tr '\0' '\n' < "$f" 2>/dev/null | grep -q -x -F $pats && echo "$f"; done)
  fi
  for f in $found; do
    p=${f#/proc/}
    kill -s "$1" "${p%/environ}" 2>/dev/null
  done
}
send TERM
sleep "$1"
send KILL
""".replace("TAG_VAR", TAG_VAR)


class Guardian:
    """The guardian of a process's steps; started on first use (see :func:`guardian`)."""

    def __init__(self, grace: float) -> None:
        self._grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                if self._proc is not None and self._proc.stdin is not None:
                    self._proc.stdin.close()
                self._proc = subprocess.Popen(
                    ["/bin/sh", "-c", _GUARDIAN, "relgate-guardian", f"{self._grace:.3f}"], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                    env={k: v for k, v in os.environ.items() if k != TAG_VAR})  # not a process of a step
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(line.encode() + b"\n")
                self._proc.stdin.flush()
            except OSError:  # the guardian was killed: the next step starts a new one
                pass

    def expect(self, tag: str) -> None:
        """A step with ``tag`` is about to start: from now on, should relgate end before
        :meth:`watch`, every process carrying the tag is ended (the child of a fork can run,
        and escape its group, before its parent learns its pid)."""
        self._send(f"+ - {tag}")

    def watch(self, pgid: int, tag: str) -> None:
        self._send(f"+ {pgid} {tag}")

    def release(self, pgid: int | None, tag: str) -> None:
        self._send(f"- {'-' if pgid is None else pgid} {tag}")


_SHARED: list[Guardian] = []
_SHARED_LOCK = threading.Lock()


def guardian(grace: float) -> Guardian:
    """The one guardian of this process: one small process per relgate invocation, however
    many executors it makes. Its pipe closes when this process ends, which is its signal."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(Guardian(grace))
        return _SHARED[0]
