"""What a comparison found: each row's and the suite's result, a board's (with its verdict and
summary), the measure's over every board, the A/A noise floor beside them, and the exit status."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from relgate.core.record import record
from relgate.ledger.store import BatchRow, Ledger
from relgate.measure.bound import Bound
from relgate.measure.suite import Key
from relgate.measure.verdicts import BLOCK, PASS, RERUN, SLOWER, UNDECIDED, compared, missing_verdict

__all__ = ["MetricResult", "NoiseFloor", "noise_of", "BoardComparison", "Comparison", "exit_code",
           "EXIT_PASS", "EXIT_BLOCK", "EXIT_RERUN", "EXIT_UNDECIDED"]


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
