"""A session's output starts with relgate's own lines: nox asks about uv before every session
(``get_virtualenv`` → ``OPTIONAL_VENVS`` → ``find_uv``, which logs ``uv binary not found.`` when
there is none), and the noxfile answers it up front, since no relgate session makes an
environment. Run on a real copy of the C example, with a uv that cannot be found."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import NOXFILE, Project

SESSIONS = [
    ("census", ()),
    ("record", ("--", "nosuch")),  # bad input: relgate's one line, exit 2
    ("lane", ("--", "quality", "--list")),
    ("compare", ("--", "--help")),
    ("signoff", ("--", "--help")),
]


@pytest.mark.parametrize(("session", "extra"), SESSIONS, ids=[s[0] for s in SESSIONS])
def test_no_uv_line_before_relgates_own(tinyinfer: Project, session: str, extra: tuple[str, ...]) -> None:
    env = {**tinyinfer.env, "UV": "relgate-test-no-such-uv"}  # nox's own override: a uv no PATH holds
    done = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", session, *extra], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    output = done.stdout.splitlines()  # nox's lines (stderr) and relgate's, in the order they came
    assert not any("uv" in line.split() or "uv binary" in line for line in output), output
    assert output[0] == f"nox > Running session {session}", output
    assert not output[1].startswith("nox > "), output  # relgate speaks next


def test_a_project_lanes_list_names_the_command_that_runs_it(tinyinfer: Project) -> None:
    done = tinyinfer.nox("lane", extra=("--", "quality", "--list"), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "e.g. nox -s lane -- quality quality-score" in done.stdout, done.stdout  # not `nox -s quality`
