"""The cargo kind: a Rust crate; targets from Cargo.toml, lanes derived as cargo commands."""

from __future__ import annotations

import re

from relgate.kinds.base import ProjectKind, register

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
    rust_census = True
    package_keys = ("registry",)
    package_flow = "crate"
    registry_flow = "crate"

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


CARGO = register(Cargo())
