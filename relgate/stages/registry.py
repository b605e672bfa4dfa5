"""The one registry of stages: each command the CLI offers and each session runs is declared
once here — its name, its description, its options and ``run(workspace, options, out) ->
Outcome`` — and the CLI and the sessions read it (nox's registry is the model: one decorator
fills one dict; a name registered twice is an error).

Only this module and the declaring modules (:mod:`relgate.stages.catalog` imports them) are
imported to list or parse: each stage imports its engine inside ``run``, so ``relgate init``
pays for none of the lanes' code.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import IO, Any, Protocol

from relgate.core.record import record

__all__ = ["Outcome", "Stage", "stage", "registered", "NO_OPTIONS"]


class _Summary(Protocol):
    def ok(self, *, require_all: bool = ...) -> bool: ...


@record
class Outcome:
    """What a stage ends with: the exit code (0 green, 1 red, 2 bad input, 3/4 a measuring
    stage's rerun-needed/undecided)."""

    code: int

    @classmethod
    def of(cls, summary: _Summary | None, *, require_all: bool = False) -> Outcome:
        """The one mapping of a run's summary to an exit code: 0 when it is green (None: it
        only listed), 1 otherwise."""
        return cls(code=0 if summary is None or summary.ok(require_all=require_all) else 1)


Workspace = Callable[[], Any]  # loads the workspace when the stage needs it (init and schema never do)
Run = Callable[[Workspace, argparse.Namespace, IO[str]], Outcome]


def NO_OPTIONS(parser: argparse.ArgumentParser) -> None:  # noqa: N802
    """A stage that takes no options."""


@record
class Stage:
    name: str  # the command: relgate NAME
    description: str  # relgate --help, and the session's description where it has one
    options: Callable[[argparse.ArgumentParser], None]  # declares its options on a parser
    run: Run


_STAGES: dict[str, Stage] = {}


def stage(name: str, description: str, options: Callable[[argparse.ArgumentParser], None] = NO_OPTIONS
          ) -> Callable[[Run], Run]:
    """Register ``run`` as the stage ``name``; a name registered twice is an error."""

    def register(run: Run) -> Run:
        if name in _STAGES:
            raise ValueError(f"stage {name!r} is registered twice ({_STAGES[name].run.__module__} and "
                             f"{run.__module__})")
        _STAGES[name] = Stage(name=name, description=description, options=options, run=run)
        return run

    return register


def registered() -> dict[str, Stage]:
    """The stages registered so far, in the order they were (:func:`relgate.stages.catalog.stages`
    imports every declaring module first)."""
    return _STAGES
