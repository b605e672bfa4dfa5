"""A report or sign-off file that cannot be written (``/dev/full``, a folder, a read-only
place) is exit 2 naming the file, never a green run, and a device is never replaced by a
regular file (issue 23). Real runs of the bundled C example; /dev/full is the kernel's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import Project
from relgate.core.errors import InputError
from relgate.core.files import write_output

FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists() or not stat.S_ISCHR(FULL.stat().st_mode),
                                reason="no /dev/full character device here")

QUICK = '[[check]]\nname = "quick"\nrun = ["true"]\n'


def _assert_full_is_a_device() -> None:
    assert stat.S_ISCHR(os.stat(FULL).st_mode), "/dev/full was replaced by a regular file"


@needs_full
def test_write_output_into_a_full_device_raises_naming_it_and_keeps_the_device() -> None:
    with pytest.raises(InputError, match=r"^/dev/full: cannot write the report: No space left on device$"):
        write_output(FULL, b"<testsuite/>\n")
    _assert_full_is_a_device()


def test_write_output_into_a_folder_or_through_a_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot write the report: Is a directory"):
        write_output(tmp_path, b"x")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"file/r.json: cannot write the report: "):
        write_output(tmp_path / "file" / "r.json", b"x")
    assert not list(tmp_path.glob(".*.tmp"))


def test_write_output_into_a_pipe_writes_into_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_output(fifo, b"hello\n")
        assert os.read(reader, 100) == b"hello\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@needs_full
@pytest.mark.parametrize("flag", ["--junit", "--report"])
def test_a_report_into_dev_full_is_exit_2_naming_it(tinyinfer: Project, flag: str) -> None:
    (tinyinfer.manifests / "builds.toml").write_text(QUICK)
    for done in (tinyinfer.relgate("host", flag, str(FULL)), tinyinfer.nox("host", extra=("--", flag, str(FULL)))):
        out = done.stdout + done.stderr
        assert done.returncode == 2, out
        assert "/dev/full: cannot write the report: No space left on device" in out, out
        assert "Traceback" not in out
        _assert_full_is_a_device()
    from relgate.ledger.store import Ledger

    with Ledger.open(tinyinfer.home) as ledger:  # the "running" report is written first: nothing ran
        assert ledger.steps() == []
        runs = ledger.runs()
        assert len(runs) == 2 and all(r.finished is not None and r.outcome == "failed" for r in runs), runs


@needs_full
def test_signoff_into_dev_full_is_exit_2_naming_the_file(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "builds.toml").write_text(QUICK)
    done = tinyinfer.relgate("signoff", "--out", str(FULL))
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "/dev/full/" in out and "cannot write the sign-off file" in out, out
    assert "Traceback" not in out
    _assert_full_is_a_device()
