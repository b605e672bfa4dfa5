"""No false green, round three (issue 23, items 1 and 2): a typo in checklist.toml, evidence that
is not evidence, a product that was not produced, an accept on a dirty tree, and secrets on a
manual run's command line and in evidence cells. Real copies of the examples, real runs."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import Project, copy_example, git
from relgate.core.errors import ManifestError
from relgate.manifest.checklist import parse_checklist

# --- checklist.toml: every backend, board and item id it names is declared ------------------------

ONE_ITEM = """\
[release]
boards = ["host:local"]
backends = ["cpu"]
tag_requires = []

[[item]]
id = "cuda"
title = "CUDA backend tested"
auto = "session:gate"
targets = ["kernels-cuda"]
applies = ["cdua"]
"""


def test_a_typo_in_applies_is_exit_2_at_load_not_a_complete_signoff(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "checklist.toml").write_text(ONE_ITEM)
    done = tinyinfer.nox("signoff")
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'checklist.toml: item[0].applies[0]: unknown backend "cdua" — did you mean "cuda"?' in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tinyinfer.home / "signoff" / "signoff.json").exists()
    # spelled right, the item is outside the release's backends: not-applicable, and complete
    (tinyinfer.manifests / "checklist.toml").write_text(ONE_ITEM.replace('"cdua"', '"cuda"'))
    fixed = tinyinfer.nox("signoff")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    doc = json.loads((tinyinfer.home / "signoff" / "signoff.json").read_text())
    assert doc["items"][0]["status"] == "not-applicable"


C = Path("m/checklist.toml")
REL: dict[str, Any] = {"boards": ["host:local"], "backends": ["cpu", "cuda"]}
GATE: dict[str, Any] = {"id": "gate", "title": "Gate", "auto": "lane:gate"}


@pytest.mark.parametrize(("data", "message"), [
    ({"release": {**REL, "backends": ["cpu", "cdua"]}, "item": [GATE]},
     'release.backends[1]: unknown backend "cdua" — did you mean "cuda"?'),
    ({"release": REL, "item": [{**GATE, "applies": ["CUDA"]}]},
     'item[0].applies[0]: unknown backend "CUDA" — did you mean "cuda"?'),
    ({"release": REL, "item": [{**GATE, "applies": ["rcom"]}]},
     'item[0].applies[0]: unknown backend "rcom" — did you mean "rocm"?'),
    ({"release": {**REL, "backend_boards": {"cdua": ["NVIDIA H200"]}}, "item": [GATE]},
     'release.backend_boards.cdua: unknown backend "cdua" — did you mean "cuda"?'),
    ({"release": {**REL, "backends": [], "backend_boards": {"cdua": ["NVIDIA H200"]}}, "item": [GATE]},
     'release.backend_boards.cdua: unknown backend "cdua"'),
    ({"release": {**REL, "backend_boards": {"cuda": ["NVIDIA H200"]}},
      "item": [{**GATE, "boards": ["NVIDIA H2O0"]}]},
     'item[0].boards[0]: unknown board "NVIDIA H2O0" — did you mean "NVIDIA H200"?'),
    ({"release": {**REL, "boards": ["host:lcoal"]}, "item": [GATE]},
     'release.boards[0]: "host:lcoal": no host "lcoal" is declared — did you mean "local"?'),
    ({"release": {**REL, "backend_boards": {"cuda": ["host:gpu"]}}, "item": [GATE]},
     'release.backend_boards.cuda[0]: "host:gpu": no host "gpu" is declared'),
    ({"release": {**REL, "tag_requires": ["ci-gren"]},
      "item": [GATE, {"id": "ci-green", "title": "CI", "manual": True}]},
     'release.tag_requires[0]: no item "ci-gren" — did you mean "ci-green"?'),
    ({"release": {**REL, "known_backends": [""]}, "item": [GATE]}, "release.known_backends[0]: must not be empty"),
    ({"release": {"boards": ["host:local"]}, "item": [{**GATE, "applies": ["cpu"]}]},
     "release.backends: missing: item[0].applies names backends; list the ones this release covers"),
    ({"release": {"boards": ["host:local"], "backends": []}, "item": [{**GATE, "applies": ["cuda"]}]},
     "release.backends: empty: item[0].applies names backends"),
])
def test_every_name_the_checklist_refers_to_is_declared(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_checklist(data, path=C, version="1.0", hosts=("local",))
    assert any(line.startswith(f"{C}: ") and message in line for line in info.value.problems), info.value.problems


def test_a_backend_of_the_projects_own_is_declared_in_known_backends() -> None:
    data = {"release": {**REL, "backends": ["cpu", "hexagon"]}, "item": [{**GATE, "applies": ["hexagon"]}]}
    with pytest.raises(ManifestError):
        parse_checklist(data, path=C, version="1.0")
    spec = parse_checklist({**data, "release": {**data["release"], "known_backends": ["hexagon"]}}, path=C,
                           version="1.0")
    assert spec.item("gate").applies == ("hexagon",)
    ok = parse_checklist({"release": {**REL, "backend_boards": {"cuda": ["NVIDIA H200"]}},
                          "item": [{**GATE, "boards": ["NVIDIA H200", "host:local"]}]}, path=C, version="1.0",
                         hosts=("local",))
    assert ok.item("gate").boards == ("NVIDIA H200", "host:local")


def test_the_bundled_checklists_name_only_declared_things(tmp_path: Path) -> None:
    for name in ("tinyinfer", "scankern"):
        (tmp_path / name).mkdir()
        project = copy_example(tmp_path / name, name)
        done = project.relgate("check")
        assert done.returncode == 0, done.stdout + done.stderr  # the census of each is clean too
        assert "checklist.toml" not in done.stderr, done.stderr


# --- produces: a file the step did not write, whatever its modification time ------------------------

def _rows(project: Project) -> dict[str, dict]:
    done = project.relgate("status", "--json")
    assert done.returncode == 0, done.stderr
    return {r["step"]: r for r in json.loads(done.stdout)["steps"]}


def _builds(project: Project, run: str) -> None:
    (project.manifests / "builds.toml").write_text(
        f'[release.cpu]\nrun = "{run}"\nproduces = ["dist/engine.bin"]\n'
        '[[check]]\nname = "release-cpu"\nrelease = "cpu"\n')


def test_a_committed_product_whose_mtime_lies_in_the_future_was_not_produced(tinyinfer: Project) -> None:
    product = tinyinfer.root / "dist" / "engine.bin"
    product.parent.mkdir()
    product.write_bytes(b"\x7fELF committed, not built\n")
    tinyinfer.commit("a committed artifact")
    day = 24 * 3600
    os.utime(product, (product.stat().st_atime + day, product.stat().st_mtime + day))
    _builds(tinyinfer, "true")  # builds nothing
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    row = _rows(tinyinfer)["release-cpu"]
    assert row["verdict"] == "fail", row
    assert row["reason"].startswith("not produced: dist/engine.bin modified after the step ended"), row["reason"]
    _builds(tinyinfer, "cp README.md dist/engine.bin")  # a step that writes it: its mtime is now
    again = tinyinfer.nox("host")
    assert again.returncode == 0, again.stdout
    assert _rows(tinyinfer)["release-cpu"]["verdict"] == "pass"


# --- evidence = true: a capture with no cell, or a malformed row, is not evidence ---------------------

CELLS_SH = 'cat tests/cells.txt >> "$TINYINFER_EVIDENCE"\n'


def _cells(project: Project, text: str, *, commit: bool = True) -> None:
    """kernels-cpu (evidence = true) appends tests/cells.txt to the capture, and passes."""
    lanes = project.manifests / "lanes.toml"
    body = lanes.read_text()
    if "tests/cells.sh" not in body:
        lanes.write_text(body.replace('command = "make test"\n', 'command = "sh tests/cells.sh"\n', 1))
        (project.root / "tests" / "cells.sh").write_text(CELLS_SH)
    (project.root / "tests" / "cells.txt").write_text(text)
    if commit:
        project.commit("cells")


def _evidence_rows(project: Project) -> list[sqlite3.Row]:
    with sqlite3.connect(project.home / "ledger.sqlite3") as db:
        db.row_factory = sqlite3.Row
        return db.execute("SELECT * FROM evidence").fetchall()


def test_a_capture_of_only_comments_and_blank_lines_is_no_evidence(tinyinfer: Project) -> None:
    _cells(tinyinfer, "# relgate evidence\n\n   \n# suite\tarm\tkey\tvalue (a comment)\n")
    done = tinyinfer.nox("gate")
    assert done.returncode == 1, done.stdout
    row = _rows(tinyinfer)["kernels-cpu"]
    assert row["verdict"] == "error", row
    assert row["reason"].startswith("no evidence: $TINYINFER_EVIDENCE holds no cell"), row["reason"]
    assert _evidence_rows(tinyinfer) == []  # nothing stored that accept could take


@pytest.mark.parametrize(("text", "line", "what"), [
    ("# header\nsuite\tarm\tkey\tvalue\nno tabs in this row\n", 3, "got 1 fields"),
    ("suite arm key value\n", 1, "got 1 fields"),
    ("suite\tarm\tkey\tv\nsuite\tarm\tvalue-without-key\n", 2, "got 3 fields"),
    ("suite\t\tkey\tvalue\n", 1, "got an empty arm"),
    ("suite\tarm\tkey\tv\n\xff\n", 2, "not valid UTF-8"),
])
def test_a_malformed_capture_row_is_an_error_naming_file_and_line(tinyinfer: Project, text: str, line: int,
                                                                  what: str) -> None:
    path = tinyinfer.root / "tests" / "cells.txt"
    _cells(tinyinfer, "", commit=False)
    path.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.encode("latin-1"))
    tinyinfer.commit("cells")
    done = tinyinfer.nox("gate")
    assert done.returncode == 1, done.stdout
    row = _rows(tinyinfer)["kernels-cpu"]
    assert row["verdict"] == "error", row
    assert row["reason"].startswith("$TINYINFER_EVIDENCE ("), row["reason"]
    assert f":{line}: " in row["reason"] and what in row["reason"], row["reason"]
    assert _evidence_rows(tinyinfer) == []


ROWS = [  # the runner's check and the evidence parser read a capture alike
    "# c\nsuite\tarm\tkey\tvalue\n",
    "\ufeffsuite\tarm\tkey\tvalue\r\nsuite\tarm\tk2\tv\twith\ttabs\r\n",
    "\n \nsuite\tarm\tkey\t\n",
    "suite\tarm\tkey\n",
    "\tarm\tkey\tvalue\n",
    "suite\tarm\t\tvalue\n",
    "s\ta\tk\tv\n#\n\nplain words\n",
    "# only a comment\n",
    "s\ta\tk\tv\n  \t  \n",
]


@pytest.mark.parametrize("text", ROWS)
def test_the_runners_capture_check_reads_rows_as_the_evidence_parser_does(tmp_path: Path, text: str) -> None:
    from relgate.core.errors import InputError
    from relgate.evidence.cells import parse_cells
    from relgate.run.capture import check_capture

    path = tmp_path / "capture"
    path.write_bytes(text.encode())
    got = check_capture(path, lambda t: t, shown="F")
    try:
        cells = parse_cells(text, source="F")
    except InputError as exc:
        assert got.error == str(exc)
    else:
        assert got.error is None and (got.cells > 0) == bool(cells)


# --- evidence accept on a dirty tree --------------------------------------------------------------

def test_evidence_accept_on_a_dirty_tree_is_refused(tinyinfer: Project) -> None:
    _cells(tinyinfer, "suite\tarm\tkey\tclean-run\n")
    assert tinyinfer.nox("gate").returncode == 0  # a clean capture of this commit
    (tinyinfer.root / "tests" / "cells.txt").write_text("suite\tarm\tkey\tdirty-run\n")  # not committed
    assert tinyinfer.nox("gate").returncode == 0
    refused = tinyinfer.relgate("evidence", "accept")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1 and "the working tree is dirty" in refused.stderr, refused.stderr
    with sqlite3.connect(tinyinfer.home / "ledger.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM baselines").fetchone()[0] == 0
    git(tinyinfer.root, "checkout", "--", "tests/cells.txt")
    accepted = tinyinfer.relgate("evidence", "accept")
    assert accepted.returncode == 0, accepted.stderr
    assert "accepted host:local: 1 cells" in accepted.stdout


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
    status = json.loads(tinyinfer.relgate("status", "--json").stdout)["steps"][0]
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


def test_a_capture_of_comments_only_never_completes_the_evidence_item(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "checklist.toml").write_text(
        '[release]\nboards = ["host:local"]\nbackends = ["cpu"]\ntag_requires = []\n\n'
        '[[item]]\nid = "evidence"\ntitle = "Evidence clean against the last accepted release"\nauto = "evidence"\n')
    _cells(tinyinfer, "# relgate evidence\n# nothing measured\n")
    runs = [tinyinfer.nox("gate"), tinyinfer.relgate("evidence", "accept"), tinyinfer.nox("evidence")]
    assert [r.returncode for r in runs][:2] == [1, 2], [r.stdout + r.stderr for r in runs]
    signoff = tinyinfer.nox("signoff")
    assert signoff.returncode == 1, signoff.stdout + signoff.stderr
    doc = json.loads((tinyinfer.home / "signoff" / "signoff.json").read_text())
    assert not doc["complete"] and doc["items"][0]["status"] == "missing", doc["items"]


def test_accept_refuses_a_stored_capture_of_no_cell(tinyinfer: Project) -> None:
    # A ledger written before captures were checked may hold one: stored here through the
    # ledger's own API for the step of a real gate run.
    from conftest import ledger_of

    _cells(tinyinfer, "suite\tarm\tkey\tvalue\n")
    assert tinyinfer.nox("gate").returncode == 0
    empty = tinyinfer.root.parent / "empty.cells"
    empty.write_text("# relgate evidence\n\n")
    step = _rows(tinyinfer)["kernels-cpu"]["id"]
    with ledger_of(tinyinfer) as ledger:
        ledger.store_evidence(empty, step_id=step)
    refused = tinyinfer.relgate("evidence", "accept")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "no evidence on host:local: the captures hold no cell" in refused.stderr, refused.stderr


def test_an_evidence_check_that_compares_only_redacted_secrets_is_no_evidence(tinyinfer: Project) -> None:
    _cells(tinyinfer, f"suite\tarm\tapi_token\t{TOKEN}\n")
    assert tinyinfer.nox("gate").returncode == 0
    assert tinyinfer.relgate("evidence", "accept").returncode == 0
    check = tinyinfer.nox("evidence")
    assert check.returncode == 1, check.stdout
    row = _rows(tinyinfer)["host:local"]
    assert row["verdict"] == "error", row
    assert "no evidence: the capture and the baseline of release 0.3.0 hold no cell but 1 redacted" in row["reason"]
