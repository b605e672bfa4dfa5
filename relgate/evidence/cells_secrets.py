"""Secrets in evidence diffs: a cell whose key names a secret, or whose value the runner
masked, is reported as redacted rather than compared (issue 23)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from relgate.core.redact import MASK, any_secret_key, is_secret_key
from relgate.evidence.cells_diff import EvidenceDiff
from relgate.evidence.cells_parse import Cell

__all__ = ["redact_diff"]

_CHUNK = 1 << 20


def _masked_keys(path: Path) -> set[bytes]:
    """``suite\tarm\tkey`` of the rows whose value is the mask ``***`` (a secret the runner
    redacted). The file is read in 1 MiB blocks (a partial last line carried to the next), so
    the search costs one block of memory whatever the capture's size; a block without ``*``
    is passed over with one C-level search."""
    needle = b"\t" + MASK.encode()
    keys: set[bytes] = set()
    try:
        with open(path, "rb") as handle:
            carry = handle.read(3).removeprefix(b"\xef\xbb\xbf")  # a BOM is not part of the first key
            while block := handle.read(_CHUNK):
                block = carry + block
                cut = block.rfind(b"\n") + 1  # a partial last line waits for the rest of it
                if b"*" in block[:cut]:  # memchr; "*" is rare in captures
                    _collect(block[:cut], needle, keys)
                carry = block[cut:]
            if b"*" in carry:
                _collect(carry, needle, keys)
    except OSError:
        return set()
    return keys


def _collect(lines: bytes, needle: bytes, keys: set[bytes]) -> None:
    """The masked rows of whole ``lines`` into ``keys``."""
    for line in lines.splitlines():
        if line.endswith(needle) and not line.startswith(b"#"):
            fields = line.split(b"\t", 3)
            if len(fields) == 4 and fields[3] == needle[1:]:
                keys.add(b"\t".join(fields[:3]))


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
