"""Hostile probes, round four (issue 36), the speed item: a vanished or renamed row, values no
time or rate can have, a compare that compared nothing, the same file added by six processes
at once, repeated keys, and the caller's environment in the --reuse key. Real relgate
processes on a real git repository of the C example, a real ledger."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_signoff import BASELINE, BOARD, CHECKLIST, SPEED, _add, _csv, _ok, _signoff, _status

from conftest import Project, ledger_of

MEASURE_ITEM = """
[[item]]
id = "speed"
title = "No speed regression"
auto = "measure:speed"
"""


@pytest.fixture
def project(tinyinfer: Project) -> Project:
    (tinyinfer.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD) + MEASURE_ITEM)
    (tinyinfer.manifests / "measurements.toml").write_text(SPEED.format())
    return tinyinfer


def _release(project: Project, tmp: Path) -> None:
    _add(project, _csv(tmp, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--release", "0.2.0")


@pytest.mark.parametrize("candidate", [
    "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes\n512,512,1000,128,50,1048576\n",
    "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes\n"
    "512,512,1000,128,50,1048576\n4097,4096,800,128,40,8388608\n",
], ids=["dropped", "renamed"])
def test_a_row_the_candidate_dropped_or_renamed_is_missing_and_blocks(project: Project, tmp_path: Path,
                                                                      candidate: str) -> None:
    _release(project, tmp_path)
    _add(project, _csv(tmp_path, "c.csv", candidate), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert f"speed on {BOARD}: missing: 3 row × metrics of the previous release" in done.stdout
    assert "ctx_tokens=4096 prefill_tps: not measured for the candidate" in done.stdout
    doc = _signoff(project, 1)
    assert doc["complete"] is False
    status, reason = _status(doc)["speed"]
    assert status == "missing" and "ctx_tokens=4096" in reason
    board = doc["measurements"][0]["boards"][0]
    assert board["verdict"].startswith("missing") and len(board["missing"]) == 3
    # a person may skip the item, with the reason: then it no longer blocks
    _ok(project.relgate("skip", "speed", "--reason", "ctx 4096 was dropped from the bench on purpose"))
    status, reason = _status(_signoff(project))["speed"]
    assert status == "skipped" and "dropped from the bench on purpose" in reason


def test_every_row_measured_passes(project: Project, tmp_path: Path) -> None:
    """The rule's other side: the same rows, the same values: the item passes, exit 0."""
    _release(project, tmp_path)
    _add(project, _csv(tmp_path, "c.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"))
    assert f"speed on {BOARD}: pass" in done.stdout
    assert _status(_signoff(project))["speed"][0] == "passed"


@pytest.mark.parametrize("value", ["0", "-5", "0.0", "-0", "nan", "inf", "-inf", "1e999"])
def test_a_time_or_rate_that_is_not_above_zero_and_finite_is_refused_at_add(project: Project, tmp_path: Path,
                                                                            value: str) -> None:
    rows = BASELINE.format(p=1000, g=value, p2=800, g2=40)
    done = _add(project, _csv(tmp_path, "bad.csv", rows), "--release", "0.2.0", code=2)
    assert "bad.csv:2:" in done.stderr and '"gen_tps"' in done.stderr
    with ledger_of(project) as ledger:  # nothing of it recorded
        assert ledger._conn.execute("SELECT COUNT(*) FROM measure_batches").fetchone()[0] == 0


def test_nothing_recorded_for_a_refused_file(project: Project, tmp_path: Path) -> None:
    _add(project, _csv(tmp_path, "bad.csv", BASELINE.format(p=1000, g=-5, p2=800, g2=40)), "--release", "0.2.0",
         code=2)
    _add(project, _csv(tmp_path, "c.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)  # the refused release is not there
    assert "not measured: no previous release measured on this board" in done.stdout


def test_a_previous_value_of_zero_already_in_the_ledger_is_no_pass(project: Project, tmp_path: Path) -> None:
    """A row of 0 recorded by an older relgate: the compare says so, and nothing passes on it."""
    import tomllib

    from relgate.ledger.store import Ledger
    from relgate.manifest.measures import parse_measurements
    from relgate.measure.compare import compare_board
    from relgate.measure.samples import samples
    from relgate.measure.verdicts import PASS

    spec = parse_measurements(tomllib.loads(SPEED.format()), path=tmp_path / "m.toml").measures["speed"]
    home = tmp_path / "h"
    with Ledger.open(home) as ledger:
        common = dict(project="p", measure="speed", kind="measure", dirty=False, board="B", host=None,
                      metadata={"board": "B"}, warmup=0, run_id=None, source="t", sha256=None, path=None)
        prev = ledger.add_batch({**common, "side": "release", "release": "0.1", "commit_sha": None},
                                [(0, ["512"], {"prefill_tps": 0.0, "gen_tps": 50.0, "kvcache_bytes": 1.0}, {})])
        cand = ledger.add_batch({**common, "side": "candidate", "release": None, "commit_sha": "c" * 40},
                                [(0, ["512"], {"prefill_tps": -5.0, "gen_tps": 50.0, "kvcache_bytes": 1.0}, {})])
        rows = {b.id: b for b in ledger.batches(project="p")}
        b = compare_board(ledger, spec, "B", [rows[prev]], [rows[cand]])
        assert b.verdict != PASS and b.verdict.startswith("missing")
        assert any("prefill_tps: the value 0 is no valid time or rate" in m for m in b.missing)
        assert samples(ledger, rows[prev]).values  # the row is there; only its value is refused


def test_compare_that_compared_nothing_exits_non_zero_saying_why(project: Project, tmp_path: Path) -> None:
    base = _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40))
    # nothing recorded at all: bad input
    done = _ok(project.relgate("measure", "compare", "speed"), 2)
    assert "nothing recorded" in done.stderr
    # a candidate only: no previous release
    _add(project, base, "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert "not measured: no previous release measured on this board" in done.stdout
    # an unknown --board: refused, naming the boards there are
    done = _ok(project.relgate("measure", "compare", "speed", "--board", "NOPE"), 2)
    assert "--board NOPE: nothing of speed was recorded on that board" in done.stderr and BOARD in done.stderr


def test_a_release_with_no_clean_candidate_batch_exits_non_zero(project: Project, tmp_path: Path) -> None:
    _release(project, tmp_path)
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert "not measured: no clean batch of the candidate on this board" in done.stdout


def test_six_adds_of_one_file_at_once_record_it_once(project: Project, tmp_path: Path) -> None:
    """Six real processes started together: the duplicate check is inside the write
    transaction, so exactly one records the batch and five are refused (exit 2)."""
    base = _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40))
    _ok(project.relgate("check"))  # the ledger home and nothing else: the adds race on the batch only
    argv = [sys.executable, "-m", "relgate.cli", "measure", "add", "speed", str(base), "--board", BOARD,
            "--release", "0.2.0", "--meta", "driver=550.54", "--meta", "dtype=f16"]
    procs = [subprocess.Popen(argv, env=project.env, cwd=project.root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert all("Traceback" not in out + err for _, out, err in results), results
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2, 2, 2, 2, 2], results
    assert sum("these runs are batch #" in err for _, _, err in results) == 5
    with ledger_of(project) as ledger:
        assert ledger._conn.execute("SELECT COUNT(*) FROM measure_batches").fetchone()[0] == 1


JSONL = """
[measure.speed]
target = "matvec-bench"
file_env = "TINYINFER_MEASURE"
format = "{fmt}"
key = {key}
metrics = {{ gen_tps = "higher" }}
metadata = ["board"]
"""


def _spec(tmp: Path, fmt: str, key: str = '["ctx"]'):  # type: ignore[no-untyped-def]
    import tomllib

    from relgate.manifest.measures import parse_measurements

    return parse_measurements(tomllib.loads(JSONL.format(fmt=fmt, key=key)), path=tmp / "m.toml").measures["speed"]


@pytest.mark.parametrize("fmt,key,text,where,what", [
    ("csv", '["ctx"]', "ctx,gen_tps\n512,50\n4096,40\n512,99\n", "rows.txt:4:", "the row ctx=512 again (first on line 2)"),
    ("tsv", '["ctx"]', "ctx\tgen_tps\n512\t50\n512\t50\n", "rows.txt:3:", "the row ctx=512 again"),
    ("jsonl", '["ctx"]', '{"ctx": "512", "gen_tps": 50, "gen_tps": 99}\n', "rows.txt:1:",
     'the key "gen_tps" appears twice'),
    ("jsonl", '["ctx"]', '{"ctx": "512", "gen_tps": 50}\n{"ctx": "512", "gen_tps": 9}\n', "rows.txt:2:",
     "the row ctx=512 again"),
    ("kv", "[]", "summary gen_tps=50 gen_tps=99\n", "rows.txt:1:", '"gen_tps" appears twice on one line'),
    ("kv", "[]", "summary gen_tps=50\napi_summary gen_tps=99\n", "rows.txt:2:", '"gen_tps" again (first on line 1'),
], ids=["csv", "tsv", "json-key", "jsonl-row", "kv-line", "kv-lines"])
def test_a_repeated_key_is_refused_with_file_and_line(tmp_path: Path, fmt: str, key: str, text: str, where: str,
                                                      what: str) -> None:
    from relgate.core.errors import InputError
    from relgate.measure.measurements import parse_rows

    with pytest.raises(InputError) as err:
        parse_rows(text.encode(), _spec(tmp_path, fmt, key), source="rows.txt", known={"board": "B"})
    assert str(err.value).startswith(where) and what in str(err.value), str(err.value)


def test_a_csv_field_over_csvs_limit_is_one_line_not_a_traceback(project: Project, tmp_path: Path) -> None:
    big = "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes,note\n" \
          f'512,512,1000,128,50,1048576,"{"x" * 200_000}"\n'
    done = _add(project, _csv(tmp_path, "big.csv", big), "--release", "0.2.0", code=2)
    assert "big.csv:2: not CSV: field larger than field limit" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_the_callers_environment_is_part_of_the_reuse_key(tinyinfer: Project) -> None:
    """`relgate host`, then `CFLAGS=-O0 relgate host --reuse`: the build ran with other flags,
    so it runs again; the same environment again reuses it."""
    first = tinyinfer.relgate("host", "release-cpu")
    assert first.returncode == 0, first.stdout + first.stderr
    env = {**tinyinfer.env, "CFLAGS": "-O0"}
    argv = [sys.executable, "-m", "relgate.cli", "host", "release-cpu", "--reuse", "--report", "r.json"]
    other = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tinyinfer.root.parent)
    assert other.returncode == 0, other.stdout + other.stderr
    steps = json.loads((tinyinfer.root.parent / "r.json").read_text())["steps"]
    assert steps and not any(s["reused_from"] for s in steps), steps
    same = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tinyinfer.root.parent)
    assert same.returncode == 0, same.stdout + same.stderr
    steps = json.loads((tinyinfer.root.parent / "r.json").read_text())["steps"]
    assert [s for s in steps if s["reused_from"]], steps
    with ledger_of(tinyinfer) as ledger:
        envs = [r.env for r in ledger.steps() if r.step == "release-cpu"]
    assert all(len(e.get("(caller environment sha256)", "")) == 64 for e in envs)
    assert "-O0" not in json.dumps(envs)  # a hash, never the values


def test_a_metric_dropped_from_the_manifest_is_missing_not_a_pass(project: Project, tmp_path: Path) -> None:
    """The previous release measured gen_tps; the candidate's manifest no longer names it: the
    metric of the previous release went unmeasured, which is no pass."""
    _release(project, tmp_path)
    (project.manifests / "measurements.toml").write_text(
        SPEED.format().replace('gen_tps = "higher", ', ""))
    cand = "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,kvcache_bytes\n512,512,1000,128,1048576\n" \
           "4096,4096,800,128,8388608\n"  # no gen_tps column at all
    _add(project, _csv(tmp_path, "c.csv", cand), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert "gen_tps: a metric of the previous release that measure.speed.metrics no longer names" in done.stdout
    assert _status(_signoff(project, 1))["speed"][0] == "missing"
