"""How many tests a step's runner executed, read from the runner's own output; and the rule
that a step which executed none is not a pass.

Three runners print a summary relgate can read (each line below is one they really print,
see tests/test_testcounts.py):

- cargo (libtest): every test binary prints ``running N tests`` and ``test result: ok. P
  passed; F failed; I ignored; M measured; X filtered out; …``; they are summed, the
  doc-tests (after ``Doc-tests NAME``) apart. A file cfg'd out by a feature runs 0 tests;
  ``-- --ignored`` on a target with no ignored arm runs 0 and filters the rest out.
- pytest: the last summary line (``39 passed, 41 skipped in 0.40s``, ``no tests ran in …``)
  and its exit status 5 (nothing collected).
- ctest: ``N% tests passed, F tests failed out of T`` (ctest 4: ``N% tests passed out of T``
  when none failed), each test's ``***Skipped`` and
  ``***Not Run (Disabled)``, and ``No tests were found!!!``.

A step whose output holds none of these (a plain script, a build) is judged as before.
The scanner keeps one partial line (at most 4 KiB) whatever the output's size.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from relgate.core.counts import TestCounts, parse_max_skipped, skip_limit_text
from relgate.core.verdict import Verdict

__all__ = ["CountScanner", "judge_counts", "parse_max_skipped"]

_CARGO_SECTION = re.compile(r"^\s+(Running|Doc-tests)\s")
_CARGO_RESULT = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; "
                           r"(\d+) measured; (\d+) filtered out")
_PYTEST_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+|no tests ran)(?: in [\d.]+s.*?)?\s*=*\s*$")
_PYTEST_PART = re.compile(r"(\d+) ([a-z]+)")
# ctest 3.x always names the failed ("100% tests passed, 0 tests failed out of 2"); ctest 4 only
# when there are some ("100% tests passed out of 1", "67% tests passed, 1 tests failed out of 3").
_CTEST_SUMMARY = re.compile(r"^\d+% tests passed(?:, (\d+) tests? failed)? out of (\d+)")
_CTEST_ONE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: .*?\*\*\*(Skipped|Not Run)(.*)$")
_CTEST_NONE = "No tests were found!!!"
_CHEAP = ("test", "Test", "Running", "passed", "skipped", "failed", "deselected", "error", "xfail", "xpass")


class CountScanner:
    """Feed the output of a step as it arrives; :meth:`finish` gives the counts, or None when
    no runner's summary was in it."""

    def __init__(self) -> None:
        self._buffer = ""
        self._doc = False  # cargo: inside a Doc-tests section
        self._cargo = [0, 0, 0, 0, 0, 0, 0, 0]  # passed failed ignored measured filtered, doc p f i
        self._cargo_binaries = 0
        self._cargo_seen = False
        self._pytest: TestCounts | None = None  # the last summary line wins
        self._ctest_total: int | None = None
        self._ctest_failed = 0
        self._ctest_skipped = 0  # counted in "out of T" (Skipped)
        self._ctest_disabled = 0  # not counted there
        self._ctest_none = False

    def feed(self, chunk: str) -> None:
        text = self._buffer + chunk
        if not any(word in text for word in _CHEAP):
            self._buffer = text[text.rfind("\n") + 1:][-4096:]
            return
        lines = text.split("\n")
        self._buffer = lines.pop()[-4096:]
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        line = line.rstrip("\r")
        section = _CARGO_SECTION.match(line)
        if section:
            self._doc = section.group(1) == "Doc-tests"
            return
        result = _CARGO_RESULT.match(line)
        if result:
            p, f, i, m, x = (int(g) for g in result.groups())
            self._cargo_seen = True
            if self._doc:
                self._cargo[5] += p
                self._cargo[6] += f
                self._cargo[7] += i
            else:
                self._cargo_binaries += 1
                for index, value in enumerate((p, f, i, m, x)):
                    self._cargo[index] += value
            return
        if line.startswith(_CTEST_NONE):
            self._ctest_none = True
            return
        ctest = _CTEST_SUMMARY.match(line)
        if ctest:
            self._ctest_failed, self._ctest_total = int(ctest.group(1) or 0), int(ctest.group(2))
            return
        one = _CTEST_ONE.match(line)
        if one:  # a Not Run that is not Disabled (a missing executable) is one of ctest's failures
            if one.group(1) == "Skipped":
                self._ctest_skipped += 1
            elif "Disabled" in one.group(2):
                self._ctest_disabled += 1
            return
        if "passed" in line or "no tests ran" in line or " skipped" in line or " failed" in line \
                or "deselected" in line or "error" in line:
            summary = _PYTEST_SUMMARY.match(line.strip())
            if summary:
                self._pytest = _pytest_counts(summary.group(1))

    def finish(self) -> TestCounts | None:
        if self._buffer:
            self._line(self._buffer)
            self._buffer = ""
        if self._cargo_seen:
            p, f, i, m, x, dp, df, di = self._cargo
            return TestCounts(runner="cargo", passed=p + m, failed=f, skipped=i, filtered=x, doc_passed=dp,
                              doc_failed=df, doc_skipped=di, binaries=self._cargo_binaries)
        if self._ctest_total is not None:
            ran_or_skipped = self._ctest_total
            passed = max(ran_or_skipped - self._ctest_failed - self._ctest_skipped, 0)
            return TestCounts(runner="ctest", passed=passed, failed=self._ctest_failed,
                              skipped=self._ctest_skipped + self._ctest_disabled)
        if self._ctest_none:
            return TestCounts(runner="ctest", note="ctest: No tests were found")
        return self._pytest


def _pytest_counts(summary: str) -> TestCounts:
    if summary == "no tests ran":
        return TestCounts(runner="pytest", note="pytest: no tests ran")
    found: dict[str, int] = {}
    for number, word in _PYTEST_PART.findall(summary):
        found[word] = found.get(word, 0) + int(number)
    passed = found.get("passed", 0) + found.get("xfailed", 0) + found.get("xpassed", 0)
    failed = found.get("failed", 0) + found.get("error", 0) + found.get("errors", 0)
    return TestCounts(runner="pytest", passed=passed, failed=failed, skipped=found.get("skipped", 0),
                      filtered=found.get("deselected", 0))


def _zero_reason(counts: TestCounts, argv: str) -> str:
    if counts.note:
        return counts.note
    if counts.runner == "cargo":
        if "--ignored" in argv.split() and counts.filtered:
            return (f"cargo: -- --ignored and the target has no ignored test ({counts.filtered} not ignored, "
                    "filtered out)")
        if counts.filtered:
            return f"cargo: a name filter left every test out ({counts.filtered} filtered out)"
        where = f"{counts.binaries} test binar{'y' if counts.binaries == 1 else 'ies'}"
        return (f"cargo: {where} ran 0 tests (a file cfg'd out by a feature the command does not enable, "
                "or one with no #[test])")
    if counts.runner == "pytest" and counts.filtered:
        return f"pytest: every test deselected ({counts.filtered})"
    return f"{counts.runner}: no test ran"


def judge_counts(counts: TestCounts | None, *, command: str, exit_code: int | None,
                 max_skipped: tuple[int | None, float | None] | None = None,
                 ) -> tuple[Verdict, str] | None:
    """The verdict the counts impose on a step that would otherwise pass (or, for pytest's
    exit 5, fail), or None when they change nothing. ``command`` is the step's last command."""
    if counts is None:
        return None
    if exit_code not in (0, None):
        if counts.runner == "pytest" and exit_code == 5 and counts.ran == 0:
            more = f", {counts.filtered} deselected" if counts.filtered else ""
            return Verdict.NOT_RUN, f"0 tests ran (pytest exit 5: no test collected{more})"
        return None
    if counts.ran == 0 and counts.skipped == 0:
        docs = counts.doc_passed + counts.doc_failed
        apart = f"; {docs} doc-test{'' if docs == 1 else 's'} ran, counted apart" if docs else ""
        return Verdict.NOT_RUN, f"0 tests ran ({_zero_reason(counts, command)}{apart})"
    if counts.ran == 0:
        return Verdict.NOT_RUN, f"all {counts.skipped} tests skipped ({counts.runner})"
    if max_skipped is not None and counts.skipped:
        count, share = max_skipped
        over = counts.skipped > count if count is not None else counts.skipped > (share or 0) * counts.total
        if over:
            return Verdict.FAIL, (f"{counts.skipped} of {counts.total} tests skipped, above max_skipped = "
                                  f"{skip_limit_text(max_skipped)}")
    return None


def last_command(commands: Sequence[str]) -> str:
    return commands[-1] if commands else ""
