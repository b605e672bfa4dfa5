"""One exception base for everything a user can act on.

Errors are rendered once, by the CLI or the session layer, as one line each
(:func:`guarded`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

__all__ = ["RelgateError", "InputError", "ManifestError", "ExecutionError", "Interrupted", "guarded"]


class RelgateError(Exception):
    """Base of every error relgate reports to a person (never a traceback)."""

    exit_code = 1

    def lines(self) -> list[str]:
        """The one-line messages this error renders as."""
        return [str(self)]


class InputError(RelgateError):
    """Bad input: a file, argument or value a person must fix. Exit 2."""

    exit_code = 2


class ManifestError(InputError):
    """One or more problems in manifest files, each naming file and dotted key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))

    def lines(self) -> list[str]:
        return list(self.problems)


class ExecutionError(RelgateError):
    """The harness, a host or the network broke (maps to verdict ``error``)."""


class Interrupted(BaseException):
    """relgate itself was told to stop (SIGTERM/SIGINT) while a command ran. (Not an error
    to render: the CLI turns it into 128 + the signal; it lives here so that the CLI can
    catch it without importing the executor.)"""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def guarded(func: Callable[[], int]) -> int:
    """Run ``func``; a :class:`RelgateError` becomes its lines on stderr and its exit code."""
    try:
        return func()
    except RelgateError as exc:
        for line in exc.lines():
            print(f"relgate: {line}", file=sys.stderr)
        return exc.exit_code
    except Interrupted as exc:
        print(f"relgate: interrupted by {exc}; the running step is recorded as error", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("relgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `relgate status | head`: the reader left, that is fine
        sys.stdout = open(os.devnull, "w")
        return 0
