"""Previous release against the candidate, per board: the one policy.

Median of ``runs`` after ``warmup`` discarded runs; per row and metric a ratio. A move the
wrong way above ``rerun_above`` asks for a rerun; when a second, separate batch confirms it
(both above ``rerun_above``), the smaller of the two moves decides: above ``block_above`` it
blocks, between the two it is reported as slower. A metric that must stay ``equal`` and
moved blocks at once. Boards are never merged; a board with no previous batch, or whose
previous batch was measured with other metadata, is ``not measured: why``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence

from relgate.core.record import record
from relgate.ledger.store import BatchRow, Ledger
from relgate.manifest.measures import MeasureSpec

__all__ = ["PASS", "RERUN", "SLOWER", "BLOCK", "Medians", "medians", "MetricResult", "BoardComparison",
           "Comparison", "compare", "compare_board", "exit_code", "wrong_way"]

PASS, RERUN, SLOWER, BLOCK = "pass", "rerun", "slower", "block"
Key = tuple[str, ...]


@record
class Medians:
    batch: BatchRow
    values: Mapping[Key, Mapping[str, float]]  # key → metric → median of the counted runs
    metadata: Mapping[Key, Mapping[str, str]]  # key → metadata of its last counted row
    counted: int  # runs counted (after the warm-up)


def medians(ledger: Ledger, batch: BatchRow) -> Medians:
    samples: dict[Key, dict[str, list[float]]] = {}
    meta: dict[Key, dict[str, str]] = {}
    runs: set[int] = set()
    for run, key, metrics, row_meta in ledger.batch_rows(batch.id):
        if run < batch.warmup:
            continue
        runs.add(run)
        k = tuple(key)
        for metric, value in metrics.items():
            samples.setdefault(k, {}).setdefault(metric, []).append(float(value))
        meta[k] = {**batch.metadata, **row_meta}
    values = {k: {m: statistics.median(v) for m, v in per.items()} for k, per in samples.items()}
    return Medians(batch=batch, values=values, metadata=meta, counted=len(runs))


def wrong_way(direction: str, previous: float, value: float) -> float:
    """How far ``value`` moved the wrong way from ``previous``, as a fraction (0: not at all)."""
    if previous == value:
        return 0.0
    if direction == "equal":
        return float("inf")
    base = abs(previous) or 1.0
    move = (previous - value) / base if direction == "higher" else (value - previous) / base
    return max(move, 0.0)


@record
class MetricResult:
    key: Key
    metric: str
    direction: str
    previous: float
    candidates: tuple[float, ...]  # the medians of each candidate batch, oldest first
    ratio: float  # latest candidate / previous
    verdict: str
    reason: str


@record
class BoardComparison:
    board: str
    previous: BatchRow | None
    candidates: tuple[BatchRow, ...]
    results: tuple[MetricResult, ...]
    not_measured: str | None = None

    @property
    def verdict(self) -> str:
        if self.not_measured is not None:
            return f"not measured: {self.not_measured}"
        words = {r.verdict for r in self.results}
        return next((w for w in (BLOCK, RERUN, SLOWER) if w in words), PASS)


@record
class Comparison:
    measure: str
    boards: tuple[BoardComparison, ...]

    @property
    def verdicts(self) -> set[str]:
        return {b.verdict for b in self.boards}


def exit_code(comparisons: Iterable[Comparison]) -> int:
    """0 nothing blocks or needs a rerun; 1 something blocks; 3 a rerun is needed (and nothing blocks)."""
    words = set().union(*(c.verdicts for c in comparisons))
    return 1 if BLOCK in words else 3 if RERUN in words else 0


def _metadata_difference(spec: MeasureSpec, previous: Medians, candidate: Medians) -> str | None:
    keys = sorted(set(previous.metadata) & set(candidate.metadata))
    for key in keys:
        a, b = previous.metadata[key], candidate.metadata[key]
        for field in sorted(set(a) | set(b)):
            if field in spec.vary or field == "board":
                continue
            if a.get(field) != b.get(field):
                return (f"other metadata: {field} {a.get(field, '(none)')!s} in the previous batch, "
                        f"{b.get(field, '(none)')!s} in the candidate")
    return None


def _judge(spec: MeasureSpec, direction: str, moves: Sequence[float]) -> tuple[str, str]:
    latest = moves[-1]
    if direction == "equal" and latest > 0:
        return BLOCK, "must stay equal and moved"
    if latest <= spec.rerun_above:
        return PASS, "within the rerun threshold" if len(moves) == 1 or moves[-2] <= spec.rerun_above \
            else f"the rerun did not confirm the earlier {moves[-2]:.1%}"
    if len(moves) < 2 or moves[-2] <= spec.rerun_above:
        return RERUN, f"{latest:.1%} the wrong way, above {spec.rerun_above:.0%}: measure a second batch"
    confirmed = min(moves[-2], latest)
    if confirmed > spec.block_above:
        return BLOCK, f"{confirmed:.1%} the wrong way in two batches, above {spec.block_above:.0%}"
    return SLOWER, f"{confirmed:.1%} the wrong way in two batches (between {spec.rerun_above:.0%} and " \
                   f"{spec.block_above:.0%})"


def compare_board(ledger: Ledger, spec: MeasureSpec, board: str, previous: BatchRow | None,
                  candidates: Sequence[BatchRow]) -> BoardComparison:
    if previous is None:
        return BoardComparison(board=board, previous=None, candidates=tuple(candidates), results=(),
                               not_measured="no previous release measured on this board")
    if not candidates:
        return BoardComparison(board=board, previous=previous, candidates=(), results=(),
                               not_measured="no clean batch of the candidate on this board")
    prev = medians(ledger, previous)
    cands = [medians(ledger, c) for c in candidates]
    differs = next((d for d in (_metadata_difference(spec, prev, c) for c in cands) if d), None)
    if differs is not None:
        return BoardComparison(board=board, previous=previous, candidates=tuple(candidates), results=(),
                               not_measured=differs)
    results = []
    for key in prev.values:  # in the previous batch's row order
        for metric, direction in spec.metrics.items():
            before = prev.values[key].get(metric)
            seen = [c.values[key][metric] for c in cands if metric in c.values.get(key, {})]
            if before is None or not seen:
                continue
            verdict, reason = _judge(spec, direction, [wrong_way(direction, before, v) for v in seen])
            results.append(MetricResult(key=key, metric=metric, direction=direction, previous=before,
                                        candidates=tuple(seen), ratio=seen[-1] / before if before else float("inf"),
                                        verdict=verdict, reason=reason))
    if not results:
        return BoardComparison(board=board, previous=previous, candidates=tuple(candidates), results=(),
                               not_measured="the candidate measured none of the previous release's rows")
    return BoardComparison(board=board, previous=previous, candidates=tuple(candidates), results=tuple(results))


def compare(ledger: Ledger, spec: MeasureSpec, *, project: str, counts: Callable[[str | None, bool], bool], boards: Sequence[str] = (),
            previous_release: str | None = None, exclude_release: str | None = None) -> Comparison:
    """Every board (or ``boards``): the latest previous-release batch against the candidate's
    clean batches (``counts(commit, dirty)`` says which belong to the candidate)."""
    batches = [b for b in ledger.batches(project=project, measure=spec.name) if b.kind == "measure"]
    wanted = list(boards) or sorted({b.board for b in batches})
    out = []
    for board in wanted:
        mine = [b for b in batches if b.board == board]
        previous = [b for b in mine if b.side == "release" and b.release != exclude_release
                    and (previous_release is None or b.release == previous_release)]
        candidates = [b for b in mine if b.side == "candidate" and counts(b.commit_sha, b.dirty)]
        out.append(compare_board(ledger, spec, board, previous[-1] if previous else None, candidates))
    return Comparison(measure=spec.name, boards=tuple(out))

