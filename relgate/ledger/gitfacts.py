"""Git facts about the candidate: commit, branch, whether the tree is dirty."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from relgate.core.errors import InputError

__all__ = ["GitFacts", "read_git_facts"]


@dataclass(frozen=True, kw_only=True)
class GitFacts:
    commit: str
    branch: str | None  # None on a detached HEAD
    dirty: bool  # modified, staged or untracked (not ignored) files
    toplevel: Path

    @property
    def short(self) -> str:
        return self.commit[:12]


def read_git_facts(path: Path) -> GitFacts:
    """Facts of the repository that holds ``path``; a path outside git is bad input."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InputError(f"{path}: not inside a git repository (relgate qualifies commits)") from None
    try:
        with repo:
            try:
                commit = repo.head.commit.hexsha
            except ValueError:
                raise InputError(f"{repo.working_tree_dir}: the repository has no commit yet") from None
            branch = None if repo.head.is_detached else repo.active_branch.name
            # One `git status` answers modified, staged and untracked at once (is_dirty() runs three).
            dirty = bool(repo.git.status("--porcelain", "--untracked-files=normal").strip())
            return GitFacts(commit=commit, branch=branch, dirty=dirty, toplevel=Path(repo.working_tree_dir or path))
    except git.GitCommandError as exc:
        raise InputError(f"{path}: git failed: {exc.stderr.strip() or exc}") from None
