"""No vacuous pass, as a rule of the runner (issue 34 item 1, issue 35 item 3): a test step
whose runner executed zero tests is ``not-run: 0 tests ran``; one whose tests were all skipped
is ``not-run: all N tests skipped``; ``max_skipped`` turns more skips into ``fail``; the
counts are kept with the step in the ledger and shown in the table. Real cargo, on a crate
whose gate files are cfg'd out by a feature and whose contract file has no ignored arm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import Project, copy_hosts, git

FILE_SECONDS = 60
FIXTURES = Path(__file__).resolve().parent / "fixtures"

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


def fixture_project(tmp_path: Path, name: str) -> Project:
    """A copy of ``tests/fixtures/NAME`` (its own manifests/ inside) in a fresh git repository."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root, ignore=shutil.ignore_patterns("target", "build"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return Project(root=root, manifests=root / "manifests", hosts=copy_hosts(tmp_path), home=tmp_path / "home")


@pytest.fixture
def cfgcrate(tmp_path: Path) -> Project:
    return fixture_project(tmp_path, "cfgcrate")


def test_a_gate_file_cfgd_out_and_a_contract_with_no_ignored_arm_are_not_run(cfgcrate: Project) -> None:
    done = cfgcrate.nox("gate", "contract")
    assert done.returncode == 0, done.stdout + done.stderr  # not-run fails nothing by default ...
    got = cfgcrate.ledger_rows()
    for name in ("gate_kernels", "gate_norm"):
        assert got[name]["verdict"] == "not-run", got[name]
        assert got[name]["reason"].startswith("0 tests ran (cargo: 1 test binary ran 0 tests (a file cfg'd out")
        assert got[name]["tests"]["passed"] == 0 and got[name]["exit_code"] == 0  # cargo said ok
    contract = got["contract_api"]
    assert contract["verdict"] == "not-run"
    assert contract["reason"] == ("0 tests ran (cargo: -- --ignored and the target has no ignored test "
                                  "(1 not ignored, filtered out))")
    assert "gate_kernels  not-run" in done.stdout and "0 tests ran" in done.stdout  # the table
    strict = cfgcrate.nox("gate", extra=("--", "--require-all"))
    assert strict.returncode == 1, strict.stdout  # ... and --require-all fails it
    assert "not run: gate_kernels: 0 tests ran" in strict.stdout


def test_a_lane_wide_feature_makes_the_gate_run_its_tests(cfgcrate: Project) -> None:
    lanes = cfgcrate.root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '\n[lane.gate]\nfeatures = ["cuda"]\n')
    cfgcrate.commit("gate: the cuda feature, one line for every target")
    done = cfgcrate.nox("gate")
    assert done.returncode == 0, done.stdout + done.stderr
    got = cfgcrate.ledger_rows()
    for name in ("gate_kernels", "gate_norm"):
        assert got[name]["verdict"] == "pass" and "--features cuda" in got[name]["command"], got[name]
        assert got[name]["tests"] == {"runner": "cargo", "passed": 1, "failed": 0, "skipped": 0, "filtered": 0,
                                      "text": "1 passed"}
    assert "gate_kernels  pass" in done.stdout and "1 passed" in done.stdout
    # a lane that needs a GPU says so: no host here offers cuda
    lanes.write_text(lanes.read_text() + 'requires = ["cuda"]\n')
    cfgcrate.commit("gate: needs a GPU")
    assert cfgcrate.nox("gate").returncode == 0
    got = cfgcrate.ledger_rows()
    assert got["gate_kernels"]["verdict"] == "not-run" and got["gate_kernels"]["reason"] == "no host offers cuda"


def test_skips_are_counted_and_max_skipped_turns_a_rise_into_a_fail(cfgcrate: Project) -> None:
    done = cfgcrate.nox("host")
    got = cfgcrate.ledger_rows()
    smoke = got["host_smoke"]
    assert smoke["verdict"] == "pass", smoke
    assert smoke["tests"]["passed"] == 1 and smoke["tests"]["skipped"] == 2 and smoke["tests"]["text"] == \
        "1 passed, 2 skipped"
    assert "1 passed, 2 skipped" in done.stdout
    unit = got["unit"]  # `cargo test --lib` of a library with no unit test
    assert unit["verdict"] == "not-run" and unit["reason"].startswith("0 tests ran (cargo: 1 test binary"), unit

    lanes = cfgcrate.root / "qual" / "lanes.toml"
    base = lanes.read_text()
    for limit, verdict in (("1", "fail"), ('"50%"', "fail"), ("2", "pass"), ('"70%"', "pass")):
        lanes.write_text(base + f"\n[target.host_smoke]\nmax_skipped = {limit}\n")
        cfgcrate.nox("host", extra=("--", "host_smoke"))
        row = cfgcrate.ledger_rows()["host_smoke"]
        assert row["verdict"] == verdict, (limit, row)
        if verdict == "fail":
            assert row["reason"] == f"2 of 3 tests skipped, above max_skipped = {limit.strip(chr(34))}"
    lanes.write_text(base + '\n[lane.host]\nmax_skipped = 0\n')  # lane-wide, the same rule
    cfgcrate.nox("host", extra=("--", "host_smoke"))
    assert cfgcrate.ledger_rows()["host_smoke"]["reason"] == "2 of 3 tests skipped, above max_skipped = 0"

    smoke_rs = cfgcrate.root / "tests" / "host_smoke.rs"
    smoke_rs.write_text(smoke_rs.read_text().replace("#[test]\nfn norm_of_nothing", "#[test]\n#[ignore]\nfn norm_of_nothing"))
    lanes.write_text(base)
    cfgcrate.nox("host", extra=("--", "host_smoke"))
    row = cfgcrate.ledger_rows()["host_smoke"]
    assert row["verdict"] == "not-run" and row["reason"] == "all 3 tests skipped (cargo)", row


def test_max_skipped_that_is_not_a_count_or_a_share_is_a_manifest_error(cfgcrate: Project) -> None:
    lanes = cfgcrate.root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '\n[target.host_smoke]\nmax_skipped = "many"\n[lane.gate]\nmode = "all"\n')
    done = cfgcrate.nox("host")
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'target.host_smoke.max_skipped: expected a share like "10%" (0 to 100), got \'many\'' in done.stderr
    assert "lane.gate.mode: unknown key" in done.stderr  # a built-in lane takes settings, not a mode
    assert "Traceback" not in done.stderr


# --- a make project whose default goal prints help: builds that built nothing, pytest, ctest ---

@pytest.fixture
def helpmake(tmp_path: Path) -> Project:
    return fixture_project(tmp_path, "helpmake")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc")
def test_a_release_build_that_prints_help_built_nothing(helpmake: Project) -> None:
    done = helpmake.nox("host")
    assert done.returncode == 1, done.stdout + done.stderr
    got = helpmake.ledger_rows()
    release = got["release"]
    assert release["verdict"] == "fail" and release["exit_code"] == 0, release
    assert release["reason"] == (f"built nothing: no file under {helpmake.root} was written during the step "
                                 "(declare what it builds in produces)")
    # `make test` builds the engine first and runs pytest: counted, a pass
    assert got["unit"]["verdict"] == "pass" and got["unit"]["tests"]["text"] == "2 passed", got["unit"]
    builds = helpmake.manifests / "builds.toml"
    builds.write_text(builds.read_text().replace('run = "make"', 'run = "make cpu"'))
    assert helpmake.nox("host").returncode == 0
    assert helpmake.ledger_rows()["release"]["verdict"] == "pass"
    # the same build again with no clean: make has nothing to do, and says so by writing nothing
    builds.write_text(builds.read_text().replace('clean = "make clean"\n', ""))
    again = helpmake.nox("host", extra=("--", "release"))
    assert again.returncode == 1 and helpmake.ledger_rows()["release"]["reason"].startswith("built nothing"), again.stdout


@pytest.mark.skipif(shutil.which("ctest") is None, reason="ctest is not on PATH: apt-get install -y cmake")
def test_pytest_all_skipped_pytest_exit_5_and_ctest_with_no_test_are_not_run(helpmake: Project) -> None:
    done = helpmake.nox("gate", extra=("--", "--require-all"))
    assert done.returncode == 1, done.stdout + done.stderr
    got = helpmake.ledger_rows()
    assert got["gpu-tests"]["verdict"] == "not-run" and got["gpu-tests"]["reason"] == "all 2 tests skipped (pytest)"
    assert got["gpu-tests"]["tests"]["skipped"] == 2
    assert got["exit5"]["verdict"] == "not-run" and got["exit5"]["exit_code"] == 5, got["exit5"]
    assert got["exit5"]["reason"] == "0 tests ran (pytest exit 5: no test collected, 2 deselected)"
    assert got["ctests"]["verdict"] == "not-run" and got["ctests"]["reason"] == "0 tests ran (ctest: No tests were found)"
    # a real failure under exit 5's neighbour stays a fail: pytest exit 1
    check = helpmake.root / "tests" / "check_engine.py"
    check.write_text(check.read_text().replace('"engine 0.1\\n"', '"engine 0.2\\n"'))
    helpmake.nox("host", extra=("--", "unit"))
    unit = helpmake.ledger_rows()["unit"]
    assert unit["verdict"] == "fail" and unit["tests"]["text"] == "1 passed, 1 failed", unit


# --- the checklist: an item of a backend passes only on a board that offers it ---------------------

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH (the CUDA build must compile)")
def test_the_bundled_host_cuda_item_is_not_passed_by_a_gpu_less_host(tmp_path: Path) -> None:
    from conftest import copy_example

    tiny = copy_example(tmp_path, "tinyinfer")
    done = tiny.nox("host", extra=("--", "release-cuda"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tiny.ledger_rows()["release-cuda"]["verdict"] == "pass"  # nvcc compiled here: a compile-only fact
    tiny.nox("signoff")
    items = {i["id"]: i for i in json.loads((tiny.home / "signoff" / "signoff.json").read_text())["items"]}
    cuda = items["host-cuda"]
    assert cuda["status"] == "missing", cuda
    assert cuda["reason"].startswith("no board of this release offers cuda (host:local: no such board")
    # a board declared for the backend is one that offers it
    checklist = tiny.manifests / "checklist.toml"
    checklist.write_text(checklist.read_text().replace(
        'backends = ["cpu", "cuda"]', 'backends = ["cpu", "cuda"]\nbackend_boards = { cuda = ["host:local"] }'))
    tiny.nox("signoff")
    items = {i["id"]: i for i in json.loads((tiny.home / "signoff" / "signoff.json").read_text())["items"]}
    assert items["host-cuda"]["status"] == "passed", items["host-cuda"]


def test_the_no_warnings_item_is_open_when_no_build_was_scanned(cfgcrate: Project) -> None:
    (cfgcrate.manifests / "checklist.toml").write_text(
        '[release]\nboards = ["host:local"]\n\n[[item]]\nid = "no-warnings"\n'
        'title = "No compiler warning in any release or test build"\nauto = "warnings"\n')
    cfgcrate.commit("a checklist")
    cfgcrate.nox("host")  # `cargo test --lib` with warnings ignored, the host lane: nothing scanned
    cfgcrate.nox("signoff")
    item = json.loads((cfgcrate.home / "signoff" / "signoff.json").read_text())["items"][0]
    assert item["status"] == "missing" and item["reason"].startswith("no build was scanned for warnings"), item
    builds = cfgcrate.manifests / "builds.toml"
    builds.write_text(builds.read_text() + 'warnings = "deny"\n')  # the test build is a build
    cfgcrate.commit("deny warnings in the test build")
    cfgcrate.nox("host")
    cfgcrate.nox("signoff")
    item = json.loads((cfgcrate.home / "signoff" / "signoff.json").read_text())["items"][0]
    assert item["status"] == "passed" and item["reason"].startswith("no warnings in the latest 1 scanned build(s)"), item
