"""A report written into the project's tree makes the tree dirty: every later session's
records are then marked dirty and back no sign-off. relgate warns when a report path lies
inside the repository and git does not ignore it."""

from __future__ import annotations

import os
from pathlib import Path

from relgate.core.schema import display_path
from relgate.ledger.gitfacts import git_ignores

__all__ = ["report_inside_tree"]


def report_inside_tree(path: Path, toplevel: Path) -> str | None:
    """A warning when ``path`` lies inside the work tree at ``toplevel`` and is not ignored."""
    target = Path(os.path.realpath(path))
    top = Path(os.path.realpath(toplevel))
    if target != top and top not in target.parents:
        return None
    if git_ignores(top, target):
        return None
    return (f"warning: {display_path(path)} lies inside the project's tree ({display_path(top)}) and git does not "
            "ignore it: every later session's records are marked dirty; write reports outside the tree "
            "(e.g. --junit ../reports/{session}.xml) or add the folder to .gitignore")
