"""Previous release against the candidate, per board, from the ledger: which batches each
side pools, whether they may be compared, and the board's result.

The previous side is the latest release measured on the board, every batch of it; the
candidate's clean batches (at most ``max_batches``) are pooled batch by batch
(:mod:`relgate.measure.board`, each row judged by :mod:`relgate.measure.judge`). Boards
are never merged; a board with no previous batch, or whose batches were measured with
other metadata, is ``not measured: why``; rows or metrics of the previous release that the
candidate left unmeasured (or measured with no valid value) make it ``missing: …``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace

from relgate.ledger.store import BatchRow, Ledger
from relgate.manifest.measures import MeasureSpec
from relgate.measure.board import judge_board
from relgate.measure.results import BoardComparison, Comparison, MetricResult, NoiseFloor, noise_of
from relgate.measure.samples import Samples, samples
from relgate.measure.suite import Key

__all__ = ["compare", "compare_board", "coverage", "run_seconds"]


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


def compare(ledger: Ledger, spec: MeasureSpec, *, project: str, counts: Callable[[str | None, bool], bool],
            boards: Sequence[str] = (), previous_release: str | None = None,
            exclude_release: str | None = None) -> Comparison:
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
