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
environment (``env -i``) and leaves the group is out of reach of both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

__all__ = ["TAG_VAR", "new_tag", "tagged", "describe", "kill_pids", "Guardian", "guardian"]

TAG_VAR = "RELGATE_STEP"


def new_tag() -> str:
    return os.urandom(16).hex()  # 32 hex digits, as uuid4().hex; importing uuid cost more than a step


def tagged(tag: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``RELGATE_STEP=tag``."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    for name in os.listdir("/proc"):  # runs after every command: plain reads, the environment first
        if not name.isdigit():
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
# than everything relgate does around a short step); reads "+ PGID TAG" and "- PGID" lines;
# at end of file (relgate is gone) ends what is still registered: each group, then every
# process whose environment carries a registered tag (grep over /proc/*/environ: NUL-separated
# entries, one whole entry matched; a grep without -z reads them one process at a time).
# $1 is the grace between SIGTERM and SIGKILL.
_GUARDIAN = r"""
trap '' INT HUP TERM
live=
while read -r op pgid tag; do
  case $op in
    +) live="$live $pgid:$tag" ;;
    -) keep=; for e in $live; do [ "${e%%:*}" = "$pgid" ] || keep="$keep $e"; done; live=$keep ;;
  esac
done
[ -n "$live" ] || exit 0
send() {
  pats=
  for e in $live; do
    kill -s "$1" -- "-${e%%:*}" 2>/dev/null
    pats="$pats -e TAG_VAR=${e#*:}"
  done
  if printf 'x\0' | grep -q -z -x x 2>/dev/null; then
    found=$(grep -l -z -x -F $pats /proc/[0-9]*/environ 2>/dev/null)
  else  # a grep without -z (BusyBox): one process at a time
    found=$(for f in /proc/[0-9]*/environ; do
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

    def watch(self, pgid: int, tag: str) -> None:
        self._send(f"+ {pgid} {tag}")

    def release(self, pgid: int) -> None:
        self._send(f"- {pgid}")


_SHARED: list[Guardian] = []
_SHARED_LOCK = threading.Lock()


def guardian(grace: float) -> Guardian:
    """The one guardian of this process: one small process per relgate invocation, however
    many executors it makes. Its pipe closes when this process ends, which is its signal."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(Guardian(grace))
        return _SHARED[0]
