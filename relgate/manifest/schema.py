"""Read TOML apart from validating it (build's ``_builder.py`` habit).

``read_toml`` turns a file into a mapping (syntax errors name file, line and column);
``Checker`` walks a mapping and collects one message per problem, each naming the file
and the dotted key. Nothing here raises until :meth:`Checker.raise_if_problems`, so a
person sees every problem at once.
"""

from __future__ import annotations

import errno
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError, ManifestError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["read_text", "loads_toml", "read_toml", "Checker", "display_path", "did_you_mean"]

_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_END = "(at end of document)"


def display_path(path: Path) -> str:
    """A path as a person wants to read it: relative to the cwd when below it."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (pathlib on 3.11)
        return str(path)


def read_text(path: Path, shown: str | None = None) -> str:
    """A UTF-8 file's text; every failure is an :class:`InputError` naming the file."""
    shown = shown or display_path(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{shown}: a symlink loop, not a file") from None
        raise InputError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{shown}: not UTF-8 (byte {exc.start})") from None


def loads_toml(text: str, shown: str) -> dict[str, Any]:
    """tomllib, with a syntax error worded ``file:LINE:COL: TOML syntax error: …``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        pos = _TOML_POS.search(msg)
        if pos:
            reason = _TOML_POS.sub("", msg).strip()
            raise InputError(
                f"{shown}:{pos.group(1)}:{pos.group(2)}: TOML syntax error: {reason}"
            ) from None
        if _TOML_END in msg:  # tomllib names no line here: point at the end of the file
            lines = text.split("\n")
            reason = msg.replace(_TOML_END, "").strip()
            raise InputError(
                f"{shown}:{len(lines)}:{len(lines[-1]) + 1}: TOML syntax error: {reason} (at end of file)"
            ) from None
        raise InputError(f"{shown}: TOML syntax error: {msg}") from None


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file; every failure is an :class:`InputError` naming the file."""
    shown = display_path(path)
    return loads_toml(read_text(path, shown), shown)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib  # only a bad name pays for it

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f' — did you mean "{close[0]}"?' if close else ""


_TYPE_NAMES = {str: "a string", bool: "true or false", int: "an integer", float: "a number",
               list: "an array", dict: "a table"}


class Checker:
    """Collects problems for one file; each message is ``file: dotted.key: what``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.shown = display_path(path)
        self.problems: list[str] = []

    # -- reporting -------------------------------------------------------------
    def problem(self, key: str, message: str) -> None:
        where = f"{self.shown}: {key}: " if key else f"{self.shown}: "
        self.problems.append(where + message)

    def raise_if_problems(self) -> None:
        if self.problems:
            raise ManifestError(self.problems)

    # -- structure ---------------------------------------------------------------
    def keys(self, table: Mapping[str, Any], prefix: str, allowed: Iterable[str],
             required: Iterable[str] = ()) -> None:
        """Reject unknown keys (with a did-you-mean) and report missing required ones."""
        allowed = set(allowed)
        for key in table:
            if key not in allowed:
                self.problem(_join(prefix, key), "unknown key" + did_you_mean(key, allowed))
        for key in required:
            if key not in table:
                self.problem(_join(prefix, key), "missing (required)")

    def get(self, table: Mapping[str, Any], prefix: str, key: str, kind: type | tuple[type, ...],
            default: Any = None) -> Any:
        """The value at ``key`` if it has the right type, else ``default`` (problem noted)."""
        if key not in table:
            return default
        value = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            wanted = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
            self.problem(_join(prefix, key), f"expected {wanted}, got {_describe(value)}")
            return default
        return value

    def text(self, table: Mapping[str, Any], prefix: str, key: str, default: Any = None) -> Any:
        """A string that is not empty or blank (``""`` is reported, and ``default`` returned)."""
        value = self.get(table, prefix, key, str, default)
        if key in table and isinstance(table[key], str) and not value.strip():
            self.problem(_join(prefix, key), "must not be empty")
            return default
        return value

    def seconds(self, table: Mapping[str, Any], prefix: str, key: str) -> float | None:
        """A positive, finite number of seconds (``nan`` and ``inf`` are no timeout)."""
        value = self.get(table, prefix, key, (int, float))
        if value is None:
            return None
        if not math.isfinite(value):
            self.problem(_join(prefix, key), f"must be a finite number of seconds, got {value}")
            return None
        if value <= 0:
            self.problem(_join(prefix, key), "must be a positive number of seconds")
            return None
        return float(value)

    def string_list(self, table: Mapping[str, Any], prefix: str, key: str, *, blank: bool = True) -> list[str]:
        value = self.get(table, prefix, key, list, [])
        out: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, str) and not blank and not item.strip():
                self.problem(f"{_join(prefix, key)}[{i}]", "must not be empty")
            elif isinstance(item, str):
                out.append(item)
            else:
                self.problem(f"{_join(prefix, key)}[{i}]", f"expected a string, got {_describe(item)}")
        return out

    def string_map(self, table: Mapping[str, Any], prefix: str, key: str) -> dict[str, str]:
        value = self.get(table, prefix, key, dict, {})
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, str):
                out[k] = v
            else:
                self.problem(_join(_join(prefix, key), k), f"expected a string, got {_describe(v)}")
        return out

    def choice(self, table: Mapping[str, Any], prefix: str, key: str, choices: Iterable[str],
               default: str | None = None) -> str | None:
        value = self.get(table, prefix, key, str)
        if value is None:
            return default
        choices = list(choices)
        if value not in choices:
            listed = ", ".join(f'"{c}"' for c in choices)
            self.problem(_join(prefix, key),
                         f'unknown value "{value}"{did_you_mean(value, choices)} (one of {listed})')
            return default
        return value

    def tables(self, data: Mapping[str, Any], prefix: str, key: str) -> dict[str, dict[str, Any]]:
        """A table of tables (``[release.cpu]``), wrong-typed entries reported."""
        value = self.get(data, prefix, key, dict, {})
        out: dict[str, dict[str, Any]] = {}
        for name, sub in value.items():
            if isinstance(sub, dict):
                out[name] = sub
            else:
                self.problem(_join(_join(prefix, key), name), f"expected a table, got {_describe(sub)}")
        return out

    def array_of_tables(self, data: Mapping[str, Any], prefix: str, key: str) -> dict[int, dict[str, Any]]:
        """Index → table for an array of tables; a wrong-typed entry is reported and left out
        (so its keys are not reported missing as well), the others keep their own index."""
        value = self.get(data, prefix, key, list, [])
        out: dict[int, dict[str, Any]] = {}
        for i, sub in enumerate(value):
            if isinstance(sub, dict):
                out[i] = sub
            else:
                self.problem(f"{_join(prefix, key)}[{i}]", f"expected a table, got {_describe(sub)}")
        return out


def _join(prefix: str, key: str) -> str:
    if not prefix:
        return _quote_key(key)
    return f"{prefix}.{_quote_key(key)}"


def _quote_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'the string "{value}"' if len(value) < 40 else "a string"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__
