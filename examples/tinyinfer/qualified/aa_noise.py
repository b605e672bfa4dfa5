#!/usr/bin/env python3
"""A/A compares of the C example's speed measures on this machine: identical code against
itself, to count how often the policy calls it ``slower`` or ``block`` (it must never) and to
record each board's noise floor.

    python3 examples/tinyinfer/qualified/aa_noise.py --out DIR [--rounds 10] [--measure NAME …]

Commits a copy of ``examples/tinyinfer`` into a fresh git repository (the candidate), with the
default manifests (``manifests/``, the project root repointed at the copy) and the default
hosts (``local``, detected: on a GPU machine its board, driver, toolkit and ``cuda``). Then,
per measure (default ``matvec`` and ``matvec-cuda``) and round, one
``nox -s compare -- --aa NAME``: the candidate measured twice, interleaved (A B A B …, the
measure's ``runs`` a side), judged B against A with the measure's own policy (another pair
pooled while a row straddles a threshold, at most ``max_batches``), its noise floor recorded.

Writes into DIR: ``aa.tsv`` (one line per compare: measure, round, board, verdict, the row
counts per verdict, pairs, the floor and the widest row) and ``aa.log`` (every compare's
output). Exit 0 when no compare judged identical code slower or blocked, 1 when one did.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
CHECKOUT = EXAMPLE.parent.parent
VERDICTS = ("pass", "slower", "rerun", "undecided", "block")


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "aa", "GIT_AUTHOR_EMAIL": "aa@localhost",
           "GIT_COMMITTER_NAME": "aa", "GIT_COMMITTER_EMAIL": "aa@localhost"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)


def _workspace(tmp: Path) -> dict[str, str]:
    root = tmp / "tinyinfer"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "qualified"))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "candidate")
    manifests = tmp / "manifests"
    shutil.copytree(CHECKOUT / "manifests", manifests)
    project = manifests / "project.toml"
    project.write_text(project.read_text().replace('root = "../examples/tinyinfer"', f'root = "{root}"'))
    shutil.copytree(CHECKOUT / "hosts", tmp / "hosts")
    return {**os.environ, "RELGATE_MANIFESTS": str(manifests), "RELGATE_HOSTS": str(tmp / "hosts"),
            "RELGATE_HOME": str(tmp / "home"), "NO_COLOR": "1"}


def _parse(measure: str, text: str) -> list[dict[str, str]]:
    """One dict per board of a ``--aa`` compare's output."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        head = re.match(rf"^{re.escape(measure)} A/A on (.+?): (.+)$", line)
        if head:
            out.append({"board": head.group(1), "verdict": head.group(2)})
            continue
        if not out:
            continue
        if line.startswith("  A: batch(es) "):
            out[-1]["pairs"] = str(line.count("#") // 2)
        elif " rows × " in line or " row × " in line:
            for word in VERDICTS:
                m = re.search(rf"(\d+) {word}\b", line)
                out[-1][word] = m.group(1) if m else "0"
        elif line.startswith("  A/A noise floor: ±"):
            m = re.match(r"  A/A noise floor: ±([\d.]+)% at (\d+) runs? a side", line)
            w = re.search(r"widest ±([\d.]+)%, ([^;]+);", line)
            if m:
                out[-1].update(floor=m.group(1), runs=m.group(2))
            if w:
                out[-1].update(widest=w.group(1), widest_row=w.group(2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--measure", action="append", default=[])
    ap.add_argument("--time-limit", type=float, default=0, help="stop starting compares after this many seconds")
    args = ap.parse_args()
    measures = args.measure or ["matvec", "matvec-cuda"]
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="relgate-aa-") as t, open(args.out / "aa.log", "w") as log, \
            open(args.out / "aa.tsv", "w") as tsv:
        env = _workspace(Path(t))
        cols = ["measure", "round", "board", "verdict", *VERDICTS, "pairs", "runs", "floor_pct", "widest_pct",
                "widest_row", "exit", "seconds"]
        print("\t".join(cols), file=tsv, flush=True)
        for i in range(args.rounds):
            for measure in measures:  # the measures take turns: a slow hour hits both alike
                if args.time_limit and time.monotonic() - t0 > args.time_limit:
                    print(f"time limit: stopped before round {i + 1} of {measure}", file=log, flush=True)
                    continue
                s0 = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "nox", "-f", str(CHECKOUT / "noxfile.py"), "-s", "compare",
                                       "--", "--aa", measure], cwd=CHECKOUT, env=env, capture_output=True, text=True)
                took = time.monotonic() - s0
                text = done.stdout + done.stderr
                print(f"===== {measure} round {i + 1}: exit {done.returncode}, {took:.1f} s\n{text}", file=log,
                      flush=True)
                boards = _parse(measure, text) or [{"board": "-", "verdict": f"no A/A output (exit {done.returncode})"}]
                for b in boards:
                    bad += int(b.get("slower", "0")) + int(b.get("block", "0"))
                    row = [measure, str(i + 1), b["board"], b["verdict"], *(b.get(v, "") for v in VERDICTS),
                           b.get("pairs", ""), b.get("runs", ""), b.get("floor", ""), b.get("widest", ""),
                           b.get("widest_row", ""), str(done.returncode), f"{took:.1f}"]
                    print("\t".join(row), file=tsv, flush=True)
                    print("\t".join(row), flush=True)
    print(f"slower or block rows in A/A: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
