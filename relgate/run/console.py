"""What a person sees: a line per finished step, the tail on failure, a summary table.

Colour only on a terminal, and never against ``NO_COLOR``; ``FORCE_COLOR`` forces it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from relgate.core.verdict import Verdict
from relgate.ledger.store import StepRow
from relgate.manifest.schema import display_path
from relgate.run.plan import PlannedStep
from relgate.run.runner import RunSummary, StepOutcome

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
    """A line per finished step; for a red one, its warnings and the log's tail.

    A step still running after ``progress`` seconds gets a live line (lane, target,
    host, elapsed), repeated at that interval (``RELGATE_PROGRESS_SECONDS``, default 30).
    """

    def __init__(self, out: TextIO = sys.stdout, *, progress: float | None = None) -> None:
        self.out = out
        self.colour = use_colour(out)
        if progress is None:
            progress = float(os.environ.get("RELGATE_PROGRESS_SECONDS", "30") or 30)
        self.progress = progress
        self._stop: threading.Event | None = None
        self._lock = threading.Lock()

    def _print(self, line: str) -> None:
        with self._lock:
            print(line, file=self.out, flush=True)

    def step_started(self, step: PlannedStep, host: str) -> None:
        if self.progress <= 0:
            return
        stop = self._stop = threading.Event()
        started = time.monotonic()
        label = f"{step.lane + '  ' if step.lane else ''}{step.name}  [{host}]"

        def tick() -> None:
            while not stop.wait(self.progress):
                self._print(f"... {label}  running {_seconds(time.monotonic() - started)}")

        threading.Thread(target=tick, daemon=True).start()

    def step_finished(self, o: StepOutcome) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        lane = f"{o.step.lane}  " if o.step.lane else ""
        line = f"{lane}{o.step.name}  {_paint(o.verdict, self.colour)}  {_seconds(o.duration)}  [{o.host}]"
        if o.reason and o.verdict is not Verdict.PASS:
            line += f"  {o.reason}"
        lines = [line]
        lines += [f"    {w.describe()}" for w in o.warnings]
        lines += [f"    allowed ({why}): {w.describe()}" for w, why in o.allowed]
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.tail and not o.warnings:
            lines.append("    --- last lines of the log ---")
            lines += [f"    | {text}" for text in o.tail.splitlines()[-TAIL_SHOWN:]]
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.log_path is not None:
            lines.append(f"    log: {display_path(o.log_path)}")
        self._print("\n".join(lines))


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
    red = [o.step.name for o in summary.outcomes if o.verdict.blocks]
    if red:
        print(f"red ({len(red)}): {', '.join(red)}", file=out)
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


def render_plan(sessions: Sequence[tuple[str, str | None, Sequence[tuple[PlannedStep, str]]]],
                out: TextIO = sys.stdout) -> None:
    """``relgate check``: per session, each step, its command, and where it would run (or why not)."""
    for command, note, steps in sessions:
        print(f"{command}{f'  ({note})' if note else ''}", file=out)
        if steps:
            rows = [(step.name, step.display(), where) for step, where in steps]
            for line in render_table(("step", "command", "runs on"), rows):
                print(f"  {line}", file=out)
