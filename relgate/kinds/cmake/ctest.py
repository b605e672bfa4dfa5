"""What CTest and the CMake cache say about a configured build: text in, records out.

:func:`parse_ctest_json` reads ``ctest --show-only=json-v1`` (each test's name, command,
LABELS and WORKING_DIRECTORY); :func:`read_cache` reads a ``CMakeCache.txt``;
:func:`cuda_compiler` says which CUDA compiler the configure found. Nothing here runs a process.
"""

from __future__ import annotations

import json
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.kinds.cmake.lang import CMakeTest

__all__ = ["parse_ctest_json", "read_cache", "parse_cache", "cuda_compiler"]

#: the largest CMakeCache.txt read (a real one is tens of kilobytes)
MAX_CACHE_BYTES = 64 << 20


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: must be a list of strings")
    return tuple(value)


def parse_ctest_json(text: str, source: str) -> tuple[CMakeTest, ...]:
    """The tests ``ctest --show-only=json-v1`` printed (``source`` names where the text came
    from in errors); a test with no command has ``command=()``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{source}: not a JSON object")
    if doc.get("kind") != "ctestInfo":
        raise InputError(f'{source}: kind: {doc.get("kind")!r}, not "ctestInfo" (ctest --show-only=json-v1)')
    version = doc.get("version")
    major = version.get("major") if isinstance(version, dict) else None
    if major != 1:
        raise InputError(f"{source}: version.major: {major!r}; only json-v1 (major 1) is read")
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        raise InputError(f"{source}: tests: must be a list")
    found = []
    for n, test in enumerate(tests):
        where = f"{source}: tests[{n}]"
        if not isinstance(test, dict):
            raise InputError(f"{where}: must be an object")
        name = test.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}.name: must be a non-empty string")
        command = _strings(test["command"], f"{where}.command") if "command" in test else ()
        props = test.get("properties", [])
        if not isinstance(props, list):
            raise InputError(f"{where}.properties: must be a list")
        labels: tuple[str, ...] = ()
        wd = None
        for k, prop in enumerate(props):
            if not isinstance(prop, dict) or not isinstance(prop.get("name"), str):
                raise InputError(f"{where}.properties[{k}]: must be an object with a name")
            if prop["name"] == "LABELS":
                labels = _strings(prop.get("value"), f"{where}.properties[{k}].value")
            elif prop["name"] == "WORKING_DIRECTORY":
                if not isinstance(prop.get("value"), str):
                    raise InputError(f"{where}.properties[{k}].value: must be a string")
                wd = prop["value"]
        found.append(CMakeTest(name=name, labels=labels, command=command, working_directory=wd, where="ctest"))
    return tuple(found)


def parse_cache(text: str, source: str) -> dict[str, str]:
    """``KEY:TYPE=VALUE`` entries of a CMakeCache.txt's text (``#`` and ``//`` lines are comments;
    a quoted ``"KEY":TYPE=VALUE`` too)."""
    cache: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("//"):
            continue
        if line.startswith('"'):
            end = line.find('"', 1)
            key, rest = (line[1:end], line[end + 1:]) if end > 0 else ("", "")
        else:
            key, _, rest = line.partition(":")
            rest = ":" + rest if _ else ""
        if not key or not rest.startswith(":") or "=" not in rest:
            raise InputError(f"{source}:{n}: not a cache entry (KEY:TYPE=VALUE)")
        cache[key] = rest.split("=", 1)[1]
    return cache


def read_cache(path: Path) -> dict[str, str]:
    """The entries of the ``CMakeCache.txt`` at ``path`` (bounded read: no FIFO, no device)."""
    data = read_user_file(Path(path), what="a CMake cache", limit=MAX_CACHE_BYTES)
    return parse_cache(data.decode("utf-8", errors="replace"), str(path))


def cuda_compiler(cache: dict[str, str]) -> str | None:
    """The CUDA compiler the configure found (``CMAKE_CUDA_COMPILER``), or None when it is unset,
    empty or ``…-NOTFOUND``."""
    value = cache.get("CMAKE_CUDA_COMPILER", "").strip()
    if not value or value.upper().endswith("NOTFOUND"):
        return None
    return value
