"""The ``relgate`` command line: one command per stage of :mod:`relgate.stages.registry`, its options
declared by the stage. Errors are rendered here, once, one line each."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from relgate.core.errors import guarded
from relgate.stages.catalog import load, stages
from relgate.stages.catalog import parser as _parser

__all__ = ["main", "guarded"]


_VALUED = ("--workspace", "--manifests", "--hosts", "--home")  # the global options that take a value
_COMMAND_NAMES = frozenset(stages())  # read from the registry: the one list of commands


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, read as argparse reads the global options before it
    (``--opt VALUE``, ``--opt=VALUE``, unique abbreviations); None for anything else
    (``--help``, ``--version``, an unknown option, no command), which gets the whole parser."""
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            return arg if arg in _COMMAND_NAMES else None
        name = arg.partition("=")[0]
        if not name.startswith("--") or len(name) < 3:  # -h, --, another short option
            return None
        matches = [o for o in (*_VALUED, "--version", "--help") if o.startswith(name)]
        if len(matches) != 1 or matches[0] not in _VALUED:
            return None
        if "=" not in arg:
            next(args, None)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(_command_of(argv)).parse_args(argv)
    args.argv = sys.argv  # what the ledger records as the run's command line
    stage = stages()[args.command]
    return guarded(lambda: stage.run(lambda: load(args), args, sys.stdout).code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
