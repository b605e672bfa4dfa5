"""Shared by the benchmarks: a fresh copy of a bundled example, and timing a process."""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def make_project(tmp: Path, example: str, *, compile_each_run: bool = False) -> tuple[Path, dict[str, str]]:
    """Copy ``examples/EXAMPLE`` into its own git repo with manifests, hosts and a fresh
    ledger home (as tests/conftest.py's copy_example does); returns the copy's root and
    the environment that selects it. As on a user's machine, bytecode is kept: with
    ``PYTHONDONTWRITEBYTECODE`` (set on some build machines, this one too) every run
    recompiles each relgate module edited since its bytecode was last written, which
    measures the compiler (0.25 s a run of ``relgate measure compare``), not relgate;
    ``compile_each_run`` keeps it."""
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
    env = {**os.environ, "RELGATE_MANIFESTS": str(manifests), "RELGATE_HOSTS": str(hosts),
           "RELGATE_HOME": str(tmp / "home"), "NO_COLOR": "1"}
    if not compile_each_run:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return root, env


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


# Runs a command and reports its peak memory: the largest process (ru_maxrss) or the whole tree at once.
PEAK_WRAP = """\
import json, os, resource, subprocess, sys, threading

def tree_rss(root):
    # the resident memory of root and every process below it, together (bytes), from /proc
    kids, rss = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(name))
        rss[int(name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(kids.get(pid, ()))
    return total

proc = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
together, stop = [0], threading.Event()

def sample():
    while not stop.wait(0.05):
        together[0] = max(together[0], tree_rss(proc.pid))

sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
out, _ = proc.communicate()
stop.set()
sampler.join()
largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
json.dump({"code": proc.returncode, "peak_mib": max(largest, together[0] / (1 << 20)), "largest_mib": largest,
           "together_mib": together[0] / (1 << 20), "out": out[-4000:]}, open(sys.argv[1], "w"))
"""


def measure(argv: list[str], env: dict[str, str], cwd: Path, tmp: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Peak memory (MiB) of ``argv`` and its children, measured in a fresh wrapper process: the
    larger of the largest process's own peak (``ru_maxrss``) and the most the whole tree held at
    once (its processes' resident memory summed, read every 50 ms), so that a helper such as
    ``sort`` running beside relgate counts with it."""
    result = tmp / "peak.json"
    subprocess.run([sys.executable, "-c", PEAK_WRAP, str(result), *argv], env=env, cwd=cwd, check=True)
    data = json.loads(result.read_text())
    return data["peak_mib"], subprocess.CompletedProcess(argv, data["code"], data["out"], "")


# --- judging from spreads -------------------------------------------------------------------
# Every bench interleaves its path and its anchor for several rounds and judges only from the
# spread: min / median / max of each side and of the per-round ratio (or difference), a PASS or
# MISS on the median, and "noisy" when the per-round figures fall on both sides of the goal;
# fewer than MIN_ROUNDS rounds are NOT JUDGED. The load average stands beside every verdict.
# Each judgement is also printed as one ``RESULT {json}`` line, which bench/all.py collects.

DEFAULT_ROUNDS = 5


def last_run_steps(home: Path, prefix: str) -> list[Any]:
    """The step rows of the latest run in the ledger under ``home`` whose names start with ``prefix``."""
    from relgate.ledger.store import Ledger  # the benchmarks that read no ledger load no relgate

    with Ledger.open(home) as ledger:
        run = ledger.runs()[-1]
        return [s for s in ledger.steps(run_id=run.id) if s.step.startswith(prefix)]


def not_all_passed(steps: list[Any], expected: int) -> str | None:
    """Why a timed run does not count: the steps that did not pass, or how many ran where
    ``expected`` should have; ``None`` when all ``expected`` passed."""
    bad = [f"{s.step}: {s.verdict.value} {s.reason or ''}" for s in steps if s.verdict.value != "pass"]
    if bad or len(steps) != expected:
        return "; ".join(bad) or f"{len(steps)} steps"
    return None


#: the fewest interleaved rounds a figure is judged on (fewer: NOT JUDGED, whatever the median)
MIN_ROUNDS = 3


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class Bench:
    """``with Bench("name"):`` prints the load average (1, 5, 15 min) at the start and the end."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "Bench":
        print(f"{self.name}: load average at start {load_average()} ({os.cpu_count()} cores)", flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        print(f"{self.name}: load average at end {load_average()}", flush=True)


def spread(values: list[float], scale: float = 1.0, fmt: str = ".3f") -> str:
    """``min / median / max`` of ``values`` (each times ``scale``), formatted."""
    if not values:
        return "no rounds"
    lo, mid, hi = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{lo:{fmt}} / {mid:{fmt}} / {hi:{fmt}}"


def judge(what: str, *, goal: float, ours: list[float], anchor: list[float] | None = None,
          mode: str = "ratio", unit: str = "s", scale: float = 1.0, fmt: str = ".3f",
          ours_label: str = "relgate", anchor_label: str = "anchor", goal_text: str | None = None) -> str:
    """Print the spread of both sides and of the per-round comparison, then PASS/MISS on its median.

    ``mode``: ``ratio`` (ours / anchor per round, goal ≤ ``goal``), ``difference`` (ours −
    anchor per round, in ``unit`` after ``scale``) or ``value`` (ours alone against ``goal``,
    no anchor). Rounds pair up by index: the two sides ran interleaved. Returns the verdict
    word (``PASS``, ``MISS``, ``PASS (noisy)``, ``MISS (noisy)``, or ``NOT JUDGED`` for fewer than
    :data:`MIN_ROUNDS` rounds); the load average is printed beside every verdict."""
    if mode not in ("ratio", "difference", "value"):
        raise ValueError(f"judge: unknown mode {mode!r}")
    print(f"{what}:")
    print(f"  {ours_label:<28s} min / median / max {spread(ours, scale, fmt)} {unit}  ({len(ours)} rounds)")
    if mode == "value":
        per_round = [v * scale for v in ours]
        cmp_unit, cmp_name = unit, "value"
    else:
        if anchor is None or len(anchor) != len(ours):
            raise ValueError(f"judge: {what}: the anchor needs one figure per round of ours")
        print(f"  {anchor_label:<28s} min / median / max {spread(anchor, scale, fmt)} {unit}")
        if mode == "ratio":
            per_round = [a / b for a, b in zip(ours, anchor)]
            cmp_unit, cmp_name = "×", "ratio"
        else:
            per_round = [(a - b) * scale for a, b in zip(ours, anchor)]
            cmp_unit, cmp_name = unit, "difference"
        print(f"  per-round {cmp_name:<18s} min / median / max {spread(per_round, 1.0, fmt)} {cmp_unit}")
    mid = statistics.median(per_round)
    verdict = "PASS" if mid <= goal else "MISS"
    noisy = min(per_round) <= goal < max(per_round)
    if noisy:
        verdict += " (noisy)"
    if len(per_round) < MIN_ROUNDS:  # one or two rounds are no spread: neither a miss nor a pass
        verdict = "NOT JUDGED"
    text = goal_text or f"≤ {goal:g}{'' if cmp_unit == '×' else ' ' + cmp_unit}"
    print(f"  {verdict}: median {cmp_name} {mid:{fmt}}{'' if cmp_unit == '×' else ' ' + cmp_unit}, goal {text}"
          + (f"; the rounds run {min(per_round):{fmt}}–{max(per_round):{fmt}}, across the goal" if noisy else "")
          + (f"; {len(per_round)} round(s): a figure is a spread over at least {MIN_ROUNDS} interleaved rounds"
             if verdict == "NOT JUDGED" else "")
          + f"; load {load_average()}", flush=True)
    record = {"what": what, "goal": text, "verdict": verdict, "mode": mode, "median": mid,
              "min": min(per_round), "max": max(per_round), "unit": cmp_unit, "rounds": len(ours),
              "ours": [min(ours) * scale, statistics.median(ours) * scale, max(ours) * scale],
              "anchor": None if anchor is None else [min(anchor) * scale, statistics.median(anchor) * scale,
                                                     max(anchor) * scale],
              "ours_label": ours_label, "anchor_label": anchor_label, "side_unit": unit, "load": load_average()}
    print("RESULT " + json.dumps(record), flush=True)
    return verdict
