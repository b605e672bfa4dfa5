"""The interface every project kind fills, and the registry that holds them.

Modelled on pip's ``vcs`` backends: this module defines the base and the registry, each kind's
module (``relgate.kinds.cargo`` …) registers one instance of its subclass. Everything else asks
``relgate.kinds.registry.kind_of(name)`` for what a kind does — how it is recognised, where its
targets come from, which manifests it needs, the census rules it adds, what ``init`` writes for
it, how its package is built and tested — and never compares a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from relgate.core.record import record

__all__ = ["REGISTRY", "Found", "FoundBuild", "FoundTarget", "ProjectKind", "RunListing", "register"]

#: runs an argv in the project root and returns its standard output (the caller logs the command and
#: its output, and raises ExecutionError when it fails): how a kind asks its own test runner what it lists
RunListing = Callable[[Sequence[str]], str]


@record
class FoundTarget:
    """A target ``init`` found: a test the project's own runner knows, and the command that runs it alone."""

    name: str
    labels: tuple[str, ...]  # what the repository calls it (CTest LABELS): the first that is a lane is its lane
    what: str  # what it is and where it was read: "ctest test, labels gate;cuda (tests/CMakeLists.txt:12)"
    command: str  # a shell command
    path: str | None = None  # the file that declares it (the census checks it exists)
    requires: tuple[str, ...] = ()  # capabilities a host must offer (a GPU arm: cuda)


@record
class FoundBuild:
    """A build ``init`` found: a release build (``[release.NAME]``) or a test build (a ``[[check]]``)."""

    name: str
    run: str  # a shell command
    clean: str | None = None  # starts it clean (a release build)
    requires: tuple[str, ...] = ()  # a toolkit it needs (nvcc); it compiles without a GPU
    why: str = ""  # where it was read from


@record
class Found:
    """What a kind's own reader found in a repository, without running any of its code: what
    ``init`` writes the manifests from and ``init --check`` compares them with."""

    name: str
    version: str | None
    source: str  # what was read: "CMakeLists.txt and CMakePresets.json"
    targets: tuple[FoundTarget, ...] = ()
    releases: tuple[FoundBuild, ...] = ()
    checks: tuple[FoundBuild, ...] = ()  # test builds, held warning-free like the releases
    notes: tuple[str, ...] = ()  # what could not be read statically, said in builds.toml and by init
    package_build: str | None = None  # package_verify: builds the extracted source tree
    package_test: str | None = None  # package_verify: runs its tests there, offline


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
    #: how package_verify checks the package: "source" (a source tarball, extracted, built and tested
    #: offline), "crate" (cargo package), "wheel" (sdist and wheel)
    package_flow: str = "source"
    #: how publish_dry_run rehearses the publish: "crate" (cargo publish --dry-run), "index" (an upload
    #: to a local package index); None: the kind has no registry (the step is not-run, with why)
    registry_flow: str | None = None
    #: what the project's test runner is called in messages ("CTest"), where it lists tests
    test_runner: str = ""

    def discover(self, root: Path) -> Found | None:
        """What ``init`` reads from the repository at ``root``, without running any of its code.
        None: this kind's reader lives on the manifest floor (the kinds written before this hook)."""
        return None

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


REGISTRY: dict[str, ProjectKind] = {}


def register(kind: ProjectKind) -> ProjectKind:
    """Add ``kind`` to the registry (each kind's module calls this once, at import)."""
    assert kind.name and kind.name not in REGISTRY, kind.name
    REGISTRY[kind.name] = kind
    return kind
