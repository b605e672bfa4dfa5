"""Python packages: ``nox -s package_verify`` and ``nox -s publish_dry_run`` on a small real
package — python -m build, a wheelhouse, fresh venvs, twine, a real pypiserver on 127.0.0.1
(started by the session, or by the test), pip installs from it — and on relgate itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, Project, git
from packaging_support import (
    CACHE,
    alive,
    base_env,
    everything_under,
    locked_version,
    log_of,
    nox,
    python_project,
)
from relgate.package.publish import LocalIndex, free_port

FILE_SECONDS = 150  # about how long this file takes here: it starts early (tests/conftest.py)


def assert_no_secret(project: Project, secret: str, *outputs: str) -> None:
    assert secret.encode() not in everything_under(project.home)  # every log, the ledger and its WAL
    assert secret not in project.relgate("status", "--json").stdout
    for text in outputs:
        assert secret not in text


def test_python_package_is_verified_offline_then_uploaded_to_a_local_index_and_installed(tmp_path: Path) -> None:
    """Over 30 s: a real build (python -m build), an offline venv install and test run, a
    pypiserver started for the test, an upload and an install back from it."""
    project = python_project(tmp_path)
    secret = "twine-password-5b0e7c1d"
    done = nox(project, "package_verify", "publish_dry_run",
               env=base_env(TWINE_USERNAME="release-bot", TWINE_PASSWORD=secret))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr

    verify = project.ledger_rows("package_verify")
    assert list(verify) == ["export", "package", "extract", "inspect", "requirements", "wheelhouse", "offline-venv",
                            "offline-install", "offline-tests"]
    assert all(r["verdict"] == "pass" for r in verify.values()), verify
    extract = log_of(project, verify["extract"])
    assert "minipkg-1.2.0.tar.gz: " in extract and "minipkg-1.2.0-py3-none-any.whl: " in extract
    install = verify["offline-install"]
    assert "--no-index" in install["command"] and "minipkg[test]==1.2.0" in install["command"]
    assert install["env"]["PIP_NO_INDEX"] == "1" and install["env"]["PIP_FIND_LINKS"] == ""
    assert "1 passed" in log_of(project, verify["offline-tests"])

    publish = project.ledger_rows("publish_dry_run")
    assert [s for s in publish] == ["export", "package", "twine-check", "requirements", "resolve", "lock", "index",
                                    "upload", "wheelhouse", "venv", "install", "import"]
    assert publish["resolve"]["verdict"] == publish["lock"]["verdict"] == "skip"
    assert all(r["verdict"] == "pass" for s, r in publish.items() if s not in ("resolve", "lock")), publish
    index_log = log_of(project, publish["index"])
    port = int(re.search(r"pypiserver on http://127\.0\.0\.1:(\d+)/ \(pid (\d+)\)", index_log).group(1))
    pid = int(re.search(r"\(pid (\d+)\)", index_log).group(1))
    upload = log_of(project, publish["upload"])
    assert f"Uploading distributions to http://127.0.0.1:{port}/" in upload
    assert "Uploading minipkg-1.2.0-py3-none-any.whl" in upload and "Uploading minipkg-1.2.0.tar.gz" in upload
    installed = log_of(project, publish["install"])
    assert f"Downloading http://127.0.0.1:{port}/packages/minipkg-1.2.0-py3-none-any.whl" in installed
    assert "Successfully installed minipkg-1.2.0" in installed
    assert "minipkg 1.2.0 is installed" in log_of(project, publish["import"])
    assert f"local index stopped (pypiserver, pid {pid})" in done.stdout and not alive(pid)
    assert_no_secret(project, secret, done.stdout, done.stderr)


def test_upload_to_an_index_the_test_started_really_lands_there(tmp_path: Path) -> None:
    """Over 30 s: a real pypiserver is started and a real package built and uploaded to it."""
    secret = "index-password-77aa01"
    index = LocalIndex(folder=tmp_path / "index", venv=CACHE / "pypiserver-2.4.2-test", port=free_port(),
                       username="uploader", password=secret)
    index.start(lambda line: None)
    try:
        project = python_project(tmp_path, package_toml=(
            f'[publish]\nindex_url = "{index.simple}"\nimport = "minipkg"\n'))
        done = nox(project, "publish_dry_run", env=base_env(TWINE_USERNAME="uploader", TWINE_PASSWORD=secret))
        assert done.returncode == 0, done.stdout + done.stderr
        assert sorted(p.name for p in index.packages.iterdir()) == ["minipkg-1.2.0-py3-none-any.whl",
                                                                    "minipkg-1.2.0.tar.gz"]
        publish = project.ledger_rows("publish_dry_run")
        assert publish["index"]["command"] == f"reach {index.url}"
        assert f"Downloading {index.url}packages/minipkg-1.2.0" in log_of(project, publish["install"])
        assert_no_secret(project, secret, done.stdout, done.stderr)
        # A wrong password is refused by the index: the upload fails, nothing new lands there.
        wrong = nox(project, "publish_dry_run", env=base_env(TWINE_USERNAME="uploader", TWINE_PASSWORD="wrong-pw-1"))
        assert wrong.returncode == 1
        assert project.ledger_rows("publish_dry_run")["upload"]["verdict"] == "fail"
    finally:
        index.stop()


def test_an_unreachable_index_is_an_error_naming_the_host(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    project = python_project(tmp_path, package_toml=f'[publish]\nindex_url = "http://127.0.0.1:{port}/simple/"\n')
    done = nox(project, "publish_dry_run", env=base_env(TWINE_PASSWORD="x-secret-123456"))
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    publish = project.ledger_rows("publish_dry_run")
    assert publish["index"]["verdict"] == "error"
    reason = publish["index"]["reason"]
    assert f"cannot reach the package index at 127.0.0.1:{port} (http://127.0.0.1:{port}/)" in reason
    assert publish["upload"]["reason"] == "needs index, which did not pass"
    assert publish["install"]["verdict"] == "not-run"


def test_credentials_for_an_index_must_come_from_the_environment(tmp_path: Path) -> None:
    port = free_port()
    project = python_project(tmp_path, package_toml=f'[publish]\nindex_url = "http://127.0.0.1:{port}/simple/"\n')
    done = nox(project, "publish_dry_run", env=base_env(TWINE_USERNAME="", TWINE_PASSWORD=""))
    publish = project.ledger_rows("publish_dry_run")
    assert publish["upload"]["verdict"] == "not-run"
    assert publish["upload"]["reason"].startswith("no credentials in the environment: set TWINE_PASSWORD")
    assert done.returncode == 1  # and the index itself is unreachable: an error


def test_a_lock_that_no_longer_matches_what_resolves_fails(tmp_path: Path) -> None:
    pins = {name: locked_version(name) for name in ("pytest", "iniconfig", "packaging", "pluggy", "pygments")}
    pins.pop("pluggy")  # pytest needs it: it resolves, unlocked
    lock = "".join(f"{n}=={v}\n" for n, v in pins.items()) + "colorlog==" + locked_version("colorlog") + "\n"
    project = python_project(tmp_path, package_toml=(
        '[package]\nextras = ["test"]\n[publish]\nlock = "requirements.lock"\n'))
    (project.root / "requirements.lock").write_text(lock)
    project.commit("a lock")
    done = nox(project, "publish_dry_run", env=base_env(TWINE_USERNAME="", TWINE_PASSWORD=""))
    assert done.returncode == 1, done.stdout
    publish = project.ledger_rows("publish_dry_run")
    # No credentials in the environment: the run's own index got a one-time password, recorded masked.
    assert publish["upload"]["verdict"] == "pass" and publish["upload"]["env"]["TWINE_PASSWORD"] == "***"
    assert publish["resolve"]["verdict"] == "pass"
    assert publish["lock"]["verdict"] == "fail"
    reason = publish["lock"]["reason"]
    assert reason.startswith("requirements.lock no longer matches what resolves: 2 differences, first ")
    log = log_of(project, publish["lock"])
    assert re.search(r"^pluggy \S+ resolves, but requirements.lock does not list it$", log, re.MULTILINE), log
    assert f"colorlog: requirements.lock:{len(pins) + 1} lists it, but nothing requires it any more" in log
    assert publish["import"]["verdict"] == "pass"  # the rest of the rehearsal still ran


def test_an_sdist_with_a_stray_archive_or_missing_fixture_fails_naming_them(tmp_path: Path) -> None:
    project = python_project(tmp_path, package_toml=(
        '[package]\nextras = ["test"]\nfixtures = ["tests/data/expected.txt"]\n'
        'test_command = "python -m pytest -q -p no:cacheprovider tests"\n'))
    data = project.root / "tests" / "data"
    data.mkdir()
    (data / "expected.txt").write_text("42\n")
    shutil.make_archive(str(data / "cache"), "zip", project.root / "src")
    (project.root / "MANIFEST.in").write_text("graft tests\nexclude tests/data/expected.txt\n")
    project.commit("data")
    done = nox(project, "package_verify", env=base_env())
    assert done.returncode == 1
    verify = project.ledger_rows("package_verify")
    log = log_of(project, verify["inspect"])
    assert "minipkg-1.2.0.tar.gz: tests/data/cache.zip: nested archive (matches *.zip)" in log
    assert "minipkg-1.2.0.tar.gz: tests/data/expected.txt: missing: declared fixture" in log
    assert verify["inspect"]["reason"].startswith("2 findings")
    assert verify["offline-tests"]["verdict"] == "pass"


def copy_relgate(tmp_path: Path) -> Path:
    """relgate's working tree (tracked and untracked files git does not ignore) as one clean commit."""
    root = tmp_path / "relgate"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        if (REPO / rel).is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, root / rel)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "relgate candidate")
    return root


def test_relgate_qualifies_itself(tmp_path: Path) -> None:
    """Over 30 s (≈1 min here): relgate's own sdist and wheel are built, extracted, installed
    into an offline venv whose test step runs part of this suite, then resolved against the
    lock and uploaded to a local index — the whole release path on a real package, once."""
    root = copy_relgate(tmp_path)
    project = Project(root=root, manifests=root / "self", hosts=root / "hosts", home=tmp_path / "home")
    secret = "self-publish-password-0d9e"
    done = nox(project, "package_verify", "publish_dry_run", env=base_env(TWINE_PASSWORD=secret))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    verify, publish = project.ledger_rows("package_verify"), project.ledger_rows("publish_dry_run")
    assert all(r["verdict"] == "pass" for r in verify.values()), verify
    assert all(r["verdict"] == "pass" for r in publish.values()), publish
    assert "passed" in log_of(project, verify["offline-tests"])
    assert "requirements.lock matches what resolves" in log_of(project, publish["lock"])
    assert "relgate 0.1.0 is installed" in log_of(project, publish["import"])
    assert_no_secret(project, secret, done.stdout, done.stderr)
    assert os.path.isdir(CACHE)
