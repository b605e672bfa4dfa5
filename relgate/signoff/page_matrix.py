"""The page's matrix: checklist items × the release's boards, each cell a status and links to
the rows behind it (ledger steps, a measure's board, a quality board, a person's decision).

Read from the evaluated items, never re-judged: an item's status is the checklist's; a cell
only says which of the item's rows stand on that board. A status that is not a board's
(a manual item, a decision, an item outside the release's backends) spans every board."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.evidence.baselines import board_key
from relgate.ledger.store import StepRow
from relgate.measure.verdicts import BLOCK, RERUN, UNDECIDED
from relgate.signoff.assemble import Signoff
from relgate.signoff.checklist import ItemResult

__all__ = ["Link", "Cell", "MatrixRow", "matrix", "measure_anchor", "quality_anchor", "step_anchor", "item_anchor"]


@record
class Link:
    href: str
    label: str


@record
class Cell:
    status: str  # one of the checklist's statuses, or "" (the item is not checked on this board)
    links: tuple[Link, ...] = ()
    span: int = 1


@record
class MatrixRow:
    anchor: str
    id: str
    title: str
    kind: str
    status: str
    reason: str
    cells: tuple[Cell, ...]


def step_anchor(step_id: int) -> str:
    return f"s{step_id}"


def item_anchor(index: int) -> str:
    return f"i{index}"


def measure_anchor(measure_index: int, board_index: int) -> str:
    return f"m{measure_index}-{board_index}"


def quality_anchor(quality_index: int, board_index: int) -> str:
    return f"q{quality_index}-{board_index}"


def _from_steps(rows: Sequence[StepRow]) -> str:
    verdicts = {r.verdict for r in rows}
    if verdicts & {Verdict.FAIL, Verdict.ERROR}:
        return "failed"
    if verdicts - {Verdict.PASS}:
        return "missing"
    return "passed"


def _step_links(rows: Sequence[StepRow]) -> tuple[Link, ...]:
    return tuple(Link(href=f"#{step_anchor(r.id)}", label=f"#{r.id}") for r in rows)


def _measure_status(verdict: str) -> str:
    if verdict == BLOCK:
        return "failed"
    if verdict == RERUN or verdict.startswith(("not measured", UNDECIDED)):
        return "missing"
    return "passed"


def _cells(r: ItemResult, boards: Sequence[str], scope: Sequence[str], s: Signoff,
           measures: Mapping[str, int], qualities: Mapping[str, int], decision: str | None) -> tuple[Cell, ...]:
    span = max(1, len(boards))
    whole = Cell(status=r.status, links=_step_links(r.steps), span=span)
    if r.status == "not-applicable":
        return (Cell(status=r.status, span=span),)
    if r.decision is not None and r.status in ("attested", "skipped", "not-validated"):
        links = ((Link(href=f"#{decision}", label="decision"),) if decision else ()) + _step_links(r.steps)
        return (Cell(status=r.status, links=links, span=span),)
    kind, arg = r.item.auto_kind if not r.item.manual else ("manual", None)
    if kind == "measure" and arg in s.comparisons:
        comp, index = s.comparisons[arg], measures[arg]
        here = {b.board: (j, b.verdict) for j, b in enumerate(comp.boards)}
        if not set(here) & set(boards):  # compared on no board of the release's: one cell, every board's link
            return (Cell(status=r.status, span=span, links=tuple(
                Link(href=f"#{measure_anchor(index, j)}", label=f"{arg} on {b}") for b, (j, _) in here.items())),)
        return tuple(Cell(status=_measure_status(here[board][1]),
                          links=(Link(href=f"#{measure_anchor(index, here[board][0])}", label=arg or "measure"),))
                     if board in here else Cell(status="missing" if board in scope else "") for board in boards)
    if kind == "quality" and arg in s.quality:
        rep, index = s.quality[arg], qualities[arg]
        if not {b.board for b in rep.boards} & set(boards):
            return (Cell(status=r.status, span=span, links=tuple(
                Link(href=f"#{quality_anchor(index, j)}", label=f"{arg} on {b.board}")
                for j, b in enumerate(rep.boards))),)
        out = []
        for board in boards:
            j = next((j for j, b in enumerate(rep.boards) if b.board == board), None)
            if j is None:
                out.append(Cell(status="missing" if board in scope else ""))
                continue
            b = rep.boards[j]
            status = "failed" if any(not x.held for x in b.results) else "missing" if b.not_measured else "passed"
            out.append(Cell(status=status, links=(Link(href=f"#{quality_anchor(index, j)}", label=arg or "quality"),)))
        return tuple(out)
    on: dict[str, list[StepRow]] = {}
    for row in r.steps:
        on.setdefault(board_key(row.board, row.host), []).append(row)
    if not r.steps or not set(on) & set(boards):
        return (whole,)  # rows of no release board (a package built on a build host), or none at all
    return tuple(Cell(status=_from_steps(on[board]), links=_step_links(on[board])) if board in on
                 else Cell(status="missing" if board in scope and r.status != "passed" else "")
                 for board in boards)


def matrix(s: Signoff, decision_anchors: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[MatrixRow, ...]]:
    """The columns (every board of the release) and one row per checklist item, in the
    checklist's order. ``decision_anchors``: item id → the anchor of its decision."""
    rel = s.checklist.release
    boards = rel.all_boards
    measures = {name: j for j, name in enumerate(sorted(s.comparisons))}
    qualities = {name: j for j, name in enumerate(sorted(s.quality))}
    rows = []
    for i, r in enumerate(s.items):
        item = r.item
        scope = rel.boards_for(item.applies) if item.boards is None else item.boards
        kind = "manual" if item.manual else item.auto or ""
        rows.append(MatrixRow(anchor=item_anchor(i), id=item.id, title=item.title, kind=kind, status=r.status,
                              reason=r.reason, cells=_cells(r, boards, scope, s, measures, qualities,
                                                            decision_anchors.get(item.id))))
    return boards, tuple(rows)
