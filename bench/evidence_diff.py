#!/usr/bin/env python3
"""Benchmark: ``relgate evidence diff`` against a ``sort | join`` shell comparison.

Generates two captures of N cells (default 1,000,000) in a temporary directory: the
base in test-execution order, the candidate the same run again with 1% of values
moved, a few cells dropped and a few added (``--order shuffled`` also shuffles the
candidate, as a parallel test runner would). Then it times, in the same run:

- relgate: ``diff_command`` in a fresh interpreter (``python -c``), so interpreter
  start and import are included; the report goes to a file;
- the shell: ``LC_ALL=C sort`` of both files on a composite key (first two tabs
  turned into \\x01), ``join -a1 -a2``, and ``awk`` counting identical / moved /
  only-base / only-candidate.

The sides alternate for ``--rounds`` rounds (default 5). It prints min / median / max of
relgate's wall, the shell's and the per-round ratio relgate / shell (goal <= 0.5, issue 21),
relgate's CPU seconds and its peak memory per round (ru_maxrss of the child; goal <= 128 MiB),
each judged on its median (bench/_common.py). Exit status: 0, or 1 when the two disagree on
the counts (or either disagrees with what was generated). Timings never fail the run:
see DESIGN.md, "benchmarks that print ratios".
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_ROUNDS, Bench, judge  # noqa: E402

GOAL_PEAK_MIB = 128  # issue 21 (issue 10's was 361 MiB, what the crate's own Rust diff needs)
GOAL_RATIO = 0.5  # relgate / the shell's sort + join, per round (issue 21; issue 10's was ≤ 1.0 s and ≤ 4×)

RELGATE = """\
import resource, sys
from pathlib import Path
try:
    from relgate.evidence.cells import diff_command
except ImportError:  # a checkout from before the stage layout (--against)
    from relgate.evidence import diff_command
code = diff_command(Path(sys.argv[1]), Path(sys.argv[2]), as_json=False, out=sys.stdout)
sys.stdout.flush()
print(f"peak_kib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""

SHELL = r"""
set -euo pipefail
export LC_ALL=C
tab=$'\t'
prep() {
    grep -v -e '^#' -e '^$' -- "$1" | sed "s/$tab/\x01/; s/$tab/\x01/" | sort -t "$tab" -k1,1
}
join -t "$tab" -a 1 -a 2 -e '@NONE@' -o 0,1.2,2.2 <(prep "$1") <(prep "$2") |
    awk -F "$tab" '
        $2 == "@NONE@" { c++; next }
        $3 == "@NONE@" { b++; next }
        $2 == $3       { i++; next }
                       { m++ }
        END { printf "%d %d %d %d\n", i, m, b, c }'
"""

Counts = tuple[int, int, int, int]  # identical, moved, only base, only candidate


def generate(
    directory: Path, cells: int, *, order: str, seed: int
) -> tuple[Path, Path, Counts]:
    """Write base.tsv and candidate.tsv; return their paths and the expected counts."""
    rng = random.Random(seed)
    rows = []
    for i in range(cells):
        suite = f"suite{(i // 2500) % 400}"  # a test writes a run of cells
        arm = ("cpu", "cuda", "rocm", "metal", "ref", "fast")[i % 6]
        rows.append([f"{suite}\t{arm}\tcase{i:07d}", f"{rng.random():.9f}"])
    base_text = "# relgate evidence\n" + "".join(f"{k}\t{v}\n" for k, v in rows)

    candidate = [list(row) for row in rows]
    only_base = min(7, cells // 1000)
    for _ in range(only_base):
        del candidate[rng.randrange(len(candidate))]
    moved = 0
    for p in range(0, len(candidate), 100):  # 1% of the cells
        candidate[p][1] = f"{rng.random():.9f}x"
        moved += 1
    only_candidate = min(5, cells // 1000)
    for n in range(only_candidate):
        candidate.insert(
            rng.randrange(len(candidate) + 1), [f"suite_new\tcpu\tadded{n}", "1.0"]
        )
    if order == "shuffled":
        rng.shuffle(candidate)
    candidate_text = "# relgate evidence\n" + "".join(f"{k}\t{v}\n" for k, v in candidate)

    base = directory / "base.tsv"
    cand = directory / "candidate.tsv"
    base.write_text(base_text, encoding="utf-8")
    cand.write_text(candidate_text, encoding="utf-8")
    identical = cells - only_base - moved
    return base, cand, (identical, moved, only_base, only_candidate)


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_relgate(base: Path, cand: Path, report: Path, repo: Path = REPO) -> tuple[float, float, float, Counts]:
    """Wall and CPU seconds, peak MiB (the process's own high-water mark) and the counts."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    # As on a user's machine, the checkout keeps its bytecode (PYTHONDONTWRITEBYTECODE, set on
    # some build machines, would recompile the engine's modules in every run: ≈20 ms of compiler).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with report.open("w", encoding="utf-8") as out:
        cpu = cpu_of_children()
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", RELGATE, str(base), str(cand)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=repo,
        )
        wall = time.perf_counter() - start
        cpu = cpu_of_children() - cpu
    if proc.returncode not in (0, 1):
        sys.exit(f"relgate failed with exit {proc.returncode}:\n{proc.stderr}")
    summary = report.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1]
    # "N identical, M moved, B only in base, C only in candidate"
    numbers = [int(part.strip().split(" ", 1)[0]) for part in summary.split(",")]
    peak = int(proc.stderr.rsplit("peak_kib ", 1)[1].split()[0]) / 1024
    return wall, cpu, peak, (numbers[0], numbers[1], numbers[2], numbers[3])


def run_shell(base: Path, cand: Path) -> tuple[float, Counts]:
    start = time.perf_counter()
    proc = subprocess.run(
        ["bash", "-c", SHELL, "shell-diff", str(base), str(cand)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"shell comparison failed with exit {proc.returncode}:\n{proc.stderr}")
    i, m, b, c = (int(x) for x in proc.stdout.split())
    return wall, (i, m, b, c)


def describe(counts: Counts) -> str:
    i, m, b, c = counts
    return f"{i} identical, {m} moved, {b} only in base, {c} only in candidate"


def runs(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1_000_000, help="cells per capture")
    parser.add_argument("--repeat", "--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"interleaved rounds of each side (default {DEFAULT_ROUNDS})")
    parser.add_argument(
        "--order",
        choices=("same", "shuffled"),
        default="same",
        help="candidate row order: as the base (a re-run) or shuffled (parallel tests)",
    )
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--generate-into", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also time another checkout's relgate (e.g. the main branch) in the same rounds")
    args = parser.parse_args(argv)
    if args.generate_into is not None:
        *_, counts = generate(args.generate_into, args.cells, order=args.order, seed=args.seed)
        print(*counts)
        return 0

    with Bench("evidence_diff"), tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmp:
        directory = Path(tmp)
        t0 = time.perf_counter()
        # In a child: a process started later inherits its parent's peak RSS (Linux keeps
        # the high-water mark across fork and exec), so this one stays small.
        made = subprocess.run(
            [sys.executable, __file__, "--generate-into", str(directory), "--cells", str(args.cells),
             "--order", args.order, "--seed", str(args.seed)],
            capture_output=True, text=True, check=True,
        )
        base, cand = directory / "base.tsv", directory / "candidate.tsv"
        expected = tuple(int(x) for x in made.stdout.split())
        generated_s = time.perf_counter() - t0
        size_mib = (base.stat().st_size + cand.stat().st_size) / 2**20
        print(
            f"evidence diff: {args.cells:,} cells per capture, candidate order "
            f"{args.order}, {size_mib:.0f} MiB in all (generated in {generated_s:.1f} s)"
        )
        print(f"expected: {describe(expected)}")

        # Round by round: relgate, the other checkout (if any), the shell.
        ours, our_cpu, our_peaks, our_counts = [], [], [], set()
        other, other_cpu, other_peaks = [], [], []
        shell, shell_counts = [], set()
        for _ in range(args.repeat):
            wall, cpu, peak, got = run_relgate(base, cand, directory / "report.txt")
            ours.append(wall)
            our_cpu.append(cpu)
            our_peaks.append(peak)
            our_counts.add(got)
            if args.against is not None:
                wall, cpu, peak, got = run_relgate(base, cand, directory / "other.txt", args.against.resolve())
                other.append(wall)
                other_cpu.append(cpu)
                other_peaks.append(peak)
                our_counts.add(got)
            wall, got = run_shell(base, cand)
            shell.append(wall)
            shell_counts.add(got)

        print(f"relgate CPU seconds (user + sys) min / median / max {min(our_cpu):.2f} / "
              f"{statistics.median(our_cpu):.2f} / {max(our_cpu):.2f}")
        judge(f"evidence diff, {args.cells:,} cells ({args.order} order): relgate / sort + join + awk", goal=GOAL_RATIO,
              ours=ours, anchor=shell, fmt=".3f", ours_label="relgate diff_command", anchor_label="sort + join + awk")
        if other:
            judge(f"evidence diff: {args.against} / sort + join + awk, same rounds", goal=GOAL_RATIO, ours=other,
                  anchor=shell, fmt=".3f", ours_label=str(args.against), anchor_label="sort + join + awk")
        judge(f"evidence diff, {args.cells:,} cells ({args.order} order): relgate's peak memory", goal=GOAL_PEAK_MIB,
              ours=our_peaks, mode="value", unit="MiB", fmt=".1f", ours_label="relgate (ru_maxrss)")

    agreed = our_counts == shell_counts == {expected}
    for name, counts in (("relgate", our_counts), ("shell", shell_counts)):
        for got in sorted(counts):
            print(f"{name + ':':8} {describe(got)}")
    print("counts agree" if agreed else "COUNTS DISAGREE")
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
