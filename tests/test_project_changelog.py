"""``project.changelog`` names one file under the project root: an empty path and a folder are
each refused with their own one-line message (file and dotted key), never "ROOT does not
exist" about a folder that is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from relgate.core.errors import ManifestError
from relgate.manifest.specs import parse_project


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "engine" / "docs").mkdir(parents=True)
    (tmp_path / "engine" / "CHANGELOG.md").write_text("# changes\n")
    return tmp_path / "engine"


CASES = [
    ("", "project.changelog: empty path: leave the key out for no changelog"),
    ("   ", "project.changelog: empty path: leave the key out for no changelog"),
    ("docs", "project.changelog: {root}/docs is a folder, not a file (the changelog is one file)"),
    (".", "project.changelog: {root} is a folder, not a file (the changelog is one file)"),
    ("NEWS.md", "project.changelog: {root}/NEWS.md does not exist"),
]


@pytest.mark.parametrize(("changelog", "says"), CASES, ids=["empty", "blank", "folder", "the-root", "missing"])
def test_a_changelog_that_is_not_a_file_is_refused_saying_why(root: Path, changelog: str, says: str) -> None:
    path = root.parent / "project.toml"
    with pytest.raises(ManifestError) as err:
        parse_project({"project": {"name": "ds4", "root": "engine", "kind": "make", "changelog": changelog}},
                      path=path)
    assert err.value.problems == [f"{path}: {says.format(root=root)}"]


def test_the_changelog_file_itself_is_kept(root: Path) -> None:
    spec = parse_project({"project": {"name": "ds4", "root": "engine", "kind": "make", "changelog": "CHANGELOG.md"}},
                         path=root.parent / "project.toml")
    assert spec.changelog == root / "CHANGELOG.md"


def test_relgate_check_names_the_empty_changelog(tmp_path: Path) -> None:
    """End to end: the CLI's one line for `changelog = ""`, exit 2."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import REPO

    manifests = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests", manifests)
    project = manifests / "project.toml"
    text = project.read_text().replace('root = "../examples/tinyinfer"', f'root = "{REPO / "examples" / "tinyinfer"}"')
    assert 'changelog = "CHANGELOG.md"' in text
    project.write_text(text.replace('changelog = "CHANGELOG.md"', 'changelog = ""'))
    done = subprocess.run([sys.executable, "-m", "relgate.cli", "--manifests", str(manifests), "check"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RELGATE_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("relgate: manifests/project.toml: project.changelog: empty path: leave the key out for no "
                           "changelog\n")
