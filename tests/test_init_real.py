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
from conftest import Project, git
from test_no_vacuous_pass import fixture_project, rows

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
    got = rows(project)
    assert got["release"]["verdict"] == "pass", got["release"]
    assert got["test"]["verdict"] == "pass" and got["test"]["tests"]["text"] == "2 passed"
    cuda = got["release-cuda"]
    if shutil.which("nvcc") is None:
        assert cuda["verdict"] == "not-run" and cuda["reason"] == "no host offers nvcc"
    else:  # it compiled (no GPU is needed for that) and wrote what it produces
        assert cuda["verdict"] == "pass", cuda
    assert host.returncode == 0, host.stdout[-3000:] + host.stderr[-2000:]


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
    got = rows(project)
    for name in ("gate_kernels", "gate_norm"):  # never green on a host with no GPU
        assert got[name]["verdict"] == "not-run" and got[name]["reason"] == "no host offers cuda", got[name]
    assert got["contract_api"]["verdict"] == "not-run"
    assert got["contract_api"]["reason"].startswith("0 tests ran (cargo: -- --ignored and the target has no ignored")
    assert not any(r["verdict"] == "pass" and r["step"] in ("gate_kernels", "gate_norm", "contract_api")
                   for r in json.loads(project.relgate("status", "--json").stdout)["steps"])
    assert _relgate(root, "init", "--check").returncode == 0
