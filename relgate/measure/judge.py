"""One row and metric judged from its samples: the one policy of previous release against candidate.

Every counted run (after ``warmup``) of both sides is a sample. Per row and metric the
ratio candidate / previous gets a confidence interval (``confidence``, 95 % by default;
Hodges–Lehmann with the Mann–Whitney interval, :mod:`relgate.measure.stats`), and the
interval is judged against the thresholds, as the move the wrong way:

- ``pass``: the whole interval lies within ``rerun_above``;
- ``slower``: it lies wholly beyond ``rerun_above`` and within ``block_above``;
- ``block``: it lies wholly beyond ``block_above``;
- ``rerun``: it straddles a threshold. The next batch is *pooled* with the earlier ones
  (its runs join theirs) and the pool is judged, never the new batch alone; the first
  batch count at which a row is decided is its verdict, so batches measured after it
  change nothing and repeating cannot turn a decided regression green;
- ``undecided``: still straddling after ``max_batches`` batches: too noisy at N runs,
  open in the sign-off (never a pass).

Too few runs for an interval at the confidence (one run a side; two against two) leave the
old policy's point estimate, said so in every reason: each batch's median against the
previous median; above ``rerun_above`` asks for another batch; all batches above it
confirm (the smallest move decides between ``slower`` and ``block``); a rerun that does
not confirm leaves the row open (rerun, then undecided), never a pass. A metric that must
stay ``equal`` and moved blocks at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relgate.core.record import record
from relgate.manifest.measures import MeasureSpec
from relgate.measure.bound import Bound, board_bounds, percent
from relgate.measure.stats import Shift, _achieved, _logs_or_scaled, critical, decide, hl_ratio, wrong_way_samples
from relgate.measure.verdicts import BLOCK, PASS, RERUN, SLOWER, UNDECIDED

__all__ = ["POINT_NOTE", "wrong_way", "Judgement", "judge", "single_bound", "result_fields"]

POINT_NOTE = "1 run a side: point estimate, no interval"


def wrong_way(direction: str, previous: float, value: float) -> float:
    """How far ``value`` moved the wrong way from ``previous``, as a fraction (0: not at all)."""
    if previous == value:
        return 0.0
    if direction == "equal":
        return float("inf")
    base = abs(previous) or 1.0
    move = (previous - value) / base if direction == "higher" else (value - previous) / base
    return max(move, 0.0)


def _pct(move: float) -> str:
    return f"{move:+.1%}"


@record
class Judgement:
    verdict: str
    reason: str
    shift: Shift | None  # the interval the verdict came from (None: point estimates)
    batches: int  # candidate batches pooled when it was decided (or all of them)
    runs: tuple[int, int]  # counted runs (previous, candidate) behind it


def _point_note(runs: tuple[int, int], per_batch: tuple[int, int], confidence: float) -> str:
    if per_batch == (1, 1):
        return POINT_NOTE
    return f"{runs[0]} against {runs[1]} runs, too few for a {confidence:.0%} interval: point estimate"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def single_bound(spec: MeasureSpec, tests: int = 1) -> Bound:
    """The bound of ``tests`` rows × metrics and no suite (``judge`` of one row: 1)."""
    return board_bounds(spec.false_alarm, tests, 0, spec.max_batches)[0]


def judge(spec: MeasureSpec, direction: str,
          steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
          bound: Bound | None = None) -> Judgement:
    """``steps[j]``: (the previous side's pooled runs, the candidate's pooled runs of batches
    1 … j+1, the runs of batch j+1 alone). The first step that decides is the verdict.
    ``bound``: the board's false-alarm bound for this test (default: a board of one test)."""
    verdict, reason, shift, batches, runs, conf = _judge(spec, direction, steps, bound or single_bound(spec))
    full = None
    if shift is not None and conf:
        full = Shift(ratio=shift[0], low=shift[1], high=shift[2], confidence=conf)
    return Judgement(verdict=verdict, reason=reason, shift=full, batches=batches, runs=runs)


_Judged = tuple[str, str, "tuple[float, float, float] | None", int, tuple[int, int], float]


def _interval(prev: Sequence[float], cand: Sequence[float], c: int) -> tuple[float, float, float]:
    return hl_ratio(*_logs_or_scaled(prev, cand), c)


def _judge(spec: MeasureSpec, direction: str,
           steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]], bound: Bound,
           endpoints: bool = True) -> _Judged:
    """The verdict and its reason, the interval (ratio, low, high) it came from, the batches
    and runs behind it and the interval's own confidence (0: no interval). The verdict comes
    from counting differences beyond the thresholds; ``endpoints=False`` skips sorting them
    for the interval's ends (simulations: the same verdicts, no interval shown)."""
    r, b, floor = spec.rerun_above, spec.block_above, spec.confidence
    if direction == "equal":
        before = set().union(*(set(p) for p, _, _ in steps))
        after = set().union(*(set(c) for _, c, _ in steps))
        moved = sorted(after - before)
        runs = (len(steps[-1][0]), len(steps[-1][1]))
        if moved:
            return (BLOCK, f"must stay equal and moved ({_num(_median(list(before)))} -> {_num(moved[0])})", None,
                    len(steps), runs, 0.0)
        return PASS, "equal", None, len(steps), runs, 0.0
    higher = direction == "higher"
    point_moves: list[float] = []
    last: tuple[int, int] | None = None  # (step, c) of the last interval judged
    few = ""  # the last step had an interval at `confidence` but too few runs for the bound's
    runs = (0, 0)
    for j, (prev, cand, batch) in enumerate(steps):
        runs = (len(prev), len(cand))
        want = max(bound.confidence(j + 1), floor)
        c = critical(runs[0], runs[1], want)
        if c is None and critical(runs[0], runs[1], floor) is not None:
            last, few = None, (f"{runs[0]} against {runs[1]} runs: too few for the bound's {percent(want)} "
                               f"interval ({bound.describe()})")
            continue
        few = ""
        if c is None:
            last = None
            note = _point_note(runs, (len(prev), len(batch)), floor)
            move = wrong_way(direction, _median(prev), _median(batch))
            point_moves.append(move)
            if len(point_moves) == 1:
                if move <= r:
                    return PASS, f"{note}; within the rerun threshold", None, j + 1, runs, 0.0
                continue
            if all(m > r for m in point_moves):
                confirmed, n = min(point_moves), len(point_moves)
                if confirmed > b:
                    return (BLOCK, f"{note}; {confirmed:.1%} the wrong way in {_count(n)} batches, above {b:.0%}",
                            None, j + 1, runs, 0.0)
                return (SLOWER, f"{note}; {confirmed:.1%} the wrong way in {_count(n)} batches (between {r:.0%} "
                        f"and {b:.0%})", None, j + 1, runs, 0.0)
            continue
        xs, ys, logs = _logs_or_scaled(prev, cand)
        wx, wy, at_r, at_b = wrong_way_samples(xs, ys, logs, higher, r, b)
        verdict = decide(wx, wy, c, at_r, at_b)
        last = (j, c)
        if verdict is None:
            continue
        why = {PASS: f"within {r:.0%}", BLOCK: f"beyond {b:.0%}", SLOWER: f"between {r:.0%} and {b:.0%}"}[verdict]
        conf = _achieved(runs[0], runs[1], c)
        if not endpoints:
            return verdict, f"{why} ({percent(conf)}, {runs[0]} against {runs[1]} runs)", None, j + 1, runs, conf
        shift = hl_ratio(xs, ys, logs, c)
        lo, hi = _wrong(higher, shift)
        return (verdict, f"{_pct(lo)} … {_pct(hi)} the wrong way ({percent(conf)}, {runs[0]} against {runs[1]} "
                f"runs): {why}", shift, j + 1, runs, conf)
    n = len(steps)
    shift = None
    conf = 0.0
    if few:
        note, what = "", few
    elif last is None:
        final = point_moves[-1]
        note = _point_note(runs, (len(steps[-1][0]), len(steps[-1][2])), floor)
        what = (f"{final:.1%} the wrong way, above {r:.0%}" if n == 1 else
                f"the batches disagree ({', '.join(f'{m:.1%}' for m in point_moves)} the wrong way): "
                "an unconfirmed rerun is no pass")
    elif not endpoints:
        note, what, conf = "", "straddles a threshold", _achieved(runs[0], runs[1], last[1])
    else:
        j, c = last
        shift = _interval(steps[j][0], steps[j][1], c)
        lo, hi = _wrong(higher, shift)
        conf = _achieved(runs[0], runs[1], c)
        note = ""
        what = (f"{_pct(lo)} … {_pct(hi)} the wrong way ({percent(conf)}, {runs[0]} against {runs[1]} runs) "
                f"straddles {r if lo <= r else b:.0%}")
    sep = "; " if note else ""
    if n >= spec.max_batches:
        return (UNDECIDED, f"too noisy at {runs[1]} runs: {note}{sep}{what}; {n} batches pooled "
                f"(max_batches = {spec.max_batches})", shift, n, runs, conf)
    return (RERUN, f"{note}{sep}{what}: measure another batch (pooled with "
            f"{'this one' if n == 1 else f'these {n}'})", shift, n, runs, conf)


def _wrong(higher: bool, shift: tuple[float, float, float]) -> tuple[float, float]:
    """The ratio's interval as the move the wrong way (negative: the right way)."""
    if higher:
        return 1.0 - shift[2], 1.0 - shift[1]
    return shift[1] - 1.0, shift[2] - 1.0


def _count(n: int) -> str:
    return {2: "two", 3: "three", 4: "four"}.get(n, str(n))


def _num(value: float) -> str:
    return f"{value:.6g}"


def result_fields(spec: MeasureSpec, direction: str,
                  steps: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
                  bound: Bound, endpoints: bool = True) -> tuple[Any, ...]:
    """:class:`MetricResult`'s fields after ``direction``, judged from ``steps``."""
    verdict, reason, shift, batches, runs, conf = _judge(spec, direction, steps, bound, endpoints)
    prev_median = _median(steps[batches - 1][0])
    seen = tuple(_median(s[2]) for s in steps[:batches])
    if shift is not None:
        ratio, low, high = shift
    else:
        ratio, low, high = (seen[-1] / prev_median if prev_median else float("inf")), None, None
    return prev_median, seen, ratio, verdict, reason, low, high, runs, batches, conf
