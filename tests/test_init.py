"""`relgate init` on real repositories (cargo metadata, make -pRrq, pyproject), and `init --check`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Project, git
from conftest import relgate_typed as relgate
from conftest import typed as run
from relgate.kinds.make.reader import make_targets_of

FILE_SECONDS = 80  # about how long this file takes here: it starts early (tests/conftest.py)

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None or shutil.which("make") is None,
                                reason="needs cargo and make")

def assert_schema_headed_and_valid(folder: Path, hosts: Path) -> None:
    """Every file init wrote starts with a #:schema line naming an existing schema, and validates against it."""
    import json
    from urllib.parse import urlsplit

    from jsonschema import Draft202012Validator

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    files = [*sorted(folder.glob("*.toml")), hosts / "local.toml"]
    assert len(files) >= 6, files
    for path in files:
        first = path.read_text().splitlines()[0]
        # issue 34: nothing machine-specific; a #:schema line only where the schemas lie in the repository
        assert "file://" not in path.read_text() and str(REPO) not in path.read_text(), path
        if first.startswith("#:schema "):
            where = first.split(" ", 1)[1]
            schema = Path(urlsplit(where).path) if where.startswith("file://") else path.parent / where
        else:
            schema = REPO / "schemas" / (("host" if path.parent == hosts else path.stem) + ".schema.json")
        assert schema.is_file(), (path, schema)
        assert schema.name == ("host" if path.parent == hosts else path.stem) + ".schema.json"
        errors = list(Draft202012Validator(json.loads(schema.read_text())).iter_errors(tomllib.loads(path.read_text())))
        assert not errors, (path, [e.message for e in errors])


def _bare_crate(scankern: Project) -> Path:
    """The Rust example without its manifest folder (its qual/lanes.toml kept), committed."""
    shutil.rmtree(scankern.root / "manifests")
    scankern.commit("no manifests")
    return scankern.root


def test_init_on_the_rust_example_reuses_its_lanes_file_and_checks_clean(scankern):
    root = _bare_crate(scankern)
    lanes_before = (root / "qual" / "lanes.toml").read_bytes()
    done = relgate(root, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read with cargo metadata" in done.stdout
    assert "qual/lanes.toml reused" in done.stdout
    project = (root / "manifests" / "project.toml").read_text()
    assert not project.startswith("#:schema ")  # relgate's schemas lie outside this repository: no machine path
    assert 'lanes = "qual/lanes.toml"' in project and 'kind = "cargo"' in project and 'version = "0.4.0"' in project
    assert not (root / "manifests" / "lanes.toml").exists()  # reused, never copied
    assert (root / "qual" / "lanes.toml").read_bytes() == lanes_before
    builds = (root / "manifests" / "builds.toml").read_text()
    assert 'features = ["", "fast", "qualification", "fast,qualification"]' in builds  # cargo-hack's shape
    assert "--no-default-features --features {features}" in builds
    for name in ("builds", "package", "checklist", "measurements"):
        assert (root / "manifests" / f"{name}.toml").is_file()
    assert 'detect = true' in (root / "hosts" / "local.toml").read_text()
    assert_schema_headed_and_valid(root / "manifests", root / "hosts")
    assert done.stdout.rstrip().splitlines()[-3:] == ["  relgate --manifests manifests check",
                                                      "  relgate --manifests manifests census", "  nox -s host"]
    check = relgate(root, "--manifests", "manifests", "check")
    assert check.returncode == 0, check.stdout + check.stderr
    census = relgate(root, "--manifests", "manifests", "census")
    assert census.returncode == 0, census.stdout + census.stderr
    assert "8 targets, 8 lane rows, 0 violations" in census.stdout

    # Never over a file: exit 2 naming it, nothing touched.
    before = {p: p.read_bytes() for p in (root / "manifests").iterdir()}
    again = relgate(root, "init")
    assert again.returncode == 2
    assert "manifests/project.toml: exists" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    assert {p: p.read_bytes() for p in (root / "manifests").iterdir()} == before

    # --dry-run prints every file and writes nothing.
    dry = relgate(root, "init", "--manifests", "elsewhere", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert not (root / "elsewhere").exists()
    for name in ("project", "builds", "package", "checklist", "measurements"):
        assert f"--- elsewhere/{name}.toml" in dry.stdout
    assert "--- hosts/local.toml (exists)" in dry.stdout and "nothing written" in dry.stdout
    assert ".gitignore (appended)" not in dry.stdout  # .relgate/ is in it already

    # --force replaces them.
    (root / "manifests" / "builds.toml").write_text("# mine\n")
    forced = relgate(root, "init", "--force")
    assert forced.returncode == 0 and "[release.default]" in (root / "manifests" / "builds.toml").read_text()

    # init --check: clean, then a new target and a new feature drift (exit 1, one line each).
    scankern.commit("manifests")
    clean = relgate(root, "init", "--check")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    cargo = root / "Cargo.toml"
    cargo.write_text(cargo.read_text().replace("qualification = []\n", "qualification = []\nsimd = []\n")
                     + '\n[[test]]\nname = "new_parity"\npath = "tests/new_parity.rs"\n')
    (root / "tests" / "new_parity.rs").write_text("#[test]\nfn t() {}\n")
    drifted = relgate(root, "init", "--check")
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    lines = drifted.stdout.strip().splitlines()
    assert lines == ["new target new_parity (test tests/new_parity.rs): no lane in qual/lanes.toml",
                     "new feature simd (Cargo.toml): in no feature set of manifests/builds.toml [matrix]"], lines
    # a lane row for a removed target
    lanes = root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text() + '"new_parity" = "gate"\n"gone_parity" = "gate"\n')
    stale = relgate(root, "init", "--check")
    assert stale.returncode == 1
    assert "qual/lanes.toml: lane row for a removed target gone_parity" in stale.stdout
    assert "new_parity" not in stale.stdout
    cargo.write_text(cargo.read_text().replace("fast = []\n", ""))  # a feature the matrix builds is gone
    gone = relgate(root, "init", "--check")
    assert "manifests/builds.toml [matrix] builds feature fast, which Cargo.toml no longer has" in \
        gone.stdout.splitlines(), gone.stdout


def test_half_filled_lanes_file_the_census_names_exactly_the_unassigned(scankern):
    root = _bare_crate(scankern)
    lanes = root / "qual" / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('"segmented_parity" = "gate"\n', "")
                     .replace('"scan_record" = "record"\n', ""))
    scankern.commit("half-filled lanes")
    done = relgate(root, "init")
    assert done.returncode == 0, done.stderr
    assert "no lane yet (2): segmented_parity, scan_record" in done.stdout
    census = relgate(root, "--manifests", "manifests", "census")
    assert census.returncode == 1
    violations = [line for line in census.stdout.splitlines() if "violation" not in line and line.strip()]
    assert sorted(violations) == sorted(line for line in violations if line.lstrip().startswith("unassigned"))
    assert sorted(v.split()[1] for v in violations) == ["scan_record", "segmented_parity"], census.stdout

    # With no lanes file at all: a table of its own, every target it cannot place commented "?".
    lanes.unlink()
    shutil.rmtree(root / "manifests")
    done = relgate(root, "init")
    assert done.returncode == 0, done.stderr
    table = (root / "manifests" / "lanes.toml").read_text()
    assert '"scan_bench" = "bench"' in table and '"scan_qual" = "qualification"' in table
    assert '# "scan_parity" = "?"' in table
    census = relgate(root, "--manifests", "manifests", "census")
    named = sorted(line.split()[1] for line in census.stdout.splitlines() if line.lstrip().startswith("unassigned"))
    assert named == sorted(["host_smoke", "scan_parity", "segmented_parity", "scan_contract", "layout_contract",
                            "scan_record"]), census.stdout


def test_several_kinds_ask_for_kind(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    done = relgate(tmp_path, "init")
    assert done.returncode == 2
    assert "found Makefile (make), pyproject.toml (python); say which one to qualify with --kind make|python" \
        in done.stderr
    assert not (tmp_path / "manifests").exists()
    dry = relgate(tmp_path, "init", "--kind", "make", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "--- .gitignore (appended)\n.relgate/\n__pycache__/\n" in dry.stdout and "--- noxfile.py\n" in dry.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "pyproject.toml"]  # nothing written


def test_make_targets_come_from_the_rule_database(tmp_path):
    (tmp_path / "Makefile").write_text(
        "OUT = out\n.PHONY: all test docs.html\nall: $(OUT)/app\n$(OUT):\n\tmkdir -p $@\n"
        "$(OUT)/app: main.c | $(OUT)\n\tcc -o $@ $<\n%.o: %.c\n\tcc -c $<\ntest: all\n\t./out/app\n"
        "docs.html:\n\ttrue\nrelease:\n\ttrue\nmain.c:\n\ttouch $@\n")
    (tmp_path / "main.c").write_text("int main(void){return 0;}\n")
    database = run(tmp_path, "make", "-pRrq", ":").stdout
    assert make_targets_of(database, tmp_path) == ["all", "docs.html", "release", "test"]


def test_init_on_the_c_example_then_nox_host_is_green(tinyinfer):
    root = tinyinfer.root  # the fixture's manifests lie outside the repository: it has none
    done = relgate(root, "init")
    assert done.returncode == 0, done.stderr
    assert "read with make -pRrq" in done.stdout
    builds = (root / "manifests" / "builds.toml").read_text()
    assert 'run = "make all"' in builds and 'clean = "make clean"' in builds and 'run = "make test"' in builds
    assert 'produces = ["build/libtinyinfer.a", "build/tinyinfer"]' in builds
    assert '[release.cuda]\nclean = "make clean"\nrun = "make cuda"\nproduces = ["build/tinyinfer-cuda"]\n' \
           'requires = ["nvcc"]' in builds  # its recipe calls nvcc: built where nvcc is, not-run elsewhere
    assert (root / "noxfile.py").is_file()
    assert_schema_headed_and_valid(root / "manifests", root / "hosts")
    tinyinfer.commit("relgate init")
    host = run(root, sys.executable, "-m", "nox", "-s", "host")
    assert host.returncode == 0, host.stdout[-3000:] + host.stderr[-3000:]
    out = host.stdout + host.stderr
    for step in ("lane-census", "release", "test", "git-diff-check"):
        assert any(line.split()[:2] == [step, "pass"] for line in out.splitlines()), (step, out[-2000:])
    assert "Session host was successful" in out
    assert relgate(root, "init", "--check").returncode == 0
    make = root / "Makefile"
    make.write_text(make.read_text() + "\nsoak: cpu\n\tsh tests/cli_contract.sh build/tinyinfer\n")
    drifted = relgate(root, "init", "--check")
    assert drifted.returncode == 1
    assert drifted.stdout.strip() == "new Makefile target soak: named in no command of manifests"
    make.write_text(make.read_text().replace("\ntest: cpu", "\nunit: cpu"))  # `make test` is gone
    gone = relgate(root, "init", "--check")
    assert gone.returncode == 1
    assert "manifests/builds.toml: runs make test, which Makefile no longer has" in gone.stdout.splitlines()


def test_init_on_relgate_itself_then_host_and_package_verify_are_green(tmp_path):
    """Over 30 s: relgate's own release build and generated tests check run on a clone, then
    its sdist is verified in an offline venv (two nested pytest runs, narrowed to two files)."""
    root = tmp_path / "relgate"
    subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True)
    git(root, "checkout", "-q", "-B", "main")
    done = relgate(root, "init", "--manifests", "qual")  # manifests/ describes the C example already
    assert done.returncode == 0, done.stderr
    assert "read with pyproject.toml [project]" in done.stdout
    assert "kept hosts/local.toml" in done.stdout  # this machine's file stays as it is
    package = root / "qual" / "package.toml"
    text = package.read_text()
    assert 'extras = ["test"]' in text and 'lock = "requirements.lock"' in text
    git(root, "add", "-A")
    git(root, "commit", "-qm", "relgate init")
    # The manifests are init's, untouched. Their `tests` check and package_verify's offline
    # tests are pytest with no paths: this very suite, which would run inside itself (ten
    # minutes). pytest's own PYTEST_ADDOPTS narrows both runs to two files — the steps still
    # run pytest, in the clone and in the extracted sdist, and their verdicts are what they
    # report.
    narrow = "PYTEST_ADDOPTS=-p no:cacheprovider tests/test_redact.py tests/test_evidence_cells.py"
    env_root = ("env", "RELGATE_MANIFESTS=qual", narrow)
    host = run(root, *env_root, sys.executable, "-m", "nox", "-s", "host")
    assert host.returncode == 0, host.stdout[-3000:] + host.stderr[-3000:]
    for check in ("release", "tests"):
        assert any(line.split()[:2] == [check, "pass"] for line in host.stdout.splitlines()), host.stdout[-2000:]
    verify = run(root, *env_root, sys.executable, "-m", "nox", "-s", "package_verify")
    assert verify.returncode == 0, verify.stdout[-4000:] + verify.stderr[-3000:]
    assert "Session package_verify was successful" in verify.stdout + verify.stderr


def test_the_cargo_toml_fallback_reads_what_cargo_metadata_reads(monkeypatch):
    import relgate.kinds.cargo.reader as discover

    crate = REPO / "examples" / "scankern"
    real = discover.read_cargo(crate)
    assert real.source == "cargo metadata"
    monkeypatch.setattr(discover.shutil, "which", lambda name: None)  # no cargo on this machine
    fallback = discover.read_cargo(crate)
    assert fallback.source == "Cargo.toml"
    assert sorted(fallback.targets, key=lambda t: (t.kind, t.name)) == sorted(real.targets, key=lambda t: (t.kind, t.name))
    assert (fallback.name, fallback.version, fallback.features, fallback.has_lib, fallback.locked) == \
        (real.name, real.version, real.features, real.has_lib, real.locked)


def test_a_virtual_workspace_is_refused_naming_the_file(tmp_path):
    (tmp_path / "a" / "src").mkdir(parents=True)
    (tmp_path / "Cargo.toml").write_text('[workspace]\nmembers = ["a"]\n')
    (tmp_path / "a" / "Cargo.toml").write_text('[package]\nname = "a"\nversion = "0.1.0"\nedition = "2021"\n')
    (tmp_path / "a" / "src" / "lib.rs").write_text("")
    done = relgate(tmp_path, "init")
    assert done.returncode == 2
    assert "Cargo.toml: cargo metadata lists no package (a virtual workspace manifest" in done.stderr
    assert not (tmp_path / "manifests").exists()
