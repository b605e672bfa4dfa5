"""JSON Schemas (draft 2020-12) and the reference page, generated from :mod:`relgate.manifest.keys`.

``schemas/NAME.schema.json`` and ``docs/manifests.md`` in the repository are this module's
output (``relgate schema --write`` rewrites them; a test fails when they drift). A rule of a
kind the schema has no keyword for is carried as text in the description, so a new
validator never makes an invalid schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from relgate.manifest.fields import FileSpec, Key, Rule
from relgate.manifest.keys import FILES, file_spec

__all__ = ["DRAFT", "SCHEMA_DIR", "DOCS_PAGE", "schema_of", "schema_text", "markdown", "generated_files",
           "schema_comment", "REGENERATE"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_DIR = "schemas"
DOCS_PAGE = "docs/manifests.md"
REGENERATE = "python -m relgate.cli schema --write"
_SIMPLE = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "minLength", "minItems"}


# --- JSON Schema ---------------------------------------------------------------------------


def _describe(k: Key) -> str:
    parts = [k.doc.rstrip(".") + "."]
    if k.default_text:
        parts.append(f"Default: {k.default_text}.")
    texts = [r.text for r in k.rules if r.kind not in _SIMPLE and r.kind not in ("propertyNames", "oneOfKeys")]
    texts += [r.text for r in k.rules if r.kind in ("propertyNames", "oneOfKeys")]
    if texts:
        parts.append("Rules: " + "; ".join(texts) + ".")
    return " ".join(parts)


def _apply(out: dict[str, Any], rules: Iterable[Rule], *, scalar: str | None) -> None:
    """The rules with a JSON Schema keyword; a keyword that does not fit the type is left to the text."""
    for r in rules:
        if r.kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and scalar in ("integer", "number"):
            out[r.kind] = r.value
        elif r.kind in ("pattern", "minLength") and scalar == "string":
            out[r.kind] = r.value
        elif r.kind == "minItems" and scalar == "array":
            out[r.kind] = r.value
        elif r.kind == "propertyNames" and scalar == "object":
            out["propertyNames"] = {"pattern": r.value}
        elif r.kind == "oneOfKeys" and scalar == "object":
            out["oneOf"] = [{"required": [name]} for name in r.value]


def _node(k: Key) -> dict[str, Any]:
    out: dict[str, Any] = {"description": _describe(k)}
    t = k.type
    if t in ("string", "integer", "number", "boolean"):
        out["type"] = t
        if k.choices:
            out["enum"] = list(k.choices)
        _apply(out, k.rules, scalar=t)
    elif t == "strings":
        out.update(type="array", items={"type": "string"})
        _apply(out, k.rules, scalar="array")
    elif t == "command":
        out["anyOf"] = [{"type": "string", "pattern": r"\S"},
                        {"type": "array", "items": {"type": "string"}, "minItems": 1}]
    elif t == "string-or-strings":
        out["anyOf"] = [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    elif t == "count-or-share":
        out["anyOf"] = [{"type": "integer", "minimum": 0},
                        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"}]
    elif t == "gpus":
        out["anyOf"] = [{"type": "integer", "minimum": 1}, {"const": "all"}]
    elif t == "table":
        out.update(_table(k.fields))
        _apply(out, k.rules, scalar="object")
    elif t == "array":
        item = _table(k.fields)
        _apply(item, k.rules, scalar="object")
        out.update(type="array", items=item)
    elif t == "map":
        assert k.values is not None, k.name
        out.update(type="object", additionalProperties=_node(k.values))
        _apply(out, k.rules, scalar="object")
    if k.default is not None:
        out["default"] = k.default
    if k.example is not None:
        out["examples"] = [k.example]
    return out


def _table(fields: Iterable[Key]) -> dict[str, Any]:
    fields = tuple(fields)
    out: dict[str, Any] = {"type": "object", "properties": {f.name: _node(f) for f in fields},
                           "additionalProperties": False}
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    return out


def schema_of(spec: FileSpec | str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one manifest file."""
    spec = file_spec(spec) if isinstance(spec, str) else spec
    out: dict[str, Any] = {"$schema": DRAFT, "$id": f"{spec.name}.schema.json",
                           "title": f"relgate {spec.path}", "description": spec.doc}
    out.update(_table(spec.fields))
    _apply(out, spec.rules, scalar="object")
    return out


def schema_text(spec: FileSpec | str) -> str:
    return json.dumps(schema_of(spec), indent=2, ensure_ascii=False) + "\n"


# --- the reference page --------------------------------------------------------------------


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return str(value)


def _type(k: Key) -> str:
    names = {"strings": "array of strings", "command": "string or array of strings",
             "string-or-strings": "string or array of strings", "map": "table of NAME →",
             "count-or-share": 'integer (a count) or string (a share, "10%")', "gpus": 'integer or "all"',
             "array": "array of tables"}
    if k.type == "map" and k.values is not None:
        inner = "table" if k.values.type == "table" else _type(k.values)
        return f"table: NAME → {inner}"
    text = names.get(k.type, k.type)
    if k.choices:
        text += ": " + " | ".join(f"`{c}`" for c in k.choices)
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rules_text(k: Key) -> str:
    return "; ".join(r.text for r in k.rules)


def _rows(k: Key, prefix: str, out: list[str]) -> list[tuple[str, Key]]:
    """One row per key of the table ``k`` under ``prefix``; returns the nested tables to document."""
    nested: list[tuple[str, Key]] = []
    for f in k.fields:
        default = (f"`{_toml(f.default)}`" if f.default is not None else (f.default_text or "—"))
        example = f"`{_cell(_toml(f.example))}`" if f.example is not None else ""
        doc = f.doc + (f" ({_rules_text(f)})" if f.rules else "")
        out.append(f"| `{f.name}` | {_cell(_type(f))} | {'yes' if f.required else 'no'} | {_cell(default)} | "
                   f"{_cell(doc)} | {example} |")
        if f.type in ("table", "array"):
            nested.append((f"{prefix}.{f.name}" if prefix else f.name, f))
        elif f.type == "map" and f.values is not None and f.values.type == "table":
            nested.append((f"{prefix}.{f.name}.NAME" if prefix else f"{f.name}.NAME", f.values))
    return nested


def _section(title: str, k: Key, out: list[str]) -> None:
    header = f"[[{title}]]" if k.type == "array" else f"[{title}]"
    out += ["", f"### `{header}`", "", _cell(k.doc) + (f" — {_rules_text(k)}" if k.rules else "") + ".", ""]
    if k.fields:
        out += ["| key | type | required | default | meaning | example |", "|---|---|---|---|---|---|"]
    nested = _rows(k, title, out)
    for name, sub in nested:
        _section(name, sub, out)


def markdown() -> str:
    """``docs/manifests.md``: every file, table and key with its type, default, whether
    required, its meaning and an example."""
    out = ["# Manifest reference", "",
           f"Generated by `relgate schema --markdown` from the validator's own definitions "
           f"(`relgate/manifest/keys.py`); do not edit by hand: `{REGENERATE}` rewrites this page and "
           f"`{SCHEMA_DIR}/*.schema.json`.", "",
           "Every file is validated before anything runs: unknown keys are refused with a did-you-mean, every "
           "problem names the file and the dotted key, exit 2. The JSON Schemas (draft 2020-12) carry the same "
           "definitions for editors: `relgate init` writes a `#:schema` comment at the top of each file, which "
           "Taplo-based TOML servers read. Rules the schema cannot express (files that must exist, names "
           "that must be declared elsewhere) are listed as text; `relgate check` enforces them.", "",
           "Files:", ""]
    out += [f"- [`{s.path}`](#{s.name}) — `{SCHEMA_DIR}/{s.name}.schema.json`" for s in FILES]
    for spec in FILES:
        out += ["", f"## {spec.name}", "", f"`{spec.path}` — {spec.doc}", "", "```toml", spec.example.rstrip(), "```"]
        if spec.rules:
            out += ["", "Rules: " + "; ".join(r.text for r in spec.rules) + "."]
        top_scalars = [f for f in spec.fields if f.type not in ("table", "array", "map")
                       or (f.type == "map" and f.values is not None and f.values.type != "table")]
        if top_scalars:
            out += ["", "| key | type | required | default | meaning | example |", "|---|---|---|---|---|---|"]
            holder = Key(name="", type="table", doc="", fields=tuple(top_scalars))
            _rows(holder, "", out)
        for f in spec.fields:
            if f.type in ("table", "array"):
                _section(f.name, f, out)
            elif f.type == "map" and f.values is not None and f.values.type == "table":
                _section(f"{f.name}.NAME", f.values, out)
    return "\n".join(out) + "\n"


def generated_files() -> dict[str, str]:
    """Path (relative to the repository) → content, for every generated file."""
    files = {f"{SCHEMA_DIR}/{s.name}.schema.json": schema_text(s) for s in FILES}
    files[DOCS_PAGE] = markdown()
    return files


def schema_comment(name: str, manifest: Path, schema_dir: Path | None, root: Path | None = None) -> str | None:
    """The ``#:schema`` line Taplo reads, pointing from ``manifest`` at ``NAME.schema.json`` in
    ``schema_dir``: a relative path when the schemas lie inside ``root`` (the repository); None
    otherwise (a ``file://`` path into the installing machine's relgate would be committed with
    the file and resolve nowhere else) and when no schema folder is at hand. ``relgate schema
    NAME`` prints the schema wherever relgate is installed."""
    if schema_dir is None or not (schema_dir / f"{name}.schema.json").is_file():
        return None
    import os

    target = (schema_dir / f"{name}.schema.json").resolve()
    if root is not None and target.is_relative_to(Path(root).resolve()):
        return f"#:schema {Path(os.path.relpath(target, Path(manifest).resolve().parent)).as_posix()}"
    return None
