"""The CMake language's syntax: a file's text cut into command invocations, nothing evaluated.

The grammar of cmake-language(7): ``#`` line comments and ``#[[ … ]]`` bracket comments,
bracket arguments ``[==[ … ]==]`` (taken as written), quoted arguments (escapes and a ``\\``
line continuation), unquoted arguments (the legacy ``a"b c"d`` form too) and parentheses nested
inside an argument list. A command's name is matched case-insensitively (``ADD_TEST`` is
``add_test``). Malformed text is an :class:`InputError` naming ``file:line``.
:func:`expand` evaluates an argument's escapes and ``${VAR}`` references, :func:`split_list`
cuts a value into a CMake list.
"""

from __future__ import annotations

import re

from relgate.core.errors import InputError
from relgate.core.record import record

__all__ = ["Arg", "Command", "UNKNOWN", "arguments", "expand", "parse", "split_list"]

#: the value of a variable set by something the reader does not evaluate
UNKNOWN = "\0unknown"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_SPACE = " \t\r"


@record
class Arg:
    """One argument as written: ``kind`` is ``bracket``, ``quoted`` or ``unquoted``; ``text``
    is its body (no quotes or brackets; escapes and ``${…}`` still as written)."""

    kind: str
    text: str
    line: int


@record
class Command:
    """One command invocation: its name in lower case, its arguments, the line it starts on."""

    name: str
    args: tuple[Arg, ...]
    line: int


class _Scanner:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.pos = 0
        self.line = 1

    def fail(self, line: int, why: str) -> InputError:
        return InputError(f"{self.where}:{line}: {why}")

    def advance(self, to: int) -> str:
        chunk = self.text[self.pos:to]
        self.line += chunk.count("\n")
        self.pos = to
        return chunk

    def bracket(self, what: str) -> str:
        """At ``[=*[``: the body up to the matching ``]=*]``."""
        opened = _BRACKET_OPEN.match(self.text, self.pos)
        assert opened is not None
        close = f"]{opened.group(1)}]"
        end = self.text.find(close, opened.end())
        if end < 0:
            raise self.fail(self.line, f"{what} {opened.group()} is not closed (no {close} before the end of the file)")
        self.advance(opened.end())
        body = self.advance(end)
        self.advance(end + len(close))
        return body[1:] if body.startswith("\n") else body  # a newline right after the opening is dropped

    def comment(self) -> None:
        """At ``#``: a bracket comment or a line comment."""
        self.pos += 1
        if _BRACKET_OPEN.match(self.text, self.pos):
            self.bracket("bracket comment")
            return
        end = self.text.find("\n", self.pos)
        self.advance(len(self.text) if end < 0 else end)

    def quoted(self) -> str:
        start, self.pos = self.line, self.pos + 1
        out = []
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail(start, 'quoted argument is not closed (no " before the end of the file)')
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\\":
                if self.pos + 1 >= len(text):
                    raise self.fail(self.line, "a \\ at the end of the file")
                nxt = text[self.pos + 1]
                if nxt == "\n":  # line continuation
                    self.advance(self.pos + 2)
                    continue
                out.append(ch + nxt)
                self.advance(self.pos + 2)
                continue
            out.append(ch)
            self.advance(self.pos + 1)

    def unquoted(self) -> str:
        text = self.text
        out = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in _SPACE or ch in '\n()#':
                break
            if ch == "\\":
                if self.pos + 1 >= len(text) or text[self.pos + 1] == "\n":
                    raise self.fail(self.line, "a \\ at the end of a line outside a quoted argument")
                out.append(text[self.pos:self.pos + 2])
                self.pos += 2
                continue
            if ch == '"':  # legacy: a"b c"d is one argument, the quotes kept
                start = self.line
                end = self.pos + 1
                while end < len(text) and text[end] != '"':
                    end += 2 if text[end] == "\\" else 1
                if end >= len(text):
                    raise self.fail(start, 'quoted text inside an unquoted argument is not closed')
                out.append(self.advance(end + 1))
                continue
            out.append(ch)
            self.pos += 1
        return "".join(out)

    def arguments(self, name: str, line: int) -> tuple[Arg, ...]:
        """After ``name(``: the arguments up to the matching ``)``."""
        args: list[Arg] = []
        depth = 0
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail(line, f"{name}( is not closed (no ) before the end of the file)")
            ch = text[self.pos]
            if ch in _SPACE or ch == "\n":
                self.advance(self.pos + 1)
            elif ch == "#":
                self.comment()
            elif ch == "(":
                depth += 1
                args.append(Arg(kind="unquoted", text="(", line=self.line))
                self.pos += 1
            elif ch == ")":
                self.pos += 1
                if depth == 0:
                    return tuple(args)
                depth -= 1
                args.append(Arg(kind="unquoted", text=")", line=self.line))
            elif ch == '"':
                at = self.line
                args.append(Arg(kind="quoted", text=self.quoted(), line=at))
            elif ch == "[" and _BRACKET_OPEN.match(text, self.pos):
                at = self.line
                args.append(Arg(kind="bracket", text=self.bracket("bracket argument"), line=at))
            else:
                at = self.line
                args.append(Arg(kind="unquoted", text=self.unquoted(), line=at))

    def commands(self) -> list[Command]:
        found: list[Command] = []
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in _SPACE or ch == "\n":
                self.advance(self.pos + 1)
                continue
            if ch == "#":
                self.comment()
                continue
            named = _NAME.match(text, self.pos)
            if named is None:
                shown = text[self.pos:self.pos + 20].split("\n")[0]
                raise self.fail(self.line, f"expected a command, found {shown!r}")
            line = self.line
            self.pos = named.end()
            while self.pos < len(text) and text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos >= len(text) or text[self.pos] != "(":
                raise self.fail(line, f"{named.group()} is not followed by ( (a command is NAME(ARGS…))")
            self.pos += 1
            found.append(Command(name=named.group().lower(), args=self.arguments(named.group(), line), line=line))
            rest = self.pos  # a command ends its line: only spaces and a comment may follow
            while rest < len(text) and text[rest] in _SPACE:
                rest += 1
            if rest < len(text) and text[rest] not in "\n#":
                raise self.fail(self.line, f"{named.group()}(…) is followed by more text on its line")
        return found


def parse(text: str, where: str) -> list[Command]:
    """The command invocations of ``text`` (a CMake file named ``where`` in errors), in order."""
    return _Scanner(text, where).commands()


def _ref_end(text: str, i: int) -> int:
    """At ``{`` of a reference: the index of its matching ``}`` (-1 if none)."""
    depth = 0
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def expand(text: str, variables: dict[str, str], missing: list[str]) -> str:
    """``text`` with its escapes and ``${VAR}`` references evaluated from ``variables``; a
    reference it cannot resolve (an unset or unknown variable, ``$ENV{…}``, ``$CACHE{…}``)
    stays as written and its name goes to ``missing``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", ";": "\\;", "0": "\0"}.get(nxt, nxt))
            i += 2
            continue
        if ch == "$":
            for prefix in ("{", "ENV{", "CACHE{"):
                if text.startswith(prefix, i + 1):
                    open_at = i + len(prefix)
                    end = _ref_end(text, open_at)
                    if end < 0:
                        break
                    name = expand(text[open_at + 1:end], variables, missing)
                    value = variables.get(name) if prefix == "{" else None
                    if value is None or value == UNKNOWN:
                        missing.append(name if prefix == "{" else f"${prefix}{name}}}")
                        out.append(f"${prefix}{name}}}")
                    else:
                        out.append(value)
                    i = end + 1
                    break
            else:
                out.append(ch)
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def split_list(value: str) -> list[str]:
    """A CMake list: split at each ``;`` not escaped, empty elements dropped."""
    if "\\" not in value:
        return [x for x in value.split(";") if x != ""]
    items, cur, i = [], [], 0
    while i < len(value):
        if value[i] == "\\" and value.startswith(";", i + 1):
            cur.append(";")
            i += 2
            continue
        if value[i] == ";":
            items.append("".join(cur))
            cur = []
        else:
            cur.append(value[i])
        i += 1
    items.append("".join(cur))
    return [x for x in items if x != ""]


def arguments(args: tuple[Arg, ...], variables: dict[str, str], missing: list[str]) -> list[str]:
    """A command's arguments evaluated: a bracket argument as written, a quoted one expanded
    (one argument), an unquoted one expanded and split as a list (none if empty)."""
    out: list[str] = []
    for arg in args:
        if arg.kind == "bracket":
            out.append(arg.text)
        elif arg.kind == "quoted":
            out.append(expand(arg.text, variables, missing))
        else:
            out += split_list(expand(arg.text, variables, missing))
    return out
