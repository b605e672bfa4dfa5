"""``nox -s signoff``, ``nox -s tag`` and ``nox -s compare``: the sign-off before a tag.

    nox -s compare -- [NAME …] [--previous REF] [--board B] [--all]   measure, then previous vs candidate
    nox -s compare -- --aa NAME                                    the candidate against itself: noise floor
    nox -s signoff -- [--out DIR] [--changelog] [--embed-logs]   evaluate the checklist, write the report and page
    nox -s tag -- [--out DIR] [--key SSH_KEY]                 the annotated tag, for a complete sign-off
"""

from __future__ import annotations

import os

import nox

from ._common import WORKSPACE, listed


def _cli(session: nox.Session, command: str, *, keep: tuple[int, ...] = ()) -> None:
    """Run ``relgate COMMAND …posargs`` in-process; exit codes in ``keep`` (and 2, and signals)
    become nox's own exit status, any other red one fails the session."""
    from relgate.cli import main

    os.chdir(session.invoked_from)  # relative RELGATE_* paths and --out mean what the user meant
    code = main(["--workspace", str(WORKSPACE), command, *session.posargs])
    if code in (2, *keep) or code >= 128:
        raise SystemExit(code)
    if code:
        session.error(f"{session.name}: red (exit {code}); see above")


@nox.session(python=False, tags=["signoff"])
def compare(session: nox.Session) -> None:
    """Measurements: the candidate (with --previous REF, REF too, interleaved) against the previous release."""
    if not listed(session, "measure the candidate (and --previous REF), then compare them row by row"):
        _cli(session, "compare", keep=(3, 4))  # 3: measure another batch; 4: undecided (open, not a regression)


@nox.session(python=False, tags=["signoff"])
def signoff(session: nox.Session) -> None:
    """Sign-off: every checklist item for the candidate; signoff.md, signoff.html, signoff.json, changelog section."""
    if not listed(session, "evaluate every checklist item for the candidate; write signoff.md, signoff.html, "
                           "signoff.json"):
        _cli(session, "signoff")


@nox.session(python=False, tags=["signoff"])
def tag(session: nox.Session) -> None:
    """Tag: annotated v{version} with the sha256 of signoff.json, only when the sign-off is complete for HEAD."""
    if not listed(session, "the annotated release tag, only for a complete sign-off of HEAD"):
        _cli(session, "tag")
