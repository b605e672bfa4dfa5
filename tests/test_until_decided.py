"""``nox -s compare -- NAME --previous REF --until-decided``: real measuring runs (a bench target
of the C example's copy that prints seeded lognormal timings of 16 rows, its true slowdown and
noise read from a file of the commit it runs at), REF built in its own worktree, A B A B …,
batch after batch until decided or the budget is spent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import Project, git

FILE_SECONDS = 11  # a scheduling hint (tests/conftest.py)

BENCH = '''\
"""A synthetic bench: 16 rows of lognormal timings, seeded by a run counter outside the tree."""
import math, os, random, sys
from pathlib import Path

shift, cv = map(float, Path(__file__).with_name("synth_shift.txt").read_text().split())
state = Path(os.environ["SYNTH_STATE"])
count = int(state.read_text()) if state.exists() else 0
state.write_text(str(count + 1))
rng = random.Random(count)
sigma = math.sqrt(math.log(1 + cv * cv))
print("row,t")
for i in range(16):
    print(f"{i},{100 * math.exp(math.log1p(shift) + sigma * rng.gauss(0, 1)):.6f}")
'''

MEASURE = """
[measure.synth]
target = "synth-bench"
output = "stdout"
format = "csv"
key = ["row"]
metrics = { t = "lower" }
metadata = ["board"]
runs = 15
"""


@pytest.fixture
def synth(tinyinfer: Project, tmp_path: Path) -> Project:
    root = tinyinfer.root
    (root / "tests" / "synth_bench.py").write_text(BENCH)
    (root / "tests" / "synth_shift.txt").write_text("0 0.02\n")
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('"matvec-bench" = "bench"\n', '"matvec-bench" = "bench"\n'
                                               '"synth-bench" = "bench"\n', 1)
                     + f'\n[target.synth-bench]\npath = "tests/synth_bench.py"\ncommand = "python3 tests/synth_bench.py"\n'
                       f'env = {{ SYNTH_STATE = "{tmp_path / "synth-state"}" }}\n')
    (tinyinfer.manifests / "measurements.toml").write_text(MEASURE)
    (tinyinfer.manifests / "checklist.toml").unlink(missing_ok=True)
    tinyinfer.commit("a synthetic bench")
    git(root, "tag", "v0.2.0")
    return tinyinfer


def _candidate(project: Project, shift: float, cv: float) -> None:
    (project.root / "tests" / "synth_shift.txt").write_text(f"{shift:g} {cv:g}\n")
    (project.root / "README.md").write_text((project.root / "README.md").read_text() + f"\n{shift} {cv}\n")
    project.commit(f"candidate {shift} {cv}")


def _until(project: Project, *budget: str) -> subprocess.CompletedProcess[str]:
    done = project.relgate("compare", "synth", "--previous", "v0.2.0", "--until-decided", *budget)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def test_until_decided_stops_at_block_for_a_true_12_percent_at_2_percent_noise(synth: Project) -> None:
    _candidate(synth, 0.12, 0.02)
    done = _until(synth, "--max-runs", "60")
    assert done.returncode == 1, done.stdout
    board = next(ln for ln in done.stdout.splitlines() if ln.startswith("synth on "))
    assert board.endswith(": block"), done.stdout
    assert "  suite t (geometric mean of 16 rows, 15/15 runs): block" in done.stdout
    assert "until decided: 1 batch of 15 runs a side" in done.stdout and "stopped: every row and the suite decided" \
        in done.stdout
    steps = [ln for ln in done.stdout.splitlines() if "synth@v0.2.0#" in ln]
    assert len(steps) == 15  # both sides, interleaved, one batch


def test_until_decided_stops_at_pass_on_identical_code(synth: Project) -> None:
    _candidate(synth, 0.0, 0.02)
    done = _until(synth, "--max-runs", "60")
    assert done.returncode == 0, done.stdout
    assert next(ln for ln in done.stdout.splitlines() if ln.startswith("synth on ")).endswith(": pass"), done.stdout
    assert "stopped: every row and the suite decided" in done.stdout
    assert "false-alarm bound: identical code gets any slower or block on this board with chance ≤ 0.01" in done.stdout


def test_until_decided_on_a_noisy_board_with_a_small_budget_stays_undecided_and_says_what_it_needs(
        synth: Project) -> None:
    _candidate(synth, 0.06, 0.10)
    done = synth.nox("compare", extra=("--", "synth", "--previous", "v0.2.0", "--until-decided", "--max-runs", "20"))
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 4, done.stdout + done.stderr  # undecided: its own exit (nox keeps it), not block's 1
    assert "until decided: 1 batch of 15 runs a side" in done.stdout
    assert "stopped: the budget is spent (--max-runs 20: 15 runs a side measured)" in done.stdout
    assert "synth on " in done.stdout and ": undecided within the budget: " in done.stdout
    assert "runs a decision needs (one batch, 95% power, noise from the batches at hand" in done.stdout
    assert "  a row (±" in done.stdout and "runs a side call +6.0% slower" in done.stdout
    refused = synth.relgate("compare", "synth", "--max-runs", "20")
    assert refused.returncode == 2 and "--max-runs and --max-minutes are the budget of --until-decided" in \
        refused.stderr
    # a second batch; its two clean candidate batches give an A/A floor; the next run states the
    # runs a decision needs before it measures anything
    timed = _until(synth, "--max-minutes", "0.001")
    assert timed.returncode == 4 and "stopped: the budget is spent (--max-minutes 0.001: another batch takes about" \
        in timed.stdout, timed.stdout
    zero = synth.relgate("compare", "synth", "--until-decided", "--max-runs", "0")
    assert zero.returncode == 2 and "--max-runs: at least 1 run a side" in zero.stderr, zero.stderr
    floor = synth.relgate("measure", "noise", "synth")
    assert floor.returncode == 0 and "A/A noise floor: ±" in floor.stdout, floor.stdout + floor.stderr
    done = _until(synth, "--max-runs", "15")
    before = done.stdout.split("before measuring:", 1)
    assert len(before) == 2 and "synth@v0.2.0#1" in before[1], done.stdout
    assert "runs a decision needs (one batch, 95% power, noise from the A/A noise floor (batch #" in before[1]
    # the fourth batch (max_batches): the suite of 16 rows calls the true 6 % slower where no row can
    done = _until(synth, "--max-runs", "15")
    assert done.returncode == 0, done.stdout
    assert "synth on " in done.stdout and ": slower\n" in done.stdout
    assert "16 rows × metric undecided after max_batches: at their runs each can call about +" in done.stdout
