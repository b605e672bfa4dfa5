"""A small Python package written here and qualified through the noxfile ``relgate init`` wrote:
its files, the runs of relgate and nox in it, its ledger rows, changes and commits (the set-up
the Python-package and ``max_skipped`` tests share)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

from conftest import Project, git

__all__ = ["pyproject_toml", "write_files", "env_of", "run", "relgate", "nox", "Ledger", "change", "commit"]

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
{project}requires-python = ">=3.9"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]

[dependency-groups]
tests = ["pytest"]
{groups}"""


def pyproject_toml(name: str, version: str, *, project: str = "", groups: str = "") -> str:
    """A setuptools package under ``src/`` with pytest tests under ``tests/`` and a ``tests``
    dependency group; ``project`` and ``groups``: more lines for those tables."""
    return _PYPROJECT.format(name=name, version=version, project=project, groups=groups)


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Each of ``files`` (path under ``root`` → text, dedented) written."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def env_of(root: Path, **more: str) -> dict[str, str]:
    """The caller's environment without relgate's own folders: the project's noxfile sets them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELGATE_")}
    return {**env, "NO_COLOR": "1", "RELGATE_CACHE": os.environ.get("RELGATE_CACHE", ""), **more}


def run(root: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=root, env=env or env_of(root), capture_output=True, text=True, timeout=900)


def relgate(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run(root, sys.executable, "-m", "relgate.cli", *argv)


def nox(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The project's own noxfile (the one init wrote)."""
    return run(root, sys.executable, "-m", "nox", "-f", str(root / "noxfile.py"), *args, env=env)


class Ledger:
    def __init__(self, root: Path) -> None:
        self.project = Project(root=root, manifests=root / "manifests", hosts=root / "hosts", home=root / ".relgate")

    def rows(self, session: str) -> dict[str, dict]:
        return self.project.ledger_rows(session)


def change(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
