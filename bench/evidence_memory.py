#!/usr/bin/env python3
"""Benchmark: peak memory of ``relgate evidence accept`` and ``relgate evidence check`` on
one big capture, against the capture's own size and a ``sort`` pipeline.

A fresh copy of ``examples/tinyinfer`` gets one step in its ledger at HEAD with a capture
of ``--mb`` MB (default 200) of ``suite<TAB>arm<TAB>key<TAB>value`` cells, stored the way a
lane stores it. Then, each under a wrapper that reports the run's peak (the whole process
tree's resident memory summed, relgate and its ``sort`` together; bench/_common.measure):

- ``relgate evidence accept`` (the capture becomes the release's baseline);
- ``relgate evidence check`` (the capture against that baseline);
- the shell: ``LC_ALL=C sort -s -t TAB -k1,3`` of the capture into a file (what a person
  would do to get a sorted, comparable baseline).

The three alternate for ``--rounds`` rounds (default 5). It prints every round, then min /
median / max of each wall and of the per-round ratio relgate / sort (goal <= 1.5), and of
each peak / the capture's size (goal <= 0.5), judged on the median (bench/_common.py).
Exit 1 only when a run failed.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_ROUNDS, REPO, Bench, failed, judge, make_project, measure, spread  # noqa: E402

GOAL_RATIO = 0.5  # peak / the capture's size (issue 21; issue 10's was 2×)
GOAL_WALL = 1.5  # wall / the wall of `sort` on the capture, per round (issue 21)


STORE = """\
import sys
from pathlib import Path
from relgate.core.verdict import Verdict
from relgate.ledger.identity import project_identity
from relgate.ledger.store import Ledger
from relgate.manifest.workspace import Workspace
from relgate.run.flow import candidate_facts
home, commit, capture = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
ws = Workspace.load(Path(sys.argv[4]))  # RELGATE_MANIFESTS/HOSTS/HOME select the copy
facts = candidate_facts(ws)
with Ledger.open(home) as ledger:  # a row of this project, as a lane run records it
    run = ledger.begin_run(session="gate", argv=[], project=ws.project.name, project_root=ws.project.root,
                           commit=commit, branch="main", dirty=False, identity=project_identity(ws, facts))
    step = ledger.begin_step(run_id=run, session="gate", step="big", lane="gate", target="big", host="local",
                             board="bench-board", driver=None, toolkit=None, commit=commit, dirty=False,
                             command="bench", cwd=None, env={}, log_path=None)
    ledger.finish_step(step, verdict=Verdict.PASS, reason=None, exit_code=0, duration=0.0)
    ledger.store_evidence(capture, step_id=step)
"""


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def generate(path: Path, mb: int) -> int:
    cells = 0
    with open(path, "w") as fh:
        size = 0
        while size < mb * 1_000_000:
            line = f"suite{cells % 97}\tarm{cells % 13}\tkey{cells}\t{cells * 0.25:.3f}\n"
            fh.write(line)
            size += len(line)
            cells += 1
    return cells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="MB of evidence in the capture (default 200)")
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                    help=f"interleaved rounds of accept, check and sort (default {DEFAULT_ROUNDS})")
    args = ap.parse_args(argv)
    with Bench("evidence_memory"), tempfile.TemporaryDirectory(prefix="relgate-bench-evidence-") as name:
        tmp = Path(name)
        root, env = make_project(tmp, "tinyinfer")
        env = {**env, "PYTHONPATH": str(REPO)}
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        capture = tmp / "capture.cells"
        cells = generate(capture, args.mb)
        size_mib = capture.stat().st_size / (1 << 20)
        subprocess.run([sys.executable, "-c", STORE, env["RELGATE_HOME"], commit, str(capture), str(REPO)], env=env,
                       check=True)
        print(f"capture: {cells} cells, {size_mib:.1f} MiB")
        relgate = [sys.executable, "-m", "relgate.cli"]
        sides = (("accept", [*relgate, "evidence", "accept"]), ("check", [*relgate, "evidence", "check"]),
                 ("sort", ["sh", "-c", f"LC_ALL=C sort -s -t \"$(printf '\\t')\" -k1,3 {capture} > "
                                       f"{tmp / 'sorted.cells'}"]))
        peaks: dict[str, list[float]] = {label: [] for label, _ in sides}
        walls: dict[str, list[float]] = {label: [] for label, _ in sides}
        cpus: dict[str, list[float]] = {label: [] for label, _ in sides}
        for n in range(1, args.rounds + 1):
            for label, cmd in sides:
                before, t0 = cpu_of_children(), time.perf_counter()
                peak, done = measure(cmd, env, root, tmp)
                walls[label].append(time.perf_counter() - t0)
                cpus[label].append(cpu_of_children() - before)
                if done.returncode != 0:
                    return failed(label, done)
                peaks[label].append(peak)
            print(f"  round {n}: " + ", ".join(f"{label} {walls[label][-1]:.1f} s wall, {cpus[label][-1]:.1f} s CPU, "
                                              f"{peaks[label][-1]:.1f} MiB" for label, _ in sides), flush=True)
    print()
    for label in ("accept", "check"):
        judge(f"evidence {label} of a {size_mib:.0f} MiB capture: wall / LC_ALL=C sort of it", goal=GOAL_WALL,
              ours=walls[label], anchor=walls["sort"], fmt=".2f", ours_label=f"relgate evidence {label}",
              anchor_label="sort")
        judge(f"evidence {label} of a {size_mib:.0f} MiB capture: peak / the capture's size", goal=GOAL_RATIO,
              ours=[p / size_mib for p in peaks[label]], mode="value", unit="× the capture", fmt=".3f",
              ours_label=f"relgate evidence {label}")
    print(f"for reference: sort's peak {spread(peaks['sort'], 1, '.1f')} MiB; CPU seconds accept "
          f"{spread(cpus['accept'], 1, '.1f')}, check {spread(cpus['check'], 1, '.1f')}, sort {spread(cpus['sort'], 1, '.1f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
