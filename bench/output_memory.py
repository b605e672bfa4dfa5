#!/usr/bin/env python3
"""Benchmark: relgate's peak memory while a step prints a lot, against the shell.

One check prints ``--mb`` MB (default 500) of build-like lines and then "the end"; the
check has ``expect_output = "^the end$"`` and ``warnings = "deny"``, so relgate streams the
output through redaction, the warning scanner, the ``expect_output`` matcher and the log.
In the same run, alternating:

- relgate: ``python -m relgate.cli host`` on a fresh copy of ``examples/tinyinfer``;
- the shell: the same command with its output to a log file, then ``grep -E -q`` for the
  pattern in that log;
- with ``--against DIR``, also the relgate of another checkout (e.g. the one before this
  change), with ``PYTHONPATH=DIR``.

Each runs under a small wrapper whose ``RUSAGE_CHILDREN`` ``ru_maxrss`` is the peak of the
largest process of the run (relgate itself; the command and the guardian are small). It
prints every round, the medians and relgate's peak against the goal (<= 64 MiB), PASS or
MISS. Exit 1 only when a run failed (its tail is printed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_ROUNDS, REPO, Bench, failed, judge, make_project, measure, spread  # noqa: E402

GOAL_MIB = 64.0
LINE = "src/kernels_cpu.c: compiling the kernels of the release build with every optimisation -O3 -march=native"



def produce(mb: int) -> str:
    return f"yes '{LINE}' | head -c {mb * 1_000_000}; echo; echo the end"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=500, help="MB of output the step prints (default 500)")
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--against", type=Path, help="another checkout's relgate, measured the same way")
    args = ap.parse_args(argv)
    with Bench("output_memory"), tempfile.TemporaryDirectory(prefix="relgate-bench-output-") as name:
        tmp = Path(name)
        root, env = make_project(tmp, "tinyinfer")
        manifests = Path(env["RELGATE_MANIFESTS"])
        (manifests / "lanes.toml").unlink()
        (manifests / "builds.toml").write_text(
            f'[[check]]\nname = "chatty"\nshell = true\nwarnings = "deny"\nexpect_output = "^the end$"\n'
            f"run = {json.dumps(produce(args.mb))}\n")
        shell = f"({produce(args.mb)}) > {tmp / 'shell.log'} 2>&1 && grep -E -q '^the end$' {tmp / 'shell.log'}"
        sides: dict[str, tuple[list[str], dict[str, str]]] = {
            "relgate": ([sys.executable, "-m", "relgate.cli", "host"], {**env, "PYTHONPATH": str(REPO)}),
            "shell": (["bash", "-c", shell], env),
        }
        if args.against:
            sides["against"] = ([sys.executable, "-m", "relgate.cli", "host"],
                                {**env, "PYTHONPATH": str(args.against.resolve())})
        peaks: dict[str, list[float]] = {k: [] for k in sides}
        print(f"{args.mb} MB of output, {args.rounds} round(s)")
        for i in range(args.rounds):
            for label, (cmd, side_env) in sides.items():
                home = Path(env["RELGATE_HOME"])
                subprocess.run(["rm", "-rf", str(home)], check=True)  # a 500 MB log per run: keep one
                peak, done = measure(cmd, side_env, root, tmp)
                if done.returncode != 0:
                    return failed(label, done)
                peaks[label].append(peak)
                print(f"  round {i + 1} {label:8s} peak {peak:8.1f} MiB")
    print(f"anchor, the same rounds: the shell (log to a file, grep -E -q) peak {spread(peaks['shell'], 1, '.1f')} MiB")
    if args.against:
        print(f"relgate of {args.against}: peak {spread(peaks['against'], 1, '.1f')} MiB")
    judge(f"relgate host, {args.mb} MB of output (redact, scan, expect_output, log): peak memory", goal=GOAL_MIB,
          ours=peaks["relgate"], mode="value", unit="MiB", fmt=".1f", ours_label="relgate (ru_maxrss)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
