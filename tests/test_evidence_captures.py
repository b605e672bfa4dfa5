"""Evidence that is not evidence (``evidence = true``): a capture with no cell or a malformed row
is an error naming file and line, the runner's check reads rows as the evidence parser does, an
accept on a dirty tree is refused, and a capture of no cell never completes the evidence item.
Real copies of the C example, real runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import Project, git

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
    row = tinyinfer.ledger_rows()["kernels-cpu"]
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
    row = tinyinfer.ledger_rows()["kernels-cpu"]
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
    step = tinyinfer.ledger_rows()["kernels-cpu"]["id"]
    with ledger_of(tinyinfer) as ledger:
        ledger.store_evidence(empty, step_id=step)
    refused = tinyinfer.relgate("evidence", "accept")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "no evidence on host:local: the captures hold no cell" in refused.stderr, refused.stderr
