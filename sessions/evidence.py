"""``nox -s evidence``: this commit's evidence against the last accepted baseline, per board."""

from __future__ import annotations

import nox

from relgate.stages import run_evidence_check

from ._common import run_options, run_stage


@nox.session(python=False, tags=["evidence", "qualify"])
def evidence(session: nox.Session) -> None:
    """Evidence: diff each board's capture against the last accepted one; intentional.toml explains changes."""
    options = run_options(session, names=False)
    argv = ["nox", "-s", session.name, *session.posargs]
    run_stage(session, lambda ws: run_evidence_check(ws, argv=argv, options=options)
              .ok(require_all=options.require_all))
