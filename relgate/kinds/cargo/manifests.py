"""What ``relgate init`` writes for a crate and what ``init --check`` says of one (pure: no I/O but
the crate's own files): the release build and the feature matrix, the lane each target's layout
leaves no doubt about, the package steps, and the features that moved.
"""

from __future__ import annotations

import re
from pathlib import Path

from relgate.core.schema import display_path, read_toml
from relgate.kinds.cargo.reader import CargoFacts, CargoTarget
from relgate.kinds.found import UNASSIGNED, DriftPlace, Found
from relgate.kinds.writing import quote

__all__ = ["cargo_lane", "judged_targets", "cargo_builds", "package_steps", "cargo_package_lines", "feature_drift",
           "cfg_feature", "has_unit_tests"]


def cargo_lane(t: CargoTarget) -> str:
    """The lane the census's layout rules leave no doubt about; "?" for any other."""
    if t.kind == "bench" and not t.harness and t.path.startswith("benches/"):
        return "bench"
    if "qualification" in t.required_features and t.path.startswith("tools/qualification/"):
        return "qualification"
    return UNASSIGNED


def judged_targets(facts: CargoFacts) -> tuple[tuple[str, str, str], ...]:
    """(name, lane, what) for every target the census judges."""
    return tuple((t.name, cargo_lane(t), f"{t.kind} {t.path}") for t in facts.targets
                 if t.kind in ("test", "bench") or t.path.startswith("tools/qualification/"))


def cargo_builds(facts: CargoFacts, *, lib_tests: bool = True) -> str:
    """builds.toml of a crate: the release build, the feature matrix, the unit tests."""
    locked = " --locked" if facts.locked else ""
    features = list(facts.features)
    sets = ["", *features] + ([",".join(features)] if len(features) > 1 else [])
    lines = [
        "# Release build, the feature matrix and the host checks `nox -s host` runs, in order, from the",
        "# crate root. Every build must be warning-free (an [[release.NAME.allow]] rule with a reason",
        "# accepts one warning).",
        "",
        "[release.default]",
        'clean = "cargo clean --release"',
        f'run = "cargo build --release{locked}"',
        "",
    ]
    gpu = set(facts.gpu_features)
    plain_sets = [s for s in sets if not gpu & set(s.split(","))]
    gpu_sets = [s for s in sets if gpu & set(s.split(","))]
    run = f'run = "cargo build --release{locked} --all-targets --no-default-features --features {{features}}"'
    if plain_sets:
        lines += [
            "# cargo-hack's shape: no default features, each feature alone, all features (the crate's",
            "# [features] only: an optional dependency's implicit feature is none of them).",
            "[matrix.features]", run,
            "features = [" + ", ".join(quote(s) for s in plain_sets) + "]",
            "",
        ]
    if gpu_sets:
        lines += [
            "# The feature sets that switch CUDA on build where the CUDA toolkit is (no GPU needed).",
            "[matrix.cuda]", run,
            "features = [" + ", ".join(quote(s) for s in gpu_sets) + "]",
            'requires = ["nvcc"]',
            "",
        ]
    lines += ["[[check]]", 'name = "release"', 'release = "default"', ""]
    if plain_sets:
        lines += ["[[check]]", 'name = "features"', 'matrix = "features"', ""]
    if gpu_sets:
        lines += ["[[check]]", 'name = "features-cuda"', 'matrix = "cuda"', ""]
    if facts.has_lib and lib_tests:
        lines += ["[[check]]", 'name = "unit"', f'run = "cargo test --release{locked} --lib"',
                  'warnings = "deny"   # the test build is a build: the no-warnings item counts it', ""]
    elif facts.has_lib:
        lines += ["# No #[test] under src/: `cargo test --lib` would run 0 tests (not-run). Once there are unit",
                  "# tests:", "# [[check]]", '# name = "unit"', f'# run = "cargo test --release{locked} --lib"',
                  '# warnings = "deny"', ""]
    return "\n".join(lines)


def package_steps(facts: CargoFacts) -> list[str]:
    """The package_verify steps this crate has (a bench or tool it lacks is a skip there)."""
    steps = ["export", "package", "extract", "inspect", *(["offline-lib"] if facts.has_lib else []), "offline-tests"]
    if any("qualification" in t.required_features or t.path.startswith("tools/qualification/") for t in facts.targets):
        steps.append("offline-tool")
    if any(t.kind == "bench" for t in facts.targets):
        steps.append("offline-bench")
    return steps


def cargo_package_lines(lanes: str | None) -> tuple[list[str], list[str]]:
    """package.toml's lines for a crate: the lanes file as a fixture the published crate must hold."""
    pkg = [] if lanes is None else [f"fixtures = [{quote(lanes)}]   # the census reads it in the published crate too"]
    return pkg, ['# registry = "local"   # cargo publish --locked --dry-run --registry NAME']


def feature_drift(found: Found, place: DriftPlace) -> list[str]:
    """A new feature in no feature set of builds.toml's [matrix], a matrix feature Cargo.toml dropped."""
    out: list[str] = []
    builds = place.manifests / "builds.toml"
    if not builds.is_file():
        return out
    features = found.features or ()
    matrix = read_toml(builds).get("matrix", {})
    listed = {f for m in matrix.values() if isinstance(m, dict)
              for s in m.get("features", []) if isinstance(s, str) for f in s.split(",") if f}
    for feature in features:
        if matrix and feature not in listed:
            out.append(f"new feature {feature} (Cargo.toml): in no feature set of {display_path(builds)} [matrix]")
    plus = {f for m in matrix.values() if isinstance(m, dict) for f in m.get("plus", []) if isinstance(f, str)}
    for feature in sorted((listed | plus) - set(features) - {"default"}):
        out.append(f"{display_path(builds)} [matrix] builds feature {feature}, which Cargo.toml no longer has")
    return out


_CFG_FEATURE = re.compile(r'^#!\[cfg\(feature\s*=\s*"([^"]+)"\)\]')


def cfg_feature(path: Path) -> str | None:
    """The feature a file is compiled only with (``#![cfg(feature = "cuda")]`` among its leading
    lines), else None. A FIFO or a device where the file should be is read as nothing (never a hang)."""
    try:
        if not path.is_file():
            return None
        with path.open(encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(200), handle):
                text = line.strip()
                match = _CFG_FEATURE.match(text)
                if match:
                    return match.group(1)
                if text and not text.startswith(("//", "#!", "/*", "*")):
                    return None
    except OSError:
        return None
    return None


def has_unit_tests(root: Path) -> bool:
    """Whether a source file under ``src/`` holds a ``#[test]`` or ``#[cfg(test)]`` (else
    ``cargo test --lib`` would run 0 tests: a check that is never more than not-run)."""
    for path in sorted((root / "src").rglob("*.rs"))[:5000] if (root / "src").is_dir() else ():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "#[test]" in text or "#[cfg(test)]" in text or "#[tokio::test" in text:
            return True
    return False
