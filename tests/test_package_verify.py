"""``nox -s package_verify`` (and the cargo ``publish_dry_run``) on real copies of the bundled
C and Rust examples: real git, make, gcc, cargo, a real file-index cargo registry, real
network namespaces."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Project
from packaging_support import base_env, everything_under, local_cargo_registry, log_of, nox, write_manifest
from relgate.package.offline import probe

FILE_SECONDS = 40  # about how long this file takes here: it starts early (tests/conftest.py)

HAS_CARGO = shutil.which("cargo") is not None
needs_cargo = pytest.mark.skipif(not HAS_CARGO, reason="cargo is not on PATH")
NAMESPACE, NAMESPACE_WHY = probe()


def assert_clean_output(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr


# --- the C example (make) ---------------------------------------------------------------------


def test_c_example_is_packaged_from_the_commit_extracted_inspected_and_tested_offline(tinyinfer: Project) -> None:
    done = nox(tinyinfer, "package_verify", env=base_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean_output(done)
    got = tinyinfer.ledger_rows("package_verify")
    assert list(got) == ["export", "package", "extract", "inspect", "offline-build", "offline-tests"]
    for row in got.values():
        assert row["verdict"] == "pass" and row["dirty"] is False and row["lane"] == "package", row
    assert got["package"]["command"].startswith("git archive --format=tar.gz --prefix=tinyinfer-0.3.0/")
    assert "sha256 " in log_of(tinyinfer, got["extract"])
    assert "9 required paths present" in log_of(tinyinfer, got["inspect"])  # 8 lane targets, 1 fixture
    assert "clean: 18 files in tinyinfer-0.3.0.tar.gz" in log_of(tinyinfer, got["inspect"])
    # qualified/ (the device run's scripts and results) is export-ignore: the package never holds it
    assert ("tinyinfer-0.3.0.tar.gz holds: .gitignore, CHANGELOG.md, Makefile, README.md, include/, src/, tests/"
            in log_of(tinyinfer, got["inspect"])), log_of(tinyinfer, got["inspect"])
    import io
    import tarfile

    listed = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=tinyinfer.root, capture_output=True)
    names = tarfile.open(fileobj=io.BytesIO(listed.stdout)).getnames()
    assert "src/kernels_cuda.cu" in names and not [n for n in names if n.startswith("qualified")]  # export-ignore
    assert (tinyinfer.root / "qualified" / "qualify_over_ssh.py").is_file()  # in the repository, not the package
    for name in ("offline-build", "offline-tests"):
        row = got[name]
        assert row["command"].startswith("relgate-offline -- make")
        assert row["env"]["CARGO_NET_OFFLINE"] == "true" and row["env"]["PIP_NO_INDEX"] == "1"
        first = log_of(tinyinfer, row).splitlines()[2]
        if NAMESPACE:
            assert row["env"]["RELGATE_NETWORK"].startswith("cut: ")
            assert first.startswith("relgate offline: a fresh network namespace")
        else:  # said in the log and the record, never hidden
            assert row["env"]["RELGATE_NETWORK"].startswith("offline switches only: ")
            assert first.startswith("relgate offline: no network namespace on this host")
    assert "test_kernels: 17 passed, 0 failed" in log_of(tinyinfer, got["offline-tests"])


def test_the_c_example_inside_a_bigger_repository_ships_without_qualified(tmp_path: Path) -> None:
    """As in relgate's own checkout: the example is a folder of a larger repository, so the
    package is `git archive COMMIT:examples/tinyinfer`; its .gitattributes still keeps the
    qualification kit (qualified/) out, and the inspect log shows what the package holds."""
    from conftest import EXAMPLES, bundled_manifests, git

    repo = tmp_path / "monorepo"
    shutil.copytree(EXAMPLES / "tinyinfer", repo / "examples" / "tinyinfer",
                    ignore=shutil.ignore_patterns("build", "target"))
    (repo / "README.md").write_text("a repository that holds the example among other things\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    assert "examples/tinyinfer/qualified/qualify_over_ssh.py" in git(repo, "ls-files")  # committed, not packaged
    manifests, hosts = bundled_manifests(tmp_path, repo / "examples" / "tinyinfer")
    project = Project(root=repo / "examples" / "tinyinfer", manifests=manifests, hosts=hosts, home=tmp_path / "home")
    done = nox(project, "package_verify", env=base_env())
    assert done.returncode == 0, done.stdout + done.stderr
    got = project.ledger_rows("package_verify")
    assert got["package"]["command"].endswith(":examples/tinyinfer"), got["package"]["command"]
    inspect = log_of(project, got["inspect"])
    assert ("tinyinfer-0.3.0.tar.gz holds: .gitignore, CHANGELOG.md, Makefile, README.md, include/, src/, tests/"
            in inspect), inspect
    assert "qualified" not in inspect


@pytest.mark.skipif(not NAMESPACE, reason=f"no network namespace here: {NAMESPACE_WHY}")
def test_an_offline_step_that_tries_the_network_fails(tinyinfer: Project) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        probe_cmd = [sys.executable, "-c", "import socket, sys; socket.create_connection(('127.0.0.1', "
                     "int(sys.argv[1])), timeout=5); print('connected')", str(port)]
        control = subprocess.run(probe_cmd, capture_output=True, text=True)
        assert control.returncode == 0 and "connected" in control.stdout  # reachable from here
        quoted = ", ".join(f'"{a}"' for a in ["python3", *probe_cmd[1:]]).replace("\\", "\\\\")
        write_manifest(tinyinfer, "package.toml", f"""
            [package]
            test_command = [{quoted}]
            """)
        done = nox(tinyinfer, "package_verify", env=base_env())
    assert done.returncode == 1, done.stdout + done.stderr
    got = tinyinfer.ledger_rows("package_verify")
    assert got["offline-build"]["verdict"] == "pass"
    assert got["offline-tests"]["verdict"] == "fail"
    log = log_of(tinyinfer, got["offline-tests"])
    assert "Network is unreachable" in log and "connected" not in log.split("\n", 3)[3]


HOSTILE_DIST = {
    "benign": "pass",
    "dotdot": "add('tinyinfer-0.3.0/' + '../' * 30 + OUTSIDE.lstrip('/') + '/dotdot.txt')",
    "absolute": "add(OUTSIDE + '/absolute.txt')",
    "symlink-out": "link('tinyinfer-0.3.0/escape', OUTSIDE); add('tinyinfer-0.3.0/escape/through.txt')",
    # 64 MiB of zeros in ~64 KiB: past the default max_ratio = 100 (issue 23)
    "bomb": "zeros = tarfile.TarInfo('tinyinfer-0.3.0/zeros.bin'); zeros.size = 64 << 20; "
            "tar.addfile(zeros, io.BytesIO(bytes(64 << 20)))",
    # 5 MiB that do not compress, past package.max_unpacked_bytes = 4 MiB (PACKAGE_EXTRA)
    "big": "big = tarfile.TarInfo('tinyinfer-0.3.0/random.bin'); big.size = 5 << 20; "
           "tar.addfile(big, io.BytesIO(os.urandom(5 << 20)))",
    "setuid": "x = tarfile.TarInfo('tinyinfer-0.3.0/suid'); x.size = 4; x.mode = 0o4755; "
              "tar.addfile(x, io.BytesIO(b'evil'))",
}
PACKAGE_EXTRA = {"big": "max_unpacked_bytes = 4194304"}
DIST_SCRIPT = """\
import io, os, sys, tarfile
OUTSIDE = sys.argv[1]
os.makedirs("dist", exist_ok=True)
with tarfile.open("dist/tinyinfer-0.3.0.tar.gz", "w:gz") as tar:
    def add(name):
        info = tarfile.TarInfo(name); info.size = 4; tar.addfile(info, io.BytesIO(b"evil"))
    def link(name, target):
        info = tarfile.TarInfo(name); info.type = tarfile.SYMTYPE; info.linkname = target; tar.addfile(info)
    tar.add(".", arcname="tinyinfer-0.3.0",
            filter=lambda i: None if i.name.startswith("tinyinfer-0.3.0/dist") else i)
    {body}
"""


@pytest.mark.parametrize("kind", list(HOSTILE_DIST))
def test_a_hostile_dist_tarball_is_refused_and_nothing_lands_outside(tinyinfer: Project, tmp_path: Path,
                                                                     kind: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tinyinfer.root / "tools").mkdir()
    (tinyinfer.root / "tools" / "dist.py").write_text(DIST_SCRIPT.format(body=HOSTILE_DIST[kind]))
    tinyinfer.commit("a dist script")
    write_manifest(tinyinfer, "package.toml", f"""
        [package]
        dist = ["python3", "tools/dist.py", "{outside}"]
        dist_glob = "dist/*.tar.gz"
        build_command = "true"
        test_command = "true"
        {PACKAGE_EXTRA.get(kind, '')}
        """)
    done = nox(tinyinfer, "package_verify", env=base_env())
    assert_clean_output(done)
    got = tinyinfer.ledger_rows("package_verify")
    assert list(outside.iterdir()) == []  # nothing landed outside the extraction folder
    if kind in ("benign", "setuid"):
        assert done.returncode == 0, done.stdout
        assert got["extract"]["verdict"] == "pass"
        stripped = "tinyinfer-0.3.0.tar.gz: member 'tinyinfer-0.3.0/suid': setuid bit stripped"
        assert (stripped in log_of(tinyinfer, got["extract"])) == (kind == "setuid")
        return
    assert done.returncode == 1
    reason = got["extract"]["reason"]
    assert got["extract"]["verdict"] == "fail" and "tinyinfer-0.3.0.tar.gz: member '" in reason, reason
    assert {"dotdot": "'..' in the path", "absolute": "absolute path",
            "symlink-out": "symlink to", "bomb": "past max_ratio = 100 times its size",
            "big": "unpacks to more than max_unpacked_bytes = 4194304"}[kind] in reason
    assert reason in done.stdout
    for later in ("inspect", "offline-build", "offline-tests"):
        assert got[later]["verdict"] == "not-run" and got[later]["reason"].startswith("needs ")


def test_a_failed_package_build_leaves_the_later_steps_not_run(tinyinfer: Project) -> None:
    write_manifest(tinyinfer, "package.toml", """
        [package]
        dist = "false"
        dist_glob = "*.tar.gz"
        """)
    done = nox(tinyinfer, "package_verify", env=base_env())
    assert done.returncode == 1
    got = tinyinfer.ledger_rows("package_verify")
    assert got["package"]["verdict"] == "fail" and got["package"]["reason"] == "false: exit 1"
    assert got["extract"]["reason"] == "needs package, which did not pass"
    assert got["inspect"]["reason"] == "needs extract, which did not pass"
    assert {got[s]["verdict"] for s in ("extract", "inspect", "offline-build", "offline-tests")} == {"not-run"}


def test_a_stray_archive_and_a_tooling_folder_in_the_tarball_fail_naming_the_files(tinyinfer: Project) -> None:
    (tinyinfer.root / "tests" / "data").mkdir()
    subprocess.run(["tar", "czf", "tests/data/inputs.tar.gz", "README.md"], cwd=tinyinfer.root, check=True)
    (tinyinfer.root / ".vscode").mkdir()
    (tinyinfer.root / ".vscode" / "settings.json").write_text("{}\n")
    tinyinfer.commit("stray material")
    done = nox(tinyinfer, "package_verify", env=base_env())
    assert done.returncode == 1
    got = tinyinfer.ledger_rows("package_verify")
    assert got["inspect"]["verdict"] == "fail"
    log = log_of(tinyinfer, got["inspect"])
    assert "tinyinfer-0.3.0.tar.gz: .vscode/: editor folder (matches .vscode/): .vscode/settings.json" in log
    assert "tinyinfer-0.3.0.tar.gz: tests/data/inputs.tar.gz: nested archive (matches *.tar.gz)" in log
    assert got["inspect"]["reason"].startswith("2 findings, first tinyinfer-0.3.0.tar.gz: .vscode/")
    assert got["offline-tests"]["verdict"] == "pass"  # a red step does not hide the ones after it


def test_a_dirty_tree_packages_the_commit_and_marks_every_record(tinyinfer: Project) -> None:
    (tinyinfer.root / "stray.tar.gz").write_bytes(b"not committed")
    (tinyinfer.root / "src" / "kernels_cpu.c").write_text("this would not compile\n")
    done = nox(tinyinfer, "package_verify", env=base_env())
    assert done.returncode == 0, done.stdout  # built from the commit: neither change is in the package
    assert "dirty tree" in done.stdout
    got = tinyinfer.ledger_rows("package_verify")
    assert all(r["dirty"] is True and r["verdict"] == "pass" for r in got.values())
    assert "uncommitted changes: they are not in the export" in log_of(tinyinfer, got["export"])


@pytest.mark.parametrize("text,expected", [
    ('[package]\nfixturs = ["x"]\n', 'package.toml: package.fixturs: unknown key — did you mean "fixtures"?'),
    ('[publish]\npassword = "hunter22"\n', "package.toml: publish.password: credentials never go in a manifest"),
    ('[package]\nfixtures = [\n', "package.toml:3:1: TOML syntax error"),
])
def test_a_bad_package_toml_is_exit_2_naming_file_and_key(tinyinfer: Project, text: str, expected: str) -> None:
    (tinyinfer.manifests / "package.toml").write_text(text)
    for done in (nox(tinyinfer, "package_verify", env=base_env()), tinyinfer.relgate("package-verify")):
        assert done.returncode == 2, done.stdout + done.stderr
        assert expected in done.stderr and "Traceback" not in done.stderr + done.stdout
        assert "hunter22" not in done.stderr + done.stdout
    assert not tinyinfer.home.exists() or tinyinfer.ledger_rows() == {}  # nothing ran, nothing half-written


# --- the Rust example (cargo) -----------------------------------------------------------------------


@needs_cargo
def test_rust_example_crate_is_verified_offline(scankern: Project) -> None:
    done = scankern.relgate("package-verify", "--junit", str(scankern.root.parent / "pv.xml"))
    assert done.returncode == 0, done.stdout + done.stderr
    got = scankern.ledger_rows("package_verify")
    assert list(got) == ["export", "package", "extract", "inspect", "offline-lib", "offline-tests", "offline-tool",
                         "offline-bench"]
    assert all(r["verdict"] == "pass" for r in got.values()), got
    assert got["package"]["command"] == "cargo package --locked --no-verify --allow-dirty"
    assert "scankern-0.4.0.crate: " in log_of(scankern, got["extract"])
    assert "9 required paths present" in log_of(scankern, got["inspect"])  # 8 targets + qual/lanes.toml
    assert got["offline-lib"]["command"] == ("relgate-offline -- cargo test --offline --locked --lib "
                                             "--no-default-features --no-run")
    assert got["offline-tests"]["command"].endswith("cargo test --offline --locked --no-default-features")
    assert got["offline-tool"]["command"].endswith("--features qualification --test scan_qual --no-run")
    assert got["offline-bench"]["command"].endswith("cargo bench --offline --locked --no-default-features "
                                                    "--bench scan_bench --no-run")
    assert got["offline-tests"]["env"]["CARGO_NET_OFFLINE"] == "true"
    assert 'tests="8"' in (scankern.root.parent / "pv.xml").read_text()


@needs_cargo
def test_rust_crate_with_stray_material_or_missing_fixture_fails_naming_each_file(scankern: Project) -> None:
    root = scankern.root
    (root / "tests" / "data").mkdir()
    (root / "tests" / "data" / "golden.bin").write_bytes(b"\x00\x01")
    subprocess.run(["tar", "czf", "tests/data/inputs.tar.gz", "README.md"], cwd=root, check=True)
    (root / "internal").mkdir()
    (root / "internal" / "notes.md").write_text("not for release\n")
    cargo = root / "Cargo.toml"
    cargo.write_text(cargo.read_text().replace('exclude = ["/manifests"]',
                                               'exclude = ["/manifests", "/tests/data/golden.bin"]'))
    write_manifest(scankern, "package.toml", """
        [package]
        fixtures = ["qual/lanes.toml", "tests/data/golden.bin"]
        """)
    scankern.commit("stray material; a fixture left out of the crate")
    done = nox(scankern, "package_verify", env=base_env())
    assert done.returncode == 1
    got = scankern.ledger_rows("package_verify")
    log = log_of(scankern, got["inspect"])
    assert "scankern-0.4.0.crate: internal/: internal material (matches internal/): internal/notes.md" in log
    assert "scankern-0.4.0.crate: tests/data/inputs.tar.gz: nested archive (matches *.tar.gz)" in log
    assert "scankern-0.4.0.crate: tests/data/golden.bin: missing: declared fixture" in log
    assert got["inspect"]["verdict"] == "fail" and got["inspect"]["reason"].startswith("3 findings")
    assert got["offline-tests"]["verdict"] == "pass"


@needs_cargo
def test_rust_publish_dry_run_against_a_local_registry_never_logs_the_token(scankern: Project,
                                                                            tmp_path: Path) -> None:
    token = "cargo-registry-token-93f1c2a7"
    env = base_env(CARGO_REGISTRIES_LOCAL_INDEX=local_cargo_registry(tmp_path), CARGO_REGISTRIES_LOCAL_TOKEN=token)
    done = nox(scankern, "publish_dry_run", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    got = scankern.ledger_rows("publish_dry_run")
    assert [(s, r["verdict"]) for s, r in got.items()] == [("export", "pass"), ("lock", "pass"), ("publish", "pass")]
    assert got["publish"]["command"] == "cargo publish --locked --dry-run --registry local"
    log = log_of(scankern, got["publish"])
    assert "Updating `local` index" in log and "aborting upload due to dry run" in log
    assert token.encode() not in everything_under(scankern.home)
    assert token not in done.stdout + done.stderr + scankern.relgate("status", "--json").stdout


@needs_cargo
def test_a_cargo_lock_that_would_change_fails_publish_dry_run(scankern: Project, tmp_path: Path) -> None:
    cargo = scankern.root / "Cargo.toml"
    cargo.write_text(cargo.read_text().replace('version = "0.4.0"', 'version = "0.4.1"', 1))
    scankern.commit("bump the version, forget the lock")
    env = base_env(CARGO_REGISTRIES_LOCAL_INDEX=local_cargo_registry(tmp_path))
    done = nox(scankern, "publish_dry_run", env=env)
    assert done.returncode == 1
    got = scankern.ledger_rows("publish_dry_run")
    assert got["lock"]["verdict"] == "fail" and got["lock"]["reason"] == "cargo tree --locked --depth 0: exit 101"
    assert "because --locked was passed" in log_of(scankern, got["lock"])
    assert got["publish"]["verdict"] == "not-run" and got["publish"]["reason"] == "needs lock, which did not pass"


@needs_cargo
def test_rust_publish_without_a_registry_on_this_host_is_not_run(scankern: Project) -> None:
    env = {k: "" for k in ("CARGO_REGISTRIES_LOCAL_INDEX",)}
    done = nox(scankern, "publish_dry_run", env=base_env(**env))
    assert done.returncode == 0, done.stdout
    got = scankern.ledger_rows("publish_dry_run")
    assert got["publish"]["verdict"] == "not-run"
    assert got["publish"]["reason"].startswith('no registry "local" configured on this host (set '
                                               "CARGO_REGISTRIES_LOCAL_INDEX")
    strict = nox(scankern, "publish_dry_run", env=base_env(**env), extra=("--require-all",))
    assert strict.returncode == 1 and "--require-all: 1 step(s) not run count as a failure" in strict.stdout
