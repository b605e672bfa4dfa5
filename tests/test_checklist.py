"""The checklist's statuses, decided from ledger rows: one table of (rows, decisions, expected
status). The rows are records as the ledger returns them (the predicates read nothing else);
the sign-off tests (test_signoff.py) drive the same code through real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from relgate.core.verdict import Verdict
from relgate.ledger.rows import DecisionRow, StepRow
from relgate.manifest.checklist import ChecklistItem, ChecklistSpec, ReleaseSpec
from relgate.measure.candidate import Candidate
from relgate.signoff.checklist import DONE, Facts, evaluate_item

HEAD = "c" * 40
OTHER = "d" * 40
BOARD = "NVIDIA H200"

GATE = ChecklistItem(id="cpu", title="CPU kernel tests passed", auto="session:gate", targets=("kernels-cpu",))
CUDA = ChecklistItem(id="cuda", title="CUDA kernel tests passed", auto="session:gate", targets=("kernels-cuda",),
                     applies=("cuda",), not_validated="CUDA was not validated for this release.")
MANUAL = ChecklistItem(id="ci-green", title="CI is green", auto=None)
SPEC = ChecklistSpec(release=ReleaseSpec(version="0.3.0", boards=(BOARD,), backends=("cpu",), notes=(),
                                         tag_requires=("ci-green",)),
                     items=(GATE, CUDA, MANUAL), source=Path("checklist.toml"))


def step(verdict: Verdict, *, target: str = "kernels-cpu", commit: str = HEAD, dirty: bool = False,
         board: str | None = BOARD, reason: str | None = None, id: int = 1) -> StepRow:
    return StepRow(id=id, run_id="r1", session="gate", step=target, lane="gate", target=target, host="h200",
                   board=board, driver="550.54", toolkit="12.4", commit_sha=commit, dirty=dirty, command="make test",
                   cwd=None, env={}, started="2026-12-05T00:00:00", duration=1.0,
                   exit_code=0 if verdict is Verdict.PASS else 1, verdict=verdict, reason=reason, warning_count=0,
                   warnings=[], log_path="logs/x.log", log_sha256="ab", tail=None)


def decision(kind: str, *, item: str = "cpu", commit: str = HEAD, note: str | None = "why") -> DecisionRow:
    return DecisionRow(id=1, project="tinyinfer", commit_sha=commit, dirty=False, item=item, kind=kind, by="ana",
                       note=note, step_id=None, created="2026-12-05T00:00:00")


def status(item: ChecklistItem, *rows: StepRow, decisions: tuple[DecisionRow, ...] = ()) -> tuple[str, str]:
    facts = Facts(candidate=Candidate(commit=HEAD, dirty=False, same_tree=(HEAD,), notes=()), steps=rows,
                  decisions=decisions)
    result = evaluate_item(item, facts, SPEC)
    return result.status, result.reason


@pytest.mark.parametrize(("verdict", "expected"), [
    (Verdict.PASS, "passed"),
    (Verdict.FAIL, "failed"),
    (Verdict.ERROR, "failed"),  # the harness broke: not a pass, whatever the code did
    (Verdict.SKIP, "failed"),  # chosen not to run: a person skips the item, not the step
    (Verdict.NOT_RUN, "missing"),  # nothing could run it: missing, never passed
])
def test_an_auto_item_passes_only_on_a_pass(verdict: Verdict, expected: str) -> None:
    got, reason = status(GATE, step(verdict, reason="why"))
    assert got == expected, reason
    assert (got in DONE) is (verdict is Verdict.PASS)


@pytest.mark.parametrize(("row", "why"), [
    (step(Verdict.PASS, dirty=True), "only from a dirty tree at this commit"),
    (step(Verdict.PASS, commit=OTHER), "never run for cccccccccccc"),
    (step(Verdict.PASS, board="NVIDIA H100"), "not run on NVIDIA H200"),
    (step(Verdict.PASS, target="kernels-other"), "gate/kernels-cpu: never run for cccccccccccc"),
])
def test_a_pass_that_does_not_count_leaves_the_item_missing(row: StepRow, why: str) -> None:
    got, reason = status(GATE, row)
    assert got == "missing" and why in reason


def test_the_latest_row_of_a_board_decides() -> None:
    assert status(GATE, step(Verdict.PASS, id=1), step(Verdict.FAIL, id=2))[0] == "failed"
    assert status(GATE, step(Verdict.FAIL, id=1), step(Verdict.PASS, id=2))[0] == "passed"


def test_a_manual_item_needs_an_attestation_for_this_commit() -> None:
    assert status(MANUAL) == ("missing", "needs an attestation: relgate attest ci-green --by NAME")
    assert status(MANUAL, decisions=(decision("attest", item="ci-green"),)) == ("attested", "attested by ana: why")
    assert status(MANUAL, decisions=(decision("attest", item="ci-green", commit=OTHER),))[0] == "missing"


def test_an_auto_item_cannot_be_attested() -> None:
    assert status(GATE, step(Verdict.FAIL), decisions=(decision("attest"),))[0] == "failed"


def test_a_skip_is_written_down_with_what_it_overrides() -> None:
    got, reason = status(GATE, step(Verdict.FAIL, reason="exit 1"), decisions=(decision("skip", note="flaky board"),))
    assert got == "skipped"
    assert reason == "skipped by ana: flaky board (it ran and failed: gate/kernels-cpu on NVIDIA H200: fail (exit 1))"


def test_not_validated_never_covers_a_failure() -> None:
    assert status(GATE, decisions=(decision("not-validated"),))[0] == "not-validated"
    got, reason = status(GATE, step(Verdict.FAIL), decisions=(decision("not-validated"),))
    assert got == "failed" and "marked not validated, but it ran and failed" in reason


def test_an_item_outside_the_release_backends_is_not_applicable() -> None:
    got, reason = status(CUDA)
    assert got == "not-applicable" and reason == "applies to cuda; this release's backends are cpu"
