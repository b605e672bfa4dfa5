"""Quality bands: a scorer's values (``first_match = ">= 95"``) checked for the candidate on
every board, next to the previous release's values. A broken band blocks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relgate.core.record import record
from relgate.ledger.store import BatchRow, Ledger
from relgate.manifest.measures import Band, QualitySpec
from relgate.measure.samples import medians

__all__ = ["BandResult", "BoardQuality", "QualityReport", "check_quality"]


@record
class BandResult:
    key: tuple[str, ...]
    band: Band
    value: float
    previous: float | None
    held: bool


@record
class BoardQuality:
    board: str
    batch: BatchRow | None
    previous: BatchRow | None
    results: tuple[BandResult, ...]
    not_measured: str | None = None

    @property
    def verdict(self) -> str:
        if self.not_measured is not None:
            return f"not measured: {self.not_measured}"
        return "pass" if all(r.held for r in self.results) else "block"


@record
class QualityReport:
    name: str
    boards: tuple[BoardQuality, ...]


def check_quality(ledger: Ledger, spec: QualitySpec, *, project: str, counts: Callable[[str | None, bool], bool],
                  boards: Sequence[str] = ()) -> QualityReport:
    batches = [b for b in ledger.batches(project=project, measure=spec.name) if b.kind == "quality"]
    out = []
    for board in list(boards) or sorted({b.board for b in batches}):
        mine = [b for b in batches if b.board == board]
        cands = [b for b in mine if b.side == "candidate" and counts(b.commit_sha, b.dirty)]
        prevs = [b for b in mine if b.side == "release"]
        previous = prevs[-1] if prevs else None
        if not cands:
            out.append(BoardQuality(board=board, batch=None, previous=previous, results=(),
                                    not_measured="no clean scorer run of the candidate on this board"))
            continue
        now = medians(ledger, cands[-1])
        before = medians(ledger, previous) if previous is not None else None
        results = []
        for key in now.values:
            for band in spec.bands:
                value = now.values[key].get(band.metric)
                if value is None:
                    continue
                prev = before.values.get(key, {}).get(band.metric) if before is not None else None
                results.append(BandResult(key=key, band=band, value=value, previous=prev, held=band.holds(value)))
        gone = [k for k in (before.values if before is not None else {}) if k not in now.values]
        why = None if results else "the scorer reported none of the banded values"
        if results and gone:  # a row of the previous release the candidate's scorer run lacks: open, not a pass
            why = (f"{len(gone)} row(s) of the previous release not measured for the candidate ("
                   + ", ".join(" ".join(k) or "(one row)" for k in gone[:3]) + ")")
        out.append(BoardQuality(board=board, batch=cands[-1], previous=previous, results=tuple(results),
                                not_measured=why))
    return QualityReport(name=spec.name, boards=tuple(out))
