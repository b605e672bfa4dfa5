"""Secrets on a manual run's command line and in evidence cells: stored masked like a step's,
a cell keyed by a secret never compared or printed, and a check that compares only redacted
cells is no evidence. Real copies of the C example, real runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_evidence_captures import _cells, _evidence_rows

from conftest import Project

# --- secrets: a manual run's command line, and evidence cells keyed by a secret ----------------------

PASSWORD = "hunter2-planted-pw"
TOKEN = "planted-api-token-31337"
URL_PW = "planted-url-pw-4242"


def _every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_manual_runs_command_line_is_stored_redacted_like_a_steps(tinyinfer: Project) -> None:
    done = tinyinfer.relgate("run", "--item", "agent-checks", "--note", f"password={PASSWORD}", "--",
                             "sh", "-c", f'echo "$@"; echo {URL_PW}', "x", f"--password={PASSWORD}",
                             f"API_TOKEN={TOKEN}", f"https://relgate:{URL_PW}@127.0.0.1/x")
    assert done.returncode == 0, done.stdout + done.stderr
    for secret in (PASSWORD, TOKEN, URL_PW):
        assert secret not in done.stdout + done.stderr
        assert secret.encode() not in _every_byte(tinyinfer.home), secret  # the ledger, its WAL, the logs
    with sqlite3.connect(tinyinfer.home / "ledger.sqlite3") as db:
        [argv] = db.execute("SELECT argv FROM runs").fetchone()
        [command] = db.execute("SELECT command FROM steps").fetchone()
    assert "--password=***" in json.loads(argv) and "API_TOKEN=***" in json.loads(argv), argv
    assert "https://relgate:***@127.0.0.1/x" in json.loads(argv)
    assert command == ("sh -c 'echo \"$@\"; echo ***' x '--password=***' 'API_TOKEN=***' "
                       "'https://relgate:***@127.0.0.1/x'")
    status = tinyinfer.ledger_steps()[0]
    log = (tinyinfer.home / status["log_path"]).read_text()
    assert "--password=*** API_TOKEN=*** https://relgate:***@127.0.0.1/x\n***\n" in log, log


def test_a_cell_keyed_by_a_secret_is_stored_masked_and_the_diff_says_it_was_not_compared(tinyinfer: Project) -> None:
    _cells(tinyinfer, f"suite\tarm\tapi_token\t{TOKEN}\nsuite\tarm\tdbPassword\t{PASSWORD}\n"
                      "suite\tarm\ttokens_per_s\t41\nsuite\tarm\tplain\tkept\n")
    assert tinyinfer.nox("gate").returncode == 0
    [row] = _evidence_rows(tinyinfer)
    stored = (tinyinfer.home / row["path"]).read_text()
    assert "suite\tarm\tapi_token\t***\n" in stored and "suite\tarm\tdbPassword\t***\n" in stored
    assert "suite\tarm\ttokens_per_s\t41\n" in stored and "suite\tarm\tplain\tkept\n" in stored
    assert tinyinfer.relgate("evidence", "accept").returncode == 0
    _cells(tinyinfer, f"suite\tarm\tapi_token\t{TOKEN}-rotated\nsuite\tarm\tdbPassword\t{PASSWORD}\n"
                      "suite\tarm\ttokens_per_s\t41\nsuite\tarm\tplain\tkept\n")
    assert tinyinfer.nox("gate").returncode == 0
    check = tinyinfer.nox("evidence")
    assert check.returncode == 0, check.stdout
    assert "REDACTED suite / arm / api_token | the value is a secret: redacted, not compared" in check.stdout
    assert "2 identical, 0 moved, 0 only in base, 0 only in candidate, 2 redacted (not compared)" in check.stdout
    assert "MOVED" not in check.stdout
    for secret in (TOKEN, PASSWORD):
        assert secret.encode() not in _every_byte(tinyinfer.home), secret


def test_evidence_diff_of_two_files_never_compares_or_prints_a_secret_cell(tmp_path: Path, tinyinfer: Project) -> None:
    base, cand = tmp_path / "base.cells", tmp_path / "cand.cells"
    base.write_text(f"s\ta\tsigning_key\t{TOKEN}-1\ns\ta\tsecret\tsame-value-123\ns\ta\tn\t1\n")
    cand.write_text(f"s\ta\tsigning_key\t{TOKEN}-2\ns\ta\tsecret\tsame-value-123\ns\ta\tn\t1\n"
                    f"s\ta\tpassword\t{PASSWORD}\n")
    done = tinyinfer.relgate("evidence", "diff", str(base), str(cand))
    assert done.returncode == 1, done.stdout  # a cell only one side has is still a difference ...
    assert "REDACTED s / a / signing_key | the value is a secret: redacted, not compared" in done.stdout
    assert "ONLY-CANDIDATE s / a / password | ***" in done.stdout  # ... shown masked
    assert "2 identical, 0 moved, 0 only in base, 1 only in candidate, 1 redacted (not compared)" in done.stdout
    assert TOKEN not in done.stdout and PASSWORD not in done.stdout
    cand.write_text(f"s\ta\tsigning_key\t{TOKEN}-2\ns\ta\tsecret\tsame-value-123\ns\ta\tn\t1\n")
    same = tinyinfer.relgate("evidence", "diff", str(base), str(cand), "--json")
    assert same.returncode == 0, same.stdout
    doc = json.loads(same.stdout)
    assert doc["clean"] and doc["redacted"] == [{"suite": "s", "arm": "a", "key": "signing_key"}]
    assert TOKEN not in same.stdout


@pytest.mark.parametrize(("key", "secret"), [
    ("api_token", True), ("password", True), ("secret", True), ("db_password_hash", True), ("api_key", True),
    ("ssh-key", True), ("privateKey", True), ("apiToken", True), ("credentials", True), ("session_cookie", True),
    ("key", False), ("tokens_per_s", False), ("first_token_ms", False), ("keys_checked", False),
    ("monkey", False), ("author", False), ("variant", False),
])
def test_which_evidence_keys_name_a_secret(key: str, secret: bool) -> None:
    from relgate.core.redact import is_secret_key

    assert is_secret_key(key) is secret


def test_an_evidence_check_that_compares_only_redacted_secrets_is_no_evidence(tinyinfer: Project) -> None:
    _cells(tinyinfer, f"suite\tarm\tapi_token\t{TOKEN}\n")
    assert tinyinfer.nox("gate").returncode == 0
    assert tinyinfer.relgate("evidence", "accept").returncode == 0
    check = tinyinfer.nox("evidence")
    assert check.returncode == 1, check.stdout
    row = tinyinfer.ledger_rows()["host:local"]
    assert row["verdict"] == "error", row
    assert "no evidence: the capture and the baseline of release 0.3.0 hold no cell but 1 redacted" in row["reason"]
