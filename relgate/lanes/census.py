"""The lane census: the lane table and the declared targets must agree.

A project's lane table (a Rust GPU crate's ``qual/lanes.toml``: a comment header, then
one ``[lanes]`` table mapping target name to lane) carries the judgment of where each
target runs; the census, which needs no GPU, keeps it and the tree in step. Every rule
yields :class:`Violation` records whose message says the fix; nothing stops at the
first one.

Rules, in the order they are reported (``RULES``):

``no-targets`` (cargo)
    the crate has at least one test or bench target: declared (``[[test]]``, ``[[bench]]``)
    or found by cargo's auto-discovery (``autotests``/``autobenches`` on).
``unknown-lane``
    every lane name is known (with a did-you-mean): the rows, and the lanes ``[fleet]``
    and ``[multihost.*]`` name. The loader leaves this to the census, so a typo in the
    table hides no other defect; the lane sessions refuse a table with one (exit 2).
``duplicate-row``
    no target is listed twice, even with the same lane.
``unassigned``
    every declared target has a lane ("assign one in this commit").
``stale-row``
    a lane row names a declared target ("drop the row"); so does a ``[target.NAME]``
    options table (cargo: the targets come from Cargo.toml).
``no-name``, ``no-path``, ``duplicate-name``, ``shared-path`` (cargo), ``missing-file``
    each target has a name and a path, no two targets share a name (nor, in a crate, a
    path: make and python targets may run from one source file with switches), the file
    exists.
``archived`` (cargo)
    no target points into ``internal/`` (the maintainers' archive).
``gate-ignore`` (cargo)
    a gate- or toolkit-lane file holds no ``#[ignore`` attribute unless it holds
    ``= "invoked by`` (a child test its parent launches) — line by line, as the crate's own
    census reads it: a line that, trimmed, starts with ``#[ignore``, or with other
    attributes and then ``#[ignore`` (``#[test] #[ignore] fn x``). A comment or doc comment
    that mentions ``#[ignore]`` is not an attribute.
``bench-layout`` (cargo)
    bench-lane targets are ``[[bench]]`` with ``harness = false`` under ``benches/``.
``qualification-layout`` (cargo)
    qualification-lane targets live under ``tools/qualification/`` and require the
    ``qualification`` feature; a test that requires that feature sits in that lane.
``lane-layout`` (cargo)
    targets of the host, contract and record lanes live under ``tests/`` (the crate does
    not place gate, toolkit or project-defined lanes: neither does relgate).
``undeclared-file`` (cargo)
    every ``.rs`` file in ``tests/``, ``benches/`` and ``tools/qualification/`` is the
    path of a target. Files deeper down (``tests/common/mod.rs``, ``DIR/NAME/main.rs``)
    are not judged, as in the crate's census: where cargo's auto-discovery makes
    ``DIR/NAME/main.rs`` a target, it is one, and ``unassigned`` names it.
``undeclared-test`` (python, and a kind whose test runner lists its tests)
    every file pytest collects (the project's ``testpaths`` and ``python_files``, read from
    its configuration without importing its code) is the path of a declared target; every
    test the project's own runner lists (CTest: ``ctest --show-only=json-v1`` of a fresh
    configure, asked by the step that runs the census) is a declared target.

Which cargo targets the census covers: tests and benches, any target whose path is under
``tools/qualification/``, and any other target (example, bin) that has a lane row.
Examples and bins without a row are not qualification targets.

:func:`~relgate.manifest.lanes.read_lanes_file` reads the table (tolerating the duplicate
rows tomllib would refuse, so the census can report them); :func:`run_census` is pure apart from reading
the targets' source files. Exit codes are the caller's: 0 clean, 1 violations
(:func:`census_exit_code`), 2 for an :class:`~relgate.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.kinds.registry import kind_of
from relgate.manifest.lanes import LaneRef, LaneRow, LanesFile
from relgate.core.schema import did_you_mean, display_path
from relgate.manifest.targets import Target

__all__ = [
    "RULES",
    "RUST_RULES",
    "PYTHON_RULES",
    "Violation",
    "run_census",
    "render_violations",
    "census_exit_code",
]

RULES = (
    "no-targets",
    "unknown-lane",
    "duplicate-row",
    "unassigned",
    "stale-row",
    "no-name",
    "no-path",
    "duplicate-name",
    "shared-path",
    "missing-file",
    "archived",
    "gate-ignore",
    "bench-layout",
    "qualification-layout",
    "lane-layout",
    "undeclared-file",
    "undeclared-test",
)
#: The rules that apply only to cargo projects.
RUST_RULES = ("no-targets", "shared-path", "archived", "gate-ignore", "bench-layout", "qualification-layout", "lane-layout",
              "undeclared-file")
#: The rules that apply only to python projects (tests/test_python_package.py has their cases).
PYTHON_RULES = ("undeclared-test",)
#: Lanes whose files may hold no bare ``#[ignore`` (a test no lane would ever run).
NO_IGNORE_LANES = ("gate", "toolkit")
#: Lanes whose targets must live under ``tests/`` (the crate's census places these only).
PLACED_LANES = ("host", "contract", "record")
ARCHIVE_DIR = "internal/"

TESTS_DIR = "tests/"
BENCHES_DIR = "benches/"
QUALIFICATION_DIR = "tools/qualification/"
QUALIFICATION_FEATURE = "qualification"


@record
class Violation:
    rule: str  # one of RULES
    target: str  # the target name, or its path (its origin) when it has no name
    message: str  # what is wrong and the fix


# --- the census ----------------------------------------------------------------------------

_Report = Callable[[str, str, str], None]  # (rule, target, message)

# The crate's own census reads lines: a line that, trimmed, starts with ``#[ignore`` is a
# violation unless it also holds ``= "invoked by``. relgate reads the attributes a line starts
# with, so a one-line ``#[test] #[ignore] fn x`` is caught too; a comment is never one.
_IGNORE = "#[ignore"
_INVOKED_BY = '= "invoked by'


def run_census(*, kind: str, root: Path, targets: Sequence[Target], lanes: LanesFile,
               known_lanes: Collection[str], references: Sequence[LaneRef] = (),
               option_files: Mapping[str, Path] | None = None,
               runner_tests: tuple[tuple[str, str], ...] | None = None, runner: str = "") -> list[Violation]:
    """Every violation of the census rules, in ``RULES`` order, then by target.

    ``kind`` is the project kind: its adapter says whether the Rust rules (cargo) or the
    collected-test-file rule (python) apply beside the common ones (make: only those).
    ``root`` is the project root the target paths are relative to. ``references``
    are the lanes named outside ``[lanes]``; ``option_files`` the ``[target.NAME]`` tables
    and the file each is in; ``runner_tests`` the (name, where) of each test the project's test
    runner (named ``runner``) lists, where its kind has such a listing.
    """
    root = Path(root)
    adapter = kind_of(kind)
    rust = adapter.rust_census
    known = tuple(dict.fromkeys(known_lanes))
    where = _relative(lanes.path, root)
    rows_by_target: dict[str, list[LaneRow]] = {}
    for row in lanes.rows:
        rows_by_target.setdefault(row.target, []).append(row)
    scoped = _in_scope(targets, rust, rows_by_target)
    found: list[Violation] = []

    def report(rule: str, target: str, message: str) -> None:
        found.append(Violation(rule=rule, target=target, message=message))

    # unknown-lane
    for row in lanes.rows:
        if row.lane not in known:
            hint = did_you_mean(row.lane, known) or f'; use one of {", ".join(known)}'
            report("unknown-lane", row.target, f'unknown lane "{row.lane}"{hint} ({where}:{row.line})')
    for ref in references:
        if ref.lane not in known:
            hint = did_you_mean(ref.lane, known) or f'; use one of {", ".join(known)}'
            report("unknown-lane", ref.key, f'no lane "{ref.lane}"{hint} ({_relative(ref.path, root)})')
    # duplicate-row
    for name, rows in rows_by_target.items():
        if len(rows) > 1:
            listed = ", ".join(f'line {row.line} "{row.lane}"' for row in rows)
            report("duplicate-row", name,
                   f"listed {len(rows)} times in {where} ({listed}); keep exactly one row")
    # unassigned
    named = [t for t in scoped if t.name]
    unassigned: dict[str, Target] = {}
    for target in named:
        if target.name not in rows_by_target and target.name not in unassigned:
            unassigned[target.name] = target
            report("unassigned", target.name,
                   f"no lane in {where} ({_describe(target)}); assign one in this commit")
    # stale-row
    every_name = {t.name for t in targets if t.name}
    stale = [name for name in rows_by_target if name not in every_name]
    renamed = _renames(stale, sorted(unassigned))
    for name in stale:
        fix = f'drop the row, or rename it to "{renamed[name]}"' if name in renamed else "drop the row"
        report("stale-row", name,
               f"lane row for a target that does not exist ({where}:{rows_by_target[name][0].line}); {fix}")
    for name, file in (option_files or {}).items():
        if name not in every_name:
            close = did_you_mean(name, sorted(every_name))
            report("stale-row", f"target.{name}",
                   f"[target.{name}] in {_relative(file, root)} configures a target that does not exist"
                   f"{close}; drop the table, or rename it")
    # no-name, no-path
    for target in scoped:
        if not target.name:
            report("no-name", _label(target),
                   f"declared without a name ({target.origin or 'no origin'}); name it and give it a lane")
    for target in scoped:
        if target.path is None:
            report("no-path", _label(target),
                   f"declared without a path ({target.origin or 'no origin'}); set the path of its source file")
    # duplicate-name
    by_name: dict[str, list[Target]] = {}
    for target in named:
        by_name.setdefault(target.name or "", []).append(target)
    for name, group in by_name.items():
        if len(group) > 1:
            listed = "; ".join(_describe(t) for t in group)
            report("duplicate-name", name,
                   f"declared {len(group)} times ({listed}); give each target its own name")
    # shared-path (a crate's rule: make and python targets may share a file, run with switches)
    first_by_path: dict[str, Target] = {}
    for target in scoped if rust else ():
        if target.path is None:
            continue
        first = first_by_path.setdefault(target.path, target)
        if first is not target:
            report("shared-path", _label(target),
                   f"shares {target.path} with {_who(first)}; give each target its own file")
    # missing-file
    for target in scoped:
        if target.path is not None and not (root / target.path).is_file():
            what = "is not a file" if (root / target.path).exists() else "does not exist"
            report("missing-file", _label(target),
                   f"{target.path} {what} ({target.origin or 'no origin'}); add the file or fix the path")
    if rust:
        for target in scoped:  # archived
            if target.path is not None and target.path.startswith(ARCHIVE_DIR):
                report("archived", _label(target),
                       f"{target.path} points into the archive ({ARCHIVE_DIR}); archived stands stay out of the "
                       "manifest: drop the target (and its lane row)")
        if not any(t.kind in ("test", "bench") for t in targets):
            report("no-targets", "Cargo.toml",
                   "has no test or bench target (none declared, none auto-discovered); add the targets the "
                   "lanes run")
        _rust_rules(root, scoped, rows_by_target, known, report)
        _undeclared_files(root, targets, report)
    elif adapter.test_file_census:
        _undeclared_tests(root, targets, report)
    for name, place in runner_tests or ():
        if name not in every_name:
            report("undeclared-test", name, f"{runner or 'the test runner'} lists it ({place}), no target declares "
                   f"it; declare [target.{name}] with the command that runs it, and give it a lane")
    return _ordered(found)


def _undeclared_tests(root: Path, targets: Sequence[Target], report: _Report) -> None:
    from relgate.manifest.pyfacts import collect_test_files
    from relgate.core.schema import read_toml

    pyproject = root / "pyproject.toml"
    try:
        data = read_toml(pyproject) if pyproject.is_file() else {}
    except Exception:  # noqa: BLE001 - a broken pyproject.toml is the loader's finding, not the census's
        data = {}
    declared = {t.path for t in targets if t.path is not None}
    for path in collect_test_files(root, data):
        if path not in declared:
            report("undeclared-test", path, "a test file pytest collects, with no lane; declare [target.NAME] "
                   "(path and command) and give it a lane in this commit, or delete it")


def _rust_rules(root: Path, scoped: Sequence[Target], rows_by_target: Mapping[str, list[LaneRow]],
                known: Collection[str], report: _Report) -> None:
    # (target, name, path, lane) for every target with a name, a path and one known lane;
    # an unknown or ambiguous lane is reported by the common rules, the layout waits for it
    checked: list[tuple[Target, str, str, str]] = []
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


def _undeclared_files(root: Path, targets: Sequence[Target], report: _Report) -> None:
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


def _in_scope(targets: Sequence[Target], rust: bool, rows_by_target: Mapping[str, Any]) -> list[Target]:
    """The targets the census judges (see the module docstring)."""
    if not rust:
        return list(targets)
    primary = [t for t in targets
               if t.kind in ("test", "bench", "command") or (t.path or "").startswith(QUALIFICATION_DIR)]
    primary_names = {t.name for t in primary}
    return [t for t in targets
            if any(t is p for p in primary)
            or (t.name in rows_by_target and t.name not in primary_names)]


_RENAME_CUTOFF = 0.75


def _renames(stale: Sequence[str], unassigned: Sequence[str]) -> dict[str, str]:
    """stale row → the unassigned target it was most likely renamed to: only a close name
    (similarity at least ``_RENAME_CUTOFF``), and each target offered to one row at most."""
    import difflib

    pairs = sorted(((difflib.SequenceMatcher(None, row, name).ratio(), row, name)
                    for row in stale for name in unassigned), reverse=True)
    out: dict[str, str] = {}
    taken: set[str] = set()
    for ratio, row, name in pairs:
        if ratio < _RENAME_CUTOFF:
            break
        if row not in out and name not in taken:
            out[row] = name
            taken.add(name)
    return out


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


def _ordered(found: Iterable[Violation]) -> list[Violation]:
    """RULES order, then target; within one (rule, target), the order found."""
    rank = {rule: i for i, rule in enumerate(RULES)}
    return sorted(found, key=lambda v: (rank.get(v.rule, len(RULES)), v.target))


def _label(target: Target) -> str:
    return target.name or target.path or target.origin or "<unnamed target>"


def _describe(target: Target) -> str:
    """``tests/a.rs, Cargo.toml [[test]] #2`` — where a person finds the target."""
    parts = [p for p in (target.path, target.origin) if p and not p.startswith("auto: ")]
    if target.auto:
        parts.append("auto-discovered")
    return ", ".join(parts) or "no path"


def _who(target: Target) -> str:
    name = f'"{target.name}"' if target.name else "a target without a name"
    return f"{name} ({target.origin})" if target.origin else name


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except (OSError, ValueError):
        return display_path(path)


# --- reporting -----------------------------------------------------------------------------


def render_violations(vs: Iterable[Violation]) -> Iterator[str]:
    """One line per violation, ``rule  target  message``, columns aligned, in census order."""
    ordered = _ordered(vs)
    rule_width = max((len(v.rule) for v in ordered), default=0)
    target_width = max((len(v.target) for v in ordered), default=0)
    for v in ordered:
        yield f"{v.rule:<{rule_width}}  {v.target:<{target_width}}  {v.message}"


def census_exit_code(violations: Sequence[Violation]) -> int:
    """0 when the census is clean, 1 when it found anything."""
    return 1 if violations else 0
