"""``nox -s gate`` … one session per built-in lane, ``nox -s lane -- NAME`` for the project's own,
and ``nox -s census``. Options after ``--``: target names, --require-all, --reuse,
--report FILE.json, --junit FILE.xml.

The lane sessions and their descriptions are listed here, not read from the engine, so
`nox -l` imports nothing of it; a test keeps this list equal to the engine's built-in lanes.
"""

from __future__ import annotations

import os
import sys

import nox

from ._common import command_session, stage_session

# The built-in lanes that are sessions of their own (the host lane's targets run inside
# `nox -s host`), with the engine's descriptions (relgate.manifest.lanes.BUILTIN_LANE_DEFS).
LANE_SESSIONS = {
    "gate": "every gate target must pass",
    "contract": "each target's ignored arms; every target runs, every red is listed",
    "record": "lists the record commands; runs only the targets named after --, one at a time",
    "toolkit": "the toolkit's own tests (gate-like: every target must pass, no bare #[ignore)",
    "bench": "runs the benches and keeps their timings; no verdict on the numbers",
    "qualification": "tools behind the qualification feature, named after --; one run per board and toolkit",
}


def _lane_session(lane: str, description: str) -> None:
    def session_func(session: nox.Session) -> None:
        stage_session(session, "lane", lane=lane)

    session_func.__name__ = lane
    session_func.__doc__ = f"{lane} lane: {description}."
    tags = [lane, "lanes", *(["qualify"] if lane in ("gate", "contract") else [])]
    nox.session(python=False, name=lane, tags=tags)(session_func)


for _lane, _description in LANE_SESSIONS.items():
    _lane_session(_lane, _description)


@nox.session(python=False, name="lane", tags=["lanes"])
def project_lane(session: nox.Session) -> None:
    """A project-defined lane: nox -s lane -- NAME [TARGET …] [--require-all] [--reuse]."""
    if not session.posargs or session.posargs[0].startswith("-"):
        print("relgate: nox -s lane -- NAME [TARGET …]: name the lane first", file=sys.stderr)
        raise SystemExit(2)  # bad usage, like every other usage error
    stage_session(session, "lane", lane=session.posargs[0], posargs=session.posargs[1:])


@nox.session(python=False, tags=["host", "lanes"])
def census(session: nox.Session) -> None:
    """Lane census: every declared target has exactly one lane; no stale rows; layout rules."""
    os.chdir(session.invoked_from)  # relative RELGATE_* paths mean what the user meant
    if "--list" in session.posargs:  # what the census checks; it runs nothing anyway
        print("census: every declared target has exactly one lane, no stale row, the layout rules "
              "(relgate census; README: the census rules)")
        return
    # 1 (violations) fails this session and the run goes on to print nox's summary; 2 (unreadable
    # input) stops nox with that code, as every session does
    command_session(session, "census", posargs=(), see="the table above")
