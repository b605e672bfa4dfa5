"""Glue shared by the sessions: load the workspace, render errors once, map exit codes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import nox

from relgate.cli import guarded
from relgate.workspace import Workspace

WORKSPACE = Path(__file__).resolve().parent.parent
# nox turns on DEBUG logging; gitpython would narrate every git call it makes.
logging.getLogger("git").setLevel(logging.WARNING)


def run_stage(session: nox.Session, stage: Callable[[Workspace], bool]) -> None:
    """Load the workspace and run one stage; bad input exits 2, a red stage fails the session."""
    code = guarded(lambda: 0 if stage(Workspace.load(WORKSPACE)) else 1)
    if code == 2 or code >= 128:
        # Bad input (2) or an interrupt (128 + signal): stop nox itself, with that code;
        # nox would report any session failure as 1 and go on to the next session.
        raise SystemExit(code)
    if code:
        session.error(f"{session.name}: red (exit {code}); see the table above")
