"""``nox -s gate`` … one session per built-in lane, ``nox -s lane -- NAME`` for the project's own,
and ``nox -s census``. Options after ``--``: target names, --require-all, --reuse,
--report FILE.json, --junit FILE.xml."""

from __future__ import annotations

import os

import nox

from relgate.cli import main
from relgate.manifest.lanes import BUILTIN_LANE_DEFS
from relgate.stages import run_lane

from ._common import WORKSPACE, stage_session


def _lane_session(lane: str) -> None:
    def session_func(session: nox.Session) -> None:
        stage_session(session, run_lane, lane)

    session_func.__name__ = lane
    session_func.__doc__ = f"{lane} lane: {BUILTIN_LANE_DEFS[lane].description}."
    tags = [lane, "lanes", *(["qualify"] if lane in ("gate", "contract") else [])]
    nox.session(python=False, name=lane, tags=tags)(session_func)


for _lane in BUILTIN_LANE_DEFS:
    if _lane != "host":  # the host lane's targets run inside `nox -s host`
        _lane_session(_lane)


@nox.session(python=False, name="lane", tags=["lanes"])
def project_lane(session: nox.Session) -> None:
    """A project-defined lane: nox -s lane -- NAME [TARGET …] [--require-all] [--reuse]."""
    if not session.posargs:
        session.error("name the lane: nox -s lane -- NAME")
    stage_session(session, run_lane, session.posargs[0], posargs=session.posargs[1:])


@nox.session(python=False, tags=["host", "lanes"])
def census(session: nox.Session) -> None:
    """Lane census: every declared target has exactly one lane; no stale rows; layout rules."""
    os.chdir(session.invoked_from)  # relative RELGATE_* paths mean what the user meant
    code = main(["--workspace", str(WORKSPACE), "census"])
    if code:
        raise SystemExit(code)  # 1: violations, 2: unreadable input — the census's own exit codes
