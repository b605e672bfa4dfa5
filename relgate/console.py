"""What a person sees: a line per finished step, the tail on failure, a summary table.

Colour only on a terminal, and never against ``NO_COLOR``; ``FORCE_COLOR`` forces it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from .ledger import StepRow
from .plan import PlannedStep
from .runner import RunSummary, StepOutcome
from .schema import display_path
from .verdict import Verdict

__all__ = ["ConsoleReporter", "render_summary", "render_table", "render_status", "use_colour"]

_COLOURS = {Verdict.PASS: "32", Verdict.FAIL: "31", Verdict.ERROR: "35", Verdict.SKIP: "33",
            Verdict.NOT_RUN: "33"}
TAIL_SHOWN = 20


def use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _paint(verdict: Verdict, colour: bool) -> str:
    return f"\033[{_COLOURS[verdict]}m{verdict.value}\033[0m" if colour else verdict.value


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} s" if value < 100 else f"{value / 60:.1f} min"


class ConsoleReporter:
    """A line per finished step; for a red one, its warnings and the log's tail."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.colour = use_colour(out)

    def step_started(self, step: PlannedStep, host: str) -> None:
        pass

    def step_finished(self, o: StepOutcome) -> None:
        lane = f"{o.step.lane}  " if o.step.lane else ""
        line = f"{lane}{o.step.name}  {_paint(o.verdict, self.colour)}  {_seconds(o.duration)}  [{o.host}]"
        if o.reason and o.verdict is not Verdict.PASS:
            line += f"  {o.reason}"
        print(line, file=self.out)
        for w in o.warnings:
            print(f"    {w.describe()}", file=self.out)
        for w, why in o.allowed:
            print(f"    allowed ({why}): {w.describe()}", file=self.out)
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.tail and not o.warnings:
            lines = o.tail.splitlines()[-TAIL_SHOWN:]
            print("    --- last lines of the log ---", file=self.out)
            for text in lines:
                print(f"    | {text}", file=self.out)
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.log_path is not None:
            print(f"    log: {display_path(o.log_path)}", file=self.out)
        self.out.flush()


def render_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    rows = [list(r) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    fmt = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def render_summary(summary: RunSummary, out: TextIO = sys.stdout) -> None:
    facts = summary.facts
    print(file=out)
    print(f"{summary.session}: {facts.short}{' (dirty tree: records are marked dirty)' if facts.dirty else ''}"
          f"  run {summary.run_id}", file=out)
    rows = [(o.step.name, o.verdict.value, _seconds(o.duration) if o.log_path else "-", o.reason or "",
             display_path(o.log_path) if o.log_path else "-") for o in summary.outcomes]
    for line in render_table(("step", "verdict", "duration", "reason", "log"), rows):
        print(line, file=out)
    counts = ", ".join(f"{summary.count(v)} {v.value}" for v in Verdict if summary.count(v))
    print(f"{counts or 'nothing ran'}", file=out)
    not_run = [o for o in summary.outcomes if o.verdict is Verdict.NOT_RUN]
    for o in not_run:
        print(f"not run: {o.step.name}: {o.reason}", file=out)


def render_status(rows: Sequence[StepRow], home: Path, out: TextIO = sys.stdout) -> None:
    table = [(str(r.id), r.session, r.step, r.host, r.verdict.value, _seconds(r.duration),
              "dirty" if r.dirty else "clean", r.reason or "",
              display_path(home / r.log_path) if r.log_path else "-") for r in rows]
    for line in render_table(("id", "session", "step", "host", "verdict", "duration", "tree", "reason", "log"),
                             table):
        print(line, file=out)
