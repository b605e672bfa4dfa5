"""The candidate: HEAD, and the commits whose evidence stands for it.

Evidence for another commit, or from a dirty tree, never counts. A commit that differs
from HEAD only in the declared release-notes files (CHANGELOG.md) is the same tree, so
the changelog section can be committed after qualification.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from relgate.core.record import record
from relgate.ledger.gitfacts import GitFacts

__all__ = ["Candidate", "candidate_of", "changed_files"]


@record
class Candidate:
    commit: str
    dirty: bool
    same_tree: tuple[str, ...]  # commits that count for this one (itself first)
    notes: tuple[str, ...]  # the release-notes files, relative to the repository's top level

    def counts(self, commit: str | None, dirty: bool) -> bool:
        return commit in self.same_tree and not dirty


def changed_files(toplevel: Path, a: str, b: str) -> list[str] | None:
    """Paths that differ between two commits (None: ``a`` is not a commit of this repository)."""
    done = subprocess.run(["git", "diff", "--name-only", "--no-renames", a, b, "--"], cwd=toplevel,
                          capture_output=True, text=True)
    return None if done.returncode != 0 else [p for p in done.stdout.splitlines() if p]


def candidate_of(facts: GitFacts, *, project_root: Path, notes: Sequence[str], known: Iterable[str]) -> Candidate:
    """``known``: the commits the ledger holds for this project (each checked once with git)."""
    top = Path(facts.toplevel).resolve()
    notes_top = []
    for note in notes:
        path = (Path(project_root) / note).resolve()
        notes_top.append(str(path.relative_to(top)) if path.is_relative_to(top) else str(path))
    same = [facts.commit]
    for commit in sorted(set(known) - {facts.commit}):
        changed = changed_files(top, commit, facts.commit)
        if changed is not None and changed and all(p in notes_top for p in changed):
            same.append(commit)
    return Candidate(commit=facts.commit, dirty=facts.dirty, same_tree=tuple(same), notes=tuple(notes_top))
