"""The python kind: a pyproject.toml project; each collected test file a target, PEP 440 versions."""

from __future__ import annotations

from relgate.kinds.base import ProjectKind, register

__all__ = ["PYTHON"]


class Python(ProjectKind):
    name = "python"
    marker_files = ("pyproject.toml",)
    test_file_census = True
    package_keys = ("test_command", "extras", "extensions", "group", "wheel_fixtures", "index_url", "upload_url",
                    "lock", "import")
    gitignore = ("dist/", "build/", "*.egg-info/")
    example_command = "python -m pytest -q tests/test_smoke.py"
    test_build_warnings = False
    package_flow = "wheel"
    registry_flow = "index"
    package_test = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")

    def version_problem(self, shown: str, version: str) -> str | None:
        from packaging.version import InvalidVersion, Version  # only a python project pays for it

        try:
            Version(version)
        except InvalidVersion:
            return f'"{shown}" is not a PEP 440 version (e.g. 1.2.0, 1.2.0rc1, 1.2.0.post1)'
        if version != version.strip():
            return f'"{shown}" has spaces around it'
        return None


PYTHON = register(Python())
