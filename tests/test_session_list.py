"""Every session takes ``--list`` (the README says so): it lists what it would run, runs
nothing, exits 0 (issue 34 item 4)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import NOXFILE, Project

FILE_SECONDS = 30


def test_every_session_takes_list_and_runs_nothing(tinyinfer: Project) -> None:
    listing = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-l"], env=tinyinfer.env,
                             capture_output=True, text=True, timeout=300)
    sessions = re.findall(r"^[*-] (\S+)", listing.stdout, re.MULTILINE)
    assert {"host", "gate", "census", "package_verify", "evidence", "publish_dry_run", "signoff", "compare",
            "tag"} <= set(sessions), listing.stdout
    for name in sessions:
        extra = ("--", "quality", "--list") if name == "lane" else ("--", "--list")
        done = tinyinfer.nox(name, extra=extra)
        assert done.returncode == 0, (name, done.stdout[-2000:], done.stderr[-2000:])
    status = tinyinfer.relgate("status", "--json")  # nothing ran: no step row anywhere
    assert status.returncode != 0 or json.loads(status.stdout)["steps"] == [], status.stdout
