"""The census agrees with the crate's own (issue 34 item 3), on real crates: auto-discovered
tests are targets, a doc comment that mentions ``#[ignore]`` is no ignored test, a stale row
is offered only a close name, and a red census step names its violations."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_no_vacuous_pass import fixture_project

from conftest import Project

FILE_SECONDS = 20

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


@pytest.fixture
def autocrate(tmp_path: Path) -> Project:
    return fixture_project(tmp_path, "autocrate")


def test_auto_discovered_tests_are_targets_and_the_census_is_green(autocrate: Project) -> None:
    census = autocrate.relgate("census")
    assert census.returncode == 0, census.stdout + census.stderr
    assert "no-targets" not in census.stdout and "0 violations" in census.stdout
    done = autocrate.nox("gate", "contract")
    assert done.returncode == 0, done.stdout + done.stderr
    got = autocrate.ledger_rows()
    assert got["lane-census"]["verdict"] == "pass"
    assert got["parity"]["verdict"] == "pass" and got["parity"]["tests"]["text"] == "1 passed"
    assert got["sweep"]["verdict"] == "pass" and "--ignored" in got["sweep"]["command"]


def test_a_doc_comment_that_mentions_ignore_is_not_an_ignored_test(autocrate: Project) -> None:
    parity = autocrate.root / "tests" / "parity.rs"
    assert "#[ignore]" in parity.read_text()  # in its //! doc comment
    assert autocrate.relgate("census").returncode == 0
    parity.write_text(parity.read_text() + "\n#[test] #[ignore] fn later() {}\n")
    census = autocrate.relgate("census")
    assert census.returncode == 1
    assert "tests/parity.rs:11: #[ignore] fn later() {} in a gate-lane file" in census.stdout


def test_a_new_test_file_without_a_lane_is_named_and_the_red_census_reason_lists_it(autocrate: Project) -> None:
    (autocrate.root / "tests" / "overflow.rs").write_text("#[test]\nfn t() {}\n")
    lanes = autocrate.root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '"scan_parity" = "gate"\n"layout" = "host"\n"overfow" = "gate"\n')
    census = autocrate.relgate("census")
    assert census.returncode == 1
    out = census.stdout
    assert "unassigned" in out and "overflow" in out
    assert 'rename it to "overflow"' in out and out.count("rename it to") == 1, out  # only the close name
    done = autocrate.nox("gate")
    assert done.returncode == 1
    reason = autocrate.ledger_rows()["lane-census"]["reason"]
    assert reason == "4 violations: unassigned overflow; stale-row layout, overfow, scan_parity", reason


def test_a_red_census_in_a_multi_session_run_lets_nox_print_its_summary(autocrate: Project) -> None:
    (autocrate.root / "tests" / "overflow.rs").write_text("#[test]\nfn t() {}\n")
    done = autocrate.nox("census", "gate")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "nox > Ran 2 sessions:" in done.stderr, done.stderr  # the run went on to gate and its summary
    assert "* census: aborted" in done.stderr and "* gate: aborted" in done.stderr, done.stderr
    listed = autocrate.nox("census", extra=("--", "--list"))
    assert listed.returncode == 0, listed.stdout + listed.stderr
