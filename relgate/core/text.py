"""The one rule for strings a person types that reach a document, a table, a console or a path.

A user string (``--by``, ``--note``, ``--reason``, ``--board``, ``--release``, ``--meta``, a
checklist title, ``release.version`` …) is one line of text: a line break, a control character
(an ANSI escape starts with ESC, a carriage return rewrites what a console shows, a tab splits a
TSV cell) or a bidirectional-text control (it reorders what a reader sees) is refused at the
input with :func:`check_line` (exit 2, naming the option), and whatever reaches an output from
an older ledger anyway is rendered inert with :func:`inert` (escaped and visible). Markdown gets
:func:`md` on top: its markup characters are escaped, so that nothing typed can add a line, a
heading, a table cell, emphasis that reads as a verdict, or an HTML tag. (The sign-off's HTML
page escapes with its template engine; this module is the console's, Markdown's and TSV's.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from relgate.core.errors import InputError

__all__ = ["UNSAFE", "line_problem", "check_line", "check_name", "inert", "md", "code", "words"]

#: What never belongs in one line of user text: C0 and C1 controls (tab, CR, LF, ESC, NEL …),
#: DEL, the Unicode line and paragraph separators and the bidirectional-text controls.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_MD = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def _what(ch: str) -> str:
    if ch in "\n\r\x85\u2028\u2029":
        return "a line break"
    if ch == "\x1b":
        return "an ANSI escape (ESC)"
    if ch == "\t":
        return "a tab"
    if ch in "\u061c\u200e\u200f\ufeff" or "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069":
        return "a bidirectional-text control (it reorders what a reader sees)"
    return "a control character"


def line_problem(text: str) -> str | None:
    """Why ``text`` is not one safe line of text (one clause), or None when it is."""
    found = UNSAFE.search(text)
    if found is None:
        return None
    return f"holds {_what(found.group())} (character {found.start() + 1}: {inert(found.group())})"


def check_line(value: str, option: str, *, max_length: int = 2000) -> str:
    """``value`` as given when it is one safe line (an :class:`InputError` naming ``option`` if not)."""
    why = line_problem(value)
    if why is None and len(value) > max_length:
        why = f"is {len(value)} characters long ({max_length} at most)"
    if why is not None:
        raise InputError(f"{option}: {why}; give one line of plain text")
    return value


def check_name(value: str, option: str, *, max_length: int = 200) -> str:
    """A name that also becomes part of a path or a table key (a board, a release): one safe
    line, no ``/``, ``\\`` or ``..``, not blank."""
    check_line(value, option, max_length=max_length)
    if not value.strip():
        raise InputError(f"{option}: must not be empty")
    if "/" in value or "\\" in value or ".." in value or value.strip() != value:
        raise InputError(f'{option}: "{value}" is not a name (no "/", "\\", ".." or surrounding spaces)')
    return value


def inert(text: str, *, keep: str = "") -> str:
    """``text`` with every unsafe character shown as its escape (``\\r``, ``\\x1b``, ``\\u202e``);
    the characters of ``keep`` (a tab, on a console line of data) stay as they are."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(lambda m: m.group() if m.group() in keep else m.group().encode("unicode_escape").decode("ascii"),
                      text)


def md(text: object) -> str:
    """``text`` for Markdown prose or a table cell: inert, and its markup characters escaped."""
    return _MD.sub(r"\\\1", inert(str(text)))


def code(text: object) -> str:
    """``text`` as a Markdown code span: inert, fenced by more backticks than it holds in a row
    (CommonMark), pipes escaped for a table."""
    body = inert(str(text))
    run = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (run + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: names listed in a sentence."""
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
