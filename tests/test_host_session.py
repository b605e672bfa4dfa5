"""``nox -s host`` on real copies of the bundled C example: real gcc, nvcc, make, git."""

from __future__ import annotations

from conftest import Project, needs_nvcc

FILE_SECONDS = 45  # about how long this file takes here: it starts early (tests/conftest.py)

ANCHOR = "    float ss = 0.0f;"
PLANT = "    int relgate_planted_unused = 0;"


def test_host_passes_on_a_clean_checkout_and_records_every_step(tinyinfer: Project) -> None:
    done = tinyinfer.nox("host")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    rows = tinyinfer.ledger_steps()
    names = [r["step"] for r in rows]
    assert names[-3:] == ["unit-tests", "cli-help", "git-diff-check"]
    assert "release-cpu" in names and "release-cuda" in names
    for row in rows:
        assert row["session"] == "host" and row["lane"] == "host" and row["host"] == "local"
        assert row["dirty"] is False and len(row["commit_sha"]) == 40
        assert row["command"] and row["started"] and row["duration"] is not None
        if row["verdict"] != "pass":  # only a step this machine cannot offer for
            assert row["verdict"] == "not-run" and row["reason"].startswith("no host offers "), row
        if row["verdict"] == "pass":
            assert row["exit_code"] == 0 and row["warning_count"] == 0
            log = tinyinfer.home / row["log_path"]
            assert log.is_file() and log.name == f"{row['log_sha256']}.log"
    assert len({r["run_id"] for r in rows}) == 1
    assert "step" in done.stdout and "verdict" in done.stdout  # the summary table


def test_planted_gcc_warning_fails_and_names_file_and_line(tinyinfer: Project) -> None:
    line = tinyinfer.plant("src/kernels_cpu.c", ANCHOR, PLANT)
    tinyinfer.commit("plant a gcc warning")
    done = tinyinfer.nox("host")
    assert done.returncode != 0
    out = done.stdout
    assert f"src/kernels_cpu.c:{line}:" in out
    assert "relgate_planted_unused" in out and "-Wunused-variable" in out
    cpu = next(r for r in tinyinfer.ledger_steps() if r["step"] == "release-cpu")
    assert cpu["verdict"] == "fail" and cpu["warning_count"] == 1
    assert cpu["warnings"][0]["file"] == "src/kernels_cpu.c" and cpu["warnings"][0]["line"] == line
    assert cpu["exit_code"] == 0  # the build itself succeeded; the warning fails it


@needs_nvcc
def test_planted_nvcc_warning_fails_and_names_file_and_line(tinyinfer: Project) -> None:
    line = tinyinfer.plant("src/kernels_cuda.cu", ANCHOR, PLANT)
    tinyinfer.commit("plant an nvcc warning")
    done = tinyinfer.nox("host")
    assert done.returncode != 0
    assert f"src/kernels_cuda.cu:{line}: warning: " in done.stdout
    assert "177-D" in done.stdout
    rows = tinyinfer.ledger_rows()
    assert rows["release-cuda"]["verdict"] == "fail"
    assert rows["release-cpu"]["verdict"] == "pass"  # the CPU build never sees the .cu file


def test_allow_rule_with_a_reason_accepts_exactly_that_warning(tinyinfer: Project) -> None:
    tinyinfer.plant("src/kernels_cpu.c", ANCHOR, PLANT)
    tinyinfer.commit("plant")
    builds = tinyinfer.manifests / "builds.toml"
    builds.write_text(builds.read_text().replace(
        'run = "make cpu"\n',
        'run = "make cpu"\n[[release.cpu.allow]]\npattern = "relgate_planted_unused"\n'
        'reason = "kept for ABI, removed in 0.4"\n'))
    done = tinyinfer.nox("host")
    rows = tinyinfer.ledger_rows()
    assert rows["release-cpu"]["verdict"] == "pass", done.stdout
    assert rows["release-cpu"]["warnings"][0]["allowed"] == "kept for ABI, removed in 0.4"
    assert "allowed (kept for ABI, removed in 0.4)" in done.stdout


def test_dirty_tree_runs_but_every_record_is_marked_dirty(tinyinfer: Project) -> None:
    (tinyinfer.root / "notes.txt").write_text("untracked files count\n")
    done = tinyinfer.nox("host")
    assert done.returncode == 0, done.stdout
    assert "dirty tree" in done.stdout
    rows = tinyinfer.ledger_steps()
    assert rows and all(r["dirty"] for r in rows)


def test_a_step_no_host_can_run_is_not_run_never_pass(tinyinfer: Project) -> None:
    (tinyinfer.hosts / "local.toml").write_text(
        '[host]\nname = "local"\nkind = "local"\ndetect = false\ncapabilities = ["make", "cc"]\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 0, done.stdout
    rows = tinyinfer.ledger_rows()
    assert rows["release-cuda"]["verdict"] == "not-run"
    assert rows["release-cuda"]["reason"] == "no host offers nvcc"
    assert "not run: release-cuda: no host offers nvcc" in done.stdout


def test_a_failing_test_fails_the_session_and_shows_the_tail(tinyinfer: Project) -> None:
    kernels = tinyinfer.root / "src" / "kernels_cpu.c"
    text = kernels.read_text()
    assert "ss += x[i] * x[i];" in text
    kernels.write_text(text.replace("ss += x[i] * x[i];", "ss += x[i];"))
    tinyinfer.commit("break rmsnorm")
    done = tinyinfer.nox("host")
    assert done.returncode != 0
    rows = tinyinfer.ledger_rows()
    assert rows["unit-tests"]["verdict"] == "fail"
    assert rows["unit-tests"]["reason"].startswith("make test: exit 2")
    assert "last lines of the log" in done.stdout
    assert rows["cli-help"]["verdict"] == "pass"  # the steps after a red one still run


def test_skip_and_expect_output_are_honoured(tinyinfer: Project) -> None:
    builds = tinyinfer.manifests / "builds.toml"
    text = builds.read_text().replace('expect_output = "^Usage: tinyinfer"', 'expect_output = "^Usage: other"')
    text += '\n[[check]]\nname = "soak"\nrun = "make soak"\nskip = "soak runs nightly, not per release"\n'
    builds.write_text(text)
    done = tinyinfer.nox("host")
    assert done.returncode != 0
    rows = tinyinfer.ledger_rows()
    assert rows["cli-help"]["verdict"] == "fail"
    assert rows["cli-help"]["reason"] == "output does not match /^Usage: other/"
    assert rows["soak"]["verdict"] == "skip" and rows["soak"]["reason"] == "soak runs nightly, not per release"


def test_a_secret_on_a_manifest_command_line_reaches_no_log_and_no_row(tinyinfer: Project) -> None:
    secret = "s3cr3t-token-value"
    (tinyinfer.manifests / "builds.toml").write_text(
        f'[[check]]\nname = "argv"\nrun = ["echo", "--token={secret}", "--password", "{secret}2"]\n'
        f'[[check]]\nname = "shell"\nshell = true\nrun = "echo --api-key={secret}3 && true"\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 0, done.stdout
    assert secret not in done.stdout + done.stderr
    for path in tinyinfer.home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    rows = tinyinfer.ledger_rows()
    assert rows["argv"]["command"] == "echo '--token=***' --password '***'"
    assert rows["shell"]["command"] == "echo --api-key=*** && true"


HEADER_ANCHOR = "#define TI_VERSION_PATCH 0"
HEADER_PLANT = "static int relgate_planted_helper(void) { return 0; }"


def test_a_header_warning_printed_once_per_file_is_one_place_counted_as_often_as_printed(
        tinyinfer: Project) -> None:
    header_line = tinyinfer.plant("include/tinyinfer.h", HEADER_ANCHOR, HEADER_PLANT)  # kernels_cpu.c and cli.c
    tinyinfer.plant("src/kernels_cpu.c", ANCHOR, PLANT)
    tinyinfer.commit("plant")
    done = tinyinfer.nox("host")
    assert done.returncode == 1
    row = tinyinfer.ledger_rows()["release-cpu"]
    log = (tinyinfer.home / row["log_path"]).read_text()
    assert log.count(f"include/tinyinfer.h:{header_line}:12: warning: ") == 2  # what gcc printed
    assert row["verdict"] == "fail"
    assert row["reason"].startswith("2 warnings at 2 places, 3 lines, first ")
    assert row["warning_count"] == 2
    printed = {w["file"]: w["printed"] for w in row["warnings"]}
    assert printed == {"include/tinyinfer.h": 2, "src/kernels_cpu.c": 1}
    assert "(printed 2 times)" in done.stdout


def test_an_allow_rule_that_matched_nothing_is_stale_and_fails_the_run(tinyinfer: Project) -> None:
    builds = tinyinfer.manifests / "builds.toml"
    builds.write_text(builds.read_text().replace(
        'run = "make cpu"\n',
        'run = "make cpu"\n[[release.cpu.allow]]\npattern = "relgate_planted_unused"\n'
        'reason = "kept for ABI, removed in 0.4"\n'))
    done = tinyinfer.nox("host")  # nothing planted: the rule accepts nothing
    assert done.returncode == 1, done.stdout
    rows = tinyinfer.ledger_rows()
    assert rows["release-cpu"]["verdict"] == "pass"
    assert rows["allow-rules"]["verdict"] == "fail"
    reason = rows["allow-rules"]["reason"]  # names the rule, not "exit 1"
    assert reason.startswith("1 stale allow rule (matched no warning; drop it): "), reason
    assert reason.endswith("builds.toml: release.cpu.allow[0] /relgate_planted_unused/"), reason
    log = (tinyinfer.home / rows["allow-rules"]["log_path"]).read_text()
    assert "builds.toml: release.cpu.allow[0]: /relgate_planted_unused/ (kept for ABI, removed in 0.4): stale" in log
    tinyinfer.plant("src/kernels_cpu.c", ANCHOR, PLANT)  # the warning it was written for is back
    tinyinfer.nox("host")
    rows = tinyinfer.ledger_rows()
    assert rows["release-cpu"]["verdict"] == "pass" and rows["allow-rules"]["verdict"] == "pass"


def test_a_step_past_its_timeout_fails_naming_the_limit(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "builds.toml").write_text(
        '[[check]]\nname = "hangs"\nrun = ["sleep", "30"]\ntimeout = 1\n'
        '[[check]]\nname = "after"\nrun = ["true"]\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = tinyinfer.ledger_rows()
    assert rows["hangs"]["verdict"] == "fail" and rows["hangs"]["reason"] == "timed out after 1 s: sleep 30"
    assert rows["after"]["verdict"] == "pass"  # the lane goes on after a red step
