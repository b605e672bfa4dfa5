"""What a step leaves in the ledger: its row, its log, its evidence, its host facts.

:class:`StepRecorder` is the one way the step layer writes a step of a run: the runner
(:mod:`relgate.run.runner`) executes and judges, and hands each :class:`StepOutcome` here
whole. One recorder per ledger connection (a worker thread opens its own with
:meth:`StepRecorder.connection`); the run itself is opened and finished by
:class:`relgate.run.ledger_run.LedgerRun`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relgate.core.counts import TestCounts
from relgate.core.record import record
from relgate.core.redact import redact_env
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.store import Ledger
from relgate.manifest.specs import AllowRule
from relgate.run.executor import ENV_DIGEST_KEY
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep

if TYPE_CHECKING:
    from relgate.run.scanners import CompilerWarning

__all__ = ["StepOutcome", "StepRecorder"]


@record
class StepOutcome:
    step: PlannedStep
    step_id: int
    host: str
    verdict: Verdict
    reason: str | None
    duration: float
    log_path: Path | None = None
    warnings: tuple[CompilerWarning, ...] = ()
    allowed: tuple[tuple[CompilerWarning, str], ...] = ()
    tail: str = ""
    evidence: Path | None = None  # the stored capture, when the step brought one back
    reused_from: int | None = None
    scanned: bool = False  # its commands ran to a zero exit and the output was scanned for warnings
    matched_rules: tuple[AllowRule, ...] = ()  # the allow rules that accepted a warning here
    tests: TestCounts | None = None  # what the step's test runner said it ran (None: no runner read)
    facts: Mapping[str, object] = field(default_factory=dict)  # where it really ran (GPUs, node, job)
    exit_code: int | None = None  # the last command's exit status (None: none ran to an exit)
    log_sha256: str | None = None  # the stored log's hash


class StepRecorder:
    """The steps of run ``run_id`` on one ledger connection: every row the runner writes."""

    def __init__(self, ledger: Ledger, *, run_id: str, session: str, facts: GitFacts) -> None:
        self.ledger, self.run_id, self.session, self.facts = ledger, run_id, session, facts

    @property
    def home(self) -> Path:
        return self.ledger.home

    @contextmanager
    def connection(self) -> Iterator[StepRecorder]:
        """This recorder on a ledger connection of its own (one per worker thread)."""
        with Ledger.open(self.ledger.home) as own:
            yield StepRecorder(own, run_id=self.run_id, session=self.session, facts=self.facts)

    def row(self, step: PlannedStep, host: Host | None, *, name: str | None = None,
            digest: object = None) -> dict[str, Any]:
        """The step's row: where and what it runs (a secret-named variable's value never reaches
        the ledger); ``digest``: what reaches the command from relgate's caller, if known."""
        env = redact_env(step.env)
        if isinstance(digest, str):
            env = {**env, ENV_DIGEST_KEY: digest}
        return dict(run_id=self.run_id, session=self.session, step=step.name, lane=step.lane, target=step.target,
                    commit=self.facts.commit, dirty=self.facts.dirty, command=step.display(), cwd=str(step.cwd),
                    env=env, host=name or (host.name if host is not None else "-"),
                    board=host.board if host is not None else None,
                    driver=host.facts.driver if host is not None else None,
                    toolkit=host.facts.toolkit if host is not None else None)

    def decided(self, step: PlannedStep, *, verdict: Verdict, reason: str | None, host: Host | None = None,
                name: str | None = None, row: Mapping[str, Any] | None = None) -> StepOutcome:
        """A step decided without running anything (skip, not-run, an error found before it
        started): one row, final at once."""
        row = dict(row) if row is not None else self.row(step, host, name=name)
        step_id = self.ledger.record_step(verdict=verdict, reason=reason, **row)
        return StepOutcome(step=step, step_id=step_id, host=row["host"], verdict=verdict, reason=reason,
                           duration=0.0)

    def reused(self, step: PlannedStep, row: Mapping[str, Any], *, board: str | None,
               any_node: bool) -> StepOutcome | None:
        """A new row pointing at the latest pass of this exact step on a clean tree, if any
        (:meth:`relgate.ledger.store.Ledger.reusable_pass`)."""
        earlier = self.ledger.reusable_pass(run_id=self.run_id, commit=self.facts.commit, session=self.session,
                                            step=step.name, host=row["host"], command=row["command"],
                                            env=row["env"], board=board, driver=row["driver"],
                                            toolkit=row["toolkit"], any_node=any_node)
        if earlier is None:
            return None
        step_id = self.ledger.reuse_step(run_id=self.run_id, original=earlier)
        source = earlier.reused_from or earlier.id
        return StepOutcome(step=step, step_id=step_id, host=row["host"], verdict=Verdict.PASS,
                           reason=f"reused: passed as step #{source}", duration=0.0,
                           log_path=self.ledger.resolve(earlier.log_path), reused_from=source)

    def evidence_path(self, step: PlannedStep) -> Path:
        return self.ledger.evidence_path(self.run_id, step.name)

    def partial_log_path(self, step: PlannedStep) -> Path:
        return self.ledger.partial_log_path(self.facts.commit, self.run_id, step.name)

    def begin(self, row: Mapping[str, Any], log_path: Path) -> int:
        """The step's row before it starts (an unfinished error until :meth:`finish`)."""
        return self.ledger.begin_step(log_path=log_path, **row)

    def store_log(self, partial: Path) -> tuple[Path, str]:
        return self.ledger.store_log(partial, self.facts.commit)

    def note_host(self, step_id: int, facts: Mapping[str, object]) -> None:
        """Where the step really ran; a node's board, driver and toolkit replace the host's."""
        self.ledger.note_step_host(step_id, facts=facts, board=_fact(facts, "board"), driver=_fact(facts, "driver"),
                                   toolkit=_fact(facts, "toolkit"))

    def store_evidence(self, captured: Path, step_id: int) -> Path:
        return self.ledger.home / self.ledger.store_evidence(captured, step_id=step_id).path

    def finish(self, outcome: StepOutcome, *, complete: bool = True) -> StepOutcome:
        """Write ``outcome`` into its row, whole. ``complete=False``: the step was stopped, so
        nothing is known of its scan or its test counts."""
        warnings = [_warning_json(w) for w in outcome.warnings] + [
            {**_warning_json(w), "allowed": why} for w, why in outcome.allowed]
        self.ledger.finish_step(outcome.step_id, verdict=outcome.verdict, reason=outcome.reason,
                                exit_code=outcome.exit_code, duration=outcome.duration,
                                warnings=warnings if complete else (),
                                warning_count=len(outcome.warnings) if complete else None,
                                log_path=outcome.log_path, log_sha256=outcome.log_sha256, tail=outcome.tail,
                                tests=outcome.tests.to_json() if complete and outcome.tests is not None else None,
                                scanned=outcome.scanned if complete else None)
        return outcome


def _fact(facts: Mapping[str, object], key: str) -> str | None:
    value = facts.get(key)
    return value if isinstance(value, str) and value else None


def _warning_json(w: CompilerWarning) -> dict[str, object]:
    return {"tool": w.tool, "file": w.file, "line": w.line, "column": w.column, "message": w.message,
            "code": w.code, "printed": w.printed}
