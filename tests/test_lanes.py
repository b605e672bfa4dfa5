"""Lanes on real copies of both bundled examples: real cargo, make, gcc, git."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import Project, copy_example, git, ledger_of

FILE_SECONDS = 40  # about how long this file takes here: it starts early (tests/conftest.py)

RED_ARM = """
#[test]
#[ignore = "contract arm: run by the contract lane"]
fn planted_red_arm() {
    panic!("planted red arm in {}", file!());
}
"""
AFTER_TARGET = """
[[test]]
name = "zz_after_contract"
path = "tests/zz_after_contract.rs"
"""
AFTER_SOURCE = """
#[test]
#[ignore = "contract arm: run by the contract lane"]
fn still_runs() {
    scankern::evidence::record("contract", "after", "ran", 1);
}
"""


# --- the Rust example: one copy for the whole module (it compiles once) --------------------------

@pytest.fixture(scope="module")
def rust(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = copy_example(tmp_path_factory.mktemp("rust"), "scankern")
    done = project.nox("host", "gate", "contract")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    project.first_run = done  # type: ignore[attr-defined]
    return project


def test_rust_example_host_gate_contract_from_a_clean_checkout(rust: Project) -> None:
    out = rust.first_run.stdout  # type: ignore[attr-defined]
    for step in ("lane-census", "release", "features[]", "features[fast,qualification]", "host_smoke",
                 "scan_parity", "segmented_parity", "scan_contract", "layout_contract"):
        assert f"  {step}  pass" in out, step
    rows = rust.ledger_rows()
    assert rows["scan_contract"]["command"].endswith("--test scan_contract --locked -- --ignored")
    assert rows["scan_parity"]["lane"] == "gate" and rows["scan_parity"]["target"] == "scan_parity"
    assert rows["scan_parity"]["dirty"] is False


def test_lane_runs_store_evidence_indexed_by_commit_host_board_lane_target(rust: Project) -> None:
    head = git(rust.root, "rev-parse", "HEAD").strip()
    with ledger_of(rust) as ledger:
        captured = {(e.lane, e.target): e for e in ledger.evidence(commit=head)}
    assert {("gate", "scan_parity"), ("gate", "segmented_parity"), ("contract", "scan_contract"),
            ("contract", "layout_contract"), ("host", "host_smoke")} <= set(captured)
    parity = captured[("gate", "scan_parity")]
    assert parity.host == "local" and parity.commit_sha == head and not parity.dirty
    text = (rust.home / parity.path).read_text()
    assert "scan\tparity\tu32_sum_4096\t" in text
    assert parity.path.endswith(f"{parity.sha256}.cells")


def test_reuse_rerun_keeps_passes_for_the_same_commit(rust: Project, tmp_path: Path) -> None:
    report, junit = tmp_path / "{session}.json", tmp_path / "{session}.xml"
    done = rust.nox("host", "gate", "contract", extra=("--", "--reuse", "--report", str(report),
                                                       "--junit", str(junit)))
    assert done.returncode == 0, done.stdout
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["contract.json", "gate.json", "host.json"]
    data = json.loads((tmp_path / "contract.json").read_text())
    assert data["session"] == "contract" and data["ok"] is True
    census, *targets = data["steps"]
    assert census["step"] == "lane-census" and not census["reused_from"]  # in-process checks always run again
    assert all(s["reused_from"] for s in targets) and targets
    assert all(s["reason"].startswith("reused: passed as step #") for s in targets)
    suite = ET.parse(tmp_path / "contract.xml").getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "0"
    assert {c.get("name") for c in suite.iter("testcase")} == {"lane-census", "scan_contract", "layout_contract"}
    with ledger_of(rust) as ledger:
        reused = [r for r in ledger.steps() if r.reused_from]
        assert reused and all(ledger.evidence(step_id=r.id) or r.lane == "host" for r in reused)


def test_record_lists_without_names_and_runs_only_named_targets(rust: Project) -> None:
    listed = rust.nox("record")
    assert listed.returncode == 0, listed.stdout
    assert "scan_record: cargo test --release --test scan_record --locked -- --ignored" in listed.stdout
    assert "name the targets to run after --" in listed.stdout
    ran = rust.nox("record", extra=("--", "scan_record"))
    assert ran.returncode == 0, ran.stdout
    assert "record  scan_record  pass" in ran.stdout
    typo = rust.nox("record", extra=("--", "scan_recrod"))
    assert typo.returncode == 2
    assert "no target 'scan_recrod' in any lane — did you mean \"scan_record\"?" in typo.stdout + typo.stderr


def test_qualification_runs_once_per_board_and_toolkit(rust: Project) -> None:
    done = rust.nox("qualification", extra=("--", "scan_qual"))
    assert done.returncode == 0, done.stdout
    rows = rust.ledger_rows()
    assert rows["scan_qual@local"]["verdict"] == "pass"
    assert "--features qualification" in rows["scan_qual@local"]["command"]


def test_bench_keeps_timings_without_judging_them(rust: Project) -> None:
    done = rust.nox("bench")
    assert done.returncode == 0, done.stdout
    row = rust.ledger_rows()["scan_bench"]
    assert row["verdict"] == "pass" and row["reason"].startswith("timing only")
    assert "bench scan_u32" in (rust.home / row["log_path"]).read_text()


# --- a contract lane lists every red and keeps going -----------------------------------------

def test_contract_lane_reports_every_red_and_runs_the_targets_after_them(scankern: Project) -> None:
    for name in ("scan_contract", "layout_contract"):
        path = scankern.root / "tests" / f"{name}.rs"
        path.write_text(path.read_text() + RED_ARM)
    (scankern.root / "tests" / "zz_after_contract.rs").write_text(AFTER_SOURCE)
    cargo = scankern.root / "Cargo.toml"
    cargo.write_text(cargo.read_text() + AFTER_TARGET)
    lanes = scankern.root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '"zz_after_contract" = "contract"\n')
    scankern.commit("two red contract arms")
    done = scankern.nox("contract")
    assert done.returncode == 1, done.stdout
    rows = scankern.ledger_rows()
    assert rows["scan_contract"]["verdict"] == "fail"
    assert rows["layout_contract"]["verdict"] == "fail"
    assert rows["zz_after_contract"]["verdict"] == "pass"
    assert "planted red arm" in done.stdout  # the tail of each red target is shown
    assert "2 pass, 2 fail" in done.stdout  # the lane census, then the targets
    assert "red (2): scan_contract, layout_contract" in done.stdout


# --- the C example: CUDA arms and --require-all -------------------------------------------------

def test_c_example_cuda_arms_are_not_run_and_require_all_fails_them(tinyinfer: Project) -> None:
    # This machine with nothing detected and nothing declared: it offers no cuda, GPU or not, so
    # the CUDA arms must come back not-run on every machine (a pass here is the false green).
    (tinyinfer.hosts / "local.toml").write_text('[host]\nname = "local"\nkind = "local"\ndetect = false\n')
    done = tinyinfer.nox("host", "gate", "contract")
    assert done.returncode == 0, done.stdout
    rows = tinyinfer.ledger_rows()
    for arm in ("kernels-cuda", "cli-contract-cuda"):
        assert rows[arm]["verdict"] == "not-run" and rows[arm]["reason"] == "no host offers cuda", rows[arm]
    assert "not run: kernels-cuda: no host offers cuda" in done.stdout
    assert rows["kernels-cpu"]["verdict"] == "pass" and rows["cli-contract-cpu"]["verdict"] == "pass"
    strict = tinyinfer.nox("gate", extra=("--", "--require-all"))
    assert strict.returncode == 1, strict.stdout
    assert "--require-all: 1 step(s) not run count as a failure" in strict.stdout


def test_a_target_expected_to_record_evidence_that_brings_none_is_an_error(tinyinfer: Project) -> None:
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('command = "make test"\n', 'command = "true"\n', 1))
    done = tinyinfer.nox("gate")
    assert done.returncode == 1
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "error"
    assert row["reason"] == "expected evidence in $TINYINFER_EVIDENCE, none came back (no file)"


def test_placement_names_what_is_missing_and_an_unreachable_host_is_an_error(tinyinfer: Project) -> None:
    from sshd_support import free_port

    (tinyinfer.hosts / "known_hosts").write_text("")
    (tinyinfer.hosts / "gpu1.toml").write_text(
        f'[host]\nname = "gpu1"\nkind = "ssh"\naddress = "127.0.0.1"\nport = {free_port()}\nboards = ["H100"]\n'
        'capabilities = ["cuda", "sm90"]\nknown_hosts = "known_hosts"\nconnect_timeout = 2\n')  # nobody listens
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('command = "make bench"\n',
                                               'command = "make bench"\nrequires = ["MI300X"]\n'))
    done = tinyinfer.nox("gate", "bench")
    assert done.returncode == 1  # an error is not a pass
    rows = tinyinfer.ledger_rows()
    assert rows["kernels-cuda"]["verdict"] == "error" and rows["kernels-cuda"]["host"] == "gpu1"
    assert "gpu1 (127.0.0.1:" in rows["kernels-cuda"]["reason"] and "cannot connect" in rows["kernels-cuda"]["reason"]
    assert rows["matvec-bench"]["reason"] == "no host offers MI300X"


def test_census_violations_fail_the_host_session_with_the_fix(tinyinfer: Project) -> None:
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('"matvec-bench" = "bench"\n',
                                               '"matvec-bench" = "bench"\n"old-soak" = "gate"\n'))
    census = tinyinfer.relgate("census")
    assert census.returncode == 1
    assert "old-soak" in census.stdout and "drop the row" in census.stdout
    done = tinyinfer.nox("host")
    assert done.returncode == 1
    assert tinyinfer.ledger_rows()["lane-census"]["verdict"] == "fail"


def test_bad_run_options_are_bad_input(tinyinfer: Project) -> None:
    done = tinyinfer.nox("gate", extra=("--", "--no-such-flag"))
    assert done.returncode == 2
    assert "unrecognized arguments: --no-such-flag" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_project_defined_lane_runs_by_name(tinyinfer: Project) -> None:
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('"matvec-bench" = "bench"\n', '"matvec-bench" = "bench"\n'
                                               '"soak-cpu" = "soak"\n')
                     + '\n[lane.soak]\ndescription = "long CPU soak"\nmode = "all"\n'
                       '\n[target.soak-cpu]\npath = "Makefile"\ncommand = "make test"\n')
    done = tinyinfer.nox("lane", extra=("--", "soak"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tinyinfer.ledger_rows()["soak-cpu"]["lane"] == "soak"
    typo = tinyinfer.nox("lane", extra=("--", "saok"))
    assert typo.returncode == 2
    assert "no lane 'saok' — did you mean \"soak\"?" in typo.stdout + typo.stderr
    census = tinyinfer.relgate("census")
    assert census.returncode == 0, census.stdout  # a declared lane is a known lane
