"""The python kind: a pyproject.toml project; each collected test file a target, PEP 440 versions.

Its readers: :mod:`~relgate.kinds.python.reader` (``[project]``) and :mod:`~relgate.kinds.python.facts`
(the build backend and extensions, the test dependencies, pytest's collection); what ``init`` writes
and ``init --check`` says: :mod:`~relgate.kinds.python.manifests`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.schema import read_toml
from relgate.kinds.base import CensusReport, ProjectKind
from relgate.kinds.found import DriftPlace, Found, FoundTarget
from relgate.kinds.python.facts import collect_test_files
from relgate.kinds.python.manifests import (
    TARGETS_NOTE,
    python_builds,
    python_drift,
    python_package_lines,
    python_target_command,
    python_targets,
)
from relgate.kinds.python.reader import PythonFacts, read_python

__all__ = ["PYTHON"]


class Python(ProjectKind):
    name = "python"
    marker_files = ("pyproject.toml",)
    package_keys = ("test_command", "extras", "extensions", "group", "wheel_fixtures", "index_url", "upload_url",
                    "lock", "import")
    gitignore = ("dist/", "build/", "*.egg-info/")
    example_command = "python -m pytest -q tests/test_smoke.py"
    test_build_warnings = False
    package_flow = "wheel"
    registry_flow = "index"
    package_test = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")

    def discover(self, root: Path) -> Found:
        facts = read_python(root)
        built_by = facts.build.source if facts.build is not None else None
        targets = []
        for name, lane, what in python_targets(facts):
            path = what.split(" ", 1)[1]
            targets.append(FoundTarget(name=name, labels=(lane,), what=what, path=path,
                                       command=python_target_command(facts, path)))
        return Found(name=facts.name, version=facts.version, targets=tuple(targets), targets_note=TARGETS_NOTE,
                     source="pyproject.toml [project]" + (f" and {built_by}" if built_by else ""),
                     version_source="pyproject.toml", facts=facts)

    def census(self, root: Path, targets: Sequence[Any], scoped: Sequence[Any],
               rows_by_target: Mapping[str, Sequence[Any]], known: Collection[str], report: CensusReport) -> None:
        """undeclared-test: every file pytest collects is the path of a declared target."""
        pyproject = root / "pyproject.toml"
        try:
            data = read_toml(pyproject) if pyproject.is_file() else {}
        except InputError:  # a broken pyproject.toml is the loader's finding, not the census's
            data = {}
        declared = {t.path for t in targets if t.path is not None}
        for path in collect_test_files(root, data):
            if path not in declared:
                report("undeclared-test", path, "a test file pytest collects, with no lane; declare [target.NAME] "
                       "(path and command) and give it a lane in this commit, or delete it")

    def builds_toml(self, found: Found) -> str:
        assert isinstance(found.facts, PythonFacts)
        return python_builds(found.facts)

    def package_lines(self, found: Found, *, lanes: str | None) -> tuple[list[str], list[str]]:
        assert isinstance(found.facts, PythonFacts)
        return python_package_lines(found.facts)

    def drift(self, found: Found, place: DriftPlace) -> list[str]:
        assert isinstance(found.facts, PythonFacts)
        return python_drift(found.facts, place)

    def version_problem(self, shown: str, version: str) -> str | None:
        from packaging.version import InvalidVersion, Version  # only a python project pays for it

        try:
            Version(version)
        except InvalidVersion:
            return f'"{shown}" is not a PEP 440 version (e.g. 1.2.0, 1.2.0rc1, 1.2.0.post1)'
        if version != version.strip():
            return f'"{shown}" has spaces around it'
        return None


PYTHON = Python()
