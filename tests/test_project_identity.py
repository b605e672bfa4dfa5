"""Two projects in one repository share commits: every ledger row, reuse key, evidence index
row and baseline carries the project identity, and old ledgers migrate forward (their rows
stay readable and never back a reuse or a baseline)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, Project, git
from relgate.core.verdict import Verdict
from relgate.ledger.store import _MIGRATIONS, SCHEMA_VERSION, Ledger, _split_sql

BROKEN_TEST = "test: cpu $(BUILD)/test_kernels\n\t$(BUILD)/test_kernels\n"
EXTRA_CELL = "\tprintf 'onlyb\\tarm\\tkey\\t1\\n' >> \"$$TINYINFER_EVIDENCE\"\n"


def _project(tmp_path: Path, repo: Path, sub: str, name: str, folder: str = "") -> Project:
    manifests = repo / (folder or f"manifests-{sub}")
    shutil.copytree(REPO / "manifests", manifests)
    (manifests / "project.toml").write_text((manifests / "project.toml").read_text()
                                            .replace('root = "../examples/tinyinfer"', f'root = "../{sub}"')
                                            .replace('name = "tinyinfer"', f'name = "{name}"'))
    return Project(root=repo / sub, manifests=manifests, hosts=tmp_path / "hosts", home=tmp_path / "home")


@pytest.fixture
def two(tmp_path: Path) -> tuple[Project, Project]:
    """One repository, two copies of the C example (the second one's unit tests broken and
    its tests recording one more evidence cell), one ledger home."""
    repo = tmp_path / "repo"
    for sub in ("a", "b"):
        shutil.copytree(EXAMPLES / "tinyinfer", repo / sub, ignore=shutil.ignore_patterns("build"))
    makefile = repo / "b" / "Makefile"
    text = makefile.read_text()
    assert BROKEN_TEST in text
    makefile.write_text(text.replace(BROKEN_TEST, BROKEN_TEST + EXTRA_CELL + "\tfalse\n"))
    (repo / ".gitignore").write_text("build/\n")
    shutil.copytree(REPO / "hosts", tmp_path / "hosts")
    a, b = _project(tmp_path, repo, "a", "tinyinfer"), _project(tmp_path, repo, "b", "tinyinfer")
    git(repo, "init", "-q", "-b", "main")
    a.commit("two projects")
    return a, b


def test_reuse_never_borrows_another_projects_pass(two: tuple[Project, Project]) -> None:
    a, b = two
    first = a.nox("host", extra=("--", "--reuse"))
    assert first.returncode == 0, first.stdout
    broken = b.nox("host", extra=("--", "--reuse"))
    assert broken.returncode == 1, broken.stdout  # the same commit, the same command, another project
    rows = {r["step"]: r for r in b.ledger_steps() if r["project"]["root"] == "b"}
    assert rows["unit-tests"]["verdict"] == "fail" and rows["unit-tests"]["reused_from"] is None
    assert rows["unit-tests"]["project"] == {"name": "tinyinfer", "root": "b", "manifests": "manifests-b"}
    again = a.nox("host", extra=("--", "--reuse"))  # its own passes are still reused
    assert again.returncode == 0 and "reused: passed as step #" in again.stdout


def test_accept_merges_only_the_projects_own_evidence(two: tuple[Project, Project]) -> None:
    a, b = two
    assert a.nox("gate").returncode == 0
    b.nox("gate")  # red (its tests are broken) but it recorded evidence, with one cell a has not
    with Ledger.open(a.home) as ledger:
        assert len({e.project_key for e in ledger.evidence()}) == 2
    accepted = a.relgate("--manifests", str(a.manifests), "evidence", "accept")
    assert accepted.returncode == 0, accepted.stderr
    with Ledger.open(a.home) as ledger:
        (base,) = ledger.baselines()
        cells = (a.home / base.path).read_text()
        assert "onlyb" not in cells and "kernels" in cells
        assert base.project_key is not None and "\x1fa\x1f" in base.project_key
    check_b = b.relgate("--manifests", str(b.manifests), "evidence", "check")
    assert check_b.returncode == 0, check_b.stdout  # b has no baseline of its own: not compared, not a's
    assert "no accepted baseline" in check_b.stdout


def test_status_shows_and_filters_by_project(two: tuple[Project, Project], tmp_path: Path) -> None:
    a, b = two
    other = _project(tmp_path, a.root.parent, "a", "renamed", "manifests-r")  # another name for the same root
    (other.manifests / "builds.toml").write_text('[[check]]\nname = "only"\nrun = "true"\n')
    assert a.nox("host").returncode == 0
    assert other.nox("host").returncode == 0
    both = a.ledger_steps()
    assert {r["project"]["name"] for r in both} == {"tinyinfer", "renamed"}
    only = a.ledger_steps("--project", "renamed")
    assert [r["step"] for r in only] == ["lane-census", "only", "git-diff-check"]
    table = a.relgate("status", "--project", "tinyinfer")
    assert table.stdout.splitlines()[1].split()[:2] == ["id", "project"]
    assert "renamed" not in table.stdout


def test_status_commit_resolves_short_shas_and_refs_and_refuses_garbage(two: tuple[Project, Project]) -> None:
    a, _ = two
    assert a.nox("host").returncode == 0
    full = git(a.root, "rev-parse", "HEAD").strip()
    for ref in (full[:7], "main", "HEAD"):
        done = a.relgate("status", "--json", "--commit", ref)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["commit"] == full and json.loads(done.stdout)["steps"]
    bad = a.relgate("status", "--commit", "no-such-thing")
    assert bad.returncode == 2 and "--commit no-such-thing: names no commit" in bad.stderr
    assert "Traceback" not in bad.stderr


def _v3_ledger(home: Path) -> None:
    """A ledger as relgate wrote it before the project identity (schema 3), with one pass,
    its evidence and a baseline."""
    home.mkdir()
    conn = sqlite3.connect(home / "ledger.sqlite3")
    for script in _MIGRATIONS[:3]:
        for statement in _split_sql(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO runs (id, session, argv, project, project_root, commit_sha, dirty, started)"
                 " VALUES ('r1', 'host', '[]', 'tinyinfer', '/p', 'c1', 0, '2026-01-01')")
    conn.execute("INSERT INTO steps (run_id, session, step, host, commit_sha, dirty, command, env, started,"
                 " verdict) VALUES ('r1', 'host', 'unit-tests', 'local', 'c1', 0, 'make test', '{}',"
                 " '2026-01-01', 'pass')")
    conn.execute("INSERT INTO evidence (step_id, run_id, commit_sha, dirty, host, sha256, path, created)"
                 " VALUES (1, 'r1', 'c1', 0, 'local', 'ab', 'objects/ab.cells', '2026-01-01')")
    conn.execute("INSERT INTO baselines (release, board, commit_sha, sha256, path, cells, accepted)"
                 " VALUES ('0.3.0', 'host:local', 'c1', 'ab', 'objects/ab.cells', 1, '2026-01-01')")
    conn.commit()
    conn.close()


def test_an_old_ledger_migrates_forward_and_its_rows_back_nothing(tmp_path: Path) -> None:
    from relgate.evidence.baselines import captures_at
    from relgate.ledger.identity import ProjectIdentity

    home = tmp_path / "home"
    _v3_ledger(home)
    ident = ProjectIdentity(name="tinyinfer", root=".", manifests="manifests")
    with Ledger.open(home) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION >= 4  # 5: the sign-off's tables
        (old,) = ledger.steps(commit="c1")
        assert old.step == "unit-tests" and old.verdict is Verdict.PASS and old.project is None
        assert old.to_json()["project"] is None
        assert len(ledger.evidence(commit="c1")) == 1 and len(ledger.baselines()) == 1  # readable
        run = ledger.begin_run(session="host", argv=[], project="tinyinfer", project_root=Path("/p"), commit="c1",
                               branch=None, dirty=False, identity=ident)
        assert ledger.reusable_pass(run_id=run, commit="c1", session="host", step="unit-tests", host="local",
                                    command="make test", env={}, board=None, driver=None, toolkit=None) is None
        assert captures_at(ledger, "c1", ident.key) == {}
        assert ledger.baselines(project_key=ident.key) == []
        assert ledger.steps(commit="c1", project="tinyinfer") == []  # an old row names no project
