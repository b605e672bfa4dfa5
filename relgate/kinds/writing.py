"""What a kind writes for ``relgate init`` and says for ``init --check``, where it has nothing of
its own to say: TOML quoting, the shell rule, and the generic ``builds.toml``, ``package.toml``
lines and drift made from a :class:`~relgate.kinds.found.Found` (pure: no I/O).

The kinds whose reading carries more than a ``Found`` holds (a crate's feature matrix, a
Makefile's rule database, a wheel's extensions) override the hooks in their own package and
reuse what is here.
"""

from __future__ import annotations

import re
import shlex

from relgate.core.schema import display_path
from relgate.core.text import inert
from relgate.kinds.found import DriftPlace, Found

__all__ = ["SHELL_OPERATORS", "quote", "toml_key", "needs_shell", "found_builds", "found_package_lines",
           "judged_drift", "target_paths"]

SHELL_OPERATORS = frozenset(("&&", "||", ";", "|", ">", "<"))  # words only a shell reads: shell = true

_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def quote(text: str) -> str:
    """``text`` as a TOML basic string: backslash, quote and every control character escaped."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = re.sub(r"[\x00-\x1f\x7f]", lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), out)
    return '"' + out + '"'


def toml_key(name: str) -> str:
    """``name`` as a TOML key: bare where TOML allows it, else quoted."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else quote(name)


def needs_shell(command: str) -> bool:
    """Whether ``command`` is shell syntax (``a && b``): written with ``shell = true``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return True
    return any(w in SHELL_OPERATORS for w in words)


def found_builds(found: Found) -> str:
    """builds.toml from what a kind's adapter found: each release build (a toolkit's first, so the
    plain build's files are the ones left for the tests), then each test build, all held warning-free."""
    lines = [f"# Release builds and the host checks `nox -s host` runs, in order (read from {inert(found.source)}).",
             "# A release target starts clean; its output must be warning-free, and it must write something",
             "# (a build that writes nothing is `fail: built nothing`).", ""]
    if found.notes:
        lines += ["# Not read (init runs none of the project's code; the census asks the project's own tools):"]
        lines += [f"#   {inert(note)}" for note in found.notes]
        lines.append("")
    if not found.releases:
        lines += ["# No release build was found; name one:", "# [release.default]", '# run = "…"', ""]
    for build in found.releases:
        head = f"[release.{toml_key(build.name)}]"
        lines.append(f"{head}   # {inert(build.why)}" if build.why else head)
        lines += [f"clean = {quote(build.clean)}"] if build.clean else []
        lines.append(f"run = {quote(build.run)}")
        lines += ["shell = true"] if needs_shell(build.run) or (build.clean and needs_shell(build.clean)) else []
        if build.requires:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.requires) + "]   # compiles without a GPU")
        lines.append("")
    for build in sorted(found.releases, key=lambda b: not b.requires):
        check = build.name if build.name.startswith("release") else f"release-{build.name}"
        lines += ["[[check]]", f"name = {quote(check)}", f"release = {quote(build.name)}", ""]
    for build in found.checks:
        lines += ["[[check]]", f"name = {quote(build.name)}", f"run = {quote(build.run)}",
                  *(["shell = true"] if needs_shell(build.run) else []),
                  'warnings = "deny"   # the test build is a build: the no-warnings item counts it']
        if build.requires:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.requires) + "]")
        lines.append("")
    return "\n".join(lines)


def found_package_lines(found: Found) -> tuple[list[str], list[str]]:
    """package.toml's ``[package]`` and ``[publish]`` lines: the build and test commands package_verify
    runs in the extracted tree, where the kind's reader named them."""
    commands = [(key, c) for key, c in (("build_command", found.package_build), ("test_command", found.package_test))
                if c]
    pkg = [f"{key} = {quote(c)}" for key, c in commands]
    if any(needs_shell(c) for _, c in commands):
        pkg.append("shell = true   # the commands above are /bin/sh strings")
    return pkg, []


def judged_drift(found: Found, place: DriftPlace) -> list[str]:
    """A judged target without a lane row, a lane row for a target that is gone."""
    shown_lanes = display_path(place.lanes_path)
    judged = found.judged_rows()
    names = {name for name, _, _ in judged} | set(found.also_targets)
    out = [f"new target {name} ({what}): no lane in {shown_lanes}"
           for name, _, what in judged if name not in place.rows]
    out += [f"{shown_lanes}: lane row for a removed target {name}" for name in place.rows if name not in names]
    return out


def target_paths(tables: object) -> set[str]:
    """The ``path`` of every ``[target.NAME]`` of a lanes file's ``target`` table."""
    return {t["path"] for t in tables.values() if isinstance(t, dict) and isinstance(t.get("path"), str)} \
        if isinstance(tables, dict) else set()
