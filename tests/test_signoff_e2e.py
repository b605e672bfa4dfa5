"""The whole runbook on the bundled Rust example, as a release engineer runs it: host, gate,
contract, the speed comparison against the previous release, evidence, package_verify,
publish_dry_run, the manual attestations, the sign-off (its changelog section committed
afterwards), and the tag. Real cargo, git, ledger; nothing faked.

``RELGATE_SIGNOFF_EXAMPLE=DIR`` copies the generated ``signoff.md`` and
``changelog-section.md`` to DIR (that is how ``examples/scankern/signoff/`` was made).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import EXAMPLES, Project, copy_example, git, speed_exit

FILE_SECONDS = 65  # about how long this file takes here: it starts early (tests/conftest.py)


def _run(done: subprocess.CompletedProcess[str], *codes: int) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode in (codes or (0,)), f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    return done


def _shape(text: str) -> list[str]:
    """The headings and the checklist's item column: what must not drift from the checked-in copy."""
    return [ln for ln in text.splitlines() if ln.startswith("#") and not ln.startswith("### `")] + \
        re.findall(r"^\| `([a-z0-9-]+)` \|", text, re.MULTILINE)


def _compare(crate: Project) -> int:
    """``nox -s compare`` against v0.3.0: timings of this machine, so any verdict, and the exit
    code that verdict owes."""
    done = _run(crate.nox("compare", extra=("--", "--previous", "v0.3.0")), 0, 1, 3, 4)
    assert done.returncode == speed_exit(done.stdout), done.stdout[-4000:]
    return done.returncode


def test_the_rust_example_end_to_end(tmp_path: Path) -> None:
    """Over 30 s: two releases of the Rust example built, tested, measured and signed off with
    real cargo (the previous release, then the candidate), the whole runbook once."""
    crate: Project = copy_example(tmp_path, "scankern")
    git(crate.root, "config", "user.name", "Release Engineer")
    git(crate.root, "config", "user.email", "re@example.invalid")
    # The previous release: its lanes' evidence accepted as 0.3.0, and its tag.
    _run(crate.nox("host", "gate", "contract"))
    _run(crate.relgate("evidence", "accept", "--release", "0.3.0"))
    git(crate.root, "tag", "-a", "-m", "scankern 0.3.0", "v0.3.0")
    # The candidate.
    (crate.root / "README.md").write_text((crate.root / "README.md").read_text() + "\nRelease candidate.\n")
    candidate = crate.commit("candidate for 0.4.0")

    _run(crate.nox("host", "gate", "contract"))
    code = _compare(crate)
    if code == 3:  # the policy: a move above 5 % asks for a second, separate batch
        code = _compare(crate)
    _run(crate.nox("evidence"))
    _run(crate.nox("package_verify", "publish_dry_run"))

    done = _run(crate.nox("signoff"), 1)
    doc = json.loads((crate.home / "signoff" / "signoff.json").read_text())
    status = {i["id"]: i["status"] for i in doc["items"]}
    assert doc["commit"] == candidate and doc["complete"] is False
    for item in ("host", "no-warnings", "gate", "contract", "evidence", "package"):
        assert status[item] == "passed", (item, doc["items"])
    assert status["qualification"] == "not-applicable"
    assert status["ci-green"] == status["maintainer-approval"] == "missing"
    assert status["speed"] == {0: "passed", 1: "failed", 3: "missing", 4: "missing"}[code]  # 4: undecided, open
    publish = next(i for i in doc["items"] if i["id"] == "publish")
    if publish["status"] != "passed":  # no registry on this host: not run, so the notes must say so
        assert publish["status"] == "missing" and "not run" in publish["reason"], publish
        _run(crate.relgate("skip", "publish", "--not-validated", "--by", "Release Engineer"))
    if status["speed"] == "missing":  # still asks for a rerun: not validated, and the notes say so
        _run(crate.relgate("skip", "speed", "--not-validated", "--by", "Release Engineer"))
    elif status["speed"] == "failed":  # it blocks: "not validated" would be untrue; only a skip with a reason
        _run(crate.relgate("skip", "speed", "--not-validated", "--by", "Release Engineer"))
        _run(crate.nox("signoff"), 1)
        items = json.loads((crate.home / "signoff" / "signoff.json").read_text())["items"]
        assert next(i for i in items if i["id"] == "speed")["status"] == "failed"
        _run(crate.relgate("skip", "speed", "--by", "Release Engineer", "--reason",
                           "the previous release's own code measures this far apart on this shared 2-core "
                           "machine; speed is qualified on the release board"))
    assert "tag refused" in _run(crate.nox("tag"), 1).stderr

    _run(crate.relgate("attest", "ci-green", "--by", "Release Engineer", "--note", "CI run for " + candidate[:12]))
    _run(crate.relgate("attest", "maintainer-approval", "--by", "Maintainer"))
    done = _run(crate.nox("signoff", extra=("--", "--changelog")))
    assert "complete" in done.stdout
    changelog = (crate.root / "CHANGELOG.md").read_text()
    release_block = changelog.split("## [0.4.0]", 1)[1].split("\n## [", 1)[0]
    assert "### Measurements and verification" in release_block
    assert git(crate.root, "status", "--porcelain").strip() == "M CHANGELOG.md"
    head = crate.commit("changelog: measurements and verification for 0.4.0")

    done = _run(crate.nox("tag"))
    doc_bytes = (crate.home / "signoff" / "signoff.json").read_bytes()
    doc = json.loads(doc_bytes)
    assert doc["commit"] == head and doc["same_tree"] == [head, candidate] and doc["complete"] is True
    import hashlib

    digest = hashlib.sha256(doc_bytes).hexdigest()
    assert f"signoff.json sha256: {digest}" in git(crate.root, "tag", "-l", "--format=%(contents)", "v0.4.0")
    assert git(crate.root, "rev-list", "-n1", "v0.4.0").strip() == head

    md = (crate.home / "signoff" / "signoff.md").read_text()
    assert md.startswith("# Sign-off: scankern 0.4.0\n\n**Verdict: complete.**")
    for heading in ("## What blocks", "## Checklist", "## Measurements: previous release against the candidate",
                    "## Evidence", "## Not run, and why", "## Decisions"):
        assert heading in md
    assert "attested by Maintainer" in md
    shipped = EXAMPLES / "scankern" / "signoff"
    target = os.environ.get("RELGATE_SIGNOFF_EXAMPLE")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(crate.home / "signoff" / "signoff.md", Path(target) / "signoff.md")
        shutil.copy(crate.home / "signoff" / "changelog-section.md", Path(target) / "changelog-section.md")
        shutil.rmtree(Path(target) / "plots", ignore_errors=True)
        if (crate.home / "signoff" / "plots").is_dir():
            shutil.copytree(crate.home / "signoff" / "plots", Path(target) / "plots")
    # What is checked into the example is what a run produces (commits, timings and ids aside).
    assert _shape((shipped / "signoff.md").read_text()) == _shape(md)
    assert (shipped / "changelog-section.md").read_text().splitlines()[0] == "### Measurements and verification"
