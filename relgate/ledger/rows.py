"""The ledger's rows as records: runs, steps, evidence, baselines, measurement batches and
decisions, as the queries of :mod:`relgate.ledger.store` return them."""

from __future__ import annotations

from dataclasses import field, fields
from typing import Any

from relgate.core.counts import TestCounts
from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.ledger.identity import ProjectIdentity

__all__ = ["RunRow", "StepRow", "EvidenceRow", "BaselineRow", "BatchRow", "DecisionRow"]


@record
class RunRow:
    id: str
    session: str
    argv: str
    project: str
    project_root: str
    commit_sha: str
    branch: str | None
    dirty: bool
    started: str
    finished: str | None
    outcome: str | None
    project_key: str | None = None


@record
class StepRow:
    id: int
    run_id: str
    session: str
    step: str
    lane: str | None
    target: str | None
    host: str
    board: str | None
    driver: str | None
    toolkit: str | None
    commit_sha: str
    dirty: bool
    command: str
    cwd: str | None
    env: dict[str, str]
    started: str
    duration: float | None
    exit_code: int | None
    verdict: Verdict
    reason: str | None
    warning_count: int
    warnings: list[dict[str, Any]]
    log_path: str | None
    log_sha256: str | None
    tail: str | None
    reused_from: int | None = None
    project_key: str | None = None  # see relgate.ledger.identity; None: written before projects were recorded
    tests: TestCounts | None = None  # the runner's counts (None: no runner's summary was read)
    scanned: bool | None = None  # its output was scanned for compiler warnings (None: recorded before it was kept)
    facts: dict[str, Any] = field(default_factory=dict)  # the step's own host facts (GPUs, Slurm node and job, probes)

    @property
    def project(self) -> ProjectIdentity | None:
        return ProjectIdentity.from_key(self.project_key)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["verdict"] = self.verdict.value
        out["tests"] = None if self.tests is None else {
            "runner": self.tests.runner, "passed": self.tests.passed, "failed": self.tests.failed,
            "skipped": self.tests.skipped, "filtered": self.tests.filtered, "text": self.tests.text()}
        ident = self.project
        out["project"] = None if ident is None else {"name": ident.name, "root": ident.root,
                                                     "manifests": ident.manifests}
        del out["project_key"]
        return out


@record
class EvidenceRow:
    id: int
    step_id: int
    run_id: str
    commit_sha: str
    dirty: bool
    host: str
    board: str | None
    toolkit: str | None
    lane: str | None
    target: str | None
    sha256: str
    path: str
    created: str
    project_key: str | None = None


@record
class BaselineRow:
    id: int
    release: str
    board: str
    commit_sha: str
    sha256: str
    path: str
    cells: int
    accepted: str
    project_key: str | None = None


@record
class BatchRow:
    """One batch of measurement rows: a release's baseline, or runs of the candidate."""

    id: int
    project: str
    measure: str
    kind: str  # measure | quality
    side: str  # release | candidate
    release: str | None
    commit_sha: str | None
    dirty: bool
    board: str
    host: str | None
    metadata: dict[str, str]
    warmup: int
    run_id: str | None
    source: str
    sha256: str | None
    path: str | None
    created: str


@record
class DecisionRow:
    """A person's decision on a checklist item for one commit: attest, skip, not-validated."""

    id: int
    project: str
    commit_sha: str
    dirty: bool
    item: str
    kind: str
    by: str | None
    note: str | None
    step_id: int | None
    created: str
