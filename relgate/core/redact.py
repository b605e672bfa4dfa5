"""Keep secrets out of logs and the ledger (tox ``util/redact.py`` habit).

Over-redaction is reversible, a leaked token is not: any variable whose name looks
secret has its value hidden, wherever that value shows up; so are ``name=value`` pairs
with a secret-looking name, credentials inside URLs (``https://user:pw@host``, a long
token as the user part) and credential headers (``Authorization: Bearer …``,
``X-Api-Key: …``, ``Cookie: …``). A secret with none of these shapes, under a harmless
name, is not caught.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from relgate.core.patterns import LazyPattern

__all__ = ["display_command", "MASK", "is_secret_name", "is_secret_key", "any_secret_key", "redact_env",
           "redact_argv", "argv_secrets", "shell_secrets", "env_secrets", "redact_text", "redact_file", "Redactor"]

MASK = "***"
_SECRET_NAME = re.compile(r"TOKEN|PASSWORD|PASSWD|SECRET|KEY|CREDENTIAL|AUTH", re.IGNORECASE)
# --token=abc, --api-key=abc, password=abc, HF_TOKEN=abc ("name: value" is left alone:
# it would eat compiler locations such as "src/keys.c:12:3").
_INLINE = LazyPattern(
    r"(?P<name>(?:--?)?[A-Za-z0-9_-]*(?:token|password|passwd|secret|key|credential|auth)[A-Za-z0-9_-]*)"
    r"(?P<sep>=)(?P<value>[^\s'\"&;]+)",
    re.IGNORECASE,
)
# Credentials inside a URL: scheme://user:PASSWORD@host, and scheme://TOKEN@host (a long
# user part alone is how GitHub and others pass a token).
_URL = LazyPattern(
    r"(?P<name>\b[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s/@:'\"]*:)?)(?P<sep>)(?P<value>[^\s/@'\"]+)(?=@)")
_URL_USER_ONLY = 16  # shorter user names without a password ("git", "deploy") stay visible
# HTTP headers that carry credentials, as on a curl/wget command line or in a log:
# "Authorization: Bearer VALUE", "X-Api-Key: VALUE", "Cookie: VALUE".
_HEADER = LazyPattern(
    r"(?P<name>\b(?:Authorization|Proxy-Authorization|Cookie|Set-Cookie|"
    r"[A-Za-z0-9-]*(?:token|secret|api-?key|password|auth)[A-Za-z0-9-]*)\s*:\s*"
    r"(?:(?:Bearer|Basic|Token|Digest|Negotiate|token)\s+)?)(?P<sep>)(?P<value>[^\s'\"]+)",
    re.IGNORECASE,
)
# A quoted value after a secret-named key, as JSON, YAML, Python or a shell assignment write it:
# "token": "VALUE", password="VALUE", 'api_key': 'VALUE', secret = 'VALUE'.
_QUOTED = LazyPattern(
    r"(?P<name>[\"']?[A-Za-z0-9_-]*(?:token|password|passwd|secret|key|credential|auth)[A-Za-z0-9_-]*[\"']?"
    r"\s*[:=]\s*(?P<q>[\"']))(?P<sep>)(?P<value>[^\"'\s]+)(?=(?P=q))",
    re.IGNORECASE,
)
# Every name _INLINE, _HEADER and _QUOTED can match holds one of these (lower case).
_WORDS = ("token", "passw", "secret", "key", "credential", "auth", "cookie")
_MIN_SECRET = 6  # shorter values ("1", "yes") would redact half of every log


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


# An evidence cell's key that names a secret: a word password/passwd/passphrase/secret anywhere,
# token/credential(s)/apikey/cookie as the last word, or *_key ("api_key", "ssh-key", "privateKey").
# Narrower than is_secret_name on purpose: a masked cell is not compared, so "tokens_per_s" or
# "keys_checked" must stay evidence.
_KEY_WORDS = LazyPattern(r"[a-z0-9]+")
_CAMEL = LazyPattern(r"(?<=[a-z0-9])(?=[A-Z])")
_ANY_WORD = frozenset({"password", "passwd", "passphrase", "pwd", "secret", "secrets"})
_LAST_WORD = frozenset({"token", "credential", "credentials", "apikey", "cookie"})
_LAST_HINTS = ("token", "key", "credential", "credentials", "cookie")  # what a secret key ends with, or …
_ANY_HINTS = ("passw", "passphrase", "pwd", "secret")  # … holds


def any_secret_key(keys: Iterable[str]) -> bool:
    """Whether :func:`is_secret_key` may hold for one of ``keys``: False is certain, and costs a
    few C-level searches of the keys joined (a diff of 10,000 moved cells asks it once)."""
    joined = "\n".join(keys).lower() + "\n"
    return any(h + "\n" in joined for h in _LAST_HINTS) or any(h in joined for h in _ANY_HINTS)


@lru_cache(maxsize=4096)  # a capture repeats its key names across suites and arms
def is_secret_key(key: str) -> bool:
    """Whether an evidence cell's key names a secret (its value is then stored as ``MASK``)."""
    low = key.lower()
    if not (low.endswith(_LAST_HINTS) or any(hint in low for hint in _ANY_HINTS)):  # most keys: cheaply not
        return False
    words = _KEY_WORDS.findall(_CAMEL.sub("_", key).lower())
    if not words:
        return False
    return (not _ANY_WORD.isdisjoint(words) or words[-1] in _LAST_WORD
            or (words[-1] == "key" and len(words) > 1))


def _url_keep(m: re.Match[str]) -> bool:
    """A URL's user part alone (no password) is a secret only when it is long (a token)."""
    return not m["name"].endswith(":") and len(m["value"]) < _URL_USER_ONLY


def _hide(text: str) -> tuple[str, list[str]]:
    """``text`` with every pattern-found secret masked, and the values masked."""
    values: list[str] = []

    def mask(m: re.Match[str]) -> str:
        values.append(m["value"])
        return f"{m['name']}{m['sep']}{MASK}"

    # The cheap tests first, cheapest first: a URL and _HEADER need a ":" and _INLINE an "="
    # (one memchr each; "://" itself is a slower scan, so only where a ":" is), and _INLINE and
    # _HEADER a secret word (a lower-cased copy and seven scans: most of the cost of redacting
    # bulk output, so skipped where neither separator is there); most text names none.
    equals, colon = "=" in text, ":" in text
    if colon and "://" in text:
        text = _URL.sub(lambda m: m[0] if _url_keep(m) else mask(m), text)
    if not (equals or colon):
        return text, values
    lower = text.lower()
    if not any(word in lower for word in _WORDS):
        return text, values
    if ('"' in text or "'" in text) and (equals or colon):
        text = _QUOTED.sub(lambda m: m[0] if m["value"] == MASK else mask(m), text)
    if equals:
        text = _INLINE.sub(mask, text)
    if colon:
        text = _HEADER.sub(lambda m: m[0] if m["value"] == MASK else mask(m), text)
    return text, values


def redact_text(text: str) -> str:
    """Free text with ``name=value`` secrets, URL credentials and credential headers masked."""
    return _hide(text)[0]


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Secret-named variables masked; any other value has the credentials it carries masked
    (``DB_URL=postgres://u:pw@h/db`` → ``postgres://u:***@h/db``)."""
    return {k: (MASK if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Values to hide wherever they show up: secret-named variables' values, and the
    credentials inside the other values (a URL's password)."""
    out = []
    for k, v in env.items():
        if is_secret_name(k):
            out.append(v)
        elif "://" in v or ":" in v:
            out.extend(_hide(v)[1])
    return out


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
            yield _hide(arg)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``--token=abc`` → ``--token=***``; ``--token abc`` → ``--token ***``; a secret found in one
    argument is hidden in the others too (``sh -c 'echo abc…' x --password=abc…``)."""
    walked = list(_walk_argv(argv))
    values = [value for _, found in walked for value in found]
    if not values:
        return [shown for shown, _ in walked]
    hide = Redactor(values)
    return [hide(shown) for shown, _ in walked]


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
        return cls(v for env in envs for v in env_secrets(env))

    def __call__(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(MASK, text)
        return _hide(text)[0]


def redact_file(path: Path, redact: Redactor) -> None:
    """Rewrite a text file with ``redact`` applied line by line (bounded memory); the file
    is replaced atomically, and left alone when nothing in it needed hiding."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    changed = False
    try:
        with open(path, "rb") as src, os.fdopen(fd, "wb") as out:
            for raw in src:
                line = raw.decode("utf-8", "surrogateescape")
                shown = redact(line)
                changed = changed or shown != line
                out.write(shown.encode("utf-8", "surrogateescape"))
        if changed:
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
