"""Keep secrets out of logs and the ledger (tox ``util/redact.py`` habit).

Over-redaction is reversible, a leaked token is not: any variable whose name looks
secret has its value hidden, wherever that value shows up.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence

__all__ = ["display_command", "MASK", "is_secret_name", "redact_env", "redact_argv", "argv_secrets", "shell_secrets", "Redactor"]

MASK = "***"
_SECRET_NAME = re.compile(r"TOKEN|PASSWORD|PASSWD|SECRET|KEY|CREDENTIAL|AUTH", re.IGNORECASE)
# --token=abc, --api-key=abc, password=abc, HF_TOKEN=abc ("name: value" is left alone:
# it would eat compiler locations such as "src/keys.c:12:3").
_INLINE = re.compile(
    r"(?P<name>(?:--?)?[A-Za-z0-9_-]*(?:token|password|passwd|secret|key|credential|auth)[A-Za-z0-9_-]*)"
    r"(?P<sep>=)(?P<value>[^\s'\"&;]+)",
    re.IGNORECASE,
)
_MIN_SECRET = 6  # shorter values ("1", "yes") would redact half of every log


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def _walk_argv(argv: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """Each argument as it may be shown, and the secret values it carries."""
    hide_next = False
    for arg in argv:
        if hide_next:
            hide_next = False
            yield MASK, [arg]
        elif arg.startswith("-") and "=" not in arg and is_secret_name(arg):
            hide_next = True  # `--token abc`: the next argument is the secret
            yield arg, []
        else:
            yield (_INLINE.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", arg),
                   [m["value"] for m in _INLINE.finditer(arg)])


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``--token=abc`` → ``--token=***``; ``--token abc`` → ``--token ***``."""
    return [shown for shown, _ in _walk_argv(argv)]


def argv_secrets(argv: Sequence[str]) -> list[str]:
    """The values :func:`redact_argv` hides, so output that echoes them can be hidden too."""
    return [value for _, values in _walk_argv(argv) for value in values]


def shell_secrets(command: str) -> list[str]:
    """:func:`argv_secrets` of a shell string's words (none when it does not split).

    ``;``, ``&&``, ``|`` and redirections are words of their own, so ``--password abc;``
    yields ``abc``, not ``abc;``."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return argv_secrets(list(lexer))
    except ValueError:
        return []


def display_command(*, argv: Sequence[str] | None = None, shell: str | None = None) -> str:
    """A command as a person would type it, with the secrets it carries hidden."""
    if shell is not None:
        return Redactor(shell_secrets(shell))(shell)
    return shlex.join(redact_argv(argv or ()))


class Redactor:
    """Hides known secret values and ``name=value`` secrets in free text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True)
        self._values = re.compile("|".join(re.escape(v) for v in values)) if values else None

    @classmethod
    def from_env(cls, *envs: Mapping[str, str]) -> "Redactor":
        return cls(v for env in envs for k, v in env.items() if is_secret_name(k))

    def __call__(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(MASK, text)
        if "=" in text:
            text = _INLINE.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", text)
        return text
