"""The statistics behind a speed verdict, in pure Python (no numpy, no scipy).

The shift between two samples — the previous release's runs and the candidate's — is the
Hodges–Lehmann estimate: the median of every pairwise difference ``log(cand_j) - log(prev_i)``
(the log of the ratio; a sample with a value <= 0 uses the plain differences, scaled by
the previous median). Its confidence interval is the Mann–Whitney one, distribution-free:
the ``C+1``-th smallest and the ``C+1``-th largest of those ``m·n`` differences, where ``C``
is the largest ``c`` with ``P(U <= c) <= (1 - confidence) / 2`` for the U statistic under
"no change" — exact (the Gaussian binomial coefficients) up to ``EXACT_LIMIT`` pairs, the
normal approximation with continuity correction above it (conservative in the far tails). Deterministic: the same data give
the same interval, always. Too few runs for the confidence (two against two cannot reach
95 %: the smallest two-sided p is 1/3) give no interval at all (``None``); the caller then
judges the point estimate and says so.

Cost: one sort of ``m·n`` differences per row and metric (225 for 15 runs a side), the
tail of U's distribution cached per ``(m, n, confidence)``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from itertools import repeat
from operator import sub
from statistics import NormalDist

from relgate.core.record import record

__all__ = ["EXACT_LIMIT", "Shift", "critical", "hl_ratio", "shift_interval", "runs_to_resolve", "count_above",
           "wrong_way_samples", "decide"]

EXACT_LIMIT = 3600  # m·n up to this (60 runs a side): U's exact distribution; above: its normal approximation,
# which is conservative in the far tails the false-alarm bound asks for (a narrower c, a wider interval)


@record
class Shift:
    """The candidate against the previous release: the ratio ``candidate / previous`` as an
    estimate and an interval (``low <= ratio <= high``) at ``confidence``."""

    ratio: float
    low: float
    high: float
    confidence: float  # the interval's own coverage (exact U: at least the one asked for)

    @property
    def half_width(self) -> float:
        """Half the interval's width, as a fraction of the ratio 1 (0.021: ±2.1 %)."""
        return (self.high - self.low) / 2


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings give U = 0, 1, … m·n: the coefficients of the
    Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)."""
    size = m * n + 1
    coeff = [0] * size
    coeff[0] = 1
    for i in range(1, m + 1):
        step = n + i  # multiply by (1 - q^(n+i)) …
        for u in range(size - 1, step - 1, -1):
            coeff[u] -= coeff[u - step]
        for u in range(i, size):  # … and divide by (1 - q^i): a running sum with stride i
            coeff[u] += coeff[u - i]
    return tuple(coeff)


@lru_cache(maxsize=256)
def critical(m: int, n: int, confidence: float) -> int | None:
    """The largest ``c`` with ``P(U <= c) <= (1 - confidence) / 2``; ``None`` when even
    ``P(U = 0)`` is larger (too few runs for an interval at that confidence)."""
    if m < 1 or n < 1:
        return None
    tail = (1.0 - confidence) / 2
    if m * n <= EXACT_LIMIT:
        counts = _u_counts(min(m, n), max(m, n))
        total = math.comb(m + n, m)
        limit = tail * total
        seen, c = 0, -1
        for u, k in enumerate(counts):
            seen += k
            if seen > limit:
                break
            c = u
        return c if c >= 0 else None
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    z = NormalDist().inv_cdf(1.0 - tail)
    c = math.floor(m * n / 2 - 0.5 - z * sigma)
    return c if c >= 0 else None


@lru_cache(maxsize=256)
def _achieved(m: int, n: int, c: int) -> float:
    if m * n <= EXACT_LIMIT:
        counts = _u_counts(min(m, n), max(m, n))
        return 1.0 - 2 * sum(counts[: c + 1]) / math.comb(m + n, m)
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    return 1.0 - 2 * NormalDist().cdf((c + 0.5 - m * n / 2) / sigma)


def _logs_or_scaled(previous: Sequence[float], candidate: Sequence[float]) -> tuple[list[float], list[float], bool]:
    """Both samples sorted, as logs (``True``) or, with a value <= 0, divided by the
    previous median (``False``)."""
    ordered, other = sorted(previous), sorted(candidate)
    if ordered[0] > 0 and other[0] > 0:
        return list(map(math.log, ordered)), list(map(math.log, other)), True
    m = len(ordered)
    base = abs(ordered[m // 2] if m % 2 else (ordered[m // 2 - 1] + ordered[m // 2]) / 2) or 1.0
    return [v / base for v in ordered], [v / base for v in other], False


def hl_ratio(xs: list[float], ys: list[float], logs: bool, c: int) -> tuple[float, float, float]:
    """(ratio, low, high) from sorted samples (:func:`_logs_or_scaled`) and U's critical ``c``."""
    # Each row of differences is ascending: the sort merges m runs (timsort), O(mn log m).
    diffs = [y - x for x in reversed(xs) for y in ys]
    diffs.sort()
    total = len(diffs)
    mid = total // 2
    point = diffs[mid] if total % 2 else (diffs[mid - 1] + diffs[mid]) / 2
    lo, hi = diffs[c], diffs[total - 1 - c]
    if logs:
        return math.exp(point), math.exp(lo), math.exp(hi)
    return 1.0 + point, 1.0 + lo, 1.0 + hi


def shift_interval(previous: Sequence[float], candidate: Sequence[float], confidence: float) -> Shift | None:
    """The Hodges–Lehmann ratio and its Mann–Whitney interval; ``None`` with too few runs."""
    m, n = len(previous), len(candidate)
    c = critical(m, n, confidence)
    if c is None:
        return None
    ratio, low, high = hl_ratio(*_logs_or_scaled(previous, candidate), c)
    return Shift(ratio=ratio, low=low, high=high, confidence=_achieved(m, n, c))


def runs_to_resolve(runs: int, half_width: float, target: float) -> int:
    """Runs a side for an interval of ``half_width`` measured at ``runs`` a side to shrink to
    ``target`` (the half-width falls as one over the square root of the runs). Only the width:
    the runs a *decision* needs (a change called at a power, under the false-alarm bound) are
    :func:`relgate.measure.power.runs_needed`, often 25 times as many."""
    if half_width <= target or target <= 0:
        return runs
    return math.ceil(runs * (half_width / target) ** 2)


def count_above(xs: Sequence[float], ys: Sequence[float], t: float) -> int:
    """How many of the ``m·n`` differences ``y - x`` exceed ``t`` (``xs`` sorted): one bisect
    per ``y``, no list of differences."""
    return sum(map(bisect_left, repeat(xs), map(sub, ys, repeat(t))))


def _threshold(move: float, logs: bool, higher: bool) -> float:
    """A threshold on the move the wrong way, as a threshold on the wrong-way difference."""
    if not logs:
        return move
    if higher:
        return -math.log(1.0 - move) if move < 1 else math.inf
    return math.log1p(move)


def wrong_way_samples(xs: list[float], ys: list[float], logs: bool, higher: bool, rerun_above: float,
                      block_above: float) -> tuple[list[float], list[float], float, float]:
    """Sorted samples (:func:`_logs_or_scaled`) turned so that a difference ``y - x`` is the move
    the wrong way (a "higher is better" metric: the sides swapped, ``x - y``), with the two thresholds."""
    if higher:
        xs, ys = ys, xs
    return xs, ys, _threshold(rerun_above, logs, higher), _threshold(block_above, logs, higher)


def decide(xs: Sequence[float], ys: Sequence[float], c: int, rerun_at: float, block_at: float) -> str | None:
    """The policy on the interval ``[(c+1)-th smallest, (c+1)-th largest]`` of the wrong-way
    differences, by counting instead of sorting them: ``pass`` (the whole interval within
    ``rerun_at``), ``block`` (wholly beyond ``block_at``), ``slower`` (wholly between), or
    ``None`` (it straddles a threshold)."""
    total = len(xs) * len(ys)
    above_r = count_above(xs, ys, rerun_at)
    if above_r <= c:
        return "pass"
    if total - above_r > c:  # the lower end is within rerun_at: neither slower nor block
        return None
    above_b = above_r if block_at == rerun_at else count_above(xs, ys, block_at)
    if total - above_b <= c:
        return "block"
    return "slower" if above_b <= c else None
