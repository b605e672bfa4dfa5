"""The sign-off's stages (``relgate measure add|compare|noise``, ``compare``, ``attest``, ``skip``,
``run``, ``signoff``, ``report``, ``tag``, ``verify-signoff``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO

from relgate.core.errors import InputError
from relgate.stages.registry import Outcome, Workspace, stage

__all__: list[str] = []


def _meta(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise InputError(f"--meta {pair}: expected KEY=VALUE")
        out[k.strip()] = v.strip()
    return out


def _measure_options(me: argparse.ArgumentParser) -> None:
    msub = me.add_subparsers(dest="measure_command", required=True, metavar="ACTION")
    add = msub.add_parser("add", help="record files of rows (a tracked baseline CSV) as one batch: each file one run")
    add.add_argument("name", metavar="NAME", help="a [measure.NAME] or [quality.NAME] of measurements.toml")
    add.add_argument("files", type=Path, nargs="+", metavar="FILE", help="one file per run of the batch")
    add.add_argument("--board", required=True, help="the board the rows were measured on")
    side = add.add_mutually_exclusive_group(required=True)
    side.add_argument("--release", metavar="VERSION", help="rows of that release (the previous one)")
    side.add_argument("--candidate", action="store_true", help="rows of this project's current commit")
    add.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata of every row")
    cmp_ = msub.add_parser("compare", help="previous release against the candidate, per board "
                                           "(exit 0 fine, 1 blocks, 3 rerun needed, 4 undecided, 2 bad input)")
    cmp_.add_argument("names", nargs="+", metavar="NAME")
    cmp_.add_argument("--board", help="only this board")
    cmp_.add_argument("--all", action="store_true", help="every row, not only those that do not pass")
    noise = msub.add_parser("noise", help="a board's A/A noise floor from recorded batches of one commit "
                                          "(nox -s compare -- --aa NAME measures them)")
    noise.add_argument("name", metavar="NAME")
    noise.add_argument("--board", help="only this board")


@stage("measure", "measurement batches: add rows measured elsewhere, compare", _measure_options)
def measure(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    ws = workspace()
    if args.measure_command == "add":
        from relgate.measure.measurements import add_measurements

        batch, rows = add_measurements(ws, args.name, args.files, board=args.board, release=args.release,
                                       candidate=args.candidate, meta=_meta(args.meta))
        whose = f"release {args.release}" if args.release else "the candidate"
        runs = len(args.files)
        print(f"{args.name}: batch #{batch}, {runs} run{'s' if runs != 1 else ''} of {rows} row(s) of {whose} "
              f"on {args.board}", file=out)
        return Outcome(code=0)
    if args.measure_command == "noise":
        from relgate.measure.noise import measure_noise

        return Outcome(code=measure_noise(ws, args.name, board=args.board))
    from relgate.measure.stage import compare_recorded

    return Outcome(code=compare_recorded(ws, args.names, board=args.board, show_all=args.all))


def _compare_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--previous", metavar="REF", help="build REF in its own worktree and measure it too")
    run.add_argument("--board", help="compare only this board")
    run.add_argument("--all", action="store_true", help="print every row, not only those that do not pass")
    run.add_argument("--aa", action="store_true", help="A/A: the candidate against itself, interleaved; records "
                                                      "each board's noise floor")
    run.add_argument("--until-decided", action="store_true", help="measure batch after batch until every row and "
                     "the suite are decided (or the budget is spent, or max_batches are pooled)")
    run.add_argument("--max-runs", type=int, metavar="N", help="with --until-decided: at most N runs a side")
    run.add_argument("--max-minutes", type=float, metavar="M", help="with --until-decided: at most M minutes")


@stage("compare", "measure (with --previous REF: REF and the candidate interleaved), then compare (same as nox -s "
       "compare)", _compare_options)
def compare(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.measure.stage import run_compare

    if (args.max_runs is not None or args.max_minutes is not None) and not args.until_decided:
        raise InputError("--max-runs and --max-minutes are the budget of --until-decided")
    if args.until_decided:
        from relgate.measure.until import Budget, run_until_decided

        if args.aa:
            raise InputError("compare --until-decided measures the candidate against the previous release; "
                             "it takes no --aa")
        ws = workspace()
        if ws.measurements is None:
            raise InputError(f"{ws.manifests_dir}: no measurements.toml")
        names = list(args.names) or [*ws.measurements.measures, *ws.measurements.quality]
        return Outcome(code=run_until_decided(ws, names, previous=args.previous, board=args.board, argv=args.argv,
                                              show_all=args.all, budget=Budget(max_runs=args.max_runs,
                                                                               max_minutes=args.max_minutes)))
    return Outcome(code=run_compare(workspace(), args.names, previous=args.previous, board=args.board,
                                    argv=args.argv, show_all=args.all, aa=args.aa))


def _attest_options(at: argparse.ArgumentParser) -> None:
    at.add_argument("item", metavar="ITEM")
    at.add_argument("--by", required=True, metavar="NAME")
    at.add_argument("--note")


@stage("attest", "attest a manual checklist item for the candidate commit", _attest_options)
def attest(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.decisions import attest

    return Outcome(code=attest(workspace(), args.item, by=args.by, note=args.note))


def _skip_options(sk: argparse.ArgumentParser) -> None:
    sk.add_argument("item", metavar="ITEM")
    sk.add_argument("--reason")
    sk.add_argument("--by", metavar="NAME")
    sk.add_argument("--not-validated", action="store_true",
                    help="choose the item's not_validated text (it goes into the changelog section)")


@stage("skip", "skip a checklist item for the candidate commit, with the reason", _skip_options)
def skip(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.decisions import skip

    return Outcome(code=skip(workspace(), args.item, reason=args.reason, by=args.by,
                             not_validated=args.not_validated))


def _run_options(mr: argparse.ArgumentParser) -> None:
    mr.add_argument("--item", metavar="ITEM")
    mr.add_argument("--note", help="what a reader needs (model file, context size, non-default flags)")
    mr.add_argument("--by", metavar="NAME")
    mr.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD")


@stage("run", "a manual run as a ledger step, linked to a checklist item: run [--item ITEM] -- CMD …", _run_options)
def manual_run(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.decisions import manual_run

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    return Outcome.of(manual_run(workspace(), cmd, item_id=args.item, note=args.note, by=args.by, argv=args.argv))


def _signoff_options(so: argparse.ArgumentParser) -> None:
    so.add_argument("--out", type=Path, metavar="DIR", help="where to write (default: HOME/signoff)")
    so.add_argument("--changelog", action="store_true", help="also put the section into the project's changelog")
    so.add_argument("--embed-logs", action="store_true", help="signoff.html carries each step's log tail (capped)")


@stage("signoff", "evaluate the checklist for the candidate, write signoff.md/.json and the changelog section "
       "(same as nox -s signoff)", _signoff_options)
def signoff(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.stage import run_signoff, write_changelog

    ws = workspace()
    result = run_signoff(ws, out_dir=args.out, embed_logs=args.embed_logs)
    if args.changelog:
        write_changelog(ws, result)
    return Outcome(code=0 if result.complete else 1)


def _report_options(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("run", nargs="?", metavar="RUN", help="a run id (or a unique prefix): that run's steps")
    rp.add_argument("--commit", metavar="SHA", help="a commit (a sha, short or full, or a ref) instead of HEAD")
    rp.add_argument("--html", type=Path, required=True, metavar="FILE", help="the page to write")
    rp.add_argument("--embed-logs", action="store_true", help="the page carries each step's log tail (capped)")


@stage("report", "the sign-off's HTML page for a run or a commit (default: HEAD)", _report_options)
def report(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.page_report import write_report

    write_report(workspace(), args.html, run=args.run, commit=args.commit, embed_logs=args.embed_logs)
    return Outcome(code=0)


def _tag_options(tg: argparse.ArgumentParser) -> None:
    tg.add_argument("--out", type=Path, metavar="DIR", help="the sign-off folder (default: HOME/signoff)")
    tg.add_argument("--key", type=Path, help="SSH private key to sign with (default: $RELGATE_SIGNING_KEY)")


@stage("tag", "create the annotated tag v{version} for a complete sign-off (nox -s tag)", _tag_options)
def tag(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.tag import run_tag

    run_tag(workspace(), out_dir=args.out, key=args.key)
    return Outcome(code=0)


def _verify_options(vs: argparse.ArgumentParser) -> None:
    vs.add_argument("file", type=Path, metavar="FILE")
    vs.add_argument("--allowed-signers", type=Path, required=True, metavar="FILE")
    vs.add_argument("--signature", type=Path, metavar="FILE.sig", help="default: FILE.sig")
    vs.add_argument("--commit", metavar="SHA", help="the commit the sign-off must stand for")


@stage("verify-signoff", "check a signed signoff.json offline (exit 0 good, 1 bad, 2 input)", _verify_options)
def verify_signoff(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.signoff.tag import verify_signoff

    return Outcome(code=verify_signoff(args.file, allowed_signers=args.allowed_signers, signature=args.signature,
                                       commit=args.commit))
