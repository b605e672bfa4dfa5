"""examples/tinyinfer/qualified/qualify_over_ssh.py against a real sshd on 127.0.0.1 here: the
C example qualified through the SSH executor, CPU steps where the hosts folder puts them,
CUDA arms on the ssh host when it has a GPU and ``not-run`` (naming what is missing) when not.

Where a test needs "a GPU on this machine" (the device's case, which no machine here has), a
stand-in ``nvidia-smi`` script on PATH prints an H200's line: the only fake, and it can never
make a CUDA arm pass (the CUDA test asks the CUDA runtime, which finds no device).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_support import _rc_prefix, sshd_missing, start_sshd

from conftest import REPO, git

FILE_SECONDS = 120  # about how long this file takes here: it starts early (tests/conftest.py)

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=sshd_missing() or "")

QUALIFIED = REPO / "examples" / "tinyinfer" / "qualified"
SCRIPT = QUALIFIED / "qualify_over_ssh.py"
KIT = QUALIFIED / "kit"
CUDA_ARMS = {"kernels-cuda", "cli-contract-cuda", "matvec-bench-cuda"}
FAKE_SMI = """#!/bin/sh
# stand-in for a GPU this machine does not have (tests only)
case "$*" in
  *--query-gpu*) echo "NVIDIA H200, 580.159.03, 9.0" ;;
  *) exit 0 ;;
esac
"""


def qualify(out: Path, *args: str, path_prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    out.parent.mkdir(parents=True, exist_ok=True)
    # The script's own sshd runs in a mount namespace where ~/.bashrc is what that file sets
    # (sshd_support._rc_prefix: the same PATH, without pyenv's 0.1-0.8 s per SSH command here).
    return subprocess.run([*_rc_prefix(out.parent), sys.executable, str(SCRIPT), "--out", str(out), *args], env=env,
                          capture_output=True, text=True, timeout=900)


class Run:
    def __init__(self, out: Path, done: subprocess.CompletedProcess[str]) -> None:
        self.out, self.done = out, done
        status = json.loads((out / "status.json").read_text())
        self.commit = status["commit"]
        lanes = ("host", "gate", "contract", "bench")  # the lanes' run; the sign-off's own runs apart
        self.steps = {s["step"]: s for s in status["steps"] if s["session"] in lanes}
        self.signoff_steps = [s for s in status["steps"] if s["session"] not in lanes]
        self.signoff = (out / "signoff.txt").read_text()
        self.logs = (out / "logs.txt").read_text()
        self.evidence = (out / "evidence.tsv").read_text()
        self.summary = (out / "summary.md").read_text()

    def cells(self, host: str) -> dict[str, str]:
        """Evidence cells (``group arm key`` → value) of the captures brought back from ``host``."""
        cells, keep = {}, False
        for line in self.evidence.splitlines()[1:]:
            if line.startswith("# ") and "\t" in line:
                keep = line[2:].split("\t")[0] == host
            elif keep and not line.startswith("#"):
                *key, value = line.split("\t")
                cells[" ".join(key)] = value
        return cells


@pytest.fixture(scope="module")
def here_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The whole qualification (host checks, gate, contract, bench, sign-off, real builds of the C
    example) through a real sshd: over 30 s on a loaded 2-core machine, run once for the module's
    tests that read it."""
    out = tmp_path_factory.mktemp("qualify-local") / "out"
    return Run(out, qualify(out))


@pytest.fixture(scope="module")
def remote_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The same qualification with the CPU steps on the ssh host (every build and test over SSH):
    over 30 s here, run once for the tests that read it."""
    out = tmp_path_factory.mktemp("qualify-remote") / "out"
    return Run(out, qualify(out, "--cpu-on", "ssh"))


def test_cuda_arms_are_not_run_naming_cuda_and_require_all_is_red(here_run: Run) -> None:
    assert here_run.done.returncode == 1, here_run.done.stdout[-3000:] + here_run.done.stderr
    for arm in CUDA_ARMS:
        row = here_run.steps[arm]
        assert row["verdict"] == "not-run" and row["reason"] == "no host offers cuda", row
    assert "exit 1 (RED)" in here_run.summary and "placement: as intended" in here_run.summary
    red = CUDA_ARMS | ({"release-cuda"} if shutil.which("nvcc") is None else set())  # no nvcc: not built either
    assert {n for n, s in here_run.steps.items() if s["verdict"] != "pass"} == red
    assert f"Not passed: {', '.join(n for n in here_run.steps if n in red)}" in here_run.summary


def test_cpu_steps_stay_here_and_the_cuda_build_runs_on_the_ssh_host_after_a_verified_bundle(here_run: Run) -> None:
    steps = here_run.steps
    assert {steps[n]["host"] for n in ("release-cpu", "unit-tests", "kernels-cpu", "cli-contract-cpu",
                                       "matvec-bench")} == {"local"}
    cuda = steps["release-cuda"]
    if shutil.which("nvcc") is None:  # no CUDA compiler anywhere: nothing offers nvcc
        assert cuda["verdict"] == "not-run" and cuda["reason"] == "no host offers nvcc", cuda
        return
    assert cuda["host"] == "gpu" and cuda["verdict"] == "pass", cuda
    assert f"verified = {here_run.commit} (checked out, full bundle of" in here_run.logs
    # The toolkit came from nvcc --version over SSH; nothing of it was typed into the host file.
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    assert cuda["toolkit"] and cuda["toolkit"].split()[-1] in version
    host_file = (here_run.out / "check.txt").read_text().split("# --- hosts/gpu.toml\n")[1].split("# ---")[0]
    assert 'kind = "ssh"' in host_file and 'known_hosts = "known_hosts"' in host_file
    assert not any(line.split("=")[0].strip() in ("board", "boards", "driver", "toolkit", "capabilities")
                   for line in host_file.splitlines())
    for name in ("release-cpu", "unit-tests"):  # the local host detected nothing: no facts on its rows
        assert steps[name]["toolkit"] is None and steps[name]["board"] is None


def test_everything_gathered_is_small_flat_text(here_run: Run) -> None:
    names = sorted(p.name for p in here_run.out.iterdir())
    assert names == ["check.txt", "evidence.tsv", "logs.txt", "measurements.tsv", "nox.log", "signoff.txt",
                     "status.json", "summary.md"]
    assert all(p.is_file() and p.stat().st_size < 2_000_000 for p in here_run.out.iterdir())
    rows = (here_run.out / "measurements.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["step", "host", "board", "driver", "toolkit", "commit", "measurement"]
    bench = [r.split("\t") for r in rows[1:] if r.startswith("matvec-bench\t")]
    assert [r[6].split()[:5] for r in bench] == [
        ["bench", "matvec", "device=cpu", f"n={n}", "timing=kernel"] for n in (512, 1024, 2048, 4096)]
    assert all(r[5] == here_run.commit for r in bench)
    # the sign-off's measure runs: previous and candidate interleaved, each side its own commit
    sides = {r.split("\t")[0].partition("#")[0]: r.split("\t")[5] for r in rows[1:] if r.startswith("matvec")}
    assert sides["matvec"] == here_run.commit and sides["matvec@v0.3.0-previous"] != here_run.commit


def test_the_sign_off_runs_around_the_lanes_and_the_tag_is_refused(here_run: Run) -> None:
    """Previous release diffed and measured against the candidate, the boards named as the run used
    them; no GPU here, so the CUDA items stay open, and the tag is refused (skipped is not attested)."""
    md = here_run.signoff.split("===== signoff.md\n", 1)[1]
    assert "**Verdict: incomplete**" in md
    assert "- Boards: host:local; backends: cpu, cuda; cuda on host:gpu" in md
    status = dict(re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| ([a-z-]+) \|", md, re.MULTILINE))
    for item in ("host", "host-cuda", "no-warnings", "cpu", "cpu-contract", "quality"):
        assert status[item] == "passed", (item, status)
    for item in ("cuda", "cuda-contract", "quality-cuda", "speed-cuda", "evidence"):
        assert status[item] == "missing", (item, status)  # evidence: none on host:gpu, where nothing ran
    assert status["agent-checks"] == status["ci-green"] == status["maintainer-approval"] == "skipped"
    assert "against release 0.3.0-previous" in here_run.signoff and "0 unexpected" in here_run.signoff
    assert "tag refused: ci-green is skipped, it must be attested" in here_run.signoff
    assert "nox -s signoff exit 1; nox -s tag exit 1 (signoff.txt); " in here_run.summary
    assert here_run.signoff.count("-s compare -- --previous v0.3.0-previous") <= 4  # batches, as asked
    assert {s["step"] for s in here_run.signoff_steps} >= {"matvec#1", "scorer#1", "host:local"}


def test_cpu_arms_run_on_the_ssh_host_bring_their_evidence_back_equal_to_a_local_run(here_run: Run,
                                                                                     remote_run: Run) -> None:
    assert remote_run.done.returncode == 1, remote_run.done.stdout[-3000:] + remote_run.done.stderr
    for name in ("release-cpu", "unit-tests", "cli-help", "kernels-cpu", "cli-contract-cpu", "matvec-bench"):
        row = remote_run.steps[name]
        assert row["host"] == "gpu" and row["verdict"] == "pass", row
    assert "===== kernels-cpu on gpu: pass" in remote_run.logs
    assert "evidence fetched from gpu:" in remote_run.logs
    remote, local = remote_run.cells("gpu"), here_run.cells("local")
    assert remote["kernels cpu cases_passed"] == "17" and remote["cli cpu contract_failures"] == "0"
    assert remote == local  # the same tree, the same numbers, wherever it ran
    rows = [r for r in (remote_run.out / "measurements.tsv").read_text().splitlines()[1:]
            if r.startswith("matvec-bench\t")]
    assert len(rows) == 4 and {r.split("\t")[1] for r in rows} == {"gpu"}
    for arm in CUDA_ARMS:
        assert remote_run.steps[arm]["verdict"] == "not-run"


def test_a_gpu_on_the_machine_relgate_runs_on_is_not_claimed_by_the_local_host(tmp_path: Path) -> None:
    """The device's case: the same machine is workstation and GPU box. Only the ssh host may
    claim the GPU, and the CUDA arms it then runs are judged on what they do (here: no device).
    Over 30 s: a whole qualification of its own (a stand-in nvidia-smi on PATH changes placement,
    so the module's runs cannot be shared)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text(FAKE_SMI)
    (fake / "nvidia-smi").chmod(0o755)
    out = tmp_path / "out"
    done = qualify(out, path_prefix=fake)
    run = Run(out, done)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    for row in run.steps.values():
        if row["host"] == "local":
            assert row["board"] is None and row["driver"] is None, row
    for arm in CUDA_ARMS:
        row = run.steps[arm]
        assert row["host"] == "gpu" and row["board"] == "NVIDIA H200" and row["driver"] == "580.159.03", row
        # A stand-in GPU never passes: built by nvcc, each arm runs, finds no device and exits
        # non-zero (its own check, not the CUDA runtime's message): fail; without nvcc the build fails.
        assert row["verdict"] == "fail" and row["reason"].endswith(": exit 2"), row
    if shutil.which("nvcc"):  # built: the CUDA runtime itself says there is no device
        assert "SKIP: no CUDA device" in run.logs and "no CUDA device available" in run.logs


def test_a_server_that_will_not_start_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = qualify(tmp_path / "out", "--sshd", "/bin/false")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("qualify_over_ssh: /bin/false -t refused") and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_kit_writes_only_into_an_ignored_folder_and_its_scripts_parse(tmp_path: Path) -> None:
    assert subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", ".carry"]).returncode == 0
    for script in ("make_kit.sh", "device_sshd.sh"):
        assert subprocess.run(["bash", "-n", str(KIT / script)]).returncode == 0
        assert "set -euo pipefail" in (KIT / script).read_text()
    done = subprocess.run(["bash", str(KIT / "make_kit.sh")], env={**os.environ, "RELGATE_KIT_DIR": str(REPO / "README.md")},
                          capture_output=True, text=True)
    assert done.returncode == 2 and "is not ignored by git" in done.stderr
    assert not list(QUALIFIED.rglob("*_key")) and not list(QUALIFIED.rglob("id_*"))  # no committed keys


#: what the kit's wheels give the device and this rehearsal takes from this machine's python instead
#: (RELGATE_KIT_NO_WHEELS): device_sshd.sh imports each
_KIT_MODULES = {"fabric": "fabric", "paramiko": "paramiko", "nox": "nox", "git": "gitpython"}


@pytest.mark.skipif(not (REPO / ".carry" / "debs").is_dir(),
                    reason="no device kit in .carry/ (examples/tinyinfer/qualified/kit/make_kit.sh builds it)")
@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in _KIT_MODULES),
                    reason="the kit rehearsal uses this python's packages: pip install "
                           + " ".join(_KIT_MODULES[m] for m in _KIT_MODULES if importlib.util.find_spec(m) is None))
def test_the_kits_own_sshd_under_its_loader_and_nss_wrapper_qualifies_the_same(tmp_path: Path) -> None:
    """The device's other paths, taken here: OpenSSH from the kit's .debs in a prefix, run by
    the kit's glibc loader (an older glibc) with the privsep user from nss_wrapper (no sshd user)."""
    run = tmp_path / "kit"
    env = {**os.environ, "RELGATE_KIT_RUN": str(run), "RELGATE_KIT_NO_WHEELS": "1",
           "RELGATE_KIT_FORCE_LOADER": "1", "RELGATE_KIT_FORCE_NSS_WRAPPER": "1"}
    done = subprocess.run(["bash", str(KIT / "device_sshd.sh")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run under the kit's loader" in done.stdout and "from nss_wrapper" in done.stdout
    out = tmp_path / "out"
    done = qualify(out, "--cpu-on", "ssh", "--sshd", str(run / "bin" / "sshd"),
                   "--ssh-keygen", str(run / "bin" / "ssh-keygen"))
    result = Run(out, done)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    assert result.steps["kernels-cpu"]["host"] == "gpu" and result.steps["kernels-cpu"]["verdict"] == "pass"
    assert result.cells("gpu")["kernels cpu cases_passed"] == "17"
    assert "placement: as intended" in result.summary


# --- found while preparing the device run (fixed): the host file's env on every SSH command, a quiet paramiko


def test_delivery_runs_git_with_the_host_files_path(tmp_path: Path) -> None:
    from relgate.core.schema import read_toml
    from relgate.manifest.specs import parse_host
    from relgate.remote.delivery import deliver
    from relgate.remote.ssh import SshExecutor
    from relgate.run.hosts import Host, HostFacts

    server = start_sshd(tmp_path / "sshd")
    try:
        bindir = tmp_path / "kit-bin"
        bindir.mkdir()
        calls = tmp_path / "git-calls"
        (bindir / "git").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
        (bindir / "git").chmod(0o755)
        path = server.host_file(tmp_path / "hosts" / "gpu.toml", name="gpu",
                                extra=f'[host.env]\nPATH = "{bindir}:/usr/bin:/bin"\n')
        ex = SshExecutor(Host(spec=parse_host(read_toml(path), path=path), facts=HostFacts()))
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "f").write_text("x\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "one")
        sha = git(repo, "rev-parse", "HEAD").strip()
        deliver(ex, repo=repo, commit=sha, workdir=str(tmp_path / "work"), project="p")
        ex.close()
        assert calls.exists() and "worktree add" in calls.read_text()
    finally:
        server.stop()


def test_a_remote_run_does_not_narrate_paramikos_transport_or_fabrics_config_search(here_run: Run) -> None:
    log = (here_run.out / "nox.log").read_text()
    assert "paramiko.transport >" not in log
    assert "invoke >" not in log and "fabric >" not in log  # 112 such lines on the H200 run
    assert "matplotlib" not in (here_run.out / "signoff.txt").read_text()  # its font search, at DEBUG
