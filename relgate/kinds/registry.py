"""The kinds relgate knows, in the order detection prefers. Adding a kind is one package in
relgate/kinds/ and one import and one entry here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from relgate.kinds.base import ProjectKind
from relgate.kinds.cargo import CARGO
from relgate.kinds.cmake import CMAKE
from relgate.kinds.make import MAKE
from relgate.kinds.python import PYTHON

__all__ = ["DEFAULT_KIND", "detect_kinds", "kind_choices", "kind_names", "kind_of", "kinds"]

#: name → adapter, in detection order (init names what it found in this order)
REGISTRY: dict[str, ProjectKind] = {k.name: k for k in (CARGO, CMAKE, MAKE, PYTHON)}

#: a project.toml without project.kind is a make project
DEFAULT_KIND = MAKE.name


def kinds() -> Mapping[str, ProjectKind]:
    """name → adapter, in detection order (cargo, cmake, make, python)."""
    return dict(REGISTRY)


def kind_names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def kind_of(name: str) -> ProjectKind:
    """The adapter of the kind ``name`` (a manifest's project.kind is checked against kind_names first)."""
    return REGISTRY[name]


def kind_choices() -> tuple[str, ...]:
    """The kinds as a manifest's choices list them: the default first, then detection order."""
    return (DEFAULT_KIND, *(n for n in REGISTRY if n != DEFAULT_KIND))


def detect_kinds(root: Path) -> list[tuple[str, str]]:
    """(kind, the file that says so) for every kind ``root`` holds, in the registry's order."""
    found = []
    for kind in REGISTRY.values():
        name = next((n for n in kind.marker_files if (Path(root) / n).is_file()), None)
        if name is not None:
            found.append((kind.name, name))
    return found
