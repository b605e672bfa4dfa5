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
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError, ManifestError
from relgate.core.readers import kind_of
from relgate.core.record import record
from relgate.core.text import line_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["read_text", "loads_toml", "read_toml", "Checker", "display_path", "did_you_mean", "NameRule", "NAME",
           "MAX_SECONDS", "seconds_json_schema", "printable"]

_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_END = "(at end of document)"


def display_path(path: Path) -> str:
    """A path as a person wants to read it: relative to the cwd when below it."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (pathlib on 3.11)
        return str(path)


#: The largest manifest (or lanes file) relgate reads.
MAX_MANIFEST_BYTES = 16 << 20


def read_text(path: Path, shown: str | None = None) -> str:
    """A UTF-8 file's text; every failure is an :class:`InputError` naming the file."""
    shown = shown or display_path(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):  # a FIFO would hang the read
            raise InputError(f"{shown}: {kind_of(st.st_mode)}, not a file")
        if st.st_size > MAX_MANIFEST_BYTES:
            raise InputError(f"{shown}: {st.st_size} bytes, over the {MAX_MANIFEST_BYTES}-byte limit of a manifest")
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
    """tomllib, with a syntax error worded ``file:LINE:COL: TOML syntax error: …`` (and a value
    nested deeper than the parser's recursion can go one line naming the file, not a traceback)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise InputError(f"{shown}: a value is nested too deeply to read (arrays or inline tables inside each "
                         "other hundreds of levels deep)") from None
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


def printable(text: str) -> str:
    """``text`` safe on one console line: control, bidi and other unprintable characters escaped."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


@record
class NameRule:
    """What every name a manifest declares must be — a target, lane, build, check, host, item,
    measure, role, board …: one rule, applied by :class:`Checker` (:meth:`Checker.name`, the keys
    of :meth:`Checker.tables`), and exportable as a JSON Schema string (:meth:`json_schema`).

    ``forbidden`` holds regex character-class bodies written with escapes only, so the same
    text is a Python and an ECMA-262 (JSON Schema) pattern."""

    max_length: int = 200
    forbidden: tuple[tuple[str, str], ...] = (
        (r"\x00", "a NUL byte"),
        (r"\n\r\x85\u2028\u2029", "a line break"),
        (r"\x01-\x09\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f", "a control character"),
        (r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069",
         "a bidirectional-text control (it reorders what a reader sees)"),
        (r"/", '"/" (a name is never a path)'),
    )
    no_dotdot: bool = True  # ".." anywhere in it

    @property
    def pattern(self) -> str:
        body = "".join(chars for chars, _ in self.forbidden)
        return ("^(?!.*\\.\\.)" if self.no_dotdot else "^") + f"[^{body}]{{1,{self.max_length}}}$"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "maxLength": self.max_length, "pattern": self.pattern}

    def problem(self, name: str) -> str | None:
        """Why ``name`` is not a name (one clause), or None when it is one."""
        if not name:
            return "must not be empty"
        for chars, what in self.forbidden:
            found = re.search(f"[{chars}]", name)
            if found:
                return f"is not a name: it holds {what} (character {found.start() + 1}: {printable(found.group())})"
        if self.no_dotdot and ".." in name:
            return 'is not a name: it holds ".."'
        if len(name) > self.max_length:
            return f"is not a name: {len(name)} characters long ({self.max_length} at most)"
        return None


NAME = NameRule()
assert re.compile(NAME.pattern)  # the exported pattern is a valid regex here too

#: The longest a timeout, wait or interval may be (30 days): past it a number is a typo, not a limit.
MAX_SECONDS = 30 * 24 * 3600


def seconds_json_schema(*, zero: bool = False) -> dict[str, Any]:
    """What :meth:`Checker.seconds` accepts, as a JSON Schema (finite is JSON's own rule)."""
    low = {"minimum": 0} if zero else {"exclusiveMinimum": 0}
    return {"type": "number", **low, "maximum": MAX_SECONDS}


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
        self.problems.append(printable(where + message))  # one line, whatever a key or value holds

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

    def line(self, table: Mapping[str, Any], prefix: str, key: str, default: Any = None) -> Any:
        """A string that reaches documents (a title, a version): one line, no control or bidi
        character (:mod:`relgate.core.text`); else ``default``, problem noted."""
        value = self.get(table, prefix, key, str, default)
        if key in table and isinstance(table[key], str):
            why = line_problem(table[key])
            if why is not None:
                self.problem(_join(prefix, key), f'"{printable(table[key][:60])}" {why}: one line of plain text')
                return default
        return value

    def seconds(self, table: Mapping[str, Any], prefix: str, key: str, default: float | None = None, *,
                zero: bool = False) -> float | None:
        """A positive (or, with ``zero``, non-negative), finite number of seconds up to
        :data:`MAX_SECONDS` (``nan`` and ``inf`` are no timeout); else ``default``, problem noted."""
        value = self.get(table, prefix, key, (int, float))
        if value is None:
            return default
        if not math.isfinite(value):
            self.problem(_join(prefix, key), f"must be a finite number of seconds, got {value}")
            return default
        if value < 0 or (value == 0 and not zero):
            self.problem(_join(prefix, key), "must be a positive number of seconds" + (" (or 0)" if zero else ""))
            return default
        if value > MAX_SECONDS:
            self.problem(_join(prefix, key), f"{value:g} seconds is past {MAX_SECONDS} (30 days): not a timeout")
            return default
        return float(value)

    # -- names and paths -----------------------------------------------------------------
    @staticmethod
    def key(prefix: str, key: str) -> str:
        """The dotted key ``prefix.key`` as messages write it (odd keys quoted and escaped)."""
        return _join(prefix, key)

    def name_ok(self, where: str, name: str, rule: NameRule = NAME) -> bool:
        """Whether ``name`` (declared at dotted key ``where``) passes ``rule``; if not, noted."""
        why = rule.problem(name)
        if why is None:
            return True
        shown = printable(name if len(name) <= 60 else name[:60] + "…")
        self.problem(where, f'"{shown}" {why}' if name else why)
        return False

    def name(self, table: Mapping[str, Any], prefix: str, key: str, default: Any = None) -> Any:
        """A string that is a name (:data:`NAME`); else ``default``, problem noted."""
        value = self.get(table, prefix, key, str)
        if value is None:
            return default
        return value if self.name_ok(_join(prefix, key), value) else default

    def names(self, table: Mapping[str, Any], prefix: str, key: str) -> list[str]:
        """An array of names; the bad ones reported and left out."""
        return [v for i, v in enumerate(self.string_list(table, prefix, key))
                if self.name_ok(f"{_join(prefix, key)}[{i}]", v)]

    def relative_path(self, table: Mapping[str, Any], prefix: str, key: str, what: str = "the project root",
                      default: Any = None) -> Any:
        """A path relative to ``what`` that stays inside it (not absolute, no ``..``, no NUL or
        control character); else ``default``, problem noted. Whether it exists is the caller's."""
        value = self.get(table, prefix, key, str)
        if value is None:
            return default
        where = _join(prefix, key)
        parts = value.replace("\\", "/").split("/")
        if not value.strip():
            self.problem(where, "must not be empty")
        elif re.search(r"[\x00-\x1f\x7f-\x9f]", value):
            self.problem(where, f'"{printable(value)}" holds a control character')
        elif value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value):
            self.problem(where, f'"{value}" is absolute; give a path relative to {what}')
        elif ".." in parts:
            self.problem(where, f'"{value}" leaves {what} ("..")')
        else:
            return value
        return default

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
        """A table of tables (``[release.cpu]``) whose keys are the names it declares: a key
        that is not a name (:data:`NAME`) and wrong-typed entries are reported and left out."""
        value = self.get(data, prefix, key, dict, {})
        out: dict[str, dict[str, Any]] = {}
        for name, sub in value.items():
            if not self.name_ok(_join(_join(prefix, key), name), name):
                continue
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
    if len(key) > 60:
        key = key[:60] + "…"
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{printable(key)}"'


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'the string "{printable(value)}"' if len(value) < 40 else "a string"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__
