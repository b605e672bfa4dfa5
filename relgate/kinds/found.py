"""What a kind's reader found in a repository (targets, builds, the facts init writes from) and
where ``init --check`` compares it: plain records, shared by the adapters and their writers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relgate.core.record import record

__all__ = ["BUILTIN_LANES", "UNASSIGNED", "DriftPlace", "Found", "FoundBuild", "FoundTarget", "target_label",
           "target_who"]

#: the lanes every project has (a [lane.NAME] of its own adds one)
BUILTIN_LANES = ("host", "gate", "contract", "record", "toolkit", "bench", "qualification")
#: the lane of a judged row whose lane init cannot tell (written as a commented ``# "name" = "?"``)
UNASSIGNED = "?"


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
    #: (name, lane or UNASSIGNED, what) of every target the census judges; None: each of ``targets``,
    #: in the first of its labels that is a lane
    judged: tuple[tuple[str, str, str], ...] | None = None
    also_targets: tuple[str, ...] = ()  # targets the census does not judge (a crate's examples): no stale rows
    targets_note: tuple[str, ...] = ()  # comment lines lanes.toml writes above the [target.NAME] tables
    features: tuple[str, ...] | None = None  # the features the project declares (None: the kind has none)
    gpu_features: tuple[str, ...] = ()  # those that switch CUDA on
    feature_gates: tuple[tuple[str, str | None], ...] = ()  # target → the feature its file compiles only with
    package_steps: tuple[str, ...] = ()  # the steps package_verify runs (the checklist's package item)
    version_source: str = ""  # the file the version was read from, for init --check ("" : source)
    facts: object = None  # the kind's own reading: only its adapter looks inside

    def judged_rows(self) -> tuple[tuple[str, str, str], ...]:
        """(name, lane or UNASSIGNED, what) of each target the census judges: ``judged``, else each of
        ``targets`` in the first of its labels that is a lane."""
        if self.judged is not None:
            return self.judged
        return tuple((t.name, next((x for x in t.labels if x in BUILTIN_LANES), UNASSIGNED), t.what)
                     for t in self.targets)


@record
class DriftPlace:
    """What ``init --check`` compares a fresh reading with: the manifests and their lane rows."""

    root: Path
    manifests: Path
    lanes_path: Path  # the file of the [lanes] rows (manifests/lanes.toml or the project's own)
    rows: Mapping[str, str]  # target → lane
    project_lanes: Path | None = None  # project.lanes: the project's own lanes file


def target_label(target: Any) -> str:
    """What a census line calls a declared target (name, path, origin): its name, else where it is."""
    return target.name or target.path or target.origin or "<unnamed target>"


def target_who(target: Any) -> str:
    """``"name" (Cargo.toml [[test]] #2)``: a target and where it was declared."""
    name = f'"{target.name}"' if target.name else "a target without a name"
    return f"{name} ({target.origin})" if target.origin else name
