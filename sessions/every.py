"""Every session, in the order `nox -l` lists them, and nox's defaults for them: what relgate's
own noxfile registers, and what the noxfile `relgate init` writes registers where relgate was
installed from a wheel (this layer ships there as ``relgate_sessions``)."""

from __future__ import annotations

import nox

# Each module registers its sessions; the modules import the engine inside each session
# function, so listing imports none of it.
from . import evidence, host, lanes, package, signoff  # noqa: F401,I001

nox.options.default_venv_backend = "none"
nox.options.sessions = ["host"]
