"""Planning a lane run: the command each target runs in its lane, and the steps.

Lane modes:
    all        every target runs; all must pass (host, gate)
    ignored    every target's ignored arms run; every red is listed (contract)
    named      the targets are listed; only those named run, one at a time (record)
    timing     runs and keeps timings; not judged (bench)
    per-board  named tools, one run per board and toolkit (qualification)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from relgate.core.errors import InputError
from relgate.core.schema import did_you_mean
from relgate.kinds.registry import kind_of
from relgate.manifest.lanes import LaneDef, LanesSpec, TargetOptions
from relgate.manifest.specs import CommandSpec, ProjectSpec
from relgate.manifest.targets import Target
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep

__all__ = ["plan_lane", "lane_targets", "target_command"]

def lane_targets(spec: LanesSpec, lane: str) -> list[Target]:
    """The targets assigned to ``lane``, in the lanes file's row order."""
    by_name = {t.name: t for t in spec.targets if t.name}
    assigned = spec.assignments
    return [by_name[name] for name in dict.fromkeys(r.target for r in spec.file.rows)
            if assigned.get(name) == lane and name in by_name]


def target_command(project: ProjectSpec, target: Target, lane: LaneDef, opts: TargetOptions) -> CommandSpec:
    """The command that runs ``target`` in ``lane``: declared for make/python, derived for cargo."""
    argv = None
    if opts.command is None:
        features = list(dict.fromkeys([*target.required_features, *lane.features, *opts.features]))
        if lane.mode == "per-board" and "qualification" not in features:
            features.append("qualification")
        argv = kind_of(project.kind).lane_command(
            target_kind=target.kind, target_name=target.name or "", features=features,
            locked=(project.root / "Cargo.lock").is_file(),
            ignored=lane.mode in ("ignored", "named") and target.kind == "test" and bool(target.harness),
            args=list(opts.args))
    if argv is None:
        if opts.command is None:  # pragma: no cover - load_lanes refuses this
            raise InputError(f"target {target.name}: no command")
        return opts.command
    return CommandSpec(argv=tuple(argv))


def plan_lane(project: ProjectSpec, spec: LanesSpec, lane: str, *, names: Sequence[str] = (),
              hosts: Sequence[Host] = (), other_names: Collection[str] = ()) -> list[PlannedStep]:
    """The steps of one lane run; ``names`` picks targets (required for named/per-board lanes).
    ``other_names`` are names that select something else (host checks), not typos."""
    if lane not in spec.lanes:
        raise InputError(f"no lane {lane!r}{did_you_mean(lane, spec.lanes)}")
    lane_def = spec.lanes[lane]
    targets = lane_targets(spec, lane)
    if names:
        # Names pick targets within each lane, so `nox -s host gate -- scan_parity` works;
        # a name no lane has is a typo.
        assigned = spec.assignments
        bad = [n for n in names if n not in assigned and n not in other_names]
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
                    env=dict(opts.env), timeout=opts.timeout,
                    requires=tuple(dict.fromkeys([*lane_def.requires, *opts.requires])), skip=opts.skip,
                    evidence_env=project.evidence_env, evidence_required=opts.evidence,
                    timing_only=lane_def.mode == "timing", gpus=opts.gpus,
                    max_skipped=opts.max_skipped if opts.max_skipped is not None else lane_def.max_skipped)
        if lane_def.mode != "per-board":
            steps.append(PlannedStep(**base))
            continue
        seen: set[tuple[str | None, str | None]] = set()
        for host in hosts:
            key = (host.board, host.facts.toolkit)
            if host.missing(base["requires"]) or key in seen:
                continue
            seen.add(key)
            steps.append(PlannedStep(**{**base, "name": f"{target.name}@{host.name}", "host": host.name}))
        if not seen:
            steps.append(PlannedStep(**base))  # placement will say why nothing can run it
    return steps
