"""``relgate report [RUN | --commit SHA] --html FILE``: the sign-off's page for any run or
commit of the ledger (HEAD by default), written atomically; and the page ``nox -s signoff``
writes beside ``signoff.md``. Reading only: nothing in the ledger changes."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from relgate import __version__
from relgate.core.errors import InputError
from relgate.core.files import write_output
from relgate.core.schema import display_path
from relgate.ledger.gitfacts import GitFacts, read_git_facts, resolve_commit
from relgate.ledger.store import Ledger, StepRow
from relgate.manifest.checklist import ChecklistSpec, ReleaseSpec
from relgate.manifest.workspace import Workspace
from relgate.signoff.assemble import Signoff, assemble

__all__ = ["page_html", "write_report"]


def page_html(ws: Workspace, s: Signoff, keys: Mapping[str, Sequence[str]], *, page_dir: Path,
              embed_logs: bool = False, title: str | None = None, steps: Sequence[StepRow] | None = None) -> str:
    """The sign-off's HTML page for a file in ``page_dir`` (its log links are relative to it)."""
    from relgate.signoff.page import render_page
    from relgate.signoff.page_model import build_page

    specs = dict(ws.measurements.measures) if ws.measurements is not None else {}
    return render_page(build_page(s, home=ws.home, page_dir=page_dir, specs=specs, keys=keys, embed_logs=embed_logs,
                                  generator=f"relgate {__version__}", title=title, steps=steps))


def _keys(ws: Workspace) -> dict[str, tuple[str, ...]]:
    if ws.measurements is None:
        return {}
    return {n: tuple(m.key) for n, m in {**ws.measurements.measures, **ws.measurements.quality}.items()}


def _checklist(ws: Workspace) -> ChecklistSpec:
    """The project's checklist; without one, an empty one (the page then lists what ran)."""
    if ws.checklist is not None:
        return ws.checklist
    release = ReleaseSpec(version=ws.project.version or "", boards=(), backends=(), notes=(), tag_requires=())
    return ChecklistSpec(release=release, items=(), source=ws.manifests_dir / "checklist.toml")


def write_report(ws: Workspace, html: Path, *, run: str | None = None, commit: str | None = None,
                 embed_logs: bool = False, out: TextIO = sys.stdout) -> Path:
    if run is not None and commit is not None:
        raise InputError("report: name a run or --commit, not both")
    if not Ledger.exists(ws.home):
        raise InputError(f"{display_path(ws.home)}: no ledger yet (run a session first)")
    head = read_git_facts(ws.project.root)
    checklist = _checklist(ws)
    with Ledger.open(ws.home) as ledger:
        steps: list[StepRow] | None = None
        title = None
        if run is not None:
            found = [r for r in ledger.runs() if r.id == run] or [r for r in ledger.runs() if r.id.startswith(run)]
            if len(found) != 1:
                raise InputError(f"report {run}: {'names no run' if not found else 'names several runs'} in "
                                 f"{display_path(ws.home)} (relgate status lists them)")
            row = found[0]
            steps = ledger.steps(run_id=row.id)
            facts = GitFacts(commit=row.commit_sha, branch=row.branch, dirty=row.dirty, toplevel=head.toplevel)
            title = f"Run {row.id} ({row.session}) of {ws.project.name} at {row.commit_sha[:12]}"
        elif commit is not None:
            sha = resolve_commit(ws.project.root, commit)
            facts = head if sha == head.commit else GitFacts(commit=sha, branch=None, dirty=False,
                                                              toplevel=head.toplevel)
            title = f"{ws.project.name} {checklist.release.version} at {sha[:12]}"
        else:
            facts = head
        s = assemble(ws, ledger, facts, checklist)
    html = Path(html)
    text = page_html(ws, s, _keys(ws), page_dir=html.absolute().parent, embed_logs=embed_logs, title=title,
                     steps=steps)
    write_output(html, text.encode(), what="the report page")
    print(f"wrote {display_path(html)} ({'complete' if s.complete else 'incomplete'}, {len(s.items)} item(s))",
          file=out)
    return html
