"""One workspace loader, shared by the CLI and the nox sessions.

It reads everything the manifest folder holds (``project.toml``, ``builds.toml``, the lane
table — ``lanes.toml`` or the project's own file named by ``project.lanes`` — with its
targets, ``package.toml``, ``intentional.toml``) and the host folder (``hosts/*.toml``),
validates all of it up front and reports every problem of every file at once. Stages take
the loaded workspace; no stage and no session reads TOML.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, TypeVar

from relgate.core.errors import InputError, ManifestError
from relgate.core.memo import Memo
from relgate.core.record import record
from relgate.core.schema import display_path, read_toml
from relgate.manifest.intentional import IntentionalChange, parse_intentional
from relgate.manifest.lanes import LanesSpec, load_lanes
from relgate.manifest.specs import (
    BuildsSpec,
    HostSpec,
    ProjectSpec,
    cwd_problems,
    parse_builds,
    parse_host,
    parse_project,
)

__all__ = ["Workspace", "LOCAL_HOST"]

T = TypeVar("T")
LOCAL_HOST = HostSpec(name="local", kind="local", source=Path("<built-in>"))


@record
class Workspace:
    root: Path
    manifests_dir: Path
    hosts_dir: Path
    home: Path
    project: ProjectSpec
    builds: BuildsSpec
    hosts: Mapping[str, HostSpec]
    intentional: tuple[IntentionalChange, ...] = ()  # intentional.toml: evidence re-recorded on purpose
    package: Any = None  # package.toml (relgate.manifest.package_spec.PackageManifest) when the folder has one
    lanes: LanesSpec | None = None  # the lane table and its targets; None when the project keeps none
    measurements: Any = None  # measurements.toml (relgate.manifest.measures.MeasurementsSpec), if any
    checklist: Any = None  # checklist.toml (relgate.manifest.checklist.ChecklistSpec), if any
    # Facts read once per invocation (host detection, HEAD): the nox layer keeps one workspace per process.
    memo: Memo = field(default_factory=Memo, compare=False, repr=False)

    @property
    def intentional_path(self) -> Path:
        return self.manifests_dir / "intentional.toml"

    @classmethod
    def load(cls, root: Path, *, manifests: Path | None = None, hosts: Path | None = None,
             home: Path | None = None, environ: Mapping[str, str] = os.environ,
             invoked_from: Path | None = None) -> "Workspace":
        """Paths: arguments win, then ``RELGATE_MANIFESTS``/``RELGATE_HOSTS``/``RELGATE_HOME``
        (relative ones taken from ``invoked_from``, where the user stood, default the cwd)."""
        root = Path(root).resolve()
        base = Path(invoked_from) if invoked_from is not None else Path.cwd()
        mdir = _pick(manifests, environ.get("RELGATE_MANIFESTS"), root / "manifests", base)
        hdir = _pick(hosts, environ.get("RELGATE_HOSTS"), root / "hosts", base)
        home_dir = _pick(home, environ.get("RELGATE_HOME"), root / ".relgate", base)
        if not mdir.is_dir():
            raise InputError(f"{display_path(mdir)}: no such manifest folder")
        if not hdir.is_dir() and (hosts is not None or environ.get("RELGATE_HOSTS")):
            raise InputError(f"{display_path(hdir)}: no such host folder")  # the default may be absent: local only

        problems: list[str] = []
        project = _load(mdir / "project.toml", parse_project, problems)
        builds_path = mdir / "builds.toml"
        builds = (_load(builds_path, parse_builds, problems) if builds_path.exists()
                  else BuildsSpec(checks=(), releases={}, matrices={}, diff_base=None, source=builds_path,
                                  declared=False))
        if builds is not None and project is not None and project.root.is_dir():
            problems.extend(cwd_problems(builds, project.root))
        intentional_path = mdir / "intentional.toml"
        intentional = (_load(intentional_path, parse_intentional, problems) if intentional_path.exists() else [])
        package = None
        if project is not None and (mdir / "package.toml").exists():
            from relgate.manifest.package_spec import load_package_manifest  # only projects that keep one pay for it

            package = _collect(lambda: load_package_manifest(mdir, project), problems)
        lanes = _collect(lambda: load_lanes(project, mdir), problems) if project is not None else None
        measurements = checklist = None
        if (mdir / "measurements.toml").exists():
            from relgate.manifest.measures import parse_measurements

            measurements = _load(mdir / "measurements.toml", parse_measurements, problems)
        host_specs: dict[str, HostSpec] = {}
        for path in sorted(hdir.glob("*.toml")):
            spec = _load(path, parse_host, problems)
            if spec is None:
                continue
            if spec.name in host_specs:
                problems.append(f"{display_path(path)}: host.name: duplicate host \"{spec.name}\" "
                                f"(also in {display_path(host_specs[spec.name].source)})")
            host_specs[spec.name] = spec
        if project is not None and (mdir / "checklist.toml").exists():
            from relgate.manifest.checklist import parse_checklist

            # "host:NAME" boards name a declared host (or the built-in local one)
            local = () if any(h.kind == "local" for h in host_specs.values()) else (LOCAL_HOST.name,)
            host_names = (*host_specs, *local)
            names = (tuple(measurements.measures), tuple(measurements.quality)) if measurements else ((), ())
            checklist = _collect(lambda: parse_checklist(
                read_toml(mdir / "checklist.toml"), path=mdir / "checklist.toml", version=project.version or "",
                changelog=str(project.changelog.relative_to(project.root)) if project.changelog else None,
                measures=names[0], quality=names[1], hosts=host_names),
                problems)
        if problems:  # the census's findings that the load lets through, too: every problem at once
            raise ManifestError(problems + (lanes.unknown_lanes() if lanes is not None else []))
        if not any(h.kind == "local" for h in host_specs.values()):
            host_specs.setdefault(LOCAL_HOST.name, LOCAL_HOST)
        assert project is not None and builds is not None
        return cls(root=root, manifests_dir=mdir, hosts_dir=hdir, home=home_dir, project=project,
                   builds=builds, hosts=host_specs, intentional=tuple(intentional or ()), package=package,
                   lanes=lanes, measurements=measurements, checklist=checklist)

    @property
    def local_host(self) -> HostSpec:
        return next(h for h in self.hosts.values() if h.kind == "local")


def measure_target_problems(measurements: Any, lanes: Any) -> list[str]:
    """Every ``measure.NAME.target`` / ``quality.NAME.target`` names a target with a lane of
    ``lanes``: found at ``check``, not first when ``compare`` runs it."""
    from relgate.core.schema import did_you_mean

    out = []
    names = [t.name for t in lanes.targets if t.name]
    assigned = lanes.assignments
    for kind, specs in (("measure", measurements.measures), ("quality", measurements.quality)):
        for name, spec in specs.items():
            if not spec.target or (spec.target in names and spec.target in assigned):
                continue
            where = f"{display_path(measurements.source)}: {kind}.{name}.target"
            out.append(f'{where}: no target "{spec.target}" with a lane{did_you_mean(spec.target, names)}')
    return out


def _pick(arg: Path | None, env: str | None, default: Path, base: Path) -> Path:
    if arg is not None:
        return Path(arg).resolve()
    if env:
        return (base / env).resolve()
    return default


def _collect(load: Callable[[], T], problems: list[str]) -> T | None:
    """``load()``, or None with its problems added to ``problems``."""
    try:
        return load()
    except ManifestError as exc:
        problems.extend(exc.problems)
    except InputError as exc:
        problems.append(str(exc))
    return None


def _load(path: Path, parse: Callable[..., T], problems: list[str]) -> T | None:
    return _collect(lambda: parse(read_toml(path), path=path), problems)
