"""What a build must leave behind: ``produces = ["ds4", "build/lib*.so"]``.

Each entry is a path or glob relative to the step's working folder; it must match at least
one file, and every file it matches must be newer than the step's start (a file the step
did not write is not proof that the step built it). Plain ``make`` on a checkout whose
default goal only prints help exits 0 and builds nothing: this is what catches it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["missing_products"]


def missing_products(cwd: Path, patterns: Sequence[str], *, since_ns: int) -> str | None:
    """Why the step did not produce what it must (None when it did). ``since_ns`` is the
    step's start on the file system's own clock (the mtime of a file created then)."""
    import glob  # a step that declares products only

    for pattern in patterns:
        matches = sorted(glob.glob(pattern, root_dir=cwd, recursive=True))
        files = [m for m in matches if os.path.isfile(os.path.join(cwd, m))]
        if not files:
            return f"produced nothing matching {pattern}" + (f" ({matches[0]} is not a file)" if matches else "")
        stale = [m for m in files if os.stat(os.path.join(cwd, m)).st_mtime_ns < since_ns]
        if stale:
            more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
            return f"{stale[0]}{more} older than the step: {pattern} was not rebuilt"
    return None
