"""Import an installed distribution's modules: ``python -I importcheck.py NAME [MODULE...]``.

Without modules, the distribution's own top-level modules: its ``top_level.txt``, else the
first part of each path its ``RECORD`` lists (``MarkupSafe`` installs ``markupsafe``). Each
import prints where it came from; the first that fails ends the run with one line naming
the module and the error (exit 1).

Standard library only, run as a script (``-I``) with the interpreter of the environment the
package was installed into.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

__all__ = ["main", "modules_of"]

_BINARY = (".so", ".pyd")


def modules_of(dist: importlib.metadata.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt")
    if text:
        names = [line.strip() for line in text.splitlines() if line.strip()]
    else:
        names = []
        for path in dist.files or ():
            parts = path.parts
            if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", "__pycache__"):
                continue
            if len(parts) > 1:
                names.append(parts[0])
            elif parts[0].endswith(".py"):
                names.append(parts[0][:-3])
            elif parts[0].endswith(_BINARY):
                names.append(parts[0].split(".", 1)[0])
    return sorted({n for n in names if n.isidentifier()})


def main(argv: list[str]) -> int:
    name, modules = argv[0], argv[1:]
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        print(f"{name} is not installed in {sys.prefix}")
        return 1
    modules = modules or modules_of(dist)
    if not modules:
        print(f"{name} {dist.version}: no top-level module in top_level.txt or RECORD; name one in publish.import")
        return 1
    for module in modules:
        try:
            loaded = importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of the import is the finding
            print(f"import {module} failed: {type(exc).__name__}: {exc}")
            return 1
        print(f"import {module}: {getattr(loaded, '__file__', None) or 'namespace package'}")
    print(f"{name} {dist.version} is installed; imported {', '.join(modules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
