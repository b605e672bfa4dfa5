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

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from relgate.core.counts import parse_max_skipped
from relgate.core.errors import InputError, ManifestError
from relgate.core.record import record
from relgate.core.schema import Checker, did_you_mean, display_path, loads_toml, read_text, read_toml
from relgate.kinds.registry import kind_of
from relgate.manifest.host_extras import parse_gpus
from relgate.manifest.keys import BUILTIN_LANES, LANE_MODES, LANES
from relgate.manifest.specs import CommandSpec, ProjectSpec
from relgate.manifest.targets import Target, project_targets

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["BUILTIN_LANES", "LANE_MODES", "LaneRow", "LanesFile", "LaneDef", "TargetOptions", "LanesSpec",
           "BUILTIN_LANE_DEFS", "read_lanes_file", "load_lanes", "FleetSpec", "RoleSpec", "MultiHostSpec",
           "parse_many_hosts", "LEADER", "LaneRef"]


@record
class LaneRow:
    target: str
    lane: str
    line: int  # 1-based line number in the lanes file


@record
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
        except (tomllib.TOMLDecodeError, RecursionError):
            continue  # part of a multi-line value: the whole-file parse below judges it
        if len(row) != 1:
            continue
        ((key, value),) = row.items()
        if key in seen:
            lines[index] = "#" + line  # let tomllib read the rest; same lines and columns
        seen.add(key)
        if checker.get(row, "lanes", key, str) is not None and checker.name_ok(checker.key("lanes", key), key):
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
            if checker.get(table, "lanes", key, str) is not None and checker.name_ok(checker.key("lanes", key), key):
                rows.append(LaneRow(target=key, lane=value, line=_line_of(lines, key)))
    checker.raise_if_problems()
    rows.sort(key=lambda row: row.line)
    tables = MappingProxyType({key: value for key, value in data.items() if key != "lanes"})
    return LanesFile(path=path, rows=tuple(rows), tables=tables)


def _line_of(lines: Sequence[str], key: str) -> int:
    """The first line that starts with ``key`` (bare or quoted), else 0."""
    pattern = re.compile(r"""^\s*(?:lanes\s*\.\s*)?["']?""" + re.escape(key) + r"""["']?\s*[=.]""")
    return next((i + 1 for i, line in enumerate(lines) if pattern.match(line)), 0)


@record
class LaneDef:
    name: str
    mode: str
    description: str
    # settings for every target of the lane ([lane.gate] features = ["cuda"]): one line, not one per target
    features: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    max_skipped: tuple[int | None, float | None] | None = None


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


@record
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
    max_skipped: tuple[int | None, float | None] | None = None  # (count, share): see relgate.run.testcounts
    gpus: int | str | None = None  # GPUs it takes on a host with slots ("all": alone); None: the default rule


@record
class LaneRef:
    """A lane named outside the ``[lanes]`` table (``fleet.every_host[0]``, ``multihost.X.lane``)."""

    key: str  # the dotted key
    lane: str
    path: Path  # the file it is in


@record
class LanesSpec:
    file: LanesFile
    lanes: Mapping[str, LaneDef]
    options: Mapping[str, TargetOptions]
    targets: tuple[Target, ...]
    fleet: FleetSpec = field(default_factory=lambda: FleetSpec())  # [fleet]: lanes spread over every host
    multihost: Mapping[str, MultiHostSpec] = field(default_factory=dict)  # [multihost.*]: steps with roles
    # What the census reports rather than the loader (so one run lists every defect):
    references: tuple[LaneRef, ...] = ()  # lanes named in [fleet] and [multihost.*]
    option_files: Mapping[str, Path] = field(default_factory=dict)  # [target.NAME] → the file it is in

    @property
    def assignments(self) -> dict[str, str]:
        """target → lane; the first row wins (the census reports duplicates)."""
        return self.file.assignments

    def unknown_lanes(self) -> list[str]:
        """One manifest-style line per lane name no lane defines (rows, then [fleet] and
        [multihost.*]); empty when every lane named is known."""
        return _unknown_lane_lines(self.file, self.references, self.lanes)


def _unknown_lane_lines(file: LanesFile, references: Sequence[LaneRef], known: Mapping[str, LaneDef]) -> list[str]:
    shown = display_path(file.path)
    out = [f'{shown}: lanes.{row.target}: unknown lane "{row.lane}"{did_you_mean(row.lane, known)} (line {row.line})'
           for row in file.rows if row.lane not in known]
    out += [f'{display_path(ref.path)}: {ref.key}: no lane "{ref.lane}"{did_you_mean(ref.lane, known)}'
            for ref in references if ref.lane not in known]
    return out


_TARGET_KEYS = LANES.top("target").entry().names()
_LANE = LANES.top("lane").entry()
_FLEET = LANES.top("fleet")
_MULTIHOST = LANES.top("multihost").entry()
_ROLE = _MULTIHOST.field("role").entry()


def _parse_target(c: Checker, name: str, t: Mapping[str, Any]) -> TargetOptions:
    prefix = f"target.{name}"
    c.keys(t, prefix, _TARGET_KEYS)
    shell = bool(c.get(t, prefix, "shell", bool, False))
    command = None
    raw = c.get(t, prefix, "command", (str, list))
    if isinstance(raw, list):
        if raw and all(isinstance(x, str) for x in raw) and not shell and raw[0].strip():
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
    timeout = c.seconds(t, prefix, "timeout")
    skip = c.get(t, prefix, "skip", str)
    if skip is not None and not skip.strip():
        c.problem(f"{prefix}.skip", "needs a reason (a non-empty string)")
    return TargetOptions(
        path=c.relative_path(t, prefix, "path", "the project root"), command=command,
        requires=tuple(c.string_list(t, prefix, "requires")), features=tuple(c.string_list(t, prefix, "features")),
        timeout=float(timeout) if timeout else None, args=tuple(c.string_list(t, prefix, "args")),
        env=c.string_map(t, prefix, "env"), evidence=bool(c.get(t, prefix, "evidence", bool, False)), skip=skip,
        max_skipped=_max_skipped(c, t, prefix),
        gpus=parse_gpus(c, t, prefix, allow_all=True),
    )


def _max_skipped(c: Checker, t: Mapping[str, Any], prefix: str) -> tuple[int | None, float | None] | None:
    if "max_skipped" not in t:
        return None
    parsed = parse_max_skipped(t["max_skipped"])
    if isinstance(parsed, str):
        c.problem(f"{prefix}.max_skipped", parsed)
        return None
    return parsed


_LANE_SETTINGS = ("features", "requires", "max_skipped")


def _parse_lane(c: Checker, name: str, t: Mapping[str, Any]) -> LaneDef:
    prefix = f"lane.{name}"
    builtin = BUILTIN_LANE_DEFS.get(name)
    if builtin is not None:  # settings for every target of a built-in lane; its mode is its own
        c.keys(t, prefix, _LANE_SETTINGS)
    else:
        c.keys(t, prefix, _LANE.names(), required=("description",))
    settings = dict(features=tuple(c.string_list(t, prefix, "features")),
                    requires=tuple(c.string_list(t, prefix, "requires")), max_skipped=_max_skipped(c, t, prefix))
    if builtin is not None:
        return LaneDef(name=name, mode=builtin.mode, description=builtin.description, **settings)
    return LaneDef(name=name, mode=c.choice(t, prefix, "mode", LANE_MODES, default="all") or "all",
                   description=c.get(t, prefix, "description", str, ""), **settings)


def _extras(c: Checker, tables: Mapping[str, Any], allowed: Sequence[str]) -> tuple[dict, dict]:
    c.keys(tables, "", allowed)
    targets = {n: _parse_target(c, n, t) for n, t in c.tables(tables, "", "target").items()}
    lanes = {n: _parse_lane(c, n, t) for n, t in c.tables(tables, "", "lane").items()}
    return targets, lanes


def load_lanes(project: ProjectSpec, manifests_dir: Path) -> LanesSpec | None:
    """The lanes of a project, or None when it keeps no lanes file at all. Every problem of
    the table (keys, lane names, options, targets) is reported at once."""
    own = manifests_dir / "lanes.toml"
    if os.path.lexists(own) and not own.is_file():  # a folder, or a symlink loop: never a skipped census
        raise InputError(f"{display_path(own)}: not a file (the lane table is a TOML file)")
    path = project.lanes or (own if own.is_file() else None)
    if path is None:
        return None
    lanes_file = read_lanes_file(path)
    c = Checker(path)
    options, lane_defs = _extras(c, lanes_file.tables, LANES.names())
    checkers = [c]
    if project.lanes is not None and own.is_file():
        c2 = Checker(own)
        checkers.append(c2)
        data = read_toml(own)
        if "lanes" in data:
            c2.problem("lanes", f"the [lanes] table lives in {display_path(project.lanes)} (project.lanes); "
                                "keep only [target.*] and [lane.*] here")
        more_targets, more_lanes = _extras(c2, {k: v for k, v in data.items() if k != "lanes"},
                                           tuple(n for n in LANES.names() if n != "lanes"))
        for name in set(more_targets) & set(options):
            c2.problem(f"target.{name}", f"also configured in {display_path(path)}")
        options.update(more_targets)
        lane_defs.update(more_lanes)
    known = {**BUILTIN_LANE_DEFS, **lane_defs}
    # An unknown lane name (a row, [fleet], [multihost.*]) and a [target.NAME] for no target
    # are the census's to report, beside every other defect: they do not stop the load.
    problems = [line for checker in checkers for line in checker.problems]
    references: list[LaneRef] = []
    fleet, multihost = _many_hosts_of(path, lanes_file.tables, own if project.lanes is not None and own.is_file()
                                      else None, known, set(options), problems, references)
    option_files = {name: path for name in options}
    if len(checkers) > 1:
        option_files.update({name: own for name in more_targets})
    targets: list[Target] | None = None
    try:
        targets = _targets(project, options, path)
    except ManifestError as exc:
        problems += exc.problems
    except InputError as exc:
        problems.append(str(exc))
    if problems:  # every problem at once: the census's own findings too
        if targets is not None:
            names = {t.name for t in targets if t.name}
            problems += [f"{display_path(option_files[n])}: target.{n}: no such target{did_you_mean(n, names)}"
                         for n in options if n not in names]
        raise ManifestError(problems + _unknown_lane_lines(lanes_file, references, known))
    assert targets is not None
    return LanesSpec(file=lanes_file, lanes=known, options=options, targets=tuple(targets), fleet=fleet,
                     multihost=multihost, references=tuple(references), option_files=option_files)


def _targets(project: ProjectSpec, options: Mapping[str, TargetOptions], path: Path) -> list[Target]:
    if kind_of(project.kind).targets_from_project:  # the project's own manifest declares them
        return project_targets(kind_of(project.kind), project.root)
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


# --- many hosts: fan-out and multi-host steps ------------------------------------------------
#
#   [fleet]
#   every_host = ["gate"]   # these lanes run each target on every host that offers what it requires
#   workers = 4             # at most this many hosts at once (one worker per host)
#
#   [multihost.tp_smoke]    # one step, roles across hosts; runs with its lane
#   lane = "gate"
#   [multihost.tp_smoke.role.worker]   # any role but "leader" is a worker; workers start first
#   command = "python -m engine.worker --port 7000"
#   count = 2               # on two distinct hosts
#   requires = ["metal"]
#   ready_line = "listening"   # or ready_port = 7000 (a port that opens on the worker's address)
#   [multihost.tp_smoke.role.leader]   # gets the workers' addresses in RELGATE_WORKERS; its exit decides
#   command = "python -m engine.leader"

DEFAULT_WORKERS = 8
LEADER = "leader"


@record
class FleetSpec:
    every_host: tuple[str, ...] = ()  # lanes whose steps run on every matching host, in parallel
    workers: int = DEFAULT_WORKERS  # hosts at once


@record
class RoleSpec:
    name: str
    command: CommandSpec
    count: int = 1  # distinct hosts this role runs on
    requires: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()  # only these hosts (by name), when given
    env: Mapping[str, str] = field(default_factory=dict)
    ready_line: str | None = None  # a regex a worker prints once it serves
    ready_port: int | None = None  # a TCP port that opens on the worker's address once it serves
    port: int | None = None  # the port the leader is told (default: ready_port)
    ready_timeout: float = 120.0

    @property
    def is_leader(self) -> bool:
        return self.name == LEADER


@record
class MultiHostSpec:
    name: str
    lane: str
    roles: tuple[RoleSpec, ...]  # the workers in declaration order, then the leader
    timeout: float | None = None  # for the leader
    worker_grace: float = 30.0  # seconds workers get to end on their own after the leader
    source: Path | None = None

    @property
    def leader(self) -> RoleSpec:
        return self.roles[-1]

    @property
    def workers(self) -> tuple[RoleSpec, ...]:
        return self.roles[:-1]


def _positive(c: Checker, t: Mapping[str, Any], prefix: str, key: str, default: float | None) -> float | None:
    return c.seconds(t, prefix, key, default)


def _port(c: Checker, t: Mapping[str, Any], prefix: str, key: str) -> int | None:
    value = c.get(t, prefix, key, int)
    if value is not None and not 0 < value < 65536:
        c.problem(f"{prefix}.{key}", f"{value} is not a TCP port")
        return None
    return value


def _parse_role(c: Checker, prefix: str, name: str, t: Mapping[str, Any]) -> RoleSpec | None:
    c.keys(t, prefix, _ROLE.names(), required=_ROLE.required_names())
    shell = bool(c.get(t, prefix, "shell", bool, False))
    raw = c.get(t, prefix, "command", (str, list))
    command = None
    if isinstance(raw, list):
        if raw and all(isinstance(x, str) for x in raw) and not shell:
            command = CommandSpec(argv=tuple(raw))
        else:
            c.problem(f"{prefix}.command", "expected a non-empty array of strings (or one string with shell = true)")
    elif isinstance(raw, str) and raw.strip():
        try:
            command = CommandSpec(shell=raw) if shell else CommandSpec(argv=tuple(shlex.split(raw)))
        except ValueError as exc:
            c.problem(f"{prefix}.command", f"cannot split into arguments: {exc}")
    elif isinstance(raw, str):
        c.problem(f"{prefix}.command", "must not be empty")
    count = c.get(t, prefix, "count", int, 1)
    if count < 1:
        c.problem(f"{prefix}.count", "must be at least 1 (the number of hosts this role runs on)")
    ready_line = c.get(t, prefix, "ready_line", str)
    if ready_line is not None:
        try:
            re.compile(ready_line)
        except re.error as exc:
            c.problem(f"{prefix}.ready_line", f"bad regular expression: {exc}")
    ready_port = _port(c, t, prefix, "ready_port")
    if name == LEADER:
        if count != 1:
            c.problem(f"{prefix}.count", "the leader runs on one host")
        for key in ("ready_line", "ready_port"):
            if key in t:
                c.problem(f"{prefix}.{key}", "only workers report ready; the leader's exit decides the step")
    elif ready_line is None and ready_port is None:
        c.problem(prefix, "a worker needs ready_line (a line it prints) or ready_port (a port that opens)")
    if command is None:
        return None
    return RoleSpec(name=name, command=command, count=max(count, 1), requires=tuple(c.string_list(t, prefix, "requires")),
                    hosts=tuple(c.string_list(t, prefix, "hosts")), env=c.string_map(t, prefix, "env"),
                    ready_line=ready_line, ready_port=ready_port, port=_port(c, t, prefix, "port") or ready_port,
                    ready_timeout=_positive(c, t, prefix, "ready_timeout", 120.0) or 120.0)


def _parse_multihost(c: Checker, name: str, t: Mapping[str, Any], lanes: Mapping[str, LaneDef],
                     references: list[LaneRef] | None = None) -> MultiHostSpec | None:
    prefix = f"multihost.{name}"
    c.keys(t, prefix, _MULTIHOST.names(), required=_MULTIHOST.required_names())
    lane = c.get(t, prefix, "lane", str)
    if lane is not None and lane not in lanes:
        if references is None:
            c.problem(f"{prefix}.lane", f'no lane "{lane}"{did_you_mean(lane, lanes)}')
        else:
            references.append(LaneRef(key=f"{prefix}.lane", lane=lane, path=c.path))
    roles = {n: _parse_role(c, f"{prefix}.role.{n}", n, r) for n, r in c.tables(t, prefix, "role").items()}
    if "role" in t and LEADER not in roles:
        c.problem(f"{prefix}.role", f'needs a role named "{LEADER}" (its exit decides the step)')
    if "role" in t and len(roles) < 2:
        c.problem(f"{prefix}.role", "needs at least one worker role besides the leader")
    if lane is None or LEADER not in roles or any(r is None for r in roles.values()):
        return None
    ordered = [r for n, r in roles.items() if n != LEADER] + [roles[LEADER]]
    return MultiHostSpec(name=name, lane=lane, roles=tuple(r for r in ordered if r is not None),
                         timeout=_positive(c, t, prefix, "timeout", None),
                         worker_grace=_positive(c, t, prefix, "worker_grace", 30.0) or 30.0, source=c.path)


def parse_many_hosts(c: Checker, tables: Mapping[str, Any], lanes: Mapping[str, LaneDef],
                     references: list[LaneRef] | None = None) -> tuple[FleetSpec | None, dict[str, MultiHostSpec]]:
    """``[fleet]`` (None when absent) and the ``[multihost.*]`` steps of one lanes file. A lane
    no lane defines is a problem, or, given ``references``, added there for the census."""
    fleet = None
    if "fleet" in tables:
        t = c.get(tables, "", "fleet", dict, {})
        c.keys(t, "fleet", _FLEET.names())
        every = c.string_list(t, "fleet", "every_host")
        for i, lane in enumerate(every):
            if lane not in lanes:
                if references is None:
                    c.problem(f"fleet.every_host[{i}]", f'no lane "{lane}"{did_you_mean(lane, lanes)}')
                else:
                    references.append(LaneRef(key=f"fleet.every_host[{i}]", lane=lane, path=c.path))
            elif lanes[lane].mode == "per-board":
                c.problem(f"fleet.every_host[{i}]", f'"{lane}" already runs once per board and toolkit')
        workers = c.get(t, "fleet", "workers", int, DEFAULT_WORKERS)
        if workers < 1:
            c.problem("fleet.workers", "must be at least 1")
        fleet = FleetSpec(every_host=tuple(every), workers=max(workers, 1))
    steps = {}
    for name, t in c.tables(tables, "", "multihost").items():
        spec = _parse_multihost(c, name, t, lanes, references)
        if spec is not None:
            steps[name] = spec
    return fleet, steps


def _many_hosts_of(path: Path, tables: Mapping[str, Any], own: Path | None, lanes: Mapping[str, LaneDef],
                   targets: set[str], problems: list[str], references: list[LaneRef]
                   ) -> tuple[FleetSpec, dict[str, MultiHostSpec]]:
    """``[fleet]`` and ``[multihost.*]`` of the lanes file and of ``manifests/lanes.toml`` beside
    a project's own file (one ``[fleet]`` in all; a multi-host step is named once)."""
    found: list[tuple[Checker, FleetSpec | None, dict[str, MultiHostSpec]]] = []
    for file, data in ((path, tables), *(((own, read_toml(own)),) if own is not None else ())):
        c = Checker(file)
        found.append((c, *parse_many_hosts(c, data, lanes, references)))
    fleet, steps = FleetSpec(), {}
    fleets = [(c, f) for c, f, _ in found if f is not None]
    if len(fleets) > 1:
        fleets[1][0].problem("fleet", f"also set in {display_path(path)}; keep one [fleet]")
    if fleets:
        fleet = fleets[0][1]
    for c, _, more in found:
        for name, spec in more.items():
            if name in steps or name in targets:
                c.problem(f"multihost.{name}", "the name is taken by a target or another multi-host step")
            steps[name] = spec
        problems += c.problems
    return fleet, steps
