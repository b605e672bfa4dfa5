"""README's "Qualify your own project": its shell blocks, read from the README and run exactly
as written, in order, on a scratch crate — with a real sshd on 127.0.0.1 as the box of step 5."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap

import pytest
from sshd_support import sshd_missing, start_sshd

from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None or sshd_missing() is not None,
                                reason=f"needs cargo and sshd ({sshd_missing()})")


def walkthrough_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Qualify your own project\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(body) for body in re.findall(r"^ *```sh\n(.*?)^ *```\n", section, re.M | re.S)]


def test_the_readme_walkthrough_runs_as_written(tmp_path):
    blocks = walkthrough_blocks()
    assert len(blocks) == 9, blocks
    box = start_sshd(tmp_path / "sshd")
    # A user's shell: no RELGATE_ settings, and Python writes bytecode beside the source (nox's
    # import of the noxfile leaves __pycache__/ there; a `git add -A` must not commit it).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RELGATE_") and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env.update(NO_COLOR="1", BOX_ADDRESS=box.address, BOX_PORT=str(box.port), BOX_USER=box.user,
               BOX_KEY=str(box.client_key), BOX_WORKDIR=str(box.dir / "work"),
               GIT_AUTHOR_NAME="A. Maintainer", GIT_AUTHOR_EMAIL="a@example.invalid",
               GIT_COMMITTER_NAME="A. Maintainer", GIT_COMMITTER_EMAIL="a@example.invalid")
    outputs: list[tuple[int, str]] = []
    try:
        for i, block in enumerate(blocks):
            cwd = tmp_path if i == 0 else tmp_path / "scratch"
            done = subprocess.run(["bash", "-e", "-c", block], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=900)
            outputs.append((done.returncode, done.stdout + done.stderr))
            _expect(i, *outputs[-1])
    finally:
        box.stop()


def _passed(out: str, step: str) -> bool:
    return any(line.split()[:2] == [step, "pass"] for line in out.splitlines())


def _expect(i: int, code: int, out: str) -> None:
    tail = f"block {i + 1} (exit {code}):\n{out[-4000:]}"
    if i == 0:
        assert code == 0, tail
    elif i == 1:  # init
        assert code == 0, tail
        assert "read with cargo metadata" in out and "wrote manifests/lanes.toml" in out, tail
    elif i == 2:  # check: valid manifests, the plan, and the census naming the target without a lane
        assert code == 1, tail
        assert "project scratch 0.1.0 (cargo)" in out, tail
        assert [line.split()[:2] for line in out.splitlines() if "unassigned" in line] == [["unassigned", "smoke"]], \
            tail
    elif i == 3:  # nox -s host
        assert code == 0, tail
        for step in ("lane-census", "release", "unit", "git-diff-check"):
            assert _passed(out, step), (step, tail)
    elif i == 4:  # the gate target on the box, over SSH
        assert code == 0, tail
        assert any(line.split()[:3] == ["gate", "smoke", "pass"] and line.rstrip().endswith("[box]")
                   for line in out.splitlines()), tail  # it ran there, not here
    elif i == 5:  # measurements within the policy
        assert code == 0, tail
        assert "speed" in out, tail
    elif i == 6:  # package verified; the sign-off still open
        assert code == 1, tail
        assert "Session package_verify was successful" in out, tail
        assert "ci-green" in out and "maintainer-approval" in out, tail
    elif i == 7:  # tag refused
        assert code == 1, tail
        assert "ci-green" in out, tail
    elif i == 8:  # attested: complete, tagged
        assert code == 0, tail
        assert "sign-off of scratch 0.1.0 at" in out and ": complete" in out, tail
        assert "tagged v0.1.0 at" in out and "v0.1.0" in out.splitlines(), tail
