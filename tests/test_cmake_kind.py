"""The cmake kind end to end on the bundled CMake example (examples/vecops): `relgate init`, then
`nox -s host gate contract`, the census against what CTest itself lists, `init --check`,
package_verify and publish_dry_run — with real cmake, ctest and gcc (and nvcc where it is)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import tomllib

from conftest import EXAMPLES, Project, git
from conftest import relgate_typed as relgate
from conftest import typed as run

FILE_SECONDS = 120  # about how long this file takes here: it starts early (tests/conftest.py)

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ctest") is None,
                                reason="needs cmake and ctest: apt-get install -y cmake")

def verdicts(output: str) -> dict[str, str]:
    """step → verdict, from the summary lines nox printed ("NAME  VERDICT  …")."""
    found = {}
    for line in output.splitlines():
        words = line.split()
        if len(words) >= 2 and words[1] in ("pass", "fail", "error", "not-run", "skipped"):
            found[words[0]] = words[1]
    return found


@pytest.fixture
def vecops(tmp_path: Path) -> Project:
    """The example in a git repository of its own, after `relgate init` (its manifests, hosts and
    ledger where init puts them: what a person gets)."""
    root = tmp_path / "vecops"
    shutil.copytree(EXAMPLES / "vecops", root, ignore=shutil.ignore_patterns("build"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    project = Project(root=root, manifests=root / "manifests", hosts=root / "hosts", home=root / ".relgate")
    done = relgate(project.root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cmake project at" in done.stdout and "CMakeLists.txt and CMakePresets.json" in done.stdout
    project.commit("relgate init")
    return project


def test_init_reads_ctest_labels_and_presets_without_configuring(vecops):
    root = vecops.root
    assert not (root / "build").exists()  # init configured nothing: no build tree, no cache
    lanes = tomllib.loads((root / "manifests" / "lanes.toml").read_text())
    rows, targets = lanes["lanes"], lanes["target"]
    assert {name for name, lane in rows.items() if lane == "gate"} == {"saxpy", "dot", "cuda_kernels"}, rows
    assert rows["version"] == "host" and rows["cli_contract_cuda"] == "contract", rows
    assert "cli_contract" in rows and rows["cli_contract"] == "contract", rows
    for name, target in targets.items():
        assert target["command"].startswith("ctest --test-dir "), target
        assert f"'^{name}$'" in target["command"] or f"^{name}$" in target["command"], target
        assert (root / target["path"]).is_file(), target  # the CMakeLists.txt that declares it
    gpu = sorted(name for name, t in targets.items() if "cuda" in t.get("requires", []))
    assert gpu == ["cli_contract_cuda", "cuda_kernels"], targets  # labelled cuda: a GPU host, else not run
    builds = tomllib.loads((root / "manifests" / "builds.toml").read_text())
    releases = builds["release"]
    assert "release" in releases and releases["release"]["run"].startswith("cmake --preset release"), releases
    assert any(r.get("requires") == ["nvcc"] for r in releases.values()), releases  # the CUDA preset
    checks = {c["name"]: c for c in builds["check"]}
    assert checks["build-tests"]["warnings"] == "deny", checks
    assert tomllib.loads((root / "manifests" / "project.toml").read_text())["project"]["kind"] == "cmake"


def test_host_gate_contract_are_green_and_the_cuda_arms_are_not_run(vecops):
    done = run(vecops.root, sys.executable, "-m", "nox", "-s", "host", "gate", "contract")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    rows = vecops.ledger_steps()
    by_step = {(r["session"], r["step"]): r for r in rows}
    assert by_step[("host", "lane-census")]["verdict"] == "pass"
    assert by_step[("host", "release")]["verdict"] == "pass"
    assert by_step[("host", "build-tests")]["verdict"] == "pass"
    cuda_release = by_step[("host", "release-cuda")]
    assert cuda_release["verdict"] == ("pass" if shutil.which("nvcc") else "not-run"), cuda_release
    lanes = tomllib.loads((vecops.root / "manifests" / "lanes.toml").read_text())
    for name, target in lanes["target"].items():
        lane = lanes["lanes"][name]
        if lane not in ("gate", "contract"):
            continue
        row = by_step[(lane, name)]
        if "cuda" in target.get("requires", []):
            assert row["verdict"] == "not-run", row  # no host here offers cuda: never green
        else:
            assert row["verdict"] == "pass", row
            assert row["tests"]["passed"] == 1 and row["tests"]["failed"] == 0, row  # CTest ran that one test


def test_the_census_names_a_ctest_test_that_has_no_lane(vecops):
    tests = vecops.root / "tests" / "CMakeLists.txt"
    tests.write_text(tests.read_text() + "\nadd_test(NAME soak_cpu COMMAND sh -c \"exit 0\")\n")
    vecops.commit("a test with no lane")
    census = relgate(vecops.root, "census")
    assert census.returncode == 1, census.stdout + census.stderr
    assert "undeclared-test" in census.stdout and "soak_cpu" in census.stdout, census.stdout
    assert "CTest lists it (ctest --show-only=json-v1)" in census.stdout, census.stdout
    drifted = relgate(vecops.root, "init", "--check")
    assert drifted.returncode == 1
    assert any(line.startswith("new target soak_cpu (ctest test, no labels") for line in drifted.stdout.splitlines()), \
        drifted.stdout


def test_init_check_is_clean_after_init_and_names_a_removed_test(vecops):
    assert relgate(vecops.root, "init", "--check").returncode == 0
    tests = vecops.root / "tests" / "CMakeLists.txt"
    text = tests.read_text()
    assert "NAME version COMMAND" in text
    tests.write_text(text.replace("NAME version COMMAND", "NAME version_v2 COMMAND"))
    drifted = relgate(vecops.root, "init", "--check")
    assert drifted.returncode == 1
    lines = drifted.stdout.splitlines()
    assert "manifests/lanes.toml: lane row for a removed target version" in lines, lines
    assert any(line.startswith("new target version_v2 (ctest test, no labels") for line in lines), lines


def test_a_warning_in_the_release_build_fails_it(vecops):
    src = next((vecops.root / "src").glob("*.c"))
    src.write_text(src.read_text() + "\nint vecops_unused_warning(void) { int unused; return 0; }\n")
    vecops.commit("a warning")
    done = run(vecops.root, sys.executable, "-m", "nox", "-s", "host", "--", "release")
    assert done.returncode != 0
    row = vecops.ledger_rows("host")["release"]
    assert row["verdict"] == "fail", row
    assert "warning" in (row.get("reason") or "").lower(), row


def test_package_verify_builds_and_tests_the_source_tarball_offline_and_publish_says_why_not(vecops):
    done = run(vecops.root, sys.executable, "-m", "nox", "-s", "package_verify")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    rows = vecops.ledger_rows("package_verify")
    for step in ("package", "extract", "inspect", "offline-build", "offline-tests"):
        assert rows[step]["verdict"] == "pass", (step, rows[step])
    assert rows["offline-tests"]["tests"]["passed"] >= 2, rows["offline-tests"]
    publish = run(vecops.root, sys.executable, "-m", "nox", "-s", "publish_dry_run")
    assert "a cmake project has no package registry" in publish.stdout + publish.stderr
    assert vecops.ledger_rows("publish_dry_run")["publish"]["verdict"] == "not-run"


def test_repository_text_that_init_writes_into_a_comment_stays_one_line(tmp_path: Path) -> None:
    """A CTest label (or name, or anything read from the repository) with line breaks in it is a
    comment in lanes.toml and builds.toml, never lines of TOML: what init writes parses to the
    tables it meant, nothing more."""
    root = tmp_path / "odd"
    root.mkdir()
    (root / "CMakeLists.txt").write_text(
        'project(odd)\nenable_testing()\nadd_test(NAME ok COMMAND true)\n'
        'set_tests_properties(ok PROPERTIES LABELS "gate\n[lane.gate]\nrequires = []\n#")\n'
        'add_test(NAME ${NOPE}\nx COMMAND true)\n')
    done = relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    lanes_text = (root / "manifests" / "lanes.toml").read_text()
    lanes = tomllib.loads(lanes_text)
    assert set(lanes) == {"lanes", "target"}, lanes  # no [lane.gate] from the label
    assert "labels gate\\n[lane.gate]\\nrequires = []\\n#" in lanes_text
    assert "\n[lane.gate]" not in lanes_text
    assert tomllib.loads((root / "manifests" / "builds.toml").read_text()).keys() == {"release", "check"}
    assert "not read: CMakeLists.txt:" in done.stdout


def test_init_check_prints_repository_text_one_line_per_drift(tmp_path: Path) -> None:
    """A new CTest test whose labels hold line breaks is one drift line on the console, its breaks
    shown, not lines of its own (nothing the repository says can print `no drift between …`)."""
    root = tmp_path / "odd"
    root.mkdir()
    (root / "CMakeLists.txt").write_text('project(odd)\nenable_testing()\nadd_test(NAME ok COMMAND true)\n'
                                         'set_tests_properties(ok PROPERTIES LABELS gate)\n')
    assert relgate(root, "init").returncode == 0
    with (root / "CMakeLists.txt").open("a") as cmake:
        cmake.write('add_test(NAME late COMMAND true)\n'
                    'set_tests_properties(late PROPERTIES LABELS "gate\nno drift between a and b\n#")\n')
    done = relgate(root, "init", "--check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("new target late ("), done.stdout
    assert "\\nno drift between a and b\\n" in done.stdout
