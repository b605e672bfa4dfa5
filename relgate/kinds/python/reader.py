"""A Python project's ``pyproject.toml`` ``[project]`` table, with what :mod:`relgate.kinds.python.facts`
reads beside it (the build backend and its extensions, the test dependencies, what pytest collects).

Never runs the project's code, writes, prints or exits.
"""

from __future__ import annotations

from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.repo_paths import inside
from relgate.core.schema import NAME, Checker, display_path, read_toml
from relgate.kinds.python.facts import BuildFacts, TestDeps, collect_test_files, read_build, test_deps

__all__ = ["PythonFacts", "read_python", "pep440_problem"]


def pep440_problem(version: str) -> str | None:
    """Why ``version`` is no PEP 440 version (None: it is one), as packaging reads it."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
    except InvalidVersion:
        return "is not a PEP 440 version (e.g. 1.2.0, 1.2.0rc1, 1.2.0.post1): pip and the package index refuse it"
    return None



@record
class PythonFacts:
    name: str
    version: str | None
    extras: tuple[str, ...]
    has_tests: bool
    lock: str | None  # requirements.lock, when the project keeps one
    build: BuildFacts | None = None  # the backend and the compiled extensions it declares
    tests: TestDeps | None = None  # where the test dependencies are declared
    test_files: tuple[str, ...] = ()  # what pytest collects (by file), "/"-separated
    typed: tuple[str, ...] = ()  # py.typed markers of the project's packages, from the root


def read_python(root: Path) -> PythonFacts:
    root = Path(root).resolve()
    path = inside(root, root / "pyproject.toml", "pyproject.toml")
    data = read_toml(path)
    c = Checker(path)
    project = c.get(data, "", "project", dict, {})
    name = c.get(project, "project", "name", str)
    if not name:
        raise InputError(f"{display_path(path)}: project.name: missing (relgate init reads the [project] table)")
    why = NAME.problem(name)
    if why is not None:  # it becomes project.name, which check holds to the name rule
        c.problem("project.name", f"{why}: relgate init cannot write it as a project name")
    version = c.line(project, "project", "version")
    if version is not None and (why := pep440_problem(version)) is not None:
        c.problem("project.version", f'"{version}" {why}')
    extras = tuple(c.get(project, "project", "optional-dependencies", dict, {}))
    c.raise_if_problems()
    lock = next((n for n in ("requirements.lock", "requirements.txt") if (root / n).is_file()), None)
    files = collect_test_files(root, data)
    typed = sorted(p.relative_to(root).as_posix() for pattern in ("*/py.typed", "src/*/py.typed")
                   for p in root.glob(pattern) if "tests" not in p.parts)
    return PythonFacts(name=name, version=version, extras=extras, has_tests=(root / "tests").is_dir() or bool(files),
                       lock=lock, build=read_build(root, data), tests=test_deps(root, data), test_files=tuple(files),
                       typed=tuple(typed))
