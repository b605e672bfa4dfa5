"""The false-alarm bound of a board: how sure each look at each row (and at the suite) must be
so that identical code gets any ``slower`` or ``block`` on the board with probability at most
``false_alarm`` (1 % by default), whatever the noise, the number of rows × metrics and the
number of pooled batches.

A ``slower`` or ``block`` on identical code needs an interval whose lower end (the move the
wrong way) lies above 0, the true move; more generally a false call needs the lower end above
the true move. The Mann–Whitney interval at two-sided confidence ``1 - 2a`` misses on that
side with probability at most ``a``, exactly and for any continuous noise (a rank statistic).
The budget is split by a union bound (Bonferroni), so it holds however the looks and rows
correlate:

- between the suite and the rows: the suite (one test per metric) gets ``SUITE_SHARE`` of it
  when the board has one, the rows × metrics the rest, evenly;
- between the looks (the pooled batches 1 … ``max_batches``): spent as ``a · (k/K)²`` by look
  ``k`` of ``K`` (an alpha-spending function of the power family), so look ``k`` gets
  ``(2k - 1) / K²`` of a test's share: the first batches are judged strictly, the last pool,
  where most of the information is, gets the most.

The sum over every test and look is ``false_alarm``: the bound. Point estimates (one run a
side) have no interval and are outside it; the output says so.
"""

from __future__ import annotations

import math

from relgate.core.record import record

__all__ = ["SUITE_SHARE", "Bound", "board_bounds", "percent"]

SUITE_SHARE = 0.8  # of the board's budget, for the suite (when the board has one)


@record
class Bound:
    """One family of tests on a board (its rows × metrics, or its suite's metrics)."""

    false_alarm: float  # the board's whole budget
    share: float  # this family's part of it
    tests: int  # tests in the family (rows × metrics judged by an interval; or suite metrics)
    looks: int  # max_batches

    def alpha(self, look: int) -> float:
        """The one-sided error one test may spend at ``look`` (1-based)."""
        k = min(max(look, 1), self.looks)
        return self.false_alarm * self.share / max(self.tests, 1) * (2 * k - 1) / self.looks ** 2

    def confidence(self, look: int) -> float:
        """The two-sided confidence of the interval judged at ``look``."""
        return 1.0 - 2.0 * self.alpha(look)

    def describe(self) -> str:
        share = "" if self.share >= 1 else f"{self.share:.0%} of "
        return (f"false alarm ≤ {self.false_alarm:g}: {share}it over {self.tests} test{'s' if self.tests != 1 else ''}"
                f" × {self.looks} look{'s' if self.looks != 1 else ''}")


def board_bounds(false_alarm: float, row_tests: int, suite_tests: int, looks: int) -> tuple[Bound, Bound | None]:
    """(rows, suite) of a board with ``row_tests`` rows × metrics and ``suite_tests`` suite
    metrics (0: no suite); the rows get everything when there is no suite."""
    if suite_tests <= 0:
        return Bound(false_alarm=false_alarm, share=1.0, tests=max(row_tests, 1), looks=looks), None
    return (Bound(false_alarm=false_alarm, share=1.0 - SUITE_SHARE, tests=max(row_tests, 1), looks=looks),
            Bound(false_alarm=false_alarm, share=SUITE_SHARE, tests=suite_tests, looks=looks))


def percent(confidence: float) -> str:
    """``99.9961%``: enough digits that the miss shows (a confidence is never printed as 100 %)."""
    miss = (1.0 - confidence) * 100
    if miss >= 1 or miss <= 0:
        return f"{confidence * 100:.0f}%"
    return f"{confidence * 100:.{math.ceil(-math.log10(miss)) + 1}f}%"
