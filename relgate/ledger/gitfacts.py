"""Git facts about the candidate: commit, branch, whether the tree is dirty.

Read with plain ``git``: ``rev-parse`` for the toplevel, branch and commit, and one
``status`` for dirtiness, the two at once (importing gitpython alone cost more than
everything relgate does around a step).
"""

from __future__ import annotations

import os
import stat
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
# One git for all the facts: HEAD, the branch and every change, from one status.
_STATUS_BRANCH = ("status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=normal")
# What moves the work tree away from the folder a walk up finds `.git` in (then git says where).
_MOVED_BY = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")


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
    """Start the git(s) for :func:`read_git_facts` and return what waits for them (and raises
    its errors, also one of starting them: they belong to the first use of the facts).

    Where the work tree's root is plainly where a walk up from ``path`` finds ``.git`` (see
    :func:`_plain_toplevel`), one ``git status --porcelain=v2 --branch`` says everything; else,
    or when that status fails (an old git, an odd repository), ``rev-parse`` and a status do,
    and their errors are the ones reported."""
    if not Path(path).exists():
        return _raise(InputError(f"{path}: not inside a git repository (relgate qualifies commits)"))
    top = _plain_toplevel(Path(path))
    if top is not None:
        try:
            one = _start(path, *_STATUS_BRANCH)
        except InputError as exc:
            return _raise(exc)
        return lambda: _facts_of_status(path, top, one)
    return _start_two(path)


def _start_two(path: Path) -> Callable[[], GitFacts]:
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


def _plain_toplevel(path: Path) -> Path | None:
    """The work tree's root as git finds it from ``path``, when it is plainly found: the
    nearest folder from ``path`` up that holds ``.git`` (a file, as in a linked worktree or a
    submodule, or a folder without ``worktree`` in its config), and no ``GIT_*`` variable
    that moves it. None: git is asked (``rev-parse --show-toplevel``)."""
    if any(name in os.environ for name in _MOVED_BY):
        return None
    here = path.resolve()
    for folder in (here, *here.parents):
        dotgit = folder / ".git"
        try:
            is_dir = stat.S_ISDIR(dotgit.stat().st_mode)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if not is_dir:
            return folder
        try:
            config = (dotgit / "config").read_bytes()
        except OSError:
            return None
        return None if b"worktree" in config.lower() else folder
    return None


def _facts_of_status(path: Path, top: Path, proc: subprocess.Popen[str]) -> GitFacts:
    out, _err = proc.communicate()
    if proc.returncode != 0:  # the two gits say what is wrong, in their words
        return _start_two(path)()
    commit = branch = None
    dirty = False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            commit = line[len("# branch.oid "):]
        elif line.startswith("# branch.head "):
            branch = line[len("# branch.head "):]
        elif not line.startswith("# "):
            dirty = True  # a changed, unmerged or untracked entry
    if commit == "(initial)":
        raise InputError(f"{top}: the repository has no commit yet")
    if commit is None or branch is None:
        return _start_two(path)()
    _check_commit(path, commit)
    return GitFacts(commit=commit, branch=None if branch == "(detached)" else branch, dirty=dirty, toplevel=top)


def _check_commit(path: Path, commit: str) -> None:
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise InputError(f"{path}: git rev-parse gave {commit!r}, not a commit")


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
    _check_commit(path, commit)
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
