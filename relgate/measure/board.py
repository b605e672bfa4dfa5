"""One board judged from its samples: every row and metric, pooled batch by batch, and the
suite of its rows, under the board's false-alarm bound (rows on every core when there are many)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from relgate.core.forked import map_chunks
from relgate.manifest.measures import MeasureSpec
from relgate.measure.bound import Bound, board_bounds
from relgate.measure.judge import result_fields, single_bound
from relgate.measure.power import sigma_of_runs
from relgate.measure.results import MetricResult
from relgate.measure.samples import Samples
from relgate.measure.stats import critical
from relgate.measure.suite import SUITE_KEY, Key, references, suite_rows, suite_runs

__all__ = ["row_tests", "compare_samples", "judge_board"]


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
