"""``relgate init`` on repositories shaped like real ones (issue 34 item 2): a make project
whose default goal prints help and whose CUDA recipes call nvcc, a crate whose gate files are
cfg'd out by a CUDA feature. From init alone, no step that does nothing passes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_no_vacuous_pass import fixture_project

from conftest import Project

FILE_SECONDS = 40


def _bare(project: Project) -> Path:
    """The fixture without its manifests (init writes them), committed."""
    shutil.rmtree(project.root / "manifests")
    project.commit("no manifests")
    return project.root


def _relgate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relgate.cli", *args], cwd=root, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc")
def test_init_on_a_make_project_whose_default_goal_prints_help(tmp_path: Path) -> None:
    project = fixture_project(tmp_path, "helpmake")
    root = _bare(project)
    done = _relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    builds = (root / "manifests" / "builds.toml").read_text()
    assert 'run = "make"\n' not in builds and 'run = "make all"' not in builds and 'run = "make help"' not in builds
    assert '[release.default]\nclean = "make clean"\nrun = "make cpu"\nproduces = ["build/engine"]\n' in builds
    assert ('[release.cuda]\nclean = "make clean"\nrun = "make cuda"\nproduces = ["build/engine-cuda"]\n'
            'requires = ["nvcc"]') in builds
    assert "#   make help: only prints or removes" in builds and "#   make all: only prints or removes" in builds
    package = (root / "manifests" / "package.toml").read_text()
    assert 'build_command = "make cpu"' in package
    for path in (root / "manifests").glob("*.toml"):
        assert "file://" not in path.read_text() and "None" not in path.read_text(), path
    check = _relgate(root, "init", "--check")
    assert check.returncode == 0, check.stdout  # right after init: nothing new
    project.commit("relgate init")
    host = subprocess.run([sys.executable, "-m", "nox", "-s", "host"], cwd=root, capture_output=True, text=True,
                          timeout=600, env={**project.env, "RELGATE_MANIFESTS": str(root / "manifests"),
                                            "RELGATE_HOSTS": str(root / "hosts"), "RELGATE_HOME": str(project.home)})
    got = project.ledger_rows()
    assert got["release"]["verdict"] == "pass", got["release"]
    assert got["test"]["verdict"] == "pass" and got["test"]["tests"]["text"] == "2 passed"
    cuda = got["release-cuda"]
    if shutil.which("nvcc") is None:
        assert cuda["verdict"] == "not-run" and cuda["reason"] == "no host offers nvcc"
    else:  # it compiled (no GPU is needed for that) and wrote what it produces
        assert cuda["verdict"] == "pass", cuda
    assert host.returncode == 0, host.stdout[-3000:] + host.stderr[-2000:]
    # no version and no changelog: the sign-off says so, never "None" nor a CHANGELOG.md that is not there
    signoff = subprocess.run([sys.executable, "-m", "relgate.cli", "signoff"], cwd=root, capture_output=True,
                             text=True, timeout=600, env={**project.env, "RELGATE_MANIFESTS": str(root / "manifests"),
                                                          "RELGATE_HOSTS": str(root / "hosts")})
    assert "sign-off of helpmake (no version) at" in signoff.stdout, signoff.stdout + signoff.stderr
    md = (project.home / "signoff" / "signoff.md").read_text()
    assert "None" not in md and "CHANGELOG.md" not in md, md
    assert "- Release notes: none (no changelog" in md


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_init_on_a_crate_whose_gate_files_need_the_cuda_feature(tmp_path: Path) -> None:
    project = fixture_project(tmp_path, "cfgcrate")
    root = _bare(project)
    lanes = root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '"old_kernels" = "gate"\n')  # a row left behind
    project.commit("a stale row")
    done = _relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stale rows (1) in qual/lanes.toml: old_kernels" in done.stdout
    settings = (root / "manifests" / "lanes.toml").read_text()
    assert '[lane.gate]\nfeatures = ["cuda"]\nrequires = ["cuda"]' in settings
    assert "\n[lanes]\n" not in settings  # the project's own table stays the one
    builds = (root / "manifests" / "builds.toml").read_text()
    assert '[matrix.cuda]' in builds and 'features = ["cuda"]\nrequires = ["nvcc"]' in builds
    lanes.write_text(lanes.read_text().replace('"old_kernels" = "gate"\n', ""))
    project.commit("relgate init")
    env = {**project.env, "RELGATE_MANIFESTS": str(root / "manifests"), "RELGATE_HOSTS": str(root / "hosts")}
    gate = subprocess.run([sys.executable, "-m", "nox", "-s", "gate", "contract"], cwd=root, capture_output=True,
                          text=True, timeout=600, env=env)
    assert gate.returncode == 0, gate.stdout[-3000:] + gate.stderr[-2000:]
    got = project.ledger_rows()
    for name in ("gate_kernels", "gate_norm"):  # never green on a host with no GPU
        assert got[name]["verdict"] == "not-run" and got[name]["reason"] == "no host offers cuda", got[name]
    assert got["contract_api"]["verdict"] == "not-run"
    assert got["contract_api"]["reason"].startswith("0 tests ran (cargo: -- --ignored and the target has no ignored")
    assert not any(r["verdict"] == "pass" and r["step"] in ("gate_kernels", "gate_norm", "contract_api")
                   for r in project.ledger_steps())
    assert _relgate(root, "init", "--check").returncode == 0


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_a_crate_in_the_runbooks_layout_goes_from_init_to_a_complete_sign_off(tmp_path: Path) -> None:
    """Over 20 s: the Rust example (autotests off, benches, tools/qualification) with no manifests:
    init, the lanes, package_verify, the manual items attested, evidence skipped with a reason
    (what init cannot know: no accepted baseline yet), and the sign-off is complete."""
    from conftest import copy_example

    crate = copy_example(tmp_path, "scankern")
    root = _bare(crate)
    env = {**crate.env, "RELGATE_MANIFESTS": str(root / "manifests"), "RELGATE_HOSTS": str(root / "hosts")}

    def relgate(*args: str, code: int = 0) -> str:
        done = subprocess.run([sys.executable, "-m", "relgate.cli", *args], cwd=root, capture_output=True,
                              text=True, timeout=600, env=env)
        assert done.returncode == code, (args, done.stdout[-3000:], done.stderr[-2000:])
        return done.stdout

    def nox(*sessions: str, code: int = 0) -> str:
        done = subprocess.run([sys.executable, "-m", "nox", "-s", *sessions], cwd=root, capture_output=True,
                              text=True, timeout=600, env=env)
        assert done.returncode == code, (sessions, done.stdout[-3000:], done.stderr[-2000:])
        return done.stdout

    relgate("init")
    checklist = (root / "manifests" / "checklist.toml").read_text()
    assert 'id = "lane-record"' in checklist and 'id = "lane-qualification"' in checklist
    assert checklist.count("manual = true") == 4  # record, qualification, ci-green, maintainer-approval
    crate.commit("relgate init")
    relgate("init", "--check")
    nox("host", "gate", "contract", "bench")
    nox("package_verify")
    items = relgate("signoff", code=1)
    assert "lane-gate            passed" in items and "tests: 9 passed" in items
    for item in ("lane-record", "lane-qualification", "ci-green", "maintainer-approval"):
        relgate("attest", item, "--by", "Release Engineer", "--note", f"{item} for this candidate")
    relgate("skip", "evidence", "--by", "Release Engineer", "--reason", "first release under relgate: no "
            "accepted evidence baseline yet")
    done = relgate("signoff")
    assert ": complete" in done, done
    doc = json.loads((crate.home / "signoff" / "signoff.json").read_text())
    assert doc["complete"] is True
    status = {i["id"]: i["status"] for i in doc["items"]}
    assert status["lane-gate"] == status["lane-contract"] == status["host"] == status["package"] == "passed"
    gate = next(i for i in doc["items"] if i["id"] == "lane-gate")
    assert all(link["tests"] is None or "passed" in link["tests"] for link in gate["links"])


def test_the_features_that_switch_cuda_on() -> None:
    """As cargo metadata lists a CUDA crate's features (cudarc's names; a feature that enables
    one, or a CUDA dependency, switches CUDA on too)."""
    from relgate.kinds.cargo.reader import gpu_features

    table = {"cuda": [], "full": ["cuda", "f16"], "cublas": [], "curand": [], "f16": [], "std": [],
             "gpu": ["dep:cudarc"], "nccl": ["cudarc/nccl"], "culture": [], "dynamic-loading": []}
    assert gpu_features(table, tuple(table)) == ("cuda", "full", "cublas", "curand", "gpu", "nccl")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc")
def test_the_generated_noxfile_works_with_relgate_installed_as_a_wheel(tmp_path: Path) -> None:
    """A wheel holds the engine and its session layer (relgate_sessions), no noxfile.py: the
    generated noxfile registers that layer. The wheel is built here and unpacked as pip would."""
    import zipfile

    from conftest import REPO

    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            "-w", str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(next((tmp_path / "dist").glob("relgate-*.whl"))) as wheel:
        assert not [n for n in wheel.namelist() if n.startswith("relgate/") and "import nox" in
                    wheel.read(n).decode("utf-8", "replace")]  # the engine holds no nox, not even as text
        wheel.extractall(site)
    project = fixture_project(tmp_path, "helpmake")
    root = _bare(project)
    assert _relgate(root, "init").returncode == 0
    project.commit("relgate init")
    env = {k: v for k, v in project.env.items() if not k.startswith("RELGATE_")}
    env.update(PYTHONPATH=str(site), RELGATE_HOME=str(project.home))
    listing = subprocess.run([sys.executable, "-m", "nox", "-l"], cwd=root, capture_output=True, text=True,
                             timeout=300, env=env)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    assert "* host" in listing.stdout and "- signoff" in listing.stdout, listing.stdout
    host = subprocess.run([sys.executable, "-m", "nox", "-s", "host", "census"], cwd=root, capture_output=True,
                          text=True, timeout=600, env=env)
    assert host.returncode == 0, host.stdout[-3000:] + host.stderr[-2000:]
    assert f"{site}/relgate" in subprocess.run([sys.executable, "-c", "import relgate; print(relgate.__file__)"],
                                               env=env, cwd=root, capture_output=True, text=True).stdout
    got = project.ledger_rows()
    assert got["release"]["verdict"] == "pass" and got["test"]["tests"]["text"] == "2 passed"


def test_the_feature_matrix_holds_the_crates_features_not_its_optional_dependencies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read with cargo metadata and, where cargo is missing, from Cargo.toml: the same features."""
    import relgate.kinds.cargo.reader as discover

    crate = tmp_path / "gpucrate"
    (crate / "src").mkdir(parents=True)
    (crate / "src" / "lib.rs").write_text("")
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "gpucrate"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\ncudarc = { version = "0.12", optional = true }\ngemm = { version = "0.17", optional = true }\n\n'
        '[features]\ndefault = []\ncuda = ["dep:cudarc"]\nfast = []\n')
    found = []
    if shutil.which("cargo"):
        found.append(discover.read_cargo(crate))  # cargo metadata --no-deps: no registry needed
        assert found[-1].source == "cargo metadata"
    monkeypatch.setattr(discover.shutil, "which", lambda name: None)  # a machine without cargo
    found.append(discover.read_cargo(crate))
    assert found[-1].source == "Cargo.toml"
    for facts in found:
        assert facts.features == ("cuda", "fast"), facts  # not gemm: an optional dependency's implicit feature
        assert facts.gpu_features == ("cuda",)


def _crate_with_lanes(root: Path, lanes: str) -> Path:
    """A crate with gate, contract and host test files that carry no ``#![cfg(feature)]`` and a
    ``qual/lanes.toml`` of the given text (its rows and whatever else it says)."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "qual").mkdir()
    (root / "src" / "lib.rs").write_text("pub fn one() -> u32 { 1 }\n")
    (root / "Cargo.toml").write_text('[package]\nname = "lanecrate"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                     '[features]\ndefault = []\ncuda = []\nsimd = []\n')
    for name in ("gate_a", "gate_b", "contract_a", "contract_b", "host_a"):
        (root / "tests" / f"{name}.rs").write_text("#[test]\nfn one() { assert_eq!(lanecrate::one(), 1); }\n")
    (root / "qual" / "lanes.toml").write_text(lanes)
    return root


_ROWS = ('[lanes]\n"gate_a" = "gate"\n"gate_b" = "gate"\n"contract_a" = "contract"\n"contract_b" = "contract"\n'
         '"host_a" = "host"\n')


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_init_takes_a_lanes_features_from_the_reused_lane_files_comments_and_commands(tmp_path: Path) -> None:
    root = _crate_with_lanes(tmp_path / "lanecrate", (
        "# Lanes of lanecrate.\n"
        "# gate: cargo test --features cuda --test <name>\n"
        "# contract: cargo test -F nosuch --test <name>   (not a feature of the crate: ignored)\n"
        "# the gate and contract lanes both matter: --features simd   (two lanes named: says nothing)\n"
        + _ROWS +
        '\n[target.contract_a]\ncommand = "cargo test --features simd --test contract_a"\n'
        '[target.contract_b]\ncommand = ["cargo", "test", "--features=simd", "--test", "contract_b"]\n'
        '[target.host_a]\ncommand = "cargo test --test host_a"\n'))
    done = _relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    settings = (root / "manifests" / "lanes.toml").read_text()
    assert ("# a comment in lanes.toml runs the gate lane with --features: without it, each runs 0 tests\n"
            '[lane.gate]\nfeatures = ["cuda"]\nrequires = ["cuda"]') in settings, settings
    assert ("# every contract-lane [target.NAME] command in lanes.toml names --features: without it, each runs "
            '0 tests\n[lane.contract]\nfeatures = ["simd"]\n') in settings, settings
    assert "[lane.contract]\nfeatures = [\"simd\"]\nrequires" not in settings  # simd does not switch CUDA on
    assert "[lane.host]" not in settings  # its command names no feature


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_init_takes_no_lane_features_where_the_lane_file_disagrees_or_covers_only_some_targets(tmp_path: Path) -> None:
    root = _crate_with_lanes(tmp_path / "lanecrate", (
        "# gate: cargo test --features cuda --test <name>\n"
        "# gate on CPU: cargo test --features simd --test <name>\n"  # two comments, two answers: nothing
        + _ROWS +
        '\n[target.contract_a]\ncommand = "cargo test --features simd --test contract_a"\n'))  # contract_b: none
    done = _relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    lanes = root / "manifests" / "lanes.toml"
    assert not lanes.exists() or "[lane." not in lanes.read_text(), lanes.read_text()
