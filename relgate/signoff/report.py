"""The sign-off as a release engineer reads it (``signoff.md``), as machines read it
(``signoff.json``), and the changelog section ("Measurements and verification").

Everything here is a pure function of the assembled sign-off: no clock, no absolute
paths, sorted keys — re-running with nothing new gives byte-identical files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from relgate.core.text import code, inert, md
from relgate.measure.quality import BoardQuality, QualityReport
from relgate.measure.results import BoardComparison, Comparison, MetricResult
from relgate.measure.specs import row_label
from relgate.signoff.assemble import Signoff
from relgate.signoff.checklist import describe

__all__ = ["SECTION_TITLE", "render_json", "render_markdown", "render_changelog_section"]

SECTION_TITLE = "Measurements and verification"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.6g}"


def _batch_json(b: Any) -> dict[str, Any] | None:
    if b is None:
        return None
    return {"id": b.id, "side": b.side, "release": b.release, "commit": b.commit_sha, "board": b.board,
            "host": b.host, "warmup": b.warmup, "source": b.source, "rows": b.path}


def _comparison_json(comp: Comparison, key_columns: Sequence[str]) -> dict[str, Any]:
    return {"measure": comp.measure, "boards": [
        {"board": b.board, "verdict": b.verdict, "previous": _batch_json(b.previous),
         "candidates": [_batch_json(c) for c in b.candidates],
         "previous_batches": [p.id for p in b.previous_pool], "confidence": b.confidence,
         "noise": _noise_json(b), "missing": list(b.missing),
         "rows": [{"row": row_label(r.key, key_columns), "metric": r.metric, "direction": r.direction,
                   "previous": r.previous, "candidate": list(r.candidates), "ratio": round(r.ratio, 6),
                   "interval": None if r.low is None or r.high is None else [round(r.low, 6), round(r.high, 6)],
                   "runs": list(r.runs), "batches": r.batches, "confidence": r.confidence or None,
                   "verdict": r.verdict, "reason": r.reason} for r in b.results],
         "suite": [{"metric": r.metric, "rows": b.suite_rows, "ratio": round(r.ratio, 6),
                    "interval": None if r.low is None or r.high is None else [round(r.low, 6), round(r.high, 6)],
                    "runs": list(r.runs), "batches": r.batches, "confidence": r.confidence or None,
                    "verdict": r.verdict, "reason": r.reason} for r in b.suite],
         "false_alarm": b.bound.false_alarm if b.bound is not None else None} for b in comp.boards]}


def _noise_json(b: BoardComparison) -> dict[str, Any] | None:
    n = b.noise
    if n is None:
        return None
    return {"batch": n.batch.id, "floor": round(n.floor, 6), "runs": n.runs, "point": n.point,
            "widest": round(n.widest[1], 6) if n.widest else None, "commit": n.batch.commit_sha}


def _interval(r: MetricResult) -> str:
    if r.low is None or r.high is None:
        return "point estimate" if r.direction != "equal" else "-"
    return f"{r.low:.3f}–{r.high:.3f}× (±{(r.high - r.low) / 2:.1%})"


def _noise_text(b: BoardComparison, rerun_above: float | None = None) -> str:
    n = b.noise
    if n is None:
        return "A/A noise floor: not measured on this board"
    what = "largest A/B move, too few runs for an interval" if n.point else "interval half-width"
    return (f"A/A noise floor ±{n.floor:.1%} ({what}, median of {len(n.widths)}"
            + (f"; widest ±{n.widest[1]:.1%}" if n.widest else "")
            + f") at {n.runs} run(s) a side, batch #{n.batch.id}")


def _rows_table(b: BoardComparison, keys: Sequence[str], arrow: str = " → ") -> list[str]:
    rows = [(row_label(r.key, keys), r.metric, r.direction, _num(r.previous),
             arrow.join(_num(v) for v in r.candidates), f"{r.ratio:.3f}×", _interval(r), f"{r.runs[0]}/{r.runs[1]}",
             r.verdict, r.reason) for r in b.results]
    return _table(("row", "metric", "better", "previous", "candidate", "ratio", "interval", "runs", "verdict", "why"),
                  rows)


def _quality_json(rep: QualityReport, key_columns: Sequence[str]) -> dict[str, Any]:
    return {"quality": rep.name, "boards": [
        {"board": b.board, "verdict": b.verdict, "batch": _batch_json(b.batch), "previous": _batch_json(b.previous),
         "bands": [{"row": row_label(r.key, key_columns), "band": r.band.display(), "value": r.value,
                    "previous": r.previous, "held": r.held} for r in b.results]} for b in rep.boards]}


def render_json(s: Signoff, keys: Mapping[str, Sequence[str]]) -> str:
    doc = {"project": s.project, "version": s.version, "commit": s.candidate.commit, "dirty": s.candidate.dirty,
           "complete": s.complete, "same_tree": list(s.candidate.same_tree), "release_notes": list(s.candidate.notes),
           "boards": list(s.checklist.release.boards), "backends": list(s.checklist.release.backends),
           **({"backend_boards": {k: list(v) for k, v in s.checklist.release.backend_boards}}
              if s.checklist.release.backend_boards else {}),
           "items": [describe(r) for r in s.items],
           "measurements": [_comparison_json(c, keys.get(n, ())) for n, c in sorted(s.comparisons.items())],
           "quality": [_quality_json(q, keys.get(n, ())) for n, q in sorted(s.quality.items())],
           "evidence": [{"board": r.target, "verdict": r.verdict.value, "reason": r.reason, "step": r.id,
                         "log": r.log_path, "summary": _summary_line(r.tail)} for r in s.evidence_steps]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _summary_line(tail: str | None) -> str | None:
    lines = [ln for ln in (tail or "").splitlines() if " identical, " in ln]
    return lines[-1] if lines else None


_PIPE = re.compile(r"(?<!\\)((?:\\\\)*)\|")  # a pipe after an even run of backslashes is a cell border


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return _PIPE.sub(r"\1\\|", inert(text))  # a pipe md() escaped already stays one escape
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def _batch_text(b: Any, *, who: bool = True) -> str:
    warm = f", {b.warmup} warm-up discarded" if b.warmup else ""
    if not who:
        return f"batch #{b.id} ({b.source}{warm})"
    at = f" at `{b.commit_sha[:12]}`" if b.commit_sha else ""
    side = f"release {b.release}{at}" if b.side == "release" else f"candidate `{(b.commit_sha or '')[:12]}`"
    return f"{side} (batch #{b.id}, {b.source}{warm})"


def _board_md(name: str, b: BoardComparison, keys: Sequence[str], plots: Mapping[tuple[str, str], str]) -> list[str]:
    out = [f"### `{name}` on {md(b.board)}: {md(b.verdict)}", ""]
    if b.previous is not None:  # a Markdown backslash line break before the candidate: no trailing spaces
        out.append(f"Previous: {_batch_text(b.previous)}." + ("\\" if b.candidates else ""))
    if b.candidates:
        out.append(f"Candidate `{(b.candidates[-1].commit_sha or '')[:12]}`: "
                   + ", then ".join(_batch_text(c, who=False) for c in b.candidates) + ".")
    if b.not_measured is not None:
        out += ["", f"Not measured: {md(b.not_measured)}."]
    if b.missing:
        out += ["", "Rows of the previous release with no valid candidate measurement (open until measured, or "
                "the item is skipped with a reason):", ""] + [f"- {md(m)}" for m in b.missing]
    out.append("")
    if b.results:
        out += [f"Suite `{r.metric}` (geometric mean of {b.suite_rows} rows): {r.verdict}, ratio {r.ratio:.3f}× "
                f"({_interval(r)}); {r.reason}.  " for r in b.suite]
        if b.bound is not None:
            out.append(f"False-alarm bound: {b.bound.false_alarm:g} per board (rows, suite and every pooled batch).  ")
        out += [f"{b.summary()}. {_noise_text(b)}.", ""]
        out += _rows_table(b, keys)
        out.append("")
    picture = plots.get((name, b.board))
    if picture:
        out += [f"![{name} on {b.board}: previous against candidate]({picture})", ""]
    return out


def _quality_md(name: str, b: BoardQuality, keys: Sequence[str]) -> list[str]:
    out = [f"### `{name}` on {b.board}: {b.verdict}", ""]
    if b.batch is not None:
        out += [f"Scorer run: {_batch_text(b.batch)}; previous release: "
                f"{_batch_text(b.previous) if b.previous else 'none recorded'}.", ""]
    if b.results:
        rows = [(row_label(r.key, keys), r.band.display(), _num(r.value), _num(r.previous),
                 "held" if r.held else "**broken**") for r in b.results]
        out += _table(("row", "band", "candidate", "previous", "result"), rows)
        out.append("")
    return out


def _step_ref(row: Any) -> str:
    return f"step #{row.id}" + (f", log `{row.log_path}`" if row.log_path else "")


def render_markdown(s: Signoff, keys: Mapping[str, Sequence[str]],
                    plots: Mapping[tuple[str, str], str] | None = None) -> str:
    plots = plots or {}
    rel = s.checklist.release
    open_items = s.open_items
    out = [f"# Sign-off: {md(s.named)}", ""]
    if s.complete:
        out.append("**Verdict: complete.** Every item passed, was attested, or was skipped or not validated "
                   "with its text.")
    else:
        why = f"{len(open_items)} of {len(s.items)} items are open" if open_items else "the tree is dirty"
        out.append(f"**Verdict: incomplete** — {why}. `nox -s tag` refuses until it is complete.")
    out += ["", f"- Candidate: commit `{s.candidate.commit}`"
            + (" — **dirty tree: nothing recorded from it counts**" if s.candidate.dirty else " (clean tree)")]
    if len(s.candidate.same_tree) > 1:
        out.append(f"- Also counted (differ only in {', '.join(s.candidate.notes)}): "
                   + ", ".join(f"`{c[:12]}`" for c in s.candidate.same_tree[1:]))
    out += [f"- Boards: {', '.join(rel.boards)}; backends: {', '.join(rel.backends) or 'none named'}"
            + "".join(f"; {backend} on {', '.join(bs)}" for backend, bs in rel.backend_boards),
            f"- Release notes: {', '.join(s.candidate.notes) or 'none (no changelog; release.notes names them)'}", ""]

    out += ["## What blocks", ""]
    if open_items:
        out += [f"- **{r.item.id}** ({r.status}): {md(r.reason)}" for r in open_items]
    else:
        out.append("Nothing blocks.")
    out.append("")

    out += ["## Checklist", ""]
    out += _table(("item", "title", "status", "reason"),
                  [(f"`{r.item.id}`", md(r.item.title), r.status, md(r.reason)) for r in s.items])
    out.append("")

    if s.comparisons:
        out += ["## Measurements: previous release against the candidate", "",
                "One policy for every board (boards are never merged): every counted run is a sample; the "
                "ratio candidate / previous gets a confidence interval (Hodges–Lehmann with the Mann–Whitney "
                "interval). Wholly within the rerun threshold it passes; wholly beyond it, slower; wholly beyond "
                "the block threshold, it blocks; straddling a threshold, another batch is pooled with the earlier "
                "ones, and after max_batches the row is undecided (open). Each interval's confidence comes from "
                "the board's false-alarm bound (identical code gets any slower or block with chance at most "
                "false_alarm, rows, suite and batches together); the suite (per metric, the geometric mean over "
                "rows of each run's ratio) is judged the same way, and the board's verdict is the suite's, made "
                "worse by any row confidently slower or blocked. Too few runs for an interval: the "
                "point estimate, as the reason says.", ""]
        for name, comp in sorted(s.comparisons.items()):
            for b in comp.boards:
                out += _board_md(name, b, keys.get(name, ()), plots)
    if s.quality:
        out += ["## Quality bands", ""]
        for name, rep in sorted(s.quality.items()):
            for qb in rep.boards:
                out += _quality_md(name, qb, keys.get(name, ()))

    out += ["## Evidence", ""]
    if s.evidence_steps:
        for r in s.evidence_steps:
            summary = _summary_line(r.tail)
            out.append(f"- {md(r.target or '')}: {r.verdict.value}" + (f" — {md(r.reason)}" if r.reason else "")
                       + (f" — {md(summary)}" if summary else "") + f" ({_step_ref(r)})")
    else:
        out.append("No evidence check recorded for this candidate (`nox -s evidence`).")
    out.append("")

    out += ["## Not run, and why", ""]
    lines = [f"- `{r.session}/{r.step}`: {r.verdict.value} — {md(r.reason or '')}" for r in s.not_run]
    lines += [f"- item `{r.item.id}`: {r.status} — {md(r.reason)}" for r in s.items
              if r.status in ("not-applicable", "skipped", "not-validated")]
    out += lines or ["Everything in scope ran."]
    out.append("")

    out += ["## Decisions", ""]
    decided = [r for r in s.items if r.decision is not None or r.runs]
    for r in decided:
        if r.decision is not None:
            d = r.decision
            who = md(d.by) if d.by else "a maintainer"
            what = {"attest": "attested", "skip": "skipped", "not-validated": "marked not validated"}[d.kind]
            note = f": {md(d.note)}" if d.note else ""
            out.append(f"- `{r.item.id}` {what} by {who} for `{d.commit_sha[:12]}`{note}")
        for d, step in r.runs:
            if step is None:
                out.append(f"- `{r.item.id}` manual run, step #{d.step_id} (not in the ledger any more)")
                continue
            tree = "dirty tree" if step.dirty else "clean tree"
            note = f" — {md(d.note)}" if d.note else ""
            out.append(f"- `{r.item.id}` manual run {code(step.command)} on {step.host} ({step.board or 'no board'}), "
                       f"commit `{step.commit_sha[:12]}` ({tree}), exit {step.exit_code}, {step.verdict.value}"
                       f"{note} ({_step_ref(step)})")
    if not decided:
        out.append("No one has attested or skipped anything for this candidate.")
    out.append("")
    return "\n".join(out)


def _worst(b: BoardComparison, keys: Sequence[str]) -> MetricResult | None:
    return max(b.results, key=lambda r: abs(r.ratio - 1.0), default=None)


def render_changelog_section(s: Signoff, keys: Mapping[str, Sequence[str]]) -> str:
    """The section for the version's release notes."""
    out = [f"### {SECTION_TITLE}", ""]
    out.append(f"{md(s.named)} was signed off at commit `{s.candidate.commit[:12]}` on "
               f"{', '.join(s.checklist.release.all_boards)}"
               + ("" if s.complete else " — the sign-off is **incomplete**") + ".")
    out.append("")
    tables: list[tuple[str, BoardComparison]] = []
    for name, comp in sorted(s.comparisons.items()):
        for b in comp.boards:
            if b.not_measured is not None:
                out.append(f"- Speed (`{name}`, {b.board}): not measured — {b.not_measured}; "
                           "the previous release against this one has not run.")
                continue
            worst = _worst(b, keys.get(name, ()))
            assert b.previous is not None
            detail = (f"; largest move {row_label(worst.key, keys.get(name, ()))} {worst.metric} "
                      f"{_num(worst.previous)} → {_num(worst.candidates[-1])} ({worst.ratio:.3f}×)") if worst else ""
            warm = f" after {b.previous.warmup} warm-up" if b.previous.warmup else ""
            out.append(f"- Speed (`{name}`, {b.board}): release {b.previous.release} against this release on the "
                       f"same board with the same settings, every run{warm} a sample, intervals under a "
                       f"false-alarm bound of {b.bound.false_alarm if b.bound else 0:g} per board, "
                       f"{len(b.candidates)} candidate batch{'es' if len(b.candidates) != 1 else ''} pooled: "
                       f"{b.verdict}{detail}; "
                       + "".join(f"suite {r.metric} (geometric mean of {b.suite_rows} rows) {r.ratio:.3f}× "
                                 f"{r.verdict}; " for r in b.suite)
                       + f"{b.summary()}; {_noise_text(b)}.")
            tables.append((name, b))
    for name, rep in sorted(s.quality.items()):
        for qb in rep.boards:
            if qb.not_measured is not None:
                out.append(f"- Quality (`{name}`, {qb.board}): not measured — {qb.not_measured}.")
                continue
            bands = ", ".join(f"{r.band.metric} {_num(r.value)} ({r.band.op} {r.band.bound:g}"
                              + (f"; previous {_num(r.previous)}" if r.previous is not None else "") + ")"
                              + ("" if r.held else " BROKEN") for r in qb.results)
            out.append(f"- Quality (`{name}`, {qb.board}): {bands}.")
    for r in s.evidence_steps:
        summary = _summary_line(r.tail)
        out.append(f"- Evidence ({md(r.target or '')}): {r.verdict.value}" + (f" — {md(summary)}" if summary else "")
                   + ".")
    passed = [md(r.item.title) for r in s.items if r.status == "passed"]
    if passed:
        out.append(f"- Passed: {'; '.join(passed)}.")
    attested = [f"{md(r.item.title)} ({md(r.decision.by or '')})" for r in s.items
                if r.status == "attested" and r.decision]
    if attested:
        out.append(f"- Attested: {'; '.join(attested)}.")
    for r in s.items:
        if r.status == "not-validated":
            out.append(f"- Not validated: {md(r.item.not_validated or '')}")
        elif r.status == "skipped" and r.decision is not None:
            failed = f" It ran and failed: {md(r.overridden)}." if r.overridden else ""
            out.append(f"- Skipped: {md(r.item.title)} — {md(r.decision.note or '')}.{failed}")
        elif not r.done:
            out.append(f"- Open: {md(r.item.title)} — {r.status}: {md(r.reason)}")
    out.append("")
    for name, b in tables:  # the full table, every row with its interval
        out += [f"`{name}` on {b.board}:", ""] + _rows_table(b, keys.get(name, ())) + [""]
    return "\n".join(out)
