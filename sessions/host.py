"""``nox -s host``: the lane census, the host checks from builds.toml, the host-lane targets."""

from __future__ import annotations

import nox

from ._common import stage_session


@nox.session(python=False, tags=["host", "qualify"])
def host(session: nox.Session) -> None:
    """Host checks: lane census, warning-free release builds, tests, --help, git diff --check."""
    stage_session(session, "host")
