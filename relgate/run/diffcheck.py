"""``git diff --check`` over what the release adds: from the previous release tag (or the
first commit) to the working tree, so what was committed since the last release is checked
as well as what is not committed yet (against ``HEAD`` alone a clean tree checks nothing).

The base is ``[host] diff_base`` when the manifest sets one; otherwise the nearest tag
reachable from ``HEAD`` that reads as a release (``v1.2.3``, ``1.2``, ``name-1.2.0``), not
counting a tag on ``HEAD`` itself (the release being made); without one, the first commit.
The step's log says which base it took and how many commits that covers.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from relgate.run.outcomes import StepFailed

__all__ = ["diff_base", "diff_check_action", "RELEASE_TAG"]

#: a tag that names a release: a version, optionally after "v" or "NAME-"
RELEASE_TAG = re.compile(r"^(?:[A-Za-z][\w.-]*?[-_])?v?\d+(?:\.\d+)*(?:[-.+]?[0-9A-Za-z.]+)?$")


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)


def diff_base(root: Path) -> tuple[str, str]:
    """(the base commit-ish, what it is) for the working tree at ``root``."""
    at_head = set(_git(root, "tag", "--points-at", "HEAD").stdout.split())
    listed = _git(root, "tag", "--merged", "HEAD", "--sort=-creatordate", "--format=%(refname:strip=2)")
    for tag in listed.stdout.split():
        if tag in at_head or not RELEASE_TAG.match(tag):
            continue
        return f"refs/tags/{tag}", f"the previous release tag {tag}"
    roots = _git(root, "rev-list", "--max-parents=0", "HEAD").stdout.split()
    if not roots:
        raise StepFailed("git rev-list finds no first commit (no commit yet?)")
    return roots[-1], f"the first commit {roots[-1][:12]} (no release tag yet)"


def diff_check_action(root: Path, explicit: str | None) -> Callable[[Callable[[str], None]], int]:
    """The in-process step: resolve the base, run ``git diff --check BASE --``, judge it."""

    def action(write: Callable[[str], None]) -> int:
        base, what = (explicit, f"{explicit} ([host] diff_base)") if explicit else diff_base(root)
        count = _git(root, "rev-list", "--count", f"{base}..HEAD").stdout.strip() or "?"
        write(f"git diff --check {base} -- : {what} to the working tree ({count} commit"
              f"{'' if count == '1' else 's'} since, plus uncommitted changes)")
        done = _git(root, "diff", "--check", base, "--")
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line]
        for line in lines:
            write(line)
        if done.returncode == 0:
            write("clean")
            return 0
        found = [line for line in lines if re.match(r"^\S.*?:\d+: ", line)]
        if found:
            raise StepFailed(f"{len(found)} whitespace error{'s' if len(found) != 1 else ''} since {what}, "
                             f"first {found[0]}")
        raise StepFailed(f"git diff --check {base} failed (exit {done.returncode}): "
                         f"{(lines or ['(no output)'])[-1][:200]}")

    return action
