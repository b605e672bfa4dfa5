"""``nox -s evidence``: this commit's evidence against the last accepted baseline, per board."""

from __future__ import annotations

import nox

from ._common import listed, stage_session


@nox.session(python=False, tags=["evidence", "qualify"])
def evidence(session: nox.Session) -> None:
    """Evidence: diff each board's capture against the last accepted one; intentional.toml explains changes."""
    if listed(session, "each board's evidence capture at this commit against its last accepted baseline"):
        return
    stage_session(session, "evidence", names=False, evidence_command="check")
