"""``nox -s evidence``: this commit's evidence against the last accepted baseline, per board."""

from __future__ import annotations

import nox

from ._common import stage_session


@nox.session(python=False, tags=["evidence", "qualify"])
def evidence(session: nox.Session) -> None:
    """Evidence: diff each board's capture against the last accepted one; intentional.toml explains changes."""
    from relgate.stages import run_evidence_check

    stage_session(session, run_evidence_check, names=False)
