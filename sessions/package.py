"""``nox -s package_verify`` and ``nox -s publish_dry_run``: the package the candidate commit
ships, built, extracted and verified offline; then the publish, rehearsed.
Options after ``--``: --require-all, --report FILE.json, --junit FILE.xml."""

from __future__ import annotations

import nox

from ._common import listed, stage_session

# The packaging engine is imported when one of these sessions runs, not with the noxfile:
# every other session (`nox -s host` …) would pay for it.


@nox.session(python=False, tags=["package"])
def package_verify(session: nox.Session) -> None:
    """Package: build it from the commit, extract it safely, inspect it, test it offline in the extracted tree."""
    if listed(session, "export, package, extract, inspect, then the offline build and tests of the "
                       "extracted package"):
        return
    stage_session(session, "package-verify", names=False)


@nox.session(python=False, tags=["package"])
def publish_dry_run(session: nox.Session) -> None:
    """Publish rehearsal: locked cargo publish --dry-run, or twine upload to a local index, install, import."""
    if listed(session, "the locked publish dry run (cargo) or an upload to a local index, install and import "
                       "(python)"):
        return
    stage_session(session, "publish-dry-run", names=False)
