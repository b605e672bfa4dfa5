#!/usr/bin/env python3
"""Benchmark: the statistical compare of a big measurement batch.

Builds, in a temporary directory, a copy of the C example (its own git repo, manifests,
hosts, ledger home) whose ledger holds the previous release's batch and the candidate's
batch of ``--rows`` rows (default 10,000) × ``--runs`` runs a side (default 15) × ``--metrics``
metrics (default 2), lognormal with 10 % CV, every row through ``relgate measure add`` as
one file per run. Then, interleaved for ``--rounds`` rounds (default 5):

- ours: ``relgate measure compare NAME`` (a whole process: reading 300k ledger rows, the
  Hodges–Lehmann interval of every row and metric, the summary, the non-pass rows);
- in-process: ``compare()`` alone, after the imports;
- the anchor: what the old policy cost, in-process: every row read row by row
  (``Ledger.batch_rows``), the median of each side and the ratio, no interval.

Goal: ours ≤ 1 s (the median round). Prints every round, min/median/max of each and of
the per-round ratio ours / anchor, the load average at start and end, and PASS or MISS
("noisy" when the spread crosses the goal). Exits 1 only when a timed run failed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, failed, judge, make_project, timed  # noqa: E402

sys.path.insert(0, str(REPO))

GOAL = 1.0
MEASURES = """
[measure.big]
target = "matvec-bench"
output = "stdout"
format = "csv"
key = ["row"]
metrics = {metrics}
metadata = ["board"]
runs = {runs}
"""


def _files(tmp: Path, side: str, rows: int, runs: int, metrics: list[str], shift: float, rng: random.Random
           ) -> list[Path]:
    sigma = math.sqrt(math.log(1 + 0.10 ** 2))
    out = []
    for r in range(runs):
        path = tmp / f"{side}{r}.csv"
        lines = ["row," + ",".join(metrics)]
        lines += [f"{i}," + ",".join(f"{100 * rng.lognormvariate(math.log(1 + shift), sigma):.4f}" for _ in metrics)
                  for i in range(rows)]
        path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
        out.append(path)
    return out


def _anchor(home: Path, project: str) -> float:
    from relgate.ledger.store import Ledger

    t0 = time.perf_counter()
    with Ledger.open(home) as ledger:
        batches = ledger.batches(project=project, measure="big")
        med = []
        for b in batches:
            per: dict[tuple[str, ...], dict[str, list[float]]] = {}
            for _, key, metrics, _ in ledger.batch_rows(b.id):
                for m, v in metrics.items():
                    per.setdefault(tuple(key), {}).setdefault(m, []).append(float(v))
            med.append({k: {m: statistics.median(v) for m, v in d.items()} for k, d in per.items()})
        prev, cand = med[0], med[-1]
        _ = [cand[k][m] / prev[k][m] for k in prev for m in prev[k]]
    return time.perf_counter() - t0


def _in_process(home: Path, env: dict[str, str], project: str) -> float:
    from relgate.ledger.store import Ledger
    from relgate.manifest.workspace import Workspace
    from relgate.measure.compare import compare

    ws = Workspace.load(REPO, environ=env)
    spec = ws.measurements.measures["big"]
    t0 = time.perf_counter()
    with Ledger.open(home) as ledger:
        comp = compare(ledger, spec, project=project, counts=lambda c, d: True)
    took = time.perf_counter() - t0
    assert comp.boards and comp.boards[0].results, comp
    return took


def _spread(values: list[float]) -> str:
    return f"min {min(values):.3f}  median {statistics.median(values):.3f}  max {max(values):.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--metrics", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    load0 = os.getloadavg()
    metrics = [f"m{i}" for i in range(args.metrics)]
    with tempfile.TemporaryDirectory(prefix="relgate-bench-") as t:
        tmp = Path(t)
        root, env = make_project(tmp, "tinyinfer")
        manifests = Path(env["RELGATE_MANIFESTS"])
        (manifests / "measurements.toml").write_text(MEASURES.format(
            metrics="{ " + ", ".join(f'{m} = "lower"' for m in metrics) + " }", runs=args.runs))
        (manifests / "checklist.toml").unlink(missing_ok=True)
        rng = random.Random(20)
        cli = [sys.executable, "-m", "relgate.cli"]
        env = {**env, "PYTHONPATH": str(REPO)}
        for side, shift, flag in (("prev", 0.0, ["--release", "0.2.0"]), ("cand", 0.0, ["--candidate"])):
            files = _files(tmp, side, args.rows, args.runs, metrics, shift, rng)
            _, _, done = timed([*cli, "measure", "add", "big", *map(str, files), "--board", "B", *flag], env, root)
            if done.returncode != 0:
                return failed(f"measure add ({side})", done)
        from relgate.ledger.gitfacts import read_git_facts
        from relgate.ledger.identity import project_identity
        from relgate.manifest.workspace import Workspace

        project = project_identity(Workspace.load(REPO, environ=env), read_git_facts(root)).key
        home = Path(env["RELGATE_HOME"])
        ours, inproc, anchor = [], [], []
        print(f"{args.rows} rows × {args.metrics} metrics × {args.runs} runs a side; load average {load0[0]:.2f} "
              f"{load0[1]:.2f} {load0[2]:.2f}")
        for i in range(args.rounds):
            wall, _, done = timed([*cli, "measure", "compare", "big"], env, root)
            if done.returncode not in (0, 1, 3, 4):
                return failed("relgate measure compare", done)
            ours.append(wall)
            inproc.append(_in_process(home, env, project))
            anchor.append(_anchor(home, project))
            print(f"round {i + 1}: relgate measure compare {wall:.3f} s, compare() {inproc[-1]:.3f} s, "
                  f"old policy's read + medians {anchor[-1]:.3f} s")
        summary = next((ln for ln in done.stdout.splitlines() if " rows × " in ln), "").strip()
        print(f"\nlast output's summary: {summary}")
        ratios = [o / a for o, a in zip(ours, anchor)]
        print(f"relgate measure compare (s): {_spread(ours)}")
        print(f"compare() in-process (s):    {_spread(inproc)}")
        print(f"anchor, old policy (s):      {_spread(anchor)}")
        print(f"ratio ours / anchor:         {_spread(ratios)}")
        load1 = os.getloadavg()
        print(f"load average at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        judge(f"compare: relgate measure compare, {args.rows:,} rows × {args.metrics} metrics × {args.runs} runs a "
              "side (the old policy's read + medians beside it)", goal=GOAL, ours=ours, anchor=anchor, mode="value",
              ours_label="relgate measure compare", anchor_label="old policy, in process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
