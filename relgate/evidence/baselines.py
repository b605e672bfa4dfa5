"""Accepted evidence baselines, and the acceptance check of a candidate against them.

A commit's capture is merged per board from every lane run's evidence (the latest
capture of each lane and target wins; boards are never merged). ``accept`` stores those
merged captures, content-addressed, as the baseline of a release; ``check`` diffs the
candidate's captures against the last accepted baseline of each board and sorts every
difference into intentional (listed in ``intentional.toml`` with a reason) or not.
An intentional entry that matches no difference is stale, and that is an error too.

Memory stays bounded by a chunk, not by the captures: a board's capture files and its
baseline are sorted externally (:mod:`relgate.evidence.stream_read`, spilling to the ledger
home's ``tmp/``), the baseline is written from that stream and the check merge-joins the
two streams; only the cells that differ are held.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.schema import display_path
from relgate.core.text import inert
from relgate.evidence.cells import Cell, EvidenceDiff, label, redact_diff
from relgate.evidence.stream_diff import diff_sorted
from relgate.evidence.stream_read import sorted_cells
from relgate.evidence.stream_write import count_cells, write_sorted
from relgate.ledger.identity import ProjectIdentity
from relgate.ledger.store import BaselineRow, EvidenceRow, Ledger
from relgate.manifest.intentional import IntentionalChange

__all__ = ["Capture", "board_key", "captures_at", "accept", "BoardReport", "EvidenceReport", "check"]


def board_key(board: str | None, host: str) -> str:
    """Boards are never merged; a host without a board keeps its captures under its own name."""
    return board or f"host:{host}"


@record
class Capture:
    """A board's capture at a commit: its files, merged in order (a later file wins on a cell)."""

    board: str
    commit: str
    dirty: bool
    files: tuple[Path, ...]
    sources: tuple[EvidenceRow, ...]


def captures_at(ledger: Ledger, commit: str, project_key: str) -> dict[str, Capture]:
    """The project's merged capture per board at ``commit``: clean-tree evidence if there is
    any, else dirty. Rows of other projects (and rows recorded before projects were) never count.
    Nothing is read here: the files are sorted and merged where they are used."""
    rows = ledger.evidence(commit=commit, project_key=project_key)
    clean = [r for r in rows if not r.dirty]
    rows = clean or rows
    latest: dict[tuple[str, str | None, str | None], EvidenceRow] = {}
    for row in rows:  # in id order: a later capture of the same lane and target wins
        latest[(board_key(row.board, row.host), row.lane, row.target)] = row
    out: dict[str, Capture] = {}
    for (board, _lane, _target), row in sorted(latest.items(), key=lambda kv: kv[1].id):
        cap = out.get(board)
        out[board] = Capture(board=board, commit=commit, dirty=row.dirty,
                             files=(*(cap.files if cap else ()), ledger.home / row.path),
                             sources=(*(cap.sources if cap else ()), row))
    return out


def _tmp(ledger: Ledger) -> Path:
    return ledger.home / "tmp"


@contextmanager
def _spilling(tmp: Path) -> Iterator[None]:
    """A temporary file that cannot be written (a full disk, a read-only ledger home) is an
    ``InputError`` naming it; the temporary files are removed either way."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"{exc.filename or tmp}: cannot write the evidence's temporary files: "
                         f"{exc.strerror or exc}") from None


def accept(ledger: Ledger, *, commit: str, release: str, project: ProjectIdentity) -> list[BaselineRow]:
    """Store the project's clean captures at ``commit`` as the accepted baseline of ``release``, per board."""
    captures = captures_at(ledger, commit, project.key)
    if not captures:
        raise InputError(f"commit {commit[:12]}: no evidence recorded for {project.describe()}; run the lanes first")
    dirty = sorted(b for b, cap in captures.items() if cap.dirty)
    if dirty:
        raise InputError(f"commit {commit[:12]}: evidence only from a dirty tree ({', '.join(dirty)}); "
                         "commit, run the lanes on the clean tree, then accept")
    tmp = _tmp(ledger)
    with ExitStack() as stack:
        with _spilling(tmp):
            tmp.mkdir(parents=True, exist_ok=True)
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evidence-accept-", dir=tmp)))
            written = []  # every board's baseline is written (and so checked) before any is stored
            for n, board in enumerate(sorted(captures)):
                with ExitStack() as sorting:
                    [cells] = sorted_cells(sorting, [list(captures[board].files)], tmp=tmp)
                    path = folder / f"baseline-{n}.cells"
                    with open(path, "xb") as out:
                        written.append((board, path, write_sorted(cells, out)))
        empty = [board for board, _path, count in written if not count]
        if empty:  # a capture of comments only is no evidence: it would make a baseline nothing can break
            raise InputError(f"commit {commit[:12]}: no evidence on {', '.join(empty)}: the captures hold no cell "
                             "(only comments or blank lines); nothing is accepted")
        rows = []
        for board, path, count in written:
            sha, stored = ledger.store_file(path, kind="baseline", suffix=".cells", move=True)
            rows.append(dict(release=release, board=board, commit_sha=commit, sha256=sha, path=stored,
                             cells=count, project_key=project.key))
    return ledger.add_baselines(rows)


@record
class BoardReport:
    board: str
    baseline: BaselineRow | None
    capture: Capture | None
    diff: EvidenceDiff | None
    intended: dict[Cell, IntentionalChange]  # cell → the entry that explains its difference
    capture_cells: int = 0  # the capture's cells (counted when there is no baseline to compare)

    @property
    def unexpected(self) -> int:
        if self.diff is None:
            return 0
        cells = [c for c, *_ in self.diff.moved] + [c for c, _ in self.diff.only_base] + \
                [c for c, _ in self.diff.only_candidate]
        return sum(1 for c in cells if c not in self.intended)

    @property
    def not_compared(self) -> str | None:
        """Why this board's capture and baseline could not be compared, if so."""
        if self.baseline is None:
            return (f"no accepted baseline; {self.capture_cells if self.capture else 0} cells not compared "
                    "(accept a release with relgate evidence accept)")
        if self.capture is None:
            return (f"no capture at this commit; the baseline of release {self.baseline.release} "
                    f"({self.baseline.cells} cells) was not compared (run the lanes on this board)")
        return None

    @property
    def no_evidence(self) -> str | None:
        """Why a comparison that ran compared no cell at all (an error: nothing was shown), if so."""
        d = self.diff
        if self.not_compared is not None or d is None or d.identical or d.moved or d.only_base or d.only_candidate:
            return None
        what = f"no cell but {len(d.redacted)} redacted secret(s)" if d.redacted else \
            "no cell (only comments or blank lines)"
        return f"no evidence: the capture and the baseline of release {self.baseline.release} hold {what}"

    def lines(self) -> list[str]:
        if self.not_compared is not None or self.diff is None:
            return [f"{self.board}: {self.not_compared}"]
        if self.no_evidence is not None:
            return [f"{self.board}: {self.no_evidence}"]
        out = [f"{self.board}: against release {self.baseline.release} ({self.baseline.commit_sha[:12]})"
               + (" — candidate evidence from a dirty tree" if self.capture.dirty else "")]
        entries = ([("MOVED", c, f"{old} -> {new}") for c, old, new in self.diff.moved]
                   + [("ONLY-BASE", c, v) for c, v in self.diff.only_base]
                   + [("ONLY-CANDIDATE", c, v) for c, v in self.diff.only_candidate]
                   + [("REDACTED", c, "the value is a secret: redacted, not compared") for c in self.diff.redacted])
        for kind, cell, detail in entries:
            why = self.intended.get(cell)
            tag = f"  [intentional: {why.reason}]" if why else ""
            out.append(inert(f"{kind} {label(cell)} | {detail}{tag}", keep="\t"))  # a CR or ESC in a value: shown, inert
        d = self.diff
        out.append(f"{d.identical} identical, {len(d.moved)} moved, {len(d.only_base)} only in base, "
                   f"{len(d.only_candidate)} only in candidate"
                   + (f", {len(d.redacted)} redacted (not compared)" if d.redacted else "")
                   + f"; {len(self.intended)} intentional, "
                   f"{self.unexpected} unexpected")
        return out


@record
class EvidenceReport:
    commit: str
    boards: tuple[BoardReport, ...]
    stale: tuple[IntentionalChange, ...]
    intentional_path: Path | None

    def stale_lines(self) -> list[str]:
        where = display_path(self.intentional_path) if self.intentional_path else "intentional.toml"
        return [f"{where}: change[{c.index}]: {c.describe()} matches no difference (stale); drop it"
                for c in self.stale]


def _last_baselines(ledger: Ledger, commit: str, project_key: str) -> dict[str, BaselineRow]:
    """Per board, the last accepted baseline of another commit (the previous release); a board
    whose only baseline is this very commit is compared with it."""
    latest_any: dict[str, BaselineRow] = {}
    latest_other: dict[str, BaselineRow] = {}
    for row in ledger.baselines(project_key=project_key):  # in id order: later acceptances win
        latest_any[row.board] = row
        if row.commit_sha != commit:
            latest_other[row.board] = row
    return {**latest_any, **latest_other}


def check(ledger: Ledger, *, commit: str, project: ProjectIdentity, changes: Sequence[IntentionalChange],
          intentional_path: Path | None = None) -> EvidenceReport:
    """The project's captures at ``commit`` against its last accepted baselines, per board."""
    captures = captures_at(ledger, commit, project.key)
    baselines = _last_baselines(ledger, commit, project.key)
    used: set[int] = set()
    boards = []
    for board in sorted(set(captures) | set(baselines)):
        base, cap = baselines.get(board), captures.get(board)
        diff = None
        intended: dict[Cell, IntentionalChange] = {}
        cap_cells = 0
        if cap is not None:
            with _spilling(_tmp(ledger)), ExitStack() as sorting:  # one board at a time: one board's sort
                if base is not None:  # both sides sorted (and checked) in one order
                    base_cells, cap_sorted = sorted_cells(
                        sorting, [[ledger.home / base.path], list(cap.files)], tmp=_tmp(ledger))
                    diff = redact_diff(diff_sorted(base_cells, cap_sorted), [ledger.home / base.path], cap.files)
                else:
                    [cap_sorted] = sorted_cells(sorting, [list(cap.files)], tmp=_tmp(ledger))
                    cap_cells = count_cells(cap_sorted)
        if diff is not None:
            changed = [c for c, *_ in diff.moved] + [c for c, _ in diff.only_base] + \
                      [c for c, _ in diff.only_candidate]
            for cell in changed:
                why = next((ch for ch in changes if ch.matches(cell, board)), None)
                if why is not None:
                    intended[cell] = why
                    used.add(why.index)
        boards.append(BoardReport(board=board, baseline=base, capture=cap, diff=diff, intended=intended,
                                  capture_cells=cap_cells))
    compared = any(b.diff is not None for b in boards)
    stale = tuple(c for c in changes if c.index not in used) if compared else ()
    return EvidenceReport(commit=commit, boards=tuple(boards), stale=stale, intentional_path=intentional_path)
