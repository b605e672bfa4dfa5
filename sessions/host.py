"""``nox -s host``: the lane census, the host checks from builds.toml, the host-lane targets."""

from __future__ import annotations

import nox

from relgate.stages import run_host_checks

from ._common import run_options, run_stage


@nox.session(python=False, tags=["host", "qualify"])
def host(session: nox.Session) -> None:
    """Host checks: lane census, warning-free release builds, tests, --help, git diff --check."""
    options = run_options(session)
    run_stage(session, lambda ws: run_host_checks(ws, argv=["nox", "-s", session.name, *session.posargs],
                                                  options=options).ok(require_all=options.require_all))
