"""The page's measurements and quality bands: per measure and board the suite verdict and
every row's ratio with its interval, drawn as an inline SVG bar against the rerun and block
thresholds on the side that is the wrong way; the rows still open with the runs a decision
would need; each quality band with the previous release's value.

Read from the compare result objects as they are (``MetricResult``, ``BoardComparison``);
a result that says how many runs it needs (``runs_needed``) is taken at its word, else the
estimate is the interval's half-width shrinking as one over the square root of the runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relgate.core.record import record
from relgate.manifest.measures import MeasureSpec
from relgate.measure.quality import QualityReport
from relgate.measure.results import BoardComparison, Comparison, MetricResult
from relgate.measure.specs import row_label
from relgate.measure.stats import critical, runs_to_resolve
from relgate.measure.verdicts import PASS, RERUN, UNDECIDED
from relgate.signoff.page_matrix import measure_anchor, quality_anchor

__all__ = ["BAR_WIDTH", "PASSING_SHOWN", "Bar", "RowView", "BoardView", "QualityView", "measure_views",
           "quality_views"]

BAR_WIDTH = 200  # px of a row's bar
PASSING_SHOWN = 1000  # passing rows drawn per board; the rest are counted (signoff.json has every row)


@record
class Bar:
    """x positions (px) of a row's interval, estimate and threshold lines on the bar."""

    low: float
    width: float
    point: float
    rerun: float
    block: float
    clipped: bool  # the interval reaches past the drawn range


@record
class RowView:
    label: str
    metric: str
    direction: str
    previous: str
    candidate: str
    ratio: str
    interval: str
    runs: str
    verdict: str
    reason: str
    bar: Bar | None
    needed: str  # rerun/undecided rows: the runs a decision would need


@record
class BoardView:
    anchor: str
    measure: str
    board: str
    verdict: str
    summary: str
    previous: str
    candidates: str
    noise: str
    not_measured: str | None
    thresholds: str
    rows: tuple[RowView, ...]
    open_rows: tuple[RowView, ...]
    passing_hidden: int


@record
class BandView:
    label: str
    band: str
    value: str
    previous: str
    held: bool


@record
class QualityView:
    anchor: str
    name: str
    board: str
    verdict: str
    batch: str
    bands: tuple[BandView, ...]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.6g}"


def _bar(r: MetricResult, spec: MeasureSpec | None) -> Bar | None:
    if r.direction == "equal" or spec is None:
        return None
    rerun, block = spec.rerun_above, spec.block_above
    span = max(2 * block, 0.2)
    lo_v, hi_v = 1.0 - span, 1.0 + span
    sign = -1.0 if r.direction == "higher" else 1.0  # the wrong way: below 1 for "higher"

    def x(v: float) -> float:
        return round((min(max(v, lo_v), hi_v) - lo_v) / (hi_v - lo_v) * BAR_WIDTH, 1)

    low = r.low if r.low is not None else r.ratio
    high = r.high if r.high is not None else r.ratio
    return Bar(low=x(low), width=max(round(x(high) - x(low), 1), 1.0), point=x(r.ratio),
               rerun=x(1.0 + sign * rerun), block=x(1.0 + sign * block), clipped=low < lo_v or high > hi_v)


def _needed(r: MetricResult, spec: MeasureSpec | None) -> str:
    if r.verdict not in (RERUN, UNDECIDED):
        return ""
    told = getattr(r, "runs_needed", None)
    if isinstance(told, int):
        return f"about {told} runs a side"
    if spec is None:
        return "more runs"
    runs = max(r.runs[1], 1)
    if r.low is None or r.high is None:
        least = next((n for n in range(2, 64) if critical(n, n, spec.confidence) is not None), None)
        return (f"an interval needs at least {least} runs a side (now {r.runs[0]}/{r.runs[1]})" if least
                else "more runs a side")
    sign = -1.0 if r.direction == "higher" else 1.0
    distance = min(abs(r.ratio - (1.0 + sign * t)) for t in (spec.rerun_above, spec.block_above))
    half = (r.high - r.low) / 2
    if distance <= 1e-9:
        return "the estimate sits on a threshold: no number of runs decides it"
    return f"about {runs_to_resolve(runs, half, distance)} runs a side (±{half:.1%} now, ±{distance:.1%} decides)"


def _row(r: MetricResult, keys: Sequence[str], spec: MeasureSpec | None) -> RowView:
    if r.direction == "equal":
        interval = "-"
    elif r.low is None or r.high is None:  # one run a side, or too few runs for the bound's confidence
        interval = "point estimate" if "point estimate" in r.reason else "no interval at this confidence"
    else:
        interval = f"{r.low:.3f}–{r.high:.3f}× (±{(r.high - r.low) / 2:.1%})"
    return RowView(label=row_label(r.key, keys), metric=r.metric, direction=r.direction, previous=_num(r.previous),
                   candidate=" → ".join(_num(v) for v in r.candidates), ratio=f"{r.ratio:.3f}×", interval=interval,
                   runs=f"{r.runs[0]}/{r.runs[1]}", verdict=r.verdict, reason=r.reason, bar=_bar(r, spec),
                   needed=_needed(r, spec))


def _batch(b: object | None) -> str:
    if b is None:
        return ""
    side = f"release {b.release}" if b.side == "release" else "candidate"  # type: ignore[attr-defined]
    at = f" at {b.commit_sha[:12]}" if b.commit_sha else ""  # type: ignore[attr-defined]
    warm = f", {b.warmup} warm-up discarded" if b.warmup else ""  # type: ignore[attr-defined]
    return f"{side}{at} (batch #{b.id}, {b.source}{warm})"  # type: ignore[attr-defined]


def _noise(b: BoardComparison) -> str:
    n = b.noise
    if n is None:
        return "A/A noise floor: not measured on this board"
    return f"A/A noise floor ±{n.floor:.1%} at {n.runs} run(s) a side (batch #{n.batch.id})"


def _board(name: str, anchor: str, b: BoardComparison, keys: Sequence[str], spec: MeasureSpec | None) -> BoardView:
    rows, passing = [], 0
    for r in b.results:  # every row that does not pass; the first PASSING_SHOWN that do
        passing += r.verdict == PASS
        if r.verdict != PASS or passing <= PASSING_SHOWN:
            rows.append(_row(r, keys, spec))
    thresholds = (f"rerun above {spec.rerun_above:.0%}, block above {spec.block_above:.0%}, "
                  f"{spec.confidence:.0%} intervals, at most {spec.max_batches} batches pooled") if spec else ""
    return BoardView(anchor=anchor, measure=name, board=b.board, verdict=b.verdict,
                     summary=b.summary() if b.results else "", previous=_batch(b.previous),
                     candidates=", then ".join(_batch(c) for c in b.candidates), noise=_noise(b),
                     not_measured=b.not_measured, thresholds=thresholds, rows=tuple(rows),
                     open_rows=tuple(v for v in rows if v.needed), passing_hidden=max(0, passing - PASSING_SHOWN))


def measure_views(comparisons: Mapping[str, Comparison], keys: Mapping[str, Sequence[str]],
                  specs: Mapping[str, MeasureSpec]) -> tuple[BoardView, ...]:
    return tuple(_board(name, measure_anchor(i, j), b, keys.get(name, ()), specs.get(name))
                 for i, (name, comp) in enumerate(sorted(comparisons.items())) for j, b in enumerate(comp.boards))


def quality_views(quality: Mapping[str, QualityReport], keys: Mapping[str, Sequence[str]]) -> tuple[QualityView, ...]:
    out = []
    for i, (name, rep) in enumerate(sorted(quality.items())):
        for j, b in enumerate(rep.boards):
            batch = (f"scorer run: {_batch(b.batch)}; previous release: {_batch(b.previous) or 'none recorded'}"
                     if b.batch is not None else "")
            out.append(QualityView(anchor=quality_anchor(i, j), name=name, board=b.board, verdict=b.verdict,
                                   batch=batch, bands=tuple(BandView(label=row_label(r.key, keys.get(name, ())),
                                                                     band=r.band.display(), value=_num(r.value),
                                                                     previous=_num(r.previous), held=r.held)
                                                            for r in b.results)))
    return tuple(out)
