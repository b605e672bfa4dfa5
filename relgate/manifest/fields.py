"""How a manifest key is declared: its type, default, whether it is required, what it means.

:mod:`relgate.manifest.keys` declares every file's keys with these records; the validators
take their key lists from there, and :mod:`relgate.manifest.reference` turns the same
declarations into JSON Schemas and the reference page. One source of truth.

A constraint is a :class:`Rule`. The kinds in :data:`SCHEMA_RULES` become JSON Schema
keywords; any other kind is still a valid declaration: the schema and the page carry its
``text`` (the validator enforces it). So a new validator only needs a ``Rule(kind=…,
text=…)`` beside its key for the generated files to say so.
"""

from __future__ import annotations

from typing import Any

from relgate.core.record import record

__all__ = ["TYPES", "SCHEMA_RULES", "Rule", "Key", "FileSpec", "key", "nonblank", "at_least", "above",
           "pattern", "one_of_keys", "text_rule"]

#: string integer number boolean; command (a string, or an argv array); strings (an array of
#: strings); string-or-strings; count-or-share (an integer 0 or more, or "10%"); gpus (a whole
#: number or "all"); table (``fields``); map (any name → ``values``); array (of tables)
TYPES = ("string", "integer", "number", "boolean", "command", "strings", "string-or-strings", "count-or-share",
         "table", "map", "array", "gpus")

#: rule kinds that map to JSON Schema keywords (value → keyword); others are documented as text
SCHEMA_RULES = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "minLength",
                "minItems", "propertyNames", "oneOfKeys")


@record
class Rule:
    kind: str  # one of SCHEMA_RULES, or any other word (documented as text only)
    value: Any = None
    text: str  # what a person reads: "at least 1"


@record
class Key:
    name: str  # "NAME" for the values of a map
    type: str  # one of TYPES
    doc: str
    required: bool = False
    default: Any = None  # the value used when the key is absent (None: no value)
    default_text: str | None = None  # a default that is not a literal ("the file's name")
    choices: tuple[str, ...] = ()
    example: Any = None
    rules: tuple[Rule, ...] = ()
    fields: tuple[Key, ...] = ()  # table and array: the keys of the table
    values: Key | None = None  # map: what each entry is

    def names(self) -> tuple[str, ...]:
        """The keys this table (or each table of this array) allows."""
        return tuple(f.name for f in self.fields)

    def required_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.required)

    def field(self, name: str) -> Key:
        return next(f for f in self.fields if f.name == name)

    def entry(self) -> Key:
        """The table of a map or array (``release.NAME``, ``check[]``)."""
        return self.values if self.values is not None else self


@record
class FileSpec:
    name: str  # "project" → project.schema.json
    path: str  # how the reference names it: "manifests/project.toml"
    doc: str
    fields: tuple[Key, ...]
    example: str  # a whole file, TOML (validated against the schema by the tests)
    rules: tuple[Rule, ...] = ()

    def top(self, name: str) -> Key:
        return next(f for f in self.fields if f.name == name)

    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def required_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.required)


def key(name: str, type: str, doc: str, **kw: Any) -> Key:
    assert type in TYPES, type
    fields = kw.pop("fields", ())
    rules = kw.pop("rules", ())
    choices = kw.pop("choices", ())
    return Key(name=name, type=type, doc=doc, fields=tuple(fields), rules=tuple(rules), choices=tuple(choices), **kw)


def nonblank() -> Rule:
    return Rule(kind="pattern", value=r"\S", text="not empty or blank")


def at_least(n: float) -> Rule:
    return Rule(kind="minimum", value=n, text=f"at least {n:g}")


def above(n: float) -> Rule:
    return Rule(kind="exclusiveMinimum", value=n, text=f"greater than {n:g}")


def pattern(regex: str, text: str) -> Rule:
    return Rule(kind="pattern", value=regex, text=text)


def one_of_keys(*names: str) -> Rule:
    return Rule(kind="oneOfKeys", value=names, text=f"exactly one of {', '.join(names)}")


def text_rule(text: str, kind: str = "check") -> Rule:
    """A rule only the validator checks (cross-key, file-system): the generated files say it."""
    return Rule(kind=kind, text=text)
