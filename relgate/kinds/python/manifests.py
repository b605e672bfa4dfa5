"""What ``relgate init`` writes for a Python project and what ``init --check`` says of one (pure: no
I/O but the manifests'): the sdist-and-wheel release build (held warning-free where it compiles), the
tests check in a fresh environment, one target per test file pytest collects, what the wheel must hold.
"""

from __future__ import annotations

from relgate.core.schema import display_path, read_toml
from relgate.kinds.found import DriftPlace
from relgate.kinds.python.reader import PythonFacts
from relgate.kinds.writing import quote, target_paths

__all__ = ["python_builds", "python_targets", "python_target_command", "python_package_lines", "python_drift",
           "TARGETS_NOTE"]

#: what lanes.toml says above the test files' [target.NAME] tables
TARGETS_NOTE = ("# Each test file pytest collects is a target: a new one without a lane is named by the census.",
                "# The gate lane runs each file in the fresh test environment of the tests check.")


def python_builds(facts: PythonFacts) -> str:
    build = facts.build
    compiled = build is not None and build.compiled
    lines = ["# The release build (sdist and wheel) and the host checks `nox -s host` runs, in order.", ""]
    if compiled:
        assert build is not None
        lines += [f"# Compiled code ({build.backend_name}"
                  + (f"; extensions read from {build.source}" if build.source else "") + "):"]
        lines += [f"#   {e.name}" + (f" <- {', '.join(e.sources)}" if e.sources else "") for e in build.extensions]
        lines += ["# A compiler warning fails the build (setuptools' own packaging notes, such as MANIFEST.in",
                  "# patterns that match nothing, are not compiler warnings and do not count), and the build must",
                  "# leave a CPython platform wheel: a pure py3-none-any wheel means no extension was compiled.",
                  "[release.dist]", 'clean = "rm -rf dist"', 'run = "python -m build --outdir dist"',
                  'warnings = "deny"', 'produces = ["dist/*-cp3*.whl"]']
    else:
        lines += ["[release.dist]", 'run = "python -m build --outdir dist"',
                  "# A pure-Python package compiles nothing; a package with C extensions sets deny.",
                  'warnings = "ignore"']
    lines += ["", "[[check]]", 'name = "release"', 'release = "dist"', ""]
    if facts.has_tests:
        deps = facts.tests
        lines += ["# pytest in a fresh environment holding the wheel built from the tree and the test",
                  "# dependencies: never an installed copy of the package, never one from an index.",
                  "[[check]]", 'name = "tests"', 'builtin = "python-tests"']
        if deps is not None and deps.kind == "group":
            lines.append(f"group = {quote(deps.name)}   # [dependency-groups] in pyproject.toml")
        elif deps is not None and deps.kind == "extra":
            lines.append(f"extras = [{quote(deps.name)}]")
        elif deps is not None and deps.kind == "requirements":
            lines.append(f"requirements = {quote(deps.name)}")
        else:
            lines.append('# group = "tests"   # where pytest and the other test dependencies are declared')
        lines.append("")
    return "\n".join(lines)


def python_targets(facts: PythonFacts) -> tuple[tuple[str, str, str], ...]:
    """(name, lane, what) for every test file pytest collects: the gate lane, run in the test
    environment by the tests check, so each is a declared target the census keeps in step."""
    out = []
    seen: set[str] = set()
    for path in facts.test_files:
        stem = path.rsplit("/", 1)[-1][:-3]
        name = stem if stem not in seen else path[:-3].replace("/", "-")
        seen.add(name)
        out.append((name, "gate", f"pytest {path}"))
    return tuple(out)


def python_target_command(facts: PythonFacts, path: str) -> str:
    """One test file, run by ``relgate pytest`` in a fresh environment holding the tree's wheel."""
    deps = facts.tests
    opt = {"group": "--group", "extra": "--extra", "requirements": "--requirements"}.get(deps.kind if deps else "")
    return "relgate pytest" + (f" {opt} {deps.name}" if opt and deps else "") + f" -- -q {path}"


def python_package_lines(facts: PythonFacts) -> tuple[list[str], list[str]]:
    """package.toml's lines for a Python project: the test dependencies installed with the wheel, the
    extensions and files the wheel must hold, the lock publish_dry_run holds it to."""
    pkg: list[str] = []
    publish: list[str] = []
    deps = facts.tests
    if deps is not None and deps.kind == "group":
        pkg.append(f"group = {quote(deps.name)}                 # [dependency-groups]: installed with the wheel")
    elif deps is not None and deps.kind == "extra":
        pkg.append(f"extras = [{quote(deps.name)}]               # installed with the wheel")
    elif "test" in facts.extras:
        pkg.append('extras = ["test"]               # installed with the wheel')
    build = facts.build
    if build is not None and build.extensions:
        pkg.append("# The wheel must hold each compiled extension (and be no pure wheel); read from "
                   f"{build.source}.")
        pkg.append("extensions = { " + ", ".join(
            f"{quote(e.name)} = [{', '.join(quote(x) for x in e.sources)}]" for e in build.extensions) + " }")
    wheel_files = [t.split("/", 1)[1] if t.startswith("src/") else t for t in facts.typed]
    if build is not None:
        wheel_files += [e.name.replace(".", "/") + ".*" for e in build.extensions]
    if wheel_files:
        pkg.append("wheel_fixtures = [" + ", ".join(quote(w) for w in wheel_files) + "]   # paths the wheel holds")
    pkg.append('# test_command = "python -m pytest -q tests"   # the sdist\'s tests, offline (default pytest)')
    if facts.lock:
        publish.append(f"lock = {quote(facts.lock)}   # publish_dry_run fails when it drifts")
    return pkg, publish


def python_drift(py: PythonFacts, place: DriftPlace) -> list[str]:
    """New test files and extensions (the version is compared by the caller)."""
    shown_lanes = display_path(place.lanes_path)
    out: list[str] = []
    declared = target_paths(read_toml(place.lanes_path).get("target", {})) if place.lanes_path.is_file() else set()
    for path in py.test_files:
        if path not in declared:
            out.append(f"new test file {path} (pytest collects it): no target with a lane in {shown_lanes}")
    package = place.manifests / "package.toml"
    table = read_toml(package).get("package", {}) if package.is_file() else {}
    have = table.get("extensions", {}) if isinstance(table, dict) else {}
    for ext in py.build.extensions if py.build is not None else ():
        if not isinstance(have, dict) or ext.name not in have:
            out.append(f"new extension {ext.name} ({py.build.source}): not in {display_path(package)} "
                       "package.extensions (the wheel is not checked for it)")
    return out
