"""The stages that run planned steps on the hosts (host checks, lanes, evidence), each one call into the engine."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.schema import did_you_mean, display_path
from relgate.kinds.registry import kind_of
from relgate.lanes.plan import lane_targets, plan_lane
from relgate.lanes.steps import NO_TARGETS, census_lines, lane_steps, not_run_step, refuse_unknown_lanes
from relgate.lanes.steps import census_step as lane_census_step
from relgate.ledger.identity import project_identity
from relgate.ledger.store import BaselineRow, Ledger
from relgate.manifest.lanes import BUILTIN_LANE_DEFS, LanesSpec
from relgate.manifest.options import RunOptions
from relgate.manifest.workspace import Workspace
from relgate.remote.pool import host_pool
from relgate.run.facts import start_facts
from relgate.run.flow import candidate_facts, finish, run_plan, start_reports
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep, StepNotRun, check_names, check_placement, plan_host_checks, select_checks
from relgate.run.runner import RunSummary

if TYPE_CHECKING:
    from relgate.evidence.baselines import BoardReport, EvidenceReport

# The census and the evidence engine are imported by the stages that use them: `nox -s host`
# on a project without lanes pays for neither.

__all__ = ["census", "census_step", "plan_host", "run_host_checks", "run_lane",
           "PlannedSession", "whole_plan", "evidence_steps", "run_evidence_check", "accept_evidence"]


def census(ws: Workspace, lanes: LanesSpec, write: Callable[[str], None]) -> int:
    """The lane census: one line per violation, a count; 0 clean, 1 violations."""
    return census_lines(ws.project, lanes, write)


def census_step(ws: Workspace, lanes: LanesSpec) -> PlannedStep:
    """The lane census as a host check, in-process, with its own log, row and exit status."""
    return lane_census_step(ws.project, lanes)


def plan_host(ws: Workspace, *, names: Sequence[str] = ()) -> list[PlannedStep]:
    """The lane census, the host checks (release builds, matrices, …), the host-lane targets,
    and ``git diff --check``, in that order; ``names`` select host checks and host-lane
    targets, and just those run. A host a release target or check names must be declared
    (else exit 2)."""
    steps = _host_steps(ws, names=names)
    check_placement(ws, steps)
    return steps


def _host_steps(ws: Workspace, *, names: Sequence[str]) -> list[PlannedStep]:
    lanes = ws.lanes
    if names:
        checks = select_checks(plan_host_checks(ws.builds, ws.project.root), names)
        if lanes is None:
            unknown = [n for n in names if n not in check_names(ws.builds)]
            if unknown:
                raise InputError(f"host: no host check {unknown[0]!r}{did_you_mean(unknown[0], check_names(ws.builds))}")
            return checks
        return [*checks, *plan_lane(ws.project, lanes, "host", names=names, other_names=check_names(ws.builds))]
    if lanes is None:
        return [*_missing_manifests(ws), *plan_host_checks(ws.builds, ws.project.root)]
    extra = plan_lane(ws.project, lanes, "host")
    return [census_step(ws, lanes), *_missing_manifests(ws),
            *plan_host_checks(ws.builds, ws.project.root, extra=extra)]


# What a project of each kind needs a manifest for: without it, `nox -s host` says what it
# skipped (a not-run step, which --require-all fails), never silence.
# The census of Cargo.toml's targets; of a Makefile's targets, which only a lanes file declares
# (`relgate lane` is exit 2 without one: `nox -s host` says it too, as a not-run census).


def _missing_reasons(ws: Workspace) -> dict[str, str]:
    """step name → why it cannot run: a manifest the project's kind needs is absent."""
    reasons = {}
    folder = display_path(ws.manifests_dir)
    if ws.lanes is None and kind_of(ws.project.kind).needs_lanes:
        reasons["lane-census"] = (f"no lanes file (project.lanes, or lanes.toml in {folder}): the census of the "
                                  f"{ws.project.kind} project's targets did not run")
    if not ws.builds.declared and kind_of(ws.project.kind).needs_builds:  # the warning-free release builds
        reasons["host-checks"] = f"no builds.toml in {folder}: no release build or host check is declared, none ran"
    return reasons


def _missing_manifests(ws: Workspace) -> list[PlannedStep]:
    names = {"lane-census": "relgate census", "host-checks": "the builds.toml checks"}
    return [not_run_step(name, reason, project=ws.project, lane="host", action_name=names[name])
            for name, reason in _missing_reasons(ws).items()]


def run_host_checks(ws: Workspace, *, argv: Sequence[str], options: RunOptions = RunOptions(),
                    session: str = "host", out: TextIO = sys.stdout) -> RunSummary | None:
    """``nox -s host``: everything :func:`plan_host` plans, on the hosts that offer it
    (None with ``--list``: the plan was only printed). A lane table naming an unknown lane
    is refused (it runs the host lane's targets)."""
    if ws.lanes is not None:
        refuse_unknown_lanes(ws.project, ws.lanes, session)
    steps = plan_host(ws, names=options.names)
    if options.list_only:
        for step in steps:
            print(f"  {step.name}: {step.display()}", file=out)
        return None
    if options.names and not steps:
        print(f"{session}: none of the named targets is a host check or a host-lane target", file=out)
    start_facts(ws)
    pool = host_pool(ws, allow_hosts=options.allow_hosts)
    return finish(run_plan(ws, steps, session=session, argv=argv, reuse=options.reuse, pool=pool, out=out,
                           options=options),
                  options, out)


def run_lane(ws: Workspace, lane: str, *, argv: Sequence[str], options: RunOptions = RunOptions(),
             out: TextIO = sys.stdout) -> RunSummary | None:
    """One lane: the lane census first, then its targets; a lane that selects nothing is
    ``not-run``. None when the lane was only listed (``--list``, or a record lane with no
    target named); a qualification lane with no tool named lists them and is bad usage."""
    lanes = ws.lanes
    if lanes is None:
        raise InputError(f"{display_path(ws.manifests_dir)}: the project declares no lanes "
                         "(add lanes.toml here, or project.lanes pointing at the project's own file)")
    refuse_unknown_lanes(ws.project, lanes, lane)
    if lane not in lanes.lanes:
        plan_lane(ws.project, lanes, lane)  # raises: no lane NAME, with a did-you-mean
    start_facts(ws)
    pool = host_pool(ws, allow_hosts=options.allow_hosts)
    mode = lanes.lanes[lane].mode
    if options.list_only or (not options.names and mode in ("named", "per-board")):
        _list_lane(ws, lanes, lane, pool.hosts, out)
        if options.list_only or mode == "named":
            return None
        raise InputError(f"{lane}: no tool named; name the tools to run after -- "
                         f"(e.g. nox -s {lane} -- TOOL), or pass --list to only list them")
    # The reports say "running" before the pool dials the SSH hosts (pool.hosts connects and
    # detects them all) and before any remote step; the run's own start writes them again.
    start_reports(options, run_id=None, session=lane, facts=candidate_facts(ws))
    steps = lane_steps(ws.project, lanes, lane, names=options.names, hosts=pool.hosts,
                       other_names=check_names(ws.builds))
    if options.names and len(steps) == 1:
        print(f"{lane}: none of the named targets is in this lane", file=out)
    multihost = [m for m in lanes.multihost.values() if m.lane == lane and not options.names]
    if lane in lanes.fleet.every_host or mode == "per-board" or multihost:  # many hosts at once
        from relgate.remote.fleet import run_fleet_plan, spread
        from relgate.remote.roles import plan_multihost

        if multihost:  # the lane is not empty: its multi-host steps run
            steps = [s for s in steps if s.action_name != f"select the {lane} targets"]
        if lane in lanes.fleet.every_host:
            steps = spread(steps, pool.hosts)
        alone = [plan_multihost(m, pool, cwd=ws.project.root) for m in multihost]
        return finish(run_fleet_plan(ws, steps, session=lane, argv=argv, reuse=options.reuse, pool=pool,
                                     workers=lanes.fleet.workers, alone=alone, out=out, options=options),
                      options, out)
    return finish(run_plan(ws, steps, session=lane, argv=argv, reuse=options.reuse, pool=pool, out=out,
                           options=options),
                  options, out)


def _list_lane(ws: Workspace, lanes: LanesSpec, lane: str, hosts: Sequence[Host], out: TextIO) -> None:
    print(f"{lane}: {lanes.lanes[lane].description}", file=out)
    every = plan_lane(ws.project, lanes, lane, names=[t.name for t in lane_targets(lanes, lane) if t.name],
                      hosts=hosts)
    for step in every:
        print(f"  {step.name}: {step.display()}", file=out)
    session = f"nox -s {lane} --" if lane in BUILTIN_LANE_DEFS else f"nox -s lane -- {lane}"
    print(f"name the targets to run after --, e.g. {session} {every[0].target}" if every
          else f"{lane}: {NO_TARGETS}", file=out)


@record
class PlannedSession:
    """What one session would run: each step with where it would run, or why not."""

    command: str  # how to run it: "nox -s gate", "nox -s lane -- soak"
    steps: tuple[tuple[PlannedStep, str], ...]  # (step, "local" | "not run: …" | "skip: …")
    note: str | None = None  # "runs only the targets named after --", "no targets in this lane"


def whole_plan(ws: Workspace) -> list[PlannedSession]:
    """Everything ``nox -s host`` and each lane would run, placed on the declared hosts
    (what ``relgate check`` prints); nothing runs, and no SSH host is dialled (declared facts)."""
    pool = host_pool(ws, connect=False)
    missing = _missing_reasons(ws)  # a manifest the kind needs is absent: its step is not run

    def placed(steps: Sequence[PlannedStep]) -> tuple[tuple[PlannedStep, str], ...]:
        out = []
        for step in steps:
            where = missing[step.name] if step.action is not None and step.name in missing else pool.place(step)
            where = (f"skip: {step.skip}" if step.skip else f"not run: {where}" if isinstance(where, str)
                     else where.host.name)
            out.append((step, where))
        return tuple(out)

    sessions = [PlannedSession(command="nox -s host", steps=placed(plan_host(ws)))]
    if ws.lanes is None:
        return sessions
    for name, lane in ws.lanes.lanes.items():
        if name == "host":
            continue
        named = [t.name for t in lane_targets(ws.lanes, name) if t.name]
        targets = plan_lane(ws.project, ws.lanes, name, names=named, hosts=pool.hosts)
        if name in ws.lanes.fleet.every_host or any(m.lane == name for m in ws.lanes.multihost.values()):
            from relgate.remote.fleet import spread
            from relgate.remote.roles import plan_multihost

            targets = spread(targets, pool.hosts) if name in ws.lanes.fleet.every_host else targets
            targets += [plan_multihost(m, pool, cwd=ws.project.root) for m in ws.lanes.multihost.values()
                        if m.lane == name]
        note = (NO_TARGETS if not targets else
                "runs only the targets named after --" if lane.mode in ("named", "per-board") else None)
        command = f"nox -s {name}" if name in BUILTIN_LANE_DEFS else f"nox -s lane -- {name}"
        steps = [lane_census_step(ws.project, ws.lanes, lane=name), *targets]  # every lane session: census first
        sessions.append(PlannedSession(command=command, steps=placed(steps), note=note))
    return sessions


def evidence_steps(ws: Workspace, report: EvidenceReport) -> list[PlannedStep]:
    """One in-process step per board (its diff against the last accepted baseline), and one
    for the intentional-changes list (stale entries)."""

    def board_action(board: BoardReport) -> Callable[[Callable[[str], None]], int]:
        def action(write: Callable[[str], None]) -> int:
            for line in board.lines():
                write(line)
            if board.not_compared is not None:
                raise StepNotRun(board.not_compared)
            if board.no_evidence is not None:
                raise InputError(board.no_evidence)  # an error, never a clean comparison of nothing
            return 1 if board.unexpected else 0
        return action

    def stale_action(write: Callable[[str], None]) -> int:
        if not any(b.diff is not None for b in report.boards):
            raise StepNotRun("no board was compared, so no entry could be checked")
        for line in report.stale_lines():
            write(line)
        write(f"{len(ws.intentional)} intentional change(s) listed, {len(report.stale)} stale")
        return 1 if report.stale else 0

    def nothing(write: Callable[[str], None]) -> int:
        raise StepNotRun(f"no evidence recorded at {report.commit[:12]} and no accepted baseline; run the lanes")

    base = dict(commands=(), cwd=ws.project.root, lane="evidence")
    steps = [PlannedStep(name=b.board, target=b.board, action=board_action(b), action_name=f"evidence diff {b.board}",
                         **base) for b in report.boards]
    if not steps:
        steps.append(PlannedStep(name="evidence", action=nothing, action_name="evidence diff", **base))
    if ws.intentional:
        steps.append(PlannedStep(name="intentional-changes", action=stale_action,
                                 action_name=f"check {display_path(ws.intentional_path)}", **base))
    return steps


def run_evidence_check(ws: Workspace, *, argv: Sequence[str], options: RunOptions = RunOptions(),
                       out: TextIO = sys.stdout) -> RunSummary:
    """``nox -s evidence``: this commit's captures against the last accepted baseline, per board."""
    from relgate.evidence.baselines import check

    facts = candidate_facts(ws)
    with Ledger.open(ws.home) as ledger:
        report = check(ledger, commit=facts.commit, project=project_identity(ws, facts), changes=ws.intentional,
                       intentional_path=ws.intentional_path)
    for board in report.boards:
        for line in board.lines():
            print(line, file=out)
    for line in report.stale_lines():
        print(line, file=out)
    steps = evidence_steps(ws, report)
    return finish(run_plan(ws, steps, session="evidence", argv=argv, pool=host_pool(ws), out=out,
                           options=options), options, out)


def accept_evidence(ws: Workspace, *, release: str | None = None, commit: str | None = None,
                    out: TextIO = sys.stdout) -> list[BaselineRow]:
    """``relgate evidence accept``: this commit's clean captures become the release's baseline."""
    from relgate.evidence.baselines import accept

    if release is not None:
        from relgate.core.text import check_name

        check_name(release, "evidence accept --release")
    facts = candidate_facts(ws)
    release = release or ws.project.version
    if release is None:
        raise InputError(f"{display_path(ws.project.source)}: project.version is not set; name the release: "
                         "relgate evidence accept --release VERSION")
    if facts.dirty and (commit is None or facts.commit.startswith(commit)):
        # The captures of HEAD that could be accepted are an earlier clean run's, not what this tree ran.
        raise InputError(f"evidence accept: the working tree is dirty (HEAD {facts.commit[:12]} and uncommitted "
                         "changes): nothing is accepted; commit or stash the changes, run the lanes, then accept")
    with Ledger.open(ws.home) as ledger:
        rows = accept(ledger, commit=commit or facts.commit, release=release, project=project_identity(ws, facts))
    for row in rows:
        print(f"accepted {row.board}: {row.cells} cells of {row.commit_sha[:12]} as release {row.release} "
              f"({display_path(ws.home / row.path)})", file=out)
    return rows
