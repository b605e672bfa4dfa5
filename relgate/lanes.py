"""Lanes: which declared target runs in which lane, with what, and how a lane runs.

The ``[lanes]`` table (target → lane) is read from the project's own file when
``project.toml`` names one (``lanes = "qual/lanes.toml"``, the format GPU crates keep),
else from ``manifests/lanes.toml``. Per-target options (``[target.NAME]``) and
project-defined lanes (``[lane.NAME]``) may sit in either file.

Lane modes:
    all        every target runs; all must pass (host, gate)
    ignored    every target's ignored arms run; every red is listed (contract)
    named      the targets are listed; only those named run, one at a time (record)
    timing     runs and keeps timings; not judged (bench)
    per-board  named tools, one run per board and toolkit (qualification)
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .census import BUILTIN_LANES, LanesFile, read_lanes_file
from .errors import InputError, ManifestError
from .hosts import Host
from .manifests import CommandSpec, ProjectSpec
from .plan import PlannedStep
from .schema import Checker, did_you_mean, display_path, read_toml
from .targets import Target

__all__ = ["LaneDef", "TargetOptions", "LanesSpec", "BUILTIN_LANE_DEFS", "load_lanes", "plan_lane",
           "lane_targets", "target_command"]

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
    """The lanes of a project, or None when it keeps no lanes file at all."""
    own = manifests_dir / "lanes.toml"
    path = project.lanes or (own if own.is_file() else None)
    if path is None:
        return None
    lanes_file = read_lanes_file(path)
    problems: list[str] = []
    c = Checker(path)
    options, lane_defs = _extras(c, lanes_file.tables, ("lanes", "target", "lane"))
    problems += c.problems
    if project.lanes is not None and own.is_file():
        c2 = Checker(own)
        data = read_toml(own)
        if "lanes" in data:
            c2.problem("lanes", f"the [lanes] table lives in {display_path(project.lanes)} (project.lanes); "
                                "keep only [target.*] and [lane.*] here")
        more_targets, more_lanes = _extras(c2, {k: v for k, v in data.items() if k != "lanes"}, ("target", "lane"))
        for name in set(more_targets) & set(options):
            c2.problem(f"target.{name}", f"also configured in {display_path(path)}")
        options.update(more_targets)
        lane_defs.update(more_lanes)
        problems += c2.problems
    if problems:
        raise ManifestError(problems)
    targets = _targets(project, options)
    names = {t.name for t in targets if t.name}
    unknown = [n for n in options if n not in names]
    if unknown:
        raise ManifestError([f"{display_path(path)}: target.{n}: no such target{did_you_mean(n, names)}"
                             for n in unknown])
    return LanesSpec(file=lanes_file, lanes={**BUILTIN_LANE_DEFS, **lane_defs}, options=options,
                     targets=tuple(targets))


def _targets(project: ProjectSpec, options: Mapping[str, TargetOptions]) -> list[Target]:
    if project.kind == "cargo":
        from .cargo import discover_cargo_targets

        return discover_cargo_targets(project.root / "Cargo.toml")
    problems = []
    out = []
    for name, opts in options.items():
        if opts.command is None:
            problems.append(f"{display_path(project.source)}: target.{name}.command: a {project.kind} target "
                            "needs the command that runs it")
        out.append(Target(name=name, path=opts.path, kind="command", command=opts.command,
                          origin=f"[target.{name}]"))
    if problems:
        raise ManifestError(problems)
    return out


def lane_targets(spec: LanesSpec, lane: str) -> list[Target]:
    """The targets assigned to ``lane``, in the lanes file's row order."""
    by_name = {t.name: t for t in spec.targets if t.name}
    assigned = spec.assignments
    return [by_name[name] for name in dict.fromkeys(r.target for r in spec.file.rows)
            if assigned.get(name) == lane and name in by_name]


def target_command(project: ProjectSpec, target: Target, lane: LaneDef, opts: TargetOptions) -> CommandSpec:
    """The command that runs ``target`` in ``lane``: declared for make/python, derived for cargo."""
    if opts.command is not None or project.kind != "cargo":
        if opts.command is None:  # pragma: no cover - load_lanes refuses this
            raise InputError(f"target {target.name}: no command")
        return opts.command
    features = list(dict.fromkeys([*target.required_features, *opts.features]))
    if lane.mode == "per-board" and "qualification" not in features:
        features.append("qualification")
    argv = ["cargo"]
    if target.kind == "bench":
        argv += ["bench", "--bench", target.name or ""]
    elif target.kind in ("example", "bin"):
        argv += ["run", "--release", f"--{target.kind}", target.name or ""]
    else:
        argv += ["test", "--release", "--test", target.name or ""]
    if (project.root / "Cargo.lock").is_file():
        argv.append("--locked")
    if features:
        argv += ["--features", ",".join(features)]
    after: list[str] = []
    if lane.mode in ("ignored", "named") and target.kind == "test" and target.harness:
        after.append("--ignored")
    after += opts.args
    if after:
        argv += ["--", *after]
    return CommandSpec(argv=tuple(argv))


def plan_lane(project: ProjectSpec, spec: LanesSpec, lane: str, *, names: Sequence[str] = (),
              hosts: Sequence[Host] = ()) -> list[PlannedStep]:
    """The steps of one lane run; ``names`` picks targets (required for named/per-board lanes)."""
    if lane not in spec.lanes:
        raise InputError(f"no lane {lane!r}{did_you_mean(lane, spec.lanes)}")
    lane_def = spec.lanes[lane]
    targets = lane_targets(spec, lane)
    if names:
        # Names pick targets within each lane, so `nox -s host gate -- scan_parity` works;
        # a name no lane has is a typo.
        assigned = spec.assignments
        bad = [n for n in names if n not in assigned]
        if bad:
            here = ", ".join(t.name for t in targets if t.name) or "none"
            raise InputError(f"{lane}: no target {bad[0]!r} in any lane{did_you_mean(bad[0], assigned)} "
                             f"(the {lane} targets: {here})")
        targets = [t for t in targets if t.name in names]
    elif lane_def.mode in ("named", "per-board"):
        return []
    steps: list[PlannedStep] = []
    for target in targets:
        opts = spec.options.get(target.name or "", TargetOptions())
        command = target_command(project, target, lane_def, opts)
        base = dict(name=target.name or "", commands=(command,), cwd=project.root, lane=lane, target=target.name,
                    env=dict(opts.env), timeout=opts.timeout, requires=opts.requires, skip=opts.skip,
                    evidence_env=project.evidence_env, evidence_required=opts.evidence,
                    timing_only=lane_def.mode == "timing")
        if lane_def.mode != "per-board":
            steps.append(PlannedStep(**base))
            continue
        seen: set[tuple[str | None, str | None]] = set()
        for host in hosts:
            key = (host.board, host.facts.toolkit)
            if host.missing(opts.requires) or key in seen:
                continue
            seen.add(key)
            steps.append(PlannedStep(**{**base, "name": f"{target.name}@{host.name}", "host": host.name}))
        if not seen:
            steps.append(PlannedStep(**base))  # placement will say why nothing can run it
    return steps
