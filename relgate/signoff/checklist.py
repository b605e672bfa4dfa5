"""The checklist, evaluated for the candidate: each item passed, failed, missing, attested,
skipped, not-validated or not-applicable, with the reason and the ledger rows behind it.

Auto items are predicates over the ledger for this project and candidate (rows of another
commit, or from a dirty tree, never count); manual items need a person's attestation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.evidence.baselines import board_key
from relgate.ledger.store import DecisionRow, EvidenceRow, StepRow
from relgate.manifest.checklist import ChecklistItem, ChecklistSpec
from relgate.measure.candidate import Candidate
from relgate.measure.quality import QualityReport
from relgate.measure.results import Comparison
from relgate.measure.verdicts import BLOCK, PASS, SLOWER

__all__ = ["STATUSES", "DONE", "ItemResult", "Facts", "evaluate_item", "evaluate", "describe"]

STATUSES = ("passed", "failed", "missing", "attested", "skipped", "not-validated", "not-applicable")
DONE = frozenset({"passed", "attested", "skipped", "not-validated", "not-applicable"})


@record
class ItemResult:
    item: ChecklistItem
    status: str
    reason: str
    steps: tuple[StepRow, ...] = ()  # the ledger rows the status rests on
    decision: DecisionRow | None = None
    runs: tuple[tuple[DecisionRow, StepRow | None], ...] = ()  # manual runs linked to the item
    overridden: str | None = None  # a skip over a failure: what failed

    @property
    def done(self) -> bool:
        return self.status in DONE


@record
class Facts:
    """Everything the predicates look at, read once."""

    candidate: Candidate
    steps: Sequence[StepRow]  # the project's steps at the candidate's commits (clean and dirty)
    other_commits: Mapping[str, str] = field(default_factory=dict)  # session or lane → a commit it ran at elsewhere
    decisions: Sequence[DecisionRow] = ()
    evidence: Sequence[EvidenceRow] = ()  # captures at the candidate's commits
    comparisons: Mapping[str, Comparison] = field(default_factory=dict)
    quality: Mapping[str, QualityReport] = field(default_factory=dict)
    steps_by_id: Mapping[int, StepRow] = field(default_factory=dict)


def _board(row: StepRow) -> str:
    return board_key(row.board, row.host)


def _label(row: StepRow) -> str:
    return f"{row.session}/{row.step}"


def _why(row: StepRow) -> str:
    return f"{_label(row)} on {_board(row)}: {row.verdict.value}" + (f" ({row.reason})" if row.reason else "")


def _never(facts: Facts, what: str, rows: Sequence[StepRow]) -> str:
    if any(r.dirty for r in rows):
        return f"{what}: only from a dirty tree at this commit (dirty-tree evidence never counts); commit and rerun"
    elsewhere = facts.other_commits.get(what)
    if elsewhere:
        return f"{what}: only at another commit ({elsewhere[:12]}); rerun at {facts.candidate.commit[:12]}"
    return f"{what}: never run for {facts.candidate.commit[:12]}"


def _per_board(facts: Facts, rows: Sequence[StepRow], what: str, boards: Sequence[str] | None,
               names: Sequence[str]) -> tuple[str, str, tuple[StepRow, ...]]:
    """The latest clean row of every step (``names``, else every step seen) on every board
    (``boards``; None: wherever it ran): all pass → passed."""
    clean = [r for r in rows if facts.candidate.counts(r.commit_sha, r.dirty)]
    if not clean:
        return "missing", _never(facts, what, rows), ()
    wanted = list(names) or list(dict.fromkeys(r.step for r in clean))
    used: list[StepRow] = []
    failed: list[str] = []
    missing: list[str] = []
    for name in wanted:
        mine = [r for r in clean if r.step == name or r.target == name]
        if not mine:
            missing.append(f"{what}/{name}: never run for {facts.candidate.commit[:12]}")
            continue
        for board in boards if boards is not None else list(dict.fromkeys(_board(r) for r in mine)):
            here = [r for r in mine if _board(r) == board or r.verdict is Verdict.NOT_RUN]
            if not here:
                missing.append(f"{_label(mine[-1])}: not run on {board}")
                continue
            row = here[-1]
            used.append(row)
            if row.verdict is Verdict.NOT_RUN:  # nothing could run it: missing, not failed
                missing.append(f"{_label(row)} on {board}: not run ({row.reason})")
            elif row.verdict is not Verdict.PASS:
                failed.append(_why(row))
    if failed:
        return "failed", "; ".join(failed), tuple(used)
    if missing:
        return "missing", "; ".join(missing), tuple(used)
    where = f" on {', '.join(boards)}" if boards else ""
    return "passed", f"{len(used)} step(s) passed{where}{_tests_text(used)}", tuple(used)


def _tests_text(rows: Sequence[StepRow]) -> str:
    """``; tests: 41 passed, 2 skipped`` summed over the rows whose runner was read ('' if none)."""
    counted = [r.tests for r in rows if r.tests is not None]
    if not counted:
        return ""
    passed, failed, skipped = (sum(getattr(c, f) for c in counted) for f in ("passed", "failed", "skipped"))
    parts = [f"{passed} passed"] + [f"{n} {w}" for n, w in ((failed, "failed"), (skipped, "skipped")) if n]
    return f"; tests: {', '.join(parts)} ({len(counted)} of {len(rows)} step(s) counted)"


def _evidence(facts: Facts, boards: Sequence[str]) -> tuple[str, str, tuple[StepRow, ...]]:
    rows = [r for r in facts.steps if r.session == "evidence"]
    clean = [r for r in rows if facts.candidate.counts(r.commit_sha, r.dirty)]
    if not clean:
        return "missing", _never(facts, "evidence", rows) + " (nox -s evidence)", ()
    last_capture = max((e.step_id for e in facts.evidence if not e.dirty), default=0)
    used, failed, missing = [], [], []
    for board in boards:
        mine = [r for r in clean if r.target == board]
        if not mine:
            missing.append(f"evidence on {board}: not checked (no capture or baseline on this board)")
            continue
        row = mine[-1]
        if row.verdict is Verdict.NOT_RUN:
            # "No capture at this commit" after a commit that changed only the release notes says nothing
            # against the check of the qualified commit: that one stands.
            earlier = [r for r in mine if r.commit_sha != row.commit_sha and r.verdict is not Verdict.NOT_RUN]
            row = earlier[-1] if earlier else row
        used.append(row)
        if row.id < last_capture:
            missing.append(f"evidence on {board}: checked before the latest capture (step #{last_capture}); "
                           "run nox -s evidence again")
        elif row.verdict is Verdict.NOT_RUN:
            missing.append(f"evidence on {board}: not compared ({row.reason})")
        elif row.verdict is not Verdict.PASS:
            failed.append(f"evidence on {board}: {row.verdict.value}" + (f" ({row.reason})" if row.reason else ""))
    stale = [r for r in clean if r.step == "intentional-changes"]
    if stale and stale[-1].verdict is not Verdict.PASS:
        failed.append(f"intentional.toml: {stale[-1].verdict.value} ({stale[-1].reason or 'stale entries'})")
    if failed:
        return "failed", "; ".join(failed), tuple(used)
    if missing:
        return "missing", "; ".join(missing), tuple(used)
    return "passed", f"clean against the accepted baseline on {', '.join(boards)}", tuple(used)


def _warnings(facts: Facts) -> tuple[str, str, tuple[StepRow, ...]]:
    clean = [r for r in facts.steps if facts.candidate.counts(r.commit_sha, r.dirty)]
    if not any(r.session == "host" for r in clean):
        return "missing", _never(facts, "host", [r for r in facts.steps if r.session == "host"]), ()
    latest: dict[tuple[str, str, str], StepRow] = {}
    for row in clean:
        latest[(row.session, row.step, _board(row))] = row
    warned = [r for r in latest.values() if r.warning_count]
    if warned:
        return "failed", "; ".join(f"{_label(r)} on {_board(r)}: {r.warning_count} warning(s)" for r in warned), \
            tuple(warned)
    scanned = [r for r in latest.values() if r.scanned]
    if not scanned and all(r.scanned is not None for r in latest.values()):
        return "missing", (f"no build was scanned for warnings in the latest {len(latest)} step(s) (a release "
                           "build, or a check with warnings = \"deny\", that ran to the end)"), ()
    counted = f"{len(scanned)} scanned build(s) of " if scanned else ""
    return "passed", f"no warnings in the latest {counted}{len(latest)} step(s)", tuple(scanned)


def _measure(facts: Facts, name: str, boards: Sequence[str]) -> tuple[str, str, tuple[StepRow, ...]]:
    comp = facts.comparisons.get(name)
    if comp is None:
        return "missing", f"measure {name}: not compared", ()
    verdicts = [(b.board, b.verdict) for b in comp.boards if not boards or b.board in boards]
    if not verdicts:
        return "missing", f"measure {name}: not compared on {', '.join(boards)}", ()
    text = "; ".join(f"{board}: {v}" for board, v in verdicts)
    if any(v == BLOCK for _, v in verdicts):
        return "failed", text, ()
    if not all(v in (PASS, SLOWER) for _, v in verdicts):  # rerun, undecided, missing rows, not measured: open
        return "missing", text, ()
    return "passed", text, ()


def _quality(facts: Facts, name: str, boards: Sequence[str]) -> tuple[str, str, tuple[StepRow, ...]]:
    report = facts.quality.get(name)
    if report is None:
        return "missing", f"quality {name}: not checked", ()
    mine = [b for b in report.boards if not boards or b.board in boards]
    if not mine:
        return "missing", f"quality {name}: not checked on {', '.join(boards)}", ()
    broken = [f"{b.board}: {r.band.display()} broken ({r.value:g})" for b in mine for r in b.results if not r.held]
    if broken:
        return "failed", "; ".join(broken), ()
    unmeasured = [f"{b.board}: {b.verdict}" for b in mine if b.not_measured]
    if unmeasured:
        return "missing", "; ".join(unmeasured), ()
    return "passed", "; ".join(f"{b.board}: every band held" for b in mine), ()


def _auto(item: ChecklistItem, facts: Facts, spec: ChecklistSpec) -> tuple[str, str, tuple[StepRow, ...]]:
    kind, arg = item.auto_kind
    boards = spec.release.boards_for(item.applies) if item.boards is None else item.boards
    offers = _offering(spec, item)
    if item.applies and kind in ("session", "lane", "measure", "quality") and boards:
        # an item of a backend passes only where that backend is: nvcc compiling on a
        # GPU-less host is no CUDA board's check
        kept = tuple(b for b in boards if offers(b))
        if not kept:
            return "missing", (f"no board of this release offers {' or '.join(item.applies)} "
                               f"({', '.join(boards)}: no such board; name one in "
                               f"release.backend_boards, or mark the item not validated)"), ()
        boards = kept
    where = boards or None  # boards = []: wherever it ran
    if kind == "session":
        rows = [r for r in facts.steps if r.session == arg and (offers(_board(r)) or r.verdict is Verdict.NOT_RUN)]
        return _per_board(facts, rows, arg or "", where, item.targets)
    if kind == "lane":
        rows = [r for r in facts.steps if r.lane == arg and (offers(_board(r)) or r.verdict is Verdict.NOT_RUN)]
        return _per_board(facts, rows, arg or "", where, item.targets)
    if kind in ("package", "publish"):
        session = "package_verify" if kind == "package" else "publish_dry_run"
        return _per_board(facts, [r for r in facts.steps if r.session == session], session, None, item.targets)
    if kind == "evidence":  # of no backend: every board of the release, each backend's too
        return _evidence(facts, item.boards or (boards if item.applies else spec.release.all_boards))
    if kind == "warnings":
        return _warnings(facts)
    if kind == "measure":
        return _measure(facts, arg or "", boards)
    return _quality(facts, arg or "", boards)


def _offering(spec: ChecklistSpec, item: ChecklistItem) -> Callable[[str], bool]:
    """A test of a board: does it offer one of the item's backends (every board, for an item of none)."""
    if not item.applies:
        return lambda board: True
    return lambda board: any(spec.release.offers(board, backend) for backend in item.applies)


def evaluate_item(item: ChecklistItem, facts: Facts, spec: ChecklistSpec) -> ItemResult:
    backends = spec.release.backends
    if item.applies and not set(item.applies) & set(backends):
        return ItemResult(item=item, status="not-applicable",
                          reason=f"applies to {', '.join(item.applies)}; this release's backends are "
                                 f"{', '.join(backends) or 'none'}")
    mine = [d for d in facts.decisions if d.item == item.id and d.commit_sha in facts.candidate.same_tree]
    runs = tuple((d, facts.steps_by_id.get(d.step_id or -1)) for d in mine if d.kind == "run")
    decisions = [d for d in mine if d.kind != "run"]
    decision = decisions[-1] if decisions else None
    if item.manual:
        status, reason, steps = "missing", f"needs an attestation: relgate attest {item.id} --by NAME", ()
    else:
        status, reason, steps = _auto(item, facts, spec)
    if status == "passed":
        return ItemResult(item=item, status=status, reason=reason, steps=steps, runs=runs)
    if decision is not None and decision.kind == "attest" and item.manual:
        note = f": {decision.note}" if decision.note else ""
        return ItemResult(item=item, status="attested", reason=f"attested by {decision.by}{note}", steps=steps,
                          decision=decision, runs=runs)
    if decision is not None and decision.kind == "skip":
        failed = f" (it ran and {status}: {reason})" if status == "failed" else ""
        return ItemResult(item=item, status="skipped", reason=f"skipped by {decision.by or 'a maintainer'}: "
                          f"{decision.note}{failed}", steps=steps, decision=decision, runs=runs,
                          overridden=reason if failed else None)
    if decision is not None and decision.kind == "not-validated" and status == "failed":
        # "Not validated" says it did not run; this one ran and failed. Only a skip, with its reason, passes it.
        return ItemResult(item=item, status=status, reason=f"{reason} (marked not validated, but it ran and failed: "
                          "fix it, or skip it with a reason)", steps=steps, decision=decision, runs=runs)
    if decision is not None and decision.kind == "not-validated":
        return ItemResult(item=item, status="not-validated", reason=item.not_validated or "", steps=steps,
                          decision=decision, runs=runs)
    return ItemResult(item=item, status=status, reason=reason, steps=steps, runs=runs)


def evaluate(spec: ChecklistSpec, facts: Facts) -> list[ItemResult]:
    return [evaluate_item(item, facts, spec) for item in spec.items]


def describe(result: ItemResult) -> dict[str, Any]:
    """An item as ``signoff.json`` carries it."""
    out: dict[str, Any] = {"id": result.item.id, "title": result.item.title, "status": result.status,
                           "reason": result.reason, "kind": "manual" if result.item.manual else result.item.auto,
                           "links": [{"step": r.id, "run": r.run_id, "session": r.session, "name": r.step,
                                      "board": _board(r), "verdict": r.verdict.value, "log": r.log_path,
                                      "tests": r.tests.text() if r.tests is not None else None}
                                     for r in result.steps]}
    if result.decision is not None:
        d = result.decision
        out["decision"] = {"kind": d.kind, "by": d.by, "note": d.note, "commit": d.commit_sha, "at": d.created}
    if result.runs:
        out["runs"] = [{"by": d.by, "note": d.note, "step": s.id if s else d.step_id,
                        "command": s.command if s else None, "exit": s.exit_code if s else None,
                        "verdict": s.verdict.value if s else None, "dirty": s.dirty if s else None,
                        "host": s.host if s else None, "board": _board(s) if s else None,
                        "log": s.log_path if s else None} for d, s in result.runs]
    return out
