"""The cargo kind: a Rust crate; targets from Cargo.toml, lanes derived as cargo commands.

Its readers: :mod:`~relgate.kinds.cargo.crate` (Cargo.toml, as cargo resolves it) and
:mod:`~relgate.kinds.cargo.reader` (``cargo metadata``); what ``init`` writes of a crate and what
``init --check`` says: :mod:`~relgate.kinds.cargo.manifests`; the census rules a crate adds:
:mod:`~relgate.kinds.cargo.census`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.kinds.base import CensusReport, ProjectKind
from relgate.kinds.cargo.census import census_scope, crate_census
from relgate.kinds.cargo.crate import CrateTarget, discover_cargo_targets
from relgate.kinds.cargo.manifests import (
    cargo_builds,
    cargo_package_lines,
    cfg_feature,
    feature_drift,
    has_unit_tests,
    judged_targets,
    package_steps,
)
from relgate.kinds.cargo.reader import CargoFacts, read_cargo
from relgate.kinds.found import DriftPlace, Found
from relgate.kinds.writing import judged_drift

__all__ = ["CARGO"]

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?", re.ASCII)  # semver.org's own regex


class Cargo(ProjectKind):
    name = "cargo"
    marker_files = ("Cargo.toml",)
    targets_from_project = True
    needs_lanes = True
    needs_builds = True
    package_keys = ("registry",)
    package_flow = "crate"
    registry_flow = "crate"

    def discover(self, root: Path) -> Found:
        facts = read_cargo(root)
        facts = dataclasses.replace(facts, lib_tests=facts.has_lib and has_unit_tests(root))
        return Found(name=facts.name, version=facts.version, source=facts.source, judged=judged_targets(facts),
                     also_targets=tuple(t.name for t in facts.targets), features=facts.features,
                     gpu_features=facts.gpu_features,
                     feature_gates=tuple((t.name, cfg_feature(root / t.path)) for t in facts.targets),
                     package_steps=tuple(package_steps(facts)), version_source="Cargo.toml", facts=facts)

    def project_targets(self, root: Path) -> list[CrateTarget]:
        return discover_cargo_targets(root / "Cargo.toml")

    def census_scope(self, targets: Sequence[Any], rows_by_target: Mapping[str, Any]) -> list[Any]:
        return census_scope(targets, rows_by_target)

    def census(self, root: Path, targets: Sequence[Any], scoped: Sequence[Any],
               rows_by_target: Mapping[str, Sequence[Any]], known: Collection[str], report: CensusReport) -> None:
        crate_census(root, targets, scoped, rows_by_target, known, report)

    def builds_toml(self, found: Found) -> str:
        assert isinstance(found.facts, CargoFacts)
        return cargo_builds(found.facts, lib_tests=found.facts.lib_tests)

    def package_lines(self, found: Found, *, lanes: str | None) -> tuple[list[str], list[str]]:
        return cargo_package_lines(lanes)

    def drift(self, found: Found, place: DriftPlace) -> list[str]:
        return judged_drift(found, place) + feature_drift(found, place)

    def version_problem(self, shown: str, version: str) -> str | None:
        if not _SEMVER.fullmatch(version):
            return f'"{shown}" is not a semver version (MAJOR.MINOR.PATCH, e.g. 0.4.0 or 1.0.0-rc.1), as cargo needs'
        return None

    def lane_command(self, *, target_kind: str, target_name: str, features: list[str], locked: bool,
                     ignored: bool, args: list[str]) -> list[str] | None:
        argv = ["cargo"]
        if target_kind == "bench":
            argv += ["bench", "--bench", target_name]
        elif target_kind in ("example", "bin"):
            argv += ["run", "--release", f"--{target_kind}", target_name]
        else:
            argv += ["test", "--release", "--test", target_name]
        if locked:
            argv.append("--locked")
        if features:
            argv += ["--features", ",".join(features)]
        after = ["--ignored"] if ignored else []
        after += args
        if after:
            argv += ["--", *after]
        return argv


CARGO = Cargo()
