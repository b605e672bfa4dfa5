"""Package inspection, package.toml validation and the python lock check: the pure parts
(relgate.inspect_package, relgate.packaging, relgate.publish). No network, no tools."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from relgate.core.errors import InputError, ManifestError
from relgate.manifest.package_spec import parse_package, read_lock
from relgate.package.inspect import Required, find_forbidden, find_missing, glob_matches, inspect_tree
from relgate.package.publish import compare_lock
from relgate.package.verify import wheel_requirements
from relgate.run.plan import StepFailed


def put(root: Path, *paths: str) -> Path:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return root


@pytest.mark.parametrize("glob,path,is_dir,expected", [
    ("*.tar.gz", "tests/data/blob.tar.gz", False, True),
    ("*.tar.gz", "blob.tar.gz.txt", False, False),
    (".git", ".git", True, True),
    (".git", "sub/.git", False, True),  # a worktree's .git file
    (".vscode/", ".vscode", True, True),
    (".vscode/", ".vscode", False, False),  # a trailing slash: folders only
    ("internal/", "src/internal", True, True),
    ("/target/", "target", True, True),
    ("/target/", "src/target", True, False),  # anchored at the root
    ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "x/docs/a.md", False, False),
    ("*~", "src/lib.rs~", False, True),
])
def test_glob_semantics(glob: str, path: str, is_dir: bool, expected: bool) -> None:
    assert glob_matches(glob, path, is_dir=is_dir) is expected


def test_defaults_find_nested_archives_and_tooling_material_naming_each_file(tmp_path: Path) -> None:
    put(tmp_path, "src/lib.rs", "tests/data/inputs.tar.gz", "vendor/dep.crate", ".vscode/settings.json",
        ".vscode/launch.json", "src/__pycache__/m.cpython-311.pyc", "internal/notes.md", ".git/HEAD", "sub/.git",
        "src/lib.rs.swp", ".env")
    found = {f.path: f.problem for f in find_forbidden(tmp_path)}
    assert found == {
        ".env": "local environment file (matches .env)",
        ".git/": "version-control data (matches .git): .git/HEAD",
        ".vscode/": "editor folder (matches .vscode/): .vscode/launch.json, .vscode/settings.json",
        "internal/": "internal material (matches internal/): internal/notes.md",
        "src/__pycache__/": "tool folder (matches __pycache__/): src/__pycache__/m.cpython-311.pyc",
        "src/lib.rs.swp": "editor file (matches *.swp)",
        "sub/.git": "version-control data (matches .git)",
        "tests/data/inputs.tar.gz": "nested archive (matches *.tar.gz)",
        "vendor/dep.crate": "nested archive (matches *.crate)",
    }


def test_allow_exempts_from_the_defaults_only_and_forbid_adds(tmp_path: Path) -> None:
    put(tmp_path, "tests/data/golden.tar.gz", "tests/data/other.tar.gz", "internal/api.md", "notes/todo.txt")
    found = find_forbidden(tmp_path, allow=["tests/data/golden.tar.gz", "internal/"], forbid=["notes/", "golden.*"])
    assert [f.describe() for f in found] == [
        "notes/: forbidden by the project (matches notes/): notes/todo.txt",
        "tests/data/golden.tar.gz: forbidden by the project (matches golden.*)",
        "tests/data/other.tar.gz: nested archive (matches *.tar.gz)",
    ]


def test_a_big_forbidden_folder_names_its_first_files_and_counts_the_rest(tmp_path: Path) -> None:
    put(tmp_path, *(f".idea/f{i}.xml" for i in range(5)))
    (finding,) = find_forbidden(tmp_path)
    assert finding.describe() == (".idea/: editor folder (matches .idea/): .idea/f0.xml, .idea/f1.xml, "
                                  ".idea/f2.xml and 2 more")


def test_missing_required_paths_and_globs_are_named(tmp_path: Path) -> None:
    put(tmp_path, "tests/scan_parity.rs", "tests/data/a.bin")
    required = [Required(path="tests/scan_parity.rs", what="declared target scan_parity"),
                Required(path="tests/golden.rs", what="declared target golden (Cargo.toml [[test]] #2)"),
                Required(path="tests/data/*.bin", what="declared fixture"),
                Required(path="tests/data/*.csv", what="declared fixture"),
                Required(path="../outside.rs", what="declared target outside")]
    assert [f.describe() for f in find_missing(tmp_path, required)] == [
        "tests/golden.rs: missing: declared target golden (Cargo.toml [[test]] #2)",
        "tests/data/*.csv: missing: no file matches this declared fixture",
        "../outside.rs: missing: declared target outside lies outside the package",
    ]
    assert [f.path for f in inspect_tree(put(tmp_path, "x.zip"), required=required)][0] == "x.zip"


P = Path("manifests/package.toml")


@pytest.mark.parametrize("kind,data,expected", [
    ("cargo", {"package": {"fixturs": []}}, 'package.fixturs: unknown key — did you mean "fixtures"?'),
    ("cargo", {"pakage": {}}, 'pakage: unknown key — did you mean "package"?'),
    ("python", {"publish": {"password": "hunter22"}}, "publish.password: credentials never go in a manifest"),
    ("cargo", {"publish": {"token": "x"}}, "publish.token: credentials never go in a manifest"),
    ("python", {"publish": {"index_url": "https://me:pw@example.invalid/simple/"}},
     "publish.index_url: credentials never go in a manifest"),
    ("python", {"publish": {"index_url": "ftp://example.invalid/"}}, 'publish.index_url: "ftp://example.invalid/" is '
                                                                     "not an http(s) URL"),
    ("cargo", {"publish": {"lock": "requirements.lock"}}, "publish.lock: only for python projects (this one is "
                                                          "cargo) (a cargo package ships its Cargo.lock"),
    ("python", {"publish": {"registry": "local"}}, "publish.registry: only for cargo projects (this one is python) "
                                                   "(python: index_url)"),
    ("cargo", {"package": {"test_command": "cargo test"}}, "package.test_command: only for cmake, make and python projects"),
    ("make", {"package": {"dist": "make dist"}}, "package.dist_glob: missing: say where package.dist leaves the "
                                                 "tarball"),
    ("make", {"package": {"dist": "make dist && ls"}}, "package.dist: uses shell syntax; set shell = true"),
    ("make", {"package": {"fixtures": ["../up.bin", "/abs.bin"]}}, 'package.fixtures[0]: "../up.bin" leaves the '
                                                                   'project root'),
    ("make", {"package": {"fixtures": ["/abs.bin"]}}, 'package.fixtures[0]: "/abs.bin" is absolute'),
    ("make", {"package": {"timeout": 0}}, "package.timeout: must be a positive number of seconds"),
    ("make", {"package": {"warnings": "allow"}}, 'package.warnings: unknown value "allow"'),
    ("make", {"package": {"forbid": ["", "*.bak"]}}, "package.forbid[0]: an empty glob matches nothing"),
    ("python", {"publish": {"import": "relgate-cli"}}, "publish.import: 'relgate-cli' is not a module name"),
    ("python", {"publish": {"upload_url": "http://127.0.0.1:1/"}}, "publish.upload_url: only with publish.index_url"),
    ("python", {"package": {"extras": ["te st"]}}, 'package.extras[0]: "te st" is not an extra name'),
    ("cargo", {"publish": {"registry": "my registry"}}, 'publish.registry: "my registry" is not a cargo registry name'),
    ("make", {"package": {"max_unpacked_bytes": 0}},
     "package.max_unpacked_bytes: 0 is not a limit: a positive integer"),
    ("make", {"package": {"max_unpacked_bytes": "1G"}}, 'package.max_unpacked_bytes: expected an integer, got the '
                                                        'string "1G"'),
    ("cargo", {"package": {"max_members": -3}}, "package.max_members: -3 is not a limit: a positive integer"),
    ("cargo", {"package": {"max_members": True}}, "package.max_members: expected an integer, got true"),
    ("python", {"package": {"max_ratio": 1}}, "package.max_ratio: 1 is not a limit: a number above 1"),
    ("python", {"package": {"max_ratio": float("inf")}}, "package.max_ratio: inf is not a limit"),
    ("python", {"package": {"max_ratio": float("nan")}}, "package.max_ratio: nan is not a limit"),
    ("python", {"package": {"max_unpacked_bytes": 1 << 60}}, "package.max_unpacked_bytes: 1152921504606846976 is past"),
    ("python", {"package": {"max_ratoi": 5}}, 'package.max_ratoi: unknown key — did you mean "max_ratio"?'),
])
def test_package_toml_problems_name_file_and_dotted_key(kind: str, data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_package(data, path=P, kind=kind)
    assert any(line.startswith(f"{P}: ") and expected in line for line in caught.value.lines()), caught.value.lines()
    assert caught.value.exit_code == 2


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_package({"package": {"fixturs": [], "timeout": -1}, "publish": {"tokn": "x"}}, path=P, kind="python")
    assert len(caught.value.lines()) == 3


def test_a_valid_package_toml() -> None:
    m = parse_package({"package": {"forbid": ["*.bak"], "allow": ["tests/data/*.zip"], "fixtures": ["tests/x.bin"],
                                   "extras": ["test"], "test_command": "python -m pytest -q", "timeout": 600},
                       "publish": {"lock": "requirements.lock", "index_url": "http://127.0.0.1:8080/simple",
                                   "import": ["relgate", "relgate.cli"]}}, path=P, kind="python")
    assert m.package.test_command is not None and m.package.test_command.argv == ("python", "-m", "pytest", "-q")
    assert m.publish.index_url == "http://127.0.0.1:8080/simple/" and m.publish.imports == ("relgate", "relgate.cli")
    make = parse_package({"package": {"dist": "make dist", "dist_glob": "dist/*.tar.gz"}}, path=P, kind="make")
    assert make.package.dist is not None and make.package.dist.argv == ("make", "dist")


LOCK = b"""# a lock
attrs==26.1.0
tomli==2.0.1 ; python_version < "3.0"
requests==2.34.2 \\
    --hash=sha256:abc
pluggy>=1.0  # a constraint, not a pin
"""


def test_read_lock_pins_markers_continuations_and_hashes() -> None:
    entries = {e.name: e for e in read_lock(LOCK, shown="requirements.lock")}
    assert entries["attrs"].specifier == "==26.1.0" and entries["attrs"].line == 2
    assert entries["tomli"].applies is False
    assert entries["requests"].specifier == "==2.34.2" and entries["requests"].line == 4
    assert entries["pluggy"].specifier == ">=1.0"


@pytest.mark.parametrize("text,expected", [
    (b"attrs==1\nattrs==2\n", "requirements.lock:2: attrs is listed twice (also line 1)"),
    (b"not a requirement!\n", "requirements.lock:1: not a requirement: not a requirement!"),
])
def test_read_lock_bad_lines_name_file_and_line(text: bytes, expected: str) -> None:
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        read_lock(text, shown="requirements.lock")


def report(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"version": "1", "install": [{"metadata": {"name": n, "version": v}} for n, v in pairs]}


def test_compare_lock_matches_and_each_kind_of_drift() -> None:
    lock = b"attrs==26.1.0\nRequests==2.34.2\npluggy>=1.0\n"
    good = report(("attrs", "26.1.0"), ("requests", "2.34.2"), ("pluggy", "1.7.0"), ("mypkg", "1.0"))
    assert compare_lock(good, lock, shown="requirements.lock", project="mypkg") == []
    drift = report(("attrs", "25.0.0"), ("pluggy", "1.7.0"), ("idna", "3.20"))
    assert compare_lock(drift, lock, shown="requirements.lock", project="mypkg") == [
        "attrs: requirements.lock:1 says ==26.1.0, 25.0.0 resolves",
        "idna 3.20 resolves, but requirements.lock does not list it",
        "Requests: requirements.lock:2 lists it, but nothing requires it any more",
    ]


def make_wheel(path: Path, metadata: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/METADATA", metadata)
        zf.writestr("pkg/__init__.py", "")
    return path


def test_wheel_requirements_keep_what_applies_here_with_the_extras(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", (
        "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nProvides-Extra: test\n"
        "Requires-Dist: nox>=2024.4.15\nRequires-Dist: tomli>=2.0; python_version < '3.0'\n"
        "Requires-Dist: pytest>=7.4; extra == 'test'\nRequires-Dist: rich[jupyter]>=13\n\n"))
    assert wheel_requirements(wheel, ()) == ["nox>=2024.4.15", "rich[jupyter]>=13"]
    assert wheel_requirements(wheel, ("test",)) == ["nox>=2024.4.15", "pytest>=7.4", "rich[jupyter]>=13"]
    with pytest.raises(StepFailed, match="provides no extra 'docs'"):
        wheel_requirements(wheel, ("docs",))


def test_archive_limits_default_and_override() -> None:
    from relgate.manifest.package_spec import DEFAULT_LIMITS

    assert parse_package({}, path=P, kind="make").package.limits == DEFAULT_LIMITS
    assert (DEFAULT_LIMITS.max_unpacked_bytes, DEFAULT_LIMITS.max_members, DEFAULT_LIMITS.max_ratio) == \
        (512 << 20, 100_000, 100.0)  # the README's figures
    got = parse_package({"package": {"max_unpacked_bytes": 1 << 30, "max_members": 10, "max_ratio": 20.5}},
                        path=P, kind="cargo").package.limits
    assert (got.max_unpacked_bytes, got.max_members, got.max_ratio) == (1 << 30, 10, 20.5)
