"""The make kind: a Makefile project; targets declared in lanes.toml, release builds from the make database.

Its readers: :mod:`~relgate.kinds.make.reader` (``make -pRrq``, confined) and
:mod:`~relgate.kinds.make.database` (what each target's recipes do); what ``init`` writes and
``init --check`` says: :mod:`~relgate.kinds.make.manifests`.
"""

from __future__ import annotations

from pathlib import Path

from relgate.kinds.base import ProjectKind
from relgate.kinds.found import DriftPlace, Found
from relgate.kinds.make.manifests import make_builds, make_drift, make_package_lines
from relgate.kinds.make.reader import MAKEFILES, MakeFacts, read_make

__all__ = ["MAKE", "MAKEFILES"]


class Make(ProjectKind):
    name = "make"
    marker_files = MAKEFILES
    needs_lanes = True
    needs_builds = True
    package_keys = ("dist", "dist_glob", "build_command", "test_command")
    dist_needs_glob = True
    example_command = "make smoke"
    package_build = ("make",)
    package_test = ("make", "test")

    def discover(self, root: Path) -> Found:
        return Found(name=root.name, version=None, source="make -pRrq", facts=read_make(root))

    def builds_toml(self, found: Found) -> str:
        assert isinstance(found.facts, MakeFacts)
        return make_builds(found.facts)

    def package_lines(self, found: Found, *, lanes: str | None) -> tuple[list[str], list[str]]:
        assert isinstance(found.facts, MakeFacts)
        return make_package_lines(found.facts)

    def drift(self, found: Found, place: DriftPlace) -> list[str]:
        assert isinstance(found.facts, MakeFacts)
        return make_drift(found.facts, place)


MAKE = Make()
