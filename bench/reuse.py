"""Benchmark: a `--reuse` re-run of `nox -s host gate contract` against the cold run.

    python bench/reuse.py [--rounds N]

On a fresh copy of examples/scankern (the Rust crate; its own git repo, manifests and
ledger home), each round:

* cold: `cargo clean`, a fresh ledger home, then `nox -s host gate contract` — everything
  built and run, every step recorded;
* reuse: `nox -s host gate contract -- --reuse` on the same commit and clean tree — every
  step that already passed there is kept (a new ledger row points at the earlier one).

After each reuse run the ledger is checked: every step of the three reuse runs must point
at an earlier pass, or the comparison is void (exit 1). Prints the medians and the ratio
reuse / cold against the goal (<= 0.05). A measurement, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import DEFAULT_ROUNDS, REPO, Bench, failed, judge, make_project, timed  # noqa: E402
from relgate.ledger.store import Ledger  # noqa: E402

EXAMPLE = "scankern"
GOAL = 0.05
SESSIONS = ["host", "gate", "contract"]
IN_PROCESS = ("lane-census", "allow-rules")


def not_reused(home: Path) -> list[str]:
    """Steps of the last three runs (the reuse run's sessions) that did not reuse a pass; the
    in-process checks (the lane census, the allow-rule check) always run again, by design."""
    with Ledger.open(home) as ledger:
        runs = ledger.runs()[-len(SESSIONS):]
        return [f"{r.session}/{s.step}" for r in runs for s in ledger.steps(run_id=r.id)
                if not s.reused_from and s.step not in IN_PROCESS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"cold + reuse pairs (default {DEFAULT_ROUNDS})")
    args = parser.parse_args(argv)
    nox = [sys.executable, "-m", "nox", "-f", str(REPO / "noxfile.py"), "-s", *SESSIONS]
    cold: list[float] = []
    warm: list[float] = []
    with Bench("reuse"), tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmp:
        root, env = make_project(Path(tmp), EXAMPLE)
        home = Path(env["RELGATE_HOME"])
        print(f"relgate: {' '.join(nox[2:])}  on a copy of examples/{EXAMPLE}")
        for n in range(1, args.rounds + 1):
            subprocess.run(["cargo", "clean"], cwd=root, capture_output=True, check=True)
            shutil.rmtree(home, ignore_errors=True)
            wall_cold, _, done = timed(nox, env)
            if done.returncode != 0:
                return failed("cold run", done)
            wall_warm, _, done = timed([*nox, "--", "--reuse"], env)
            if done.returncode != 0:
                return failed("reuse run", done)
            missing = not_reused(home)
            if missing:
                print(f"reuse run re-ran {', '.join(missing)}: the comparison is void", file=sys.stderr)
                return 1
            cold.append(wall_cold)
            warm.append(wall_warm)
            print(f" round {n}:  cold {wall_cold:7.3f} s   reuse {wall_warm:6.3f} s   "
                  f"ratio {wall_warm / wall_cold:.3f}")
    print()
    judge("--reuse on the same commit / the cold run", goal=GOAL, ours=warm, anchor=cold, fmt=".3f",
          ours_label="reuse", anchor_label="cold (cargo clean, fresh ledger)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
