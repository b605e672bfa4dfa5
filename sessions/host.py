"""``nox -s host``: the host checks from builds.toml, on the local host."""

from __future__ import annotations

import sys

import nox

from relgate.stages import run_host_checks

from ._common import run_stage


@nox.session(python=False, tags=["host", "qualify"])
def host(session: nox.Session) -> None:
    """Host checks: warning-free release builds, tests, --help renders, git diff --check."""
    run_stage(session, lambda ws: run_host_checks(ws, argv=["nox", "-s", session.name, *session.posargs]).ok)
