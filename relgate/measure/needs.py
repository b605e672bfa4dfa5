"""What a board's noise lets a verdict tell, and what a decision would need: the runs a side
one batch needs to call a change a fifth beyond ``rerun_above`` ``slower`` and a fifth beyond
``block_above`` ``block`` at the measure's ``power`` (:mod:`relgate.measure.power`), and the
smallest change the runs already measured can call; for a typical row and for the suite.

The noise comes from the board's A/A floor when one is recorded, else from the batches at
hand. The confidence is the bound's at a board's first look (one batch judged alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from relgate.core.record import record
from relgate.manifest.measures import MeasureSpec
from relgate.measure.bound import Bound, board_bounds
from relgate.measure.power import HL_FACTOR, runs_needed, sigma_of_half_width, smallest_change, z_of
from relgate.measure.results import BoardComparison, MetricResult, NoiseFloor
from relgate.measure.verdicts import UNDECIDED

__all__ = ["Need", "Needs", "needs_of", "floor_needs", "undecided_rows", "row_sigma_of", "MARGIN", "duration",
           "need_lines", "undecided_line"]

MARGIN = 1.2  # the change stated: a fifth beyond the threshold (5 % → 6 %, 10 % → 12 %)


@record
class Need:
    """One family (a typical row, or the suite): runs for ``slower`` and ``block``, and the smallest
    change callable at the runs measured."""

    what: str  # "a row" / "the suite"
    sigma: float
    slower: tuple[int, float] | None  # (runs a side, power) to call MARGIN·rerun_above slower
    block: tuple[int, float] | None  # … MARGIN·block_above block
    smallest: float | None  # the smallest change the measured runs call beyond rerun_above (at power)
    runs: int  # runs a side measured (pooled)


@record
class Needs:
    source: str  # where σ came from
    families: tuple[Need, ...]
    run_seconds: float | None


def _need(what: str, sigma: float, bound: Bound, spec: MeasureSpec, runs: int, look: int, higher: bool) -> Need:
    conf = max(bound.confidence(1), spec.confidence)
    kw = dict(rerun_above=spec.rerun_above, block_above=spec.block_above, higher=higher)
    slower = runs_needed("slower", MARGIN * spec.rerun_above, sigma, conf, spec.power, **kw)  # type: ignore[arg-type]
    block = runs_needed("block", MARGIN * spec.block_above, sigma, conf, spec.power, **kw)  # type: ignore[arg-type]
    smallest = smallest_change(runs, runs, sigma, max(bound.confidence(look), spec.confidence), spec.power,
                               rerun_above=spec.rerun_above) if runs >= 2 else None
    return Need(what=what, sigma=sigma, slower=slower, block=block, smallest=smallest, runs=runs)


def needs_of(b: BoardComparison, spec: MeasureSpec) -> Needs | None:
    """The board's needs; ``None`` without a bound (point estimates) or any noise to go by."""
    if b.bound is None or not b.results:
        return None
    sigma, source = b.row_sigma, "the batches at hand"
    if b.noise is not None and not b.noise.point and b.noise.widths:
        sigma = sigma_of_half_width(b.noise.floor, b.noise.runs, spec.confidence)
        source = f"the A/A noise floor (batch #{b.noise.batch.id})"
    higher = all(r.direction == "higher" for r in b.results if r.direction != "equal")
    looks = max((r.batches for r in b.results), default=1)
    runs = max((min(r.runs) for r in b.results), default=0)
    families = []
    if sigma:
        families.append(_need("a row", sigma, b.bound, spec, runs, looks, higher))
    if b.suite and b.suite_bound is not None and b.suite_sigma:
        suite_runs = max(min(s.runs) for s in b.suite)
        families.append(_need("the suite", b.suite_sigma, b.suite_bound, spec, suite_runs, looks, higher))
    if not families:
        return None
    return Needs(source=source, families=tuple(families), run_seconds=b.run_seconds)


def floor_needs(noise: NoiseFloor, spec: MeasureSpec) -> Needs | None:
    """Before measuring: a typical row's needs from a recorded A/A floor alone (the suite's noise
    depends on how the rows move together, which only the batches show)."""
    if noise.point or not noise.widths:
        return None
    rows = len(noise.widths)
    bound, _ = board_bounds(spec.false_alarm, rows, int(rows > 1), spec.max_batches)
    sigma = sigma_of_half_width(noise.floor, noise.runs, spec.confidence)
    need = _need("a row", sigma, bound, spec, noise.runs, 1, False)
    return Needs(source=f"the A/A noise floor (batch #{noise.batch.id}, {rows} row × metrics)", families=(need,),
                 run_seconds=None)


def row_sigma_of(r: MetricResult, fallback: float | None, confidence: float = 0.0) -> float | None:
    """A row's σ from its own interval (its ends, confidence and runs), else ``fallback``."""
    if r.low is None or r.high is None or not r.confidence or r.low <= 0:
        return fallback
    z = z_of(r.confidence)
    half = math.log(r.high / r.low) / 2
    m, n = r.runs
    return half / (z * HL_FACTOR * math.sqrt(1 / m + 1 / n)) if m and n else fallback


def undecided_rows(b: BoardComparison, spec: MeasureSpec) -> list[tuple[MetricResult, float | None]]:
    """The rows that stayed undecided, each with the smallest change it can call at its runs."""
    out = []
    for r in b.results:
        if r.verdict != UNDECIDED:
            continue
        sigma = row_sigma_of(r, b.row_sigma)
        m, n = r.runs
        conf = r.confidence or (b.bound.confidence(r.batches) if b.bound else spec.confidence)
        out.append((r, smallest_change(m, n, sigma, conf, spec.power, rerun_above=spec.rerun_above)
                    if sigma and m >= 2 and n >= 2 else None))
    return out


def duration(seconds: float) -> str:
    """``2 h 05 min``, ``14 min``, ``40 s``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def need_lines(needs: Needs, spec: MeasureSpec) -> list[str]:
    """The runs a decision needs, as printed up front."""
    head = (f"runs a decision needs (one batch, {spec.power:.0%} power, noise from {needs.source}"
            + (f", {needs.run_seconds:.3g} s a run" if needs.run_seconds else "") + "):")
    out = [head]
    slower, block = MARGIN * spec.rerun_above, MARGIN * spec.block_above
    for f in needs.families:
        parts = []
        for verdict, change, got in (("slower", slower, f.slower), ("block", block, f.block)):
            if got is None:
                parts.append(f"{verdict} at +{change:.1%}: over a million runs")
                continue
            n, power = got
            time = f", ≈ {duration(2 * n * needs.run_seconds)} for both sides" if needs.run_seconds else ""
            parts.append(f"{n} runs a side call +{change:.1%} {verdict} ({power:.1%}{time})")
        call = (f"; at its {f.runs} runs a side it can call about +{f.smallest:.1%} and more"
                if f.smallest is not None else "")
        out.append(f"  {f.what} (±{math.expm1(f.sigma):.2%} a run): " + ", ".join(parts) + call)
    return out


def undecided_line(rows: Sequence[tuple[MetricResult, float | None]]) -> str:
    """``3 rows × metric undecided after max_batches: at their runs each can call about +7.1% … +9.8% and
    more (--all lists each)``."""
    known = [s for _, s in rows if s is not None]
    what = f"{len(rows)} row{'s' if len(rows) != 1 else ''} × metric undecided after max_batches"
    if not known:
        return f"{what} (--all lists each)"
    span = f"+{min(known):.1%}" if len(known) == 1 or min(known) == max(known) else \
        f"+{min(known):.1%} … +{max(known):.1%}"
    who = "at its runs it" if len(rows) == 1 else "at their runs each"
    return f"{what}: {who} can call about {span} and more (--all lists each)"
