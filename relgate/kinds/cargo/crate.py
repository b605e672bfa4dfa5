"""Cargo facts from ``Cargo.toml``: the declared and auto-discovered targets, features,
version.

Targets follow cargo's own rules (checked against ``cargo metadata`` in the tests):

- ``[[test]]``, ``[[bench]]``, ``[[example]]``, ``[[bin]]`` arrays are read as declared;
  a missing ``path`` takes cargo's default (``tests/NAME.rs`` or ``tests/NAME/main.rs``,
  ``benches/…``, ``examples/…``, ``src/bin/NAME.rs`` or ``src/bin/NAME/main.rs``, and
  ``src/main.rs`` for a bin named after the package), the first candidate that exists,
  else the first candidate (the census then reports the missing file).
- Auto-discovery finds ``tests/*.rs`` and ``tests/*/main.rs`` (likewise ``benches/``,
  ``examples/``, and ``src/main.rs`` plus ``src/bin/``). It is on unless
  ``[package] autotests``/``autobenches``/``autoexamples``/``autobins`` is false; under
  edition 2015 (cargo's default edition) it is off for a kind that declares any target
  unless the flag is set to true. An auto-discovered target whose name or path a
  declared target of the same kind already has is not added.
- Declared entries are kept even when they are wrong (no name, empty path): the lane
  census reports them. Wrongly typed values (``[[test]]`` not an array of tables, a
  ``harness`` that is not a boolean …) are an :class:`~relgate.errors.InputError` that
  names the file and the dotted key.

Reads files and lists directories; never runs cargo, prints or exits.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from relgate.core.record import record
from relgate.core.schema import Checker, read_toml

__all__ = ["CARGO_TARGET_TABLES", "CrateTarget", "discover_cargo_targets", "cargo_features", "package_version"]


@record
class CrateTarget:
    """A test, bench, example or bin target as Cargo.toml declares it (or cargo would find it),
    kept even when it is wrong: the lane census reports a missing name or file."""

    name: str | None  # None: declared without a name (a census violation)
    path: str | None  # relative to the crate root, "/"-separated; None: no path declared
    kind: str  # test bench example bin
    required_features: tuple[str, ...] = ()
    harness: bool = True
    origin: str = ""  # where it was declared, for messages: "Cargo.toml [[test]] #2"
    auto: bool = False  # found by cargo's auto-discovery, not declared

#: (table name in Cargo.toml, CrateTarget.kind, [package] auto flag, auto-discovery directory)
CARGO_TARGET_TABLES: tuple[tuple[str, str, str, str], ...] = (
    ("test", "test", "autotests", "tests"),
    ("bench", "bench", "autobenches", "benches"),
    ("example", "example", "autoexamples", "examples"),
    ("bin", "bin", "autobins", "src/bin"),
)


def discover_cargo_targets(cargo_toml: Path) -> list[CrateTarget]:
    """Every test, bench, example and bin target of the package at ``cargo_toml``.

    Order: tests, benches, examples, bins; within a kind the declared ones in file
    order, then the auto-discovered ones by path. Paths are relative to the directory
    of ``cargo_toml``, ``/``-separated.
    """
    cargo_toml = Path(cargo_toml)
    data = read_toml(cargo_toml)
    root = cargo_toml.parent
    checker = Checker(cargo_toml)
    package = checker.get(data, "", "package", dict, {})
    package_name = checker.get(package, "package", "name", str)
    edition = package.get("edition", "2015")  # `{ workspace = true }` counts as a modern one
    out: list[CrateTarget] = []
    for table, kind, auto_key, directory in CARGO_TARGET_TABLES:
        entries = checker.array_of_tables(data, "", table)
        declared_any = table in data
        declared = [
            _declared_target(checker, root, table, kind, i, entry, package_name)
            for i, entry in entries.items()
        ]
        auto_flag = checker.get(package, "package", auto_key, bool)
        if "package" not in data:
            discover = False  # a virtual manifest has no targets of its own
        elif auto_flag is not None:
            discover = auto_flag
        else:
            discover = not (declared_any and edition == "2015")
        out.extend(declared)
        if discover:
            names = {t.name for t in declared if t.name is not None}
            paths = {t.path for t in declared if t.path is not None}
            for name, path in _infer(root, directory, kind, package_name):
                if name in names or path in paths:
                    continue
                out.append(CrateTarget(name=name, path=path, kind=kind, origin=f"auto: {path}", auto=True))
    checker.raise_if_problems()
    return out


def cargo_features(cargo_toml: Path) -> set[str]:
    """The features the package declares: the keys of ``[features]``, plus the implicit
    feature of each optional dependency that no feature names as ``dep:NAME``."""
    cargo_toml = Path(cargo_toml)
    data = read_toml(cargo_toml)
    checker = Checker(cargo_toml)
    features = checker.get(data, "", "features", dict, {})
    names = set(features)
    named_deps: set[str] = set()
    for key in features:
        for item in checker.string_list(features, "features", key):
            if item.startswith("dep:"):
                named_deps.add(item[4:])
    for deps in _dependency_tables(data):
        for dep, spec in deps.items():
            if isinstance(spec, dict) and spec.get("optional") is True and dep not in named_deps:
                names.add(dep)
    checker.raise_if_problems()
    return names


def package_version(cargo_toml: Path) -> str | None:
    """``[package] version``; None when absent or inherited (``version.workspace = true``)."""
    data = read_toml(Path(cargo_toml))
    package = data.get("package")
    if not isinstance(package, dict):
        return None
    version = package.get("version")
    return version if isinstance(version, str) else None


# --- helpers ---------------------------------------------------------------------------


def _declared_target(checker: Checker, root: Path, table: str, kind: str, index: int,
                     entry: Mapping[str, Any], package_name: str | None) -> CrateTarget:
    prefix = f"{table}[{index}]"
    name = checker.get(entry, prefix, "name", str) or None  # "" counts as no name
    if name is not None and not checker.name_ok(f"{prefix}.name", name):
        name = None
    path = checker.get(entry, prefix, "path", str)
    if path is not None:
        path = _normal(path) if path.strip() else None  # "" counts as no path
    elif name is not None:
        path = _default_path(root, kind, name, package_name)
    features = tuple(checker.string_list(entry, prefix, "required-features"))
    harness = checker.get(entry, prefix, "harness", bool, True)
    return CrateTarget(name=name, path=path, kind=kind, required_features=features, harness=harness,
                  origin=f"Cargo.toml [[{table}]] #{index + 1}")


def _default_path(root: Path, kind: str, name: str, package_name: str | None) -> str:
    directory = {"test": "tests", "bench": "benches", "example": "examples", "bin": "src/bin"}[kind]
    candidates = [f"{directory}/{name}.rs", f"{directory}/{name}/main.rs"]
    if kind == "bin" and name == package_name:
        candidates.insert(0, "src/main.rs")
    for candidate in candidates:
        if (root / candidate).is_file():
            return candidate
    return candidates[0]


def _infer(root: Path, directory: str, kind: str, package_name: str | None) -> list[tuple[str, str]]:
    """(name, path) of every target cargo would find by itself: ``src/main.rs`` first,
    then the directory's entries sorted by path."""
    found: list[tuple[str, str]] = []
    if kind == "bin" and package_name and (root / "src/main.rs").is_file():
        found.append((package_name, "src/main.rs"))
    base = root / directory
    try:
        children = sorted(base.iterdir())
    except OSError:
        return found
    for child in children:
        if child.suffix == ".rs" and child.is_file():
            found.append((child.stem, f"{directory}/{child.name}"))
        elif child.is_dir() and (child / "main.rs").is_file():
            found.append((child.name, f"{directory}/{child.name}/main.rs"))
    return found


def _normal(path: str) -> str:
    """A declared path as cargo resolves it, ``/``-separated, without ``./``."""
    return PurePosixPath(path.replace("\\", "/")).as_posix()


def _dependency_tables(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tables whose entries may be optional: ``[dependencies]``,
    ``[build-dependencies]`` and their ``[target.CFG.…]`` forms."""
    keys = ("dependencies", "build-dependencies")
    tables = [data.get(key) for key in keys]
    targets = data.get("target")
    if isinstance(targets, dict):
        tables += [cfg.get(key) for cfg in targets.values() if isinstance(cfg, dict) for key in keys]
    return [table for table in tables if isinstance(table, dict)]
