"""``relgate init --check``: the repository read again (as ``init`` reads it, by the kind's
adapter) and compared with its manifests, one line per drift — a new target or feature, a lane
row for a removed target, a new Makefile target or one a manifest runs that is gone (each kind
says what moved: ``ProjectKind.drift``), a version that moved. For CI: the CLI exits 1 when
there is any.
"""

from __future__ import annotations

from pathlib import Path

from relgate.core.schema import display_path, read_toml
from relgate.kinds.found import DriftPlace
from relgate.kinds.registry import kind_of

__all__ = ["drift"]


def drift(root: Path, manifests: Path, *, kind: str | None = None) -> list[str]:
    """One line per difference between the repository and its manifests (empty: none)."""
    from relgate.manifest.lanes import read_lanes_file
    from relgate.manifest.specs import parse_project

    mdir = Path(manifests).resolve()
    project = parse_project(read_toml(mdir / "project.toml"), path=mdir / "project.toml")
    adapter = kind_of(kind or project.kind)
    lanes_path = project.lanes or (mdir / "lanes.toml")
    rows = read_lanes_file(lanes_path).assignments if lanes_path.is_file() else {}
    found = adapter.discover(project.root)
    out = adapter.drift(found, DriftPlace(root=project.root, manifests=mdir, lanes_path=lanes_path, rows=rows,
                                          project_lanes=project.lanes))
    version, source = found.version, found.version_source or found.source
    if project.version and version and version != project.version:
        out.append(f"version {version} in {source}, {project.version} in {display_path(mdir / 'project.toml')}")
    return out
