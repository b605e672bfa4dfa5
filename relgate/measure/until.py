"""``nox -s compare -- NAME --until-decided [--max-runs N] [--max-minutes M]``: measure batch
after batch (with ``--previous REF``: REF and the candidate interleaved, A B A B …) until every
row and the suite of every board are decided, or the budget is spent, or ``max_batches``
batches are pooled; then the comparison, and which boards stay open and what they would need.

A board still straddling when the budget is spent is reported ``undecided`` (exit 4): open,
not a regression; the comparison above it says the runs a decision needs. Stopping early
spends less of the false-alarm bound, never more: the looks are those of the batches measured.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TextIO

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.manifest.measures import MeasureSpec
from relgate.manifest.workspace import Workspace
from relgate.measure.needs import duration, floor_needs, need_lines
from relgate.measure.results import EXIT_RERUN, EXIT_UNDECIDED
from relgate.measure.specs import spec_of
from relgate.measure.stage import compare_recorded, recorded_comparisons
from relgate.measure.verdicts import RERUN, UNDECIDED

__all__ = ["Budget", "run_until_decided"]


@record
class Budget:
    max_runs: int | None = None  # runs a side this invocation may measure
    max_minutes: float | None = None  # wall-clock minutes it may take

    def describe(self) -> str:
        parts = ([f"--max-runs {self.max_runs}"] if self.max_runs is not None else []) + \
            ([f"--max-minutes {self.max_minutes:g}"] if self.max_minutes is not None else [])
        return ", ".join(parts) or "max_batches"


def run_until_decided(ws: Workspace, names: Sequence[str], *, previous: str | None, board: str | None,
                      argv: Sequence[str], out: TextIO = sys.stdout, show_all: bool = False,
                      budget: Budget = Budget()) -> int:
    """Batches until decided; the comparison's exit status (a board open when the budget ran
    out: 4, undecided)."""
    from relgate.measure.collect import measure  # runs steps

    if budget.max_runs is not None and budget.max_runs < 1:
        raise InputError("--max-runs: at least 1 run a side")
    if budget.max_minutes is not None and budget.max_minutes <= 0:
        raise InputError("--max-minutes: more than 0")
    specs = [spec_of(ws, n) for n in names]
    measures = [s for s in specs if isinstance(s, MeasureSpec)]
    if not measures:
        raise InputError("compare --until-decided: name a measure (quality bands are measured once, not until decided)")
    per_batch = max(s.runs for s in measures)
    by_name = {s.name: s for s in measures}
    before = recorded_comparisons(ws, [s.name for s in measures], board=board)
    boards = [b for c in before for b in c.boards]
    if boards and len(before) == len(measures) and previous is None \
            and not any(b.verdict == RERUN or b.not_measured is not None for b in boards):
        print("until decided: every board is decided already (or pooled to max_batches): nothing measured", file=out)
        return compare_recorded(ws, names, board=board, out=out, show_all=show_all)
    for comp in before:  # before measuring
        for b in comp.boards:
            needs = floor_needs(b.noise, by_name[comp.measure]) if b.noise is not None else None
            if needs is not None:
                print(f"{comp.measure} on {b.board}, before measuring:", file=out)
                print("\n".join("  " + line for line in need_lines(needs, by_name[comp.measure])), file=out)
    start = time.monotonic()
    batches = runs = 0
    stopped, spent = "", False
    todo = list(names)
    while True:
        began = time.monotonic()
        summary, _ = measure(ws, todo, previous=previous, argv=argv, out=out)
        if not summary.ok():
            print("a measuring run did not pass: its batch was not recorded (see the table above); "
                  "--until-decided stops here", file=out)
            return 1
        todo = [s.name for s in measures]  # quality scorers: the first batch only
        batches, runs = batches + 1, runs + per_batch
        took = time.monotonic() - began
        comps = recorded_comparisons(ws, todo, board=board)
        open_ = [(c.measure, b) for c in comps for b in c.boards if b.verdict == RERUN]
        if not open_:
            stopped = "every row and the suite decided (or pooled to max_batches)"
            break
        if budget.max_runs is not None and runs + per_batch > budget.max_runs:
            stopped, spent = f"the budget is spent (--max-runs {budget.max_runs}: {runs} runs a side measured)", True
            break
        if budget.max_minutes is not None and time.monotonic() - start + took > budget.max_minutes * 60:
            stopped, spent = (f"the budget is spent (--max-minutes {budget.max_minutes:g}: another batch takes "
                              f"about {duration(took)})"), True
            break
        print(f"\nuntil decided: batch {batches} leaves {len(open_)} board(s) to decide "
              f"({', '.join(f'{m} on {b.board}' for m, b in open_)}): measuring another batch\n", file=out)
    print(file=out)
    code = compare_recorded(ws, names, board=board, out=out, show_all=show_all)
    print(f"\nuntil decided: {batches} batch{'es' if batches != 1 else ''} of {per_batch} run"
          f"{'s' if per_batch != 1 else ''} a side in {duration(time.monotonic() - start)}; stopped: {stopped}",
          file=out)
    if spent and code == EXIT_RERUN:
        for name, b in open_:
            rows = sum(1 for r in b.results if r.verdict == RERUN)
            suite = ", ".join(f"the suite's {s.metric} {s.verdict}" for s in b.suite)
            print(f"{name} on {b.board}: {UNDECIDED} within the budget: {rows} row × metric still straddle"
                  + (f" ({suite})" if suite else "") + "; see the runs a decision needs above, and measure with "
                  "a larger budget or more runs a side", file=out)
        return EXIT_UNDECIDED
    return code
