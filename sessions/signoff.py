"""``nox -s signoff``, ``nox -s tag`` and ``nox -s compare``: the sign-off before a tag.

    nox -s compare -- [NAME …] [--previous REF] [--board B] [--all]   measure, then previous vs candidate
    nox -s compare -- --aa NAME                                    the candidate against itself: noise floor
    nox -s signoff -- [--out DIR] [--changelog] [--embed-logs]   evaluate the checklist, write the report and page
    nox -s tag -- [--out DIR] [--key SSH_KEY]                 the annotated tag, for a complete sign-off
"""

from __future__ import annotations

import nox

from ._common import command_session, listed


@nox.session(python=False, tags=["signoff"])
def compare(session: nox.Session) -> None:
    """Measurements: the candidate (with --previous REF, REF too, interleaved) against the previous release."""
    if not listed(session, "measure the candidate (and --previous REF), then compare them row by row"):
        # 3: measure another batch; 4: undecided (open, not a regression)
        command_session(session, "compare", keep=(3, 4))


@nox.session(python=False, tags=["signoff"])
def signoff(session: nox.Session) -> None:
    """Sign-off: every checklist item for the candidate; signoff.md, signoff.html, signoff.json, changelog section."""
    if not listed(session, "evaluate every checklist item for the candidate; write signoff.md, signoff.html, "
                           "signoff.json"):
        command_session(session, "signoff")


@nox.session(python=False, tags=["signoff"])
def tag(session: nox.Session) -> None:
    """Tag: annotated v{version} with the sha256 of signoff.json, only when the sign-off is complete for HEAD."""
    if not listed(session, "the annotated release tag, only for a complete sign-off of HEAD"):
        command_session(session, "tag")
