"""Options of a run, from the CLI or from nox posargs (``nox -s gate -- --require-all``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record

__all__ = ["RunOptions", "parse_run_options", "parse_run_args", "add_run_options"]


@record
class RunOptions:
    names: tuple[str, ...] = ()
    require_all: bool = False
    reuse: bool = False
    report: Path | None = None
    junit: Path | None = None
    list_only: bool = False  # --list: list a lane's targets, run nothing
    allow_hosts: tuple[str, ...] = ()  # hosts with ``permission = "…"`` this run may use

    def check_shared_reports(self, sessions: int) -> None:
        """With several sessions in one invocation, a report without ``{session}`` in its name
        would be overwritten by each: bad usage."""
        if sessions < 2:
            return
        for flag, path in (("--report", self.report), ("--junit", self.junit)):
            if path is not None and "{session}" not in str(path):
                raise InputError(f"{flag} {path}: {sessions} sessions would each overwrite it; put {{session}} in "
                                 f"the name (e.g. {flag} 'out/{{session}}{path.suffix or '.xml'}')")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


def add_run_options(p: argparse.ArgumentParser, *, names: bool = True) -> None:
    p.add_argument("--require-all", action="store_true",
                   help="a step nothing could run (not-run) fails the run (also RELGATE_REQUIRE_ALL=1)")
    p.add_argument("--reuse", action="store_true",
                   help="keep passes already recorded for this exact commit on a clean tree")
    p.add_argument("--report", type=Path, metavar="FILE.json",
                   help="write a JSON report ({session} in the name: one file per session)")
    p.add_argument("--junit", type=Path, metavar="FILE.xml",
                   help="write a JUnit XML report ({session} in the name: one file per session)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME", dest="allow_hosts",
                   help="use this host although its host file asks for permission (repeatable)")
    if names:
        p.add_argument("--list", dest="list_only", action="store_true",
                       help="list the lane's targets and their commands; run nothing")
        p.add_argument("names", nargs="*", metavar="TARGET", help="run only these targets")


def options_from(ns: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> RunOptions:
    flag = environ.get("RELGATE_REQUIRE_ALL", "").strip().lower() in ("1", "true", "yes")
    return RunOptions(names=tuple(getattr(ns, "names", ()) or ()), require_all=ns.require_all or flag,
                      reuse=ns.reuse, report=ns.report, junit=ns.junit,
                      list_only=bool(getattr(ns, "list_only", False)),
                      allow_hosts=tuple(getattr(ns, "allow_hosts", ()) or ()))


def parse_run_args(argv: Sequence[str], *, prog: str, names: bool = True) -> argparse.Namespace:
    """The run options after ``--`` of a session; bad usage is bad input (exit 2)."""
    p = _Parser(prog=prog, add_help=False)
    add_run_options(p, names=names)
    return p.parse_args(list(argv))


def parse_run_options(argv: Sequence[str], *, prog: str, names: bool = True,
                      environ: Mapping[str, str] = os.environ) -> RunOptions:
    return options_from(parse_run_args(argv, prog=prog, names=names), environ)
