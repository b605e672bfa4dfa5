#!/usr/bin/env python3
"""Benchmark: single-GPU steps side by side on a host's GPU slots (issue 39).

``relgate lane gate`` (a whole process: start, lane census, ledger, logs) on a copy of
examples/tinyinfer whose gate lane holds 8 targets that each need one GPU (``requires =
["cuda"]``) and run ``sleep 1``, on the local host declared with ``gpus = 8``; the anchor is
the same lane on the same host declared with ``gpus = 1``, where the steps run one at a time
(8 s of sleeping). No machine here has a GPU: the slots are declared (the one fake, the GPU
itself), the steps are real processes, each told its own ``CUDA_VISIBLE_DEVICES``. Rounds
interleave the two; the ledger of every run is checked (8 passes, 8 distinct GPUs with 8 slots).

Goals: the 8-slot run ≤ 1.3 s wall, judged twice: the whole process (relgate's start, about
0.2–0.4 s here, included), and the steps' span in the ledger (first start to last end); as a
ratio, the whole process ≤ 1.3 / 8 of the one-at-a-time run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import Bench, failed, judge, last_run_steps, make_project, not_all_passed, timed  # noqa: E402

STEPS = 8


def lanes(seconds: float) -> str:
    text = "[lanes]\n" + "".join(f'"gpu-{i}" = "gate"\n' for i in range(STEPS))
    for i in range(STEPS):
        text += (f'\n[target.gpu-{i}]\npath = "tests/test_kernels.c"\ncommand = "sleep {seconds:g}"\n'
                 'requires = ["cuda"]\n')
    return text


def span(home: Path) -> float:
    """Seconds from the first GPU step's start to the last one's end (the ledger's clock)."""
    steps = last_run_steps(home, "gpu-")
    starts = [datetime.fromisoformat(s.started).timestamp() for s in steps]
    ends = [a + (s.duration or 0.0) for a, s in zip(starts, steps)]
    return max(ends) - min(starts)


def check(home: Path, slots: int) -> str | None:
    steps = last_run_steps(home, "gpu-")
    void = not_all_passed(steps, STEPS)
    if void is not None:
        return void
    gpus = {g["index"] for s in steps for g in s.facts.get("gpus", [])}
    if len(gpus) != min(slots, STEPS):
        return f"the steps ran on GPUs {sorted(gpus)}, expected {min(slots, STEPS)} distinct"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="8-slot + 1-slot pairs (default 3)")
    parser.add_argument("--seconds", type=float, default=1.0, help="each step's sleep (default 1)")
    args = parser.parse_args(argv)
    cli = [sys.executable, "-m", "relgate.cli", "lane", "gate"]
    slots_times: list[float] = []
    serial_times: list[float] = []
    spans: dict[str, list[float]] = {"8 slots": [], "1 slot": []}
    with Bench("gpu_slots"), tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmp_name:
        tmp = Path(tmp_name)
        root, env = make_project(tmp, "tinyinfer")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent),
                                                       env.get("PYTHONPATH")) if p)
        (Path(env["RELGATE_MANIFESTS"]) / "lanes.toml").write_text(lanes(args.seconds))
        host = Path(env["RELGATE_HOSTS"]) / "local.toml"
        for n in range(args.rounds + 1):
            for label, slots, times in (("8 slots", 8, slots_times), ("1 slot", 1, serial_times)):
                host.write_text(f'[host]\nname = "local"\nkind = "local"\ncapabilities = ["cuda"]\ngpus = {slots}\n')
                wall, cpu, done = timed(cli, env, cwd=root)
                if done.returncode != 0:
                    return failed(label, done)
                void = check(Path(env["RELGATE_HOME"]), slots)
                if void is not None:
                    print(f"{label}: the run does not count: {void}", file=sys.stderr)
                    return 1
                if n == 0:
                    print(f"  warm-up {label:8s} {wall:6.2f} s wall")
                    continue
                times.append(wall)
                spans[label].append(span(Path(env["RELGATE_HOME"])))
                print(f"  round {n} {label:8s} {wall:6.2f} s wall  {cpu:6.2f} s cpu  "
                      f"{spans[label][-1]:6.2f} s from the first step's start to the last one's end")
    print()
    judge(f"{STEPS} single-GPU steps of {args.seconds:g} s on 8 slots: relgate lane gate, whole process",
          goal=1.3, ours=slots_times, mode="value", ours_label="8 slots", goal_text="≤ 1.3 s")
    judge(f"{STEPS} single-GPU steps of {args.seconds:g} s on 8 slots: the steps' span in the ledger "
          "(first start to last end, without relgate's start and the lane census)",
          goal=1.3, ours=spans["8 slots"], mode="value", ours_label="8 slots", goal_text="≤ 1.3 s")
    judge(f"{STEPS} single-GPU steps of {args.seconds:g} s: 8 slots / one at a time (gpus = 1), whole process",
          goal=1.3 / STEPS, ours=slots_times, anchor=serial_times, ours_label="8 slots", anchor_label="1 slot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
