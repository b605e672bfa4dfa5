"""Glue shared by the sessions: load the workspace once per process, run a stage of the
registry (:mod:`relgate.stages.registry`), render errors once, map exit codes (once: :func:`_exit`).

Nothing of the engine is imported here at module level: `nox -l` only registers the
sessions, so listing them must not pay for the engine, its TOML, git or packaging code.
"""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nox

if TYPE_CHECKING:
    from relgate.manifest.workspace import Workspace

WORKSPACE = Path(__file__).resolve().parent.parent

# One workspace per process and place: `nox -s host gate contract` runs its sessions in one
# process, and they share the loaded manifests and what was detected (host facts, HEAD).
_LOADED: dict[tuple[str, ...], Workspace] = {}


def workspace(session: nox.Session) -> Workspace:
    from relgate.manifest.workspace import Workspace

    invoked_from = Path(session.invoked_from)
    key = (str(invoked_from), *(os.environ.get(v, "") for v in ("RELGATE_MANIFESTS", "RELGATE_HOSTS", "RELGATE_HOME")))
    if key not in _LOADED:
        _LOADED[key] = Workspace.load(WORKSPACE, invoked_from=invoked_from)
    return _LOADED[key]


def _exit(session: nox.Session, code: int, *, keep: tuple[int, ...] = (), see: str = "the table above") -> None:
    """The one mapping of a stage's exit code to the session's: 0 green; 2 (bad input), an
    interrupt (128 + signal) and the codes in ``keep`` stop nox itself with that code (nox would
    report any session failure as 1 and go on to the next session); any other fails the session."""
    if code in (2, *keep) or code >= 128:
        raise SystemExit(code)
    if code:
        session.error(f"{session.name}: red (exit {code}); see {see}")


def guarded(func: Callable[[], int]) -> int:
    from relgate.core.errors import guarded as engine_guarded

    return engine_guarded(func)


def run_options(session: nox.Session, argv: Sequence[str] | None = None, *, names: bool = True) -> Namespace:
    """The run options after ``--``; bad usage is bad input (exit 2)."""
    from relgate.manifest.options import options_from, parse_run_args

    holder: list[Namespace] = []
    args = session.posargs if argv is None else argv
    prog = f"nox -s {session.name} --"
    # How many sessions this nox invocation runs (nox keeps no public count of them).
    sessions = len(getattr(getattr(session, "_runner", None), "manifest", None) or ())

    def parse() -> int:
        parsed = parse_run_args(args, prog=prog, names=names)
        options_from(parsed).check_shared_reports(sessions)
        holder.append(parsed)
        return 0

    code = guarded(parse)
    _exit(session, code)
    return holder[0]


def stage_session(session: nox.Session, name: str, *, names: bool = True, posargs: Sequence[str] | None = None,
                  **fixed: Any) -> None:
    """A session that runs the stage ``name`` of :mod:`relgate.stages.registry` with the run
    options after ``--`` (and ``fixed``, what the session itself decides: the lane, the action):
    green when nothing failed (or it only listed), red otherwise; bad input exits 2."""
    args = run_options(session, posargs, names=names)
    vars(args).update(fixed, argv=["nox", "-s", session.name, *session.posargs])
    run_stage(session, name, args, lambda: workspace(session))


def command_session(session: nox.Session, name: str, *, posargs: Sequence[str] | None = None,
                    keep: tuple[int, ...] = (), see: str = "above") -> None:
    """A session that runs the stage ``name`` as ``relgate NAME …posargs`` would: the options
    read by the command line's own parser, in the folder nox was invoked from (relative
    RELGATE_* paths and --out mean what the user meant)."""
    from relgate.stages.catalog import load, parser

    os.chdir(session.invoked_from)
    argv = ["--workspace", str(WORKSPACE), name, *(session.posargs if posargs is None else posargs)]
    args = parser(name).parse_args(argv)
    args.argv = sys.argv
    run_stage(session, name, args, lambda: load(args), keep=keep, see=see)


def run_stage(session: nox.Session, name: str, args: Namespace, load: Callable[[], Workspace], *,
              keep: tuple[int, ...] = (), see: str = "the table above") -> None:
    """Run one stage from the registry; its exit code decides the session (:func:`_exit`)."""
    from relgate.stages.catalog import get

    stage = get(name)
    _exit(session, guarded(lambda: stage.run(load, args, sys.stdout).code), keep=keep, see=see)


def listed(session: nox.Session, what: str) -> bool:
    """``nox -s NAME -- --list`` for a session that has no targets to list: say what it runs and
    run nothing (every session takes --list). True when it was asked."""
    if "--list" not in session.posargs:
        return False
    print(f"{session.name}: {what} (--list: nothing runs)")
    return True
