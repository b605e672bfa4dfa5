"""The lane census's rules for a crate (the rules a Rust GPU crate's own census keeps): no two
targets share a file, nothing points into the archive, gate and toolkit files hide no test behind
a bare ``#[ignore``, bench, qualification and placed lanes keep cargo's layout, every ``.rs`` file
in ``tests/``, ``benches/`` and ``tools/qualification/`` is a target. Their order and wording:
:mod:`relgate.lanes.census`, which asks the adapter for them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.kinds.found import target_label, target_who

__all__ = ["census_scope", "crate_census", "ignore_attribute"]

Report = Callable[[str, str, str], None]  # (rule, target, message)

#: Lanes whose files may hold no bare ``#[ignore`` (a test no lane would ever run).
NO_IGNORE_LANES = ("gate", "toolkit")
#: Lanes whose targets must live under ``tests/`` (the crate's census places these only).
PLACED_LANES = ("host", "contract", "record")
ARCHIVE_DIR = "internal/"

TESTS_DIR = "tests/"
BENCHES_DIR = "benches/"
QUALIFICATION_DIR = "tools/qualification/"
QUALIFICATION_FEATURE = "qualification"

# The crate's own census reads lines: a line that, trimmed, starts with ``#[ignore`` is a
# violation unless it also holds ``= "invoked by``. relgate reads the attributes a line starts
# with, so a one-line ``#[test] #[ignore] fn x`` is caught too; a comment is never one.
_IGNORE = "#[ignore"
_INVOKED_BY = '= "invoked by'


def crate_census(root: Path, targets: Sequence[Any], scoped: Sequence[Any],
                 rows_by_target: Mapping[str, Sequence[Any]], known: Collection[str], report: Report) -> None:
    """Each crate rule's violations, through ``report`` (``scoped``: the targets the census judges)."""
    # shared-path (a crate's rule: make and python targets may share a file, run with switches)
    first_by_path: dict[str, Any] = {}
    for target in scoped:
        if target.path is None:
            continue
        first = first_by_path.setdefault(target.path, target)
        if first is not target:
            report("shared-path", target_label(target),
                   f"shares {target.path} with {target_who(first)}; give each target its own file")
    for target in scoped:  # archived
        if target.path is not None and target.path.startswith(ARCHIVE_DIR):
            report("archived", target_label(target),
                   f"{target.path} points into the archive ({ARCHIVE_DIR}); archived stands stay out of the "
                   "manifest: drop the target (and its lane row)")
    if not any(t.kind in ("test", "bench") for t in targets):
        report("no-targets", "Cargo.toml",
               "has no test or bench target (none declared, none auto-discovered); add the targets the "
               "lanes run")
    _rust_rules(root, scoped, rows_by_target, known, report)
    _undeclared_files(root, targets, report)


def _rust_rules(root: Path, scoped: Sequence[Any], rows_by_target: Mapping[str, Sequence[Any]],
                known: Collection[str], report: Report) -> None:
    # (target, name, path, lane) for every target with a name, a path and one known lane;
    # an unknown or ambiguous lane is reported by the common rules, the layout waits for it
    checked: list[tuple[Any, str, str, str]] = []
    for target in scoped:
        rows = rows_by_target.get(target.name or "", [])
        if target.name and target.path is not None and len({row.lane for row in rows}) == 1 \
                and rows[0].lane in known and not target.path.startswith(ARCHIVE_DIR):  # archived: drop it, that is all
            checked.append((target, target.name, target.path, rows[0].lane))

    for _target, name, path, lane in checked:  # gate-ignore
        if lane in NO_IGNORE_LANES and (root / path).is_file():
            for number, line in _source_lines(root / path):
                attribute = ignore_attribute(line) if _IGNORE in line else None
                if attribute is not None and _INVOKED_BY not in attribute:
                    shown = line[line.index(attribute):].strip()
                    report("gate-ignore", name,
                           f"{path}:{number}: {shown} in a {lane}-lane file hides a test no "
                           "lane would ever run; un-ignore it, move the target to the contract lane, or "
                           'mark a child its parent launches #[ignore = "invoked by …"]')
    for target, name, path, lane in checked:  # bench-layout
        if lane != "bench":
            continue
        problems = []
        if target.kind != "bench":
            problems.append(f"is a [[{target.kind}]]" if target.kind != "command" else "is not a [[bench]]")
        if target.harness:
            problems.append("uses the default test harness")
        if not path.startswith(BENCHES_DIR):
            problems.append(f"lives outside benches/ ({path})")
        if problems:
            report("bench-layout", name,
                   f"in the bench lane but {', '.join(problems)}; declare it as a [[bench]] with "
                   "harness = false under benches/")
    for target, name, path, lane in checked:  # qualification-layout
        needs = QUALIFICATION_FEATURE in target.required_features
        if lane == "qualification":
            problems = []
            if not path.startswith(QUALIFICATION_DIR):
                problems.append(f"lives outside tools/qualification/ ({path})")
            if not needs:
                problems.append("does not require the qualification feature")
            if problems:
                report("qualification-layout", name,
                       f"in the qualification lane but {' and '.join(problems)}; put it under "
                       'tools/qualification/ with required-features = ["qualification", …]')
        elif needs and target.kind == "test" and not path.startswith(QUALIFICATION_DIR):
            report("qualification-layout", name,
                   f"requires the qualification feature but sits in the {lane} lane; move it under "
                   "tools/qualification/ into the qualification lane, or drop the feature")
    for _target, name, path, lane in checked:  # lane-layout
        if lane not in PLACED_LANES or path.startswith(TESTS_DIR):
            continue
        if path.startswith(BENCHES_DIR):
            fix = "move it under tests/, or give it the bench lane"
        elif path.startswith(QUALIFICATION_DIR):
            fix = "move it under tests/, or give it the qualification lane"
        else:
            fix = "move it under tests/"
        report("lane-layout", name, f"in the {lane} lane but lives outside tests/ ({path}); {fix}")


def _undeclared_files(root: Path, targets: Sequence[Any], report: Report) -> None:
    declared = {t.path for t in targets if t.path is not None}
    for directory in (TESTS_DIR, BENCHES_DIR, QUALIFICATION_DIR):
        for path in _target_files(root, directory):
            if path not in declared:
                report("undeclared-file", path,
                       "not a declared target; declare it in Cargo.toml and give it a lane, "
                       "or delete it")


def _target_files(root: Path, directory: str) -> list[str]:
    """``DIR/*.rs`` and ``DIR/*/main.rs``: the files cargo treats as targets."""
    base = root / directory
    try:
        children = sorted(base.iterdir())
    except OSError:
        return []
    out = []
    for child in children:
        if child.suffix == ".rs" and child.is_file():
            out.append(directory + child.name)
    return out


def census_scope(targets: Sequence[Any], rows_by_target: Mapping[str, Any]) -> list[Any]:
    """The targets the census judges: tests and benches, any target under ``tools/qualification/``,
    and any other (an example, a bin) that has a lane row."""
    primary = [t for t in targets
               if t.kind in ("test", "bench", "command") or (t.path or "").startswith(QUALIFICATION_DIR)]
    primary_names = {t.name for t in primary}
    return [t for t in targets
            if any(t is p for p in primary)
            or (t.name in rows_by_target and t.name not in primary_names)]


def ignore_attribute(line: str) -> str | None:
    """The ``#[ignore…]`` attribute among those ``line`` starts with (trimmed), else None:
    ``#[ignore]``, ``#[test] #[ignore = "slow"] fn x()``; not ``//! … #[ignore] …``."""
    rest = line.strip()
    while rest.startswith("#["):
        depth, end = 0, -1
        for index, char in enumerate(rest):
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
                if depth == 0:
                    end = index
                    break
        attribute = rest if end < 0 else rest[: end + 1]
        if attribute.startswith(_IGNORE) and attribute[len(_IGNORE):len(_IGNORE) + 1] in ("]", " ", "=", "(", ""):
            return attribute
        if end < 0:
            return None
        rest = rest[end + 1:].lstrip()
    return None


def _source_lines(path: Path) -> Iterator[tuple[int, str]]:
    try:  # a FIFO or a device where a source file should be is read as nothing (never a hang)
        text = read_user_file(path, what="a target's source", line_limit=None).decode("utf-8", errors="replace")
    except InputError:
        return
    yield from enumerate(text.splitlines(), start=1)
