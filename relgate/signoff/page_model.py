"""What the HTML page shows, read from the assembled sign-off (the data ``signoff.md`` is
rendered from), never from Markdown: a pure function of the sign-off, the ledger home and
where the page will lie (log links are relative to it). No clock; stable order."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.evidence.baselines import board_key
from relgate.ledger.store import StepRow
from relgate.manifest.measures import MeasureSpec
from relgate.signoff.assemble import Signoff
from relgate.signoff.page_matrix import Link, MatrixRow, item_anchor, matrix, step_anchor
from relgate.signoff.page_measures import BoardView, QualityView, measure_views, quality_views
from relgate.signoff.page_text import log_tail

__all__ = ["StepView", "StepGroup", "Page", "build_page"]

_GPU_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
EMBED_TOTAL = 32 * 2**20  # characters of log tails one page carries with --embed-logs


@record
class StepView:
    anchor: str
    id: int
    run: str
    session: str
    name: str
    lane: str
    host: str
    board: str
    driver: str
    toolkit: str
    gpu: str
    duration: str
    verdict: str
    reason: str
    command: str
    commit: str
    dirty: bool
    exit: str
    log: Link | None  # relative to the page
    log_missing: str  # a stored log the page cannot reach
    tail: str | None  # --embed-logs


@record
class Line:
    """One line of a list: what, its status, why, and where its rows are."""

    what: str
    status: str
    why: str
    links: tuple[Link, ...] = ()
    anchor: str = ""


@record
class EvidenceView:
    board: str
    verdict: str
    reason: str
    summary: str
    lines: tuple[str, ...]  # MOVED / ONLY-BASE / ONLY-CANDIDATE (intentional tagged), as the check printed
    links: tuple[Link, ...]


@record
class StepGroup:
    """The steps of one session on one host, board, driver, toolkit and GPU at one commit."""

    session: str
    host: str
    board: str
    driver: str
    toolkit: str
    gpu: str
    commit: str
    dirty: bool
    steps: tuple[StepView, ...]


def _groups(views: Sequence[StepView]) -> tuple[StepGroup, ...]:
    out: dict[tuple[str, ...], list[StepView]] = {}
    for v in views:
        out.setdefault((v.session, v.host, v.board, v.driver, v.toolkit, v.gpu, v.commit, str(v.dirty)), []).append(v)
    return tuple(StepGroup(session=k[0], host=k[1], board=k[2], driver=k[3], toolkit=k[4], gpu=k[5], commit=k[6],
                           dirty=k[7] == "True", steps=tuple(vs)) for k, vs in out.items())


@record
class Page:
    title: str
    heading: str
    project: str
    version: str
    commit: str
    dirty: bool
    same_tree: tuple[str, ...]
    notes: tuple[str, ...]
    boards: tuple[str, ...]
    backends: str
    complete: bool
    verdict: str
    blockers: tuple[Line, ...]
    matrix: tuple[MatrixRow, ...]
    errors: tuple[Line, ...]  # the harness, a host or the network broke
    failures: tuple[Line, ...]  # the code under test is wrong
    measures: tuple[BoardView, ...]
    quality: tuple[QualityView, ...]
    evidence: tuple[EvidenceView, ...]
    not_run: tuple[Line, ...]
    decisions: tuple[Line, ...]
    manual_runs: tuple[StepView, ...]
    manual_notes: Mapping[int, str]  # manual run's step id → "item, by, note"
    steps: tuple[StepGroup, ...]
    step_count: int
    embedded: bool
    generator: str


def _log(row: StepRow, home: Path, page_dir: Path) -> tuple[Link | None, str]:
    if not row.log_path:
        return None, ""
    path = home / row.log_path
    if not path.is_file():
        return None, f"{row.log_path} (not on this machine)"
    rel = os.path.relpath(path, page_dir).replace(os.sep, "/")
    return Link(href=quote(rel, safe="/._-~"), label=os.path.basename(row.log_path)), ""


def _gpu(row: StepRow) -> str:
    told = getattr(row, "gpu", None)
    if told:
        return str(told)
    return ", ".join(f"{k}={row.env[k]}" for k in _GPU_ENV if row.env.get(k))


class _Budget:
    """What ``--embed-logs`` may still put into one page (in characters): the tails stop there."""

    def __init__(self, total: int) -> None:
        self.left = total

    def tail(self, path: Path) -> str:
        if self.left <= 0:
            return (f"[not embedded: the page's {EMBED_TOTAL // 2**20} MiB for log tails are spent; "
                    "the link above opens the whole log]")
        text = log_tail(path) or "[the log cannot be read]"
        self.left -= len(text)
        return text


def _step(row: StepRow, home: Path, page_dir: Path, embed: _Budget | None) -> StepView:
    log, missing = _log(row, home, page_dir)
    return StepView(anchor=step_anchor(row.id), id=row.id, run=row.run_id, session=row.session, name=row.step,
                    lane=row.lane or "", host=row.host, board=board_key(row.board, row.host), driver=row.driver or "",
                    toolkit=row.toolkit or "", gpu=_gpu(row),
                    duration="" if row.duration is None else f"{row.duration:.1f} s", verdict=row.verdict.value,
                    reason=row.reason or "", command=row.command, commit=row.commit_sha, dirty=row.dirty,
                    exit="" if row.exit_code is None else str(row.exit_code), log=log, log_missing=missing,
                    tail=embed.tail(home / row.log_path) if embed and log is not None and row.log_path else None)


def _links(rows: Sequence[StepRow]) -> tuple[Link, ...]:
    return tuple(Link(href=f"#{step_anchor(r.id)}", label=f"#{r.id}") for r in rows)


def _evidence(s: Signoff) -> tuple[EvidenceView, ...]:
    out = []
    for r in s.evidence_steps:
        lines = [ln for ln in (r.tail or "").splitlines() if ln.startswith(("MOVED ", "ONLY-BASE ", "ONLY-CANDIDATE ",
                                                                            "REDACTED "))]
        summary = next((ln for ln in reversed((r.tail or "").splitlines()) if " identical, " in ln), "")
        out.append(EvidenceView(board=r.target or "", verdict=r.verdict.value, reason=r.reason or "",
                                summary=summary, lines=tuple(lines[:200]), links=_links([r])))
    return tuple(out)


def _verdict(s: Signoff) -> str:
    if s.complete:
        return "complete: every item passed, was attested, or was skipped or not validated with its text"
    opened = s.open_items
    why = f"{len(opened)} of {len(s.items)} items are open" if opened else "the tree is dirty"
    return f"incomplete: {why}" + (" (and the tree is dirty: nothing recorded from it counts)"
                                   if opened and s.candidate.dirty else "")


def build_page(s: Signoff, *, home: Path, page_dir: Path, specs: Mapping[str, MeasureSpec],
               keys: Mapping[str, Sequence[str]], embed_logs: bool = False, generator: str = "relgate",
               title: str | None = None, steps: Sequence[StepRow] | None = None) -> Page:
    """``steps``: the rows the steps section lists (default: the sign-off's latest rows);
    ``title``: the page's (default: the sign-off's)."""
    # Lexical absolute paths, as a browser resolves a relative link against the page's own URL.
    home, page_dir = Path(os.path.abspath(home)), Path(os.path.abspath(page_dir))
    budget = _Budget(EMBED_TOTAL) if embed_logs else None
    decisions, manual, notes = [], [], {}
    anchors: dict[str, str] = {}
    index = {r.item.id: i for i, r in enumerate(s.items)}
    for r in s.items:
        if r.decision is not None:
            d = r.decision
            anchors[r.item.id] = f"d{d.id}"
            what = {"attest": "attested", "skip": "skipped", "not-validated": "not validated"}.get(d.kind, d.kind)
            decisions.append(Line(what=r.item.id, status=what, why=f"by {d.by or 'a maintainer'} for commit "
                                  f"{d.commit_sha}" + (f": {d.note}" if d.note else ""),
                                  links=(Link(href=f"#{item_anchor(index[r.item.id])}", label=r.item.id),),
                                  anchor=anchors[r.item.id]))
        for d, step in r.runs:
            if step is not None:
                manual.append(_step(step, home, page_dir, None))  # its tail is in the steps section
                notes[step.id] = f"{r.item.id}, run by {d.by or 'a maintainer'}" + (f": {d.note}" if d.note else "")
    boards, rows = matrix(s, anchors)
    listed = list(s.steps if steps is None else steps)
    seen = {r.id for r in listed}
    for st in [st for r in s.items for st in r.steps] + [st for r in s.items for _, st in r.runs if st is not None]:
        if st.id not in seen:  # every row a cell or a decision links to is on the page
            seen.add(st.id)
            listed.append(st)
    listed.sort(key=lambda r: (r.session, r.host, board_key(r.board, r.host), r.driver or "", r.toolkit or "",
                               r.commit_sha, r.dirty, r.lane or "", r.step, r.id))
    views = tuple(_step(r, home, page_dir, budget) for r in listed)
    counted = [r for r in listed if s.candidate.counts(r.commit_sha, r.dirty)]

    def line(r: StepRow) -> Line:
        return Line(what=f"{r.session}/{r.step} on {board_key(r.board, r.host)}", status=r.verdict.value,
                    why=r.reason or "", links=_links([r]))

    not_run = [line(r) for r in s.not_run]
    not_run += [Line(what=f"item {r.item.id}", status=r.status, why=r.reason,
                     links=(Link(href=f"#{item_anchor(i)}", label=r.item.id),))
                for i, r in enumerate(s.items) if r.status in ("not-applicable", "skipped", "not-validated")]
    rel = s.checklist.release
    return Page(
        title=title or f"Sign-off: {s.project} {s.version}", heading=title or f"Sign-off: {s.project} {s.version}",
        project=s.project, version=s.version, commit=s.candidate.commit, dirty=s.candidate.dirty,
        same_tree=s.candidate.same_tree[1:], notes=s.candidate.notes, boards=boards,
        backends=", ".join(rel.backends) or "none named", complete=s.complete, verdict=_verdict(s),
        blockers=tuple(Line(what=r.item.id, status=r.status, why=r.reason,
                            links=(Link(href=f"#{item_anchor(index[r.item.id])}", label="item"),))
                       for r in s.open_items),
        matrix=rows, errors=tuple(line(r) for r in counted if r.verdict is Verdict.ERROR),
        failures=tuple(line(r) for r in counted if r.verdict is Verdict.FAIL),
        measures=measure_views(s.comparisons, keys, specs), quality=quality_views(s.quality, keys),
        evidence=_evidence(s), not_run=tuple(not_run), decisions=tuple(decisions), manual_runs=tuple(manual),
        manual_notes=notes, steps=_groups(views), step_count=len(views), embedded=embed_logs, generator=generator)
