"""The interface every project kind fills, and the registry that holds them.

Modelled on pip's ``vcs`` backends: this module defines the base and the registry, each kind's
module (``relgate.kinds.cargo`` …) registers one instance of its subclass. Everything else asks
``relgate.kinds.registry.kind_of(name)`` for what a kind does — how it is recognised, where its
targets come from, which manifests it needs, the census rules it adds, what ``init`` writes for
it, how its package is built and tested — and never compares a kind's name.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["REGISTRY", "ProjectKind", "register"]


class ProjectKind:
    """One project kind. Subclasses set the class attributes and override the hooks."""

    name: str = ""
    #: files at the project root that say the repository is of this kind, in preference order
    marker_files: tuple[str, ...] = ()
    #: targets come from the project's own manifest (not from a lanes file's [target.NAME] commands)
    targets_from_project: bool = False
    #: without a lanes file the census cannot run (a not-run step in `nox -s host`)
    needs_lanes: bool = False
    #: without builds.toml no release build is declared (a not-run step in `nox -s host`)
    needs_builds: bool = False
    #: the census adds the Rust rules (targets of kind test/bench/example/bin in Cargo.toml)
    rust_census: bool = False
    #: the census names a collected test file that has no [target.NAME]
    test_file_census: bool = False
    #: package.toml keys only this kind accepts
    package_keys: tuple[str, ...] = ()
    #: package.dist needs package.dist_glob (the tarball is left where the build says)
    dist_needs_glob: bool = False
    #: what `init` adds to .gitignore beside the ledger's home
    gitignore: tuple[str, ...] = ()
    #: the example command init's lanes.toml shows for a declared target (None: targets are derived)
    example_command: str | None = None
    #: the test build is judged for warnings too (python: only the release build)
    test_build_warnings: bool = True
    #: the package-verify default build and test commands (argv), where the kind has them
    package_build: tuple[str, ...] = ()
    package_test: tuple[str, ...] = ()

    def version_problem(self, shown: str, version: str) -> str | None:
        """Why ``version`` is not a version of this kind (None when it is one)."""
        if not version.isprintable() or not version.strip():
            return f'"{shown}" is not a printable version string'
        return None

    def lane_command(self, *, target_kind: str, target_name: str, features: list[str], locked: bool,
                     ignored: bool, args: list[str]) -> list[str] | None:
        """The argv that runs a target derived from the project's manifest (None: declared commands only)."""
        return None


REGISTRY: dict[str, ProjectKind] = {}


def register(kind: ProjectKind) -> ProjectKind:
    """Add ``kind`` to the registry (each kind's module calls this once, at import)."""
    assert kind.name and kind.name not in REGISTRY, kind.name
    REGISTRY[kind.name] = kind
    return kind
