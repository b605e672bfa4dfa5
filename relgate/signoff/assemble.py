"""The sign-off, assembled: the candidate, its ledger rows, every comparison and band, and
every checklist item evaluated. Pure reading: nothing here writes."""

from __future__ import annotations

from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.identity import project_identity
from relgate.ledger.store import Ledger, StepRow
from relgate.manifest.checklist import ChecklistSpec
from relgate.manifest.workspace import Workspace
from relgate.measure.candidate import Candidate, candidate_of
from relgate.measure.compare import compare
from relgate.measure.quality import QualityReport, check_quality
from relgate.measure.results import Comparison
from relgate.signoff.checklist import Facts, ItemResult, evaluate

__all__ = ["Signoff", "assemble"]


@record
class Signoff:
    project: str
    version: str
    checklist: ChecklistSpec
    candidate: Candidate
    items: tuple[ItemResult, ...]
    comparisons: dict[str, Comparison]
    quality: dict[str, QualityReport]
    evidence_steps: tuple[StepRow, ...]  # the latest evidence check of each board
    not_run: tuple[StepRow, ...]  # the latest clean rows that did not run (not-run, skip), per step
    steps: tuple[StepRow, ...] = ()  # the latest row of each step per host, board, commit and tree state

    @property
    def named(self) -> str:
        """``ds4 1.2.0``; ``ds4 (no version)`` for a project that declares none."""
        return f"{self.project} {self.version}" if self.version else f"{self.project} (no version)"

    @property
    def complete(self) -> bool:
        return not self.candidate.dirty and all(r.done for r in self.items)

    @property
    def open_items(self) -> tuple[ItemResult, ...]:
        return tuple(r for r in self.items if not r.done)


def assemble(ws: Workspace, ledger: Ledger, facts: GitFacts, checklist: ChecklistSpec) -> Signoff:
    project = project_identity(ws, facts).key  # the rows of this project only (one repository, many projects)
    known = ledger.project_commits(project=project)
    candidate = candidate_of(facts, project_root=ws.project.root, notes=checklist.release.notes, known=known)
    # The latest row of each step per host, board, commit and tree state is all any predicate reads.
    steps = ledger.project_steps(project=project, commits=candidate.same_tree, latest=True)
    others: dict[str, str] = {}
    for row in ledger.project_steps(project=project, commits=[c for c in known if c not in candidate.same_tree],
                                    latest=True):
        for name in (row.session, row.lane):
            if name:
                others.setdefault(name, row.commit_sha)
    evidence = [e for c in candidate.same_tree for e in ledger.evidence(commit=c, project_key=project)]
    boards = checklist.release.all_boards
    comparisons, quality = {}, {}
    if ws.measurements is not None:
        for name, spec in ws.measurements.measures.items():
            comparisons[name] = compare(ledger, spec, project=project, counts=candidate.counts, boards=boards,
                                        exclude_release=checklist.release.version)
        for name, qspec in ws.measurements.quality.items():
            quality[name] = check_quality(ledger, qspec, project=project, counts=candidate.counts, boards=boards)
    ids = {r.id: r for r in steps}
    decisions = ledger.decisions(project=project)
    linked = [d.step_id for d in decisions if d.step_id is not None and d.step_id not in ids]
    ids.update({r.id: r for r in ledger.steps_with_ids(linked)})  # every manual run, whichever row is the latest
    f = Facts(candidate=candidate, steps=steps, other_commits=others, decisions=decisions, evidence=evidence,
              comparisons=comparisons, quality=quality, steps_by_id=ids)
    items = tuple(evaluate(checklist, f))
    clean = [r for r in steps if candidate.counts(r.commit_sha, r.dirty)]
    latest: dict[tuple[str, str], StepRow] = {}
    for row in clean:
        latest[(row.session, row.step)] = row
    ev_latest: dict[str, StepRow] = {}
    for row in clean:
        if row.session == "evidence" and row.target:
            ev_latest[row.target] = row
    not_run = tuple(r for r in latest.values() if r.verdict in (Verdict.NOT_RUN, Verdict.SKIP))
    return Signoff(project=ws.project.name, version=checklist.release.version, checklist=checklist, candidate=candidate,
                   items=items, comparisons=comparisons, quality=quality,
                   evidence_steps=tuple(ev_latest[b] for b in sorted(ev_latest)), not_run=not_run,
                   steps=tuple(steps))
