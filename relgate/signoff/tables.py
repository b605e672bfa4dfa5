"""A comparison as people read it on a console: per board the verdict, one summary line,
the rows that do not pass (or every row), and the board's A/A noise floor."""

from __future__ import annotations

from relgate.core.text import inert
from relgate.manifest.measures import MeasureSpec
from relgate.run.console import render_table
from relgate.signoff.compare import PASS, BoardComparison, NoiseFloor
from relgate.signoff.report import row_label
from relgate.signoff.stats import runs_to_resolve

__all__ = ["board_lines", "noise_lines"]


def board_lines(b: BoardComparison, spec: MeasureSpec, *, show_all: bool = False, aa: bool = False) -> list[str]:
    """A board for people: its verdict, what was pooled, one summary line, the rows that do
    not pass (every row with ``show_all``), and the board's A/A noise floor. ``aa``: an A/A
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
        out.append("  " + b.summary())
        shown = [r for r in b.results if show_all or r.verdict != PASS]
        rows = [(row_label(r.key, spec.key), r.metric, r.direction, f"{r.previous:.4g}",
                 f"{r.candidates[0]:.4g}" if len(r.candidates) == 1 else " -> ".join(f"{v:.4g}" for v in r.candidates),
                 f"{r.ratio:.3f}", r.interval_text(), f"{r.runs[0]}/{r.runs[1]}", r.verdict, r.reason)
                for r in shown]  # (one candidate batch, the usual case, without a join: 15,000 rows)
        if rows:
            out += ["  " + line for line in render_table(("row", "metric", "better", "previous", "candidate", "ratio",
                                                          "interval", "runs", "verdict", "why"), rows)]
    out += [f"  missing: {inert(m)}" for m in b.missing]
    out += ["  " + line for line in noise_lines(b.noise, spec)] if b.results or b.noise else []
    return out


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
        need = runs_to_resolve(noise.runs, max(over), spec.rerun_above)
        out.append(f"  {len(over)} of {len(noise.widths)} exceed the {spec.rerun_above:.0%} rerun threshold: about "
                   f"{need} runs a side would resolve {spec.rerun_above:.0%} on every row of this board")
    elif over:
        out.append(f"  {len(over)} of {len(noise.widths)} A/B moves exceed the {spec.rerun_above:.0%} rerun threshold "
                   "with too few runs for an interval: measure more runs a side (runs = …)")
    return out
