"""A person's decisions on checklist items, for the candidate commit: attest a manual item,
skip an item with a reason, choose an item's not-validated text, and manual runs
(``relgate run --item ITEM -- CMD``) recorded as ledger steps linked to the item."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from relgate.core.errors import InputError
from relgate.core.redact import redact_text
from relgate.core.schema import did_you_mean, display_path
from relgate.core.text import check_line
from relgate.ledger.gitfacts import read_git_facts
from relgate.ledger.identity import project_identity
from relgate.ledger.store import Ledger
from relgate.manifest.checklist import ChecklistItem, ChecklistSpec
from relgate.manifest.specs import CommandSpec
from relgate.manifest.workspace import Workspace
from relgate.remote.pool import host_pool
from relgate.run.flow import run_plan
from relgate.run.plan import PlannedStep
from relgate.run.runner import RunSummary

__all__ = ["checklist_of", "item_of", "attest", "skip", "manual_run"]


def checklist_of(ws: Workspace) -> ChecklistSpec:
    if ws.checklist is None:
        raise InputError(f"{display_path(ws.manifests_dir)}: no checklist.toml (the sign-off's items live there)")
    return ws.checklist


def item_of(ws: Workspace, item_id: str) -> ChecklistItem:
    spec = checklist_of(ws)
    item = spec.item(item_id)
    if item is None:
        raise InputError(f"{display_path(spec.source)}: no item \"{item_id}\""
                         f"{did_you_mean(item_id, [i.id for i in spec.items])}")
    return item


def _record(ws: Workspace, item: ChecklistItem, *, kind: str, by: str | None, note: str | None,
            step_id: int | None = None) -> tuple[str, int]:
    facts = read_git_facts(ws.project.root)
    with Ledger.open(ws.home) as ledger:
        row = ledger.add_decision(project=project_identity(ws, facts).key, commit=facts.commit, dirty=facts.dirty, item=item.id,
                                  kind=kind, by=by, note=redact_text(note) if note else note, step_id=step_id)
    return facts.commit, row


def _typed(by: str | None, note: str | None, note_option: str = "--note") -> None:
    """The input rule (:mod:`relgate.core.text`): what a person types reaches signoff.md and the changelog."""
    if by is not None:
        check_line(by, "--by", max_length=200)
    if note is not None:
        check_line(note, note_option)


def attest(ws: Workspace, item_id: str, *, by: str, note: str | None = None, out: TextIO = sys.stdout) -> int:
    _typed(by, note)
    item = item_of(ws, item_id)
    if not by.strip():
        raise InputError("attest: --by names the person who attests")
    if not item.manual:
        raise InputError(f"attest: {item.id} is an auto item ({item.auto}); the ledger decides it. "
                         f"Run what it checks, or skip it with a reason")
    commit, _ = _record(ws, item, kind="attest", by=by.strip(), note=note)
    print(f"{item.id}: attested by {by.strip()} for {commit[:12]}", file=out)
    return 0


def skip(ws: Workspace, item_id: str, *, reason: str | None, by: str | None = None, not_validated: bool = False,
         out: TextIO = sys.stdout) -> int:
    _typed(by, reason, "--reason")
    item = item_of(ws, item_id)
    if not_validated:
        if item.not_validated is None:
            raise InputError(f"skip: {item.id} offers no not_validated text in {display_path(checklist_of(ws).source)}")
        commit, _ = _record(ws, item, kind="not-validated", by=by, note=reason or item.not_validated)
        print(f"{item.id}: not validated for {commit[:12]}; the release notes will say: {item.not_validated}",
              file=out)
        return 0
    if reason is None or not reason.strip():
        raise InputError(f"skip: {item.id}: a skip needs --reason (it goes into the sign-off and the changelog)")
    commit, _ = _record(ws, item, kind="skip", by=by, note=reason.strip())
    print(f"{item.id}: skipped for {commit[:12]}: {reason.strip()}", file=out)
    return 0


def manual_run(ws: Workspace, command: Sequence[str], *, item_id: str | None, note: str | None,
               by: str | None = None, argv: Sequence[str] = (), out: TextIO = sys.stdout) -> RunSummary:
    """A manual run as a ledger step (commit, dirty, host facts, command, complete log, exit),
    linked to ``item_id`` when given."""
    _typed(by, note)
    if not command:
        raise InputError("run: name the command after --, e.g. relgate run --item ITEM -- ./build/engine --ctx 4096")
    item = item_of(ws, item_id) if item_id else None
    step = PlannedStep(name=item.id if item else "manual", commands=(CommandSpec(argv=tuple(command)),),
                       cwd=Path.cwd(), lane="manual", target=item.id if item else None)
    pool = host_pool(ws)
    try:
        summary = run_plan(ws, [step], session="manual", argv=list(argv) or ["relgate", "run", *command], pool=pool,
                           out=out)
    finally:
        pool.close()
    if item is not None:
        outcome = summary.outcomes[0]
        _record(ws, item, kind="run", by=by, note=note, step_id=outcome.step_id)
        print(f"{item.id}: manual run recorded as step #{outcome.step_id} ({outcome.verdict.value})", file=out)
    return summary
