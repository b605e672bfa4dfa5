"""The stages that read what the ledger holds: ``status`` (the rows of a commit) and
``evidence`` (diff two captures, accept a baseline, check this commit against it)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import IO

from relgate.manifest.options import add_run_options, options_from
from relgate.stages.registry import Outcome, Workspace, stage

__all__: list[str] = []


def _status_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--commit", help="another commit (a sha, short or full, or a ref) instead of HEAD")
    p.add_argument("--project", help="only the rows of the project with this name")


@stage("status", "ledger rows for the current commit", _status_options)
def status(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.run.console import render_status

    ws = workspace()
    from relgate.ledger.gitfacts import resolve_commit
    from relgate.run.flow import candidate_facts

    commit = resolve_commit(ws.project.root, args.commit) if args.commit else candidate_facts(ws).commit
    from relgate.ledger.store import Ledger

    with Ledger.open(ws.home) as ledger:
        rows = ledger.steps(commit=commit, project=args.project)
    if args.json:
        json.dump({"commit": commit, "steps": [r.to_json() for r in rows]}, out, indent=2)
        print(file=out)
    else:
        print(f"commit {commit}: {len(rows)} step(s) recorded", file=out)
        render_status(rows, ws.home, out)
    return Outcome(code=0)


def _evidence_options(ev: argparse.ArgumentParser) -> None:
    evsub = ev.add_subparsers(dest="evidence_command", required=True, metavar="ACTION")
    diff = evsub.add_parser("diff", help="compare two captures cell by cell (exit 0 same, 1 differ, 2 bad input)")
    diff.add_argument("base", type=Path)
    diff.add_argument("candidate", type=Path)
    diff.add_argument("--json", action="store_true")
    acc = evsub.add_parser("accept", help="store this commit's clean captures as the release's accepted baseline")
    acc.add_argument("--release", help="the release they stand for (default: project.version)")
    acc.add_argument("--commit", help="another commit (full sha) instead of HEAD")
    chk = evsub.add_parser("check", help="this commit's captures against the last accepted baseline (nox -s evidence)")
    add_run_options(chk, names=False)


@stage("evidence", "evidence captures", _evidence_options)
def evidence(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    if args.evidence_command == "diff":
        from relgate.evidence.cells import diff_command

        return Outcome(code=diff_command(args.base, args.candidate, as_json=args.json, out=out))
    from relgate.stages.steps import accept_evidence, run_evidence_check

    if args.evidence_command == "accept":
        accept_evidence(workspace(), release=args.release, commit=args.commit, out=out)
        return Outcome(code=0)
    options = options_from(args)
    return Outcome.of(run_evidence_check(workspace(), argv=args.argv, options=options, out=out),
                      require_all=options.require_all)
