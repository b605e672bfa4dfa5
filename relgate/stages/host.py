"""The host stages: ``check`` (what would run), ``host`` (the host checks), ``census`` and
``lane`` (one lane's targets)."""

from __future__ import annotations

import argparse
from typing import IO

from relgate.core.errors import InputError
from relgate.manifest.options import add_run_options, options_from
from relgate.stages.registry import Outcome, Workspace, stage

__all__: list[str] = []


def _check_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", action="store_true",
                   help="also run the ledger's full integrity check (otherwise only after an unclean shutdown)")


@stage("check", "validate the manifests and hosts, print what would run", _check_options)
def check(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    """The manifests validated, the plan printed, then the census: 0 clean, 1 violations."""
    from relgate.remote.pool import host_pool
    from relgate.run.console import render_plan
    from relgate.stages.steps import census, whole_plan

    ws = workspace()
    if ws.measurements is not None and ws.lanes is not None:  # a measure naming no target: found here, not at compare
        from relgate.core.errors import ManifestError
        from relgate.manifest.workspace import measure_target_problems

        problems = measure_target_problems(ws.measurements, ws.lanes)
        if problems:
            raise ManifestError(problems)
    print(f"project {ws.project.name} {ws.project.version or '(no version)'} ({ws.project.kind}) at "
          f"{ws.project.root}", file=out)
    print(f"hosts: {', '.join(sorted(ws.hosts))}", file=out)
    for host in host_pool(ws, connect=False).hosts:  # declared facts: check dials no SSH host
        print(f"  {host.name}: {host.describe()}", file=out)
    render_plan([(s.command, s.note, s.steps) for s in whole_plan(ws)], out)
    code = 0
    if ws.lanes is not None:
        print("lane census:", file=out)
        code = census(ws, ws.lanes, lambda line: print(f"  {line}", file=out))
    if args.ledger:
        from relgate.ledger.store import Ledger

        if not Ledger.exists(ws.home):
            print(f"ledger: none yet under {ws.home}", file=out)
        else:
            with Ledger.open(ws.home, check=True) as ledger:  # a damaged one is refused: one line, exit 2
                print(f"ledger: {ws.home / 'ledger.sqlite3'}: full integrity check passed, "
                      f"{len(ledger.runs())} runs", file=out)
    return Outcome(code=code)


@stage("host", "run the host checks (same as nox -s host)", add_run_options)
def host(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    options = options_from(args)
    ws = workspace()
    if not options.list_only:  # the git facts and the local host's detection run while the engine is imported
        from relgate.run.facts import start_facts

        start_facts(ws)
    from relgate.stages.steps import run_host_checks

    return Outcome.of(run_host_checks(ws, argv=args.argv, options=options, out=out), require_all=options.require_all)


@stage("census", "the lane census: every target has exactly one lane (exit 0 clean, 1 violations)")
def census(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.stages.steps import census

    ws = workspace()
    lanes = ws.lanes
    if lanes is None:
        raise InputError(f"{ws.project.name}: no lanes file (project.lanes or lanes.toml in the manifest folder)")
    return Outcome(code=census(ws, lanes, lambda line: print(line, file=out)))


def _lane_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("lane", metavar="LANE")
    add_run_options(p)


@stage("lane", "run one lane (same as nox -s LANE)", _lane_options)
def lane(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    options = options_from(args)
    ws = workspace()
    if not options.list_only:
        from relgate.run.facts import start_facts

        start_facts(ws)
    from relgate.stages.steps import run_lane

    summary = run_lane(ws, args.lane, argv=args.argv, options=options, out=out)
    return Outcome.of(summary, require_all=options.require_all)
