"""The counts a test runner prints, read by relgate.run.testcounts. The outputs below are what
cargo 1.8x (libtest), pytest 9 and ctest 3.25 printed on this machine for the shapes named
(tests/test_no_vacuous_pass.py runs the real tools end to end)."""

from __future__ import annotations

import pytest

from relgate.core.verdict import Verdict
from relgate.run.testcounts import CountScanner, judge_counts, parse_max_skipped

CARGO_CFG_OUT = """   Compiling c1 v0.1.0 (/tmp/c1)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.79s
     Running tests/g.rs (target/debug/deps/g-eb175b64a4f69974)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

"""
CARGO_NO_IGNORED_ARM = """running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s
"""
CARGO_ALL = """     Running unittests src/lib.rs (target/debug/deps/c1-e3dc88bf7acb958c)

running 1 test
test tests::it_works ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/h.rs (target/debug/deps/h-9e4dd00c784f69c4)

running 2 tests
test c ... ignored
test b ... ok

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests c1

running 4 tests
test src/lib.rs - add (line 3) ... ok

test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s

"""
CARGO_ONLY_DOCTESTS = """     Running unittests src/lib.rs (target/debug/deps/c1-e3dc88bf7acb958c)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests c1

running 2 tests
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
"""
PYTEST_SKIPS = ".s                                                                       [100%]\n" \
               "1 passed, 1 skipped in 0.43s\n"
PYTEST_BANNER = "========================= 39 passed, 41 skipped in 0.44s =========================\n"
PYTEST_NONE = "============================ no tests ran in 0.36s =============================\n"
PYTEST_DESELECTED = "\n2 deselected in 0.41s\n"
CTEST = """1/3 Test #1: ok1 ..............................   Passed    0.00 sec
    Start 2: skip1
2/3 Test #2: skip1 ............................***Skipped   0.00 sec
    Start 3: dis
3/3 Test #3: dis ..............................***Not Run (Disabled)   0.00 sec

100% tests passed, 0 tests failed out of 2

The following tests did not run:
\t  2 - skip1 (Skipped)
\t  3 - dis (Disabled)
"""
CTEST_NONE = "Test project /tmp/k2/b\nNo tests were found!!!\n"
# ctest 4.4 (the H100 machine's, and the cmake wheel's) names the failed only when there are some
CTEST4_ONE = """Test project /tmp/cm4/p/b
    Start 1: ok
1/1 Test #1: ok ...............................   Passed    0.00 sec

100% tests passed out of 1

Total Test time (real) =   0.00 sec
"""
CTEST4_MIXED = """2/4 Test #2: bad ..............................***Failed    0.00 sec
    Start 3: skip
3/4 Test #3: skip .............................***Skipped   0.00 sec
    Start 4: off
4/4 Test #4: off ..............................***Not Run (Disabled)   0.00 sec

67% tests passed, 1 tests failed out of 3
"""


def _read(text: str, chunk: int) -> object:
    scanner = CountScanner()
    for i in range(0, len(text), chunk):
        scanner.feed(text[i:i + chunk])
    return scanner.finish()


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
@pytest.mark.parametrize(("text", "runner", "passed", "failed", "skipped"), [
    (CARGO_CFG_OUT, "cargo", 0, 0, 0),
    (CARGO_NO_IGNORED_ARM, "cargo", 0, 0, 0),
    (CARGO_ALL, "cargo", 2, 0, 1),  # the 4 doc-tests apart
    (CARGO_ONLY_DOCTESTS, "cargo", 0, 0, 0),
    (PYTEST_SKIPS, "pytest", 1, 0, 1),
    (PYTEST_BANNER, "pytest", 39, 0, 41),
    (PYTEST_NONE, "pytest", 0, 0, 0),
    (PYTEST_DESELECTED, "pytest", 0, 0, 0),
    (CTEST, "ctest", 1, 0, 2),
    (CTEST_NONE, "ctest", 0, 0, 0),
    (CTEST4_ONE, "ctest", 1, 0, 0),
    (CTEST4_MIXED, "ctest", 1, 1, 2),  # skipped: the Skipped and the Disabled
])
def test_counts_are_read_whatever_the_chunking(text: str, runner: str, passed: int, failed: int, skipped: int,
                                               chunk: int) -> None:
    counts = _read(text, chunk)
    assert counts is not None
    assert (counts.runner, counts.passed, counts.failed, counts.skipped) == (runner, passed, failed, skipped)


def test_output_of_no_runner_is_not_read() -> None:
    assert _read("cc -O2 -o build/engine src/engine.c\nall 17 kernel cases passed\n", 1 << 20) is None
    assert _read("", 1) is None


@pytest.mark.parametrize(("text", "command", "exit_code", "expected"), [
    (CARGO_CFG_OUT, "cargo test --test g", 0,
     (Verdict.NOT_RUN, "0 tests ran (cargo: 1 test binary ran 0 tests (a file cfg'd out by a feature the command "
                       "does not enable, or one with no #[test]))")),
    (CARGO_NO_IGNORED_ARM, "cargo test --test c -- --ignored", 0,
     (Verdict.NOT_RUN, "0 tests ran (cargo: -- --ignored and the target has no ignored test (3 not ignored, "
                       "filtered out))")),
    (CARGO_ONLY_DOCTESTS, "cargo test", 0,
     (Verdict.NOT_RUN, "0 tests ran (cargo: 1 test binary ran 0 tests (a file cfg'd out by a feature the command "
                       "does not enable, or one with no #[test]); 2 doc-tests ran, counted apart)")),
    (CARGO_ALL, "cargo test", 0, None),
    (PYTEST_NONE, "pytest", 5, (Verdict.NOT_RUN, "0 tests ran (pytest exit 5: no test collected)")),
    (PYTEST_DESELECTED, "pytest -k x", 5, (Verdict.NOT_RUN, "0 tests ran (pytest exit 5: no test collected, "
                                                            "2 deselected)")),
    (PYTEST_SKIPS, "pytest", 1, None),  # a failing run stays as it was judged
    (CTEST_NONE, "ctest", 0, (Verdict.NOT_RUN, "0 tests ran (ctest: No tests were found)")),
    ("test result: ok. 0 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out\n", "cargo test", 0,
     (Verdict.NOT_RUN, "all 3 tests skipped (cargo)")),
])
def test_what_the_counts_decide(text: str, command: str, exit_code: int, expected: object) -> None:
    assert judge_counts(_read(text, 1 << 20), command=command, exit_code=exit_code) == expected


@pytest.mark.parametrize(("limit", "verdict"), [(0, Verdict.FAIL), (40, Verdict.FAIL), (41, None),
                                                ("50%", Verdict.FAIL), ("52%", None), ("100%", None)])
def test_max_skipped_as_a_count_or_a_share(limit: object, verdict: object) -> None:
    parsed = parse_max_skipped(limit)
    assert not isinstance(parsed, str)
    ruled = judge_counts(_read(PYTEST_BANNER, 1 << 20), command="pytest", exit_code=0, max_skipped=parsed)
    assert (ruled[0] if ruled else None) == verdict
    if ruled:
        assert ruled[1] == f"41 of 80 tests skipped, above max_skipped = {limit}"


@pytest.mark.parametrize(("value", "message"), [
    (-1, "a count of skipped tests is 0 or more"), (True, 'expected a count (an integer, 0 or more) or a share ("10%")'),
    ("150%", "expected a share like \"10%\" (0 to 100), got '150%'"), (1.5, 'expected a count (an integer, 0 or more) '
                                                                           'or a share ("10%")')])
def test_a_bad_max_skipped_says_why(value: object, message: str) -> None:
    assert parse_max_skipped(value) == message
