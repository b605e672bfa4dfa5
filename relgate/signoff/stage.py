"""``nox -s signoff``: assemble, render, write ``signoff.md``, ``signoff.json`` and the
changelog section into the out folder (atomically, each file by temp + rename). A re-run
with nothing new (same ledger, HEAD, tree state and manifests) finds the files it wrote
and leaves them as they are: byte-identical, and without assembling anything again."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from relgate import __version__
from relgate.core.errors import InputError
from relgate.core.files import write_output
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.core.schema import display_path
from relgate.core.text import inert
from relgate.ledger.gitfacts import start_git_facts
from relgate.ledger.store import Ledger
from relgate.manifest.workspace import Workspace

if TYPE_CHECKING:
    from relgate.signoff.assemble import Signoff

__all__ = ["SignoffResult", "FILES", "run_signoff", "default_out", "write_changelog", "insert_section"]

_TITLE = "### Measurements and verification"  # relgate.signoff.report.SECTION_TITLE (not imported: a re-run
# with nothing new must not pay for the renderer)

FILES = ("signoff.md", "signoff.json", "changelog-section.md", "signoff.html")
_STATE = ".signoff-state.json"


@record
class SignoffResult:
    out: Path
    complete: bool
    commit: str
    unchanged: bool  # nothing new: the files were already what this run would write
    open_items: tuple[str, ...]  # "id (status): reason"
    signoff: Signoff | None = None  # None when unchanged


def default_out(ws: Workspace) -> Path:
    return ws.home / "signoff"


def _manifest_digest(ws: Workspace) -> str:
    h = hashlib.sha256(__version__.encode())
    paths = sorted(ws.manifests_dir.glob("*.toml")) + sorted(ws.hosts_dir.glob("*.toml"))
    if ws.project.lanes is not None:
        paths.append(ws.project.lanes)
    for path in paths:
        h.update(str(path).encode() + b"\0" + read_user_file(path, what="a manifest", line_limit=None) + b"\0")
    return h.hexdigest()


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all; a failure (a full disk, ``--out /dev/full``) is exit 2 naming the file."""
    write_output(path, data, what="the sign-off file")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checklist(ws: Workspace):  # type: ignore[no-untyped-def]
    if ws.checklist is None:
        raise InputError(f"{display_path(ws.manifests_dir)}: no checklist.toml (the sign-off's items live there)")
    return ws.checklist


def run_signoff(ws: Workspace, *, out_dir: Path | None = None, out: TextIO = sys.stdout,
                embed_logs: bool = False) -> SignoffResult:
    """``embed_logs``: ``signoff.html`` carries each step's log tail (size-capped)."""
    checklist = _checklist(ws)
    out_dir = Path(out_dir) if out_dir is not None else default_out(ws)
    git = start_git_facts(ws.project.root)  # the gits run while the ledger is opened and read
    facts = None if Ledger.exists(ws.home) else git()  # a checkout git refuses makes no ledger
    with Ledger.open(ws.home) as ledger:
        fingerprint, manifests = list(ledger.fingerprint()), _manifest_digest(ws)
        facts = facts or git()
        state = {"fingerprint": fingerprint, "head": facts.commit, "dirty": facts.dirty, "manifests": manifests,
                 "page": {"embed_logs": embed_logs, "out": str(out_dir.resolve())}}
        previous = _read_state(out_dir)
        if previous is not None and previous.get("state") == state and _files_match(out_dir, previous["files"]):
            print(f"sign-off for {facts.commit[:12]}: nothing new; {display_path(out_dir)} is up to date", file=out)
            return SignoffResult(out=out_dir, complete=bool(previous["complete"]), commit=facts.commit,
                                 unchanged=True, open_items=tuple(previous["open"]))
        # Only a sign-off with something new pays for assembling and rendering.
        from relgate.signoff.assemble import assemble
        from relgate.signoff.report import render_changelog_section, render_json, render_markdown

        s = assemble(ws, ledger, facts, checklist)
    keys = {}
    if ws.measurements is not None:
        keys = {n: m.key for n, m in {**ws.measurements.measures, **ws.measurements.quality}.items()}
    from relgate.measure.plots import render_plots
    from relgate.signoff.page_report import page_html

    pictures = render_plots(s.comparisons, keys)
    files = {"signoff.md": render_markdown(s, keys, {k: v[0] for k, v in pictures.items()}).encode(),
             "signoff.json": render_json(s, keys).encode(),
             "changelog-section.md": render_changelog_section(s, keys).encode(),
             "signoff.html": page_html(ws, s, keys, page_dir=out_dir, embed_logs=embed_logs).encode(),
             **{name: data for name, data in pictures.values()}}
    for name, data in files.items():
        target = out_dir / name
        if not target.exists() or target.read_bytes() != data:
            _write(target, data)
    open_items = tuple(f"{r.item.id} ({r.status}): {r.reason}" for r in s.open_items)
    _write(out_dir / _STATE, json.dumps({"state": state, "files": {n: _sha(d) for n, d in files.items()},
                                         "complete": s.complete, "open": list(open_items)},
                                        indent=1, sort_keys=True).encode())
    _print(s, out_dir, out)
    return SignoffResult(out=out_dir, complete=s.complete, commit=facts.commit, unchanged=False,
                         open_items=open_items, signoff=s)


def _print(s: Signoff, out_dir: Path, out: TextIO) -> None:
    width = max((len(r.item.id) for r in s.items), default=4)
    for r in s.items:
        print(f"{r.item.id:<{width}}  {r.status:<14}  {inert(r.reason)}", file=out)  # a reason from an older ledger
    verdict = "complete" if s.complete else f"incomplete ({len(s.open_items)} open"
    verdict += "" if s.complete else (", dirty tree)" if s.candidate.dirty else ")")
    print(f"sign-off of {s.named} at {s.candidate.commit[:12]}: {verdict}", file=out)
    print(f"wrote {display_path(out_dir / 'signoff.md')}, {display_path(out_dir / 'signoff.html')}, "
          f"{display_path(out_dir / 'signoff.json')}, {display_path(out_dir / 'changelog-section.md')}", file=out)


def _read_state(out_dir: Path) -> dict | None:
    try:
        data = json.loads((out_dir / _STATE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _files_match(out_dir: Path, files: dict) -> bool:
    try:
        return all(_sha((out_dir / name).read_bytes()) == sha for name, sha in files.items())
    except OSError:
        return False


def insert_section(text: str, version: str, section: str) -> str:
    """The changelog with ``section`` under ``## [version]`` (replacing an earlier one)."""
    lines = text.split("\n")
    head = next((i for i, ln in enumerate(lines) if re.match(rf"^##\s+\[?v?{re.escape(version)}\]?(\s|$)", ln)), None)
    if head is None:
        raise InputError(f"no \"## [{version}]\" heading to put the section under")
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    block = lines[head:end]
    start = next((i for i, ln in enumerate(block) if ln.strip() == _TITLE), None)
    if start is not None:  # an earlier section: this one replaces it
        stop = next((i for i in range(start + 1, len(block)) if block[i].startswith("### ")), len(block))
        block = block[:start] + block[stop:]
    while block and not block[-1].strip():
        block.pop()
    return "\n".join(lines[:head] + block + [""] + section.rstrip("\n").split("\n") + [""] + lines[end:])


def write_changelog(ws: Workspace, result: SignoffResult, out: TextIO = sys.stdout) -> Path:
    """Put the section into the project's changelog under the version's heading."""
    section = (result.out / "changelog-section.md").read_text()
    checklist = _checklist(ws)
    notes = [ws.project.root / n for n in checklist.release.notes]
    path = ws.project.changelog or (notes[0] if notes else None)
    if path is None:
        raise InputError(f"{display_path(ws.project.source)}: --changelog: the project keeps no changelog "
                         "(project.changelog, or release.notes in the checklist)")
    version = checklist.release.version
    if not version:
        raise InputError("--changelog: no version to put the section under (project.version or release.version)")
    try:  # a FIFO or a device where the changelog should be: refused, never waited on
        text = read_user_file(path, what="the changelog", line_limit=None).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{display_path(path)}: not UTF-8 (byte {exc.start})") from None
    try:
        if path.suffix.lower() == ".rst":  # the section in the file's own format
            from relgate.signoff.changelog_rst import insert_section_rst

            new = insert_section_rst(text, version, section, _TITLE[4:])
        else:
            new = insert_section(text, version, section)
    except InputError as exc:
        raise InputError(f"{display_path(path)}: {exc}") from None
    if new != text:
        _write(path, new.encode())
        print(f"changelog: the \"{_TITLE[4:]}\" section is in {display_path(path)} under {version}; "
              "commit it (a commit that changes only the release notes keeps the sign-off)", file=out)
    return path
