#!/usr/bin/env python3
"""Benchmark: what the runner does with a step's evidence capture before it is stored.

Since issue 23 the runner checks every row (a malformed row or a capture of no cell is an
error), masks the cells whose key names a secret and redacts the environment's secrets, in one
bounded pass (``relgate.run.capture.check_capture``). Before, it only redacted, line by line
(``relgate.core.redact.redact_file``): that is the anchor. Both run on the same generated
capture (N cells, default 1,000,000, about 1 % of them keyed by a secret), with the same
Redactor (two planted secrets), interleaved over ``--rounds`` rounds on fresh copies; the script
prints min/median/max seconds of each and the ratio of the medians. Timings never fail the run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Bench, judge  # noqa: E402
from relgate.core.redact import Redactor, redact_file  # noqa: E402
from relgate.run.capture import check_capture  # noqa: E402


def generate(path: Path, cells: int) -> None:
    with open(path, "w") as out:
        out.write("# relgate evidence\n")
        for i in range(cells):
            key = f"case{i % 50}_api_token" if i % 100 == 7 else f"first_token_ms_{i % 997}"
            out.write(f"suite{(i // 2500) % 400}\tarm{i % 13}\t{key}\tvalue-{i * 7919 % 100003}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    redact = Redactor(["planted-secret-0001", "planted-secret-0002"])
    times: dict[str, list[float]] = {"check_capture": [], "redact_file (before)": []}
    with Bench("capture_check"), tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "capture.cells"
        generate(source, args.cells)
        print(f"{args.cells} cells, {source.stat().st_size / 2**20:.1f} MiB, {args.rounds} rounds")
        for _ in range(args.rounds):
            for name in times:
                work = Path(tmp) / "work.cells"
                shutil.copyfile(source, work)
                t0 = time.perf_counter()
                if name == "check_capture":
                    result = check_capture(work, redact)
                    assert result.error is None and result.cells == args.cells, result
                else:
                    redact_file(work, redact)
                times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        print(f"{name:22} min {min(ts):.3f} s  median {statistics.median(ts):.3f} s  max {max(ts):.3f} s")
    a, b = (statistics.median(ts) for ts in times.values())
    print(f"ratio check_capture / redact_file: {a / b:.2f}")
    judge(f"capture check, {args.cells:,} cells: check_capture / redact_file (the pass it replaced)", goal=1.0,
          ours=times["check_capture"], anchor=times["redact_file (before)"], ours_label="check_capture",
          anchor_label="redact_file")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
