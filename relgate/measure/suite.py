"""The suite of a board: every row of a metric at once, as one sample per run.

Run ``i`` of a batch becomes one value: the geometric mean over the suite's rows of the
run's value against that row's reference (the previous side's first median), i.e.
``exp(mean_r(log v_r,i - log ref_r))``. Both sides get the same rows and references, so the
ratio of the two sides' values is the geometric mean over rows of each run's ratio, and the
suite is judged like a row (Hodges–Lehmann, the Mann–Whitney interval, pooled batches).
Its noise is the run-to-run noise of the mean: about σ/√rows when rows vary apart, the
whole run's drift when they move together — the runs are the unit, so both are counted.

A row is in the suite when every batch of both sides has all of its counted runs for the
metric and every value is above 0 (a log). Fewer than two such rows: no suite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from operator import add
from typing import Protocol

__all__ = ["Batch", "suite_rows", "suite_runs", "references", "SUITE_KEY"]

Key = tuple[str, ...]
SUITE_KEY: Key = ()  # a suite result's key (rows have at least one key column)


class Batch(Protocol):
    values: Mapping[Key, Mapping[str, tuple[float, ...]]]
    counted: int


def suite_rows(metric: str, batches: Sequence[Batch]) -> list[Key]:
    """The rows in the suite of ``metric`` (in the first batch's order); empty: no suite."""
    if not batches:
        return []
    rows = []
    for key in batches[0].values:
        for b in batches:
            got = b.values.get(key, {}).get(metric)
            if not got or len(got) != b.counted or min(got) <= 0:
                break
        else:
            rows.append(key)
    return rows if len(rows) >= 2 else []


def suite_runs(batch: Batch, metric: str, rows: Sequence[Key], reference: Mapping[Key, float]) -> list[float]:
    """One value per counted run of ``batch``: the geometric mean over ``rows`` against ``reference``."""
    sums = [0.0] * batch.counted
    log = math.log
    for key in rows:
        sums = list(map(add, sums, map(log, batch.values[key][metric])))
    n = len(rows)
    base = math.fsum(reference[key] for key in rows)
    return [math.exp((total - base) / n) for total in sums]


def references(batch: Batch, metric: str, rows: Sequence[Key]) -> dict[Key, float]:
    """Each row's log median in ``batch`` (any per-row constant would do: it cancels)."""
    out = {}
    for key in rows:
        ordered = sorted(batch.values[key][metric])
        k = len(ordered)
        out[key] = math.log(ordered[k // 2] if k % 2 else math.sqrt(ordered[k // 2 - 1] * ordered[k // 2]))
    return out
