"""What a Python project declares, read without running any of its code (for ``init``,
the census and the host checks).

- the build backend (``[build-system] build-backend``) and the compiled extensions it
  declares: setuptools ``ext_modules`` in ``setup.py`` (read with :mod:`ast`, never
  executed: ``Extension("pkg._x", ["src/pkg/_x.c"])`` and ``Extension(name=…, sources=…)``
  with literal arguments) or ``[tool.setuptools] ext-modules`` in ``pyproject.toml``;
  scikit-build-core, meson-python and maturin build compiled code by definition;
- the test dependencies: a ``[dependency-groups]`` group (PEP 735) named ``test``/``tests``
  (else ``dev``), else a ``test``/``tests`` extra, else a ``requirements-test*.txt`` /
  ``requirements/test*.txt`` file;
- pytest's collection: ``testpaths`` and ``python_files`` from ``[tool.pytest.ini_options]``,
  ``pytest.ini``, ``tox.ini`` ``[pytest]`` or ``setup.cfg`` ``[tool:pytest]``, then the
  files those patterns match (pytest's defaults: ``test_*.py``, ``*_test.py``).

Pure reading; never writes, prints or exits.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.record import record

__all__ = ["Extension", "BuildFacts", "TestDeps", "read_build", "read_extensions_setup_py", "test_deps",
           "pytest_config", "collect_test_files", "COMPILED_BACKENDS"]

#: backends that build compiled code whatever the project declares
COMPILED_BACKENDS = {"scikit_build_core.build": "scikit-build-core", "mesonpy": "meson-python",
                     "maturin": "maturin"}


@record
class Extension:
    name: str  # the dotted module name: "markupsafe._speedups"
    sources: tuple[str, ...]  # relative to the project root


@record
class BuildFacts:
    backend: str  # "setuptools.build_meta", "scikit_build_core.build", … ("" when [build-system] names none)
    backend_name: str  # "setuptools", "scikit-build-core", "meson-python", "maturin", …
    extensions: tuple[Extension, ...]  # the ones declared by name (setuptools, maturin's module-name)
    compiled: bool  # builds compiled code (declared extensions, or a compiled backend)
    source: str  # where the extensions were read: "setup.py", "pyproject.toml [tool.setuptools]", …


def read_build(root: Path, pyproject: Mapping[str, Any]) -> BuildFacts:
    system = pyproject.get("build-system") if isinstance(pyproject.get("build-system"), dict) else {}
    backend = str(system.get("build-backend") or "")
    if not backend and (Path(root) / "setup.py").is_file():
        backend = "setuptools.build_meta:__legacy__"
    head = backend.split(":", 1)[0]
    name = COMPILED_BACKENDS.get(head) or (head.split(".", 1)[0] if head else "")
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    extensions: list[Extension] = []
    source = ""
    if name == "setuptools":
        table = tool.get("setuptools") if isinstance(tool.get("setuptools"), dict) else {}
        for ext in table.get("ext-modules", []) if isinstance(table.get("ext-modules"), list) else []:
            if isinstance(ext, dict) and isinstance(ext.get("name"), str):
                sources = tuple(s for s in ext.get("sources", []) if isinstance(s, str))
                extensions.append(Extension(name=ext["name"], sources=sources))
        if extensions:
            source = "pyproject.toml [tool.setuptools] ext-modules"
        setup_py = Path(root) / "setup.py"
        if setup_py.is_file():
            found = read_extensions_setup_py(setup_py)
            if found:
                extensions += found
                source = "setup.py" if not source else f"{source}, setup.py"
    elif name == "maturin":
        table = tool.get("maturin") if isinstance(tool.get("maturin"), dict) else {}
        module = table.get("module-name")
        if isinstance(module, str):
            extensions.append(Extension(name=module, sources=()))
            source = "pyproject.toml [tool.maturin] module-name"
    return BuildFacts(backend=backend, backend_name=name, extensions=tuple(extensions),
                      compiled=bool(extensions) or head in COMPILED_BACKENDS, source=source)


def _literal(node: ast.AST, names: Mapping[str, Any]) -> Any:
    """A literal (strings, lists, tuples), a module-level name bound to one, or None."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def read_extensions_setup_py(path: Path) -> list[Extension]:
    """Every ``Extension(...)`` call in ``setup.py`` with a literal name (and sources), read
    with :mod:`ast`; the file is never executed. A file that does not parse: InputError."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: does not parse as Python ({exc.msg}); relgate reads it without "
                         "running it") from None
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        raise InputError(f"{path}: cannot read it: {exc}") from None
    names: dict[str, Any] = {}
    for node in tree.body:  # module-level constants: SOURCES = ["src/x.c"]
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _literal(node.value, names)
            if value is not None:
                names[node.targets[0].id] = value
    out: list[Extension] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if called not in ("Extension", "Pybind11Extension", "CythonExtension"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        name_node = node.args[0] if node.args else kw.get("name")
        sources_node = node.args[1] if len(node.args) > 1 else kw.get("sources")
        name = _literal(name_node, names) if name_node is not None else None
        sources = _literal(sources_node, names) if sources_node is not None else None
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            continue
        listed = tuple(str(s) for s in sources) if isinstance(sources, (list, tuple)) else ()
        if name not in {e.name for e in out}:
            out.append(Extension(name=name, sources=listed))
    return out


# --- test dependencies --------------------------------------------------------------------------


@record
class TestDeps:
    kind: str  # "group", "extra", "requirements", or "" (none found)
    name: str  # the group, the extra, the file (relative to the root)


_TEST_NAMES = ("test", "tests", "testing")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_deps(root: Path, pyproject: Mapping[str, Any]) -> TestDeps:
    groups = pyproject.get("dependency-groups")
    if isinstance(groups, dict):
        by = {_norm(k): k for k in groups}
        for wanted in (*_TEST_NAMES, "dev"):
            if wanted in by:
                return TestDeps(kind="group", name=by[wanted])
    project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else {}
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        for name in extras:
            if _norm(name) in _TEST_NAMES:
                return TestDeps(kind="extra", name=name)
    for pattern in ("requirements-test*.txt", "requirements_test*.txt", "requirements/test*.txt",
                    "test-requirements.txt", "tests/requirements.txt"):
        found = sorted(Path(root).glob(pattern))
        if found:
            return TestDeps(kind="requirements", name=found[0].relative_to(root).as_posix())
    return TestDeps(kind="", name="")


# --- pytest's collection ------------------------------------------------------------------------

_DEFAULT_FILES = ("test_*.py", "*_test.py")
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "site-packages",
              "__pycache__")


def _ini_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def pytest_config(root: Path, pyproject: Mapping[str, Any]) -> tuple[list[str], list[str], str]:
    """(testpaths, python_files, the file they came from) as pytest reads them: pytest.ini,
    pyproject's ``[tool.pytest.ini_options]``, tox.ini ``[pytest]``, setup.cfg ``[tool:pytest]``."""
    root = Path(root)
    for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest")):
        found = _from_ini(root / name, section)
        if found is not None:
            return (*found, name)
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    pytest = tool.get("pytest") if isinstance(tool.get("pytest"), dict) else {}
    options = pytest.get("ini_options")
    if isinstance(options, dict):
        return (_ini_list(options.get("testpaths")), _ini_list(options.get("python_files")) or list(_DEFAULT_FILES),
                "pyproject.toml")
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        found = _from_ini(root / name, section)
        if found is not None:
            return (*found, name)
    return [], list(_DEFAULT_FILES), ""


def _from_ini(path: Path, section: str) -> tuple[list[str], list[str]] | None:
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"), source=str(path))
    except configparser.Error:
        return None
    if not parser.has_section(section):
        return None
    get = parser[section].get
    return _ini_list(get("testpaths", "")), _ini_list(get("python_files", "")) or list(_DEFAULT_FILES)


def collect_test_files(root: Path, pyproject: Mapping[str, Any]) -> list[str]:
    """The test files pytest would collect (by file name; "/"-separated, from the root), sorted."""
    root = Path(root).resolve()
    paths, patterns, _ = pytest_config(root, pyproject)
    starts = [root / p for p in paths] if paths else [root]
    out: set[str] = set()
    for start in starts:
        if start.is_file():
            out.add(start.relative_to(root).as_posix())
            continue
        for folder, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if not any(fnmatch.fnmatch(d, n) for n in _NORECURSE)
                             and not (Path(folder) / d / "pyvenv.cfg").exists())
            for f in files:
                if any(fnmatch.fnmatch(f, p) for p in patterns) and f.endswith(".py"):
                    out.add((Path(folder) / f).relative_to(root).as_posix())
    return sorted(out)
