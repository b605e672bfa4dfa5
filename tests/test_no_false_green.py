"""No false green: a lane that runs nothing, a typo in a lane row, a qualification run with no
tool named — each ends red (or not-run under --require-all), on real copies of the examples."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Project


def _edit(project: Project, old: str, new: str) -> None:
    lanes = project.manifests / "lanes.toml"
    text = lanes.read_text()
    assert old in text
    lanes.write_text(text.replace(old, new))


def test_a_typo_in_a_lane_row_makes_the_lane_session_red(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"', '"kernels-cpu" = "gtae"')
    done = tinyinfer.nox("gate", extra=("--", "--require-all"))
    assert done.returncode == 2, done.stdout  # the workspace loader refuses it before anything runs
    assert "nothing ran" not in done.stdout
    assert 'lanes.kernels-cpu: unknown lane "gtae" — did you mean "gate"?' in done.stderr


def test_a_deleted_row_makes_the_lane_session_red(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"\n', "")
    done = tinyinfer.nox("gate", extra=("--", "--require-all"))
    assert done.returncode == 1, done.stdout
    census = tinyinfer.ledger_rows()["lane-census"]
    assert census["verdict"] == "fail" and census["lane"] == "gate" and census["session"] == "gate"
    assert "kernels-cpu" in (tinyinfer.home / census["log_path"]).read_text()  # "assign one in this commit"


def test_a_lane_that_selects_no_target_is_not_run_and_require_all_fails_it(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"matvec-bench" = "bench"', '"matvec-bench" = "contract"')
    _edit(tinyinfer, '"matvec-bench-cuda" = "bench"', '"matvec-bench-cuda" = "contract"')
    (tinyinfer.hosts / "local.toml").write_text('[host]\nname = "local"\nkind = "local"\n')
    done = tinyinfer.nox("bench")
    assert done.returncode == 0, done.stdout  # not-run does not fail a run by default ...
    row = tinyinfer.ledger_rows()["bench"]
    assert row["verdict"] == "not-run" and row["reason"] == "no targets in this lane"
    assert tinyinfer.ledger_rows()["lane-census"]["verdict"] == "pass"
    strict = tinyinfer.nox("bench", extra=("--", "--require-all"))
    assert strict.returncode == 1, strict.stdout  # ... and --require-all fails it
    assert "not run: bench: no targets in this lane" in strict.stdout


def test_qualification_without_a_tool_lists_and_exits_0_only_when_listing_was_asked(scankern: Project) -> None:
    plain = scankern.nox("qualification")
    assert plain.returncode == 2, plain.stdout + plain.stderr
    assert "no tool named" in plain.stdout + plain.stderr
    assert "scan_qual" in plain.stdout  # the list came first
    listed = scankern.nox("qualification", extra=("--", "--list"))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "scan_qual" in listed.stdout


def test_lane_session_without_a_name_is_bad_usage(tinyinfer: Project) -> None:
    done = tinyinfer.nox("lane")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "name the lane" in done.stderr


# --- item 3: a release build that built nothing is not green -------------------------------------

HELP_GOAL = """.DEFAULT_GOAL := help
help:
\t@echo "usage: make cpu | cuda | test | clean"
"""


def _release(project: Project, body: str) -> None:
    (project.manifests / "builds.toml").write_text(body + '\n[[check]]\nname = "release-cpu"\nrelease = "cpu"\n')


def test_a_release_build_that_prints_help_and_exits_0_is_red(tinyinfer: Project) -> None:
    makefile = tinyinfer.root / "Makefile"
    makefile.write_text(HELP_GOAL + makefile.read_text())  # plain `make` prints help, like the C engine's
    tinyinfer.commit("default goal: help")
    _release(tinyinfer, '[release.cpu]\nclean = "make clean"\nrun = "make"\n'
                        'produces = ["build/tinyinfer", "build/lib*.a"]\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    row = tinyinfer.ledger_rows()["release-cpu"]
    assert row["verdict"] == "fail" and row["reason"] == "produced nothing matching build/tinyinfer"
    _release(tinyinfer, '[release.cpu]\nclean = "make clean"\nrun = "make cpu"\n'
                        'produces = ["build/tinyinfer", "build/lib*.a"]\nexpect_output = "ar rcs build/lib"\n')
    assert tinyinfer.nox("host").returncode == 0


def test_a_product_older_than_the_step_was_not_built_by_it(tinyinfer: Project) -> None:
    _release(tinyinfer, '[release.cpu]\nrun = "make cpu"\nproduces = ["build/lib*.a"]\n')  # no clean
    assert tinyinfer.nox("host").returncode == 0
    again = tinyinfer.nox("host")  # make: nothing to be done; the library is the first run's
    assert again.returncode == 1, again.stdout
    reason = tinyinfer.ledger_rows()["release-cpu"]["reason"]
    assert reason == "build/libtinyinfer.a older than the step: build/lib*.a was not rebuilt"


def test_expect_output_on_a_release_target_and_on_its_check(tinyinfer: Project) -> None:
    _release(tinyinfer, '[release.cpu]\nclean = "make clean"\nrun = "make cpu"\nexpect_output = "^nvcc "\n')
    done = tinyinfer.nox("host")
    assert done.returncode == 1
    assert tinyinfer.ledger_rows()["release-cpu"]["reason"] == "output does not match /^nvcc /"
    (tinyinfer.manifests / "builds.toml").write_text(
        '[release.cpu]\nclean = "make clean"\nrun = "make cpu"\n'
        '[[check]]\nname = "release-cpu"\nrelease = "cpu"\nexpect_output = "kernels_cpu"\nproduces = ["build/tinyinfer"]\n')
    assert tinyinfer.nox("host").returncode == 0


# --- items 8 and 9: what a C engine looks like -----------------------------------------------------

def test_a_c_engine_without_changelog_or_version_whose_targets_share_one_test_file(tinyinfer: Project) -> None:
    (tinyinfer.root / "CHANGELOG.md").unlink()
    tinyinfer.commit("no changelog")
    project = tinyinfer.manifests / "project.toml"
    project.write_text(project.read_text().replace('version = "0.3.0"\n', "").replace('changelog = "CHANGELOG.md"'
                                                                                       "           # relative to root\n", ""))
    assert "version" not in project.read_text() and "changelog" not in project.read_text()
    _edit(tinyinfer, '"matvec-bench" = "bench"\n', '"matvec-bench" = "bench"\n"kernels-cpu-again" = "record"\n')
    lanes = tinyinfer.manifests / "lanes.toml"  # one test file, run twice with different switches
    lanes.write_text(lanes.read_text() + '\n[target.kernels-cpu-again]\npath = "tests/test_kernels.c"\n'
                                         'command = "make test CFLAGS=-O0"\n')
    check = tinyinfer.relgate("check")
    assert check.returncode == 0, check.stderr
    assert "(no version)" in check.stdout
    census = tinyinfer.relgate("census")
    assert census.returncode == 0, census.stdout
    assert tinyinfer.nox("gate").returncode == 0
    accept = tinyinfer.relgate("evidence", "accept")
    assert accept.returncode == 2 and "project.version is not set" in accept.stderr
    assert tinyinfer.relgate("evidence", "accept", "--release", "r1").returncode == 0


# --- what a user hits next --------------------------------------------------------------------------

def test_names_select_host_checks(tinyinfer: Project) -> None:
    done = tinyinfer.nox("host", extra=("--", "release-cpu"))
    assert done.returncode == 0, done.stdout
    assert [r for r in tinyinfer.ledger_rows()] == ["release-cpu"]
    both = tinyinfer.nox("host", "gate", extra=("--", "cli-help", "kernels-cpu"))  # each session picks its own
    assert both.returncode == 0, both.stdout
    steps = [(r["session"], r["step"]) for r in tinyinfer.ledger_steps()]
    assert ("host", "cli-help") in steps and ("gate", "kernels-cpu") in steps
    assert ("host", "unit-tests") not in steps and ("gate", "kernels-cuda") not in steps
    typo = tinyinfer.nox("host", extra=("--", "release-cpx"))
    assert typo.returncode == 2 and "Traceback" not in typo.stderr


def test_several_sessions_writing_one_report_file_is_bad_usage(tinyinfer: Project, tmp_path) -> None:
    done = tinyinfer.nox("host", "gate", extra=("--", "--junit", str(tmp_path / "out.xml")))
    assert done.returncode == 2, done.stdout
    assert "2 sessions would each overwrite it; put {session} in the name" in done.stderr
    assert not (tmp_path / "out.xml").exists()
    assert not (tinyinfer.home / "ledger.sqlite3").exists()  # refused before anything ran
    one = tinyinfer.nox("host", extra=("--", "release-cpu", "--junit", str(tmp_path / "out.xml")))
    assert one.returncode == 0 and (tmp_path / "out.xml").is_file()


def test_a_report_inside_the_project_tree_is_warned_about(tinyinfer: Project, tmp_path) -> None:
    inside = tinyinfer.nox("host", extra=("--", "release-cpu", "--junit", str(tinyinfer.root / "out" / "j.xml")))
    assert inside.returncode == 0
    assert "lies inside the project's tree" in inside.stdout
    after = tinyinfer.nox("host", extra=("--", "release-cpu"))
    assert "dirty tree" in after.stdout  # what the warning is about
    (tinyinfer.root / ".gitignore").write_text("build/\nout/\n")
    tinyinfer.commit("ignore out/")
    ignored = tinyinfer.nox("host", extra=("--", "release-cpu", "--junit", str(tinyinfer.root / "out" / "j.xml")))
    assert "lies inside" not in ignored.stdout
    outside = tinyinfer.nox("host", extra=("--", "release-cpu", "--junit", str(tmp_path / "j.xml")))
    assert "lies inside" not in outside.stdout


def test_reuse_on_a_dirty_tree_says_nothing_can_be_reused(tinyinfer: Project) -> None:
    (tinyinfer.root / "scratch.txt").write_text("x\n")
    done = tinyinfer.nox("host", extra=("--", "release-cpu", "--reuse"))
    assert "--reuse: the tree at" in done.stdout and "is dirty" in done.stdout and "nothing can be reused" in done.stdout


def test_census_runs_without_a_hosts_folder(tinyinfer: Project, tmp_path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in tinyinfer.env.items() if k != "RELGATE_HOSTS"}
    workspace = tmp_path / "elsewhere"
    workspace.mkdir()
    done = subprocess.run([sys.executable, "-m", "relgate.cli", "--workspace", str(workspace), "census"], env=env,
                          capture_output=True, text=True, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "0 violations" in done.stdout
    named = subprocess.run([sys.executable, "-m", "relgate.cli", "--hosts", str(tmp_path / "nope"), "census"],
                           env=env, capture_output=True, text=True, cwd=workspace)
    assert named.returncode == 2 and "no such host folder" in named.stderr  # one that was named must exist


def test_summary_and_status_tables_fit_120_columns_and_the_json_keeps_full_paths(tinyinfer: Project,
                                                                                  tmp_path) -> None:
    (tinyinfer.manifests / "builds.toml").write_text(
        '[[check]]\nname = "a-check-with-a-rather-long-name-for-a-table"\n'
        'run = ["sh", "-c", "echo this step fails with a long explanation of why it failed; exit 3"]\n'
        '[[check]]\nname = "fine"\nrun = "true"\n')
    report = tmp_path / "r.json"
    done = tinyinfer.nox("host", extra=("--", "--report", str(report)))
    assert done.returncode == 1
    table = done.stdout[done.stdout.index("\nstep "):].splitlines()[1:5]
    assert table[0].startswith("step ") and all(len(line) <= 120 for line in table), table
    assert "logs in " in done.stdout
    logs = [s["log"] for s in json.loads(report.read_text())["steps"] if s["log"]]
    assert logs and all(Path(p).is_absolute() and Path(p).is_file() for p in logs)
    status = tinyinfer.relgate("status")
    rows = [line for line in status.stdout.splitlines()[1:] if not line.startswith("logs in ")]  # the folder: a path
    assert rows and all(len(line) <= 120 for line in rows), status.stdout
    steps = tinyinfer.ledger_steps()
    assert all((tinyinfer.home / s["log_path"]).is_file() for s in steps if s["log_path"])
