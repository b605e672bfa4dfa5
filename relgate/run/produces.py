"""What a build must leave behind: ``produces = ["ds4", "build/lib*.so"]``.

Each entry is a path or glob relative to the step's working folder; it must match at least
one file, and every file it matches must have been written during the step: modified after
the step's start and not after its end (a file the step did not write is not proof that the
step built it, and a committed file whose modification time lies in the future is no newer
than the step: it was not written by it). Plain ``make`` on a checkout whose
default goal only prints help exits 0 and builds nothing: this is what catches it.

A build step that declares no ``produces`` must still have written some file under its
folder during the step (:func:`wrote_nothing`); one that wrote none is ``fail: built nothing``.
On another machine (an SSH or Slurm host) the same question is asked there, through the step's
own executor and on that file system's clock: a marker file made in the checkout before the
build (:data:`MARK_START`), then a ``find -newer`` of it after (:func:`wrote_since`), the marker
removed; both commands are in the step's log. A marker that could not be made or read is an
``error`` (cannot tell), never a pass.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MARK_START", "MARKER_PREFIX", "missing_products", "missing_since", "products_since", "wrote_nothing",
           "wrote_since"]

MARKER_PREFIX = ".relgate-build-start."
#: made in the build's folder on the host, before the build: its path is the command's last line
MARK_START = f"mktemp ./{MARKER_PREFIX}XXXXXX"


def wrote_since(marker: str) -> str:
    """The shell command that prints the first file under the folder (``.git`` and markers left
    out) modified after ``marker``, then removes the marker: no output, nothing written."""
    quoted = shlex.quote(marker)
    return (f"find . -name .git -prune -o -type f -newer {quoted} ! -name '{MARKER_PREFIX}*' -print | head -n 1; "
            f"rm -f {quoted}")


def missing_products(cwd: Path, patterns: Sequence[str], *, since_ns: int, until_ns: int | None = None) -> str | None:
    """Why the step did not produce what it must (None when it did). ``since_ns`` is the
    step's start on the file system's own clock (the mtime of a file created then),
    ``until_ns`` its end (None: now)."""
    import glob  # a step that declares products only
    import time

    until = (time.time_ns() if until_ns is None else until_ns) + _SLACK_NS
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, root_dir=cwd, recursive=True))
        files = [m for m in matches if os.path.isfile(os.path.join(cwd, m))]
        if not files:
            return f"produced nothing matching {pattern}" + (f" ({matches[0]} is not a file)" if matches else "")
        mtimes = {m: os.stat(os.path.join(cwd, m)).st_mtime_ns for m in files}
        stale = [m for m in files if mtimes[m] < since_ns]
        if stale:
            more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
            return f"{stale[0]}{more} older than the step: {pattern} was not rebuilt"
        future = [m for m in files if mtimes[m] > until]
        if future:
            more = f" and {len(future) - 1} more" if len(future) > 1 else ""
            return (f"not produced: {future[0]}{more} modified after the step ended (a time in the future), "
                    f"so not written by it: {pattern} was not rebuilt")
    return None


# The products' check on another machine: each pattern is expanded there by the shell itself
# (passed as an argument and expanded unquoted with IFS empty: globbed, never split, never
# evaluated), each match must be a file newer than the marker; the marker is removed.
_PRODUCTS_SCRIPT = ('m=$1; shift; IFS=; for p in "$@"; do found=0; for f in $p; do [ -f "$f" ] || continue; '
                    'found=1; [ "$f" -nt "$m" ] || printf "stale %s\\t%s\\n" "$p" "$f"; done; '
                    '[ $found = 1 ] || printf "missing %s\\n" "$p"; done; rm -f "$m"')


def products_since(marker: str, patterns: Sequence[str]) -> str | None:
    """The shell command that checks ``patterns`` against ``marker`` on another machine (None: a
    pattern uses ``**``, which the shell there cannot expand as relgate does here)."""
    if any("**" in p for p in patterns):
        return None
    return shlex.join(["sh", "-c", _PRODUCTS_SCRIPT, "sh", marker, *patterns])


def missing_since(output: str, patterns: Sequence[str]) -> str | None:
    """Why the step did not produce what it must, from :func:`products_since`'s output (None: it did)."""
    for line in output.splitlines():
        if line.startswith("missing "):
            return f"produced nothing matching {line[len('missing '):]}"
        if line.startswith("stale ") and "\t" in line:
            pattern, name = line[len("stale "):].split("\t", 1)
            return f"{name} older than the step: {pattern} was not rebuilt"
    return None


_SLACK_NS = 1_000_000_000  # a file system whose clock runs a little ahead of this one (NFS) still counts


_WALK_LIMIT = 500_000  # entries looked at before the answer is "cannot tell" (never "built nothing")


def wrote_nothing(root: Path, *, since_ns: int, exclude: Sequence[Path] = ()) -> bool:
    """Whether no file under ``root`` (``.git`` and ``exclude`` left out: the ledger's own
    logs) was modified at or after ``since_ns``. Stops at the first such file; a tree too big
    to walk, or one that cannot be read, is never called empty-handed."""
    skip = {os.path.realpath(p) for p in exclude}
    stack = [os.fspath(root)]
    seen = 0
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > _WALK_LIMIT:
                        return False
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name != ".git" and os.path.realpath(entry.path) not in skip:
                                stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False) and \
                                entry.stat(follow_symlinks=False).st_mtime_ns >= since_ns:
                            return False
                    except OSError:
                        continue
        except OSError:
            return False
    return True
