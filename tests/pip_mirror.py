"""A package index on 127.0.0.1 for every pip the tests start.

The packaging tests run relgate's real pip steps (``python -m build``'s isolated install of
setuptools, the wheelhouse, the lock's resolution, installs from a wheelhouse and from an
index). Against the internet each of those took 15–25 s, most of it pip reading long project
pages; the resolution also changed whenever a dependency released. The mirror holds exactly
what they install — relgate's own lock, the build backend, the pypiserver relgate starts —
downloaded once per machine with the machine's own pip configuration (the one online moment,
in a cache beside the pypiserver venv), then served over HTTP on 127.0.0.1 by each test
process, as a PEP 503 "simple" index. The tests' pip sees only it: ``PIP_INDEX_URL`` points
there, and the machine's other indexes, find-links and constraints are switched off for them.

A distribution missing from the mirror is an error pip names ("No matching distribution");
add it to :data:`WANTS`. Set ``RELGATE_TEST_ONLINE=1`` to run the tests against the machine's
own pip configuration instead.
"""

from __future__ import annotations

import fcntl
import hashlib
import html
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from relgate.package.publish import PYPISERVER  # noqa: E402

#: What the tests' pip may install: relgate's lock (the wheelhouses, the resolution, the
#: sample package's ``pytest``), the build backend of relgate and of the sample package, and
#: the pypiserver relgate runs as a local index.
WANTS = ("setuptools>=68", PYPISERVER)

#: The variables that make pip see the mirror and nothing else.
def pip_env(url: str) -> dict[str, str]:
    return {"PIP_INDEX_URL": url, "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": "",
            "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _requirements() -> list[str]:
    lock = [line.strip() for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines()]
    return [line for line in lock if line and not line.startswith("#")] + list(WANTS)


def ensure(cache: Path) -> Path:
    """The mirror's folder for this lock and this Python (``files/`` and ``simple/``), made once
    per machine: downloaded aside, indexed, renamed into place, under a lock that the test
    processes of one run share."""
    wanted = _requirements()
    digest = hashlib.sha256("\n".join([sys.version, sys.platform, *wanted]).encode()).hexdigest()[:16]
    folder = cache / f"pip-mirror-{digest}"
    if (folder / "simple").is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "pip-mirror.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if (folder / "simple").is_dir():
            return folder
        aside = Path(tempfile.mkdtemp(prefix=".pip-mirror-", dir=cache))
        try:
            reqs = aside / "requirements.txt"
            reqs.write_text("\n".join(wanted) + "\n", encoding="utf-8")
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                                   "--quiet", "--dest", str(aside / "files"), "-r", str(reqs)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError("cannot fill the tests' package mirror: pip download failed:\n"
                                   + done.stderr[-3000:])
            _index(aside)
            os.rename(aside, folder)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
    return folder


def _project_of(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return canonicalize_name(parse_wheel_filename(filename)[0])
        return canonicalize_name(parse_sdist_filename(filename)[0])
    except ValueError:
        return None


def _index(folder: Path) -> None:
    """``simple/<project>/index.html`` for every file in ``files/`` (PEP 503, with sha256)."""
    projects: dict[str, list[str]] = {}
    for path in sorted((folder / "files").iterdir()):
        name = _project_of(path.name)
        if name is None:
            raise RuntimeError(f"the tests' package mirror: {path.name} is neither a wheel nor an sdist")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        projects.setdefault(name, []).append(
            f'<a href="../../files/{html.escape(path.name)}#sha256={sha}">{html.escape(path.name)}</a><br>')
    for name, links in projects.items():
        page = folder / "simple" / name / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n", encoding="utf-8")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``folder`` on 127.0.0.1 (a free port) from a daemon thread; the index's URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="pip-mirror", daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/simple/"
