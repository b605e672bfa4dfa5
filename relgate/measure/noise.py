"""A/A: the candidate against itself, to measure what a board's noise lets a verdict tell.

``nox -s compare -- --aa NAME`` measures the candidate twice, interleaved (A B A B … on one
host), as an A/A batch pair, judges B against A with the measure's own policy (pooled
pairs while rows straddle a threshold, at most ``max_batches``), and records the board's
noise floor: each row's interval half-width at the measure's runs a side (kind ``noise``
in the ledger). ``relgate measure noise NAME --board B`` computes the same from recorded
batches: the latest A/A pairs, else two clean batches of one commit. The compare and the
sign-off show the latest floor per board; identical code that comes out ``slower`` or
``block`` here is the policy failing on that board, and the exit status says so (1).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TextIO

from relgate.core.errors import InputError
from relgate.ledger.gitfacts import read_git_facts
from relgate.ledger.identity import project_identity
from relgate.ledger.store import BatchRow, Ledger
from relgate.manifest.measures import MeasureSpec
from relgate.manifest.workspace import Workspace
from relgate.measure.board import judge_board
from relgate.measure.judge import wrong_way
from relgate.measure.results import BoardComparison, noise_of
from relgate.measure.samples import samples
from relgate.measure.specs import spec_of
from relgate.measure.stats import shift_interval
from relgate.measure.tables import board_lines
from relgate.measure.verdicts import BLOCK, RERUN, SLOWER

__all__ = ["aa_pairs", "aa_compare", "run_aa", "measure_noise"]

Key = tuple[str, ...]


def _measure_spec(ws: Workspace, name: str) -> MeasureSpec:
    spec = spec_of(ws, name)
    if not isinstance(spec, MeasureSpec):
        raise InputError(f"quality.{name}: A/A is for measures (speed), not quality bands")
    return spec


def aa_pairs(batches: Sequence[BatchRow], board: str) -> tuple[list[tuple[BatchRow, BatchRow]], str]:
    """The A/A pairs on ``board``: the latest commit's A/A batches (side ``aa``, paired by the
    run that measured them), else consecutive clean batches of one commit and side."""
    mine = [b for b in batches if b.kind == "measure" and b.board == board and not b.dirty and b.commit_sha]
    aa = [b for b in mine if b.side == "aa"]
    if aa:
        commit = aa[-1].commit_sha
        by_run: dict[str | None, dict[str, BatchRow]] = {}
        for b in aa:
            if b.commit_sha == commit:
                by_run.setdefault(b.run_id, {})[b.metadata.get("aa", "")] = b
        pairs = [(p["a"], p["b"]) for p in by_run.values() if "a" in p and "b" in p]
        if pairs:
            return pairs, f"A/A batches of {commit[:12]}"
    for side in ("candidate", "release"):
        same = [b for b in mine if b.side == side]
        for commit in reversed(list(dict.fromkeys(b.commit_sha for b in same))):
            of = [b for b in same if b.commit_sha == commit]
            if len(of) >= 2:
                return [(of[i], of[i + 1]) for i in range(0, len(of) - 1, 2)], \
                    f"{side} batches of one commit, {commit[:12]}, in pairs"
    return [], ""


def aa_compare(ledger: Ledger, spec: MeasureSpec, board: str, pairs: Sequence[tuple[BatchRow, BatchRow]]
               ) -> tuple[BoardComparison, dict[tuple[Key, str], float], int, bool]:
    """B against A, pooled pair by pair; and each row's noise: the median over the pairs of
    its interval's half-width (one run a side: of its |A/B move|)."""
    a = [samples(ledger, x) for x, _ in pairs]
    b = [samples(ledger, y) for _, y in pairs]
    judged = judge_board(spec, board, a, b, previous_for=lambda j: a[: j + 1])
    widths: dict[tuple[Key, str], list[float]] = {}
    point = False
    runs = min((s.counted for s in (*a, *b)), default=0)
    for sa, sb in zip(a, b):
        for key, per in sa.values.items():
            for metric, direction in spec.metrics.items():
                xs, ys = per.get(metric), sb.values.get(key, {}).get(metric)
                if not xs or not ys or direction == "equal":
                    continue
                shift = shift_interval(xs, ys, spec.confidence)
                if shift is None:
                    point = True
                    move = max(wrong_way(direction, statistics.median(xs), statistics.median(ys)),
                               wrong_way(direction, statistics.median(ys), statistics.median(xs)))
                    widths.setdefault((key, metric), []).append(move)
                else:
                    widths.setdefault((key, metric), []).append(shift.half_width)
    comp = BoardComparison(board=board, previous=pairs[-1][0] if pairs else None, candidates=tuple(y for _, y in pairs),
                           previous_pool=tuple(x for x, _ in pairs), confidence=spec.confidence,
                           not_measured=None if judged["results"] else "the A/A batches share no row", **judged)
    return comp, {k: statistics.median(v) for k, v in widths.items()}, runs, point


def _record(ledger: Ledger, spec: MeasureSpec, *, project: str, board: str, widths: dict[tuple[Key, str], float],
            runs: int, point: bool, pairs: Sequence[tuple[BatchRow, BatchRow]], source: str) -> BatchRow:
    by_key: dict[Key, dict[str, float]] = {}
    for (key, metric), w in widths.items():
        by_key.setdefault(key, {})[metric] = w
    last = pairs[-1][1]
    batch = dict(project=project, measure=spec.name, kind="noise", side="noise", release=None,
                 commit_sha=last.commit_sha, dirty=False, board=board, host=last.host,
                 metadata={"runs": str(runs), "point": "yes" if point else "no", "confidence": f"{spec.confidence:g}",
                           "pairs": " ".join(f"{x.id}/{y.id}" for x, y in pairs)},
                 warmup=0, run_id=last.run_id, source=source, sha256=None, path=None)
    batch_id = ledger.add_batch(batch, [(0, list(k), m, {}) for k, m in by_key.items()])
    return next(b for b in ledger.batches(project=project, measure=spec.name) if b.id == batch_id)


def _report(ledger: Ledger, spec: MeasureSpec, project: str, board: str, pairs: Sequence[tuple[BatchRow, BatchRow]],
            what: str, out: TextIO, show_all: bool) -> tuple[str, bool]:
    comp, widths, runs, point = aa_compare(ledger, spec, board, pairs)
    floor = None
    if widths:
        row = _record(ledger, spec, project=project, board=board, widths=widths, runs=runs, point=point, pairs=pairs,
                      source=f"A/A of {what}: " + ", ".join(f"#{x.id} against #{y.id}" for x, y in pairs))
        floor = noise_of(ledger, row)
    comp = replace(comp, noise=floor)
    for line in board_lines(comp, spec, show_all=show_all, aa=True):
        print(line, file=out)
    words = {r.verdict for r in (*comp.results, *comp.suite)}
    return comp.verdict, bool(words & {SLOWER, BLOCK})


def run_aa(ws: Workspace, names: Sequence[str], *, board: str | None = None, argv: Sequence[str] = (),
           out: TextIO = sys.stdout, show_all: bool = False) -> int:
    """``nox -s compare -- --aa NAME …``: A/A batch pairs, interleaved, while a row straddles a
    threshold (at most ``max_batches``); prints the A/A comparison and records the floor.
    Exit 0 when identical code came out neither slower nor blocked, 1 when it did."""
    from relgate.measure.collect import measure

    specs = [_measure_spec(ws, n) for n in names]
    facts = read_git_facts(ws.project.root)
    if facts.dirty:
        raise InputError("compare --aa: the tree is dirty; commit first (A/A batches are kept per commit)")
    project = project_identity(ws, facts).key
    failed = False
    for spec in specs:
        mine: set[int] = set()
        for _ in range(spec.max_batches):
            summary, ids = measure(ws, [spec.name], argv=argv, out=out, aa=True)
            if not summary.ok() or len(ids) < 2:
                print(f"{spec.name} A/A: a measuring run did not pass; no A/A pair recorded", file=out)
                return 1
            mine.update(ids)
            with Ledger.open(ws.home) as ledger:
                pairs = _pairs_by_board(ledger, spec, project, mine, board)
                if not any(aa_compare(ledger, spec, bd, p)[0].verdict == RERUN for bd, p in pairs.items()):
                    break
        print(file=out)
        with Ledger.open(ws.home) as ledger:
            for bd, p in _pairs_by_board(ledger, spec, project, mine, board).items():
                _, bad = _report(ledger, spec, project, bd, p, f"{len(p)} interleaved pair(s)", out, show_all)
                failed |= bad
    return 1 if failed else 0


def _pairs_by_board(ledger: Ledger, spec: MeasureSpec, project: str, ids: set[int], board: str | None
                    ) -> dict[str, list[tuple[BatchRow, BatchRow]]]:
    mine = [b for b in ledger.batches(project=project, measure=spec.name) if b.id in ids]
    out = {}
    for bd in [board] if board else sorted({b.board for b in mine}):
        pairs, _ = aa_pairs(mine, bd)
        if pairs:
            out[bd] = pairs
    return out


def measure_noise(ws: Workspace, name: str, *, board: str | None = None, out: TextIO = sys.stdout) -> int:
    """``relgate measure noise NAME [--board B]``: the floor from recorded batches; exit 0, or 1
    when the recorded A/A pairs judge identical code slower or blocked."""
    spec = _measure_spec(ws, name)
    facts = read_git_facts(ws.project.root)
    project = project_identity(ws, facts).key
    failed = False
    with Ledger.open(ws.home) as ledger:
        batches = ledger.batches(project=project, measure=spec.name)
        boards = [board] if board else sorted({b.board for b in batches if b.kind == "measure"})
        done = 0
        for bd in boards:
            pairs, what = aa_pairs(batches, bd)
            if not pairs:
                print(f"{spec.name} on {bd}: no A/A pair: no two clean batches of one commit "
                      f"(nox -s compare -- --aa {spec.name} measures them)", file=out)
                continue
            _, bad = _report(ledger, spec, project, bd, pairs, what, out, show_all=False)
            failed |= bad
            done += 1
    if not done:
        raise InputError(f"measure noise {name}: no A/A pair recorded" + (f" on board {board}" if board else "")
                         + f" (nox -s compare -- --aa {name})")
    return 1 if failed else 0
