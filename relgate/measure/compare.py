"""Previous release against the candidate, per board: the one policy, judged from samples.

Every counted run (after ``warmup``) of both sides is a sample. Per row and metric the
ratio candidate / previous gets a confidence interval (``confidence``, 95 % by default;
Hodges–Lehmann with the Mann–Whitney interval, :mod:`relgate.measure.stats`), and the
interval is judged against the thresholds, as the move the wrong way:

- ``pass``: the whole interval lies within ``rerun_above``;
- ``slower``: it lies wholly beyond ``rerun_above`` and within ``block_above``;
- ``block``: it lies wholly beyond ``block_above``;
- ``rerun``: it straddles a threshold. The next batch is *pooled* with the earlier ones
  (its runs join theirs) and the pool is judged, never the new batch alone; the first
  batch count at which a row is decided is its verdict, so batches measured after it
  change nothing and repeating cannot turn a decided regression green;
- ``undecided``: still straddling after ``max_batches`` batches: too noisy at N runs,
  open in the sign-off (never a pass).

Too few runs for an interval at the confidence (one run a side; two against two) leave the
old policy's point estimate, said so in every reason: each batch's median against the
previous median; above ``rerun_above`` asks for another batch; all batches above it
confirm (the smallest move decides between ``slower`` and ``block``); a rerun that does
not confirm leaves the row open (rerun, then undecided), never a pass. A metric that must
stay ``equal`` and moved blocks at once. Boards are never merged; a board with no previous
batch, or whose batches were measured with other metadata, is ``not measured: why``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from relgate.core.forked import map_chunks
from relgate.core.record import record
from relgate.ledger.store import BatchRow, Ledger
from relgate.manifest.measures import MeasureSpec
from relgate.measure.bound import Bound, board_bounds, percent
from relgate.measure.power import sigma_of_runs
from relgate.measure.suite import SUITE_KEY, references, suite_rows, suite_runs
from relgate.measure.stats import Shift, _achieved, _logs_or_scaled, critical, decide, hl_ratio, wrong_way_samples

__all__ = ["PASS", "RERUN", "SLOWER", "BLOCK", "UNDECIDED", "MISSING", "compared", "coverage", "missing_verdict",
           "Samples", "Medians", "samples", "medians",
           "MetricResult", "NoiseFloor", "BoardComparison", "Comparison", "compare", "compare_board", "exit_code",
           "wrong_way", "judge", "Judgement", "noise_of", "judge_board", "row_tests", "result_fields", "single_bound",
           "EXIT_PASS", "EXIT_BLOCK", "EXIT_RERUN", "EXIT_UNDECIDED"]

PASS, RERUN, SLOWER, BLOCK, UNDECIDED = "pass", "rerun", "slower", "block", "undecided"
MISSING = "missing"  # a board whose candidate left rows or metrics of the previous release unmeasured
Key = tuple[str, ...]
POINT_NOTE = "1 run a side: point estimate, no interval"


@record
class Samples:
    """One batch's counted runs: key → metric → every counted run's value, in run order."""

    batch: BatchRow
    values: Mapping[Key, Mapping[str, tuple[float, ...]]]
    metadata: Mapping[Key, Mapping[str, str]]  # key → metadata of its last counted row
    counted: int  # runs counted (after the warm-up)


@record
class Medians:
    batch: BatchRow
    values: Mapping[Key, Mapping[str, float]]  # key → metric → median of the counted runs
    metadata: Mapping[Key, Mapping[str, str]]
    counted: int


def samples(ledger: Ledger, batch: BatchRow, metrics: Sequence[str] = ()) -> Samples:
    """``metrics``: only these (SQLite takes them out of the rows); default every one."""
    values, meta, counted = ledger.batch_samples(batch.id, first_run=batch.warmup, metrics=metrics)
    return Samples(batch=batch, values=values, metadata={k: {**batch.metadata, **m} for k, m in meta.items()},
                   counted=counted)


def medians(ledger: Ledger, batch: BatchRow) -> Medians:
    s = samples(ledger, batch)
    values = {k: {m: statistics.median(v) for m, v in per.items()} for k, per in s.values.items()}
    return Medians(batch=batch, values=values, metadata=s.metadata, counted=s.counted)


def wrong_way(direction: str, previous: float, value: float) -> float:
    """How far ``value`` moved the wrong way from ``previous``, as a fraction (0: not at all)."""
    if previous == value:
        return 0.0
    if direction == "equal":
        return float("inf")
    base = abs(previous) or 1.0
    move = (previous - value) / base if direction == "higher" else (value - previous) / base
    return max(move, 0.0)


def _pct(move: float) -> str:
    return f"{move:+.1%}"


@record
class Judgement:
    verdict: str
    reason: str
    shift: Shift | None  # the interval the verdict came from (None: point estimates)
    batches: int  # candidate batches pooled when it was decided (or all of them)
    runs: tuple[int, int]  # counted runs (previous, candidate) behind it


def _point_note(runs: tuple[int, int], per_batch: tuple[int, int], confidence: float) -> str:
    if per_batch == (1, 1):
        return POINT_NOTE
    return f"{runs[0]} against {runs[1]} runs, too few for a {confidence:.0%} interval: point estimate"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def single_bound(spec: MeasureSpec, tests: int = 1) -> Bound:
    """The bound of ``tests`` rows × metrics and no suite (``judge`` of one row: 1)."""
    return board_bounds(spec.false_alarm, tests, 0, spec.max_batches)[0]


def judge(spec: MeasureSpec, direction: str,
          steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
          bound: Bound | None = None) -> Judgement:
    """``steps[j]``: (the previous side's pooled runs, the candidate's pooled runs of batches
    1 … j+1, the runs of batch j+1 alone). The first step that decides is the verdict.
    ``bound``: the board's false-alarm bound for this test (default: a board of one test)."""
    verdict, reason, shift, batches, runs, conf = _judge(spec, direction, steps, bound or single_bound(spec))
    full = None
    if shift is not None and conf:
        full = Shift(ratio=shift[0], low=shift[1], high=shift[2], confidence=conf)
    return Judgement(verdict=verdict, reason=reason, shift=full, batches=batches, runs=runs)


_Judged = tuple[str, str, "tuple[float, float, float] | None", int, tuple[int, int], float]


def _interval(prev: Sequence[float], cand: Sequence[float], c: int) -> tuple[float, float, float]:
    return hl_ratio(*_logs_or_scaled(prev, cand), c)


def _judge(spec: MeasureSpec, direction: str,
           steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]], bound: Bound,
           endpoints: bool = True) -> _Judged:
    """The verdict and its reason, the interval (ratio, low, high) it came from, the batches
    and runs behind it and the interval's own confidence (0: no interval). The verdict comes
    from counting differences beyond the thresholds; ``endpoints=False`` skips sorting them
    for the interval's ends (simulations: the same verdicts, no interval shown)."""
    r, b, floor = spec.rerun_above, spec.block_above, spec.confidence
    if direction == "equal":
        before = set().union(*(set(p) for p, _, _ in steps))
        after = set().union(*(set(c) for _, c, _ in steps))
        moved = sorted(after - before)
        runs = (len(steps[-1][0]), len(steps[-1][1]))
        if moved:
            return (BLOCK, f"must stay equal and moved ({_num(_median(list(before)))} -> {_num(moved[0])})", None,
                    len(steps), runs, 0.0)
        return PASS, "equal", None, len(steps), runs, 0.0
    higher = direction == "higher"
    point_moves: list[float] = []
    last: tuple[int, int] | None = None  # (step, c) of the last interval judged
    few = ""  # the last step had an interval at `confidence` but too few runs for the bound's
    runs = (0, 0)
    for j, (prev, cand, batch) in enumerate(steps):
        runs = (len(prev), len(cand))
        want = max(bound.confidence(j + 1), floor)
        c = critical(runs[0], runs[1], want)
        if c is None and critical(runs[0], runs[1], floor) is not None:
            last, few = None, (f"{runs[0]} against {runs[1]} runs: too few for the bound's {percent(want)} "
                               f"interval ({bound.describe()})")
            continue
        few = ""
        if c is None:
            last = None
            note = _point_note(runs, (len(prev), len(batch)), floor)
            move = wrong_way(direction, _median(prev), _median(batch))
            point_moves.append(move)
            if len(point_moves) == 1:
                if move <= r:
                    return PASS, f"{note}; within the rerun threshold", None, j + 1, runs, 0.0
                continue
            if all(m > r for m in point_moves):
                confirmed, n = min(point_moves), len(point_moves)
                if confirmed > b:
                    return (BLOCK, f"{note}; {confirmed:.1%} the wrong way in {_count(n)} batches, above {b:.0%}",
                            None, j + 1, runs, 0.0)
                return (SLOWER, f"{note}; {confirmed:.1%} the wrong way in {_count(n)} batches (between {r:.0%} "
                        f"and {b:.0%})", None, j + 1, runs, 0.0)
            continue
        xs, ys, logs = _logs_or_scaled(prev, cand)
        wx, wy, at_r, at_b = wrong_way_samples(xs, ys, logs, higher, r, b)
        verdict = decide(wx, wy, c, at_r, at_b)
        last = (j, c)
        if verdict is None:
            continue
        why = {PASS: f"within {r:.0%}", BLOCK: f"beyond {b:.0%}", SLOWER: f"between {r:.0%} and {b:.0%}"}[verdict]
        conf = _achieved(runs[0], runs[1], c)
        if not endpoints:
            return verdict, f"{why} ({percent(conf)}, {runs[0]} against {runs[1]} runs)", None, j + 1, runs, conf
        shift = hl_ratio(xs, ys, logs, c)
        lo, hi = _wrong(higher, shift)
        return (verdict, f"{_pct(lo)} … {_pct(hi)} the wrong way ({percent(conf)}, {runs[0]} against {runs[1]} runs): "
                f"{why}", shift, j + 1, runs, conf)
    n = len(steps)
    shift = None
    conf = 0.0
    if few:
        note, what = "", few
    elif last is None:
        final = point_moves[-1]
        note = _point_note(runs, (len(steps[-1][0]), len(steps[-1][2])), floor)
        what = (f"{final:.1%} the wrong way, above {r:.0%}" if n == 1 else
                f"the batches disagree ({', '.join(f'{m:.1%}' for m in point_moves)} the wrong way): "
                "an unconfirmed rerun is no pass")
    elif not endpoints:
        note, what, conf = "", "straddles a threshold", _achieved(runs[0], runs[1], last[1])
    else:
        j, c = last
        shift = _interval(steps[j][0], steps[j][1], c)
        lo, hi = _wrong(higher, shift)
        conf = _achieved(runs[0], runs[1], c)
        note = ""
        what = (f"{_pct(lo)} … {_pct(hi)} the wrong way ({percent(conf)}, {runs[0]} against {runs[1]} runs) "
                f"straddles {r if lo <= r else b:.0%}")
    sep = "; " if note else ""
    if n >= spec.max_batches:
        return (UNDECIDED, f"too noisy at {runs[1]} runs: {note}{sep}{what}; {n} batches pooled "
                f"(max_batches = {spec.max_batches})", shift, n, runs, conf)
    return (RERUN, f"{note}{sep}{what}: measure another batch (pooled with "
            f"{'this one' if n == 1 else f'these {n}'})", shift, n, runs, conf)


def _wrong(higher: bool, shift: tuple[float, float, float]) -> tuple[float, float]:
    """The ratio's interval as the move the wrong way (negative: the right way)."""
    if higher:
        return 1.0 - shift[2], 1.0 - shift[1]
    return shift[1] - 1.0, shift[2] - 1.0


def _count(n: int) -> str:
    return {2: "two", 3: "three", 4: "four"}.get(n, str(n))


def _num(value: float) -> str:
    return f"{value:.6g}"


@record
class MetricResult:
    key: Key
    metric: str
    direction: str
    previous: float  # median of the previous release's pooled runs
    candidates: tuple[float, ...]  # the median of each candidate batch considered, oldest first
    ratio: float  # the estimate, candidate / previous (Hodges–Lehmann; point mode: latest batch's median)
    verdict: str
    reason: str
    low: float | None = None  # the ratio's interval; None: a point estimate
    high: float | None = None
    runs: tuple[int, int] = (0, 0)  # counted runs (previous, candidate) behind the verdict
    batches: int = 1  # candidate batches pooled for it
    confidence: float = 0.0  # the interval's own two-sided confidence (0: no interval)

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    def interval_text(self) -> str:
        if self.low is None or self.high is None:
            return "point" if self.direction != "equal" and "point estimate" in self.reason else "-"
        return f"{self.low:.3f}–{self.high:.3f}"


@record
class NoiseFloor:
    """A board's A/A noise: the candidate against itself, each row's interval half-width."""

    batch: BatchRow  # the recorded floor (kind "noise")
    widths: Mapping[tuple[Key, str], float]  # (row, metric) → half-width (point mode: |A/B move|)
    runs: int  # counted runs a side it was measured at
    point: bool

    @property
    def floor(self) -> float:
        return statistics.median(self.widths.values()) if self.widths else 0.0

    @property
    def widest(self) -> tuple[tuple[Key, str], float] | None:
        return max(self.widths.items(), key=lambda kv: kv[1], default=None)


def noise_of(ledger: Ledger, batch: BatchRow) -> NoiseFloor:
    values, _, _ = ledger.batch_samples(batch.id, first_run=0)
    widths = {(k, m): v[-1] for k, per in values.items() for m, v in per.items()}
    return NoiseFloor(batch=batch, widths=widths, runs=int(batch.metadata.get("runs", "0") or 0),
                      point=batch.metadata.get("point") == "yes")


@record
class BoardComparison:
    board: str
    previous: BatchRow | None  # the latest batch of the previous release
    candidates: tuple[BatchRow, ...]  # the candidate's batches the verdicts pooled (at most max_batches)
    results: tuple[MetricResult, ...]
    not_measured: str | None = None
    previous_pool: tuple[BatchRow, ...] = ()  # every batch of the previous release pooled
    ignored: tuple[BatchRow, ...] = ()  # candidate batches after max_batches: not counted
    noise: NoiseFloor | None = None
    confidence: float = 0.95
    suite: tuple[MetricResult, ...] = ()  # per metric: the geometric mean over rows, judged like a row
    suite_rows: int = 0  # rows in the suite
    bound: Bound | None = None  # the rows' share of the false-alarm bound
    suite_bound: Bound | None = None  # the suite's share
    row_sigma: float | None = None  # run-to-run noise (σ of the logs) of a typical row: the median row's
    suite_sigma: float | None = None  # … of the suite's per-run values (the largest over metrics)
    run_seconds: float | None = None  # the median time of one measuring run (None: not measured here)
    missing: tuple[str, ...] = ()  # rows × metrics of the previous release the candidate did not measure (why)

    @property
    def verdict(self) -> str:
        """The suite's verdict made worse by any row that is confidently slower or blocked; a
        row or suite that another batch can still decide keeps it at ``rerun``; a row that
        stays undecided after ``max_batches`` does not hold back a decided suite (it is counted
        apart); with no suite, or an undecided one, the board is undecided."""
        if self.not_measured is not None:
            return f"not measured: {self.not_measured}"
        words = {r.verdict for r in (*self.results, *self.suite)}
        if self.missing and BLOCK not in words:
            return missing_verdict(self.missing)
        for w in (BLOCK, RERUN, SLOWER):
            if w in words:
                return w
        suite_open = any(s.verdict == UNDECIDED for s in self.suite)
        if suite_open or (not self.suite and UNDECIDED in words):
            worst = max(r.runs[1] for r in (*self.results, *self.suite) if r.verdict == UNDECIDED)
            return f"{UNDECIDED}: too noisy at {worst} runs"
        return PASS

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.verdict] = out.get(r.verdict, 0) + 1
        return out

    def summary(self) -> str:
        """``32 rows × 2 metrics: 64 pass, widest interval ±2.1 %``."""
        rows = len({r.key for r in self.results})
        metrics = len({r.metric for r in self.results})
        counts = self.counts()
        order = [PASS, SLOWER, RERUN, UNDECIDED, BLOCK]
        parts = ", ".join(f"{counts[w]} {w}" for w in order if counts.get(w))
        widths = [w for w in (r.half_width for r in self.results) if w is not None]
        point = sum(1 for r in self.results if "point estimate" in r.reason)
        tail = f", widest interval ±{max(widths):.1%}" if widths else ""
        if point:
            tail += f"; {point} point estimate{'s' if point != 1 else ''} (no interval: too few runs)"
        return f"{rows} row{'s' if rows != 1 else ''} × {metrics} metric{'s' if metrics != 1 else ''}: {parts}{tail}"


@record
class Comparison:
    measure: str
    boards: tuple[BoardComparison, ...]

    @property
    def verdicts(self) -> set[str]:
        return {b.verdict for b in self.boards}


#: Exit statuses of a comparison (``relgate measure compare``, ``nox -s compare``); 2 is bad input.
EXIT_PASS, EXIT_BLOCK, EXIT_RERUN, EXIT_UNDECIDED = 0, 1, 3, 4


def exit_code(comparisons: Iterable[Comparison]) -> int:
    """0 nothing blocks, needs a rerun or stays undecided (pass, slower); 1 something blocks, or a
    board is missing rows or was not measured (a compare that compared nothing is no pass); 3 a
    rerun is needed (and nothing blocks); 4 a board stays undecided after max_batches (nothing
    blocks or needs a rerun): open, not a regression."""
    comparisons = list(comparisons)
    words = set().union(*(c.verdicts for c in comparisons))
    if not comparisons or not words or BLOCK in words or not all(compared(w) for w in words):
        return EXIT_BLOCK
    if RERUN in words:
        return EXIT_RERUN
    return EXIT_UNDECIDED if any(w.startswith(UNDECIDED) for w in words) else EXIT_PASS


def compared(verdict: str) -> bool:
    """Whether a board's verdict is a judgement of every row (not ``not measured: …``, not ``missing: …``)."""
    return verdict in (PASS, SLOWER, RERUN, BLOCK) or verdict.startswith(UNDECIDED)


def missing_verdict(missing: Sequence[str]) -> str:
    shown = "; ".join(missing[:3]) + (f"; … {len(missing) - 3} more" if len(missing) > 3 else "")
    return (f"{MISSING}: {len(missing)} row × metric{'s' if len(missing) != 1 else ''} of the previous release "
            f"not validly measured for the candidate ({shown}); measure them, or skip the item with a reason")


def coverage(spec: MeasureSpec, previous: Sequence[Samples], candidates: Sequence[Samples],
             results: Sequence[MetricResult]) -> tuple[str, ...]:
    """Every row and metric of the previous release that has no verdict for the candidate (a row
    that vanished or was renamed, a metric it lacks), or whose values are no valid time or rate
    (``lower``/``higher``: above 0 and finite): each ``"row metric: why"``."""
    judged = {(r.key, r.metric) for r in results}
    out: list[str] = []
    keys: dict[Key, None] = {}
    for p in previous:
        keys.update(dict.fromkeys(p.values))
    for key in keys:
        label = " ".join(f"{c}={v}" for c, v in zip(spec.key, key)) or "(one row)"
        for metric, direction in spec.metrics.items():
            before = [v for p in previous for v in (p.values.get(key) or {}).get(metric, ())]
            after = [v for c in candidates for v in (c.values.get(key) or {}).get(metric, ())]
            if not before:
                continue
            bad = [v for v in (*before, *after) if not math.isfinite(v) or (direction != "equal" and v <= 0)]
            if bad:
                out.append(f"{label} {metric}: the value {bad[0]:g} is no valid "
                           f"{'number' if direction == 'equal' else 'time or rate (above 0, finite)'}")
            elif (key, metric) not in judged:
                out.append(f"{label} {metric}: not measured for the candidate (the row vanished or was renamed)")
    return tuple(out)


def _metadata_difference(spec: MeasureSpec, previous: Samples, candidate: Samples) -> str | None:
    keys = sorted(set(previous.metadata) & set(candidate.metadata))
    for key in keys:
        a, b = previous.metadata[key], candidate.metadata[key]
        if a == b:  # the usual row: nothing to look at field by field
            continue
        for field in sorted(set(a) | set(b)):
            if field in spec.vary or field in ("board", "aa"):
                continue
            if a.get(field) != b.get(field):
                return (f"other metadata: {field} {a.get(field, '(none)')!s} in the previous batch, "
                        f"{b.get(field, '(none)')!s} in the candidate")
    return None


def row_tests(spec: MeasureSpec, previous: Sequence[Samples]) -> int:
    """Rows × metrics judged by an interval (``equal`` metrics are not): the bound's tests."""
    keys: dict[Key, None] = {}
    for p in previous:
        keys.update(dict.fromkeys(p.values))
    return len(keys) * sum(1 for d in spec.metrics.values() if d != "equal")


def compare_samples(spec: MeasureSpec, board: str, previous: Sequence[Samples], candidates: Sequence[Samples],
                    *, previous_for: Callable[[int], Sequence[Samples]] | None = None,
                    bound: Bound | None = None, endpoints: bool = True) -> tuple[MetricResult, ...]:
    """Every row and metric of the previous side judged against the candidate's batches,
    pooled batch by batch (``previous_for(j)``: the previous batches pooled at step j), each
    look at the confidence ``bound`` gives it (default: the board's rows, no suite)."""
    cands = list(candidates[: spec.max_batches])
    pools = [list(previous_for(j)) if previous_for else list(previous) for j in range(len(cands))]
    keys: dict[Key, None] = {}
    for p in previous:
        keys.update(dict.fromkeys(p.values))
    bound = bound or single_bound(spec, row_tests(spec, previous))
    # Each row is judged on its own: big batches are judged on every core (rows in order).
    judged = map_chunks(lambda chunk: _judge_rows(spec, cands, pools, chunk, bound, endpoints), list(keys),
                        min_per_worker=max(1, _JUDGED_PER_WORKER // max(1, len(spec.metrics))))
    return tuple(MetricResult(key=key, metric=metric, direction=direction, previous=prev_median, candidates=seen,
                              ratio=ratio, verdict=verdict, reason=reason, low=low, high=high, runs=runs,
                              batches=batches, confidence=conf)
                 for (key, metric, direction, prev_median, seen, ratio, verdict, reason, low, high, runs, batches, conf)
                 in judged)


#: Judgements (rows × metrics) worth a process of their own: a fork and the answers' way back
#: cost about what judging 2,000 of them does.
_JUDGED_PER_WORKER = 2000


def _judge_rows(spec: MeasureSpec, cands: Sequence[Samples], pools: Sequence[Sequence[Samples]],
                keys: Sequence[Key], bound: Bound, endpoints: bool = True) -> list[tuple[Any, ...]]:
    """Every metric of ``keys`` judged: :class:`MetricResult`'s fields in order, as tuples
    (they come back from a child process ten times faster than records)."""
    results: list[tuple[Any, ...]] = []
    for key in keys:  # in the previous batches' row order
        cand_rows = [c.values.get(key) or {} for c in cands]
        pool_rows = [[p.values.get(key) or {} for p in pool] for pool in pools]
        for metric, direction in spec.metrics.items():
            steps = []
            pooled: Sequence[float] = ()
            for j, row in enumerate(cand_rows):
                mine = row.get(metric)
                if not mine:
                    continue
                here = pool_rows[j]
                prev = here[0].get(metric, ()) if len(here) == 1 else [v for p in here for v in p.get(metric, ())]
                if not prev:
                    continue
                pooled = mine if not pooled else [*pooled, *mine]
                steps.append((prev, pooled, mine))
            if not steps:
                continue
            results.append((key, metric, direction, *result_fields(spec, direction, steps, bound, endpoints)))
    return results


def result_fields(spec: MeasureSpec, direction: str,
                  steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
                  bound: Bound, endpoints: bool = True) -> tuple[Any, ...]:
    """:class:`MetricResult`'s fields after ``direction``, judged from ``steps``."""
    verdict, reason, shift, batches, runs, conf = _judge(spec, direction, steps, bound, endpoints)
    prev_median = _median(steps[batches - 1][0])
    seen = tuple(_median(s[2]) for s in steps[:batches])
    if shift is not None:
        ratio, low, high = shift
    else:
        ratio, low, high = (seen[-1] / prev_median if prev_median else float("inf")), None, None
    return prev_median, seen, ratio, verdict, reason, low, high, runs, batches, conf


def judge_board(spec: MeasureSpec, board: str, previous: Sequence[Samples], candidates: Sequence[Samples], *,
                previous_for: Callable[[int], Sequence[Samples]] | None = None, endpoints: bool = True
                ) -> dict[str, Any]:
    """The rows and the suite of a board under its false-alarm bound: the fields of
    :class:`BoardComparison` they fill (``results``, ``suite``, ``suite_rows``, ``bound``, ``suite_bound``,
    and the noise the runs a decision needs come from; ``endpoints=False``: verdicts only, no
    interval ends and no noise figures, as simulations want them)."""
    cands = list(candidates[: spec.max_batches])
    pools = [list(previous_for(j)) if previous_for else list(previous) for j in range(len(cands))]
    every = list({id(s): s for s in (*previous, *cands)}.values())
    suites: dict[str, list[Key]] = {}
    first = (pools[0] if pools else list(previous))
    if cands and critical(sum(p.counted for p in first), cands[0].counted, spec.confidence) is not None:
        for metric, direction in spec.metrics.items():
            rows = suite_rows(metric, every) if direction != "equal" else []
            if rows:
                suites[metric] = rows
    bound, suite_bound = board_bounds(spec.false_alarm, row_tests(spec, previous), len(suites), spec.max_batches)
    results = compare_samples(spec, board, previous, cands, previous_for=previous_for, bound=bound,
                              endpoints=endpoints)
    suite = []
    suite_sigmas: list[float] = []
    for metric, rows in suites.items():
        ref = references(first[0], metric, rows)
        runs: dict[int, list[float]] = {}

        def of(s: Samples) -> list[float]:
            if id(s) not in runs:
                runs[id(s)] = suite_runs(s, metric, rows, ref)
            return runs[id(s)]

        steps = []
        pooled: list[float] = []
        for j, cand in enumerate(cands):
            mine = of(cand)
            pooled = [*pooled, *mine]
            steps.append(([v for p in pools[j] for v in of(p)], pooled, mine))
        direction = spec.metrics[metric]
        got = sigma_of_runs([of(x) for x in every]) if endpoints else None
        if got is not None:
            suite_sigmas.append(got)
        fields = result_fields(spec, direction, steps, suite_bound, endpoints)  # type: ignore[arg-type]
        suite.append(MetricResult(key=SUITE_KEY, metric=metric, direction=direction, previous=fields[0],
                                  candidates=fields[1], ratio=fields[2], verdict=fields[3], reason=fields[4],
                                  low=fields[5], high=fields[6], runs=fields[7], batches=fields[8],
                                  confidence=fields[9]))
    return dict(results=results, suite=tuple(suite), suite_rows=max((len(r) for r in suites.values()), default=0),
                bound=bound, suite_bound=suite_bound, row_sigma=_row_sigma(spec, every) if endpoints else None,
                suite_sigma=max(suite_sigmas, default=None))


#: Rows sampled (evenly) for a board's typical noise: the median of this many rows' σ.
_SIGMA_ROWS = 256


def _row_sigma(spec: MeasureSpec, batches: Sequence[Samples]) -> float | None:
    """The median over rows × metrics (``_SIGMA_ROWS`` of them, evenly spaced) of each row's
    run-to-run σ within its batches."""
    if not batches:
        return None
    keys = list(batches[0].values)
    step = max(1, len(keys) // _SIGMA_ROWS)
    found = []
    for key in keys[::step]:
        for metric, direction in spec.metrics.items():
            if direction == "equal":
                continue
            s = sigma_of_runs([b.values.get(key, {}).get(metric, ()) for b in batches])
            if s is not None:
                found.append(s)
    return statistics.median(found) if found else None


def compare_board(ledger: Ledger, spec: MeasureSpec, board: str, previous: Sequence[BatchRow],
                  candidates: Sequence[BatchRow], noise: NoiseFloor | None = None) -> BoardComparison:
    latest = previous[-1] if previous else None
    used, ignored = tuple(candidates[: spec.max_batches]), tuple(candidates[spec.max_batches:])
    common = dict(board=board, previous=latest, previous_pool=tuple(previous), noise=noise,
                  confidence=spec.confidence, ignored=ignored)
    if not previous:
        return BoardComparison(candidates=tuple(candidates), results=(),
                               not_measured="no previous release measured on this board", **common)
    if not candidates:
        return BoardComparison(candidates=(), results=(),
                               not_measured="no clean batch of the candidate on this board", **common)
    names = tuple(spec.metrics)
    prevs = [samples(ledger, p, names) for p in previous]
    cands = [samples(ledger, c, names) for c in used]
    differs = next((d for d in (_metadata_difference(spec, prevs[-1], c) for c in [*prevs[:-1], *cands]) if d), None)
    if differs is not None:
        return BoardComparison(candidates=used, results=(), not_measured=differs, **common)

    def previous_for(j: int) -> list[Samples]:
        # the previous batches recorded before the candidate's j-th (interleaved runs pair up);
        # all of them when the baseline came in later
        before = [p for p in prevs if p.batch.id < cands[j].batch.id]
        return before or prevs

    judged = judge_board(spec, board, prevs, cands, previous_for=previous_for)
    if not judged["results"]:
        return BoardComparison(candidates=used, results=(),
                               not_measured="the candidate measured none of the previous release's rows", **common)
    dropped = [m for m in ledger.batch_metric_names(previous[-1].id) if m not in spec.metrics]
    missing = (*(f"{m}: a metric of the previous release that measure.{spec.name}.metrics no longer names"
                 for m in dropped), *coverage(spec, prevs, cands, judged["results"]))
    return BoardComparison(candidates=used, missing=missing, **judged, **common)


def run_seconds(ledger: Ledger, spec: MeasureSpec, batches: Sequence[BatchRow]) -> float | None:
    """The median time of one measuring run of ``batches`` (the steps of the runs that measured
    them: ``NAME#i``, ``NAME@REF#i``); ``None`` for batches added from files."""
    times = []
    for run in dict.fromkeys(b.run_id for b in batches if b.run_id):
        for step in ledger.steps(run_id=run):
            if step.step.partition("@")[0].partition("#")[0] == spec.name and step.duration is not None:
                times.append(step.duration)
    return statistics.median(times) if times else None


def compare(ledger: Ledger, spec: MeasureSpec, *, project: str, counts: Callable[[str | None, bool], bool], boards: Sequence[str] = (),
            previous_release: str | None = None, exclude_release: str | None = None) -> Comparison:
    """Every board (or ``boards``): the previous release's batches (pooled) against the
    candidate's clean batches (``counts(commit, dirty)`` says which belong to the candidate)."""
    everything = ledger.batches(project=project, measure=spec.name)
    batches = [b for b in everything if b.kind == "measure"]
    floors = [b for b in everything if b.kind == "noise"]
    wanted = list(boards) or sorted({b.board for b in batches})
    out = []
    for board in wanted:
        mine = [b for b in batches if b.board == board]
        previous = [b for b in mine if b.side == "release" and b.release != exclude_release
                    and (previous_release is None or b.release == previous_release)]
        if previous:  # the latest release measured on this board, every batch of it
            previous = [b for b in previous if b.release == previous[-1].release]
        candidates = [b for b in mine if b.side == "candidate" and counts(b.commit_sha, b.dirty)]
        floor = [b for b in floors if b.board == board]
        noise = noise_of(ledger, floor[-1]) if floor else None
        comp = compare_board(ledger, spec, board, previous, candidates, noise)
        out.append(replace(comp, run_seconds=run_seconds(ledger, spec, comp.candidates)))
    return Comparison(measure=spec.name, boards=tuple(out))
