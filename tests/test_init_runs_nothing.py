"""Hostile probes, round four (issue 36): `relgate init` reads a repository and never runs its
code, never writes or reads through a symlink that leaves it, and writes only TOML that check
accepts (or refuses with one line). Real make, real cargo/rustup, real files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from test_init import relgate

from conftest import Project, typed

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not on PATH (apt-get install -y make)")
needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")

HOSTILE_MAKEFILE = """\
X := $(shell touch {mark}/shell-ran)
Y != touch {mark}/bang-ran
include gen.mk
-include gen2.mk
gen.mk:
\ttouch {mark}/remake-ran; echo 'Z := 1' > gen.mk
gen2.mk:
\ttouch {mark}/remake2-ran
all: build
build:
\tcc -o hello hello.c
test:
\t./hello
clean:
\trm -f hello
.PHONY: all build test clean
"""


def _make_repo(tmp_path: Path, text: str) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    root.mkdir()
    mark = tmp_path / "marks"
    mark.mkdir()
    (root / "Makefile").write_text(text.format(mark=mark))
    (root / "hello.c").write_text("int main(void) { return 0; }\n")
    return root, mark


@needs_make
@pytest.mark.parametrize("mode", [(), ("--dry-run",), ("--check",)], ids=["init", "dry-run", "check"])
def test_init_runs_nothing_a_makefile_says(tmp_path: Path, mode: tuple[str, ...]) -> None:
    root, mark = _make_repo(tmp_path, HOSTILE_MAKEFILE)
    if mode == ("--check",):
        first = relgate(root, "init", str(root))  # the manifests --check compares with
        assert first.returncode == 0, first.stdout + first.stderr
        assert list(mark.iterdir()) == []
    done = relgate(root, "init", str(root), *mode)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert list(mark.iterdir()) == [], "init ran the repository's code"
    assert not (root / "gen.mk").exists() and not (root / "gen2.mk").exists()
    if not mode:
        builds = tomllib.loads((root / "manifests" / "builds.toml").read_text())
        assert builds["release"]["default"]["run"].startswith("make")


@needs_make
def test_a_makefile_reading_stdin_does_not_hang_init(tmp_path: Path) -> None:
    root, _ = _make_repo(tmp_path, "include /dev/stdin\nall:\n\techo hi\n.PHONY: all\n")
    # relgate's own stdin is a pipe nobody writes to: make must not inherit it
    done = subprocess.Popen([sys.executable, "-m", "relgate.cli", "init", str(root), "--dry-run"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = done.communicate(timeout=180)
    assert done.returncode == 0, out + err
    assert "--dry-run: nothing written" in out


@needs_make
def test_a_makefile_writing_a_file_while_read_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    root, mark = _make_repo(tmp_path, "$(file >{mark}/file-ran,hello)\nall:\n\techo hi\n.PHONY: all\n")
    done = relgate(root, "init", str(root), "--dry-run")
    assert list(mark.iterdir()) == []
    assert "Traceback" not in done.stderr and done.returncode in (0, 2), done.stdout + done.stderr


@needs_make
@pytest.mark.parametrize("goal", ['we"ird', "x\\y", 'a"\\#b', "it's", "back`tick"])
def test_odd_make_goals_become_toml_that_parses_and_names_exactly_the_goal(tmp_path: Path, goal: str) -> None:
    """The goal is the default one (it becomes `run`): escaped as TOML and quoted for the shell;
    `run` names that goal or, where init does not take it as the default, none (never another)."""
    shown = goal.replace("\\#", "#")
    text = f".DEFAULT_GOAL := {goal}\n{goal}:\n\ttouch built\nclean:\n\trm -f built\n.PHONY: {goal} clean\n"
    root, _ = _make_repo(tmp_path, text)
    done = relgate(root, "init", str(root))
    if done.returncode == 2:  # refused: one line, nothing written
        assert len(done.stderr.strip().splitlines()) == 1 and not (root / "manifests").exists(), done.stderr
        return
    assert done.returncode == 0, done.stdout + done.stderr
    builds = tomllib.loads((root / "manifests" / "builds.toml").read_text())
    run = builds["release"]["default"]["run"]
    import shlex

    assert shlex.split(run) in (["make", shown], ["make"]), run
    assert shlex.split(run) == ["make", shown] or goal == 'a"\\#b', run  # make's database prints that one escaped
    check = relgate(root, "--manifests", str(root / "manifests"), "check")
    assert check.returncode in (0, 1) and "Traceback" not in check.stderr, check.stdout + check.stderr


def _python_repo(tmp_path: Path, name: str, version: str) -> Path:
    root = tmp_path / "py"
    root.mkdir()
    (root / "pyproject.toml").write_text(f'[project]\nname = {name}\nversion = {version}\n')
    return root


@pytest.mark.parametrize("name,version,where", [
    ('"x\\ny"', '"1.0"', "project.name"),
    ('"ok"', '"1.0\\n## 9.9.9"', "project.version"),
    ('"ok"', '"not-a-version"', "project.version"),
    ('"ok"', '"1.0-final-final"', "project.version"),
    ('"a/../b"', '"1.0"', "project.name"),
], ids=["name-newline", "version-newline", "version-words", "version-not-pep440", "name-path"])
def test_a_python_project_init_cannot_represent_is_refused_with_one_line(tmp_path: Path, name: str, version: str,
                                                                          where: str) -> None:
    root = _python_repo(tmp_path, name, version)
    done = relgate(root, "init", str(root))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"pyproject.toml: {where}: " in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (root / "manifests").exists()


def test_a_pep440_version_is_written(tmp_path: Path) -> None:
    root = _python_repo(tmp_path, '"ok"', '"1.2.0rc1"')
    done = relgate(root, "init", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tomllib.loads((root / "manifests" / "project.toml").read_text())["project"]["version"] == "1.2.0rc1"


@pytest.mark.parametrize("link", ["manifests", "hosts", ".gitignore"])
def test_init_never_writes_through_a_symlink_leaving_the_repository(tmp_path: Path, link: str) -> None:
    root = _python_repo(tmp_path, '"ok"', '"1.0"')
    outside = tmp_path / "outside"
    outside.mkdir()
    if link == ".gitignore":
        (outside / "victim").write_text("keep\n")
        (root / ".gitignore").symlink_to(outside / "victim")
    else:
        (root / link).symlink_to(outside, target_is_directory=True)
    for mode in ((), ("--dry-run",), ("--force",)):
        done = relgate(root, "init", str(root), *mode)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "outside" in done.stderr and "relgate init never" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in outside.iterdir()) == (["victim"] if link == ".gitignore" else [])
    if link == ".gitignore":
        assert (outside / "victim").read_text() == "keep\n"


def test_init_never_reads_a_project_file_through_a_symlink_leaving_the_repository(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "secret"\nversion = "1.0"\n')
    root = tmp_path / "py"
    root.mkdir()
    (root / "pyproject.toml").symlink_to(elsewhere / "pyproject.toml")
    done = relgate(root, "init", str(root), "--dry-run")
    assert done.returncode == 2 and "pyproject.toml leads to" in done.stderr, done.stdout + done.stderr
    assert "secret" not in done.stdout


@needs_cargo
def test_cargo_metadata_runs_the_toolchain_relgate_found_not_the_repositorys(tmp_path: Path) -> None:
    """A rust-toolchain.toml naming a toolchain inside the repository, and a .cargo/config.toml
    naming a rustc wrapper there: neither runs."""
    if shutil.which("rustup") is None:
        pytest.skip("rustup is not on PATH (the toolchain file is rustup's)")
    root = tmp_path / "crate"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "Cargo.toml").write_text('[package]\nname = "crate"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                     '[[test]]\nname = "t"\npath = "tests/t.rs"\n')
    (root / "src" / "lib.rs").write_text("")
    (root / "tests" / "t.rs").write_text("#[test]\nfn t() {}\n")
    mark = tmp_path / "marks"
    mark.mkdir()
    tc = root / "tc" / "bin"
    tc.mkdir(parents=True)
    for tool in ("cargo", "rustc"):
        (tc / tool).write_text(f"#!/bin/sh\ntouch {mark}/{tool}-ran\nexit 1\n")
        (tc / tool).chmod(0o755)
    (root / "rust-toolchain.toml").write_text(f'[toolchain]\npath = "{root / "tc"}"\n')
    (root / ".cargo").mkdir()
    (root / ".cargo" / "config.toml").write_text(f'[build]\nrustc-wrapper = "{tc / "rustc"}"\n')
    done = relgate(root, "init", str(root), "--dry-run")
    assert list(mark.iterdir()) == [], "init ran the repository's toolchain"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read with cargo metadata" in done.stdout


@needs_make
@pytest.mark.parametrize("included", ["pipe.mk", "/dev/zero"], ids=["fifo", "dev-zero"])
def test_the_make_database_read_is_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   included: str) -> None:
    """`include` of a FIFO nobody writes (make waits) or of /dev/zero (make reads forever):
    relgate gives up after MAKE_TIMEOUT with one line."""
    from relgate.core.errors import InputError
    from relgate.kinds.make import reader as discover

    root, _ = _make_repo(tmp_path, f"include {included}\nall:\n\techo hi\n.PHONY: all\n")
    if included == "pipe.mk":
        os.mkfifo(root / "pipe.mk")
    monkeypatch.setattr(discover, "MAKE_TIMEOUT", 3)
    with pytest.raises(InputError) as err:
        discover.read_make(root)
    assert "make -pRrq did not run" in str(err.value) or "printed no rule database" in str(err.value), str(err.value)


def test_the_rust_example_still_inits(scankern: Project) -> None:
    """The confinement changes nothing for a plain repository (the regression side)."""
    shutil.rmtree(scankern.root / "manifests")
    done = relgate(scankern.root, "init", str(scankern.root), "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_symlinked_cargo_toml_leading_out_is_not_read(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Cargo.toml").write_text('[package]\nname = "secretcrate"\nversion = "0.1.0"\nedition = "2021"\n')
    root = tmp_path / "crate"
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("")
    (root / "Cargo.toml").symlink_to(elsewhere / "Cargo.toml")
    done = relgate(root, "init", str(root), "--kind", "cargo", "--dry-run")
    assert done.returncode == 2 and "Cargo.toml leads to" in done.stderr, done.stdout + done.stderr
    assert "secretcrate" not in done.stdout + done.stderr


@pytest.mark.parametrize("shape", ["manifests-is-a-file", "gitignore-is-a-fifo"])
def test_a_place_init_cannot_write_is_one_line_and_nothing_half_written(tmp_path: Path, shape: str) -> None:
    root = _python_repo(tmp_path, '"ok"', '"1.0"')
    if shape == "manifests-is-a-file":
        (root / "manifests").write_text("not a folder\n")
    else:
        os.mkfifo(root / ".gitignore")
    done = relgate(root, "init", str(root))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    if shape == "gitignore-is-a-fifo":
        assert "not a regular file" in done.stderr and not (root / "manifests").exists()


def test_a_crate_target_that_is_a_fifo_is_read_as_nothing_not_waited_on(tmp_path: Path) -> None:
    """init reads each target file's leading lines for a `#![cfg(feature = …)]`: a FIFO declared
    as a [[test]]'s path is no file to read (it would wait for a writer forever)."""
    root = tmp_path / "crate"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.rs").write_text("")
    (root / "tests" / "gated.rs").write_text('#![cfg(feature = "cuda")]\n#[test]\nfn t() {}\n')
    os.mkfifo(root / "tests" / "pipe.rs")
    (root / "Cargo.toml").write_text('[package]\nname = "crate"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                     '[features]\ncuda = []\n\n[[test]]\nname = "pipe"\npath = "tests/pipe.rs"\n')
    done = typed(root, sys.executable, "-m", "relgate.cli", "init", str(root), "--kind", "cargo", "--dry-run",
                 timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"pipe"' in done.stdout and '"gated"' in done.stdout
