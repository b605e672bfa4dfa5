"""relgate.core.forked: pure work spread over forked children, answers in order, a failed child's
chunk computed again here, children ended when this process fails; and the compare it speeds up
judges every row as one process does."""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time

import pytest

from relgate.core import forked

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children are forked on Linux only")


def _squares_and_pids(chunk):
    return [(x * x, os.getpid()) for x in chunk]


def test_the_answers_come_back_in_order_from_several_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "workers_for", lambda items, per: 3)
    items = list(range(1000))
    got = forked.map_chunks(_squares_and_pids, items, min_per_worker=1)
    assert [v for v, _ in got] == [x * x for x in items]
    assert len({pid for _, pid in got}) == 3  # three processes computed them
    assert got[0][1] == os.getpid()  # the first chunk here


def test_a_short_list_or_another_thread_keeps_the_work_here() -> None:
    assert forked.workers_for(10, 100) == 1
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert forked.workers_for(10**6, 1) == 1  # a fork would copy this thread only
    finally:
        stop.set()
        other.join()


def test_a_child_that_fails_costs_only_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child's exception (or its death) is not an answer: its chunk is computed again here."""
    monkeypatch.setattr(forked, "workers_for", lambda items, per: 2)
    here = os.getpid()

    def fails_in_a_child(chunk):
        if os.getpid() != here:
            raise RuntimeError("a child's failure")
        return _squares_and_pids(chunk)

    got = forked.map_chunks(fails_in_a_child, list(range(100)), min_per_worker=1)
    assert got == [(x * x, here) for x in range(100)]


def test_a_failure_here_ends_the_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "workers_for", lambda items, per: 3)
    here = os.getpid()
    started: list[int] = []
    fork = os.fork

    def recording_fork() -> int:
        pid = fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recording_fork)

    def fails_here(chunk):
        if os.getpid() != here:
            time.sleep(600)  # a child still at work when this process fails
        raise ValueError("this process's failure")

    with pytest.raises(ValueError, match="this process's failure"):
        forked.map_chunks(fails_here, list(range(30)), min_per_worker=1)
    assert len(started) == 2
    for pid in started:  # ended and reaped, not left sleeping
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_compare_judges_every_row_on_every_core_as_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from relgate.manifest.measures import parse_measurements
    from relgate.measure.board import compare_samples
    from relgate.measure.samples import Samples

    table = {"target": "bench", "output": "stdout", "format": "csv", "key": ["n"],
             "metrics": {"t": "lower", "rate": "higher"}, "metadata": [], "runs": 15}
    spec = parse_measurements({"measure": {"speed": table}}, path=Path("measurements.toml")).measures["speed"]
    rng = random.Random(7)
    sigma = math.sqrt(math.log(1 + 0.02 ** 2))  # 2 % noise: under the false-alarm bound every kind of row

    def batch(shift: float, runs: int) -> Samples:
        values = {(str(i),): {"t": tuple(rng.lognormvariate(shift * (i % 3), sigma) for _ in range(runs)),
                              "rate": tuple(rng.lognormvariate(0, sigma) for _ in range(runs))}
                  for i in range(3000)}
        return Samples(batch=None, values=values, metadata={k: {} for k in values}, counted=runs)

    previous, candidates = [batch(0.0, 15)], [batch(0.06, 15), batch(0.06, 15)]
    monkeypatch.setattr(forked, "workers_for", lambda items, per: 1)
    alone = compare_samples(spec, "B", previous, candidates)
    monkeypatch.setattr(forked, "workers_for", lambda items, per: 2)
    spread = compare_samples(spec, "B", previous, candidates)
    assert spread == alone
    assert len(alone) == 6000 and {r.verdict for r in alone} >= {"pass", "rerun", "block"}  # every kind of row
