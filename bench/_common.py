"""Shared by the benchmarks: a fresh copy of a bundled example, and timing a process."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TAIL_LINES = 40
# The alternative's floor: a noxfile with one empty session (what nox itself costs).
NOOP_NOXFILE = """import nox

nox.options.default_venv_backend = "none"


@nox.session(python=False)
def noop(session):
    pass
"""


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)


def make_project(tmp: Path, example: str) -> tuple[Path, dict[str, str]]:
    """Copy ``examples/EXAMPLE`` into its own git repo with manifests, hosts and a fresh
    ledger home (as tests/conftest.py's copy_example does); returns the copy's root and
    the environment that selects it."""
    root = tmp / example
    shutil.copytree(REPO / "examples" / example, root, ignore=shutil.ignore_patterns("build", "target"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    if (root / "manifests").is_dir():  # the example carries its own manifest folder
        manifests = root / "manifests"
    else:
        manifests = tmp / "manifests"
        shutil.copytree(REPO / "manifests", manifests)
        project = manifests / "project.toml"
        text = project.read_text()
        old = f'root = "../examples/{example}"'
        if old not in text:
            raise SystemExit(f"{project}: no line {old!r} to repoint at the copy")
        project.write_text(text.replace(old, f'root = "{root}"'))
    hosts = tmp / "hosts"
    shutil.copytree(REPO / "hosts", hosts)
    return root, {**os.environ, "RELGATE_MANIFESTS": str(manifests), "RELGATE_HOSTS": str(hosts),
                  "RELGATE_HOME": str(tmp / "home"), "NO_COLOR": "1"}


def _subreaper() -> bool:
    """Make this process the subreaper of what it starts (Linux): a process the measured one
    leaves behind (relgate's guardian ends just after relgate) is handed to us, not to init."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


_REAPS = _subreaper()


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None
          ) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall clock of the whole process, and the CPU time (user + sys) of it and its children —
    also of the processes it left behind: they are waited for (not timed on the wall clock),
    so that they neither run into the next measurement nor go uncounted."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours = _children() if _REAPS else set()
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    while _REAPS and (left := _children() - ours):
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def failed(label: str, done: subprocess.CompletedProcess[str], log: Path | None = None) -> int:
    out = done.stdout + done.stderr
    if log is not None and log.exists():
        out += log.read_text(errors="replace")
    tail = "\n".join(out.splitlines()[-TAIL_LINES:]) or "(no output)"
    print(f"\n{label} failed (exit {done.returncode}); last lines of its output:\n{tail}", file=sys.stderr)
    return 1


# Runs a command and reports the peak resident memory of it and its children (ru_maxrss).
PEAK_WRAP = """\
import resource, subprocess, sys, json
done = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL, capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
json.dump({"code": done.returncode, "peak_mib": peak, "out": (done.stdout + done.stderr)[-4000:]},
          open(sys.argv[1], "w"))
"""


def measure(argv: list[str], env: dict[str, str], cwd: Path, tmp: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Peak memory (MiB) of ``argv`` and its children, measured in a fresh wrapper process."""
    result = tmp / "peak.json"
    subprocess.run([sys.executable, "-c", PEAK_WRAP, str(result), *argv], env=env, cwd=cwd, check=True)
    data = json.loads(result.read_text())
    return data["peak_mib"], subprocess.CompletedProcess(argv, data["code"], data["out"], "")
