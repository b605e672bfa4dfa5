"""The make kind: a Makefile project; targets declared in lanes.toml, release builds from the make database."""

from __future__ import annotations

from relgate.kinds.base import ProjectKind, register

__all__ = ["MAKE", "MAKEFILES"]

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


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


MAKE = register(Make())
