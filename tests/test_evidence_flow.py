"""Evidence end to end, with real captures from the bundled Rust example (real cargo, git).

One copy of the crate for the module: release 0.4.0's captures are accepted once, then
each test makes a new commit, runs the lanes there and checks it against that baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Project, copy_example, git, ledger_of

INTENTIONAL = """
[[change]]
suite = "scan"
arm = "parity"
key = "variant"
reason = "the fast feature switches the kernels to the blocked variant"

[[change]]
suite = "scan"
arm = "parity"
reason = "blocked summation reorders f32 additions; errors move within the bound"
"""
STALE = """
[[change]]
suite = "golden"
reason = "re-recorded goldens (nothing here changed: this entry is stale)"
"""


@pytest.fixture(scope="module")
def crate(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = copy_example(tmp_path_factory.mktemp("evidence"), "scankern")
    done = project.nox("gate", "contract")
    assert done.returncode == 0, done.stdout[-3000:]
    accepted = project.relgate("evidence", "accept")
    assert accepted.returncode == 0, accepted.stderr
    assert "as release 0.4.0" in accepted.stdout
    project.base_commit = git(project.root, "rev-parse", "HEAD").strip()  # type: ignore[attr-defined]
    return project


def _reset(project: Project) -> None:
    git(project.root, "reset", "-q", "--hard", project.base_commit)  # type: ignore[attr-defined]
    git(project.root, "clean", "-qfd", "-e", "target")


def _candidate(project: Project, edit: dict[str, str], *sessions: str) -> None:
    """A new commit with ``edit`` (path → text appended), and its lane runs."""
    _reset(project)
    for rel, text in edit.items():
        path = project.root / rel
        path.write_text((path.read_text() if path.exists() else "") + text)
    project.commit(f"candidate: {', '.join(edit)}")
    done = project.nox(*(sessions or ("gate", "contract")))
    assert done.returncode == 0, done.stdout[-3000:]


def _evidence(project: Project) -> tuple[int, str]:
    done = project.nox("evidence")
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, done.stdout


def test_identical_captures_pass(crate: Project) -> None:
    _candidate(crate, {"README.md": "\nA documentation-only change.\n"})
    code, out = _evidence(crate)
    assert code == 0, out
    assert "against release 0.4.0" in out
    assert "0 moved, 0 only in base, 0 only in candidate; 0 intentional, 0 unexpected" in out


def test_moved_cells_fail_naming_each_cell(crate: Project) -> None:
    _candidate(crate, {"qual/lanes.toml": '\n[target.scan_parity]\nfeatures = ["fast"]\n'})
    code, out = _evidence(crate)
    assert code == 1, out
    assert "MOVED scan / parity / variant | serial -> blocked" in out
    assert "unexpected" in out and "red (1): host:local" in out


def test_intentional_changes_are_reported_and_pass(crate: Project) -> None:
    _candidate(crate, {"qual/lanes.toml": '\n[target.scan_parity]\nfeatures = ["fast"]\n',
                       "manifests/intentional.toml": INTENTIONAL})
    code, out = _evidence(crate)
    assert code == 0, out
    assert ("MOVED scan / parity / variant | serial -> blocked  "
            "[intentional: the fast feature switches the kernels to the blocked variant]") in out
    assert "0 unexpected" in out


def test_a_stale_intentional_entry_is_an_error(crate: Project) -> None:
    _candidate(crate, {"qual/lanes.toml": '\n[target.scan_parity]\nfeatures = ["fast"]\n',
                       "manifests/intentional.toml": INTENTIONAL + STALE})
    code, out = _evidence(crate)
    assert code == 1, out
    assert "intentional.toml: change[2]: golden / … matches no difference (stale); drop it" in out


def test_one_sided_cells_both_ways(crate: Project) -> None:
    _candidate(crate, {"qual/lanes.toml": '\n[target.segmented_parity]\nskip = "dropped in this candidate"\n'})
    done = crate.nox("record", extra=("--", "scan_record"))  # cells the baseline never had
    assert done.returncode == 0, done.stdout
    code, out = _evidence(crate)
    assert code == 1, out
    assert "ONLY-BASE scan / segmented / checksum_1000 |" in out
    assert "ONLY-CANDIDATE golden / u32 / inclusive_ramp16 |" in out


def test_accept_refuses_a_commit_whose_evidence_is_only_from_a_dirty_tree(crate: Project) -> None:
    _reset(crate)
    (crate.root / "README.md").write_text((crate.root / "README.md").read_text() + "\nRelease notes.\n")
    crate.commit("a commit whose lanes only ran on a dirty tree")
    (crate.root / "scratch.txt").write_text("untracked: the tree is dirty\n")
    done = crate.nox("gate")
    assert done.returncode == 0
    refused = crate.relgate("evidence", "accept", "--release", "0.5.0")
    assert refused.returncode == 2
    assert "the working tree is dirty" in refused.stderr  # on a dirty tree nothing is accepted at all
    (crate.root / "scratch.txt").unlink()
    clean = crate.relgate("evidence", "accept", "--release", "0.5.0")  # clean now: the captures are not
    assert clean.returncode == 2
    assert "evidence only from a dirty tree" in clean.stderr


def test_no_baseline_is_not_run_and_require_all_fails_it(tmp_path: Path) -> None:
    project = copy_example(tmp_path, "tinyinfer")
    assert project.nox("gate").returncode == 0
    done = project.nox("evidence")
    assert done.returncode == 0, done.stdout
    assert "no accepted baseline" in done.stdout and "not-run" in done.stdout
    strict = project.nox("evidence", extra=("--", "--require-all"))
    assert strict.returncode == 1


# --- the diff command on real capture files -----------------------------------------------------

@pytest.fixture(scope="module")
def capture(crate: Project) -> Path:
    """A real capture the crate's gate tests wrote (the baseline's merged file)."""
    with ledger_of(crate) as ledger:
        return crate.home / ledger.baselines()[0].path


def _diff(crate: Project, base: Path, cand: Path, *extra: str):  # type: ignore[no-untyped-def]
    return crate.relgate("evidence", "diff", str(base), str(cand), *extra)


def test_diff_of_a_real_capture_with_itself_is_identical(crate: Project, capture: Path) -> None:
    done = _diff(crate, capture, capture)
    assert done.returncode == 0
    cells = sum(1 for line in capture.read_text().splitlines() if line and not line.startswith("#"))
    assert done.stdout.strip() == f"{cells} identical, 0 moved, 0 only in base, 0 only in candidate"


def test_bom_and_last_write_wins_on_a_real_capture(crate: Project, capture: Path, tmp_path: Path) -> None:
    text = capture.read_text()
    row = next(line for line in text.splitlines() if line.startswith("scan\tparity\tvariant\t"))
    variant = tmp_path / "bom.cells"
    variant.write_bytes(b"\xef\xbb\xbf" + (text + "scan\tparity\tvariant\tblocked\n" + row + "\n").encode())
    done = _diff(crate, capture, variant)
    assert done.returncode == 0, done.stdout  # the BOM is tolerated; the last write (the original) wins
    moved = tmp_path / "moved.cells"
    moved.write_text(text + "scan\tparity\tvariant\tblocked\n")
    done = _diff(crate, capture, moved, "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["moved"] == [{"suite": "scan", "arm": "parity", "key": "variant", "old": "serial", "new": "blocked"}]


def test_malformed_row_names_file_and_line(crate: Project, capture: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.cells"
    lines = capture.read_text().splitlines()
    bad.write_text("\n".join([*lines, "scan\tparity\tno-value-column"]) + "\n")
    done = _diff(crate, capture, bad)
    assert done.returncode == 2
    assert f"bad.cells:{len(lines) + 1}: malformed evidence row" in done.stderr
    assert "Traceback" not in done.stderr
