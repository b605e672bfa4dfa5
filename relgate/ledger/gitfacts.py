"""Git facts about the candidate: commit, branch, whether the tree is dirty.

Read with plain ``git``: ``rev-parse`` for the toplevel, branch and commit, one ``status``
for dirtiness (importing gitpython alone cost more than everything relgate does around a
step).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record

__all__ = ["GitFacts", "read_git_facts", "tree_is_dirty", "resolve_commit", "git_ignores"]


@record
class GitFacts:
    commit: str
    branch: str | None  # None on a detached HEAD
    dirty: bool  # modified, staged or untracked (not ignored) files
    toplevel: Path

    @property
    def short(self) -> str:
        return self.commit[:12]


def _git(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError(f"{path}: git is not on PATH (relgate qualifies commits)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot run git: {exc.strerror or exc}") from None


def tree_is_dirty(toplevel: Path) -> bool:
    """Modified, staged or untracked (not ignored) files, from one ``git status``."""
    done = _git(toplevel, "status", "--porcelain", "--untracked-files=normal")
    if done.returncode != 0:
        raise InputError(f"{toplevel}: git status failed: {done.stderr.strip()}")
    return bool(done.stdout.strip())


def read_git_facts(path: Path) -> GitFacts:
    """Facts of the repository that holds ``path``; a path outside git is bad input."""
    if not Path(path).exists():
        raise InputError(f"{path}: not inside a git repository (relgate qualifies commits)")
    done = _git(path, "rev-parse", "--show-toplevel", "HEAD", "--abbrev-ref", "HEAD")
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 3:
        err = done.stderr.strip()
        if "not a git repository" in err:
            raise InputError(f"{path}: not inside a git repository (relgate qualifies commits)")
        if "unknown revision" in err or "ambiguous argument 'HEAD'" in err:
            top = lines[0] if lines else path
            raise InputError(f"{top}: the repository has no commit yet")
        raise InputError(f"{path}: git failed: {err or 'exit ' + str(done.returncode)}")
    toplevel, commit, branch = lines
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise InputError(f"{path}: git rev-parse gave {commit!r}, not a commit")
    return GitFacts(commit=commit, branch=None if branch == "HEAD" else branch, dirty=tree_is_dirty(Path(toplevel)),
                    toplevel=Path(toplevel))


def resolve_commit(path: Path, ref: str) -> str:
    """The full sha ``ref`` (a short sha, a branch, a tag) names in the repository holding
    ``path``; anything that names no commit is bad input."""
    done = _git(path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    sha = done.stdout.strip()
    if done.returncode != 0 or len(sha) != 40:
        raise InputError(f"--commit {ref}: names no commit in {path}")
    return sha


def git_ignores(toplevel: Path, path: Path) -> bool:
    """Whether git ignores ``path`` in the work tree at ``toplevel`` (``git check-ignore``)."""
    return _git(toplevel, "check-ignore", "-q", "--", str(path)).returncode == 0
