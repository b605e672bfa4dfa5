#!/usr/bin/env python3
"""Run every bench, one after the other, and print one table of what they judged.

    python bench/all.py [--only NAME ...] [--skip NAME ...] [--log FILE] [--json FILE]

Each bench runs as its own process with its defaults (its rounds, its sizes), its output
streamed here as it comes; every ``RESULT {json}`` line it prints (bench/_common.py's
``judge``) becomes one row of the table at the end: the goal, the anchor, min / median / max
of both sides and of the per-round ratio (or difference), the verdict on the median (``noisy``
where the rounds fall on both sides of the goal) and the load average when it was judged.
``fixed_cost`` runs three times: on a fresh ledger and on ledgers of 10,000 and 100,000
finished steps. A bench that fails (exit status not 0) is a row of its own, and all.py exits 1.
A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

# (name, script, arguments): every bench, in the order they run.
RUNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("fixed_cost", "fixed_cost.py", ()),
    ("fixed_cost-10k", "fixed_cost.py", ("--ledger-steps", "10000", "--rounds", "10")),
    ("fixed_cost-100k", "fixed_cost.py", ("--ledger-steps", "100000", "--rounds", "10")),
    ("remote_ssh", "remote_ssh.py", ()),
    ("remote_fanout", "remote_fanout.py", ()),
    ("evidence_diff", "evidence_diff.py", ()),
    ("evidence_memory", "evidence_memory.py", ()),
    ("output_memory", "output_memory.py", ()),
    ("signoff", "signoff.py", ()),
    ("signoff_page", "signoff_page.py", ()),
    ("host_vs_shell", "host_vs_shell.py", ()),
    ("reuse", "reuse.py", ()),
    ("compare_stats", "compare_stats.py", ()),
    ("gpu_slots", "gpu_slots.py", ()),
    ("slurm_cluster", "slurm_cluster.py", ()),
    ("init_speed", "init_speed.py", ()),
    ("capture_check", "capture_check.py", ()),
)


def _fmt(values: list[float] | None, unit: str) -> str:
    if not values:
        return "—"
    digits = 0 if max(abs(v) for v in values) >= 100 else 2 if max(abs(v) for v in values) >= 1 else 3
    return " / ".join(f"{v:.{digits}f}" for v in values) + f" {unit}"


def table(rows: list[dict[str, object]]) -> str:
    out = ["| bench | what | goal | relgate (min / median / max) | anchor (min / median / max) | "
           "per round (min / median / max) | verdict | load (1, 5, 15 min) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        if "error" in row:
            out.append(f"| {row['bench']} | {row['error']} | | | | | ERROR | |")
            continue
        per = [row["min"], row["median"], row["max"]]
        anchor = f"{row['anchor_label']}: {_fmt(row['anchor'], row['side_unit'])}" if row["anchor"] else "—"
        out.append(f"| {row['bench']} | {row['what']} | {row['goal']} | {_fmt(row['ours'], row['side_unit'])} | "
                   f"{anchor} | {_fmt(per, row['unit'])} | {row['verdict']} | {row['load']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", metavar="NAME", help="run only these (repeatable)")
    ap.add_argument("--skip", action="append", metavar="NAME", default=[], help="leave these out (repeatable)")
    ap.add_argument("--log", type=Path, help="also write every bench's output here")
    ap.add_argument("--json", type=Path, help="write the table's rows here as JSON")
    args = ap.parse_args(argv)
    known = {name for name, _, _ in RUNS}
    for name in [*(args.only or ()), *args.skip]:
        if name not in known:
            ap.error(f"no bench {name!r}; the benches: {', '.join(sorted(known))}")
    rows: list[dict[str, object]] = []
    failed = False
    log = args.log.open("w") if args.log else None
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        for name, script, extra in RUNS:
            if (args.only and name not in args.only) or name in args.skip:
                continue
            argv_ = [sys.executable, str(BENCH / script), *extra]
            banner = f"\n=== {name}: {' '.join(argv_[1:])} ({time.strftime('%H:%M:%S')})"
            print(banner, flush=True)
            if log:
                log.write(banner + "\n")
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv_, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                    cwd=BENCH.parent)
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("RESULT "):
                    rows.append({"bench": name, **json.loads(line[len("RESULT "):])})
                else:
                    sys.stdout.write(line)
                if log:
                    log.write(line)
                    log.flush()
            code = proc.wait()
            print(f"=== {name}: exit {code} after {time.perf_counter() - t0:.0f} s", flush=True)
            if code != 0:
                failed = True
                rows.append({"bench": name, "error": f"exit {code}: its figures are void"})
    finally:
        if log:
            log.close()
    text = table(rows)
    print("\n" + text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
