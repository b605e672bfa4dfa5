"""What a built wheel holds: its compiled extensions.

- :func:`extension_findings`: a project that declares compiled extensions
  (``[package] extensions``) fails when its wheel is pure (``Root-Is-Purelib: true``, a
  ``py3-none-any`` tag) or lacks one of them — setuptools falls back to pure Python when an
  optional extension does not compile, and the tests then skip what needs it.
"""

from __future__ import annotations

import email.parser
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["EXTENSION_SUFFIXES", "extension_files", "extension_findings", "wheel_meta"]

#: what a compiled module's file ends with (CPython's EXTENSION_SUFFIXES on every platform, by pattern)
EXTENSION_SUFFIXES = (".so", ".pyd", ".dylib")


def extension_files(members: Sequence[str], module: str) -> list[str]:
    """The compiled files of ``module`` (``pkg._x`` → ``pkg/_x.cpython-311-…so``, ``pkg/_x.abi3.so``,
    ``pkg/_x.so``, ``pkg/_x.cp311-win_amd64.pyd``) among a wheel's ``members``."""
    *parents, leaf = module.split(".")
    folder = "/".join(parents)
    out = []
    for name in members:
        head, _, base = name.rpartition("/")
        if head == folder and base.endswith(EXTENSION_SUFFIXES) and base.split(".", 1)[0] == leaf:
            out.append(name)
    return sorted(out)


def wheel_meta(wheel: Path, member: str) -> str | None:
    """The text of ``*.dist-info/MEMBER`` in ``wheel`` (None when it has none)."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(f".dist-info/{member}")]
        return zf.read(names[0]).decode("utf-8", errors="replace") if names else None


def extension_findings(wheel: Path, extensions: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per declared extension the wheel does not hold."""
    if not extensions:
        return []
    with zipfile.ZipFile(wheel) as zf:
        members = zf.namelist()
    wheel_file = email.parser.Parser().parsestr(wheel_meta(wheel, "WHEEL") or "")
    pure = (wheel_file.get("Root-Is-Purelib") or "").strip().lower() == "true"
    tags = wheel.name[:-4].split("-")[-3:] if wheel.name.endswith(".whl") else []
    out = []
    for module, sources in extensions.items():
        if extension_files(members, module):
            continue
        built_from = f" from {', '.join(sources)}" if sources else ""
        if pure:
            out.append(f"{wheel.name} is a pure wheel ({'-'.join(tags)}, Root-Is-Purelib: true): the extension "
                       f"{module}{built_from} did not build")
        else:
            out.append(f"{wheel.name} lacks the compiled extension {module}{built_from}: it did not build "
                       f"(no {module.replace('.', '/')}.*{'|'.join(EXTENSION_SUFFIXES)} in the wheel)")
    return out
