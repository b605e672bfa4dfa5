"""Every stage, in the order ``relgate --help`` lists their commands (importing the declaring
modules fills :mod:`relgate.stages.registry`; each imports its engine only inside ``run``), and
the one parser of their options that the CLI and the sessions both read."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Each declaring module registers its stages on import, in this order (`relgate --help` lists them so).
import relgate.stages.host  # noqa: F401,I001
import relgate.stages.package  # noqa: F401
import relgate.stages.records  # noqa: F401
import relgate.stages.signoff  # noqa: F401
import relgate.stages.tools  # noqa: F401
from relgate import __version__
from relgate.stages.registry import Stage, registered

if TYPE_CHECKING:
    from relgate.manifest.workspace import Workspace

__all__ = ["stages", "get", "parser", "load"]


def stages() -> dict[str, Stage]:
    """Every stage, by name."""
    return registered()


def get(name: str) -> Stage:
    """The stage ``name`` (a KeyError for a name nothing registered: a programming error)."""
    return registered()[name]


class _Unused:
    """Stands in for the parser of a command this invocation does not name: building every
    command's parser (two dozen, with their help texts) cost more than running one."""

    def __getattr__(self, name: str) -> Callable[..., _Unused]:
        return lambda *args, **kwargs: self


class _Only:
    """The subparsers action, registering only the command named ``only`` (all with None)."""

    def __init__(self, sub: argparse._SubParsersAction, only: str | None) -> None:  # type: ignore[type-arg]
        self._sub, self._only = sub, only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self._only is None or name == self._only:
            return self._sub.add_parser(name, **kwargs)
        return _Unused()


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, just that command's parser under the global options."""
    p = argparse.ArgumentParser(prog="relgate", description="Release qualification: an executable runbook.")
    p.add_argument("--version", action="version", version=f"relgate {__version__}")
    p.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace folder (default: cwd)")
    p.add_argument("--manifests", type=Path, help="manifest folder (default: $RELGATE_MANIFESTS or ./manifests)")
    p.add_argument("--hosts", type=Path, help="host folder (default: $RELGATE_HOSTS or ./hosts)")
    p.add_argument("--home", type=Path, help="ledger home (default: $RELGATE_HOME or ./.relgate)")
    sub: Any = _Only(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), only)
    for stage in stages().values():
        parser = sub.add_parser(stage.name, help=stage.description)
        if not isinstance(parser, _Unused):
            stage.options(parser)
    return p


def load(args: argparse.Namespace) -> Workspace:
    """The workspace the global options name."""
    from relgate.manifest.workspace import Workspace

    return Workspace.load(args.workspace, manifests=args.manifests, hosts=args.hosts, home=args.home)
