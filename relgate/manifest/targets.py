"""Declared targets of the project under qualification.

Cargo targets come from Cargo.toml (``[[test]]``, ``[[bench]]``, ``[[example]]``,
``[[bin]]``, auto-discovered ones unless ``autotests``/``autobenches`` say no); make and
python targets are declared in the lanes manifest (``[target.NAME]`` with a path and a
command). A :class:`Target` keeps what was declared even when it is wrong (no name, a
missing file): the lane census reports those, it does not crash on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relgate.core.record import record
from relgate.kinds.base import ProjectKind
from relgate.manifest.specs import CommandSpec

__all__ = ["Target", "TARGET_KINDS", "project_targets"]

TARGET_KINDS = ("test", "bench", "example", "bin", "command")


@record
class Target:
    name: str | None  # None: declared without a name (a census violation)
    path: str | None  # relative to the project root, "/"-separated; None: no path declared
    kind: str  # one of TARGET_KINDS; "command" for make/python targets
    required_features: tuple[str, ...] = ()
    harness: bool = True
    command: CommandSpec | None = None  # make/python: declared; cargo: derived per lane
    origin: str = ""  # where it was declared, for messages: "Cargo.toml [[test]] #2"
    auto: bool = False  # found by cargo's auto-discovery, not declared


def project_targets(kind: ProjectKind, root: Path) -> list[Target]:
    """The targets the project's own manifest declares (a crate's Cargo.toml), as the kind's adapter reads them."""
    found: Any = kind.project_targets(root) or ()
    return [Target(name=t.name, path=t.path, kind=t.kind, required_features=t.required_features, harness=t.harness,
                   origin=t.origin, auto=t.auto) for t in found]
