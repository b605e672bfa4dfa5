"""What every run reads first, kept on the workspace's memo: the candidate's git facts and
each local host's detection (nvidia-smi, nvcc). :func:`start_facts` begins them without
waiting, so their processes run while the plan is made and the rest of the engine loads;
the first use waits for them (and raises what they raised)."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING

from relgate.ledger.gitfacts import start_git_facts
from relgate.run.hosts import start_detect_local

if TYPE_CHECKING:
    from relgate.manifest.workspace import Workspace

__all__ = ["git_key", "host_key", "start_facts"]


def git_key(root: Path) -> Hashable:
    return ("git", root)


def host_key(name: str) -> Hashable:
    return ("host", name)


def start_facts(ws: Workspace) -> None:
    """Begin the candidate's git facts and every local host's detection, side by side
    (nothing for what is already known or begun)."""
    root = ws.project.root
    ws.memo.start(git_key(root), lambda: start_git_facts(root))
    for spec in ws.hosts.values():
        if spec.kind == "local":
            ws.memo.start(host_key(spec.name), lambda spec=spec: start_detect_local(spec))
