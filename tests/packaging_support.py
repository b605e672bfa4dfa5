"""Helpers for the package_verify / publish_dry_run tests: real repos, a real cargo registry
index, a small real python package, nox runs with extra environment, secret scans."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conftest import CACHE, NOXFILE, REPO, Project, git


def nox(project: Project, *sessions: str, env: dict[str, str] | None = None, extra: tuple[str, ...] = (),
        timeout: int = 600) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", *sessions, *(("--", *extra) if extra else ())]
    return subprocess.run(argv, env={**project.env, **(env or {})}, capture_output=True, text=True, timeout=timeout)


def log_of(project: Project, row: dict[str, Any]) -> str:
    return (project.home / row["log_path"]).read_text()


def everything_under(path: Path) -> bytes:
    """Every byte of every file under ``path`` (logs, the ledger database and its WAL)."""
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def write_manifest(project: Project, name: str, text: str) -> None:
    (project.manifests / name).write_text(textwrap.dedent(text).lstrip())


def local_cargo_registry(tmp_path: Path) -> str:
    """A git-based cargo registry index (file://) with its config.json; returns its URL."""
    index = tmp_path / "registry-index"
    index.mkdir()
    (index / "config.json").write_text(json.dumps({"dl": f"file://{tmp_path}/registry-dl/{{crate}}/{{version}}",
                                                   "api": f"file://{tmp_path}/registry-api"}))
    git(index, "init", "-q", "-b", "main")
    git(index, "add", "-A")
    git(index, "commit", "-qm", "registry index")
    return f"file://{index}"


PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "minipkg"
version = "1.2.0"
description = "A small package relgate's tests build, verify and publish"
readme = "README.md"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest"]
"""


def python_project(tmp_path: Path, *, package_toml: str | None = None) -> Project:
    """A small pure-python package (src layout, a test extra, tests in the sdist) in its own repo,
    with a manifest folder inside it."""
    root = tmp_path / "minipkg"
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": "# minipkg\n\nThe answer, packaged.\n",
        "CHANGELOG.md": "# Changelog\n\n## 1.2.0\n- first\n",
        "MANIFEST.in": "graft tests\nglobal-exclude __pycache__ *.py[cod]\n",
        "src/minipkg/__init__.py": "def answer() -> int:\n    return 42\n",
        "tests/test_answer.py": "from minipkg import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
        "manifests/project.toml": '[project]\nname = "minipkg"\nroot = ".."\nkind = "python"\nversion = "1.2.0"\n',
        "manifests/package.toml": package_toml if package_toml is not None else (
            '[package]\nextras = ["test"]\ntest_command = "python -m pytest -q -p no:cacheprovider tests"\n'
            '[publish]\nimport = "minipkg"\n'),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "minipkg 1.2.0")
    hosts = tmp_path / "hosts"
    shutil.copytree(REPO / "hosts", hosts)
    return Project(root=root, manifests=root / "manifests", hosts=hosts, home=tmp_path / "home")


def locked_version(name: str) -> str:
    """``name``'s version in relgate's requirements.lock: one the tests' package mirror holds
    (tests/pip_mirror.py), whatever this machine has installed."""
    from packaging.utils import canonicalize_name

    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        project, sep, version = line.partition("==")
        if sep and canonicalize_name(project.strip()) == canonicalize_name(name):
            return version.strip()
    raise KeyError(f"requirements.lock does not list {name}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True




def base_env(**more: str) -> dict[str, str]:
    return {"RELGATE_CACHE": str(CACHE), **more}
