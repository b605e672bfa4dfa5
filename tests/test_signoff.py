"""The sign-off with real components: a copy of the C example in its own git repository,
real make/gcc runs recorded in a real ledger, real git tags, real ssh-keygen signatures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Project, aa_exit, git, ledger_of, speed_exit

FILE_SECONDS = 65  # about how long this file takes here: it starts early (tests/conftest.py)

CHECKLIST = """
[release]
boards = ["{board}"]
backends = ["cpu"]
tag_requires = ["ci-green", "maintainer-approval"]

[[item]]
id = "cpu"
title = "CPU kernel tests passed"
auto = "session:gate"
targets = ["kernels-cpu"]

[[item]]
id = "cuda"
title = "CUDA kernel tests passed"
auto = "session:gate"
targets = ["kernels-cuda"]
applies = ["cuda"]
not_validated = "CUDA was not validated for this release."

[[item]]
id = "ci-green"
title = "CI is green"
manual = true

[[item]]
id = "maintainer-approval"
title = "A maintainer approved"
manual = true
"""

SPEED = """
[measure.speed]
target = "matvec-bench"
file_env = "TINYINFER_MEASURE"
format = "csv"
key = ["ctx_tokens"]
metrics = {{ prefill_tps = "higher", gen_tps = "higher", kvcache_bytes = "equal" }}
metadata = ["board", "driver", "dtype"]
runs = 1

[quality.scorer]
target = "quality-score"
output = "stdout"
format = "kv"
select = ["summary", "api_summary"]
bands = {{ first_match = ">= 95", top1_rate = ">= 0.94" }}
"""

BASELINE = "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes\n" \
           "512,512,{p},128,{g},1048576\n4096,4096,{p2},128,{g2},8388608\n"


def _board() -> str:
    from relgate.evidence.baselines import board_key
    from relgate.manifest.specs import HostSpec
    from relgate.run.hosts import Host, detect_local

    spec = HostSpec(name="local", kind="local", source=Path("<test>"))
    return board_key(Host(spec=spec, facts=detect_local(spec)).board, "local")


BOARD = _board()


@pytest.fixture
def project(tinyinfer: Project) -> Project:
    (tinyinfer.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD))
    (tinyinfer.manifests / "measurements.toml").write_text(SPEED.format())
    return tinyinfer


def _ok(done: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _signoff(project: Project, code: int | None = None) -> dict:
    done = project.relgate("signoff", "--out", str(project.home / "so"))
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    if code is not None:
        assert done.returncode == code, done.stdout + done.stderr
    return json.loads((project.home / "so" / "signoff.json").read_text())


def _status(doc: dict) -> dict[str, tuple[str, str]]:
    return {i["id"]: (i["status"], i["reason"]) for i in doc["items"]}


def _csv(tmp: Path, name: str, text: str, *, bom: bool = False, crlf: bool = False) -> Path:
    path = tmp / name
    data = text.replace("\n", "\r\n") if crlf else text
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode())
    return path


def _add(project: Project, file: Path, *side: str, meta: tuple[str, ...] = ("driver=550.54", "dtype=f16"),
         name: str = "speed", code: int = 0, more: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``more``: further files, the batch's other runs."""
    extra = [a for m in meta for a in ("--meta", m)]
    return _ok(project.relgate("measure", "add", name, str(file), *map(str, more), "--board", BOARD, *side, *extra),
               code)


# --- measurements ------------------------------------------------------------------------------


def test_a_csv_with_bom_and_crlf_is_read_as_it_is(tmp_path: Path) -> None:
    import tomllib

    from relgate.manifest.measures import parse_measurements
    from relgate.measure.measurements import parse_rows
    spec = parse_measurements(tomllib.loads(SPEED.format()), path=tmp_path / "m.toml").measures["speed"]
    data = _csv(tmp_path, "b.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40), bom=True, crlf=True).read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\r\n" in data
    rows = parse_rows(data, spec, source="b.csv", known={"board": "B", "driver": "1", "dtype": "f16"})
    assert [r.key for r in rows] == [("512",), ("4096",)]
    assert rows[0].metrics == {"prefill_tps": 1000.0, "gen_tps": 50.0, "kvcache_bytes": 1048576.0}
    assert rows[0].metadata["prefill_tokens"] == "512" and rows[1].line == 3


def test_a_row_missing_a_required_field_is_refused_naming_it(project: Project, tmp_path: Path) -> None:
    base = _csv(tmp_path, "b.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40))
    done = _add(project, base, "--release", "0.2.0", meta=("driver=550.54",), code=2)
    assert 'b.csv:2: missing required metadata "dtype" (a column, or --meta dtype=…)' in done.stderr
    with ledger_of(project) as ledger:
        assert ledger._conn.execute("SELECT COUNT(*) FROM measure_batches").fetchone()[0] == 0  # nothing half-written


def test_a_bad_measurements_manifest_names_file_and_key(project: Project) -> None:
    (project.manifests / "measurements.toml").write_text(SPEED.format().replace('"higher"', '"highre"', 1)
                                                         .replace("runs = 1", "runs = 1\nwarmpu = 1"))
    done = _ok(project.relgate("measure", "compare", "speed"), 2)
    assert 'measurements.toml: measure.speed.warmpu: unknown key — did you mean "warmup"?' in done.stderr
    assert 'measure.speed.metrics.prefill_tps: unknown direction "highre"' in done.stderr


# --- previous against candidate -------------------------------------------------------------------


def _slowdown(project: Project, tmp_path: Path, slower: float) -> list[int]:
    """The previous release's baseline, then two candidate batches ``slower`` (0.12: 12 %)
    slower; the compare's exit status after each candidate batch."""
    _add(project, _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40), bom=True, crlf=True),
         "--release", "0.2.0")
    codes = []
    for i in range(2):
        f = 1 - slower - 0.005 * i
        cand = _csv(tmp_path, f"cand{i}.csv", BASELINE.format(p=1000 * f, g=50, p2=800, g2=40))
        _add(project, cand, "--candidate")
        codes.append(project.relgate("measure", "compare", "speed").returncode)
    return codes


def test_a_12_percent_slowdown_asks_for_a_rerun_and_blocks_when_confirmed(project: Project, tmp_path: Path) -> None:
    assert _slowdown(project, tmp_path, 0.12) == [3, 1]
    done = project.relgate("measure", "compare", "speed")
    assert "speed on " + BOARD + ": block" in done.stdout
    assert "12.0% the wrong way in two batches, above 10%" in done.stdout
    doc = _signoff(project)
    board = doc["measurements"][0]["boards"][0]
    assert board["verdict"] == "block"
    assert {r["metric"]: r["verdict"] for r in board["rows"] if r["row"] == "ctx_tokens=512"} == {
        "prefill_tps": "block", "gen_tps": "pass", "kvcache_bytes": "pass"}
    (project.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD) + """
[[item]]
id = "speed"
title = "Speed within variance"
auto = "measure:speed"
not_validated = "Speed was not compared."
""")
    assert _status(_signoff(project, 1))["speed"][0] == "failed"
    _ok(project.relgate("skip", "speed", "--not-validated"))  # it ran and blocked: "not validated" is untrue
    status, reason = _status(_signoff(project, 1))["speed"]
    assert status == "failed" and reason.endswith("(marked not validated, but it ran and failed: fix it, or skip "
                                                  "it with a reason)")
    _ok(project.relgate("skip", "speed", "--reason", "known: the new tokenizer", "--by", "ana"))
    status, reason = _status(_signoff(project, 1))["speed"]
    assert status == "skipped" and reason.startswith("skipped by ana: known: the new tokenizer (it ran and failed: ")


def test_a_6_percent_slowdown_asks_for_a_rerun_and_is_slower_when_confirmed(project: Project,
                                                                           tmp_path: Path) -> None:
    assert _slowdown(project, tmp_path, 0.06) == [3, 0]
    done = project.relgate("measure", "compare", "speed")
    assert f"speed on {BOARD}: slower" in done.stdout
    assert "6.0% the wrong way in two batches (between 5% and 10%)" in done.stdout


def test_a_rerun_that_does_not_confirm_stays_open_and_is_undecided_after_max_batches(project: Project,
                                                                                    tmp_path: Path) -> None:
    """Changed by issue 20: an unconfirmed rerun used to pass ("the rerun did not confirm");
    now the batches are pooled and disagree, so the row stays open until max_batches (4)."""
    _add(project, _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--release", "0.2.0")
    _add(project, _csv(tmp_path, "c1.csv", BASELINE.format(p=880, g=50, p2=800, g2=40)), "--candidate")
    assert project.relgate("measure", "compare", "speed").returncode == 3
    _add(project, _csv(tmp_path, "c2.csv", BASELINE.format(p=1010, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 3)
    assert "the batches disagree (12.0%, 0.0% the wrong way): an unconfirmed rerun is no pass" in done.stdout
    assert "1 run a side: point estimate, no interval" in done.stdout
    for i, p in enumerate((1005, 995)):
        _add(project, _csv(tmp_path, f"c{3 + i}.csv", BASELINE.format(p=p, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 4)  # undecided: its own exit, not block's 1
    assert f"speed on {BOARD}: undecided: too noisy at 4 runs" in done.stdout
    assert "4 batches pooled (max_batches = 4)" in done.stdout
    assert "undecided is neither a regression nor a pass: the sign-off item stays open" in done.stdout
    # a fifth batch is not counted: repeating cannot turn it green
    _add(project, _csv(tmp_path, "c5.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 4)
    assert "not counted, after max_batches = 4" in done.stdout and "undecided: too noisy at 4 runs" in done.stdout


def test_a_confirmed_regression_is_not_turned_green_by_more_batches(project: Project, tmp_path: Path) -> None:
    """Once two batches confirmed 12 % (block), two more at the old speed change nothing: the
    row was decided at batch 2, and later batches are pooled after the decision, never alone."""
    assert _slowdown(project, tmp_path, 0.12) == [3, 1]
    for i in range(2):
        _add(project, _csv(tmp_path, f"fast{i}.csv", BASELINE.format(p=1000 + i, g=50, p2=800, g2=40)),
             "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert f"speed on {BOARD}: block" in done.stdout and "12.0% the wrong way in two batches, above 10%" in done.stdout


def _runs(tmp_path: Path, name: str, prefill: float, runs: int = 12, seed: int = 1) -> list[Path]:
    """``runs`` files of the C engine's CSV (BOM, CRLF), prefill_tps spread ±1 % around ``prefill``."""
    import random

    rng = random.Random(seed)
    return [_csv(tmp_path, f"{name}{i}.csv", BASELINE.format(p=round(prefill * rng.uniform(0.99, 1.01), 2),
                                                             g=round(50 * rng.uniform(0.99, 1.01), 3), p2=800,
                                                             g2=40), bom=True, crlf=True) for i in range(runs)]


def test_several_files_are_the_runs_of_one_batch_judged_by_the_interval(project: Project, tmp_path: Path) -> None:
    """`measure add NAME FILE…`: one batch, each file a run; the verdict comes from the ratio's
    interval; only the rows that do not pass are printed (with a summary line), `--all`
    prints every row; the sign-off's changelog section keeps the full table with intervals."""
    prev, cand = _runs(tmp_path, "p", 1000), _runs(tmp_path, "c", 860, seed=2)
    done = _add(project, prev[0], "--release", "0.2.0", more=tuple(prev[1:]))
    assert "batch #1, 12 runs of 2 row(s) of release 0.2.0" in done.stdout
    _add(project, cand[0], "--candidate", more=tuple(cand[1:]))
    again = _add(project, cand[0], "--candidate", code=2, more=tuple(cand[1:]))  # the same runs twice: refused
    assert "these runs are batch #2 already" in again.stderr
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert f"speed on {BOARD}: block" in done.stdout
    assert "2 rows × 3 metrics: 5 pass, 1 block, widest interval ±" in done.stdout
    assert "% the wrong way (99.9" in done.stdout and "%, 12 against 12 runs): beyond 10%" in done.stdout
    assert f"speed on {BOARD}: block\n" in done.stdout and "  suite prefill_tps (geometric mean of 2 rows" in done.stdout
    assert "false-alarm bound: identical code gets any slower or block on this board with chance ≤ 0.01" in done.stdout
    assert "ctx_tokens=512" in done.stdout and "gen_tps" not in done.stdout.split("widest interval")[1]
    assert "A/A noise floor: not measured on this board (nox -s compare -- --aa speed)" in done.stdout
    every = _ok(project.relgate("measure", "compare", "speed", "--all"), 1)
    assert every.stdout.count("ctx_tokens=") == 6 and "gen_tps" in every.stdout
    doc = _signoff(project)
    rows = doc["measurements"][0]["boards"][0]["rows"]
    block = next(r for r in rows if r["verdict"] == "block")
    assert block["metric"] == "prefill_tps" and block["runs"] == [12, 12] and block["interval"][1] < 0.9
    assert all(r["interval"] is None for r in rows if r["metric"] == "kvcache_bytes")
    section = (project.home / "so" / "changelog-section.md").read_text()
    assert "| row | metric | better | previous | candidate | ratio | interval | runs | verdict | why |" in section
    assert section.count("| ctx_tokens=") == 6 and "× (±" in section


def test_the_noise_floor_from_recorded_batches_is_shown_per_board(project: Project, tmp_path: Path) -> None:
    """`relgate measure noise NAME --board B`: two clean batches of one commit as an A/A pair;
    the floor is recorded, and the compare and the sign-off show it for that board."""
    prev = _runs(tmp_path, "p", 1000)
    _add(project, prev[0], "--release", "0.2.0", more=tuple(prev[1:]))
    for seed in (3, 4):
        files = _runs(tmp_path, f"c{seed}-", 1000, seed=seed)
        _add(project, files[0], "--candidate", more=tuple(files[1:]))
    done = _ok(project.relgate("measure", "noise", "speed", "--board", BOARD))
    assert f"speed A/A on {BOARD}: pass" in done.stdout
    assert "A/A noise floor: ±" in done.stdout and "at 12 runs a side (95% interval" in done.stdout
    done = _ok(project.relgate("measure", "compare", "speed"))
    assert "A/A noise floor: ±" in done.stdout and "(95% interval, median of 4 row(s) × metric" in done.stdout
    doc = _signoff(project)
    assert doc["measurements"][0]["boards"][0]["noise"]["runs"] == 12
    nothing = project.relgate("measure", "noise", "speed", "--board", "OTHER")
    assert nothing.returncode == 2 and "no A/A pair recorded on board OTHER" in nothing.stderr


def test_an_equal_metric_that_moves_blocks_and_other_metadata_is_not_measured(project: Project,
                                                                              tmp_path: Path) -> None:
    _add(project, _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--release", "0.2.0")
    moved = BASELINE.format(p=1000, g=50, p2=800, g2=40).replace("1048576", "2097152")
    _add(project, _csv(tmp_path, "c.csv", moved), "--candidate", meta=("driver=550.54", "dtype=f16"))
    done = _ok(project.relgate("measure", "compare", "speed"), 1)
    assert "must stay equal and moved" in done.stdout
    _add(project, _csv(tmp_path, "c2.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--candidate",
         meta=("driver=560.10", "dtype=f16"))
    done = _ok(project.relgate("measure", "compare", "speed"), 1)  # compared nothing: no exit 0 (issue 36)
    assert "not measured: other metadata: driver 550.54 in the previous batch, 560.10 in the candidate" in done.stdout


def test_boards_are_never_merged(project: Project, tmp_path: Path) -> None:
    base = _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40))
    _ok(project.relgate("measure", "add", "speed", str(base), "--board", "OTHER", "--release", "0.2.0",
                        "--meta", "driver=1", "--meta", "dtype=f16"))
    _add(project, _csv(tmp_path, "c.csv", BASELINE.format(p=500, g=50, p2=800, g2=40)), "--candidate")
    done = _ok(project.relgate("measure", "compare", "speed"), 1)  # compared nothing: no exit 0 (issue 36)
    assert f"speed on {BOARD}: not measured: no previous release measured on this board" in done.stdout
    assert "speed on OTHER: not measured: no clean batch of the candidate on this board" in done.stdout


def test_a_broken_quality_band_blocks(project: Project, tmp_path: Path) -> None:
    good = _csv(tmp_path, "q0.txt", "summary cases=100 tokens=4000 avg_nll=1.2 first_match=96 avg_lcp=30\n"
                                    "api_summary cases=100 top1_rate=0.950 pair_rate=0.880\n")
    _add(project, good, "--release", "0.2.0", name="scorer", meta=())
    bad = _csv(tmp_path, "q1.txt", "summary cases=100 tokens=4000 avg_nll=1.3 first_match=93 avg_lcp=28\n"
                                   "noise line without pairs\napi_summary cases=100 top1_rate=0.942 pair_rate=0.9\n")
    _add(project, bad, "--candidate", name="scorer", meta=())
    done = _ok(project.relgate("measure", "compare", "scorer"), 1)
    assert "first_match >= 95: 93 (previous 96) BROKEN" in done.stdout
    assert "top1_rate >= 0.94: 0.942 (previous 0.95) held" in done.stdout
    (project.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD) + """
[[item]]
id = "quality"
title = "Quality bands held"
auto = "quality:scorer"
""")
    assert _status(_signoff(project, 1))["quality"] == ("failed", f"{BOARD}: first_match >= 95 broken (93)")


# --- the checklist ---------------------------------------------------------------------------


def test_an_item_outside_the_releases_backends_is_not_applicable(project: Project) -> None:
    status = _status(_signoff(project, 1))
    assert status["cuda"] == ("not-applicable", "applies to cuda; this release's backends are cpu")
    assert status["cpu"][0] == "missing"


def test_a_skip_without_a_reason_is_refused(project: Project) -> None:
    done = _ok(project.relgate("skip", "cpu"), 2)
    assert done.stderr.strip() == ("relgate: skip: cpu: a skip needs --reason "
                                   "(it goes into the sign-off and the changelog)")
    done = _ok(project.relgate("skip", "cpu", "--reason", "  "), 2)
    _ok(project.relgate("skip", "cpu", "--reason", "kernel tests run in CI only", "--by", "ana"))
    assert _status(_signoff(project))["cpu"] == ("skipped", "skipped by ana: kernel tests run in CI only")


def test_attest_refuses_an_auto_item_and_an_unknown_one(project: Project) -> None:
    done = _ok(project.relgate("attest", "cpu", "--by", "ana"), 2)
    assert "cpu is an auto item (session:gate); the ledger decides it" in done.stderr
    done = _ok(project.relgate("attest", "ci-gren", "--by", "ana"), 2)
    assert 'no item "ci-gren" — did you mean "ci-green"?' in done.stderr


def test_stale_commit_evidence_is_ignored(project: Project) -> None:
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))
    assert _status(_signoff(project, 1))["cpu"][0] == "passed"
    (project.root / "src" / "kernels_cpu.c").write_text((project.root / "src" / "kernels_cpu.c").read_text()
                                                        + "\n/* a change after qualification */\n")
    old = git(project.root, "rev-parse", "HEAD").strip()
    project.commit("a code change")
    status, reason = _status(_signoff(project, 1))["cpu"]
    assert status == "missing"
    assert reason == f"gate: only at another commit ({old[:12]}); rerun at {git(project.root, 'rev-parse', 'HEAD')[:12]}"


def test_dirty_tree_evidence_is_ignored(project: Project) -> None:
    (project.root / "scratch.txt").write_text("untracked: the tree is dirty\n")
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))
    doc = _signoff(project, 1)
    assert doc["dirty"] is True and doc["complete"] is False
    assert _status(doc)["cpu"] == ("missing", "gate: only from a dirty tree at this commit (dirty-tree evidence "
                                               "never counts); commit and rerun")


def _complete(project: Project) -> None:
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))
    _ok(project.relgate("attest", "ci-green", "--by", "ana", "--note", "pipeline 1234 green"))
    _ok(project.relgate("attest", "maintainer-approval", "--by", "bo"))


def test_a_commit_that_only_adds_the_changelog_section_keeps_the_signoff(project: Project) -> None:
    _complete(project)
    qualified = git(project.root, "rev-parse", "HEAD").strip()
    doc = _signoff(project, 0)
    assert doc["complete"] is True
    (project.root / "CHANGELOG.md").write_text((project.root / "CHANGELOG.md").read_text()
                                               .replace("## [0.3.0]", "## [0.3.0]\n\n### Measurements and verification\n\n- x\n"))
    head = project.commit("changelog: the sign-off section")
    doc = _signoff(project, 0)
    assert doc["commit"] == head and doc["same_tree"] == [head, qualified]
    assert _status(doc)["cpu"][0] == "passed" and _status(doc)["ci-green"] == (
        "attested", "attested by ana: pipeline 1234 green")
    (project.root / "README.md").write_text((project.root / "README.md").read_text() + "\nmore\n")
    project.commit("not only the release notes")
    assert _status(_signoff(project, 1))["cpu"][0] == "missing"


def test_signoff_writes_the_section_into_the_changelog(project: Project) -> None:
    _complete(project)
    done = _ok(project.relgate("signoff", "--out", str(project.home / "so"), "--changelog"))
    assert "the \"Measurements and verification\" section is in" in done.stdout
    text = (project.root / "CHANGELOG.md").read_text()
    block = text.split("## [0.3.0]", 1)[1]
    assert "### Measurements and verification" in block and "- Passed: CPU kernel tests passed." in block
    assert "- Attested: CI is green (ana); A maintainer approved (bo)." in block
    project.commit("changelog")
    assert _signoff(project, 0)["complete"] is True


def test_a_rerun_with_nothing_new_gives_identical_bytes(project: Project) -> None:
    _complete(project)
    out = project.home / "so"
    _signoff(project, 0)
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    done = _ok(project.relgate("signoff", "--out", str(out)))
    assert "nothing new" in done.stdout
    (out / ".signoff-state.json").unlink()  # without the shortcut: assembled again, same bytes
    _ok(project.relgate("signoff", "--out", str(out)))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    _ok(project.relgate("attest", "ci-green", "--by", "cy"))  # something new: written again
    _ok(project.relgate("signoff", "--out", str(out)))
    assert (out / "signoff.json").read_bytes() != first["signoff.json"]


def test_manual_runs_are_ledger_steps_the_attestation_shows(project: Project) -> None:
    (project.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD) + """
[[item]]
id = "agent-checks"
title = "Manual agent checks"
manual = true
""")
    done = _ok(project.relgate("run", "--item", "agent-checks", "--note", "ctx 4096, model tiny.gguf", "--",
                               "sh", "-c", "echo manual check of $0", "ctx4096"))
    assert "agent-checks: manual run recorded as step #" in done.stdout
    _ok(project.relgate("attest", "agent-checks", "--by", "ana"))
    doc = _signoff(project, 1)
    item = next(i for i in doc["items"] if i["id"] == "agent-checks")
    assert item["status"] == "attested"
    run = item["runs"][0]
    assert run["command"] == "sh -c 'echo manual check of $0' ctx4096" and run["exit"] == 0
    assert run["verdict"] == "pass" and run["dirty"] is False and run["note"] == "ctx 4096, model tiny.gguf"
    log = (project.home / run["log"]).read_text()
    assert "manual check of ctx4096" in log
    md = (project.home / "so" / "signoff.md").read_text()
    assert "`agent-checks` manual run `sh -c 'echo manual check of $0' ctx4096`" in md


# --- the tag -----------------------------------------------------------------------------------


def _git_identity(project: Project) -> None:
    git(project.root, "config", "user.name", "Release Engineer")
    git(project.root, "config", "user.email", "re@example.invalid")


def test_tag_is_refused_on_an_incomplete_signoff(project: Project) -> None:
    _git_identity(project)
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))
    _ok(project.relgate("attest", "ci-green", "--by", "ana"))
    done = project.nox("tag")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("tag refused: maintainer-approval is missing, it must be attested "
            "(relgate attest maintainer-approval --by NAME)") in done.stderr
    assert git(project.root, "tag", "--list").strip() == ""


def test_tag_is_refused_on_a_failed_gate_for_that_reason_alone(project: Project) -> None:
    """Everything else a tag needs is there (clean tree, both attestations, a version, no tag
    yet): only the failed gate refuses it."""
    _git_identity(project)
    project.plant("tests/test_kernels.c", '        report(ok, "rmsnorm zeros n=5", 0.0);',
                  '        report(0, "planted failure", 0.0);')
    project.commit("a kernel test that fails")
    assert project.nox("gate", extra=("--", "kernels-cpu")).returncode == 1
    _ok(project.relgate("attest", "ci-green", "--by", "ana"))
    _ok(project.relgate("attest", "maintainer-approval", "--by", "bo"))
    done = project.nox("tag")
    assert done.returncode == 1, done.stdout + done.stderr
    refused = [line for line in done.stderr.splitlines() if "tag refused:" in line]
    assert len(refused) == 1, done.stderr
    assert refused[0].endswith(" is incomplete: cpu (failed): gate/kernels-cpu on host:local: fail (make test: exit 2)")
    assert git(project.root, "tag", "--list").strip() == ""


def test_tag_is_created_on_a_complete_signoff_with_the_digest(project: Project) -> None:
    import hashlib

    _git_identity(project)
    _complete(project)
    (project.root / "scratch").write_text("dirty\n")
    done = project.nox("tag")
    assert done.returncode == 1 and "tag refused: the tree is dirty" in done.stderr
    (project.root / "scratch").unlink()
    done = project.nox("tag")
    assert done.returncode == 0, done.stdout + done.stderr
    digest = hashlib.sha256((project.home / "signoff" / "signoff.json").read_bytes()).hexdigest()
    assert git(project.root, "cat-file", "-t", "v0.3.0").strip() == "tag"
    message = git(project.root, "tag", "-l", "--format=%(contents)", "v0.3.0")
    assert f"signoff.json sha256: {digest}" in message
    assert git(project.root, "rev-list", "-n1", "v0.3.0").strip() == git(project.root, "rev-parse", "HEAD").strip()
    done = project.nox("tag")
    assert done.returncode == 1 and "tag v0.3.0 exists already" in done.stderr


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not on PATH")
def test_a_signed_signoff_verifies_and_a_tampered_one_fails(project: Project, tmp_path: Path) -> None:
    _git_identity(project)
    _complete(project)
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "re", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("re@example.invalid " + (tmp_path / "id_ed25519.pub").read_text())
    done = _ok(project.relgate("tag", "--key", str(key)))
    assert "tagged v0.3.0" in done.stdout and "(signed, gpg.format=ssh)" in done.stdout
    assert "-----BEGIN SSH SIGNATURE-----" in git(project.root, "cat-file", "-p", "v0.3.0")
    doc = project.home / "signoff" / "signoff.json"
    done = _ok(project.relgate("verify-signoff", str(doc), "--allowed-signers", str(allowed)))
    assert "good signature by re@example.invalid (namespace relgate-signoff)" in done.stdout
    assert "tinyinfer 0.3.0" in done.stdout and "complete: true" in done.stdout
    tampered = tmp_path / "signoff.json"
    tampered.write_text(doc.read_text().replace('"complete": true', '"complete": false'))
    shutil.copy(str(doc) + ".sig", str(tampered) + ".sig")
    done = _ok(project.relgate("verify-signoff", str(tampered), "--allowed-signers", str(allowed)), 1)
    assert "BAD" in done.stdout
    other = tmp_path / "other_signers"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k2")], check=True)
    other.write_text("someone@else " + (tmp_path / "k2.pub").read_text())
    done = _ok(project.relgate("verify-signoff", str(doc), "--allowed-signers", str(other)), 1)
    assert "is not in" in done.stdout
    _ok(project.relgate("verify-signoff", str(tmp_path / "nope.json"), "--allowed-signers", str(allowed)), 2)


# --- measuring: the previous release and the candidate, interleaved ------------------------------


def test_compare_previous_builds_ref_in_a_worktree_and_interleaves(tinyinfer: Project) -> None:
    """The shipped measurements.toml of the C example: `make bench` (kv lines on stdout) and the
    quality scorer; REF is built in its own worktree and both sides alternate on this host."""
    previous = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    git(tinyinfer.root, "tag", "v0.2.0")
    (tinyinfer.root / "README.md").write_text((tinyinfer.root / "README.md").read_text() + "\nCandidate.\n")
    candidate = tinyinfer.commit("candidate")
    done = tinyinfer.nox("compare", extra=("--", "matvec", "scorer", "--previous", "v0.2.0"))
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == speed_exit(done.stdout), done.stdout + done.stderr  # timings: any verdict, never a crash
    assert f"matvec on {BOARD}: " in done.stdout
    assert f"scorer on {BOARD}: pass" in done.stdout
    assert "first_match >= 19: 20 (previous 20) held" in done.stdout
    with ledger_of(tinyinfer) as ledger:
        steps = [s for s in ledger.steps() if s.session == "compare"]
        batches = ledger.batches(project=steps[0].project_key)  # batches carry the project's identity too
    assert [s.step for s in steps] == [*(f"matvec{side}#{i}" for i in range(1, 6) for side in ("@v0.2.0", "")),
                                       "scorer@v0.2.0#1", "scorer#1"]  # runs = 5, A B A B …
    assert all(s.verdict.value == "pass" for s in steps), [(s.step, s.reason) for s in steps]
    assert {s.commit_sha for s in steps if "@" in s.step} == {previous}
    assert {s.commit_sha for s in steps if "@" not in s.step} == {candidate}
    assert all("/worktrees/" in (s.cwd or "") for s in steps if "@" in s.step)
    assert [(b.measure, b.side, b.release, b.board, b.warmup) for b in batches] == [
        ("matvec", "release", "0.2.0", BOARD, 1), ("matvec", "candidate", None, BOARD, 1),
        ("scorer", "release", "0.2.0", BOARD, 0), ("scorer", "candidate", None, BOARD, 0)]
    # source_hash is the project folder's git tree: the README changed, so it differs (and may: it is in vary)
    assert batches[0].metadata["source_hash"] != batches[1].metadata["source_hash"]


# --- pictures (the plots extra) ---------------------------------------------------------------------


def test_plots_are_embedded_with_the_extra_and_everything_works_without_it(project: Project, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _add(project, _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40)), "--release", "0.2.0")
    _add(project, _csv(tmp_path, "c.csv", BASELINE.format(p=990, g=51, p2=805, g2=40)), "--candidate")
    _signoff(project, 1)
    out = project.home / "so"
    md = (out / "signoff.md").read_text()
    picture = f"plots/speed-{BOARD.replace(':', '_')}.png"
    assert f"![speed on {BOARD}: previous against candidate]({picture})" in md
    png = (out / picture).read_bytes()
    assert png.startswith(b"\x89PNG")
    (out / ".signoff-state.json").unlink()
    _signoff(project, 1)
    assert (out / picture).read_bytes() == png  # re-runs stay byte-identical, pictures too
    # Without matplotlib: no picture, the same tables.
    blocked = [sys.executable, "-c", "import sys; sys.modules['matplotlib'] = None; from relgate.cli import main; "
               "sys.exit(main(sys.argv[1:]))", "signoff", "--out", str(tmp_path / "plain")]
    done = subprocess.run(blocked, env=project.env, cwd=project.root, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    plain = (tmp_path / "plain" / "signoff.md").read_text()
    assert not (tmp_path / "plain" / "plots").exists()
    assert plain == "\n".join(ln for ln in md.split("\n") if not ln.startswith("![")).replace("\n\n\n", "\n\n")


def test_a_version_3_ledger_migrates_to_the_signoff_tables_and_keeps_its_rows(tmp_path: Path) -> None:
    import sqlite3

    from relgate.ledger.store import _MIGRATIONS, _split_sql

    conn = sqlite3.connect(tmp_path / "ledger.sqlite3")
    for script in _MIGRATIONS[:3]:
        for statement in _split_sql(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO baselines (release, board, commit_sha, sha256, path, cells, accepted)"
                 " VALUES ('0.3.0', 'H100', 'c1', 'ab', 'objects/ab', 4, '2026-01-01')")
    conn.commit()
    conn.close()
    from relgate.ledger.store import Ledger

    with Ledger.open(tmp_path) as ledger:
        assert ledger.schema_version >= 4
        assert [b.release for b in ledger.baselines()] == ["0.3.0"]
        assert ledger.batches(project="p") == [] and ledger.decisions(project="p") == []
        ledger.add_decision(project="p", commit="c1", dirty=False, item="ci-green", kind="attest", by="ana", note=None)
        assert [(d.item, d.by) for d in ledger.decisions(project="p")] == [("ci-green", "ana")]


def test_the_evidence_check_of_the_qualified_commit_stands_after_a_notes_only_commit(project: Project) -> None:
    (project.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD) + """
[[item]]
id = "evidence"
title = "Evidence clean against the last accepted release"
auto = "evidence"
""")
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))
    _ok(project.relgate("evidence", "accept", "--release", "0.2.0"))
    _ok(project.nox("evidence"))
    assert _status(_signoff(project, 1))["evidence"][0] == "passed"
    (project.root / "CHANGELOG.md").write_text((project.root / "CHANGELOG.md").read_text() + "\nNotes.\n")
    project.commit("notes only")
    done = project.nox("evidence")  # no capture at the new commit: not run there
    assert "no capture at this commit" in done.stdout
    assert _status(_signoff(project, 1))["evidence"][0] == "passed"
    _ok(project.nox("gate", extra=("--", "kernels-cpu")))  # a capture after the last check: checked again first
    status, reason = _status(_signoff(project, 1))["evidence"]
    assert status == "missing" and "checked before the latest capture" in reason


def test_tag_refuses_a_project_without_a_version(project: Project) -> None:
    toml = project.manifests / "project.toml"
    toml.write_text(toml.read_text().replace('version = "0.3.0"\n', ""))
    done = project.relgate("tag")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no version to tag (set project.version, or release.version in the checklist)" in done.stderr


def test_compare_aa_measures_the_candidate_against_itself_and_records_the_floor(tinyinfer: Project) -> None:
    """`nox -s compare -- --aa matvec`: the shipped measure (`make bench`, 5 runs, 1 warm-up),
    the candidate twice, interleaved on this host; B judged against A, the floor recorded
    (max_batches = 1 here, to keep the test short)."""
    toml = tinyinfer.manifests / "measurements.toml"
    toml.write_text(toml.read_text().replace("rerun_above = 0.05\nblock_above = 0.10\n",
                                             "rerun_above = 0.05\nblock_above = 0.10\nmax_batches = 1\n", 1))
    done = tinyinfer.nox("compare", extra=("--", "--aa", "matvec"))
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert done.returncode == aa_exit(done.stdout), out  # 1 only if identical code came out slower or blocked here
    assert "matvec@aa-a#1" in out and "matvec@aa-b#5" in out  # A B A B …: 5 runs a side
    assert f"matvec A/A on {BOARD}: " in out and "A: batch(es) #1; B: batch(es) #2 (the candidate, interleaved)" in out
    assert "A/A noise floor: ±" in out and "at 4 runs a side (95% interval" in out
    with ledger_of(tinyinfer) as ledger:
        kinds = [(b.kind, b.side, b.metadata.get("aa")) for b in ledger.batches(project=_project_key(ledger),
                                                                                measure="matvec")]
    assert kinds == [("measure", "aa", "a"), ("measure", "aa", "b"), ("noise", "noise", None)]
    done = tinyinfer.relgate("measure", "noise", "matvec", "--board", BOARD)
    assert done.returncode == aa_exit(done.stdout) and f"matvec A/A on {BOARD}" in done.stdout, \
        done.stdout + done.stderr


def _project_key(ledger) -> str:  # type: ignore[no-untyped-def]
    return ledger._conn.execute("SELECT project FROM measure_batches LIMIT 1").fetchone()[0]
