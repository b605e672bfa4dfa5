"""The census lists every defect in one run: a crate with seven planted lane defects (an
unknown lane among them) gets all seven from `relgate census`, `nox -s census` and `relgate
check`, exit 1; a lane session refuses it (exit 2) naming all seven at once, before anything
runs. The crate is a real one (tests/fixtures/seven_defects: cargo reads it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOXFILE, git
from relgate.core.errors import ManifestError
from relgate.manifest.lanes import load_lanes
from relgate.manifest.specs import parse_project

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "seven_defects"

# (rule, target, a piece of the message): one per planted defect, in census order
SEVEN = [
    ("unknown-lane", "parity_long", 'unknown lane "gtae" — did you mean "gate"? (qual/lanes.toml:6)'),
    ("unassigned", "host_shapes", "assign one in this commit"),
    ("stale-row", "scan_prefix", "(qual/lanes.toml:10); drop the row"),
    ("gate-ignore", "scan_parity", "tests/scan_parity.rs:7: #[ignore] in a gate-lane file"),
    ("bench-layout", "throughput", "uses the default test harness"),
    ("qualification-layout", "board_probe", "lives outside tools/qualification/ (tests/board_probe.rs)"),
    ("undeclared-file", "tests/orphan.rs", "not a declared target"),
]


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    root = tmp_path / "sevenkern"
    shutil.copytree(FIXTURE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seven defects")
    return root


def _env(root: Path) -> dict[str, str]:
    import os

    return {**os.environ, "RELGATE_MANIFESTS": str(root / "manifests"), "RELGATE_HOME": str(root.parent / "home"),
            "RELGATE_HOSTS": str(root.parent / "no-hosts-folder-here"), "NO_COLOR": "1"}


def _relgate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = _env(root)
    del env["RELGATE_HOSTS"]  # no hosts/ folder: the local host only
    return subprocess.run([sys.executable, "-m", "relgate.cli", "--workspace", str(root), *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def _census_lines(text: str) -> list[list[str]]:
    rules = {rule for rule, _, _ in SEVEN}
    return [line.split(None, 2) for line in text.splitlines() if line.split(None, 1)[:1] and
            line.split(None, 1)[0] in rules]


def _assert_seven(rows: list[list[str]]) -> None:
    assert [(r[0], r[1]) for r in rows] == [(rule, target) for rule, target, _ in SEVEN], rows
    for row, (_, _, says) in zip(rows, SEVEN):
        assert says in row[2], (row, says)


def test_cargo_reads_the_fixture_as_a_crate(crate: Path) -> None:
    import json

    done = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"], cwd=crate,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    names = {t["name"] for t in json.loads(done.stdout)["packages"][0]["targets"]}
    assert names == {"sevenkern", "scan_parity", "parity_long", "host_shapes", "arms", "board_probe", "throughput"}


def test_relgate_census_lists_all_seven_defects_in_one_run(crate: Path) -> None:
    done = _relgate(crate, "census")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""
    _assert_seven(_census_lines(done.stdout))
    assert done.stdout.splitlines()[-1] == "census: 6 targets, 6 lane rows, 7 violations"


def test_nox_census_lists_all_seven_defects_in_one_run(crate: Path) -> None:
    env = _env(crate)
    del env["RELGATE_HOSTS"]
    done = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "census"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    _assert_seven(_census_lines(done.stdout))


def test_relgate_check_lists_all_seven_after_the_plan(crate: Path) -> None:
    done = _relgate(crate, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    plan, census = done.stdout.split("lane census:\n", 1)
    assert "nox -s gate" in plan
    _assert_seven(_census_lines(census))


@pytest.mark.parametrize("lane", ["gate", "bench", "contract"])
def test_a_lane_session_refuses_naming_every_problem_at_once(crate: Path, lane: str) -> None:
    done = _relgate(crate, "lane", lane)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("relgate: ") for line in lines), lines
    assert len(lines) == 8, lines  # seven problems and the refusal
    assert lines[0] == ('relgate: qual/lanes.toml: lanes.parity_long: unknown lane "gtae" — did you mean "gate"? '
                        "(line 6)")
    others = [line.removeprefix("relgate: census: ").split(": ", 2) for line in lines[1:7]]
    assert [(o[0], o[1]) for o in others] == [(rule, target) for rule, target, _ in SEVEN[1:]], others
    assert lines[7] == (f"relgate: {lane}: refused: the lane table names a lane that does not exist "
                        "(7 problems above; relgate census lists the same)")
    assert not (crate.parent / "home").exists() or not any((crate.parent / "home").rglob("*.log"))  # nothing ran


def test_lanes_named_in_fleet_and_multihost_are_census_findings_too(crate: Path) -> None:
    lanes = crate / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '\n[fleet]\nevery_host = ["gaet"]\n\n[multihost.tp]\nlane = "contarct"\n'
                     '[multihost.tp.role.worker]\ncommand = "w"\nready_port = 7000\n'
                     '[multihost.tp.role.leader]\ncommand = "l"\n')
    done = _relgate(crate, "census")
    assert done.returncode == 1, done.stdout + done.stderr
    unknown = [line.split(None, 2) for line in done.stdout.splitlines() if line.startswith("unknown-lane")]
    assert [u[1] for u in unknown] == ["fleet.every_host[0]", "multihost.tp.lane", "parity_long"], unknown
    assert 'no lane "gaet" — did you mean "gate"? (qual/lanes.toml)' in unknown[0][2]
    assert 'no lane "contarct" — did you mean "contract"?' in unknown[1][2]
    refused = _relgate(crate, "lane", "gate")
    assert refused.returncode == 2
    assert any(line.endswith('fleet.every_host[0]: no lane "gaet" — did you mean "gate"?')
               for line in refused.stderr.splitlines()), refused.stderr


def test_another_manifest_problem_still_names_the_unknown_lane_too(crate: Path) -> None:
    """The load stops for a real manifest error; the unknown lane is listed beside it."""
    lanes = crate / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '\n[target.arms]\ntimeout = "ten"\n\n[target.scan_paritty]\ntimeout = 60\n')
    project = parse_project({"project": {"name": "sevenkern", "root": "..", "kind": "cargo",
                                         "lanes": "qual/lanes.toml"}}, path=crate / "manifests" / "project.toml")
    with pytest.raises(ManifestError) as err:
        load_lanes(project, crate / "manifests")
    problems = err.value.problems
    assert len(problems) == 3, problems
    assert problems[0].endswith('target.arms.timeout: expected an integer or a number, got the string "ten"')
    assert problems[1].endswith('target.scan_paritty: no such target — did you mean "scan_parity"?')
    assert problems[2].endswith('lanes.parity_long: unknown lane "gtae" — did you mean "gate"? (line 6)')
