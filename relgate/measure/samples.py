"""A batch's counted runs read from the ledger: every run's value (the samples a verdict is
judged from), or each row's median (quality bands)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from relgate.core.record import record
from relgate.ledger.store import BatchRow, Ledger
from relgate.measure.suite import Key

__all__ = ["Samples", "Medians", "samples", "medians"]


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
