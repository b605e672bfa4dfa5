"""Glue shared by the sessions: load the workspace, render errors once, map exit codes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import nox

from relgate.cli import guarded
from relgate.manifest.options import RunOptions, parse_run_options
from relgate.manifest.workspace import Workspace

WORKSPACE = Path(__file__).resolve().parent.parent


def _exit(session: nox.Session, code: int) -> None:
    if code == 2 or code >= 128:
        # Bad input (2) or an interrupt (128 + signal): stop nox itself, with that code;
        # nox would report any session failure as 1 and go on to the next session.
        raise SystemExit(code)
    if code:
        session.error(f"{session.name}: red (exit {code}); see the table above")


def run_options(session: nox.Session, argv: Sequence[str] | None = None, *, names: bool = True) -> RunOptions:
    """The run options after ``--``; bad usage is bad input (exit 2)."""
    holder: list[RunOptions] = []
    args = session.posargs if argv is None else argv
    prog = f"nox -s {session.name} --"
    code = guarded(lambda: holder.append(parse_run_options(args, prog=prog, names=names)) or 0)
    _exit(session, code)
    return holder[0]


def stage_session(session: nox.Session, stage: Callable[..., Any], *stage_args: Any, names: bool = True,
                  posargs: Sequence[str] | None = None) -> None:
    """A session that runs one engine stage with the run options after ``--``: green when
    nothing failed (or only listed), red otherwise; bad input exits 2."""
    options = run_options(session, posargs, names=names)
    argv = ["nox", "-s", session.name, *session.posargs]

    def green(ws: Workspace) -> bool:
        summary = stage(ws, *stage_args, argv=argv, options=options)
        return summary is None or summary.ok(require_all=options.require_all)

    run_stage(session, green)


def run_stage(session: nox.Session, stage: Callable[[Workspace], bool]) -> None:
    """Load the workspace and run one stage; bad input exits 2, a red stage fails the session."""
    load = lambda: Workspace.load(WORKSPACE, invoked_from=Path(session.invoked_from))  # noqa: E731
    _exit(session, guarded(lambda: 0 if stage(load()) else 1))
