"""Paths ``relgate init`` reads or writes: never through a symlink that leaves the folder they
belong to (the repository, or the manifest folder a person named). A symlinked ``Cargo.toml``,
``.gitignore``, ``manifests/`` or ``hosts/`` pointing elsewhere is refused with one line."""

from __future__ import annotations

from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.schema import display_path

__all__ = ["inside"]


def inside(base: Path, path: Path, what: str, *, verb: str = "reads") -> Path:
    """``path`` when it (every symlink on the way followed) stays inside ``base``; else an
    :class:`InputError`. ``path`` need not exist (its existing part is followed)."""
    try:
        real_base = Path(base).resolve()
        real = Path(path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InputError(f"{display_path(path)}: cannot follow {what}: {exc}") from None
    if real != real_base and real_base not in real.parents:
        raise InputError(f"{display_path(path)}: {what} leads to {real}, outside {display_path(base)} (a symlink): "
                         f"relgate init never {verb} through it")
    return path
