"""``relgate measure compare`` and ``nox -s compare``: the comparison printed per board (the
suite first, the rows that do not pass and one summary line; ``--all``: every row), and its exit
status (0 nothing blocks, needs a rerun or stays undecided; 1 something blocks; 3 a rerun is
needed; 4 a board stays undecided after max_batches: open, not a regression)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from relgate.core.errors import InputError
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import read_git_facts
from relgate.ledger.identity import project_identity
from relgate.ledger.store import Ledger
from relgate.manifest.measures import MeasureSpec, QualitySpec
from relgate.manifest.workspace import Workspace
from relgate.measure.candidate import candidate_of
from relgate.measure.compare import compare
from relgate.measure.quality import QualityReport, check_quality
from relgate.measure.results import Comparison, exit_code
from relgate.measure.specs import spec_of
from relgate.measure.tables import board_lines
from relgate.measure.verdicts import BLOCK

__all__ = ["compare_recorded", "recorded_comparisons", "run_compare", "print_comparison", "print_quality"]


def print_comparison(comp: Comparison, spec: MeasureSpec, out: TextIO, *, show_all: bool = False) -> None:
    for b in comp.boards:
        out.write("".join(f"{line}\n" for line in board_lines(b, spec, show_all=show_all)))  # one write: 15,000 rows


def print_quality(rep: QualityReport, out: TextIO) -> None:
    for b in rep.boards:
        print(f"{rep.name} on {b.board}: {b.verdict}", file=out)
        for r in b.results:
            prev = f" (previous {r.previous:g})" if r.previous is not None else ""
            print(f"  {r.band.display()}: {r.value:g}{prev} {'held' if r.held else 'BROKEN'}", file=out)


def recorded_comparisons(ws: Workspace, names: Sequence[str], *, board: str | None = None) -> list[Comparison]:
    """The measures' comparisons from what the ledger holds (nothing printed; quality bands left out)."""
    specs = [s for s in (spec_of(ws, n) for n in names) if isinstance(s, MeasureSpec)]
    facts = read_git_facts(ws.project.root)
    notes = ws.checklist.release.notes if ws.checklist is not None else \
        ((str(ws.project.changelog.relative_to(ws.project.root)),) if ws.project.changelog else ())
    version = ws.checklist.release.version if ws.checklist is not None else ws.project.version
    project = project_identity(ws, facts).key
    with Ledger.open(ws.home) as ledger:
        cand = candidate_of(facts, project_root=ws.project.root, notes=notes,
                            known=ledger.project_commits(project=project))
        return [compare(ledger, spec, project=project, counts=cand.counts, boards=[board] if board else (),
                        exclude_release=version) for spec in specs]


def compare_recorded(ws: Workspace, names: Sequence[str], *, board: str | None = None,
                     out: TextIO = sys.stdout, not_run: Mapping[str, str] | None = None,
                     show_all: bool = False) -> int:
    """Compare what the ledger holds; the exit status of the policy. ``not_run``: measures whose
    runs this invocation could not run (name → why); with nothing recorded they are reported as
    not measured instead of refused."""
    not_run = not_run or {}
    specs = [spec_of(ws, n) for n in names]
    facts = read_git_facts(ws.project.root)
    notes = ws.checklist.release.notes if ws.checklist is not None else \
        ((str(ws.project.changelog.relative_to(ws.project.root)),) if ws.project.changelog else ())
    version = ws.checklist.release.version if ws.checklist is not None else ws.project.version
    comps: list[Comparison] = []
    broken = False
    project = project_identity(ws, facts).key
    with Ledger.open(ws.home) as ledger:
        cand = candidate_of(facts, project_root=ws.project.root, notes=notes,
                            known=ledger.project_commits(project=project))
        if cand.dirty:
            print("the tree is dirty: batches measured from it do not count (commit, then measure)", file=out)
        if board is not None:
            known_board(ledger, project, specs, board)
        for spec in specs:
            boards = [board] if board else ()
            if isinstance(spec, QualitySpec):
                rep = check_quality(ledger, spec, project=project, counts=cand.counts, boards=boards)
                print_quality(rep, out)
                broken |= any(b.verdict == BLOCK or b.not_measured is not None for b in rep.boards) or not rep.boards
                continue
            comp = compare(ledger, spec, project=project, counts=cand.counts, boards=boards,
                           exclude_release=version)
            if not comp.boards and not_run.get(spec.name):  # nox -s compare: its runs could not run here
                print(f"{spec.name}: not measured: {not_run[spec.name]}", file=out)
                continue
            if not comp.boards:
                raise InputError(f"measure {spec.name}: nothing recorded"
                                 + (f" on board {board}" if board else "")
                                 + " (relgate measure add, or nox -s compare)")
            print_comparison(comp, spec, out, show_all=show_all)
            comps.append(comp)
    if not comps and not broken and any(isinstance(s, MeasureSpec) for s in specs):
        print("nothing was compared: no speed verdict (exit 1)", file=out)
        return 1
    code = exit_code(comps) if comps else 0
    return 1 if broken else code


def known_board(ledger: Ledger, project: str, specs: Sequence[MeasureSpec | QualitySpec], board: str) -> None:
    """``--board`` must name a board something of ``specs`` was recorded on (a typo compares nothing)."""
    boards = sorted({b.board for spec in specs for b in ledger.batches(project=project, measure=spec.name)})
    if board not in boards:
        from relgate.core.text import inert

        raise InputError(f"--board {inert(board)}: nothing of {', '.join(s.name for s in specs)} was recorded on "
                         f"that board (boards: {', '.join(boards) or 'none yet'})")


def run_compare(ws: Workspace, names: Sequence[str], *, previous: str | None = None, board: str | None = None,
                argv: Sequence[str] = (), out: TextIO = sys.stdout, show_all: bool = False, aa: bool = False) -> int:
    """``nox -s compare [-- NAME …] [--previous REF] [--all] [--aa]``: measure, then compare
    (``--until-decided``: :mod:`relgate.measure.until`)."""
    if ws.measurements is None:
        raise InputError(f"{ws.manifests_dir}: no measurements.toml")
    if aa:
        from relgate.measure.noise import run_aa

        if previous is not None:
            raise InputError("compare --aa measures the candidate against itself: it takes no --previous")
        return run_aa(ws, list(names) or list(ws.measurements.measures), board=board, argv=argv, out=out,
                      show_all=show_all)
    from relgate.measure.collect import measure, measure_of  # runs steps: not needed to compare what is recorded

    names = list(names) or [*ws.measurements.measures, *ws.measurements.quality]
    summary, batches = measure(ws, names, previous=previous, argv=argv, out=out)
    print(file=out)
    not_run = {measure_of(o.step.name): f"its runs were not run ({o.reason})"
               for o in summary.outcomes if o.verdict is Verdict.NOT_RUN}
    code = compare_recorded(ws, names, board=board, out=out, not_run=not_run, show_all=show_all)
    if not summary.ok():
        print("a measuring run did not pass: its batch was not recorded (see the table above)", file=out)
        return 1
    return code
