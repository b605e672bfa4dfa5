"""``relgate init --check``: the repository read again (as ``init`` reads it) and compared
with its manifests, one line per drift — a new target or feature in Cargo.toml, a lane row
for a removed target, a new Makefile target or one a manifest runs that is gone, a version
that moved. For CI: the CLI exits 1 when there is any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from relgate.kinds.base import Found
from relgate.kinds.cargo import CARGO
from relgate.kinds.make import MAKE
from relgate.kinds.python import PYTHON
from relgate.kinds.registry import kind_of
from relgate.manifest.discover import read_cargo, read_make, read_python
from relgate.core.schema import display_path, read_toml

if TYPE_CHECKING:
    from relgate.manifest.specs import ProjectSpec

__all__ = ["drift"]

_MAKE_WORD = re.compile(r"\bmake\s+((?:[A-Za-z0-9][\w.=-]*[ \t]*)+)")


def drift(root: Path, manifests: Path, *, kind: str | None = None) -> list[str]:
    """One line per difference between the repository and its manifests (empty: none)."""
    from relgate.manifest.lanes import read_lanes_file
    from relgate.manifest.specs import parse_project

    mdir = Path(manifests).resolve()
    project = parse_project(read_toml(mdir / "project.toml"), path=mdir / "project.toml")
    kind = kind or project.kind
    lanes_path = project.lanes or (mdir / "lanes.toml")
    rows = read_lanes_file(lanes_path).assignments if lanes_path.is_file() else {}
    found = kind_of(kind).discover(project.root)
    if found is not None:  # the kind reads its repository itself
        return _found_drift(project, mdir, lanes_path, rows, found)
    return _BY_KIND[kind](project, mdir, lanes_path, rows)


def _found_drift(project: ProjectSpec, mdir: Path, lanes_path: Path, rows: Mapping[str, str],
                 found: Found) -> list[str]:
    """New targets, lane rows for removed ones, a moved version: what the kind's reader found."""
    shown_lanes = display_path(lanes_path)
    names = {t.name for t in found.targets}
    out = [f"new target {t.name} ({t.what}): no lane in {shown_lanes}" for t in found.targets if t.name not in rows]
    out += [f"{shown_lanes}: lane row for a removed target {name}" for name in rows if name not in names]
    return out + _moved_version(project, mdir, found.version, found.source)


def _moved_version(project: ProjectSpec, mdir: Path, version: str | None, source: str) -> list[str]:
    """The line for a version the repository moved past the manifests' (none when they agree)."""
    if project.version and version and version != project.version:
        return [f"version {version} in {source}, {project.version} in {display_path(mdir / 'project.toml')}"]
    return []


def _cargo_drift(project: ProjectSpec, mdir: Path, lanes_path: Path, rows: Mapping[str, str]) -> list[str]:
    """New targets and features, removed ones, a moved version (Cargo.toml)."""
    root, shown_lanes = project.root, display_path(lanes_path)
    out: list[str] = []
    facts = read_cargo(root)
    judged = [t for t in facts.targets if t.kind in ("test", "bench") or t.path.startswith("tools/qualification/")]
    names = {t.name for t in facts.targets}
    for t in judged:
        if t.name not in rows:
            out.append(f"new target {t.name} ({t.kind} {t.path}): no lane in {shown_lanes}")
    for target in rows:
        if target not in names:
            out.append(f"{shown_lanes}: lane row for a removed target {target}")
    builds = mdir / "builds.toml"
    if builds.is_file():
        matrix = read_toml(builds).get("matrix", {})
        listed = {f for m in matrix.values() if isinstance(m, dict)
                  for s in m.get("features", []) if isinstance(s, str) for f in s.split(",") if f}
        for feature in facts.features:
            if matrix and feature not in listed:
                out.append(f"new feature {feature} (Cargo.toml): in no feature set of "
                           f"{display_path(builds)} [matrix]")
        plus = {f for m in matrix.values() if isinstance(m, dict) for f in m.get("plus", []) if isinstance(f, str)}
        for feature in sorted((listed | plus) - set(facts.features) - {"default"}):
            out.append(f"{display_path(builds)} [matrix] builds feature {feature}, which Cargo.toml no longer has")
    return out + _moved_version(project, mdir, facts.version, "Cargo.toml")


def _make_drift(project: ProjectSpec, mdir: Path, lanes_path: Path, rows: Mapping[str, str]) -> list[str]:
    """New Makefile targets, and make targets a manifest runs that are gone."""
    root = project.root
    out: list[str] = []
    facts_m = read_make(root)
    known: set[str] = set()  # every make target a manifest names, commented offers included
    active: dict[str, str] = {}  # make target → the file of a command that runs it
    files = [mdir / n for n in ("builds.toml", "lanes.toml", "package.toml")]
    if project.lanes is not None:
        files.append(project.lanes)
    for path in files:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            for m in _MAKE_WORD.finditer(line):
                words = [w for w in m.group(1).split() if "=" not in w]
                known.update(words)
                if not line.lstrip().startswith("#"):
                    for word in words:
                        active.setdefault(word, display_path(path))
    if facts_m.default_goal:
        known.add(facts_m.default_goal)
    for target in facts_m.targets:
        if target not in known:
            out.append(f"new Makefile target {target}: named in no command of {display_path(mdir)}")
    for target, where in active.items():
        if target not in facts_m.targets:
            out.append(f"{where}: runs make {target}, which {facts_m.makefile} no longer has")
    return out


def _python_drift(project: ProjectSpec, mdir: Path, lanes_path: Path, rows: Mapping[str, str]) -> list[str]:
    """New test files and extensions, a moved version (pyproject.toml)."""
    root, shown_lanes = project.root, display_path(lanes_path)
    out: list[str] = []
    py = read_python(root)
    declared = _target_paths(lanes_path) if lanes_path.is_file() else set()
    for path in py.test_files:
        if path not in declared:
            out.append(f"new test file {path} (pytest collects it): no target with a lane in {shown_lanes}")
    package = mdir / "package.toml"
    table = read_toml(package).get("package", {}) if package.is_file() else {}
    have = table.get("extensions", {}) if isinstance(table, dict) else {}
    for ext in py.build.extensions if py.build is not None else ():
        if not isinstance(have, dict) or ext.name not in have:
            out.append(f"new extension {ext.name} ({py.build.source}): not in {display_path(package)} "
                       "package.extensions (the wheel is not checked for it)")
    return out + _moved_version(project, mdir, py.version, "pyproject.toml")


# kind → its drift (the readers live on the manifest floor, above relgate/kinds/)
_BY_KIND = {CARGO.name: _cargo_drift, MAKE.name: _make_drift, PYTHON.name: _python_drift}


def _target_paths(lanes_path: Path) -> set[str]:
    """The ``path`` of every ``[target.NAME]`` the lanes file declares."""
    from relgate.core.schema import read_toml

    targets = read_toml(lanes_path).get("target", {})
    return {t["path"] for t in targets.values() if isinstance(t, dict) and isinstance(t.get("path"), str)} \
        if isinstance(targets, dict) else set()
