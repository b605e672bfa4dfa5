"""Secrets in evidence diffs: a cell whose key names a secret, or whose value the runner
masked, is reported as redacted rather than compared (issue 23)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from relgate.core.redact import MASK, any_secret_key, is_secret_key
from relgate.evidence.cells_diff import EvidenceDiff
from relgate.evidence.cells_parse import Cell

__all__ = ["redact_diff"]

def _masked_keys(path: Path) -> set[bytes]:
    """``suite\tarm\tkey`` of the rows whose value is the mask ``***`` (a secret the runner
    redacted); one C-level search of the file when it holds none."""
    import mmap

    try:
        with open(path, "rb") as handle:
            if not os.fstat(handle.fileno()).st_size:
                return set()
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return set()
    needle = MASK.encode()
    keys: set[bytes] = set()
    with view:
        at = view.find(b"*")  # one byte: memchr, and "*" is rare in captures (a tab is on every row)
        while at >= 0:
            end = at + len(needle)
            if view[at - 1:end] == b"\t" + needle and view[end:end + 1] in (b"", b"\n", b"\r"):
                fields = view[view.rfind(b"\n", 0, at) + 1:end].split(b"\t", 3)
                if len(fields) == 4 and fields[3] == needle and fields[0][:1] != b"#":
                    keys.add(b"\t".join(fields[:3]))
            at = view.find(b"*", max(end, at + 1) if view[at:end] == needle else at + 1)
    return keys


def redact_diff(d: EvidenceDiff, base: Iterable[Path], candidate: Iterable[Path]) -> EvidenceDiff:
    """The diff with secrets taken out of the comparison: a cell whose key names a secret
    (:func:`~relgate.core.redact.is_secret_key`), or whose value is the mask on either side, is
    ``redacted`` rather than moved; a secret only one side holds keeps its place with its value
    masked; a masked cell on both sides is redacted, not identical. Only the cells that differ
    are looked at, and the files only searched for the mask."""
    differ = [c for c, *_ in d.moved] + [c for c, _ in d.only_base] + [c for c, _ in d.only_candidate]
    secret = any_secret_key(c[2] for c in differ)
    masked = [set().union(*map(_masked_keys, paths)) for paths in (base, candidate)]
    if not secret and not masked[0] and not masked[1]:
        return d  # the usual case: two C-level searches of the files, one of the differing keys
    moved, redacted = [], []
    for cell, old, new in d.moved:
        (redacted if MASK in (old, new) or (secret and is_secret_key(cell[2])) else moved).append((cell, old, new))
    differs = set(differ)
    both = [cell for cell in map(_row_cell_of_key, masked[0] & masked[1]) if cell not in differs]
    cells = sorted({*(c for c, *_ in redacted), *both})
    if not cells and not secret:
        return d

    def hide(rows: tuple[tuple[Cell, str], ...]) -> tuple[tuple[Cell, str], ...]:
        return tuple((c, MASK if is_secret_key(c[2]) else v) for c, v in rows)

    return EvidenceDiff(identical=d.identical - len(both), moved=tuple(moved), only_base=hide(d.only_base),
                        only_candidate=hide(d.only_candidate), redacted=tuple(cells))


def _row_cell_of_key(key: bytes) -> Cell:
    suite, arm, name = key.decode("utf-8", "replace").split("\t")
    return (suite, arm, name)
