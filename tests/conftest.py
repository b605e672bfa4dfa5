"""Shared fixtures: real git repositories holding a copy of a bundled example."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
NOXFILE = REPO / "noxfile.py"

# Every relgate the tests start (nox sessions, `python -m relgate.cli`) is this checkout's,
# whichever checkout `pip install -e` pointed at.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

#: Tools relgate keeps between runs (the pypiserver venv) and the tests' package mirror: one
#: per machine.
CACHE = Path(os.environ.get("RELGATE_TEST_CACHE") or Path("/tmp") / f"relgate-test-cache-{os.getuid()}")

# Every Python the tests start keeps its bytecode in one folder outside the trees it runs in:
# the hundreds of relgate and nox processes compile this checkout's modules once instead of
# each time (a machine with PYTHONDONTWRITEBYTECODE set compiled them in every process), and
# no copied project, package or repository gains a __pycache__/. The walkthrough test drops
# both, as a user's shell has neither.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files that take longest start first, so that no worker is left with one of them at
    the end (xdist runs each file on one worker; pyproject.toml turns off its own reordering,
    which starts the files with the most tests first). A file says how long it takes with a
    module-level ``FILE_SECONDS`` — a scheduling hint measured on a 2-core machine, never
    asserted; files without one keep their order after those with one."""
    def seconds(item: pytest.Item) -> float:
        return -float(getattr(item.module, "FILE_SECONDS", 0)) if isinstance(item, pytest.Function) else 0.0

    items.sort(key=seconds)  # stable: within a file, and among the rest, collection order stays


@pytest.fixture(scope="session", autouse=True)
def pip_mirror():  # noqa: ANN201
    """Every pip the tests start reads a package index on 127.0.0.1 (tests/pip_mirror.py)."""
    if os.environ.get("RELGATE_TEST_ONLINE"):
        yield None
        return
    import pip_mirror as mirror

    server, url = mirror.serve(mirror.ensure(CACHE))
    env = mirror.pip_env(url)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield url
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.shutdown()
        server.server_close()


def typed(root: Path, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """A command in ``root`` with no RELGATE_* variables: what a person types there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELGATE_")} | {"NO_COLOR": "1"}
    return subprocess.run(list(argv), cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def relgate_typed(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``relgate ARGS`` typed in ``root`` (see :func:`typed`)."""
    return typed(root, sys.executable, "-m", "relgate.cli", *args)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def wait_for(predicate, bound: float = 60.0) -> bool:  # noqa: ANN001
    """Poll ``predicate`` until it holds or ``bound`` seconds pass. The bound only turns a hang
    into a failure; it is never a measurement."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def pid_gone(pid: int) -> bool:
    """Whether ``pid`` has ended: no such process, or a zombie (dead, waiting to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True  # gone between the two looks


@dataclass
class Project:
    """A copy of an example in its own git repo, with its own manifests, hosts and ledger."""

    root: Path
    manifests: Path
    hosts: Path
    home: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "RELGATE_MANIFESTS": str(self.manifests), "RELGATE_HOSTS": str(self.hosts),
                "RELGATE_HOME": str(self.home), "NO_COLOR": "1"}

    def commit(self, message: str = "change") -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)
        return git(self.root, "rev-parse", "HEAD").strip()

    def nox(self, *sessions: str, extra: tuple[str, ...] = (), timeout: int = 600) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", *sessions, *extra]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)

    def relgate(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "relgate.cli", *args]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout,
                              cwd=self.root)

    def ledger_steps(self, *status_args: str, timeout: int = 600) -> list[dict[str, Any]]:
        """The ledger's step rows as ``relgate status --json [STATUS_ARGS]`` lists them (it must exit 0)."""
        done = self.relgate("status", "--json", *status_args, timeout=timeout)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["steps"]

    def ledger_rows(self, session: str | None = None, *, timeout: int = 600) -> dict[str, dict[str, Any]]:
        """Step name → its latest row for the project's HEAD (of ``session`` only, when named)."""
        return {r["step"]: r for r in self.ledger_steps(timeout=timeout) if session is None or r["session"] == session}

    def plant(self, relpath: str, anchor: str, line: str) -> int:
        """Insert ``line`` after the unique ``anchor`` line; returns the new line's number."""
        path = self.root / relpath
        text = path.read_text()
        assert text.count(anchor + "\n") == 1, f"{relpath}: anchor not unique"
        text = text.replace(anchor + "\n", anchor + "\n" + line + "\n")
        path.write_text(text)
        return text.splitlines().index(line) + 1


def copy_example(tmp_path: Path, name: str = "tinyinfer") -> Project:
    """Copy ``examples/NAME`` and the default manifests into a fresh git repository."""
    root = tmp_path / name
    shutil.copytree(EXAMPLES / name, root, ignore=shutil.ignore_patterns("build", "target"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    if (root / "manifests").is_dir():  # an example that carries its own manifest folder
        manifests, hosts = root / "manifests", copy_hosts(tmp_path)
    else:
        manifests, hosts = bundled_manifests(tmp_path, root)
    return Project(root=root, manifests=manifests, hosts=hosts, home=tmp_path / "home")


def copy_hosts(tmp_path: Path) -> Path:
    """A copy of relgate's ``hosts/`` folder under ``tmp_path``."""
    hosts = tmp_path / "hosts"
    shutil.copytree(REPO / "hosts", hosts)
    return hosts


def bundled_manifests(tmp_path: Path, root: Path) -> tuple[Path, Path]:
    """Copies of relgate's default manifests (pointed at ``root``, a tinyinfer tree) and hosts
    under ``tmp_path``: ``(manifests, hosts)``."""
    manifests = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests", manifests)
    project = manifests / "project.toml"
    project.write_text(project.read_text().replace('root = "../examples/tinyinfer"', f'root = "{root}"'))
    return manifests, copy_hosts(tmp_path)


@pytest.fixture
def tinyinfer(tmp_path: Path) -> Project:
    return copy_example(tmp_path, "tinyinfer")


@pytest.fixture
def scankern(tmp_path: Path) -> Project:
    return copy_example(tmp_path, "scankern")


def ledger_of(project: Project):  # type: ignore[no-untyped-def]
    from relgate.ledger.store import Ledger

    return Ledger.open(project.home)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


# --- speed verdicts measured on this machine: any verdict may come out, its exit code may not ---

#: The exit code of ``measure compare`` / ``nox -s compare`` for the board verdicts it printed,
#: worst first (README: "exit 0 pass or slower, 1 block, 3 rerun, 4 undecided").
SPEED_EXITS = (("block", 1), ("rerun", 3), ("undecided", 4))


def speed_exit(output: str) -> int:
    """What a compare that printed ``output`` must exit with: timings here are real, so the
    verdict is whatever this machine measured, and the exit code is pinned to it."""
    words = re.findall(r"^\S+ on [^\n]+?: ([a-z]+)", output, re.MULTILINE)
    assert words, f"no board verdict in:\n{output}"
    return next((code for word, code in SPEED_EXITS if word in words), 0)


def aa_exit(output: str) -> int:
    """What an A/A compare that printed ``output`` must exit with: 1 when a row of identical code
    came out slower or blocked (the board's summary counts them), else 0."""
    summaries = re.findall(r"^  \d+ rows? × \d+ metrics?: ([^\n]*)", output, re.MULTILINE)
    assert summaries, f"no A/A summary in:\n{output}"
    return 1 if any(re.search(r"\b\d+ (slower|block)\b", s) for s in summaries) else 0
