"""A Python package with a C extension, written here, qualified from ``relgate init`` alone.

``speedy``: setuptools ``ext_modules`` in ``setup.py`` (an optional extension: when it does
not compile setuptools falls back to pure Python, as real packages do), pytest tests,
``[dependency-groups]``, a ``CHANGES.rst``, a ``py.typed``. Built with this machine's gcc; every
pip reads the tests' package mirror (tests/pip_mirror.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from python_package_support import Ledger, change, commit, env_of, nox, pyproject_toml, relgate, run, write_files

from conftest import REPO, git

FILE_SECONDS = 150

_HEADERS = Path(sysconfig.get_paths()["include"]) / "Python.h"
pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not on PATH (apt-get install -y gcc)"),
    pytest.mark.skipif(not _HEADERS.is_file(), reason=f"no {_HEADERS} (apt-get install -y python3-dev)"),
]

SPEEDUPS_C = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *double_it(PyObject *self, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(2 * v);
}

static PyMethodDef methods[] = {{"double", double_it, METH_O, "2x"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&mod); }
"""

FILES = {
    "setup.py": """\
        from setuptools import Extension, setup

        # optional: a compiler error is a warning and a pure-Python fallback, as in real packages
        setup(ext_modules=[Extension("speedy._speedups", ["src/speedy/_speedups.c"], optional=True)])
        """,
    "pyproject.toml": pyproject_toml(
        "speedy", "2.0.0", project='description = "doubles numbers, in C when it can"\nreadme = "README.md"\n',
        groups='dev = [{include-group = "tests"}]\n'),
    "README.md": "# speedy\n",
    "CHANGES.rst": "Changes\n=======\n\nVersion 2.0.0\n-------------\n\n- First release.\n",
    "MANIFEST.in": "graft tests\nglobal-exclude __pycache__ *.py[cod]\n",
    "src/speedy/__init__.py": """\
        try:
            from speedy._speedups import double
            COMPILED = True
        except ImportError:  # the pure-Python fallback
            COMPILED = False

            def double(x):
                return 2 * x
        """,
    "src/speedy/py.typed": "",
    "tests/test_double.py": """\
        import pytest

        import speedy


        def test_double():
            assert speedy.double(21) == 42


        def test_compiled():
            if not speedy.COMPILED:
                pytest.skip("no C speedups")
            assert speedy.double(-4) == -8
        """,
}


@pytest.fixture(scope="module")
def speedy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package at its 2.0.0 release (tagged), with the manifests `relgate init` wrote."""
    root = tmp_path_factory.mktemp("pkg") / "speedy"
    write_files(root, FILES)
    (root / "src/speedy/_speedups.c").write_text(SPEEDUPS_C)
    git(root, "init", "-q", "-b", "main")
    done = relgate(root, "init", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    git(root, "add", "-A")
    git(root, "commit", "-qm", "speedy 2.0.0")
    git(root, "tag", "v2.0.0")
    return root


@pytest.fixture
def work(speedy: Path, tmp_path: Path) -> Path:
    """A clone of the released package (tag and manifests included) to change."""
    root = tmp_path / "speedy"
    git(tmp_path, "clone", "-q", str(speedy), str(root))
    git(root, "fetch", "-q", "--tags")
    return root


def test_init_reads_the_extension_without_running_setup_py(speedy: Path) -> None:
    builds = (speedy / "manifests/builds.toml").read_text()
    package = (speedy / "manifests/package.toml").read_text()
    project = (speedy / "manifests/project.toml").read_text()
    lanes = (speedy / "manifests/lanes.toml").read_text()
    assert 'warnings = "deny"' in builds and 'produces = ["dist/*-cp3*.whl"]' in builds
    assert 'builtin = "python-tests"' in builds and 'group = "tests"' in builds
    assert 'extensions = { "speedy._speedups" = ["src/speedy/_speedups.c"] }' in package
    assert 'wheel_fixtures = ["speedy/py.typed", "speedy/_speedups.*"]' in package
    assert 'group = "tests"' in package
    assert 'changelog = "CHANGES.rst"' in project
    assert '"test_double" = "gate"' in lanes and 'path = "tests/test_double.py"' in lanes


def test_the_pristine_commit_is_green_from_init_alone(speedy: Path) -> None:
    done = nox(speedy, "-s", "host", "package_verify")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    ledger = Ledger(speedy)
    host, package = ledger.rows("host"), ledger.rows("package_verify")
    assert {s: r["verdict"] for s, r in host.items()} == {
        "lane-census": "pass", "release": "pass", "tests": "pass", "git-diff-check": "pass"}
    assert package["extensions"]["verdict"] == "pass"
    assert all(r["verdict"] == "pass" for r in package.values()), package
    log = (speedy / ".relgate" / host["tests"]["log_path"]).read_text()
    assert "speedy-2.0.0-cp3" in log and "2 passed" in log  # the compiled wheel, both tests ran, none skipped
    ext_log = (speedy / ".relgate" / package["extensions"]["log_path"]).read_text()
    assert "speedy/_speedups.cpython-" in ext_log


def test_an_extension_that_does_not_compile_is_red_naming_its_source(work: Path) -> None:
    change(work, "src/speedy/_speedups.c", "return PyLong_FromLong(2 * v);", "return PyLong_FromLong(2 * v)")
    commit(work, "a C syntax error: setuptools falls back to pure Python")
    done = nox(work, "-s", "host", "package_verify")
    assert done.returncode != 0
    ledger = Ledger(work)
    host, package = ledger.rows("host"), ledger.rows("package_verify")
    assert host["release"]["verdict"] == "fail"
    assert 'building extension "speedy._speedups" failed' in host["release"]["reason"]
    assert package["extensions"]["verdict"] == "fail"
    assert "lacks the compiled extension speedy._speedups from src/speedy/_speedups.c" in \
        package["extensions"]["reason"]
    assert package["package"]["verdict"] == "fail"  # its build_ext warning, scanned (package.warnings = "deny")


def test_a_required_extension_that_does_not_compile_is_red_naming_file_and_line(work: Path) -> None:
    change(work, "setup.py", ", optional=True", "")  # no fallback: the build itself fails
    change(work, "src/speedy/_speedups.c", "return PyLong_FromLong(2 * v);", "return PyLong_FromLong(2 * v)")
    line = (work / "src/speedy/_speedups.c").read_text().splitlines().index("    return PyLong_FromLong(2 * v)") + 1
    commit(work, "a C syntax error in a required extension")
    assert nox(work, "-s", "host", "--", "release").returncode != 0
    assert nox(work, "-s", "package_verify").returncode != 0
    ledger = Ledger(work)
    for row in (ledger.rows("host")["release"], ledger.rows("package_verify")["package"]):
        assert row["verdict"] == "fail"
        assert f"exit 1; first error src/speedy/_speedups.c:{line}:" in row["reason"], row["reason"]


def test_a_planted_warning_is_red_naming_file_and_line(work: Path) -> None:
    change(work, "src/speedy/_speedups.c", "    long v = PyLong_AsLong(arg);\n",
           "    long v = PyLong_AsLong(arg);\n    int unused = 0;\n")
    line = (work / "src/speedy/_speedups.c").read_text().splitlines().index("    int unused = 0;") + 1
    commit(work, "an unused variable")
    assert nox(work, "-s", "host", "--", "release").returncode != 0
    assert nox(work, "-s", "package_verify").returncode != 0
    ledger = Ledger(work)
    where = f"src/speedy/_speedups.c:{line}:"
    assert ledger.rows("host")["release"]["verdict"] == "fail"
    assert where in ledger.rows("host")["release"]["reason"]
    package = ledger.rows("package_verify")["package"]
    assert package["verdict"] == "fail" and where in package["reason"] and "unused variable" in package["reason"]


def test_a_commit_that_breaks_behaviour_is_red_with_a_release_installed(work: Path, tmp_path: Path) -> None:
    released = tmp_path / "released"  # the 2.0.0 release, installed where relgate runs (on its sys.path)
    built = run(work, sys.executable, "-m", "pip", "install", "--no-compile", "--target", str(released), ".")
    assert built.returncode == 0, built.stdout + built.stderr
    change(work, "src/speedy/_speedups.c", "PyLong_FromLong(2 * v)", "PyLong_FromLong(2 * v + 1)")
    commit(work, "breaks double")
    env = env_of(work, PYTHONPATH=os.pathsep.join([str(released), os.environ.get("PYTHONPATH", "")]))
    seen = run(work, sys.executable, "-c", "import speedy; print(speedy.__file__, speedy.double(21))", env=env)
    assert seen.stdout.startswith(str(released)) and seen.stdout.split()[-1] == "42"  # the release is importable
    done = nox(work, "-s", "host", "--", "tests", env=env)
    assert done.returncode != 0
    row = Ledger(work).rows("host")["tests"]
    assert row["verdict"] == "fail"
    log = (work / ".relgate" / row["log_path"]).read_text()
    assert "assert 43 == 42" in log and "2 failed" in log


def test_trailing_whitespace_committed_since_the_release_tag_fails(work: Path) -> None:
    (work / "src/speedy/extra.py").write_text("VALUE = 1   \n")
    commit(work, "trailing whitespace")
    assert git(work, "status", "--porcelain") == ""  # a clean tree: against HEAD nothing would be checked
    done = nox(work, "-s", "host", "--", "git-diff-check")
    assert done.returncode != 0
    row = Ledger(work).rows("host")["git-diff-check"]
    assert row["verdict"] == "fail"
    assert "since the previous release tag v2.0.0" in row["reason"]
    assert "src/speedy/extra.py:1: trailing whitespace" in row["reason"]


def test_a_wheel_missing_a_declared_file_fails(work: Path) -> None:
    (work / "src/speedy/py.typed").unlink()
    commit(work, "py.typed dropped")
    done = nox(work, "-s", "package_verify")
    assert done.returncode != 0
    row = Ledger(work).rows("package_verify")["inspect"]
    assert row["verdict"] == "fail"
    assert ".whl: missing speedy/py.typed" in row["reason"] or "speedy/py.typed" in row["reason"]


def test_a_new_test_file_without_a_lane_is_named_by_the_census(work: Path) -> None:
    (work / "tests/test_more.py").write_text("def test_more():\n    assert True\n")
    commit(work, "a new test file")
    done = relgate(work, "census")
    assert done.returncode == 1
    assert "tests/test_more.py" in done.stdout and "undeclared-test" in done.stdout
    drift = relgate(work, "init", "--check", ".")
    assert drift.returncode == 1 and "tests/test_more.py" in drift.stdout


def test_init_check_names_an_extension_the_manifest_does_not_check(work: Path) -> None:
    assert relgate(work, "init", "--check", ".").returncode == 0
    change(work, "setup.py", 'optional=True)]', 'optional=True), Extension("speedy._more", ["src/speedy/_more.c"])]')
    drift = relgate(work, "init", "--check", ".")
    assert drift.returncode == 1
    assert "new extension speedy._more (setup.py): not in" in drift.stdout and "package.extensions" in drift.stdout


def test_publish_imports_the_module_not_the_distribution(tmp_path: Path) -> None:
    from relgate.package import importcheck

    assert Path(importcheck.__file__).read_text().startswith('"""Import an installed distribution')
    done = subprocess.run([sys.executable, "-I", importcheck.__file__, "pytest"], capture_output=True, text=True)
    assert done.returncode == 0 and "import _pytest" in done.stdout and "import pytest:" in done.stdout
    done = subprocess.run([sys.executable, "-I", importcheck.__file__, "no-such-dist"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout.strip().startswith("no-such-dist is not installed")
    assert REPO.is_dir()


RST = "Changes\n=======\n\nVersion 2.0.0\n-------------\n\n- First release.\n\nVersion 1.0.0\n-------------\n\n- old\n"
SECTION = ("### Measurements and verification\n\nspeedy 2.0.0 was signed off at commit `abc123` on host:local.\n\n"
           "- Passed: Host checks passed.\n\n`speed` on host:local:\n\n| case | ns |\n|---|---|\n| a | 1 |\n")


def test_the_changelog_section_in_a_restructuredtext_changelog() -> None:
    import docutils.core
    import docutils.utils

    from relgate.signoff.changelog_rst import insert_section_rst

    once = insert_section_rst(RST, "2.0.0", SECTION, "Measurements and verification")
    assert insert_section_rst(once, "2.0.0", SECTION, "Measurements and verification") == once  # replaced, not added
    assert "Measurements and verification\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n" in once
    assert "commit ``abc123``" in once and "    | a | 1 |" in once
    assert once.index("Measurements") < once.index("Version 1.0.0")
    try:  # docutils reads it without a warning: the headings nest as the file's own do
        tree = docutils.core.publish_doctree(once, settings_overrides={"report_level": 2, "halt_level": 2})
    except docutils.utils.SystemMessage as exc:
        pytest.fail(f"not valid reStructuredText: {exc}")
    titles = [n.astext() for n in tree.findall(lambda n: n.tagname == "title")]
    assert titles == ["Changes", "Version 2.0.0", "Measurements and verification", "Version 1.0.0"]
    with pytest.raises(Exception, match="no heading naming 3.0.0"):
        insert_section_rst(RST, "3.0.0", SECTION, "Measurements and verification")


def test_init_finds_changelogs_by_their_usual_names(tmp_path: Path) -> None:
    from relgate.manifest.init import find_changelog

    assert find_changelog(tmp_path) is None
    for name in ("HISTORY.md", "NEWS.rst", "CHANGES.rst", "CHANGELOG.md"):  # each one preferred to the one before
        (tmp_path / name).write_text("x\n")
        assert find_changelog(tmp_path) == name


def test_a_checklist_without_a_changelog_names_no_release_notes(tmp_path: Path) -> None:
    from relgate.manifest.checklist import parse_checklist

    data = {"release": {"boards": ["host:local"]}, "item": [{"id": "a", "title": "A", "manual": True}]}
    assert parse_checklist(data, path=tmp_path / "checklist.toml", changelog="").release.notes == ()
    assert parse_checklist(data, path=tmp_path / "checklist.toml", changelog="CHANGES.rst").release.notes == \
        ("CHANGES.rst",)


SETUP_PY = '''\
import pathlib
pathlib.Path("EXECUTED").write_text("setup.py ran")  # init must never run this
from setuptools import Extension, setup
import setuptools

SOURCES = ["src/a/_b.c", "src/a/_b_helpers.c"]
setup(ext_modules=[
    Extension("a._b", SOURCES),
    setuptools.Extension(name="a._c", sources=["src/a/_c.c"]),
    Extension(name_from_somewhere(), ["x.c"]),  # not a literal: not read
])
'''


@pytest.mark.parametrize(("pyproject", "setup_py", "backend", "extensions", "compiled"), [
    ({"build-system": {"build-backend": "setuptools.build_meta"}}, SETUP_PY, "setuptools",
     [("a._b", ("src/a/_b.c", "src/a/_b_helpers.c")), ("a._c", ("src/a/_c.c",))], True),
    ({"build-system": {"build-backend": "setuptools.build_meta"},
      "tool": {"setuptools": {"ext-modules": [{"name": "p._x", "sources": ["p/_x.c"]}]}}}, None, "setuptools",
     [("p._x", ("p/_x.c",))], True),
    ({"build-system": {"build-backend": "setuptools.build_meta"}}, None, "setuptools", [], False),
    ({}, SETUP_PY, "setuptools", [("a._b", ("src/a/_b.c", "src/a/_b_helpers.c")), ("a._c", ("src/a/_c.c",))], True),
    ({"build-system": {"build-backend": "scikit_build_core.build"}}, None, "scikit-build-core", [], True),
    ({"build-system": {"build-backend": "mesonpy"}}, None, "meson-python", [], True),
    ({"build-system": {"build-backend": "maturin"}, "tool": {"maturin": {"module-name": "p._rs"}}}, None, "maturin",
     [("p._rs", ())], True),
    ({"build-system": {"build-backend": "hatchling.build"}}, None, "hatchling", [], False),
], ids=["setup.py", "pyproject-ext-modules", "pure-setuptools", "legacy-setup.py", "scikit-build-core",
        "meson-python", "maturin", "hatchling"])
def test_init_reads_the_backend_and_its_extensions(tmp_path: Path, pyproject: dict, setup_py: str | None,
                                                   backend: str, extensions: list, compiled: bool) -> None:
    from relgate.kinds.python.facts import read_build

    if setup_py is not None:
        (tmp_path / "setup.py").write_text(setup_py)
    build = read_build(tmp_path, pyproject)
    assert build.backend_name == backend
    assert [(e.name, e.sources) for e in build.extensions] == extensions
    assert build.compiled is compiled
    assert not (tmp_path / "EXECUTED").exists()


def test_a_setup_py_that_does_not_parse_is_one_line(tmp_path: Path) -> None:
    from relgate.core.errors import InputError
    from relgate.kinds.python.facts import read_build

    (tmp_path / "setup.py").write_text("setup(\n")
    with pytest.raises(InputError, match=r"setup.py:\d+: does not parse as Python"):
        read_build(tmp_path, {})


def test_pytest_collection_is_read_from_the_projects_configuration(tmp_path: Path) -> None:
    from relgate.kinds.python.facts import collect_test_files

    for rel in ("tests/test_a.py", "tests/sub/b_test.py", "tests/helpers.py", "other/test_c.py",
                "checks/check_d.py", ".venv/test_e.py", "build/test_f.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert collect_test_files(tmp_path, {}) == ["other/test_c.py", "tests/sub/b_test.py", "tests/test_a.py"]
    conf = {"tool": {"pytest": {"ini_options": {"testpaths": ["tests", "checks"], "python_files": "test_*.py check_*.py"}}}}
    assert collect_test_files(tmp_path, conf) == ["checks/check_d.py", "tests/test_a.py"]
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = other\n")  # pytest.ini wins, as in pytest
    assert collect_test_files(tmp_path, conf) == ["other/test_c.py"]


def test_the_diff_check_base_is_the_previous_release_tag(tmp_path: Path) -> None:
    from relgate.run.diffcheck import diff_base, diff_check_action
    from relgate.run.outcomes import StepFailed

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("old   \n")  # whitespace before any release: not this release's
    commit(root, "first")
    first = git(root, "rev-parse", "HEAD").strip()
    assert diff_base(root) == (first, f"the first commit {first[:12]} (no release tag yet)")
    git(root, "tag", "v1.0.0")  # on HEAD: the release being made, not the previous one
    assert diff_base(root)[0] == first
    (root / "b.txt").write_text("fine\n")
    commit(root, "second")
    git(root, "tag", "nightly")  # not a version: not a release tag
    assert diff_base(root) == ("refs/tags/v1.0.0", "the previous release tag v1.0.0")
    lines: list[str] = []
    assert diff_check_action(root, None)(lines.append) == 0
    assert "1 commit since" in lines[0]
    (root / "b.txt").write_text("not fine \n")  # uncommitted: checked too
    with pytest.raises(StepFailed, match=r"^1 whitespace error since the previous release tag v1.0.0, first b.txt:1: "):
        diff_check_action(root, None)(lines.append)
    with pytest.raises(StepFailed, match=r"since HEAD \(\[host\] diff_base\), first b.txt:1"):
        diff_check_action(root, "HEAD")(lines.append)


@pytest.mark.parametrize(("text", "expected"), [
    ("gcc -c x.c\nsrc/x.c:7:34: error: expected ';' before '}' token\nerror: command 'gcc' failed\n",
     "src/x.c:7:34: expected ';' before '}' token"),
    ("main.c:3:10: fatal error: foo.h: No such file or directory\n", "main.c:3:10: foo.h: No such file or directory"),
    ('k.cu(12): error: identifier "x" is undefined\n', 'k.cu(12): identifier "x" is undefined'),
    ("error: Command '['gcc', '-c', 'src/x.c']' returned non-zero exit status 1.\n", None),
    ("In file included from x.c:1:\nnothing failed here\n", None),
], ids=["gcc", "fatal", "nvcc", "no-place", "none"])
def test_a_failed_build_names_the_first_compiler_error(text: str, expected: str | None) -> None:
    from relgate.run.scanners import first_compiler_error

    assert first_compiler_error(text) == expected
