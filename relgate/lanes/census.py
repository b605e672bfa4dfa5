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

The rules marked with a kind are that kind's adapter's (``relgate/kinds/cargo/census.py``,
``relgate/kinds/python``). Which cargo targets the census covers: tests and benches, any
target whose path is under ``tools/qualification/``, and any other target (example, bin)
that has a lane row. Examples and bins without a row are not qualification targets.

:func:`~relgate.manifest.lanes.read_lanes_file` reads the table (tolerating the duplicate
rows tomllib would refuse, so the census can report them); :func:`run_census` is pure apart from reading
the targets' source files. Exit codes are the caller's: 0 clean, 1 violations
(:func:`census_exit_code`), 2 for an :class:`~relgate.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from relgate.core.record import record
from relgate.core.schema import did_you_mean, display_path
from relgate.kinds.found import target_label
from relgate.kinds.registry import kind_of
from relgate.manifest.lanes import LaneRef, LaneRow, LanesFile
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
#: The rules that apply only to cargo projects (the cargo adapter's: relgate/kinds/cargo/census.py).
RUST_RULES = ("no-targets", "shared-path", "archived", "gate-ignore", "bench-layout", "qualification-layout",
              "lane-layout", "undeclared-file")
#: The rules that apply only to python projects (its adapter's; tests/test_python_package.py has their cases).
PYTHON_RULES = ("undeclared-test",)


@record
class Violation:
    rule: str  # one of RULES
    target: str  # the target name, or its path (its origin) when it has no name
    message: str  # what is wrong and the fix


# --- the census ----------------------------------------------------------------------------

_Report = Callable[[str, str, str], None]  # (rule, target, message)


def run_census(*, kind: str, root: Path, targets: Sequence[Target], lanes: LanesFile,
               known_lanes: Collection[str], references: Sequence[LaneRef] = (),
               option_files: Mapping[str, Path] | None = None,
               runner_tests: tuple[tuple[str, str], ...] | None = None, runner: str = "") -> list[Violation]:
    """Every violation of the census rules, in ``RULES`` order, then by target.

    ``kind`` is the project kind: its adapter says which targets are judged and adds its own
    rules beside the common ones (``ProjectKind.census``: a crate's layout rules, a Python
    project's collected test files; make: none).
    ``root`` is the project root the target paths are relative to. ``references``
    are the lanes named outside ``[lanes]``; ``option_files`` the ``[target.NAME]`` tables
    and the file each is in; ``runner_tests`` the (name, where) of each test the project's test
    runner (named ``runner``) lists, where its kind has such a listing.
    """
    root = Path(root)
    adapter = kind_of(kind)
    known = tuple(dict.fromkeys(known_lanes))
    where = _relative(lanes.path, root)
    rows_by_target: dict[str, list[LaneRow]] = {}
    for row in lanes.rows:
        rows_by_target.setdefault(row.target, []).append(row)
    scoped = adapter.census_scope(targets, rows_by_target)
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
            report("no-name", target_label(target),
                   f"declared without a name ({target.origin or 'no origin'}); name it and give it a lane")
    for target in scoped:
        if target.path is None:
            report("no-path", target_label(target),
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
    # missing-file
    for target in scoped:
        if target.path is not None and not (root / target.path).is_file():
            what = "is not a file" if (root / target.path).exists() else "does not exist"
            report("missing-file", target_label(target),
                   f"{target.path} {what} ({target.origin or 'no origin'}); add the file or fix the path")
    adapter.census(root, targets, scoped, rows_by_target, known, report)
    for name, place in runner_tests or ():
        if name not in every_name:
            report("undeclared-test", name, f"{runner or 'the test runner'} lists it ({place}), no target declares "
                   f"it; declare [target.{name}] with the command that runs it, and give it a lane")
    return _ordered(found)


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


def _ordered(found: Iterable[Violation]) -> list[Violation]:
    """RULES order, then target; within one (rule, target), the order found."""
    rank = {rule: i for i, rule in enumerate(RULES)}
    return sorted(found, key=lambda v: (rank.get(v.rule, len(RULES)), v.target))


def _describe(target: Target) -> str:
    """``tests/a.rs, Cargo.toml [[test]] #2`` — where a person finds the target."""
    parts = [p for p in (target.path, target.origin) if p and not p.startswith("auto: ")]
    if target.auto:
        parts.append("auto-discovered")
    return ", ".join(parts) or "no path"


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
