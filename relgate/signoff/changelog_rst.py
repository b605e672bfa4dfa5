"""The changelog section in a reStructuredText changelog (``CHANGES.rst``, ``NEWS.rst`` …).

The sign-off writes its section in Markdown (``changelog-section.md``); a ``.rst`` changelog
gets it in its own format: the ``### Title`` heading underlined with the file's next heading
level (the character the version's sub-headings use, else one no heading above it uses),
```code``` as ````code````, a Markdown table as a literal block. It goes at the end of the
version's section — a heading whose text holds the version (``Version 2.0.0``, ``2.0.0
(2026-01-05)``, ``v2.0.0``), underlined (and maybe overlined) — replacing an earlier one of
the same title.
"""

from __future__ import annotations

import re

from relgate.core.errors import InputError

__all__ = ["markdown_to_rst", "insert_section_rst"]

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.,_<>])\1{2,}\s*$")
_PREFERRED = "~^\"'`+:#*._<>"


def _headings(lines: list[str]) -> list[tuple[int, str]]:
    """(index of the title line, underline character) of every section heading."""
    out = []
    for i in range(len(lines) - 1):
        title, under = lines[i], lines[i + 1]
        m = _UNDERLINE.match(under)
        if m and title.strip() and not _UNDERLINE.match(title) and len(under.rstrip()) >= len(title.rstrip()):
            out.append((i, m.group(1)))
    return out


def markdown_to_rst(section: str, underline: str) -> str:
    """The sign-off's Markdown section as reStructuredText, its heading underlined with ``underline``."""
    out: list[str] = []
    table: list[str] = []

    def flush() -> None:
        if table:
            introduced = next((line for line in reversed(out) if line.strip()), "").endswith("::")
            if out and out[-1].strip():
                out.append("")
            out.extend([*(() if introduced else ("::", "")), *("    " + row for row in table), ""])
            table.clear()

    for line in section.rstrip("\n").split("\n"):
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("### "):
            title = line[4:].strip()
            out += [title, underline * len(title)]
            continue
        line = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", line)
        if line.endswith(":") and line.startswith("``"):
            line += ":"  # "`name` on board:" introduces the literal block below: "::"
        out.append(line)
    flush()
    return "\n".join(out).rstrip("\n") + "\n"


def insert_section_rst(text: str, version: str, section_md: str, title: str) -> str:
    lines = text.split("\n")
    heads = _headings(lines)
    pattern = re.compile(rf"(^|[^\w.])v?{re.escape(version)}(?![\w.]*\d)")
    found = next(((n, (i, ch)) for n, (i, ch) in enumerate(heads) if pattern.search(lines[i])), None)
    if found is None:
        raise InputError(f"no heading naming {version} to put the section under")
    n, (head, level) = found
    above = {ch for _, ch in heads[: n + 1]}
    below = next((ch for i, ch in heads[n + 1:] if ch != level and ch not in above), None)
    end = next((i for i, ch in heads[n + 1:] if ch == level or ch in above), len(lines))
    sub = below or next(c for c in _PREFERRED if c not in {ch for _, ch in heads})
    block = lines[head:end]
    start = next((i for i in range(len(block) - 1) if block[i].strip() == title and _UNDERLINE.match(block[i + 1])),
                 None)
    if start is not None:  # an earlier section: this one replaces it
        stop = next((i for i in range(start + 2, len(block) - 1)
                     if block[i].strip() and _UNDERLINE.match(block[i + 1])), len(block))
        block = block[:start] + block[stop:]
    while block and not block[-1].strip():
        block.pop()
    rst = markdown_to_rst(section_md, sub).rstrip("\n").split("\n")
    return "\n".join(lines[:head] + block + [""] + rst + [""] + lines[end:])
