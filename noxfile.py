"""relgate's sessions. Thin: the engine lives in relgate/, the sessions in sessions/.

    nox -s host            the host checks (warning-free builds, tests, git diff --check)
    nox -l                 every session, with what it does

RELGATE_MANIFESTS=DIR selects another manifest folder, RELGATE_HOSTS another host folder,
RELGATE_HOME another ledger home.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions.host import host  # noqa: E402,F401  (registers the session)

nox.options.default_venv_backend = "none"
nox.options.sessions = ["host"]
