"""Output in bounded memory: ``expect_output`` searched as the output streams, and the
optional ``max_log_bytes`` cap, which cuts the log with a marker, never silently."""

from __future__ import annotations

import random
import re

import pytest

from conftest import Project
from relgate.run import expect
from relgate.run.expect import OutputMatcher


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expect, "WINDOW", 50)
    monkeypatch.setattr(expect, "OVERLAP", 20)


@pytest.mark.usefixtures("small_windows")
def test_streamed_matching_agrees_with_re_search_on_the_whole_output() -> None:
    rng = random.Random(7)
    patterns = ["^$", "^ab$", "done$", "^done\\nab", "b\\n\\na", "^x", "y$", "a\\nb", "^b$\\n^a", "^Usage: t"]
    for _ in range(2000):
        lines = [rng.choice(["a", "b", "", "ab", "ba", "done", "x y", "Usage: tiny"]) for _ in range(rng.randint(0, 30))]
        out = "\n".join(lines) + rng.choice(["", "\n"])
        pattern = rng.choice(patterns)
        matcher = OutputMatcher(pattern)
        pos = 0
        while pos < len(out):
            n = rng.randint(1, 12)
            matcher.feed(out[pos:pos + n])
            pos += n
        assert matcher.finish() == bool(re.search(pattern, out, re.MULTILINE)), (pattern, out)


@pytest.mark.usefixtures("small_windows")
def test_the_matcher_keeps_at_most_one_window() -> None:
    matcher = OutputMatcher("^never$")
    for i in range(10_000):
        matcher.feed(f"line {i}\n")
        assert len(matcher._carry) + matcher._pending_len <= 2 * expect.WINDOW + expect.OVERLAP + 20
    assert matcher.finish() is False


def test_max_log_bytes_cuts_the_log_with_a_marker_and_the_step_still_sees_everything(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "lanes.toml").unlink()
    (tinyinfer.manifests / "builds.toml").write_text(
        '[[check]]\nname = "chatty"\nshell = true\nmax_log_bytes = 8192\nexpect_output = "^the end$"\n'
        'run = "for i in $(seq 1 5000); do echo line $i; done; echo the end"\n')
    done = tinyinfer.relgate("host")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = tinyinfer.ledger_steps()
    row = next(r for r in rows if r["step"] == "chatty")
    assert row["verdict"] == "pass"  # "the end" came after the cut; the matcher saw it
    log = (tinyinfer.home / row["log_path"]).read_text()
    assert "# relgate: log cut at max_log_bytes = 8192" in log
    assert "bytes of output past max_log_bytes were not kept" in log
    assert "line 4999" not in log and len(log.encode()) < 8192 + 400
