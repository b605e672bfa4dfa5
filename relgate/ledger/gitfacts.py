"""Git facts about the candidate: commit, branch, whether the tree is dirty.

Read with plain ``git``: ``rev-parse`` for the toplevel, branch and commit, and one
``status`` for dirtiness, the two at once (importing gitpython alone cost more than
everything relgate does around a step).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record

__all__ = ["GitFacts", "read_git_facts", "start_git_facts", "tree_is_dirty", "resolve_commit", "git_ignores"]


@record
class GitFacts:
    commit: str
    branch: str | None  # None on a detached HEAD
    dirty: bool  # modified, staged or untracked (not ignored) files
    toplevel: Path

    @property
    def short(self) -> str:
        return self.commit[:12]


_STATUS = ("status", "--porcelain", "--untracked-files=normal")


def _start(path: Path, *args: str) -> subprocess.Popen[str]:
    try:
        return subprocess.Popen(["git", "-C", str(path), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise InputError(f"{path}: git is not on PATH (relgate qualifies commits)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot run git: {exc.strerror or exc}") from None


def _git(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = _start(path, *args)
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _dirty(toplevel: Path, done: subprocess.CompletedProcess[str]) -> bool:
    if done.returncode != 0:
        raise InputError(f"{toplevel}: git status failed: {done.stderr.strip()}")
    return bool(done.stdout.strip())


def tree_is_dirty(toplevel: Path) -> bool:
    """Modified, staged or untracked (not ignored) files, from one ``git status``."""
    return _dirty(toplevel, _git(toplevel, *_STATUS))


def read_git_facts(path: Path) -> GitFacts:
    """Facts of the repository that holds ``path``; a path outside git is bad input."""
    return start_git_facts(path)()


def start_git_facts(path: Path) -> Callable[[], GitFacts]:
    """Start both gits for :func:`read_git_facts` and return what waits for them (and raises
    its errors, also one of starting them: they belong to the first use of the facts)."""
    if not Path(path).exists():
        return _raise(InputError(f"{path}: not inside a git repository (relgate qualifies commits)"))
    # The status runs beside the rev-parse: from any folder of the work tree it covers all
    # of it (porcelain paths are the repository's), so it need not wait for the toplevel.
    try:
        status = _start(path, *_STATUS)
    except InputError as exc:
        return _raise(exc)
    try:
        rev = _start(path, "rev-parse", "--show-toplevel", "HEAD", "--abbrev-ref", "HEAD")
    except InputError as exc:
        status.communicate()
        return _raise(exc)
    return lambda: _facts(path, status, rev)


def _raise(exc: InputError) -> Callable[[], GitFacts]:
    def fail() -> GitFacts:
        raise exc

    return fail


def _facts(path: Path, status: subprocess.Popen[str], rev: subprocess.Popen[str]) -> GitFacts:
    try:
        rev_out, rev_err = rev.communicate()
    finally:
        out, err = status.communicate()
    lines = rev_out.splitlines()
    if rev.returncode != 0 or len(lines) != 3:
        err = rev_err.strip()
        if "not a git repository" in err:
            raise InputError(f"{path}: not inside a git repository (relgate qualifies commits)")
        if "unknown revision" in err or "ambiguous argument 'HEAD'" in err:
            top = lines[0] if lines else path
            raise InputError(f"{top}: the repository has no commit yet")
        raise InputError(f"{path}: git failed: {err or 'exit ' + str(rev.returncode)}")
    toplevel, commit, branch = lines
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise InputError(f"{path}: git rev-parse gave {commit!r}, not a commit")
    dirty = _dirty(Path(toplevel), subprocess.CompletedProcess(status.args, status.returncode, out, err))
    return GitFacts(commit=commit, branch=None if branch == "HEAD" else branch, dirty=dirty, toplevel=Path(toplevel))


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
