#!/usr/bin/env python3
"""Benchmark: peak memory of ``relgate evidence accept`` and ``relgate evidence check`` on
one big capture, against the capture's own size and a ``sort`` pipeline.

A fresh copy of ``examples/tinyinfer`` gets one step in its ledger at HEAD with a capture
of ``--mb`` MB (default 200) of ``suite<TAB>arm<TAB>key<TAB>value`` cells, stored the way a
lane stores it. Then, each under a wrapper whose ``RUSAGE_CHILDREN`` ``ru_maxrss`` is the
run's peak:

- ``relgate evidence accept`` (the capture becomes the release's baseline);
- ``relgate evidence check`` (the capture against that baseline);
- the shell: ``LC_ALL=C sort -s -t TAB -k1,3`` of the capture into a file (what a person
  would do to get a sorted, comparable baseline).

It prints each peak (and each run's wall and CPU seconds), relgate's peak / capture size
against the goal (<= 2x), PASS or MISS.
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
from _common import REPO, failed, make_project, measure  # noqa: E402

GOAL_RATIO = 2.0


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
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="relgate-bench-evidence-") as name:
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
        relgate = [sys.executable, "-m", "relgate.cli"]
        peaks, times = {}, {}
        for label, cmd in (("accept", [*relgate, "evidence", "accept"]), ("check", [*relgate, "evidence", "check"]),
                           ("sort", ["sh", "-c", f"LC_ALL=C sort -s -t \"$(printf '\\t')\" -k1,3 {capture} > "
                                                 f"{tmp / 'sorted.cells'}"])):
            before, t0 = cpu_of_children(), time.perf_counter()
            peak, done = measure(cmd, env, root, tmp)
            times[label] = (time.perf_counter() - t0, cpu_of_children() - before)
            if done.returncode != 0:
                return failed(label, done)
            peaks[label] = peak
    print(f"capture: {cells} cells, {size_mib:.1f} MiB")
    for label, peak in peaks.items():
        ratio = f"{peak / size_mib:.2f}x the capture" if label != "sort" else f"{peak / size_mib:.2f}x"
        wall, cpu = times[label]
        print(f"  {label:7s} peak {peak:8.1f} MiB  ({ratio}; {wall:.1f} s wall, {cpu:.1f} s CPU)")
    worst = max(peaks["accept"], peaks["check"]) / size_mib
    print(f"goal: accept and check <= {GOAL_RATIO:g}x the capture's size: {worst:.2f}x "
          f"{'PASS' if worst <= GOAL_RATIO else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
