"""The interface every project kind fills.

Modelled on pip's ``vcs`` backends: this module defines the base, each kind's package
(``relgate.kinds.cargo`` …) one instance of its subclass, and :mod:`relgate.kinds.registry`
lists them in detection order. Everything else asks
``relgate.kinds.registry.kind_of(name)`` for what a kind does — how it is recognised, where its
targets come from, which manifests it needs, the census rules it adds, what ``init`` writes for
it, how its package is built and tested — and never compares a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.kinds.found import DriftPlace, Found
from relgate.kinds.writing import found_builds, found_package_lines, judged_drift

__all__ = ["CensusReport", "ProjectKind", "RunListing"]

#: runs an argv in the project root and returns its standard output (the caller logs the command and
#: its output, and raises ExecutionError when it fails): how a kind asks its own test runner what it lists
RunListing = Callable[[Sequence[str]], str]
#: (rule, target, message): how a kind's census rules report a violation
CensusReport = Callable[[str, str, str], None]


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
    #: how package_verify checks the package: "source" (a source tarball, extracted, built and tested
    #: offline), "crate" (cargo package), "wheel" (sdist and wheel)
    package_flow: str = "source"
    #: how publish_dry_run rehearses the publish: "crate" (cargo publish --dry-run), "index" (an upload
    #: to a local package index); None: the kind has no registry (the step is not-run, with why)
    registry_flow: str | None = None
    #: what the project's test runner is called in messages ("CTest"), where it lists tests
    test_runner: str = ""

    def discover(self, root: Path) -> Found:
        """What ``init`` reads from the repository at ``root``, without running any of its code
        (InputError, one line naming the file, where it cannot be read)."""
        raise NotImplementedError(self.name)

    def project_targets(self, root: Path) -> Sequence[object] | None:
        """The targets the project's own manifest declares (``targets_from_project``): records with
        name, path, kind, required_features, harness, origin and auto; None: a lanes file declares them."""
        return None

    def builds_toml(self, found: Found) -> str:
        """The text of the ``builds.toml`` init writes (after its schema line)."""
        return found_builds(found)

    def package_lines(self, found: Found, *, lanes: str | None) -> tuple[list[str], list[str]]:
        """package.toml's ``[package]`` and ``[publish]`` lines (``lanes``: the project's own lanes file)."""
        return found_package_lines(found)

    def drift(self, found: Found, place: DriftPlace) -> list[str]:
        """``init --check``: one line per way the repository moved past its manifests (the version is
        compared by the caller, for every kind alike)."""
        return judged_drift(found, place)

    def census_scope(self, targets: Sequence[Any], rows_by_target: Mapping[str, Any]) -> list[Any]:
        """The declared targets the lane census judges (each is a target record: name, path, kind,
        origin …; ``rows_by_target``: the [lanes] rows by target)."""
        return list(targets)

    def census(self, root: Path, targets: Sequence[Any], scoped: Sequence[Any],
               rows_by_target: Mapping[str, Sequence[Any]], known: Collection[str], report: CensusReport) -> None:
        """The kind's own census rules beside the common ones: each violation through
        ``report(rule, target, message)`` (the census orders them)."""

    def listed_tests(self, root: Path, run: RunListing) -> tuple[tuple[str, str], ...] | None:
        """(name, where) of every test the project's own test runner lists, asked through ``run``
        (the census names each that no target declares). None: the kind has no such listing."""
        return None

    def version_problem(self, shown: str, version: str) -> str | None:
        """Why ``version`` is not a version of this kind (None when it is one)."""
        if not version.isprintable() or not version.strip():
            return f'"{shown}" is not a printable version string'
        return None

    def lane_command(self, *, target_kind: str, target_name: str, features: list[str], locked: bool,
                     ignored: bool, args: list[str]) -> list[str] | None:
        """The argv that runs a target derived from the project's manifest (None: declared commands only)."""
        return None
