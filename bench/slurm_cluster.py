#!/usr/bin/env python3
"""Benchmark: steps as jobs on a real Slurm cluster (issue 39). Needs root, slurm-wlm and munge.

Starts the tests' cluster (``tests/slurm_support.py``: slurmctld, one slurmd per network
namespace, GPU GRES backed by device files) with 4 nodes of one GPU each, a partition ``one``
holding the first node only and ``gpu`` holding all four. Two measurements, each in one run:

* ``per-step``: relgate's cost per step through Slurm. One step (``sleep 1`` needing an h100)
  through ``run_step`` in this process — its ledger row and log, the candidate's checkout in the
  shared work dir (made before the rounds), ``srun`` with the job script (node facts, HEAD
  verified on the node), the job's state from ``scontrol``, the facts stored — against ``srun``
  of the same command alone, on the same idle partition; interleaved rounds. Goal ≤ 1.2×.
* ``lane``: ``relgate lane gate`` (the whole process) of 16 targets that each need an h100 and
  sleep 1 s, the host file's partition ``gpu`` (4 nodes) against ``one`` (1 node); all 16 jobs
  are submitted together either way and Slurm runs them 4 or 1 at a time. Goal: 1 node / 4
  nodes ≥ 3 (judged as 4 nodes / 1 node ≤ 1/3).

Every run's ledger is checked (every step passed, on the nodes expected) before it counts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from slurm_support import NodeSpec, slurm_cluster, slurm_missing  # noqa: E402

from _common import Bench, failed, judge, last_run_steps, make_project, not_all_passed, timed  # noqa: E402
from relgate.ledger.store import Ledger  # noqa: E402

NODES = 4
LANE_STEPS = 16


def lanes(steps: int, seconds: float) -> str:
    text = "[lanes]\n" + "".join(f'"job-{i}" = "gate"\n' for i in range(steps))
    for i in range(steps):
        text += (f'\n[target.job-{i}]\npath = "tests/test_kernels.c"\ncommand = "sleep {seconds:g}"\n'
                 'requires = ["h100"]\n')
    return text


def check(home: Path, nodes: int) -> str | None:
    steps = last_run_steps(home, "job-")
    void = not_all_passed(steps, LANE_STEPS)
    if void is not None:
        return void
    used = {s.facts["slurm"]["node"] for s in steps}
    return None if len(used) == nodes else f"ran on {sorted(used)}, expected {nodes} nodes"


def per_step(env: dict[str, str], root: Path, cluster_env: dict[str, str], rounds: int, seconds: float,
             ) -> tuple[list[float], list[float]] | str:
    """(relgate's run_step, bare srun) wall seconds per round, or why a run does not count."""
    for key in ("RELGATE_MANIFESTS", "RELGATE_HOSTS", "RELGATE_HOME"):
        os.environ[key] = env[key]
    from relgate.ledger.gitfacts import read_git_facts
    from relgate.manifest.specs import CommandSpec
    from relgate.manifest.workspace import Workspace
    from relgate.remote.pool import host_pool
    from relgate.run.plan import PlannedStep
    from relgate.run.runner import run_step

    ws = Workspace.load(root)
    pool = host_pool(ws)
    facts = read_git_facts(root)
    step = PlannedStep(name="one", commands=(CommandSpec(argv=("sleep", f"{seconds:g}")),), cwd=root, lane="gate",
                       target="one", requires=("h100",))
    srun = ["srun", "-Q", "--partition=gpu", "--gres=gpu:h100:1", "--nodes=1", "--ntasks=1", "sleep", f"{seconds:g}"]
    ours: list[float] = []
    anchor: list[float] = []
    with Ledger.open(ws.home) as ledger:
        run_id = ledger.begin_run(session="gate", argv=[], project=ws.project.name, project_root=root,
                                  commit=facts.commit, branch="main", dirty=facts.dirty)
        for n in range(rounds + 1):
            placed = pool.place(step)
            t0 = time.perf_counter()
            outcome = run_step(step, session="gate", run_id=run_id, facts=facts, placed=placed, ledger=ledger)
            mine = time.perf_counter() - t0
            if outcome.verdict.value != "pass":
                return f"relgate's step: {outcome.verdict.value} {outcome.reason}"
            t0 = time.perf_counter()
            done = subprocess.run(srun, env=cluster_env, capture_output=True, text=True)
            bare = time.perf_counter() - t0
            if done.returncode != 0:
                return f"srun: exit {done.returncode}: {done.stderr.strip()}"
            if n == 0:
                print(f"  warm-up relgate {mine:6.3f} s  srun {bare:6.3f} s (the checkout is made here)")
                continue
            ours.append(mine)
            anchor.append(bare)
            print(f"  round {n} relgate {mine:6.3f} s  srun {bare:6.3f} s")
    pool.close()
    return ours, anchor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="per-step rounds (default 5)")
    parser.add_argument("--lane-rounds", type=int, default=3, help="4-node + 1-node lane pairs (default 3)")
    parser.add_argument("--seconds", type=float, default=1.0, help="each step's sleep (default 1)")
    parser.add_argument("--only", choices=("per-step", "lane"), action="append")
    args = parser.parse_args(argv)
    why = slurm_missing()
    if why is not None:
        print(f"slurm_cluster: {why}", file=sys.stderr)
        return 1
    with Bench("slurm_cluster"), tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmp_name:
        tmp = Path(tmp_name)
        nodes = [NodeSpec(name=f"node{i}", gpu_type="h100", gpus=1) for i in range(NODES)]
        with slurm_cluster(tmp / "slurm", nodes, netns=True, partitions={"one": ["node0"]}) as cluster:
            root, env = make_project(tmp, "tinyinfer")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent),
                                                           env.get("PYTHONPATH")) if p)
            hosts = Path(env["RELGATE_HOSTS"])
            (hosts / "local.toml").unlink()
            cluster.host_file(hosts / "cluster.toml")
            manifests = Path(env["RELGATE_MANIFESTS"])
            results = {}
            if not args.only or "per-step" in args.only:
                (manifests / "lanes.toml").write_text(lanes(1, args.seconds))
                print(f"\nper step: run_step through Slurm vs srun alone, sleep {args.seconds:g}")
                got = per_step(env, root, cluster.env, args.rounds, args.seconds)
                if isinstance(got, str):
                    print(f"per-step: the run does not count: {got}", file=sys.stderr)
                    return 1
                results["per-step"] = got
            if not args.only or "lane" in args.only:
                (manifests / "lanes.toml").write_text(lanes(LANE_STEPS, args.seconds))
                cluster_file = hosts / "cluster.toml"
                text = cluster_file.read_text()
                times: dict[str, list[float]] = {"4": [], "1": []}
                print(f"\nlane: relgate lane gate, {LANE_STEPS} steps of {args.seconds:g} s, {NODES} nodes vs 1")
                for n in range(args.lane_rounds + 1):
                    for label, partition, count in (("4", "gpu", NODES), ("1", "one", 1)):
                        cluster_file.write_text(text.replace('partition = "gpu"', f'partition = "{partition}"'))
                        wall, _, done = timed([sys.executable, "-m", "relgate.cli", "lane", "gate"], env, cwd=root)
                        if done.returncode != 0:
                            return failed(f"lane on {label} node(s)", done)
                        void = check(Path(env["RELGATE_HOME"]), count)
                        if void is not None:
                            print(f"lane on {label} node(s): the run does not count: {void}", file=sys.stderr)
                            return 1
                        print(f"  {'warm-up' if n == 0 else f'round {n}'} {label} node(s) {wall:6.2f} s wall")
                        if n:
                            times[label].append(wall)
                results["lane"] = (times["4"], times["1"])
    print()
    if "per-step" in results:
        ours, anchor = results["per-step"]
        judge(f"cost per step through Slurm (sleep {args.seconds:g}): relgate's run_step / srun alone", goal=1.2,
              ours=ours, anchor=anchor, ours_label="relgate run_step", anchor_label="srun alone")
        judge("relgate's own time per step through Slurm: run_step − srun alone", goal=0.2,
              ours=ours, anchor=anchor, mode="difference", ours_label="relgate run_step",
              anchor_label="srun alone", goal_text="≤ 0.2 s (the 1.2× of a 1 s step)")
    if "lane" in results:
        four, one = results["lane"]
        judge(f"{LANE_STEPS}-step lane over a {NODES}-node cluster / over 1 node (≥ 3× faster: ≤ 0.333)",
              goal=1 / 3, ours=four, anchor=one, ours_label=f"{NODES} nodes", anchor_label="1 node")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
