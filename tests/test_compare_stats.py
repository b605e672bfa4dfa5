"""The statistics of a speed verdict, with seeded synthetic samples (lognormal, as timings are).

Every comparison runs the whole policy: a batch of ``RUNS`` runs a side (both sides measured
again per batch, as ``nox -s compare -- --previous REF`` does), judged on the pool; another
batch while a row straddles a threshold, at most ``max_batches`` (4). ``judge`` of one row
holds the false-alarm bound of a board of one row (1 % over its four looks; a board of many
rows and its suite: tests/test_speed_bound.py).

What the figures can be: at 10 % CV and 15 runs a side the 95 % interval of the ratio is about
±7 % wide at one batch and ±3.7 % at four (the Hodges–Lehmann shift's standard error is
σ·√(π/3)·√(2/n)); at the bound's 99 %+ it is wider still. That is wider than the 1 % between a
6 % regression and the 5 % threshold, and wider than the 2 % between 12 % and the 10 % block
threshold, so at 10 % CV no row can call a true 6 % regression "beyond 5 %", or a true 12 %
"beyond 10 %", in nine of ten comparisons (a board's suite can: tests/test_speed_bound.py). The
tests at 10 % CV assert what must hold there (identical code never slower or blocked, a
regression never passed off as a pass); the power figures are asserted at 1 % CV, where the
intervals are narrow enough (the CUDA kernels' A/A floor on the H200 is 0.2–0.5 %).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.manifest.measures import MeasureSpec, parse_measurements
from relgate.measure.judge import POINT_NOTE, judge
from relgate.measure.stats import _u_counts, critical, runs_to_resolve, shift_interval
from relgate.measure.verdicts import BLOCK, PASS, RERUN, SLOWER, UNDECIDED

RUNS = 15
COMPARISONS = 200


def _spec(**extra: object) -> MeasureSpec:
    table = {"target": "bench", "output": "stdout", "format": "csv", "key": ["n"], "metrics": {"t": "lower"},
             "metadata": [], "runs": RUNS, **extra}
    return parse_measurements({"measure": {"speed": table}}, path=Path("measurements.toml")).measures["speed"]


def _sigma(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))  # a lognormal with this coefficient of variation


def _policy(spec: MeasureSpec, rng: random.Random, slower: float, cv: float, *, direction: str = "lower",
            extra_batches: int = 0, extra_slower: float = 0.0) -> tuple[str, list[str]]:
    """One comparison, batch by batch until decided (then ``extra_batches`` more, at
    ``extra_slower``, as someone measuring again would); the verdict and every step's."""
    sigma = _sigma(cv)
    shift = math.log(1 + slower) if direction == "lower" else math.log(1 - slower)  # 12 %: 12 % fewer a second
    prev: list[float] = []
    cand: list[float] = []
    steps, seen = [], []
    verdict = RERUN
    for _batch in range(spec.max_batches):
        more = extra_slower if verdict != RERUN else slower
        if verdict != RERUN:
            if extra_batches == 0:
                break
            extra_batches -= 1
            more = extra_slower
        p = [rng.lognormvariate(0, sigma) for _ in range(RUNS)]
        c = [rng.lognormvariate(shift if more == slower else math.log(1 + more), sigma) for _ in range(RUNS)]
        prev, cand = prev + p, cand + c
        steps.append((list(prev), list(cand), c))
        verdict = judge(spec, direction, steps).verdict
        seen.append(verdict)
    return verdict, seen


def _verdicts(slower: float, cv: float, *, seed: int = 20, **kw: object) -> Counter[str]:
    spec = _spec()
    rng = random.Random(seed)
    return Counter(_policy(spec, rng, slower, cv, **kw)[0] for _ in range(COMPARISONS))  # type: ignore[arg-type]


# --- the statistics ----------------------------------------------------------------------------


def test_u_distribution_is_the_count_of_orderings() -> None:
    for m, n in [(1, 1), (1, 4), (2, 3), (3, 3), (4, 5), (5, 4), (6, 6)]:
        counts = [0] * (m * n + 1)
        for xs in itertools.combinations(range(m + n), m):  # positions of the previous side's runs
            counts[sum(1 for y in range(m + n) if y not in xs for x in xs if x < y)] += 1
        assert _u_counts(min(m, n), max(m, n)) == tuple(counts), (m, n)


def test_critical_values_are_the_mann_whitney_tables() -> None:
    # two-sided 0.05: n1 = n2 = 8 → 13, 10 → 23, 15 → 64, 20 → 127 (the published tables)
    assert [critical(n, n, 0.95) for n in (8, 10, 15, 20)] == [13, 23, 64, 127]
    assert critical(2, 2, 0.95) is None and critical(1, 1, 0.95) is None  # too few runs for 95 %
    assert critical(1, 39, 0.95) == 0 and critical(1, 38, 0.95) is None
    approx = critical(60, 60, 0.95)  # the normal approximation (m·n > 2500) continues the exact one
    assert approx is not None and abs(approx - (1800 - 1.96 * math.sqrt(3600 * 121 / 12))) < 2


def test_the_interval_covers_no_change_as_often_as_it_says() -> None:
    rng = random.Random(7)
    sigma = _sigma(0.10)
    covered = 0
    for _ in range(400):
        s = shift_interval([rng.lognormvariate(0, sigma) for _ in range(RUNS)],
                           [rng.lognormvariate(0, sigma) for _ in range(RUNS)], 0.95)
        assert s is not None and s.low <= s.ratio <= s.high and s.confidence >= 0.95
        covered += s.low <= 1.0 <= s.high
    assert 0.93 * 400 <= covered <= 0.98 * 400


def test_the_interval_is_deterministic_and_sees_a_shift_either_way() -> None:
    xs, ys = [100.0 + i for i in range(15)], [112.0 + 1.12 * i for i in range(15)]
    first = shift_interval(xs, ys, 0.95)
    assert first == shift_interval(list(reversed(xs)), ys, 0.95)  # order of the runs does not matter
    assert first is not None and 1.10 < first.ratio < 1.14
    neg = shift_interval([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 0.95)
    assert neg is not None and neg.ratio > 1  # values <= 0: differences scaled by the previous median


def test_runs_to_resolve_scales_with_the_square_of_the_width() -> None:
    assert runs_to_resolve(15, 0.073, 0.05) == 32
    assert runs_to_resolve(15, 0.02, 0.05) == 15


# --- the policy on synthetic samples (10 % CV, 15 runs a side, 200 comparisons) ---------------


def test_identical_code_is_never_slower_or_blocked_at_10_percent_cv() -> None:
    """One row judged alone under the bound (1 % over its four looks): never slower or
    blocked; about half pass, the rest are undecided (a board's suite decides those)."""
    got = _verdicts(0.0, 0.10)
    assert got[SLOWER] == got[BLOCK] == 0, got
    assert got[PASS] + got[UNDECIDED] == COMPARISONS and got[PASS] >= 0.3 * COMPARISONS, got


def test_a_true_12_percent_regression_is_never_a_pass_at_10_percent_cv() -> None:
    got = _verdicts(0.12, 0.10)
    assert got[PASS] == 0, got
    assert got[BLOCK] + got[UNDECIDED] + got[SLOWER] == COMPARISONS, got
    assert got[BLOCK] >= 0.03 * COMPARISONS, got  # the rest: undecided, open in the sign-off


def test_a_true_6_percent_regression_rarely_passes_at_10_percent_cv() -> None:
    got = _verdicts(0.06, 0.10)
    assert got[BLOCK] == 0 and got[PASS] <= 0.05 * COMPARISONS, got  # mostly undecided: too noisy


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_power_where_the_noise_allows_it(direction: str) -> None:
    """At 1 % CV: a true 12 % regression blocks in ≥ 95 %, a true 6 % one is slower in ≥ 90 %,
    identical code is neither; both directions (times and throughputs)."""
    spec = _spec()
    for slower, want, share in ((0.12, BLOCK, 0.95), (0.06, SLOWER, 0.90), (0.0, PASS, 0.99)):
        rng = random.Random(21)
        got = Counter(_policy(spec, rng, slower, 0.01, direction=direction)[0] for _ in range(COMPARISONS))
        assert got[want] >= share * COMPARISONS, (slower, got)
        if slower == 0.0:
            assert got[SLOWER] == got[BLOCK] == 0, got


def test_pooled_rerun_batches_cannot_flip_a_confirmed_regression_to_pass() -> None:
    """Decided slower or blocked, three more batches at the old speed are pooled after the
    decision: the verdict stands, never a pass."""
    spec = _spec()
    rng = random.Random(22)
    flipped = confirmed = 0
    for cv in (0.01, 0.10):
        for _ in range(COMPARISONS // 2):
            first, _ = _policy(spec, random.Random(rng.random()), 0.12, cv)
            final, seen = _policy(spec, random.Random(rng.random()), 0.12, cv, extra_batches=3, extra_slower=0.0)
            if any(v in (SLOWER, BLOCK) for v in seen):
                confirmed += 1
                flipped += final == PASS
    assert confirmed > 0 and flipped == 0


def test_one_run_a_side_is_the_point_estimate_and_says_so() -> None:
    spec = _spec(runs=1)
    one = judge(spec, "higher", [([1000.0], [880.0], [880.0])])
    assert one.verdict == RERUN and one.shift is None and one.reason.startswith(POINT_NOTE)
    two = judge(spec, "higher", [([1000.0], [880.0], [880.0]), ([1000.0], [880.0, 875.0], [875.0])])
    assert two.verdict == BLOCK and "12.0% the wrong way in two batches, above 10%" in two.reason
    six = judge(spec, "higher", [([1000.0], [940.0], [940.0]), ([1000.0], [940.0, 935.0], [935.0])])
    assert six.verdict == SLOWER and "6.0% the wrong way in two batches (between 5% and 10%)" in six.reason
    back = judge(spec, "higher", [([1000.0], [880.0], [880.0]), ([1000.0], [880.0, 1010.0], [1010.0])])
    assert back.verdict == RERUN and "an unconfirmed rerun is no pass" in back.reason


def test_an_equal_metric_blocks_when_any_run_moved() -> None:
    spec = _spec(metrics={"kv": "equal"})
    assert judge(spec, "equal", [([8.0, 8.0], [8.0, 8.0], [8.0, 8.0])]).verdict == PASS
    assert judge(spec, "equal", [([8.0, 8.0], [8.0, 16.0], [8.0, 16.0])]).verdict == BLOCK


@pytest.mark.parametrize("table, message", [
    ({"confidnce": 0.9}, 'measure.speed.confidnce: unknown key — did you mean "confidence"?'),
    ({"max_batchs": 3}, 'measure.speed.max_batchs: unknown key — did you mean "max_batches"?'),
    ({"confidence": 1.5}, "measure.speed.confidence: must be a probability from 0.5 to below 1"),
    ({"confidence": "high"}, "measure.speed.confidence: expected"),
    ({"max_batches": 0}, "measure.speed.max_batches: must be at least 1"),
])
def test_confidence_and_max_batches_are_validated(table: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as err:
        _spec(**table)
    assert message in str(err.value)


def test_confidence_and_max_batches_are_read() -> None:
    spec = _spec(confidence=0.99, max_batches=6)
    assert (spec.confidence, spec.max_batches) == (0.99, 6)
    assert (_spec().confidence, _spec().max_batches) == (0.95, 4)


def test_batch_samples_reads_every_run_by_row_rectangular_or_not(tmp_path: Path) -> None:
    """The ledger's read of a batch: a rectangular batch (column slices), a ragged one (a row
    missing from a run, one with other metrics), named metrics (SQLite's json_extract) or all."""
    from relgate.ledger.store import Ledger

    batch = dict(project="p", measure="m", kind="measure", side="release", release="1", commit_sha=None, dirty=False,
                 board="B", host=None, metadata={}, warmup=1, run_id=None, source="s", sha256=None, path=None)
    square = [(run, [k], {"a": 10.0 * run + i, "b": float(i)}, {"run": str(run)}) for run in range(3)
              for i, k in enumerate("xy")]
    ragged = [*square[:-1], (3, ["x"], {"a": 99.0}, {"run": "3"})]
    with Ledger.open(tmp_path / "home") as ledger:
        one, two = ledger.add_batch(batch, square), ledger.add_batch(batch, ragged)
        values, meta, runs = ledger.batch_samples(one, first_run=1)
        assert values == {("x",): {"a": (10.0, 20.0), "b": (0.0, 0.0)}, ("y",): {"a": (11.0, 21.0), "b": (1.0, 1.0)}}
        assert runs == 2 and meta[("x",)] == {"run": "2"}
        assert ledger.batch_samples(one, first_run=1, metrics=("a",))[0] == {("x",): {"a": (10.0, 20.0)},
                                                                            ("y",): {"a": (11.0, 21.0)}}
        values, _, runs = ledger.batch_samples(two, first_run=1, metrics=("a", "b"))
        assert values == {("x",): {"a": (10.0, 20.0, 99.0), "b": (0.0, 0.0)}, ("y",): {"a": (11.0,), "b": (1.0,)}}
        assert runs == 3 and ledger.batch_samples(two)[0] == ledger.batch_samples(two, metrics=("a", "b"))[0]


def test_a_packed_batch_reads_exactly_as_its_rows_do(tmp_path: Path) -> None:
    """A rectangular batch of floats is also stored packed (one float64 column per metric);
    every read of it equals the read of its rows alone (a batch written before schema 7)."""
    from relgate.ledger.store import Ledger

    batch = dict(project="p", measure="m", kind="measure", side="release", release="1", commit_sha=None, dirty=False,
                 board="B", host=None, metadata={}, warmup=0, run_id=None, source="s", sha256=None, path=None)
    rows = [(run, ["n", k], {"cpu_ms": 1.5 * run + i, "gpu_ms": 0.1 * i - run}, {"run": str(run), "k": k})
            for run in range(4) for i, k in enumerate(("64", "4096", "1e6"))]
    reads = [dict(first_run=f, metrics=m) for f in (0, 1, 3, 4, 9)
             for m in ((), ("cpu_ms",), ("gpu_ms", "cpu_ms"), ("cpu_ms", "absent"), ('q"uote',))]
    with Ledger.open(tmp_path / "home") as ledger:
        batch_id = ledger.add_batch(batch, rows)
        assert ledger._conn.execute("SELECT runs FROM measure_packed WHERE batch_id = ?", (batch_id,)).fetchone()[0] == 4
        packed = [ledger.batch_samples(batch_id, **read) for read in reads]
        with ledger._conn:
            ledger._conn.execute("DELETE FROM measure_columns WHERE batch_id = ?", (batch_id,))
            ledger._conn.execute("DELETE FROM measure_packed WHERE batch_id = ?", (batch_id,))
        from_rows = [ledger.batch_samples(batch_id, **read) for read in reads]
    assert packed == from_rows
    assert packed[0][0][("n", "4096")]["cpu_ms"] == (1.0, 2.5, 4.0, 5.5) and packed[0][2] == 4
