"""``relgate init`` sets ``max_skipped`` from a clean run the ledger recorded (it never runs
the repository itself), ``init --check`` names a target whose clean run skipped more than its
manifest allows, and a later commit that skips more tests fails the lane.

A pure-Python package written here, its pytest lane run for real in the fresh test
environment ``relgate pytest`` builds (every pip reads the tests' package mirror)."""

from __future__ import annotations

from pathlib import Path

from python_package_support import Ledger, change, commit, nox, pyproject_toml, relgate, write_files

from conftest import git

FILE_SECONDS = 120

FILES = {
    "pyproject.toml": pyproject_toml("skippy", "1.0.0"),
    "MANIFEST.in": "graft tests\nglobal-exclude __pycache__ *.py[cod]\n",
    "src/skippy/__init__.py": "def half(x):\n    return x / 2\n",
    "tests/test_half.py": """\
        import pytest

        import skippy


        def test_half():
            assert skippy.half(8) == 4


        def test_odd():
            assert skippy.half(3) == 1.5


        def test_on_a_gpu():
            pytest.skip("no GPU here")
        """,
}


def test_init_writes_max_skipped_from_the_clean_run_and_more_skips_fail(tmp_path: Path) -> None:
    root = tmp_path / "skippy"
    write_files(root, FILES)
    git(root, "init", "-q", "-b", "main")
    done = relgate(root, "init", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    lanes = (root / "manifests/lanes.toml").read_text()
    assert "max_skipped = " not in lanes  # no run recorded: nothing is guessed
    assert "# max_skipped: no clean run of the lanes at HEAD is recorded" in lanes
    commit(root, "skippy 1.0.0")

    done = nox(root, "-s", "gate")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    row = Ledger(root).rows("gate")["test_half"]
    assert row["verdict"] == "pass" and row["tests"]["skipped"] == 1 and row["tests"]["passed"] == 2, row
    head = git(root, "rev-parse", "HEAD").strip()

    done = relgate(root, "init", ".", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    lanes = (root / "manifests/lanes.toml").read_text()
    table = lanes.split('[target."test_half"]', 1)[1].split("\n[", 1)[0]
    line = next(x for x in table.splitlines() if x.startswith("max_skipped"))
    assert line.startswith("max_skipped = 1   # the skips of the clean run ") and ": 1 of 3 skipped" in line, line
    assert f" at {head[:12]}: " in line
    assert "no clean run of the lanes" not in lanes

    # init --check: a max_skipped below what the recorded clean run skipped is named
    lowered = lanes.replace(line, "max_skipped = 0")
    (root / "manifests/lanes.toml").write_text(lowered)
    done = relgate(root, "init", ".", "--check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "lanes.toml: target.test_half.max_skipped = 0, but the clean run " in done.stdout, done.stdout
    assert ": 1 of 3 skipped (raise max_skipped, or find why)" in done.stdout
    (root / "manifests/lanes.toml").write_text(lanes)
    done = relgate(root, "init", ".", "--check")
    assert "max_skipped" not in done.stdout, done.stdout
    commit(root, "max_skipped from the clean run")

    # a commit that skips one more test fails the lane, naming the limit
    change(root, "tests/test_half.py", "def test_odd():\n", "def test_odd():\n    pytest.skip('later')\n")
    commit(root, "skip one more")
    done = nox(root, "-s", "gate")
    assert done.returncode != 0
    row = Ledger(root).rows("gate")["test_half"]
    assert row["verdict"] == "fail" and row["reason"] == "2 of 3 tests skipped, above max_skipped = 1", row

    # neither a failed run nor a passing one on a dirty tree is a clean run to take a limit from
    hint = "# max_skipped: no clean run of the lanes at HEAD is recorded"
    done = relgate(root, "init", ".", "--dry-run")
    assert hint in done.stdout and "max_skipped = 2" not in done.stdout, done.stdout
    path = root / "manifests/lanes.toml"
    path.write_text(path.read_text().replace("max_skipped = 1 ", "max_skipped = 5 "))
    done = nox(root, "-s", "gate")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    row = Ledger(root).rows("gate")["test_half"]
    assert row["verdict"] == "pass" and row["dirty"] and row["tests"]["skipped"] == 2, row
    done = relgate(root, "init", ".", "--dry-run")
    assert hint in done.stdout and "max_skipped = 2" not in done.stdout, done.stdout


def test_a_reused_lanes_file_gets_max_skipped_beside_it_never_in_it(tmp_path: Path) -> None:
    """The planner with the plain data the stage hands down: a project keeping its own lanes
    file gets ``max_skipped`` in manifests/lanes.toml, never for a target that file configures."""
    import tomllib

    from relgate.manifest.init import plan_init

    root = tmp_path / "skippy"
    write_files(root, FILES)
    (root / "tests/test_more.py").write_text("def test_more():\n    pass\n")
    own = '[lanes]\n"test_half" = "gate"\n"test_more" = "gate"\n\n[target."test_more"]\ntimeout = 60\n'
    (root / "qual").mkdir()
    (root / "qual/lanes.toml").write_text(own)
    skips = {"test_half": (1, 3, "run r1 at 0123456789ab: 1 of 3 skipped"),
             "test_more": (2, 5, "run r1 at 0123456789ab: 2 of 5 skipped")}
    plan = plan_init(root, skips=skips)
    lanes = next(f.text for f in plan.files if f.path.name == "lanes.toml" and f.path.parent.name == "manifests")
    assert tomllib.loads(lanes)["target"] == {"test_half": {"max_skipped": 1}}
    assert "# the skips of the clean run r1 at 0123456789ab: 1 of 3 skipped" in lanes
    assert (root / "qual/lanes.toml").read_text() == own
    none = plan_init(root, skips={"test_half": (0, 3, "run r1 at 0123456789ab: 0 of 3 skipped")})
    assert not any(f.path.name == "lanes.toml" and f.path.parent.name == "manifests" for f in none.files)
