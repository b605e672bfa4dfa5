"""``CMakePresets.json`` (versions 2–10): configure, build and test presets with ``inherits``
resolved, ``binaryDir`` macros expanded, and the release builds relgate runs from them.

Files named by ``include`` (version 4+) are read when they lie in the tree (a cycle, a symlink
or a path out of the tree refused); ``CMakeUserPresets.json`` is a person's own and is never
read. A macro this cannot expand without a machine's environment (``$env{X}``, ``$penv{X}``,
``$vendor{…}``) stays as written and is listed in the preset's ``unresolved``. A
``condition`` is kept and evaluated where it is plain (``const``, ``equals``/``notEquals``/
``inList``/``notInList``/``matches``/``notMatches`` on expandable strings, ``anyOf``/
``allOf``/``not``); ``applies`` is None when it cannot say.
Bad JSON or a wrong type is an :class:`InputError` naming the key
(``CMakePresets.json: configurePresets[2].binaryDir: …``).
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.core.record import record

__all__ = ["PRESETS_FILE", "ConfigurePreset", "BuildPreset", "TestPreset", "CMakePresets", "ReleaseBuild",
           "parse_presets", "read_presets", "release_builds"]

PRESETS_FILE = "CMakePresets.json"
RELEASE_TYPES = ("Release", "RelWithDebInfo", "MinSizeRel")
_MACRO = re.compile(r"\$(env|penv|vendor)?\{([^{}$]*)\}")


@record
class ConfigurePreset:
    """A configure preset with what it inherits merged in. ``binary_dir``: relative to the
    source dir when inside it (``build/release``), else as expanded; ``cache_variables``: the
    values (a ``{type, value}`` entry gives its value); ``where``: ``configurePresets[N]``."""

    name: str
    hidden: bool
    inherits: tuple[str, ...]
    generator: str | None
    binary_dir: str | None
    cache_variables: dict[str, str]
    condition: object
    applies: bool | None
    unresolved: tuple[str, ...]
    where: str

    @property
    def build_type(self) -> str | None:
        return self.cache_variables.get("CMAKE_BUILD_TYPE")


@record
class BuildPreset:
    """A build preset: its configure preset (inherited if not its own), ``configuration``
    (multi-config generators), targets."""

    name: str
    hidden: bool
    inherits: tuple[str, ...]
    configure_preset: str | None
    configuration: str | None
    targets: tuple[str, ...]
    condition: object
    applies: bool | None
    where: str


@record
class TestPreset:
    """A test preset and its configure preset."""

    name: str
    hidden: bool
    configure_preset: str | None
    where: str


@record
class CMakePresets:
    """One ``CMakePresets.json``: its version and its presets, in the file's order."""

    version: int
    configure: tuple[ConfigurePreset, ...]
    build: tuple[BuildPreset, ...]
    test: tuple[TestPreset, ...]


@record
class ReleaseBuild:
    """A release build relgate runs: ``command`` is one shell line run in the source dir
    (``cmake --preset C && cmake --build --preset B``), ``binary_dir`` where it builds."""

    name: str
    configure_preset: str
    build_preset: str | None
    build_type: str | None
    binary_dir: str | None
    command: str
    unresolved: tuple[str, ...]


def _expand(value: str, macros: dict[str, str], unresolved: list[str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) is None and m.group(2) in macros:
            return macros[m.group(2)]
        unresolved.append(m.group())
        return m.group()
    return _MACRO.sub(one, value)


def _condition(cond: object, macros: dict[str, str]) -> bool | None:
    """True / False where ``cond`` is plain, None where it needs the environment or is unknown."""
    if cond is None:
        return True
    if not isinstance(cond, dict):
        return bool(cond) if isinstance(cond, bool) else None
    kind = cond.get("type")
    missing: list[str] = []

    def text(key: str) -> str | None:
        value = cond.get(key)
        return _expand(value, macros, missing) if isinstance(value, str) else None

    if kind == "const":
        return cond.get("value") if isinstance(cond.get("value"), bool) else None
    if kind in ("anyOf", "allOf"):
        parts = [_condition(c, macros) for c in cond.get("conditions") or []]
        if kind == "anyOf":
            return True if True in parts else None if None in parts else False
        return False if False in parts else None if None in parts else True
    if kind == "not":
        inner = _condition(cond.get("condition"), macros)
        return None if inner is None else not inner
    if kind in ("equals", "notEquals"):
        lhs, rhs = text("lhs"), text("rhs")
        if missing or lhs is None or rhs is None:
            return None
        return (lhs == rhs) == (kind == "equals")
    if kind in ("inList", "notInList"):
        s = text("string")
        items = [_expand(v, macros, missing) for v in cond.get("list") or [] if isinstance(v, str)]
        if missing or s is None:
            return None
        return (s in items) == (kind == "inList")
    if kind in ("matches", "notMatches"):
        s, regex = text("string"), text("regex")
        if missing or s is None or regex is None:
            return None
        try:
            return (re.search(regex, s) is not None) == (kind == "matches")
        except re.error:
            return None
    return None


class _Parser:
    def __init__(self, doc: object, source: str, source_dir: Path) -> None:
        self.source = source
        self.root = source_dir
        if not isinstance(doc, dict):
            raise self.fail("", "must be a JSON object")
        version = doc.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or not 2 <= version <= 10:
            raise self.fail("version", f"{version!r} is not a presets version this reads (2 to 10)")
        self.doc, self.version = doc, version

    def fail(self, key: str, why: str) -> InputError:
        return InputError(f"{self.source}: {key}: {why}" if key else f"{self.source}: {why}")

    def entries(self, key: str) -> list[dict]:
        value = self.doc.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        names: dict[str, int] = {}
        for n, entry in enumerate(value):
            if not isinstance(entry, dict):
                raise self.fail(f"{key}[{n}]", "must be an object")
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                raise self.fail(f"{key}[{n}].name", "must be a non-empty string")
            if name in names:
                raise self.fail(f"{key}[{n}].name", f'"{name}" is also {key}[{names[name]}]: names must be unique')
            names[name] = n
            for field in ("binaryDir", "generator", "configurePreset", "configuration", "displayName"):
                if field in entry and not isinstance(entry[field], str):
                    raise self.fail(f"{key}[{n}].{field}", "must be a string")
            if "hidden" in entry and not isinstance(entry["hidden"], bool):
                raise self.fail(f"{key}[{n}].hidden", "must be true or false")
        return value

    def inherits(self, key: str, n: int, entry: dict) -> tuple[str, ...]:
        value = entry.get("inherits", [])
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{key}[{n}].inherits", "must be a string or a list of strings")
        return tuple(value)

    def chain(self, key: str, entries: list[dict]) -> dict[str, list[dict]]:
        """name → the entry and every preset it inherits from, nearest first (cycles refused)."""
        index = {e["name"]: n for n, e in enumerate(entries)}
        done: dict[str, list[dict]] = {}

        def visit(name: str, path: tuple[str, ...]) -> list[dict]:
            if name in done:
                return done[name]
            n = index[name]
            out = [entries[n]]
            for parent in self.inherits(key, n, entries[n]):
                if parent not in index:
                    raise self.fail(f"{key}[{n}].inherits", f'"{parent}" is not a preset of {key}')
                if parent in path:
                    raise self.fail(f"{key}[{n}].inherits", "a cycle: " + " → ".join([*path, parent]))
                out += [e for e in visit(parent, (*path, parent)) if e not in out]
            done[name] = out
            return out

        for entry in entries:
            visit(entry["name"], (entry["name"],))
        return done

    def first(self, chain: list[dict], field: str) -> object:
        return next((e[field] for e in chain if field in e), None)

    def configure(self) -> tuple[ConfigurePreset, ...]:
        key = "configurePresets"
        entries = self.entries(key)
        chains = self.chain(key, entries)
        out = []
        for n, entry in enumerate(entries):
            chain, name = chains[entry["name"]], entry["name"]
            cache: dict[str, str] = {}
            for parent in reversed(chain):  # the nearest preset wins
                variables = parent.get("cacheVariables", {})
                if not isinstance(variables, dict):
                    raise self.fail(f"{key}[{n}].cacheVariables", "must be an object")
                for var, value in variables.items():
                    if value is None:
                        cache.pop(var, None)
                    elif isinstance(value, bool):
                        cache[var] = "TRUE" if value else "FALSE"
                    elif isinstance(value, str):
                        cache[var] = value
                    elif isinstance(value, dict) and isinstance(value.get("value"), (str, bool)):
                        v = value["value"]
                        cache[var] = ("TRUE" if v else "FALSE") if isinstance(v, bool) else v
                    else:
                        raise self.fail(f"{key}[{n}].cacheVariables.{var}",
                                        "must be a string, true/false, null or {type, value}")
            generator = self.first(chain, "generator")
            macros = {"sourceDir": str(self.root), "sourceParentDir": str(self.root.parent),
                      "sourceDirName": self.root.name, "presetName": name, "dollar": "$", "pathListSep": ":",
                      "hostSystemName": platform.system(), "fileDir": str(self.root)}
            if isinstance(generator, str):
                macros["generator"] = generator
            unresolved: list[str] = []
            binary = self.first(chain, "binaryDir")
            binary_dir = None
            if isinstance(binary, str):
                expanded = _expand(binary, macros, unresolved)
                path = Path(expanded) if Path(expanded).is_absolute() else self.root / expanded
                binary_dir = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else expanded
            cache = {k: _expand(v, macros, unresolved) for k, v in cache.items()}
            cond = entry.get("condition")
            out.append(ConfigurePreset(name=name, hidden=bool(entry.get("hidden", False)),
                                       inherits=self.inherits(key, n, entry),
                                       generator=generator if isinstance(generator, str) else None,
                                       binary_dir=binary_dir, cache_variables=cache, condition=cond,
                                       applies=_condition(cond, macros), unresolved=tuple(dict.fromkeys(unresolved)),
                                       where=f"{key}[{n}]"))
        return tuple(out)

    def build(self, configure_names: set[str]) -> tuple[BuildPreset, ...]:
        key = "buildPresets"
        entries = self.entries(key)
        chains = self.chain(key, entries)
        out = []
        for n, entry in enumerate(entries):
            chain = chains[entry["name"]]
            conf = self.first(chain, "configurePreset")
            if conf is not None and conf not in configure_names:
                raise self.fail(f"{key}[{n}].configurePreset", f'"{conf}" is not a configure preset')
            targets = self.first(chain, "targets")
            if isinstance(targets, str):
                targets = [targets]
            if targets is not None and (not isinstance(targets, list) or
                                        not all(isinstance(t, str) for t in targets)):
                raise self.fail(f"{key}[{n}].targets", "must be a string or a list of strings")
            cond = entry.get("condition")
            macros = {"sourceDir": str(self.root), "presetName": entry["name"], "hostSystemName": platform.system()}
            configuration = self.first(chain, "configuration")
            out.append(BuildPreset(name=entry["name"], hidden=bool(entry.get("hidden", False)),
                                   inherits=self.inherits(key, n, entry),
                                   configure_preset=conf,  # type: ignore[arg-type]
                                   configuration=configuration,  # type: ignore[arg-type]
                                   targets=tuple(targets or ()), condition=cond, applies=_condition(cond, macros),
                                   where=f"{key}[{n}]"))
        return tuple(out)

    def test(self) -> tuple[TestPreset, ...]:
        key = "testPresets"
        entries = self.entries(key)
        chains = self.chain(key, entries)
        first = self.first
        return tuple(TestPreset(name=e["name"], hidden=bool(e.get("hidden", False)),
                                configure_preset=first(chains[e["name"]], "configurePreset"),  # type: ignore[arg-type]
                                where=f"{key}[{n}]") for n, e in enumerate(entries))


def parse_presets(doc: object, source_dir: Path, source: str = PRESETS_FILE) -> CMakePresets:
    """The presets of a parsed ``CMakePresets.json`` (``doc``) of the source tree ``source_dir``."""
    parser = _Parser(doc, source, Path(source_dir))
    configure = parser.configure()
    return CMakePresets(version=parser.version, configure=configure,
                        build=parser.build({c.name for c in configure}), test=parser.test())


def _load(path: Path, shown: str) -> object:
    if path.is_symlink():
        raise InputError(f"{shown}: a symlink: refused (it may lead out of the tree)")
    data = read_user_file(path, what="CMake presets", limit=16 << 20)
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno} column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else exc
        raise InputError(f"{shown}: not JSON: {where}") from None


def _with_includes(doc: object, path: Path, root: Path, shown: str, seen: tuple[Path, ...]) -> object:
    """``doc`` with the presets of the files its ``include`` names (version 4+, relative to the
    including file, inside the tree) appended, each file once; a cycle is refused."""
    if not isinstance(doc, dict) or "include" not in doc:
        return doc
    names = doc["include"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{shown}: include: must be a list of file names")
    merged = dict(doc)
    for n, name in enumerate(names):
        target = Path(os.path.normpath(path.parent / name))
        where = f"{shown}: include[{n}]"
        if not target.is_relative_to(root):
            raise InputError(f"{where}: {name} is outside the source tree: refused")
        if target in seen:
            raise InputError(f"{where}: {name} includes itself (a cycle): refused")
        rel = target.relative_to(root).as_posix()
        inner = _with_includes(_load(target, rel), target, root, rel, (*seen, target))
        if not isinstance(inner, dict):
            raise InputError(f"{rel}: must be a JSON object")
        for key in ("configurePresets", "buildPresets", "testPresets"):
            if key in inner:
                if not isinstance(inner[key], list):
                    raise InputError(f"{rel}: {key}: must be a list")
                merged[key] = [*merged.get(key, []), *inner[key]]
    return merged


def read_presets(source_dir: Path) -> CMakePresets | None:
    """The ``CMakePresets.json`` of ``source_dir`` and the files it includes (None when it has
    none; CMakeUserPresets.json is never read)."""
    root = Path(os.path.abspath(source_dir))
    path = root / PRESETS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    doc = _with_includes(_load(path, PRESETS_FILE), path, root, PRESETS_FILE, (path,))
    return parse_presets(doc, root)


def _is_release(name: str, build_type: str | None) -> bool:
    return build_type in RELEASE_TYPES or "release" in name.lower()


def release_builds(presets: CMakePresets) -> tuple[ReleaseBuild, ...]:
    """The release builds: each visible build preset (or, where the file has none, each visible
    configure preset) whose build type is Release / RelWithDebInfo / MinSizeRel or whose name
    says release, and whose condition does not rule it out here."""
    configure = {c.name: c for c in presets.configure}
    found = []
    visible_builds = [b for b in presets.build if not b.hidden]
    if visible_builds:
        for b in visible_builds:
            conf = configure.get(b.configure_preset or "")
            if conf is None or b.applies is False or conf.applies is False:
                continue
            build_type = b.configuration or conf.build_type
            if not _is_release(b.name, build_type):
                continue
            found.append(ReleaseBuild(name=b.name, configure_preset=conf.name, build_preset=b.name,
                                      build_type=build_type, binary_dir=conf.binary_dir,
                                      command=f"cmake --preset {conf.name} && cmake --build --preset {b.name}",
                                      unresolved=conf.unresolved))
        return tuple(found)
    for conf in presets.configure:
        if conf.hidden or conf.applies is False or not _is_release(conf.name, conf.build_type):
            continue
        binary = conf.binary_dir or f"build/{conf.name}"
        prefix = f"cmake --preset {conf.name}" + ("" if conf.binary_dir else f" -B {binary}")
        found.append(ReleaseBuild(name=conf.name, configure_preset=conf.name, build_preset=None,
                                  build_type=conf.build_type, binary_dir=binary,
                                  command=f"{prefix} && cmake --build {binary}", unresolved=conf.unresolved))
    return tuple(found)
