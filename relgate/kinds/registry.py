"""The kinds relgate knows, in the order detection prefers: importing a kind's module registers it.
Adding a kind is one module in relgate/kinds/ and one import line here."""

from __future__ import annotations

from collections.abc import Mapping

import relgate.kinds.cargo  # noqa: F401  (each kind's module registers itself)
import relgate.kinds.cmake  # noqa: F401
import relgate.kinds.make  # noqa: F401
import relgate.kinds.python  # noqa: F401
from relgate.kinds.base import REGISTRY, ProjectKind
from relgate.kinds.make import MAKE

__all__ = ["DEFAULT_KIND", "kind_choices", "kind_names", "kind_of", "kinds"]

#: a project.toml without project.kind is a make project
DEFAULT_KIND = MAKE.name


def kinds() -> Mapping[str, ProjectKind]:
    """name → adapter, in registration order (cargo, cmake, make, python: the order detection prefers)."""
    return dict(REGISTRY)


def kind_names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def kind_of(name: str) -> ProjectKind:
    """The adapter of the kind ``name`` (a manifest's project.kind is checked against kind_names first)."""
    return REGISTRY[name]


def kind_choices() -> tuple[str, ...]:
    """The kinds as a manifest's choices list them: the default first, then detection order."""
    return (DEFAULT_KIND, *(n for n in REGISTRY if n != DEFAULT_KIND))
