"""What the commands that set variables do, as far as a reader can know it without configuring:
``set``, ``option``, ``unset``, ``list(APPEND)``, the plain ``string()`` forms and
``cmake_parse_arguments``; after an ``if`` (branches not evaluated), what the branches agree
on. A value this cannot know is :data:`UNKNOWN`, and a reference to it stays unresolved.
"""

from __future__ import annotations

import re

from relgate.kinds.cmake.syntax import UNKNOWN as _UNKNOWN
from relgate.kinds.cmake.syntax import Command, arguments, expand, split_list

__all__ = ["MAX_VALUE", "Scope", "merge_branches", "set_variables"]

#: the longest value a variable keeps (a longer one is unknown: `set(X ${X}${X})` in a loop
#: must not fill the memory)
MAX_VALUE = 1 << 20


def _bounded(value: str) -> str:
    return value if len(value) <= MAX_VALUE else _UNKNOWN


class Scope:
    """A variable scope: a directory's, a function's; ``parent`` takes ``set(… PARENT_SCOPE)``."""

    def __init__(self, variables: dict[str, str], parent: Scope | None, base: int) -> None:
        self.vars = variables
        self.parent = parent
        self.base = base  # how many conditions surround the scope's start


def merge_branches(before: dict[str, str], after: list[dict[str, str]]) -> dict[str, str]:
    """The variables after an ``if`` whose branches (and, without ``else``, the path through
    none) left ``after``: a value all of them agree on; a variable unset before and set by
    some branch takes the value set (``if(NOT DEFINED X) set(X …)``); any other disagreement
    is unknown."""
    merged: dict[str, str] = {}
    for name in dict.fromkeys([*before, *(k for a in after for k in a)]):
        values = {a.get(name) for a in after}
        if len(values) == 1:
            value = values.pop()
        elif name not in before and len(values - {None}) == 1:
            value = (values - {None}).pop()
        else:
            value = _UNKNOWN
        if value is not None:
            merged[name] = value
    return merged


def set_variables(cmd: Command, scope: Scope) -> bool:
    """Do what ``cmd`` (set, option, unset, list, string, cmake_parse_arguments) does to the
    variables; False for a form not modelled (the caller marks what it names unknown)."""
    if cmd.name == "string":
        return _string(cmd, scope)
    if cmd.name == "get_filename_component":
        return _filename(cmd, scope)
    if cmd.name == "cmake_parse_arguments":
        _parse_arguments(cmd, scope)
    else:
        _set(cmd, scope)
    return True


def _set(cmd: Command, scope: Scope) -> None:
    missing: list[str] = []
    args = arguments(cmd.args, scope.vars, missing)
    if not args:
        return
    if cmd.name == "list":
        if len(args) >= 2 and args[0] == "APPEND":
            old = scope.vars.get(args[1], "")
            value = _UNKNOWN if missing or old == _UNKNOWN else ";".join([*split_list(old), *args[2:]])
            scope.vars[args[1]] = _bounded(value)
        else:
            for word in args[1:2] + args[-1:]:
                scope.vars[word] = _UNKNOWN
        return
    var = args[0]
    if var.startswith("ENV{"):
        return
    if cmd.name == "unset":
        scope.vars.pop(var, None)
        return
    if cmd.name == "option":
        if var not in scope.vars:
            value = args[2] if len(args) > 2 else "OFF"
            scope.vars[var] = _UNKNOWN if missing else value
        return
    values, target = args[1:], scope
    if values and values[-1] == "PARENT_SCOPE":
        values, target = values[:-1], scope.parent or scope
    if "CACHE" in values:
        values = values[: values.index("CACHE")]
        if var in scope.vars:  # a cache entry never overrides a normal variable
            return
    value = _UNKNOWN if missing else ";".join(values)
    target.vars[var] = _bounded(value)

def _string(cmd: Command, scope: Scope) -> bool:
    """string(TOUPPER|TOLOWER|STRIP|APPEND|PREPEND|CONCAT|REPLACE …); False for the other forms."""
    missing: list[str] = []
    args = arguments(cmd.args, scope.vars, missing)
    op = args[0] if args else ""
    if op in ("TOUPPER", "TOLOWER", "STRIP") and len(args) == 3:
        out, value = args[2], {"TOUPPER": str.upper, "TOLOWER": str.lower, "STRIP": str.strip}[op](args[1])
    elif op in ("APPEND", "PREPEND") and len(args) >= 2:
        out, old, more = args[1], scope.vars.get(args[1], ""), "".join(args[2:])
        value = _UNKNOWN if old == _UNKNOWN else old + more if op == "APPEND" else more + old
    elif op == "CONCAT" and len(args) >= 2:
        out, value = args[1], "".join(args[2:])
    elif op == "REPLACE" and len(args) >= 4 and args[1]:
        out, value = args[3], "".join(args[4:]).replace(args[1], args[2])
    elif op == "REGEX" and len(args) >= 4 and args[1] in ("MATCH", "REPLACE"):
        out = args[3] if args[1] == "MATCH" else args[4] if len(args) >= 5 else ""
        value = _regex(args)
    else:
        return False
    scope.vars[out] = _UNKNOWN if missing else _bounded(value)
    return True

def _regex(args: list[str]) -> str:
    """string(REGEX MATCH re out input…) / string(REGEX REPLACE re with out input…), where
    Python's re reads the expression as CMake does; unknown where it does not."""
    try:
        pattern = re.compile(args[2])
        if args[1] == "MATCH":
            found = pattern.search("".join(args[4:]))
            return found.group() if found else ""
        template = args[3]
        return pattern.sub(lambda m: re.sub(r"\\(\d)", lambda g: m.group(int(g.group(1))) or "", template),
                           "".join(args[5:]))
    except (re.error, IndexError):
        return _UNKNOWN


def _filename(cmd: Command, scope: Scope) -> bool:
    """get_filename_component(VAR FILE NAME|NAME_WE|EXT|LAST_EXT|NAME_WLE|DIRECTORY|PATH)."""
    missing: list[str] = []
    args = arguments(cmd.args, scope.vars, missing)
    if len(args) < 3:
        return False
    out, path, mode = args[0], args[1], args[2]
    head, _, name = path.rpartition("/")
    parts = {"NAME": name, "NAME_WE": name.split(".", 1)[0], "NAME_WLE": name.rsplit(".", 1)[0],
             "EXT": "." + name.split(".", 1)[1] if "." in name else "",
             "LAST_EXT": "." + name.rsplit(".", 1)[1] if "." in name else "", "DIRECTORY": head, "PATH": head}
    if mode not in parts:
        return False
    scope.vars[out] = _UNKNOWN if missing else parts[mode]
    return True


def _parse_arguments(cmd: Command, scope: Scope) -> None:
    """cmake_parse_arguments(PREFIX OPTIONS ONE MULTI ARGS…) and its PARSE_ARGV N form: each
    PREFIX_KEYWORD set as CMake sets it (a keyword not given expands to nothing, as there)."""
    words = [split_list(expand(a.text, scope.vars, [])) if a.kind != "bracket" else [a.text] for a in cmd.args]
    if words[:1] == [["PARSE_ARGV"]] and len(words) >= 6:
        start = int(words[1][0]) if words[1] and words[1][0].isdigit() else 0
        head, argv = words[2:6], []
        count = scope.vars.get("ARGC", "")
        for n in range(start, int(count) if count.isdigit() else 0):
            argv.append(scope.vars.get(f"ARGV{n}", _UNKNOWN))
    elif len(words) >= 4:
        head, argv = words[:4], arguments(cmd.args[4:], scope.vars, [])
    else:
        return
    prefix = (head[0] or [""])[0]
    options, one, multi = (head[1:] + [[], [], []])[:3]
    if any(_UNKNOWN in a or "${" in a for a in argv):
        for key in [*options, *one, *multi]:
            scope.vars[f"{prefix}_{key}"] = _UNKNOWN
        return
    found: dict[str, list[str]] = {}
    key, unparsed = None, []
    for word in argv:
        if word in options:
            found[word], key = [], None
        elif word in one or word in multi:
            found[word], key = [], word
        elif key is not None and (key in multi or not found[key]):
            found[key].append(word)
        else:
            unparsed.append(word)
    for opt in options:
        scope.vars[f"{prefix}_{opt}"] = "TRUE" if opt in found else "FALSE"
    for kw in [*one, *multi]:
        scope.vars[f"{prefix}_{kw}"] = ";".join(found.get(kw, []))
    scope.vars[f"{prefix}_UNPARSED_ARGUMENTS"] = ";".join(unparsed)
