"""The lane table: which declared target runs in which lane, with what options.

The ``[lanes]`` table (target → lane) is read from the project's own file when
``project.toml`` names one (``lanes = "qual/lanes.toml"``, the format GPU crates keep),
else from ``manifests/lanes.toml``. Per-target options (``[target.NAME]``) and
project-defined lanes (``[lane.NAME]``) may sit in either file.

:func:`read_lanes_file` reads the table tolerating the duplicate rows tomllib would
refuse, so the census can report them; :func:`load_lanes` validates the whole table and
finds the targets (Cargo.toml for a cargo project, ``[target.*]`` otherwise).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from relgate.core.errors import InputError, ManifestError
from relgate.manifest.schema import Checker, did_you_mean, display_path, loads_toml, read_text, read_toml
from relgate.manifest.specs import CommandSpec, ProjectSpec
from relgate.manifest.targets import Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["BUILTIN_LANES", "LANE_MODES", "LaneRow", "LanesFile", "LaneDef", "TargetOptions", "LanesSpec",
           "BUILTIN_LANE_DEFS", "read_lanes_file", "load_lanes"]

BUILTIN_LANES = ("host", "gate", "contract", "record", "toolkit", "bench", "qualification")


@dataclass(frozen=True, kw_only=True)
class LaneRow:
    target: str
    lane: str
    line: int  # 1-based line number in the lanes file


@dataclass(frozen=True, kw_only=True)
class LanesFile:
    path: Path
    rows: tuple[LaneRow, ...]  # in file order, duplicates kept
    tables: Mapping[str, Any]  # every other top-level key of the file, parsed

    @property
    def assignments(self) -> dict[str, str]:
        """target → lane; the first row wins (the census reports duplicates)."""
        out: dict[str, str] = {}
        for row in self.rows:
            out.setdefault(row.target, row.lane)
        return out

    def lane_of(self, target: str) -> str | None:
        """The lane of ``target`` (its first row), or None when it has no row."""
        return self.assignments.get(target)



# --- reading the lanes file --------------------------------------------------------------

_LANES_HEADER = re.compile(r"""^\s*\[\s*(?:lanes|"lanes"|'lanes')\s*\]\s*(?:#.*)?$""")
_ANY_HEADER = re.compile(r"^\s*\[")


def read_lanes_file(path: Path) -> LanesFile:
    """Read a lane table. Duplicate rows in ``[lanes]`` are kept (tomllib would refuse
    them); every other problem is an :class:`InputError` naming the file (syntax errors:
    line and column; a value that is not a string: the dotted key ``lanes.KEY``)."""
    path = Path(path)
    shown = display_path(path)
    text = read_text(path, shown)
    lines = text.split("\n")
    checker = Checker(path)
    rows: list[LaneRow] = []
    seen: set[str] = set()
    in_lanes = False
    for index, line in enumerate(lines):
        if _LANES_HEADER.match(line):
            in_lanes = True
            continue
        if _ANY_HEADER.match(line):
            in_lanes = False
            continue
        stripped = line.strip()
        if not in_lanes or not stripped or stripped.startswith("#"):
            continue
        try:
            row = tomllib.loads(line)  # one `key = "value"` row stands alone
        except tomllib.TOMLDecodeError:
            continue  # part of a multi-line value: the whole-file parse below judges it
        if len(row) != 1:
            continue
        ((key, value),) = row.items()
        if key in seen:
            lines[index] = "#" + line  # let tomllib read the rest; same lines and columns
        seen.add(key)
        if checker.get(row, "lanes", key, str) is not None:
            rows.append(LaneRow(target=key, lane=value, line=index + 1))
    data = loads_toml("\n".join(lines), shown)
    if "lanes" not in data:
        raise InputError(f"{shown}: no [lanes] table (it maps each target name to its lane)")
    table = data["lanes"]
    if not isinstance(table, dict):
        checker.get(data, "", "lanes", dict)
    else:
        for key, value in table.items():
            if key in seen:
                continue
            # a row the line scan could not read alone (a multi-line value, a dotted key)
            if checker.get(table, "lanes", key, str) is not None:
                rows.append(LaneRow(target=key, lane=value, line=_line_of(lines, key)))
    checker.raise_if_problems()
    rows.sort(key=lambda row: row.line)
    tables = MappingProxyType({key: value for key, value in data.items() if key != "lanes"})
    return LanesFile(path=path, rows=tuple(rows), tables=tables)


def _line_of(lines: Sequence[str], key: str) -> int:
    """The first line that starts with ``key`` (bare or quoted), else 0."""
    pattern = re.compile(r"""^\s*(?:lanes\s*\.\s*)?["']?""" + re.escape(key) + r"""["']?\s*[=.]""")
    return next((i + 1 for i, line in enumerate(lines) if pattern.match(line)), 0)


LANE_MODES = ("all", "ignored", "named", "timing", "per-board")


@dataclass(frozen=True, kw_only=True)
class LaneDef:
    name: str
    mode: str
    description: str


BUILTIN_LANE_DEFS: Mapping[str, LaneDef] = {
    "host": LaneDef(name="host", mode="all",
                    description="no GPU, runs anywhere; part of nox -s host"),
    "gate": LaneDef(name="gate", mode="all",
                    description="every gate target must pass"),
    "contract": LaneDef(name="contract", mode="ignored",
                        description="each target's ignored arms; every target runs, every red is listed"),
    "record": LaneDef(name="record", mode="named",
                      description="lists the record commands; runs only the targets named after --, one at a time"),
    "toolkit": LaneDef(name="toolkit", mode="all",
                       description="the toolkit's own tests (gate-like: every target must pass, no bare #[ignore)"),
    "bench": LaneDef(name="bench", mode="timing",
                     description="runs the benches and keeps their timings; no verdict on the numbers"),
    "qualification": LaneDef(name="qualification", mode="per-board",
                             description="tools behind the qualification feature, named after --; "
                                         "one run per board and toolkit"),
}
assert tuple(BUILTIN_LANE_DEFS) == tuple(BUILTIN_LANES)


@dataclass(frozen=True, kw_only=True)
class TargetOptions:
    path: str | None = None
    command: CommandSpec | None = None
    requires: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    timeout: float | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    evidence: bool = False
    skip: str | None = None


@dataclass(frozen=True, kw_only=True)
class LanesSpec:
    file: LanesFile
    lanes: Mapping[str, LaneDef]
    options: Mapping[str, TargetOptions]
    targets: tuple[Target, ...]

    @property
    def assignments(self) -> dict[str, str]:
        """target → lane; the first row wins (the census reports duplicates)."""
        return self.file.assignments


_TARGET_KEYS = ("path", "command", "shell", "requires", "features", "timeout", "args", "env", "evidence", "skip")


def _parse_target(c: Checker, name: str, t: Mapping[str, Any]) -> TargetOptions:
    prefix = f"target.{name}"
    c.keys(t, prefix, _TARGET_KEYS)
    shell = bool(c.get(t, prefix, "shell", bool, False))
    command = None
    raw = c.get(t, prefix, "command", (str, list))
    if isinstance(raw, list):
        if raw and all(isinstance(x, str) for x in raw) and not shell:
            command = CommandSpec(argv=tuple(raw))
        else:
            c.problem(f"{prefix}.command", "expected a non-empty array of strings (or one string with shell = true)")
    elif isinstance(raw, str):
        if shell:
            command = CommandSpec(shell=raw)
        else:
            try:
                command = CommandSpec(argv=tuple(shlex.split(raw)))
            except ValueError as exc:
                c.problem(f"{prefix}.command", f"cannot split into arguments: {exc}")
        if not raw.strip():
            c.problem(f"{prefix}.command", "empty; say the command that runs this target")
    timeout = c.get(t, prefix, "timeout", (int, float))
    if timeout is not None and timeout <= 0:
        c.problem(f"{prefix}.timeout", "must be a positive number of seconds")
    skip = c.get(t, prefix, "skip", str)
    if skip is not None and not skip.strip():
        c.problem(f"{prefix}.skip", "needs a reason (a non-empty string)")
    return TargetOptions(
        path=c.get(t, prefix, "path", str), command=command,
        requires=tuple(c.string_list(t, prefix, "requires")), features=tuple(c.string_list(t, prefix, "features")),
        timeout=float(timeout) if timeout else None, args=tuple(c.string_list(t, prefix, "args")),
        env=c.string_map(t, prefix, "env"), evidence=bool(c.get(t, prefix, "evidence", bool, False)), skip=skip,
    )


def _parse_lane(c: Checker, name: str, t: Mapping[str, Any]) -> LaneDef:
    prefix = f"lane.{name}"
    c.keys(t, prefix, ("mode", "description"), required=("description",))
    if name in BUILTIN_LANE_DEFS:
        c.problem(prefix, f'"{name}" is a built-in lane; pick another name')
    return LaneDef(name=name, mode=c.choice(t, prefix, "mode", LANE_MODES, default="all") or "all",
                   description=c.get(t, prefix, "description", str, ""))


def _extras(c: Checker, tables: Mapping[str, Any], allowed: Sequence[str]) -> tuple[dict, dict]:
    c.keys(tables, "", allowed)
    targets = {n: _parse_target(c, n, t) for n, t in c.tables(tables, "", "target").items()}
    lanes = {n: _parse_lane(c, n, t) for n, t in c.tables(tables, "", "lane").items()}
    return targets, lanes


def load_lanes(project: ProjectSpec, manifests_dir: Path) -> LanesSpec | None:
    """The lanes of a project, or None when it keeps no lanes file at all. Every problem of
    the table (keys, lane names, options, targets) is reported at once."""
    own = manifests_dir / "lanes.toml"
    if own.exists() and not own.is_file():
        raise InputError(f"{display_path(own)}: not a file (the lane table is a TOML file)")
    path = project.lanes or (own if own.is_file() else None)
    if path is None:
        return None
    lanes_file = read_lanes_file(path)
    c = Checker(path)
    options, lane_defs = _extras(c, lanes_file.tables, ("lanes", "target", "lane"))
    checkers = [c]
    if project.lanes is not None and own.is_file():
        c2 = Checker(own)
        checkers.append(c2)
        data = read_toml(own)
        if "lanes" in data:
            c2.problem("lanes", f"the [lanes] table lives in {display_path(project.lanes)} (project.lanes); "
                                "keep only [target.*] and [lane.*] here")
        more_targets, more_lanes = _extras(c2, {k: v for k, v in data.items() if k != "lanes"}, ("target", "lane"))
        for name in set(more_targets) & set(options):
            c2.problem(f"target.{name}", f"also configured in {display_path(path)}")
        options.update(more_targets)
        lane_defs.update(more_lanes)
    known = {**BUILTIN_LANE_DEFS, **lane_defs}
    for row in lanes_file.rows:
        if row.lane not in known:
            c.problem(f"lanes.{row.target}", f'unknown lane "{row.lane}"{did_you_mean(row.lane, known)} '
                                             f"(line {row.line})")
    problems = [line for checker in checkers for line in checker.problems]
    targets: list[Target] | None = None
    try:
        targets = _targets(project, options, path)
    except ManifestError as exc:
        problems += exc.problems
    except InputError as exc:
        problems.append(str(exc))
    if targets is not None:
        names = {t.name for t in targets if t.name}
        problems += [f"{display_path(path)}: target.{n}: no such target{did_you_mean(n, names)}"
                     for n in options if n not in names]
    if problems:
        raise ManifestError(problems)
    assert targets is not None
    return LanesSpec(file=lanes_file, lanes=known, options=options, targets=tuple(targets))


def _targets(project: ProjectSpec, options: Mapping[str, TargetOptions], path: Path) -> list[Target]:
    if project.kind == "cargo":
        from relgate.manifest.cargo import discover_cargo_targets

        return discover_cargo_targets(project.root / "Cargo.toml")
    problems = []
    out = []
    for name, opts in options.items():
        if opts.command is None:
            problems.append(f"{display_path(path)}: target.{name}.command: a {project.kind} target "
                            "needs the command that runs it")
        out.append(Target(name=name, path=opts.path, kind="command", command=opts.command,
                          origin=f"[target.{name}]"))
    if problems:
        raise ManifestError(problems)
    return out
