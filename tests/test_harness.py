"""Harness failures are ``error``, not ``fail``: the table of known messages, checked against
real output (cargo with an unreachable registry and a CUDA program on this GPU-less machine,
run here) and against messages recorded from the real tools; a real test failure stays ``fail``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import Project, needs_nvcc
from relgate.run.harness import KNOWN_MESSAGES, HarnessScanner, exit_status_reason

# Recorded from the real tools (the CUDA strings are cudaGetErrorString of the CUDA 13.0
# runtime: cudaErrorNoDevice, cudaErrorDevicesUnavailable, cudaErrorInsufficientDriver,
# cudaErrorMemoryAllocation; the cargo lines from cargo 1.8x with its registry at 127.0.0.1:1).
RECORDED = [
    ("  [7] Could not connect to server (Failed to connect to 127.0.0.1 port 1 after 0 ms: Could not connect to "
     "server)", "cargo cannot reach its registry"),
    ("  [6] Couldn't resolve host name (Could not resolve host: index.crates.io)", "cargo cannot reach its registry"),
    ("warning: spurious network error (3 tries remaining): [28] Timeout was reached", "cargo cannot reach its registry"),
    ("  failed to download from `http://127.0.0.1:1/index/config.json`", "cargo cannot reach its registry"),
    ("CUDA error: no CUDA-capable device is detected", "no CUDA-capable device on this host"),
    ("cudaMalloc: CUDA-capable device(s) is/are busy or unavailable", "the GPU is busy or unavailable"),
    ("CUDA error: CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)",
     "the CUDA driver is missing or older than the runtime"),
    ("test_cuda: cudaMalloc: CUDA error: out of memory", "the GPU is out of memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "the GPU is out of memory"),
]
# Real failures of the code under test: none of these is a harness message.
REAL_FAILURES = [
    "thread 'scan_parity' panicked at tests/scan_parity.rs:12:5:",
    "assertion `left == right` failed: cuda kernel mismatch",
    "error: no matching package named `serde` found",
    "error[E0425]: cannot find value `x` in this scope",
    "test_kernels: rmsnorm case 3: got 1.5, want 1.25",
    "src/kernels_cpu.c:13:9: error: 'y' undeclared (first use in this function)",
    "malloc: out of memory",  # the host's memory, inside the code under test: its own bug to report
    "  failed to download from the cache: the checksum of the artifact differs",
]


@pytest.mark.parametrize(("line", "reason"), RECORDED)
def test_recorded_harness_messages_are_known(line: str, reason: str) -> None:
    scanner = HarnessScanner()
    scanner.feed("Compiling x\n" + line[:20])  # split anywhere
    scanner.feed(line[20:] + "\nmore output\n")
    found = scanner.finish()
    assert found is not None and found[0].reason == reason and found[1] == line.strip()


@pytest.mark.parametrize(("line", "reason"), RECORDED)
def test_a_known_message_after_bulk_output_in_large_chunks_is_found(line: str, reason: str) -> None:
    """Chunks with none of the cheap test's words skip the per-line pass; a message split
    across the chunk boundary after megabytes of output is still found."""
    bulk = "x" * 99 + "\n"
    scanner = HarnessScanner()
    scanner.feed(bulk * 10_000)
    scanner.feed(bulk * 10_000 + line[:5])
    scanner.feed(line[5:] + "\n" + bulk * 10_000)
    found = scanner.finish()
    assert found is not None and found[0].reason == reason and found[1] == line.strip()
    quiet = HarnessScanner()
    for _ in range(5):
        quiet.feed(bulk * 10_000 + "xx")
    quiet.feed("\n")
    assert quiet.finish() is None


@pytest.mark.parametrize("line", REAL_FAILURES)
def test_real_failures_are_not_harness_messages(line: str) -> None:
    scanner = HarnessScanner()
    scanner.feed(line + "\n")
    assert scanner.finish() is None


def test_every_known_message_has_a_tool_and_a_reason() -> None:
    assert {m.tool for m in KNOWN_MESSAGES} == {"cargo", "cuda"}
    assert all(m.reason for m in KNOWN_MESSAGES)
    assert exit_status_reason(137) is not None and exit_status_reason(1) is None and exit_status_reason(0) is None


def _checks(project: Project, body: str) -> None:
    (project.manifests / "builds.toml").write_text(body)


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_a_cargo_step_that_cannot_reach_its_registry_is_an_error(tinyinfer: Project, tmp_path: Path) -> None:
    crate = tinyinfer.root / "tools" / "fetcher"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "fetcher"\nversion = "0.1.0"\nedition = "2021"\n'
                                      '[dependencies]\nserde = "1"\n')
    (crate / "src" / "main.rs").write_text("fn main() {}\n")
    cargo_home = tmp_path / "cargo-home"
    cargo_home.mkdir()
    (cargo_home / "config.toml").write_text(  # the registry: a port nothing listens on
        '[source.crates-io]\nreplace-with = "dead"\n[source.dead]\nregistry = "sparse+http://127.0.0.1:1/index/"\n'
        "[net]\nretry = 0\n")
    tinyinfer.commit("a crate with a dependency")
    _checks(tinyinfer, f'[[check]]\nname = "fetch"\nrun = "cargo build"\ncwd = "tools/fetcher"\n'
                       f'env = {{ CARGO_HOME = "{cargo_home}" }}\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    row = tinyinfer.ledger_rows()["fetch"]
    assert row["verdict"] == "error", row
    assert row["reason"].startswith("cargo cannot reach its registry (cargo: failed to download from `http://127.0.0.1:1/")


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_a_registry_outage_is_one_error_per_host_and_its_retries_are_no_warnings(tinyinfer: Project,
                                                                                 tmp_path: Path) -> None:
    crate = tinyinfer.root / "tools" / "fetcher"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "fetcher"\nversion = "0.1.0"\nedition = "2021"\n'
                                      '[dependencies]\nserde = "1"\n')
    (crate / "src" / "main.rs").write_text("fn main() {}\n")
    cargo_home = tmp_path / "cargo-home"
    cargo_home.mkdir()
    (cargo_home / "config.toml").write_text(  # cargo retries once: "warning: spurious network error"
        '[source.crates-io]\nreplace-with = "dead"\n[source.dead]\nregistry = "sparse+http://127.0.0.1:1/index/"\n'
        "[net]\nretry = 1\n")
    tinyinfer.commit("a crate with a dependency")
    checks = "".join(f'[[check]]\nname = "fetch-{n}"\nrun = "cargo build"\ncwd = "tools/fetcher"\nwarnings = "deny"\n'
                     f'env = {{ CARGO_HOME = "{cargo_home}" }}\n' for n in range(3))
    _checks(tinyinfer, checks)
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    rows = tinyinfer.ledger_rows()
    first = rows["fetch-0"]
    assert first["verdict"] == "error" and first["warning_count"] == 0, first  # the retry line is no warning
    assert "spurious network error" in (tinyinfer.home / first["log_path"]).read_text()
    for name in ("fetch-1", "fetch-2"):
        assert rows[name]["verdict"] == "error" and rows[name]["duration"] == 0.0, rows[name]
        assert rows[name]["reason"] == "cargo cannot reach its registry (found by fetch-0 on local in this run; " \
                                       "not retried)"


@needs_nvcc
def test_a_cuda_program_on_a_host_without_a_usable_gpu_is_an_error(tinyinfer: Project) -> None:
    (tinyinfer.root / "probe.cu").write_text(
        "#include <cstdio>\n#include <cuda_runtime.h>\nint main() {\n  float *p;\n"
        "  cudaError_t e = cudaMalloc(&p, 1 << 20);\n"
        '  if (e != cudaSuccess) { fprintf(stderr, "probe: CUDA error: %s\\n", cudaGetErrorString(e)); return 1; }\n'
        "  return 0;\n}\n")
    built = subprocess.run(["nvcc", "-o", "probe", "probe.cu"], cwd=tinyinfer.root, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    if subprocess.run(["./probe"], cwd=tinyinfer.root).returncode == 0:
        pytest.skip("this machine has a usable GPU")
    _checks(tinyinfer, '[[check]]\nname = "cuda-probe"\nrun = "./probe"\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    row = tinyinfer.ledger_rows()["cuda-probe"]
    assert row["verdict"] == "error", row
    assert row["reason"].split(" (cuda: ")[0] in {m.reason for m in KNOWN_MESSAGES if m.tool == "cuda"}


def test_a_process_killed_with_sigkill_under_a_shell_is_an_error(tinyinfer: Project) -> None:
    _checks(tinyinfer, '[[check]]\nname = "killed"\nrun = ["sh", "-c", "sleep 30 & kill -KILL $!; wait $!"]\n'
                       '[[check]]\nname = "real-failure"\nrun = ["sh", "-c", "echo CUDA kernel mismatch; exit 1"]\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1
    rows = tinyinfer.ledger_rows()
    assert rows["killed"]["verdict"] == "error"
    assert "killed by SIGKILL (exit 137)" in rows["killed"]["reason"]
    assert rows["real-failure"]["verdict"] == "fail"  # a real failure stays fail
