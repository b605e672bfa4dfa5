"""Hostile probes, round four (issue 36), the smaller items carried from the earlier set: a
secret typed into a manifest command, a measure naming a target that does not exist, a ledger
path that is a directory or a dangling symlink, a make project with no lanes file. Real
relgate processes, a real git repository of the C example, real make/gcc."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import Project

SECRETS = ("hunter2secret", "s3cr3tvalue99", "pw0rdInKwarg77")


def test_a_secret_typed_into_a_manifest_command_reaches_no_ledger_log_or_report(tinyinfer: Project,
                                                                             tmp_path: Path) -> None:
    builds = tinyinfer.manifests / "builds.toml"
    builds.write_text(builds.read_text() + '''
[[check]]
name = "db-smoke"
run = "echo connecting to postgres://admin:hunter2secret@db.invalid/x; echo '{\\"token\\": \\"s3cr3tvalue99\\"}'; echo 'login(password=\\"pw0rdInKwarg77\\")'"
''')
    report = tmp_path / "report.json"
    done = tinyinfer.relgate("host", "db-smoke", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {"console": done.stdout + done.stderr, "report": report.read_text()}
    with sqlite3.connect(tinyinfer.home / "ledger.sqlite3") as db:
        seen["ledger"] = json.dumps([list(r) for r in db.execute("SELECT * FROM steps")])
        command = db.execute("SELECT command FROM steps WHERE step = 'db-smoke'").fetchone()[0]
    logs = [p for p in tinyinfer.home.rglob("*.log")]
    assert logs
    seen.update({str(p): p.read_text(errors="replace") for p in logs})
    for where, text in seen.items():
        for secret in SECRETS:
            assert secret not in text, (where, secret)
    assert "postgres://admin:***@db.invalid/x" in command and '"token\\": \\"***' in json.dumps(command)
    assert "db-smoke" in seen["report"]  # the step is there, its secrets are not


def test_a_measure_naming_no_target_is_refused_at_check(tinyinfer: Project) -> None:
    path = tinyinfer.manifests / "measurements.toml"
    shipped = path.read_text()
    assert shipped.count('target = "matvec-bench" ') == 1
    path.write_text(shipped.replace('target = "matvec-bench" ', 'target = "nope" '))
    done = tinyinfer.relgate("check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'measurements.toml: measure.matvec.target: no target "nope" with a lane' in done.stderr, done.stderr
    path.write_text(shipped.replace('target = "matvec-bench" ', 'target = "matvec-bnech" '))
    done = tinyinfer.relgate("check")
    assert done.returncode == 2 and 'did you mean "matvec-bench"' in done.stderr, done.stderr
    path.write_text(shipped)
    assert tinyinfer.relgate("check").returncode in (0, 1)  # the shipped file: no such problem


@pytest.mark.parametrize("shape", ["directory", "dangling-symlink"])
def test_a_ledger_path_that_is_no_database_is_named_with_how_to_move_it(tinyinfer: Project, tmp_path: Path,
                                                                      shape: str) -> None:
    tinyinfer.home.mkdir(parents=True)
    db = tinyinfer.home / "ledger.sqlite3"
    if shape == "directory":
        db.mkdir()
        what = "a directory, not a ledger database"
    else:
        db.symlink_to(tmp_path / "gone.sqlite3")
        what = f"a symlink to {tmp_path / 'gone.sqlite3'}, which does not exist"
    done = tinyinfer.relgate("status")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"relgate: {db}: {what}" in done.stderr and f"mv {db} {db}.moved" in done.stderr, done.stderr
    assert "cannot create the ledger home" not in done.stderr
    assert not (tmp_path / "gone.sqlite3").exists()  # nothing created through the link


def test_a_make_project_with_no_lanes_file_says_so_in_host_as_in_lane(tinyinfer: Project, tmp_path: Path) -> None:
    (tinyinfer.manifests / "lanes.toml").unlink()
    for name in ("checklist.toml", "measurements.toml", "package.toml"):
        (tinyinfer.manifests / name).unlink(missing_ok=True)
    lane = tinyinfer.relgate("lane", "gate")
    assert lane.returncode == 2 and "the project declares no lanes" in lane.stderr, lane.stdout + lane.stderr
    report = tmp_path / "r.json"
    host = tinyinfer.relgate("host", "--report", str(report))
    steps = {s["step"]: s for s in json.loads(report.read_text())["steps"]}
    census = steps["lane-census"]
    assert census["verdict"] == "not-run" and "no lanes file" in census["reason"], census
    required = tinyinfer.relgate("host", "--require-all")
    assert required.returncode == 1, required.stdout  # not silently green
    assert host.returncode in (0, 1)
