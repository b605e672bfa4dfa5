"""What recording a batch needs from the workspace, below both ways of recording one
(``relgate measure add`` in measurements.py, the measuring runs in collect.py): the named
measure's spec and the project folder's source hash at a commit; and a row's label by the
spec's key columns (the tables, the plots, the report and the page name rows alike)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.schema import did_you_mean, display_path
from relgate.manifest.measures import MeasureSpec, QualitySpec
from relgate.manifest.workspace import Workspace

__all__ = ["Spec", "spec_of", "source_hash", "row_label"]

Spec = MeasureSpec | QualitySpec


def spec_of(ws: Workspace, name: str) -> Spec:
    m = ws.measurements
    if m is None:
        raise InputError(f"{display_path(ws.manifests_dir)}: no measurements.toml")
    spec = m.measures.get(name) or m.quality.get(name)
    if spec is None:
        names = [*m.measures, *m.quality]
        raise InputError(f"{display_path(m.source)}: no measure.{name} or quality.{name}{did_you_mean(name, names)}")
    return spec


def source_hash(toplevel: Path, commit: str, root: Path) -> str | None:
    """The git tree hash of the project folder at ``commit`` (same sources, same hash)."""
    rel = root.resolve().relative_to(toplevel.resolve()).as_posix() if root.resolve() != toplevel.resolve() else ""
    done = subprocess.run(["git", "rev-parse", f"{commit}:{rel}"], cwd=toplevel, capture_output=True, text=True)
    return done.stdout.strip()[:12] or None if done.returncode == 0 else None


def row_label(key: Sequence[str], columns: Sequence[str]) -> str:
    if len(key) == 1 and len(columns) >= 1:  # one key column, the usual case: no join
        return f"{columns[0]}={key[0]}"
    return " ".join(f"{c}={v}" for c, v in zip(columns, key)) or "(one row)"
