"""The text of each file ``relgate init`` writes, from what it read (pure: no I/O).

One renderer per file: ``builds.toml`` per kind, ``project.toml``, ``lanes.toml`` (a row per
target, ``# "name" = "?"`` for one it cannot place), ``package.toml``, ``checklist.toml``, a
commented ``measurements.toml``, ``hosts/local.toml`` and the ``noxfile.py``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from relgate.core.record import record
from relgate.manifest.discover import CargoFacts, CargoTarget, MakeFacts, PythonFacts
from relgate.manifest.keys import BUILTIN_LANES

__all__ = ["UNASSIGNED", "Reading", "cargo_lane", "cargo_builds", "make_builds", "python_builds", "project_toml",
           "lanes_toml", "package_toml", "checklist_toml", "measurements_toml", "host_toml", "NOXFILE", "quote",
           "env_prefix", "judged_targets"]

UNASSIGNED = "?"


@record
class Reading:
    """What init read: the project's kind, name, version, the tool it read it with, the facts."""

    kind: str
    name: str
    version: str | None
    source: str  # "cargo metadata", "Cargo.toml", "make -pRrq", "pyproject.toml [project]"
    facts: CargoFacts | MakeFacts | PythonFacts
    judged: tuple[tuple[str, str, str], ...] = ()  # cargo: (target, lane or "?", "test tests/x.rs")


def quote(text: str) -> str:
    """``text`` as a TOML basic string: backslash, quote and every control character escaped."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = re.sub(r"[\x00-\x1f\x7f]", lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), out)
    return '"' + out + '"'


_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_key(name: str) -> str:
    """``name`` as a TOML key: bare where TOML allows it, else quoted."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else quote(name)


def make_command(target: str) -> str:
    """``make TARGET`` as a TOML string whose shell command names exactly ``target``."""
    word = target if re.fullmatch(r"[A-Za-z0-9_.+@%/][A-Za-z0-9_.+@%/-]*", target) else shlex.quote(target)
    return quote(f"make {'-- ' if target.startswith('-') else ''}{word}")


def env_prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


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


def cargo_builds(facts: CargoFacts) -> str:
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
    if features:
        lines += [
            "# cargo-hack's shape: no default features, each feature alone, all features.",
            "[matrix.features]",
            f'run = "cargo build --release{locked} --all-targets --no-default-features --features {{features}}"',
            "features = [" + ", ".join(quote(s) for s in sets) + "]",
            "",
        ]
    lines += ["[[check]]", 'name = "release"', 'release = "default"', ""]
    if features:
        lines += ["[[check]]", 'name = "features"', 'matrix = "features"', ""]
    if facts.has_lib:
        lines += ["[[check]]", 'name = "unit"', f'run = "cargo test --release{locked} --lib"', ""]
    return "\n".join(lines)


def make_builds(facts: MakeFacts) -> str:
    targets = list(facts.targets)
    clean = "clean" in targets
    test = next((t for t in ("test", "check") if t in targets), None)
    goal = facts.default_goal if facts.default_goal in targets else None
    lines = [
        f"# Release builds and the host checks `nox -s host` runs, in order (read from make -pRrq on "
        f"{facts.makefile}).",
        "# A release target starts clean; its output must be warning-free.",
        "",
        "[release.default]",
    ]
    if clean:
        lines.append('clean = "make clean"')
    lines += [f"run = {make_command(goal) if goal else quote('make')}", ""]
    offered = [t for t in targets if t not in ("clean", test, goal)]
    if offered:
        lines += ["# The Makefile's other targets, offered as release builds: uncomment the ones a release",
                  "# must build (a target that needs a GPU toolkit: add requires = [\"nvcc\"]).", ""]
        for t in offered:
            lines += [f"# [release.{toml_key(t)}]"] + (['# clean = "make clean"'] if clean else []) \
                + [f"# run = {make_command(t)}", ""]
    lines += ["[[check]]", 'name = "release"', 'release = "default"', ""]
    if test:
        lines += ["[[check]]", f'name = "{test}"', f'run = "make {test}"', ""]
    return "\n".join(lines)


def python_builds(facts: PythonFacts) -> str:
    lines = [
        "# The release build (sdist and wheel) and the host checks `nox -s host` runs, in order.",
        "",
        "[release.dist]",
        'run = "python -m build --outdir dist"',
        "# setuptools prints `warning:` notes (MANIFEST.in patterns that match nothing, byte-compiling",
        "# switched off) that are no compiler's; a package with C extensions sets deny.",
        'warnings = "ignore"',
        "",
        "[[check]]",
        'name = "release"',
        'release = "dist"',
        "",
    ]
    if facts.has_tests:
        lines += ["[[check]]", 'name = "tests"', 'run = "python -m pytest -q"', ""]
    return "\n".join(lines)


def project_toml(r: Reading, *, rel_root: str, lanes: str | None, changelog: str | None) -> str:
    lines = [f"# Written by relgate init from {r.source}. Paths are relative to this folder.", "[project]",
             f"name = {quote(r.name)}", f"root = {quote(rel_root)}", f"kind = {quote(r.kind)}"]
    if r.version:
        lines.append(f"version = {quote(r.version)}")
    if changelog:
        lines.append(f"changelog = {quote(changelog)}")
    lines.append(f'# evidence_env = "{env_prefix(r.name)}_EVIDENCE"   # the variable your tests append evidence '
                 "cells to (default RELGATE_EVIDENCE)")
    if lanes is not None:
        lines.append(f"lanes = {quote(lanes)}   # the project's own lane table")
    return "\n".join(lines)


def lanes_toml(r: Reading) -> str:
    rows = ["# Which lane each target runs in. A target marked \"?\" has none yet: the census names it",
            f"# until it gets one ({', '.join(BUILTIN_LANES)}, or a [lane.NAME] of your own).",
            "", "[lanes]"]
    for name, lane, what in r.judged:
        row = f"{quote(name)} = {quote(lane)}"
        rows.append(f"# {row}   # {what}" if lane == UNASSIGNED else f"{row}   # {what}")
    if r.kind != "cargo":
        command = "make smoke" if r.kind == "make" else "python -m pytest -q tests/test_smoke.py"
        rows += ["", f"# A {r.kind} project declares its targets here, each with the command that runs it:",
                 '# "smoke" = "gate"', "# [target.smoke]", '# path = "tests/smoke.sh"', f"# command = {quote(command)}"]
    return "\n".join(rows)


def package_toml(r: Reading, *, lanes: str | None) -> str:
    pkg = ["# What `nox -s package_verify` and `nox -s publish_dry_run` check.", "", "[package]"]
    publish: list[str] = []
    facts = r.facts
    if isinstance(facts, CargoFacts):
        if lanes is not None:
            pkg.append(f"fixtures = [{quote(lanes)}]   # the census reads it in the published crate too")
        publish.append('# registry = "local"   # cargo publish --locked --dry-run --registry NAME')
    elif isinstance(facts, MakeFacts):
        pkg.append('build_command = "make"')
        test = next((t for t in ("test", "check") if t in facts.targets), None)
        pkg.append(f'test_command = "make {test}"' if test else '# test_command = "make test"')
    else:
        if "test" in facts.extras:
            pkg.append('extras = ["test"]               # installed with the wheel')
        pkg.append('# test_command = "python -m pytest -q tests"   # the sdist\'s tests, offline (default pytest)')
        if facts.lock:
            publish.append(f"lock = {quote(facts.lock)}   # publish_dry_run fails when it drifts")
    return "\n".join([*pkg, "", "[publish]", *publish])


def _package_steps(facts: CargoFacts) -> list[str]:
    """The package_verify steps this crate has (a bench or tool it lacks is a skip there)."""
    steps = ["export", "package", "extract", "inspect", *(["offline-lib"] if facts.has_lib else []), "offline-tests"]
    if any("qualification" in t.required_features or t.path.startswith("tools/qualification/") for t in facts.targets):
        steps.append("offline-tool")
    if any(t.kind == "bench" for t in facts.targets):
        steps.append("offline-bench")
    return steps


def checklist_toml(r: Reading, *, lanes_used: Sequence[str]) -> str:
    package = 'auto = "package"'
    if isinstance(r.facts, CargoFacts):
        package += "\ntargets = [" + ", ".join(quote(s) for s in _package_steps(r.facts)) + "]"
    items = [("host", "Host checks passed (census, release builds, tests, diff check)", 'auto = "session:host"'),
             ("no-warnings", "No compiler warning in any release or test build", 'auto = "warnings"'),
             *((f"lane-{lane}", f"Every {lane}-lane target passed on every board", f'auto = "lane:{lane}"')
               for lane in lanes_used),
             ("evidence", "Evidence clean against the last accepted release", 'auto = "evidence"'),
             ("package", "Package built from the commit and verified offline", package),
             ("ci-green", "CI is green on the release commit", "manual = true"),
             ("maintainer-approval", "A maintainer approved the release", "manual = true")]
    out = ["# The sign-off: `nox -s signoff` evaluates every item for the candidate commit; `nox -s tag`",
           "# refuses until it is complete. Boards: the machines the release is qualified on (a host",
           "# without a GPU board is \"host:NAME\").", "", "[release]", 'boards = ["host:local"]',
           'tag_requires = ["ci-green", "maintainer-approval"]']
    for item_id, title, how in items:
        out += ["", "[[item]]", f"id = {quote(item_id)}", f"title = {quote(title)}", how]
    return "\n".join(out)


def measurements_toml(r: Reading) -> str:
    return "\n".join([
        "# Measurements for the sign-off: what a bench target measures and the policy that compares the",
        "# previous release with the candidate (see docs/manifests.md). An example, to fill in:",
        "#",
        "# [measure.speed]",
        '# target = "my_bench"                  # the bench-lane target that writes the rows',
        f'# file_env = "{env_prefix(r.name)}_MEASURE"    # relgate points it at a fresh file (or output = "stdout")',
        '# format = "csv"                       # csv | tsv | jsonl | kv',
        '# key = ["case"]                       # the columns that name a row',
        '# metrics = { ns_per_iter = "lower" }  # higher | lower | equal is better',
        '# metadata = ["board", "commit", "source_hash"]',
        "# runs = 3",
        "# warmup = 1",
    ])


def host_toml() -> str:
    return "\n".join([
        "# This machine. Board, driver, toolkit and capabilities (nvcc, cuda, sm90, …) are detected",
        "# (nvidia-smi, nvcc --version, tools on PATH); anything declared here is added.",
        "[host]", 'name = "local"', 'kind = "local"', "detect = true"])


NOXFILE = '''"""relgate's sessions for this repository (written by relgate init).

    nox -s host            the lane census and the host checks (manifests/builds.toml)
    nox -s gate contract   the lanes;  nox -l lists every session
"""

import os
from pathlib import Path

import relgate

HERE = Path(__file__).resolve().parent
os.environ.setdefault("RELGATE_MANIFESTS", str(HERE / {manifests}))
os.environ.setdefault("RELGATE_HOSTS", str(HERE / "hosts"))
os.environ.setdefault("RELGATE_HOME", str(HERE / ".relgate"))
# The sessions live beside the relgate package (its checkout or sdist): register them here.
_SESSIONS = Path(relgate.__file__).resolve().parent.parent / "noxfile.py"
if not _SESSIONS.is_file():
    raise SystemExit(f"{{_SESSIONS}}: relgate's sessions are not beside the relgate package; install relgate "
                     "from its checkout (pip install -e PATH) or its sdist")
exec(compile(_SESSIONS.read_text(), str(_SESSIONS), "exec"), {{"__file__": str(_SESSIONS), "__name__": "relgate_noxfile"}})
'''
