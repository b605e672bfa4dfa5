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

from relgate.core.schema import display_path
from relgate.core.text import UNSAFE, inert
from relgate.core.verdict import Verdict
from relgate.ledger.store import StepRow
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
    host, elapsed), repeated at that interval (``RELGATE_PROGRESS_SECONDS``, default 30);
    steps running side by side (GPU slots, a cluster's jobs) each get their own.
    """

    def __init__(self, out: TextIO = sys.stdout, *, progress: float | None = None) -> None:
        self.out = out
        self.colour = use_colour(out)
        if progress is None:
            progress = float(os.environ.get("RELGATE_PROGRESS_SECONDS", "30") or 30)
        self.progress = progress
        self._stops: dict[int, threading.Event] = {}  # one ticker per running step (steps side by side)
        self._lock = threading.Lock()

    def _print(self, line: str) -> None:
        with self._lock:
            print(line, file=self.out, flush=True)

    def step_started(self, step: PlannedStep, host: str) -> None:
        if self.progress <= 0 or step.skip:  # a skipped step ends at once: no ticker to start
            return
        stop = threading.Event()
        with self._lock:
            self._stops[id(step)] = stop
        started = time.monotonic()
        label = f"{step.lane + '  ' if step.lane else ''}{step.name}  [{host}]"

        def tick() -> None:
            while not stop.wait(self.progress):
                with self._lock:  # the step's finished line sets stop under the same lock: no line after it
                    if not stop.is_set():
                        print(f"... {label}  running {_seconds(time.monotonic() - started)}", file=self.out,
                              flush=True)

        threading.Thread(target=tick, daemon=True).start()

    def step_finished(self, o: StepOutcome) -> None:
        with self._lock:
            stop = self._stops.pop(id(o.step), None)
            if stop is not None:
                stop.set()
        lane = f"{o.step.lane}  " if o.step.lane else ""
        counted = f"  ({o.tests.text()})" if o.tests is not None and o.tests.total else ""
        line = f"{lane}{o.step.name}  {_paint(o.verdict, self.colour)}  {_seconds(o.duration)}{counted}  [{o.host}]"
        if o.reason and o.verdict is not Verdict.PASS:
            line += f"  {o.reason}"
        lines = [line]
        lines += [f"    {w.describe()}{f'  (printed {w.printed} times)' if w.printed > 1 else ''}" for w in o.warnings]
        lines += [f"    allowed ({why}): {w.describe()}" for w, why in o.allowed]
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.tail and not o.warnings:
            lines.append("    --- last lines of the log ---")
            lines += [f"    | {text}" for text in o.tail.splitlines()[-TAIL_SHOWN:]]
        if o.verdict in (Verdict.FAIL, Verdict.ERROR) and o.log_path is not None:
            lines.append(f"    log: {display_path(o.log_path)}")
        self._print("\n".join(lines))


TABLE_WIDTH = 120  # summary tables fit a 120-column terminal; the full text is in the JSON


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def fit_table(header: Sequence[str], rows: Iterable[Sequence[str]], *, shrink: Sequence[int],
              width: int = TABLE_WIDTH) -> list[list[str]]:
    """Cut the columns ``shrink`` (in that order, each to no less than 12) until a row fits ``width``."""
    rows = [[str(v) for v in r] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    for index in shrink:
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over <= 0:
            break
        widths[index] = max(12, len(header[index]), widths[index] - over)
        rows = [[_cut(v, widths[index]) if i == index else v for i, v in enumerate(r)] for r in rows]
    return rows


def short_logs(paths: Sequence[Path | None]) -> tuple[list[str], str | None]:
    """Logs by a short name (``3f2a9c1b7d4e….log``) and the folder they share, or their
    shown paths when they share none."""
    real = [p for p in paths if p is not None]
    folders = {p.parent for p in real}
    if len(folders) != 1:
        return [display_path(p) if p is not None else "-" for p in paths], None
    return [f"{p.name[:12]}….log" if p is not None else "-" for p in paths], display_path(folders.pop())


def render_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    head = list(map(str, header))
    cells = [list(map(str, r)) for r in rows]  # (C-speed maps: a compare prints 15,000 rows)
    if UNSAFE.search(" ".join(" ".join(r) for r in cells)):  # a CR or ESC in a cell: shown, inert (one search)
        cells = [[inert(c) for c in r] for r in cells]
    widths = [max(map(len, col)) for col in zip(head, *cells)]

    def fmt(r: list[str]) -> str:
        return "  ".join(map(str.ljust, r, widths)).rstrip()

    return [fmt(head), fmt(["-" * w for w in widths]), *map(fmt, cells)]


def render_summary(summary: RunSummary, out: TextIO = sys.stdout) -> None:
    facts = summary.facts
    print(file=out)
    print(f"{summary.session}: {facts.short}{' (dirty tree: records are marked dirty)' if facts.dirty else ''}"
          f"  run {summary.run_id}", file=out)
    logs, folder = short_logs([o.log_path for o in summary.outcomes])
    header = ("step", "verdict", "duration", "tests", "reason", "log")
    rows = [(o.step.name, o.verdict.value, _seconds(o.duration) if o.log_path else "-",
             o.tests.text() if o.tests is not None else "-", o.reason or "", log)
            for o, log in zip(summary.outcomes, logs)]
    for line in render_table(header, fit_table(header, rows, shrink=(4, 0))):
        print(line, file=out)
    if folder:
        print(f"logs in {folder}/ (full paths: --report FILE.json, relgate status --json)", file=out)
    counts = ", ".join(f"{summary.count(v)} {v.value}" for v in Verdict if summary.count(v))
    print(f"{counts or 'nothing ran'}", file=out)
    red = [o.step.name for o in summary.outcomes if o.verdict.blocks]
    if red:
        print(f"red ({len(red)}): {', '.join(red)}", file=out)
    not_run = [o for o in summary.outcomes if o.verdict is Verdict.NOT_RUN]
    for o in not_run:
        print(f"not run: {o.step.name}: {o.reason}", file=out)


def render_status(rows: Sequence[StepRow], home: Path, out: TextIO = sys.stdout) -> None:
    logs, folder = short_logs([home / r.log_path if r.log_path else None for r in rows])
    header = ("id", "project", "session", "step", "host", "verdict", "duration", "tree", "tests", "reason", "log")
    table = [(str(r.id), r.project.name if r.project else "-", r.session, r.step, r.host, r.verdict.value,
              _seconds(r.duration), "dirty" if r.dirty else "clean", r.tests.text() if r.tests is not None else "-",
              r.reason or "", log)
             for r, log in zip(rows, logs)]
    for line in render_table(header, fit_table(header, table, shrink=(9, 3, 1))):
        print(line, file=out)
    if folder:
        print(f"logs in {folder}/ (full paths: relgate status --json)", file=out)


def render_plan(sessions: Sequence[tuple[str, str | None, Sequence[tuple[PlannedStep, str]]]],
                out: TextIO = sys.stdout) -> None:
    """``relgate check``: per session, each step, its command, and where it would run (or why not)."""
    for command, note, steps in sessions:
        print(f"{command}{f'  ({note})' if note else ''}", file=out)
        if steps:
            rows = [(step.name, step.display(), where) for step, where in steps]
            for line in render_table(("step", "command", "runs on"), rows):
                print(f"  {line}", file=out)
