"""The runs a decision needs: the power of the very test a verdict uses.

A row (or the suite) is ``block`` when the lower end of its Mann–Whitney interval lies beyond
``block_above``: when ``U_t``, the count of the ``m·n`` wrong-way differences ``y - x`` at or
below the threshold ``t``, is at most U's critical value ``c`` at the look's confidence
(:mod:`relgate.measure.bound`). With log-normal run-to-run noise ``σ`` (``log`` of a run is
normal) and a true move ``δ`` beyond ``t``, ``U_t`` counts pairs with ``(Y - X) <= -δ`` where
``Y - X ~ N(0, 2σ²)``; its mean is ``m·n·p`` and its variance
``m·n·(p(1-p) + (m + n - 2)(q - p²))`` with ``p = Φ(-δ/(σ√2))`` and
``q = P(Y1 - X <= -δ, Y2 - X <= -δ) = ∫ φ(u) Φ(u - δ/σ)² du`` (the two pairs share ``X``),
so the power is ``P(U_t <= c) ≈ Φ((c + ½ - m·n·p) / sd)``. ``slower`` also needs the upper
end within ``block_above``; its power is ``P(lower end beyond rerun_above) - P(upper end
beyond block_above)``. The runs a decision needs is the smallest ``n`` a side whose one
batch reaches the power asked for; the tests check it against 1,000 seeded batches.

``σ`` comes from the board's A/A noise floor (a 95 % half-width ``w`` at ``k`` runs a side:
``σ ≈ w / (z·√(π/3)·√(2/k))``, the Hodges–Lehmann shift's standard error) or from the
batches at hand (each side's runs around their own batch's mean, in logs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from relgate.measure.stats import critical

__all__ = ["power_beyond", "decision_power", "runs_needed", "sigma_of_runs", "sigma_of_half_width",
           "smallest_change", "z_of", "HL_FACTOR"]

_N = NormalDist()
HL_FACTOR = math.sqrt(math.pi / 3)  # the Hodges–Lehmann shift's standard error over the mean's, normal noise


@lru_cache(maxsize=4096)
def _pq(d: float) -> tuple[float, float]:
    """``p`` and ``q`` for a move ``d`` (in σ) beyond the threshold (Simpson's rule, 400 steps)."""
    p = _N.cdf(-d / math.sqrt(2))
    lo, hi, steps = -9.0, 9.0, 400
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps + 1):
        u = lo + i * h
        w = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += w * _N.pdf(u) * _N.cdf(u - d) ** 2
    return p, total * h / 3


def power_beyond(m: int, n: int, d: float, c: int | None) -> float:
    """P(the interval's lower end lies beyond a threshold) for a true move ``d`` σ beyond it
    (``d`` < 0: short of it), ``m`` against ``n`` runs, U's critical value ``c``."""
    if c is None:
        return 0.0
    p, q = _pq(round(d, 6))
    mn = m * n
    var = mn * (p * (1 - p) + (m + n - 2) * max(q - p * p, 0.0))
    if var <= 0:
        return 1.0 if mn * p <= c else 0.0
    return _N.cdf((c + 0.5 - mn * p) / math.sqrt(var))


def _log_threshold(move: float, higher: bool) -> float:
    return (-math.log(1 - move) if move < 1 else math.inf) if higher else math.log1p(move)


def decision_power(verdict: str, change: float, sigma: float, m: int, n: int, confidence: float, *,
                   rerun_above: float, block_above: float, higher: bool = False) -> float:
    """The chance that one look at ``m`` against ``n`` runs, at ``confidence``, calls a true
    ``change`` (0.12: 12 % the wrong way) ``block`` or ``slower`` with noise ``sigma`` (logs)."""
    if sigma <= 0:
        return 1.0
    true = _log_threshold(change, higher)
    c = critical(m, n, confidence)
    t_r, t_b = _log_threshold(rerun_above, higher), _log_threshold(block_above, higher)
    if verdict == "block":
        return power_beyond(m, n, (true - t_b) / sigma, c)
    beyond_r = power_beyond(m, n, (true - t_r) / sigma, c)
    upper_beyond_b = 1.0 - power_beyond(m, n, (t_b - true) / sigma, c)  # mirror: the upper end beyond block_above
    return max(beyond_r - upper_beyond_b, 0.0)


def runs_needed(verdict: str, change: float, sigma: float, confidence: float, power: float, *, rerun_above: float,
                block_above: float, higher: bool = False, most: int = 1_000_000) -> tuple[int, float] | None:
    """The fewest runs a side (``n`` against ``n``, one batch) whose interval at ``confidence``
    calls ``change`` ``verdict`` with at least ``power``, and the power it has; ``None``: the
    change is not beyond its threshold (or not within ``block_above`` for ``slower``), or more
    than ``most`` runs would be needed."""
    threshold = block_above if verdict == "block" else rerun_above
    if change <= threshold or (verdict == "slower" and change >= block_above):
        return None

    def got(k: int) -> float:
        return decision_power(verdict, change, sigma, k, k, confidence, rerun_above=rerun_above,
                              block_above=block_above, higher=higher)

    hi = 2
    while got(hi) < power:
        hi *= 2
        if hi > most:
            return None
    lo = hi // 2
    while hi - lo > 1:  # the smallest n that reaches it (the power rises with n, up to U's steps)
        mid = (lo + hi) // 2
        if got(mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi, got(hi)


@lru_cache(maxsize=256)
def z_of(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (cached: a board asks for a few)."""
    return _N.inv_cdf(1 - (1 - confidence) / 2)


def smallest_change(m: int, n: int, sigma: float, confidence: float, power: float, *, rerun_above: float) -> float:
    """About the smallest true change that ``m`` against ``n`` runs call beyond ``rerun_above``
    with ``power`` at ``confidence`` (normal approximation of the Hodges–Lehmann shift)."""
    z = z_of(confidence) + z_of(2 * power - 1)  # one-sided power: the two-sided quantile of 2p - 1
    se = sigma * HL_FACTOR * math.sqrt(1 / m + 1 / n)
    return math.expm1(math.log1p(rerun_above) + z * se)


def sigma_of_runs(batches: Sequence[Sequence[float]]) -> float | None:
    """The run-to-run noise (σ of the logs) within batches: each batch around its own mean."""
    squares = 0.0
    dof = 0
    for runs in batches:
        logs = list(map(math.log, filter((0.0).__lt__, runs)))
        if len(logs) >= 2:
            mean = math.fsum(logs) / len(logs)
            squares += math.fsum([(x - mean) ** 2 for x in logs])
            dof += len(logs) - 1
    return math.sqrt(squares / dof) if dof else None


def sigma_of_half_width(half_width: float, runs: int, confidence: float = 0.95) -> float:
    """σ from an interval's half-width (a fraction, ±) at ``runs`` a side and ``confidence``."""
    z = _N.inv_cdf(1 - (1 - confidence) / 2)
    return math.log1p(half_width) / (z * HL_FACTOR * math.sqrt(2 / max(runs, 1)))
