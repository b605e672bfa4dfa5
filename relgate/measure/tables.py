"""A comparison as people read it on a console: per board the verdict, one summary line,
the rows that do not pass (or every row), and the board's A/A noise floor."""

from __future__ import annotations

from relgate.core.text import inert
from relgate.manifest.measures import MeasureSpec
from relgate.measure.bound import Bound, board_bounds, percent
from relgate.measure.needs import need_lines, needs_of, undecided_line, undecided_rows
from relgate.measure.power import runs_needed, sigma_of_half_width
from relgate.measure.results import BoardComparison, NoiseFloor
from relgate.measure.specs import row_label
from relgate.measure.verdicts import PASS, RERUN, UNDECIDED
from relgate.run.console import render_table

__all__ = ["board_lines", "noise_lines", "bound_line", "next_lines"]


def bound_line(b: BoardComparison, spec: MeasureSpec) -> str | None:
    """The false-alarm bound and the confidence it gives each look."""
    if b.bound is None:
        return None
    def span(bound: Bound) -> str:
        first, last = percent(max(bound.confidence(1), spec.confidence)), \
            percent(max(bound.confidence(bound.looks), spec.confidence))
        return first if first == last else f"{first} (batch 1) … {last} (batch {bound.looks})"
    text = (f"false-alarm bound: identical code gets any slower or block on this board with chance ≤ "
            f"{spec.false_alarm:g}; a row's interval {span(b.bound)} ({b.bound.tests} row × metric test"
            f"{'s' if b.bound.tests != 1 else ''})")
    if b.suite_bound is not None:
        text += f"; the suite's {span(b.suite_bound)}"
    return text


def _suite_lines(b: BoardComparison) -> list[str]:
    out = []
    for s in b.suite:
        out.append(f"suite {s.metric} (geometric mean of {b.suite_rows} rows, {s.runs[0]}/{s.runs[1]} runs): "
                   f"{s.verdict}: ratio {s.ratio:.3f}" + (f" ({s.interval_text()})" if s.low is not None else "")
                   + f"; {s.reason}")
    return out


def board_lines(b: BoardComparison, spec: MeasureSpec, *, show_all: bool = False, aa: bool = False) -> list[str]:
    """A board for people: its verdict, what was pooled, the suite first, the bound, one summary
    line of the rows, the runs a decision needs, the undecided rows in one line, the rows that
    do not pass (every row with ``show_all``), and the board's A/A noise floor. ``aa``: an A/A
    comparison (B against A, both the candidate)."""
    out = [f"{spec.name}{' A/A' if aa else ''} on {b.board}: {b.verdict}"]
    if aa:
        out.append("  A: batch(es) " + ", ".join(f"#{p.id}" for p in b.previous_pool) + "; B: batch(es) "
                   + ", ".join(f"#{c.id}" for c in b.candidates) + " (the candidate, interleaved)")
    elif b.previous is not None and b.candidates:
        pool = b.previous_pool or (b.previous,)
        prev = ", ".join(f"#{p.id}" for p in pool)
        out.append(f"  previous: release {b.previous.release} (batch{'es' if len(pool) != 1 else ''} {prev}); "
                   "candidate batch(es): " + ", ".join(f"#{c.id}" for c in b.candidates)
                   + (f" (not counted, after max_batches = {spec.max_batches}: "
                      + ", ".join(f"#{c.id}" for c in b.ignored) + ")" if b.ignored else ""))
    if b.results:
        out += ["  " + line for line in _suite_lines(b)]
        if not b.suite and any("point estimate" in r.reason for r in b.results):
            out.append("  no suite and no false-alarm bound: point estimates (too few runs for an interval)")
        bound = bound_line(b, spec)
        if bound and not any("point estimate" in r.reason for r in b.results):
            out.append("  " + bound)
        out.append("  " + b.summary())
        needs = needs_of(b, spec)
        if needs is not None and (b.verdict != PASS or aa):
            out += ["  " + line for line in need_lines(needs, spec)]
        undecided = dict((id(r), s) for r, s in undecided_rows(b, spec))
        if not (b.suite and all(s.verdict != UNDECIDED for s in b.suite)):
            undecided_apart: dict[int, float | None] = {}  # no decided suite: the rows say why it is open
        else:
            undecided_apart = undecided
        if undecided_apart and not show_all:
            out.append("  " + undecided_line([(r, s) for r in b.results if id(r) in undecided
                                              for s in [undecided[id(r)]]]))
        out += ["  " + line for line in next_lines(b)]
        shown = [r for r in b.results if show_all or (r.verdict != PASS and id(r) not in undecided_apart)]
        rows = [(row_label(r.key, spec.key), r.metric, r.direction, f"{r.previous:.4g}",
                 f"{r.candidates[0]:.4g}" if len(r.candidates) == 1 else " -> ".join(f"{v:.4g}" for v in r.candidates),
                 f"{r.ratio:.3f}", r.interval_text(), f"{r.runs[0]}/{r.runs[1]}", r.verdict,
                 r.reason + (f"; it can call about +{undecided[id(r)]:.1%} and more at its runs"
                             if undecided.get(id(r)) is not None else ""))
                for r in shown]  # (one candidate batch, the usual case, without a join: 15,000 rows)
        if rows:
            out += ["  " + line for line in render_table(("row", "metric", "better", "previous", "candidate", "ratio",
                                                          "interval", "runs", "verdict", "why"), rows)]
    out += [f"  missing: {inert(m)}" for m in b.missing]
    out += ["  " + line for line in noise_lines(b.noise, spec)] if b.results or b.noise else []
    return out


def next_lines(b: BoardComparison) -> list[str]:
    """What to do next after ``rerun`` or ``undecided``."""
    if b.verdict == RERUN:
        return ["next: measure another batch (nox -s compare, or nox -s compare -- NAME --until-decided); it is "
                "pooled with these, never judged alone"]
    if b.verdict.startswith(UNDECIDED):
        return ["next: undecided is neither a regression nor a pass: the sign-off item stays open. Measure more "
                "runs a side (runs in measurements.toml: see the runs a decision needs), or skip the item with a "
                "reason"]
    return []


def noise_lines(noise: NoiseFloor | None, spec: MeasureSpec) -> list[str]:
    if noise is None:
        return [f"A/A noise floor: not measured on this board (nox -s compare -- --aa {spec.name})"]
    what = "largest A/B move: too few runs for an interval" if noise.point else f"{spec.confidence:.0%} interval"
    widest = noise.widest
    line = (f"A/A noise floor: ±{noise.floor:.1%} at {noise.runs} run{'s' if noise.runs != 1 else ''} a side "
            f"({what}, median of {len(noise.widths)} row(s) × metric"
            + (f"; widest ±{widest[1]:.1%}, {row_label(widest[0][0], spec.key)} {widest[0][1]}" if widest else "")
            + f"; batch #{noise.batch.id})")
    out = [line]
    over = [w for w in noise.widths.values() if w > spec.rerun_above]
    if over and not noise.point:
        sigma = sigma_of_half_width(max(over), noise.runs, spec.confidence)
        rows = max(len(noise.widths), 1)
        conf = board_bounds(spec.false_alarm, rows, int(rows > 1), spec.max_batches)[0].confidence(1)  # first look
        need = runs_needed("slower", 1.2 * spec.rerun_above, sigma, max(conf, spec.confidence), spec.power,
                           rerun_above=spec.rerun_above, block_above=spec.block_above)
        what = f"about {need[0]} runs a side" if need else "over a million runs a side"
        out.append(f"  {len(over)} of {len(noise.widths)} exceed the {spec.rerun_above:.0%} rerun threshold: {what} "
                   f"would call a +{1.2 * spec.rerun_above:.1%} change slower on the noisiest row "
                   f"({spec.power:.0%} power, one batch, under the false-alarm bound)")
    elif over:
        out.append(f"  {len(over)} of {len(noise.widths)} A/B moves exceed the {spec.rerun_above:.0%} rerun threshold "
                   "with too few runs for an interval: measure more runs a side (runs = …)")
    return out
