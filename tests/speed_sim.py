"""Seeded synthetic boards for the speed statistics' tests: lognormal runs, 15 a batch.

A board has ``rows`` rows of one "lower is better" metric; batch ``k`` measures both sides
again (``runs`` runs each), as ``nox -s compare -- --previous REF`` does, and the previous
side's batches 1 … k are pooled against the candidate's 1 … k. The whole board is judged once
with every batch: a row's (and the suite's) verdict is the first look that decides it, so
this is the verdict measuring batch after batch until nothing is ``rerun`` would stop at.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import repeat
from operator import mul
from pathlib import Path
from statistics import NormalDist

from relgate.manifest.measures import MeasureSpec, parse_measurements
from relgate.measure.board import judge_board
from relgate.measure.results import BoardComparison
from relgate.measure.samples import Samples

__all__ = ["spec", "sigma", "normals", "batch_of", "batch", "judge_board_of", "simulate_boards", "simulate_board"]


def spec(**extra: object) -> MeasureSpec:
    table = {"target": "bench", "output": "stdout", "format": "csv", "key": ["n"], "metrics": {"t": "lower"},
             "metadata": [], "runs": 15, **extra}
    return parse_measurements({"measure": {"speed": table}}, path=Path("measurements.toml")).measures["speed"]


def sigma(cv: float) -> float:
    """The σ of the logs of a lognormal with this coefficient of variation (the "noise")."""
    return math.sqrt(math.log(1 + cv * cv))


def normals(rng: random.Random, rows: int, runs: int) -> list[list[float]]:
    """``rows`` × ``runs`` standard normal draws (the inverse CDF of uniforms: exact, and faster
    in pure Python than ``random.gauss``)."""
    inv, r = NormalDist().inv_cdf, rng.random
    return [[inv(r() or 0.5) for _ in range(runs)] for _ in range(rows)]


def batch_of(z: Sequence[Sequence[float]], shifts: Sequence[float], s: float) -> Samples:
    """One side's batch: row ``i`` has the runs ``exp(shift_i + s·z_i)``."""
    exp = math.exp
    values = {(str(i),): {"t": tuple(map(mul, repeat(exp(shift)), map(exp, map(mul, repeat(s), zs))))}
              for i, (shift, zs) in enumerate(zip(shifts, z))}
    return Samples(batch=None, values=values, metadata={}, counted=len(z[0]))  # type: ignore[arg-type]


def batch(rng: random.Random, shifts: Sequence[float], s: float, runs: int) -> Samples:
    return batch_of(normals(rng, len(shifts), runs), shifts, s)


def judge_board_of(ms: MeasureSpec, prevs: Sequence[Samples], cands: Sequence[Samples]) -> BoardComparison:
    judged = judge_board(ms, "B", prevs, cands, previous_for=lambda j: prevs[: j + 1], endpoints=False)
    return BoardComparison(board="B", previous=None, candidates=(), **judged)


def simulate_boards(ms: MeasureSpec, rng: random.Random, rows: int, slower: float | Sequence[float],
                    cvs: Sequence[float], batches: int | None = None, runs: int = 15) -> list[BoardComparison]:
    """One board measured ``batches`` times (default ``max_batches``), judged at each noise of
    ``cvs`` with the same draws (common random numbers: the noise levels differ only in σ)."""
    per = [slower] * rows if isinstance(slower, (int, float)) else list(slower)
    shifts = [math.log1p(x) for x in per]
    k = batches or ms.max_batches
    zp = [normals(rng, rows, runs) for _ in range(k)]
    zc = [normals(rng, rows, runs) for _ in range(k)]
    out = []
    for cv in cvs:
        s = sigma(cv)
        out.append(judge_board_of(ms, [batch_of(z, [0.0] * rows, s) for z in zp], [batch_of(z, shifts, s) for z in zc]))
    return out


def simulate_board(ms: MeasureSpec, rng: random.Random, rows: int, slower: float | Sequence[float], cv: float,
                   batches: int | None = None, runs: int = 15) -> BoardComparison:
    return simulate_boards(ms, rng, rows, slower, [cv], batches, runs)[0]
