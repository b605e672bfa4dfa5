"""relgate's sessions. Thin: the engine lives in relgate/, the sessions in sessions/.

    nox -s host gate contract     the host checks, then the gate and contract lanes
    nox -s record -- TARGET       record lane: only the named targets, one at a time
    nox -s qualification -- TOOL  one run per board and toolkit
    nox -s evidence               this commit's evidence against the last accepted baseline
    nox -s package_verify         build the package from the commit, extract, inspect, test offline
    nox -s publish_dry_run        rehearse the publish (locked dry run / local index upload)
    nox -s compare -- --previous REF   previous release against the candidate, interleaved
    nox -s signoff                the checklist for the candidate: signoff.md/.html/.json, changelog
    nox -s tag                    the release tag, only for a complete sign-off
    nox -l                        every session, with what it does

Options after --: target names, --require-all, --reuse, --report FILE.json, --junit FILE.xml.
RELGATE_MANIFESTS=DIR selects another manifest folder, RELGATE_HOSTS another host folder,
RELGATE_HOME another ledger home.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

import nox
import nox.virtualenv

sys.path.insert(0, str(Path(__file__).resolve().parent))
# nox logs at DEBUG; paramiko would narrate every packet of a remote run into the output, and
# Fabric's invoke every config file it did not find (a page per connection, seen on the H200 run),
# matplotlib (the sign-off's charts) every font it scored.
for _name in ("paramiko", "invoke", "fabric", "matplotlib", "PIL"):
    logging.getLogger(_name).setLevel(logging.WARNING)

# Before every session nox asks about uv, even for one that makes no environment
# (nox/virtualenv.py: SessionRunner._create_venv -> get_virtualenv -> _optional_venvs ->
# OPTIONAL_VENVS -> find_uv, which runs `uv self version` and, without uv, logs
# "nox > uv binary not found."). Every session here runs with python=False and makes no
# environment: answer from PATH alone (nox reads these attributes before it computes them),
# so a session's output starts with relgate's own lines.
_uv = shutil.which(os.environ.get("UV") or "uv")
nox.virtualenv.HAS_UV, nox.virtualenv.UV = _uv is not None, _uv or "uv"  # type: ignore[attr-defined]
nox.virtualenv.UV_VERSION = nox.virtualenv.version.Version("0")  # type: ignore[attr-defined]  # never asked

import sessions.every  # noqa: E402,F401  (every session, in `nox -l`'s order, and nox's defaults)
