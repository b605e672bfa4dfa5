"""The ``relgate`` command line. Errors are rendered here, once, one line each."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from relgate import __version__
from relgate.core.errors import InputError, guarded
from relgate.kinds.registry import kind_names
from relgate.manifest.options import add_run_options, options_from
from relgate.manifest.workspace import Workspace

__all__ = ["main", "guarded"]


class _Unused:
    """Stands in for the parser of a command this invocation does not name: building every
    command's parser (two dozen, with their help texts) cost more than running one."""

    def __getattr__(self, name: str) -> Callable[..., _Unused]:
        return lambda *args, **kwargs: self


class _Only:
    """The subparsers action, registering only the command named ``only`` (all with None)."""

    def __init__(self, sub: argparse._SubParsersAction, only: str | None) -> None:  # type: ignore[type-arg]
        self._sub, self._only = sub, only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self._only is None or name == self._only:
            return self._sub.add_parser(name, **kwargs)
        return _Unused()


_VALUED = ("--workspace", "--manifests", "--hosts", "--home")  # the global options that take a value
_COMMAND_NAMES = frozenset({"check", "host", "pytest", "census", "lane", "package-verify", "publish-dry-run",
                           "status", "evidence", "measure", "compare", "attest", "skip", "run", "signoff", "report",
                           "tag",
                           "verify-signoff", "init", "schema"})


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, read as argparse reads the global options before it
    (``--opt VALUE``, ``--opt=VALUE``, unique abbreviations); None for anything else
    (``--help``, ``--version``, an unknown option, no command), which gets the whole parser."""
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            return arg if arg in _COMMAND_NAMES else None
        name = arg.partition("=")[0]
        if not name.startswith("--") or len(name) < 3:  # -h, --, another short option
            return None
        matches = [o for o in (*_VALUED, "--version", "--help") if o.startswith(name)]
        if len(matches) != 1 or matches[0] not in _VALUED:
            return None
        if "=" not in arg:
            next(args, None)
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, just that command's parser under the global options."""
    p = argparse.ArgumentParser(prog="relgate", description="Release qualification: an executable runbook.")
    p.add_argument("--version", action="version", version=f"relgate {__version__}")
    p.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace folder (default: cwd)")
    p.add_argument("--manifests", type=Path, help="manifest folder (default: $RELGATE_MANIFESTS or ./manifests)")
    p.add_argument("--hosts", type=Path, help="host folder (default: $RELGATE_HOSTS or ./hosts)")
    p.add_argument("--home", type=Path, help="ledger home (default: $RELGATE_HOME or ./.relgate)")
    sub: Any = _Only(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), only)
    ck = sub.add_parser("check", help="validate the manifests and hosts, print what would run")
    ck.add_argument("--ledger", action="store_true",
                    help="also run the ledger's full integrity check (otherwise only after an unclean shutdown)")
    host = sub.add_parser("host", help="run the host checks (same as nox -s host)")
    add_run_options(host)
    sub.add_parser("census", help="the lane census: every target has exactly one lane (exit 0 clean, 1 violations)")
    lane = sub.add_parser("lane", help="run one lane (same as nox -s LANE)")
    lane.add_argument("lane", metavar="LANE")
    add_run_options(lane)
    pv = sub.add_parser("package-verify", help="build the package from the commit, extract, inspect, test it "
                                               "offline (same as nox -s package_verify)")
    add_run_options(pv, names=False)
    pd = sub.add_parser("publish-dry-run", help="rehearse the publish: locked dry run, or upload to a local "
                                                "index, install, import (same as nox -s publish_dry_run)")
    add_run_options(pd, names=False)
    st = sub.add_parser("status", help="ledger rows for the current commit")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.add_argument("--commit", help="another commit (a sha, short or full, or a ref) instead of HEAD")
    st.add_argument("--project", help="only the rows of the project with this name")
    ev = sub.add_parser("evidence", help="evidence captures")
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
    ini = sub.add_parser("init", help="write a first manifest folder for the repository at PATH (--check: "
                                      "drift between the repository and its manifests)")
    ini.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH")
    ini.add_argument("--kind", choices=kind_names(), help="the kind, when the repository holds several")
    ini.add_argument("--manifests", dest="init_manifests", type=Path,
                     help="the manifest folder to write (default: PATH/manifests)")
    ini.add_argument("--force", action="store_true", help="replace files that exist")
    ini.add_argument("--dry-run", action="store_true", help="print every file it would write; write nothing")
    ini.add_argument("--check", action="store_true", help="one line per drift; exit 1 when anything drifted")
    pt = sub.add_parser("pytest", help="pytest in a fresh environment holding the wheel built from the tree "
                                       "(PATH, default cwd) and its test dependencies; never an installed copy")
    pt.add_argument("--root", type=Path, default=Path("."), help="the project root (default: cwd)")
    pt.add_argument("--group", help="a [dependency-groups] group of pyproject.toml (PEP 735)")
    pt.add_argument("--extra", action="append", default=[], help="an extra installed with the wheel")
    pt.add_argument("--requirements", help="a requirements file of the test dependencies, from the root")
    pt.add_argument("pytest_args", nargs="*", metavar="PYTEST-ARG", help="after --: pytest's arguments")
    sch = sub.add_parser("schema", help="JSON Schemas of the manifest files, or the reference page (--markdown)")
    sch.add_argument("names", nargs="*", metavar="NAME", help="project, builds, lanes, package, measurements, "
                                                               "checklist, intentional, host")
    sch.add_argument("--markdown", action="store_true", help="the manifest reference (docs/manifests.md)")
    sch.add_argument("--write", action="store_true", help="rewrite schemas/*.schema.json and docs/manifests.md")
    sch.add_argument("--out", type=Path, help="with --write: the folder to write into (default: relgate's checkout)")
    from relgate.signoff.commands import add_parsers  # sign-off: measure, attest, skip, run, signoff, tag …

    add_parsers(sub)
    return p


def _load(args: argparse.Namespace) -> Workspace:
    return Workspace.load(args.workspace, manifests=args.manifests, hosts=args.hosts, home=args.home)


def _cmd_check(args: argparse.Namespace) -> int:
    """The manifests validated, the plan printed, then the census: 0 clean, 1 violations."""
    from relgate.remote.pool import host_pool
    from relgate.run.console import render_plan
    from relgate.stages import census, whole_plan

    ws = _load(args)
    if ws.measurements is not None and ws.lanes is not None:  # a measure naming no target: found here, not at compare
        from relgate.core.errors import ManifestError
        from relgate.manifest.workspace import measure_target_problems

        problems = measure_target_problems(ws.measurements, ws.lanes)
        if problems:
            raise ManifestError(problems)
    print(f"project {ws.project.name} {ws.project.version or '(no version)'} ({ws.project.kind}) at "
          f"{ws.project.root}")
    print(f"hosts: {', '.join(sorted(ws.hosts))}")
    for host in host_pool(ws, connect=False).hosts:  # declared facts: check dials no SSH host
        print(f"  {host.name}: {host.describe()}")
    render_plan([(s.command, s.note, s.steps) for s in whole_plan(ws)], sys.stdout)
    code = 0
    if ws.lanes is not None:
        print("lane census:")
        code = census(ws, ws.lanes, lambda line: print(f"  {line}"))
    if args.ledger:
        from relgate.ledger.store import Ledger

        if not Ledger.exists(ws.home):
            print(f"ledger: none yet under {ws.home}")
        else:
            with Ledger.open(ws.home, check=True) as ledger:  # a damaged one is refused: one line, exit 2
                print(f"ledger: {ws.home / 'ledger.sqlite3'}: full integrity check passed, "
                      f"{len(ledger.runs())} runs")
    return code


def _run_stage(args: argparse.Namespace, stage: Callable[..., Any], *stage_args: Any) -> int:
    """Run a stage with the run options; 0 when it is green (None: it only listed)."""
    options = options_from(args)
    summary = stage(_load(args), *stage_args, argv=sys.argv, options=options)
    return 0 if summary is None or summary.ok(require_all=options.require_all) else 1


def _cmd_host(args: argparse.Namespace) -> int:
    from relgate.stages import run_host_checks

    return _run_stage(args, run_host_checks)


def _cmd_lane(args: argparse.Namespace) -> int:
    from relgate.stages import run_lane

    return _run_stage(args, run_lane, args.lane)


def _cmd_package_verify(args: argparse.Namespace) -> int:
    from relgate.package.verify import run_package_verify

    return _run_stage(args, run_package_verify)


def _cmd_publish_dry_run(args: argparse.Namespace) -> int:
    from relgate.package.publish import run_publish_dry_run

    return _run_stage(args, run_publish_dry_run)


def _cmd_census(args: argparse.Namespace) -> int:
    from relgate.stages import census

    ws = _load(args)
    lanes = ws.lanes
    if lanes is None:
        raise InputError(f"{ws.project.name}: no lanes file (project.lanes or lanes.toml in the manifest folder)")
    return census(ws, lanes, print)


def _cmd_status(args: argparse.Namespace) -> int:
    from relgate.run.console import render_status

    ws = _load(args)
    from relgate.ledger.gitfacts import resolve_commit
    from relgate.run.flow import candidate_facts

    commit = resolve_commit(ws.project.root, args.commit) if args.commit else candidate_facts(ws).commit
    from relgate.ledger.store import Ledger

    with Ledger.open(ws.home) as ledger:
        rows = ledger.steps(commit=commit, project=args.project)
    if args.json:
        json.dump({"commit": commit, "steps": [r.to_json() for r in rows]}, sys.stdout, indent=2)
        print()
    else:
        print(f"commit {commit}: {len(rows)} step(s) recorded")
        render_status(rows, ws.home)
    return 0


def _cmd_evidence(args: argparse.Namespace) -> int:
    if args.evidence_command == "diff":
        from relgate.evidence.cells import diff_command

        return diff_command(args.base, args.candidate, as_json=args.json, out=sys.stdout)
    from relgate.stages import accept_evidence, run_evidence_check

    if args.evidence_command == "accept":
        accept_evidence(_load(args), release=args.release, commit=args.commit)
        return 0
    return _run_stage(args, run_evidence_check)


def _cmd_init(args: argparse.Namespace) -> int:
    from relgate.manifest.drift import drift
    from relgate.manifest.init import plan_init, write_plan
    from relgate.manifest.schema import display_path

    root = args.path.resolve()
    manifests = args.init_manifests or args.manifests
    if args.check:
        mdir = (manifests or root / "manifests").resolve()
        if not (mdir / "project.toml").is_file():
            raise InputError(f"{display_path(mdir / 'project.toml')}: no such file (run relgate init first)")
        lines = drift(root, mdir, kind=args.kind)
        for line in lines:
            print(line)
        if not lines:
            print(f"no drift between {display_path(root)} and {display_path(mdir)}")
        return 1 if lines else 0
    plan = plan_init(root, kind=args.kind, manifests=manifests)
    print(f"{plan.kind} project at {display_path(plan.root)} (read with {plan.source})")
    if args.dry_run:
        for f in plan.files:
            state = " (exists)" if f.path.exists() else ""
            print(f"--- {display_path(f.path)}{state}")
            print(f.text.rstrip("\n"))
        if plan.gitignore:
            print(f"--- {display_path(plan.root / '.gitignore')} (appended)")
            print("\n".join(plan.gitignore))
        print("--dry-run: nothing written")
    else:
        for path, what in write_plan(plan, force=args.force):
            print(f"{what} {display_path(path)}")
    if plan.lanes_file is not None:
        print(f"lanes: {display_path(plan.lanes_file)} reused (project.lanes)")
    if plan.stale:
        print(f"stale rows ({len(plan.stale)}) in {display_path(plan.lanes_file or plan.root)}: "
              f"{', '.join(plan.stale)} — no such target; the census names them until they are dropped")
    if plan.unassigned:
        print(f"no lane yet ({len(plan.unassigned)}): {', '.join(plan.unassigned)} — the census names them "
              "until each has one")
    print("next:")
    for command in plan.next_commands:
        print(f"  {command}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from relgate.manifest import reference
    from relgate.manifest.keys import FILES

    known = [s.name for s in FILES]
    for name in args.names:
        if name not in known:
            from relgate.manifest.schema import did_you_mean

            raise InputError(f"schema {name}: no such manifest file{did_you_mean(name, known)} "
                             f"(one of {', '.join(known)})")
    if args.write:
        out = (args.out or Path(__file__).resolve().parent.parent).resolve()
        for rel, text in reference.generated_files().items():
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
                print(f"wrote {path}")
        return 0
    if args.markdown:
        sys.stdout.write(reference.markdown())
        return 0
    names = args.names or known
    if len(names) == 1:
        sys.stdout.write(reference.schema_text(names[0]))
    else:
        json.dump({n: reference.schema_of(n) for n in names}, sys.stdout, indent=2, ensure_ascii=False)
        print()
    return 0


def _cmd_pytest(args: argparse.Namespace) -> int:
    """``relgate pytest``: :mod:`relgate.run.testenv` in this process's interpreter."""
    from relgate.run.testenv import main as testenv

    argv = ["--root", str(args.root), *(["--group", args.group] if args.group else []),
            *(x for e in args.extra for x in ("--extra", e)),
            *(["--requirements", args.requirements] if args.requirements else []), "--", *args.pytest_args]
    return testenv(argv)


_COMMANDS = {"init": _cmd_init, "pytest": _cmd_pytest, "schema": _cmd_schema, "check": _cmd_check, "host": _cmd_host, "lane": _cmd_lane, "census": _cmd_census,
             "status": _cmd_status, "evidence": _cmd_evidence, "package-verify": _cmd_package_verify,
             "publish-dry-run": _cmd_publish_dry_run}


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(_command_of(argv)).parse_args(argv)
    if args.command not in _COMMANDS:
        from relgate.signoff.commands import COMMANDS

        return guarded(lambda: COMMANDS[args.command](args, _load))
    return guarded(lambda: _COMMANDS[args.command](args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
