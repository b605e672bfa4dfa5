"""Benchmark: `relgate init` on a generated crate of 300 targets.

    python bench/init_speed.py [--targets N] [--rounds N] [--warmup N]

A crate with N targets (by default 300: 240 ``[[test]]``, 40 harness-free ``[[bench]]``,
20 qualification tools behind the ``qualification`` feature, 8 features) in its own git
repository. Each round runs, alternating (so caches and a busy machine affect both alike;
warm-up rounds first, not counted):

* relgate's path: ``python -m relgate.cli init --manifests mN`` into a fresh folder — a whole
  process: Python's start, relgate's imports, ``cargo metadata``, the Cargo.toml reader (for
  ``harness``), every file written;
* the anchor: ``cargo metadata --no-deps --format-version 1`` alone on the same crate (the
  reading init cannot do without).

relgate keeps its bytecode, as installed (``--compile-each-run``: recompiled every run, as
with PYTHONDONTWRITEBYTECODE). Prints every round, min/median/max of both, the ratio of the medians and the load average
before and after. Goal: init ≤ 1 s. After the first init its lanes.toml must hold one line per
target and `relgate census` must name every target it could not place, or the figures are
void (exit 1). This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import REPO, failed, git, judge, timed  # noqa: E402

GOAL_S = 1.0


def make_crate(root: Path, n: int) -> tuple[int, int, int]:
    """A crate of ``n`` targets; returns (tests, benches, tools)."""
    benches, tools = max(n * 2 // 15, 1), max(n // 15, 1)
    tests = n - benches - tools
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "benches").mkdir()
    (root / "tools" / "qualification").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("pub fn add(a: u32, b: u32) -> u32 { a + b }\n")
    features = [f"feat{i}" for i in range(7)]
    lines = ['[package]', 'name = "bigcrate"', 'version = "0.1.0"', 'edition = "2021"', "autotests = false",
             "autobenches = false", "", "[features]", "default = []", "qualification = []",
             *(f"{f} = []" for f in features), ""]
    for i in range(tests):
        (root / "tests" / f"t{i:03}.rs").write_text("#[test]\nfn ok() {}\n")
        lines += ["[[test]]", f'name = "t{i:03}"', f'path = "tests/t{i:03}.rs"', ""]
    for i in range(benches):
        (root / "benches" / f"b{i:03}.rs").write_text("fn main() {}\n")
        lines += ["[[bench]]", f'name = "b{i:03}"', f'path = "benches/b{i:03}.rs"', "harness = false", ""]
    for i in range(tools):
        (root / "tools" / "qualification" / f"q{i:03}.rs").write_text("fn main() {}\n")
        lines += ["[[test]]", f'name = "q{i:03}"', f'path = "tools/qualification/q{i:03}.rs"', "harness = false",
                  'required-features = ["qualification"]', ""]
    (root / "Cargo.toml").write_text("\n".join(lines))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return tests, benches, tools


def _stats(xs: list[float]) -> str:
    return f"min {min(xs):.3f}  median {statistics.median(xs):.3f}  max {max(xs):.3f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--compile-each-run", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE: every run recompiles relgate's sources")
    args = ap.parse_args()
    cargo = shutil.which("cargo")
    if cargo is None:
        print("cargo is not on PATH", file=sys.stderr)
        return 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    # As on a user's machine, relgate keeps its bytecode (the warm-up writes it): with
    # PYTHONDONTWRITEBYTECODE every run of a checkout recompiles it, which measures the compiler.
    if not args.compile_each_run:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="relgate-init-bench-") as tmp:
        root = Path(tmp) / "bigcrate"
        tests, benches, tools = make_crate(root, args.targets)
        print(f"crate: {args.targets} targets ({tests} tests, {benches} benches, {tools} qualification tools), "
              f"8 features; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        relgate_s: list[float] = []
        anchor_s: list[float] = []
        cpu_s: list[float] = []
        for i in range(args.warmup + args.rounds):
            wall_r, cpu_r, done = timed([sys.executable, "-m", "relgate.cli", "init", "--manifests", f"m{i}"], env, root)
            if done.returncode != 0:
                return failed("relgate init", done)
            if i == 0:
                lanes = (root / "m0" / "lanes.toml").read_text()
                rows = [line for line in lanes.splitlines() if line.lstrip("# ").startswith('"')]
                census = timed([sys.executable, "-m", "relgate.cli", "--manifests", "m0", "census"], env, root)[2]
                named = [line for line in census.stdout.splitlines() if line.lstrip().startswith("unassigned")]
                if len(rows) != args.targets or len(named) != tests:
                    print(f"void: lanes.toml holds {len(rows)} target lines, the census names {len(named)} "
                          f"unassigned (want {args.targets} and {tests})", file=sys.stderr)
                    return failed("relgate census", census)
            wall_a, _, done = timed([cargo, "metadata", "--no-deps", "--format-version", "1"], env, root)
            if done.returncode != 0:
                return failed("cargo metadata", done)
            counted = i >= args.warmup
            if counted:
                relgate_s.append(wall_r)
                cpu_s.append(cpu_r)
                anchor_s.append(wall_a)
            print(f"round {i + 1}{'' if counted else ' (warm-up)'}: relgate init {wall_r:.3f} s (CPU {cpu_r:.3f} s)   "
                  f"cargo metadata {wall_a:.3f} s")
        med_r, med_a = statistics.median(relgate_s), statistics.median(anchor_s)
        print(f"relgate init    {_stats(relgate_s)}")
        print(f"  CPU (user+sys) {_stats(cpu_s)}")
        print(f"cargo metadata  {_stats(anchor_s)}")
        print(f"ratio of medians {med_r / med_a:.2f}; relgate adds {med_r - med_a:.3f} s")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        judge(f"init: relgate init of a {args.targets}-target crate (cargo metadata alone beside it)", goal=GOAL_S,
              ours=relgate_s, anchor=anchor_s, mode="value", ours_label="relgate init", anchor_label="cargo metadata")
    return 0


if __name__ == "__main__":
    sys.exit(main())
