"""The false-alarm bound, the suite verdict and the runs a decision needs, on seeded synthetic
boards (lognormal runs, 15 a batch; tests/speed_sim.py). Each figure below is a count over the
trials named beside it, asserted against the issue's target; the simulations run the real
judgement (``judge_board``: the rows, the suite, the bound), only without sorting differences
for the intervals' printed ends.

Trials (about 13 s of one core here, 17 s wall at a load of 4 on 2 cores): 400 boards × 64 rows × 4 batches of identical code at 10, 20 and
40 % noise (one set of draws, scaled); 200 boards × 64 rows at a true +10 %, +12 % and +6 %
(10 % noise, 4 batches); 20 boards × 64 rows × 8 batches for the per-row power; 1,000 one-batch
trials per calibration point.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from speed_sim import normals, sigma, simulate_boards, spec

from relgate.measure.bound import SUITE_SHARE, Bound, board_bounds
from relgate.measure.judge import judge
from relgate.measure.power import decision_power, runs_needed
from relgate.measure.stats import critical, decide
from relgate.measure.verdicts import BLOCK, PASS, RERUN, SLOWER, UNDECIDED

FILE_SECONDS = 17  # a scheduling hint (tests/conftest.py)
ROWS, BOARDS = 64, 400
BAD = (SLOWER, BLOCK)


def _bad(board) -> bool:  # noqa: ANN001
    return any(r.verdict in BAD for r in (*board.results, *board.suite))


@pytest.fixture(scope="module")
def identical() -> dict[float, list]:
    ms = spec()
    rng = random.Random(37)
    out: dict[float, list] = {0.10: [], 0.20: [], 0.40: []}
    for _ in range(BOARDS):
        for cv, board in zip(out, simulate_boards(ms, rng, ROWS, 0.0, list(out))):
            out[cv].append(board)
    return out


def test_the_bound_spends_the_budget_over_suite_rows_and_looks() -> None:
    rows, suite = board_bounds(0.01, 64, 1, 4)
    assert suite is not None and math.isclose(suite.share, SUITE_SHARE)
    spent = sum(b.alpha(k) * b.tests for b in (rows, suite) for k in range(1, 5))
    assert math.isclose(spent, 0.01)  # the union bound adds up to false_alarm, no more
    assert [round(rows.alpha(k) / rows.alpha(1)) for k in range(1, 5)] == [1, 3, 5, 7]  # (k/K)² spent by look k
    alone, none = board_bounds(0.01, 1, 0, 1)
    assert none is None and math.isclose(alone.confidence(1), 0.98)
    assert Bound(false_alarm=0.01, share=1.0, tests=10, looks=4).alpha(9) == Bound(
        false_alarm=0.01, share=1.0, tests=10, looks=4).alpha(4)


@pytest.mark.parametrize("cv", [0.10, 0.20, 0.40])
def test_identical_code_gets_a_false_alarm_on_at_most_one_board_in_a_hundred(identical: dict, cv: float) -> None:
    """400 boards × 64 rows, up to 4 batches: any slower or block, row or suite, on ≤ 1 %."""
    boards = identical[cv]
    bad = sum(_bad(b) for b in boards)
    assert len(boards) == BOARDS and bad <= 0.01 * BOARDS, (cv, bad)
    verdicts = Counter(b.verdict.split(":")[0] for b in boards)
    assert verdicts[PASS] + verdicts[UNDECIDED] == BOARDS, verdicts  # never slower, block or a pending rerun


def test_identical_code_passes_as_a_suite_on_a_noisy_board(identical: dict) -> None:
    """10 % noise per row: no row can tell 5 %, the suite (≈ 1.25 % noise) can: pass ≥ 99 %."""
    boards = identical[0.10]
    suite = Counter(b.suite[0].verdict for b in boards)
    board = Counter(b.verdict for b in boards)
    assert suite[PASS] >= 0.99 * BOARDS and board[PASS] >= 0.99 * BOARDS, (suite, board)
    assert sum(r.verdict == UNDECIDED for b in boards for r in b.results) > 0.9 * BOARDS * ROWS  # rows alone: open


@pytest.fixture(scope="module")
def shifted() -> dict[float, list]:
    """200 boards at 10 % noise, every row moved by the same true change."""
    ms = spec()
    rng = random.Random(38)
    out: dict[float, list] = {0.10: [], 0.12: [], 0.06: []}
    for _ in range(200):
        z = [normals(rng, ROWS, 15) for _ in range(8)]
        for change in out:
            out[change].append(_board_from(ms, z, change))
    return out


def _board_from(ms, z, change):  # noqa: ANN001, ANN202
    from speed_sim import batch_of, judge_board_of

    s = sigma(0.10)
    prevs = [batch_of(zz, [0.0] * ROWS, s) for zz in z[:4]]
    cands = [batch_of(zz, [math.log1p(change)] * ROWS, s) for zz in z[4:]]
    return judge_board_of(ms, prevs, cands)


def test_a_change_exactly_at_block_above_is_rarely_blocked(shifted: dict) -> None:
    """A true +10 % on every row: blocked in ≤ 3.5 % of row trials (12,800), and of boards."""
    boards = shifted[0.10]
    rows = [r for b in boards for r in (*b.results, *b.suite)]
    blocked = sum(r.verdict == BLOCK for r in rows)
    assert blocked <= 0.035 * len(rows), blocked
    assert sum(b.verdict == BLOCK for b in boards) <= 0.035 * len(boards)


def test_the_suite_calls_a_uniform_regression_on_a_noisy_board(shifted: dict) -> None:
    """10 % noise, 64 rows, ≤ 4 batches: +12 % everywhere → block ≥ 99 %; +6 % → slower ≥ 85 %."""
    twelve = Counter(b.verdict for b in shifted[0.12])
    six = Counter(b.verdict for b in shifted[0.06])
    assert twelve[BLOCK] >= 0.99 * 200, twelve
    assert six[SLOWER] >= 0.85 * 200 and six[BLOCK] == 0, six


@pytest.mark.parametrize("change, cv, want", [(0.12, 0.02, BLOCK), (0.06, 0.01, SLOWER)])
def test_a_row_is_called_within_eight_batches_with_the_bound_in_force(change: float, cv: float, want: str) -> None:
    """A board of 64 rows, max_batches = 8: a true 12 % at 2 % noise → block ≥ 95 % of rows,
    a true 6 % at 1 % noise → slower ≥ 95 % (20 boards: 1,280 row trials each)."""
    ms = spec(max_batches=8)
    rng = random.Random(39)
    got: Counter[str] = Counter()
    for _ in range(20):
        (board,) = simulate_boards(ms, rng, ROWS, change, [cv])
        got.update(r.verdict for r in board.results)
    assert got[want] >= 0.95 * 20 * ROWS, got
    assert got[PASS] == 0, got


def _one_batch(n: int, change: float, cv: float, trials: int, seed: int, c: int) -> Counter[str]:
    rng = random.Random(seed)
    s, gauss = sigma(cv), rng.gauss
    out: Counter[str] = Counter()
    for _ in range(trials):
        xs = sorted(gauss(0.0, s) for _ in range(n))
        ys = sorted(gauss(math.log1p(change), s) for _ in range(n))
        out[decide(xs, ys, c, math.log1p(0.05), math.log1p(0.10)) or RERUN] += 1
    return out


@pytest.mark.parametrize("cv", [0.01, 0.02, 0.03])
def test_the_runs_a_decision_needs_reach_the_stated_power(cv: float) -> None:
    """Where relgate says N runs a side resolve d, one batch of N runs (judged at the first
    look of a 64-row board's bound) calls it at the stated power ± 3 points (1,000 trials)."""
    rows, _ = board_bounds(0.01, ROWS, 1, 4)
    conf = rows.confidence(1)
    for verdict, change in ((BLOCK, 0.12), (SLOWER, 0.06)):
        got = runs_needed(verdict, change, sigma(cv), conf, 0.95, rerun_above=0.05, block_above=0.10)
        assert got is not None
        n, stated = got
        assert stated >= 0.95
        hits = _one_batch(n, change, cv, 1000, seed=int(cv * 1000) + len(verdict), c=critical(n, n, conf))[verdict]
        assert abs(hits / 1000 - stated) <= 0.03, (cv, verdict, n, stated, hits)
        fewer = decision_power(verdict, change, sigma(cv), n - 1, n - 1, conf, rerun_above=0.05, block_above=0.10)
        assert fewer < 0.95  # the fewest runs that reach it


def test_the_runs_needed_are_those_of_the_real_judgement() -> None:
    """The same one batch through ``judge`` (with a 64-row board's bound) decides as ``decide`` does."""
    rows, _ = board_bounds(0.01, ROWS, 1, 4)
    ms = spec()
    rng = random.Random(40)
    n, _ = runs_needed(BLOCK, 0.12, sigma(0.01), rows.confidence(1), 0.95, rerun_above=0.05, block_above=0.10) \
        or (0, 0.0)
    agree = 0
    for _ in range(50):
        xs = [rng.lognormvariate(0, sigma(0.01)) for _ in range(n)]
        ys = [rng.lognormvariate(math.log1p(0.12), sigma(0.01)) for _ in range(n)]
        j = judge(ms, "lower", [(xs, ys, ys)], rows)
        d = decide(sorted(map(math.log, xs)), sorted(map(math.log, ys)), critical(n, n, rows.confidence(1)),
                   math.log1p(0.05), math.log1p(0.10))
        agree += j.verdict == (d or RERUN)
        assert j.shift is None or j.shift.confidence >= rows.confidence(1)
    assert agree == 50
