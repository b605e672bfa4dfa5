"""Glue shared by the sessions: load the workspace once per process, render errors once,
map exit codes.

Nothing of the engine is imported here at module level: `nox -l` only registers the
sessions, so listing them must not pay for the engine, its TOML, git or packaging code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nox

if TYPE_CHECKING:
    from relgate.manifest.options import RunOptions
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


def _exit(session: nox.Session, code: int) -> None:
    if code == 2 or code >= 128:
        # Bad input (2) or an interrupt (128 + signal): stop nox itself, with that code;
        # nox would report any session failure as 1 and go on to the next session.
        raise SystemExit(code)
    if code:
        session.error(f"{session.name}: red (exit {code}); see the table above")


def guarded(func: Callable[[], int]) -> int:
    from relgate.core.errors import guarded as engine_guarded

    return engine_guarded(func)


def run_options(session: nox.Session, argv: Sequence[str] | None = None, *, names: bool = True) -> RunOptions:
    """The run options after ``--``; bad usage is bad input (exit 2)."""
    from relgate.manifest.options import parse_run_options

    holder: list[RunOptions] = []
    args = session.posargs if argv is None else argv
    prog = f"nox -s {session.name} --"
    # How many sessions this nox invocation runs (nox keeps no public count of them).
    sessions = len(getattr(getattr(session, "_runner", None), "manifest", None) or ())

    def parse() -> int:
        options = parse_run_options(args, prog=prog, names=names)
        options.check_shared_reports(sessions)
        holder.append(options)
        return 0

    code = guarded(parse)
    _exit(session, code)
    return holder[0]


def stage_session(session: nox.Session, stage: Callable[..., Any] | str, *stage_args: Any, names: bool = True,
                  posargs: Sequence[str] | None = None) -> None:
    """A session that runs one engine stage with the run options after ``--``: green when
    nothing failed (or only listed), red otherwise; bad input exits 2.

    A stage named by a string is one of :mod:`relgate.stages` that runs steps on the hosts:
    the git facts and the local host's detection are begun once the workspace is loaded, so
    their processes run while the engine is imported."""
    options = run_options(session, posargs, names=names)
    argv = ["nox", "-s", session.name, *session.posargs]

    def green(ws: Workspace) -> bool:
        run = stage
        if isinstance(run, str):
            if not options.list_only:
                from relgate.run.facts import start_facts

                start_facts(ws)
            import relgate.stages

            run = getattr(relgate.stages, run)
        summary = run(ws, *stage_args, argv=argv, options=options)
        return summary is None or summary.ok(require_all=options.require_all)

    run_stage(session, green)


def run_stage(session: nox.Session, stage: Callable[[Workspace], bool]) -> None:
    """Load the workspace (once per process) and run one stage; bad input exits 2, a red
    stage fails the session."""
    _exit(session, guarded(lambda: 0 if stage(workspace(session)) else 1))


def listed(session: nox.Session, what: str) -> bool:
    """``nox -s NAME -- --list`` for a session that has no targets to list: say what it runs and
    run nothing (every session takes --list). True when it was asked."""
    if "--list" not in session.posargs:
        return False
    print(f"{session.name}: {what} (--list: nothing runs)")
    return True
