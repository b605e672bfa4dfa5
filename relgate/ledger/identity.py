"""Which project a ledger row belongs to.

One repository may hold several projects (the bundled examples do), and they share
commits; a row is only ever compared with rows of the same project. The identity is the
project's name, its root relative to the repository's top level, and the manifest folder
relative to it (a folder outside the repository keeps its absolute path). It is part of
every run, step, evidence index row and baseline, and of every reuse key.
"""

from __future__ import annotations

import os
from pathlib import Path

from relgate.core.record import record
from relgate.ledger.gitfacts import GitFacts
from relgate.manifest.workspace import Workspace

__all__ = ["ProjectIdentity", "project_identity"]

_SEP = "\x1f"  # never in a name or a path a manifest can hold


@record
class ProjectIdentity:
    name: str
    root: str  # relative to the repository's top level ("." at the top); absolute when outside it
    manifests: str  # the manifest folder, relative to the top level; absolute when outside it

    @property
    def key(self) -> str:
        """The stored form: one column, compared for equality."""
        return self.name_prefix(self.name) + _SEP.join((self.root, self.manifests))

    @classmethod
    def from_key(cls, key: str | None) -> "ProjectIdentity | None":
        """The identity a row carries; None for rows written before projects were recorded."""
        if not key or key.count(_SEP) != 2:
            return None
        name, root, manifests = key.split(_SEP)
        return cls(name=name, root=root, manifests=manifests)

    @staticmethod
    def name_prefix(name: str) -> str:
        """What every key of a project named ``name`` starts with."""
        return name + _SEP

    def describe(self) -> str:
        return f"{self.name} ({self.root}, manifests {self.manifests})"


def _inside(path: Path, top: Path) -> str:
    path, top = Path(os.path.realpath(path)), Path(os.path.realpath(top))
    try:
        return path.relative_to(top).as_posix() or "."
    except ValueError:
        return str(path)


def project_identity(ws: Workspace, facts: GitFacts) -> ProjectIdentity:
    """The identity of the workspace's project in the repository ``facts`` describe."""
    return ProjectIdentity(name=ws.project.name, root=_inside(ws.project.root, facts.toplevel),
                           manifests=_inside(ws.manifests_dir, facts.toplevel))
