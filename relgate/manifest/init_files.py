"""The text of each file ``relgate init`` writes, from what it read (pure: no I/O).

One renderer per file: ``builds.toml`` per kind, ``project.toml``, ``lanes.toml`` (a row per
target, ``# "name" = "?"`` for one it cannot place), ``package.toml``, ``checklist.toml``, a
commented ``measurements.toml``, ``hosts/local.toml`` and the ``noxfile.py``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from relgate.core.record import record
from relgate.core.text import inert
from relgate.kinds.base import Found
from relgate.kinds.registry import kind_of
from relgate.manifest.discover import CargoFacts, CargoTarget, MakeFacts, PythonFacts
from relgate.manifest.keys import BUILTIN_LANES
from relgate.manifest.skip_limits import SKIP_HINT, Skips, max_skipped_line
from relgate.manifest.specs import SHELL_OPERATORS

__all__ = ["UNASSIGNED", "Reading", "cargo_lane", "cargo_builds", "found_builds", "make_builds", "python_builds",
           "project_toml", "lanes_toml", "skip_tables", "lane_settings_toml", "package_toml", "checklist_toml",
           "measurements_toml", "host_toml", "NOXFILE", "quote", "env_prefix", "judged_targets", "python_targets",
           "python_target_command"]

UNASSIGNED = "?"


@record
class Reading:
    """What init read: the project's kind, name, version, the tool it read it with, the facts."""

    kind: str
    name: str
    version: str | None
    source: str  # "cargo metadata", "Cargo.toml", "make -pRrq", "pyproject.toml [project]"
    facts: CargoFacts | MakeFacts | PythonFacts | Found  # Found: what the kind's adapter read itself
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


def make_shell(target: str) -> str:
    """``make TARGET`` as a shell command that names exactly ``target``."""
    word = target if re.fullmatch(r"[A-Za-z0-9_.+@%/][A-Za-z0-9_.+@%/-]*", target) else shlex.quote(target)
    return f"make {'-- ' if target.startswith('-') else ''}{word}"


def make_command(target: str) -> str:
    """``make TARGET`` as a TOML string whose shell command names exactly ``target``."""
    return quote(make_shell(target))


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


def make_builds(facts: MakeFacts) -> str:
    """builds.toml of a make project: a release build per target that builds (read from the
    rule database: its recipes compile, link or write), each with what it produces and the
    toolkit it needs; never a goal that only prints help."""
    from relgate.manifest.make_db import NOT_RELEASES, build_target, own_recipe_builds, release_builds

    targets = list(facts.targets)
    clean = "clean" in targets
    test = next((t for t in ("test", "check") if t in targets), None)
    db = facts.database
    releases = release_builds(db, facts.targets, facts.default_goal) if db is not None else []
    lines = [
        f"# Release builds and the host checks `nox -s host` runs, in order (read from make -pRrq on "
        f"{facts.makefile}).",
        "# A release target starts clean; its output must be warning-free, and it must write what it",
        "# produces (a build that writes nothing is `fail: built nothing`).",
        "",
    ]
    skipped = [build_target(db, t) for t in targets if db is not None and t not in ("clean", test)
               and t not in {r.name for r in releases}]
    quiet = [b for b in skipped if not b.builds]
    if quiet:
        lines += ["# Not release builds (their recipes compile and write nothing):"]
        lines += [f"#   make {inert(b.name)}: {inert(b.why)}" for b in quiet]
        lines.append("")
    others = [b for b in skipped if b.builds and b.name not in NOT_RELEASES and own_recipe_builds(db, b.name)
              and not any(ch in b.why for ch in ("-gcc", "-g++", "-clang"))]
    if others:
        lines += ["# Other builds (the same files with other flags, say): add one as a [release.NAME] if a",
                  "# release must build it:"]
        lines += [f"#   make {inert(b.name)}: {inert(b.why)}"
                  + (f"; needs {', '.join(b.toolkits)}" if b.toolkits else "")
                  for b in others]
        lines.append("")
    runners = [b for b in skipped if b.builds and b not in others]
    if runners:
        lines += ["# Targets that run something (a test, a bench, a script): give each a lane in lanes.toml",
                  "# ([target.NAME] command = \"make NAME\"), or a [[check]] here:"]
        lines += [f"#   make {inert(b.name)}: {inert(b.why)}"
                  + (f"; needs {', '.join(b.toolkits)}" if b.toolkits else "")
                  for b in runners]
        lines.append("")
    if not releases:
        lines += ["# No target of this Makefile builds anything that make -pRrq shows; name the release build:",
                  "# [release.default]", '# run = "make TARGET"', '# produces = ["path/of/what/it/builds"]', ""]
    for index, build in enumerate(releases):
        name = "default" if index == 0 else _release_name(build.name)
        lines.append(f"[release.{name}]")
        if clean:
            lines.append('clean = "make clean"')
        lines.append(f"run = {make_command(build.name)}")
        if build.produces:
            lines.append("produces = [" + ", ".join(quote(p) for p in build.produces) + "]")
        if build.toolkits:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.toolkits) + "]   # its recipes call "
                         + " and ".join(build.toolkits) + "; compiles without a GPU")
        lines.append("")
    # the builds that need a toolkit first, so the plain build's files are the ones left for the tests
    ordered = [*range(1, len(releases)), 0] if releases else []
    for index in ordered:
        build = releases[index]
        check = "release" if index == 0 else f"release-{_release_name(build.name)}"
        release = "default" if index == 0 else _release_name(build.name)
        lines += ["[[check]]", f"name = {quote(check)}", f"release = {quote(release)}", ""]
    if test:
        lines += ["[[check]]", f'name = "{test}"', f'run = "make {test}"',
                  'warnings = "deny"   # the test build is a build: the no-warnings item counts it']
        kits = build_target(db, test).toolkits if db is not None else ()
        if kits:
            lines.append("requires = [" + ", ".join(quote(k) for k in kits) + "]")
        lines.append("")
    return "\n".join(lines)


def _release_name(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", target) or "build"


def make_build_command(facts: MakeFacts) -> str:
    """The command that builds the project in package_verify's extracted tree."""
    from relgate.manifest.make_db import release_builds

    releases = release_builds(facts.database, facts.targets, facts.default_goal) if facts.database else []
    return make_shell(releases[0].name) if releases else "make"


def found_builds(found: Found) -> str:
    """builds.toml from what a kind's adapter found: each release build (a toolkit's first, so the
    plain build's files are the ones left for the tests), then each test build, all held warning-free."""
    lines = [f"# Release builds and the host checks `nox -s host` runs, in order (read from {inert(found.source)}).",
             "# A release target starts clean; its output must be warning-free, and it must write something",
             "# (a build that writes nothing is `fail: built nothing`).", ""]
    if found.notes:
        lines += ["# Not read (init runs none of the project's code; the census asks the project's own tools):"]
        lines += [f"#   {inert(note)}" for note in found.notes]
        lines.append("")
    if not found.releases:
        lines += ["# No release build was found; name one:", "# [release.default]", '# run = "…"', ""]
    for build in found.releases:
        head = f"[release.{toml_key(build.name)}]"
        lines.append(f"{head}   # {inert(build.why)}" if build.why else head)
        lines += [f"clean = {quote(build.clean)}"] if build.clean else []
        lines.append(f"run = {quote(build.run)}")
        lines += ["shell = true"] if _needs_shell(build.run) or (build.clean and _needs_shell(build.clean)) else []
        if build.requires:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.requires) + "]   # compiles without a GPU")
        lines.append("")
    for build in sorted(found.releases, key=lambda b: not b.requires):
        check = build.name if build.name.startswith("release") else f"release-{build.name}"
        lines += ["[[check]]", f"name = {quote(check)}", f"release = {quote(build.name)}", ""]
    for build in found.checks:
        lines += ["[[check]]", f"name = {quote(build.name)}", f"run = {quote(build.run)}",
                  *(["shell = true"] if _needs_shell(build.run) else []),
                  'warnings = "deny"   # the test build is a build: the no-warnings item counts it']
        if build.requires:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.requires) + "]")
        lines.append("")
    return "\n".join(lines)


def _needs_shell(command: str) -> bool:
    """Whether ``command`` is shell syntax (``a && b``): written with ``shell = true``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return True
    return any(w in SHELL_OPERATORS for w in words)


def python_builds(facts: PythonFacts) -> str:
    build = facts.build
    compiled = build is not None and build.compiled
    lines = ["# The release build (sdist and wheel) and the host checks `nox -s host` runs, in order.", ""]
    if compiled:
        assert build is not None
        lines += [f"# Compiled code ({build.backend_name}"
                  + (f"; extensions read from {build.source}" if build.source else "") + "):"]
        lines += [f"#   {e.name}" + (f" <- {', '.join(e.sources)}" if e.sources else "") for e in build.extensions]
        lines += ["# A compiler warning fails the build (setuptools' own packaging notes, such as MANIFEST.in",
                  "# patterns that match nothing, are not compiler warnings and do not count), and the build must",
                  "# leave a CPython platform wheel: a pure py3-none-any wheel means no extension was compiled.",
                  "[release.dist]", 'clean = "rm -rf dist"', 'run = "python -m build --outdir dist"',
                  'warnings = "deny"', 'produces = ["dist/*-cp3*.whl"]']
    else:
        lines += ["[release.dist]", 'run = "python -m build --outdir dist"',
                  "# A pure-Python package compiles nothing; a package with C extensions sets deny.",
                  'warnings = "ignore"']
    lines += ["", "[[check]]", 'name = "release"', 'release = "dist"', ""]
    if facts.has_tests:
        deps = facts.tests
        lines += ["# pytest in a fresh environment holding the wheel built from the tree and the test",
                  "# dependencies: never an installed copy of the package, never one from an index.",
                  "[[check]]", 'name = "tests"', 'builtin = "python-tests"']
        if deps is not None and deps.kind == "group":
            lines.append(f"group = {quote(deps.name)}   # [dependency-groups] in pyproject.toml")
        elif deps is not None and deps.kind == "extra":
            lines.append(f"extras = [{quote(deps.name)}]")
        elif deps is not None and deps.kind == "requirements":
            lines.append(f"requirements = {quote(deps.name)}")
        else:
            lines.append('# group = "tests"   # where pytest and the other test dependencies are declared')
        lines.append("")
    return "\n".join(lines)


def python_targets(facts: PythonFacts) -> tuple[tuple[str, str, str], ...]:
    """(name, lane, what) for every test file pytest collects: the host lane, run in the test
    environment by the tests check, so each is a declared target the census keeps in step."""
    out = []
    seen: set[str] = set()
    for path in facts.test_files:
        stem = path.rsplit("/", 1)[-1][:-3]
        name = stem if stem not in seen else path[:-3].replace("/", "-")
        seen.add(name)
        out.append((name, "gate", f"pytest {path}"))
    return tuple(out)


def project_toml(r: Reading, *, rel_root: str, lanes: str | None, changelog: str | None) -> str:
    lines = [f"# Written by relgate init from {inert(r.source)}. Paths are relative to this folder.", "[project]",
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


def lanes_toml(r: Reading, skips: Skips | None = None) -> str:
    """The [lanes] table, and ``max_skipped`` per target from the clean run ``skips`` (None: no
    clean run recorded, a commented hint instead)."""
    rows = ["# Which lane each target runs in. A target marked \"?\" has none yet: the census names it",
            f"# until it gets one ({', '.join(BUILTIN_LANES)}, or a [lane.NAME] of your own).",
            "", "[lanes]"]
    for name, lane, what in r.judged:
        row = f"{quote(name)} = {quote(lane)}"
        what = inert(what)  # read from the repository: one comment line, whatever it holds
        rows.append(f"# {row}   # {what}" if lane == UNASSIGNED else f"{row}   # {what}")
    if isinstance(r.facts, Found):  # each target with the command that runs it alone
        for t in r.facts.targets:
            rows += ["", f"[target.{quote(t.name)}]"] + ([f"path = {quote(t.path)}"] if t.path else [])
            rows.append(f"command = {quote(t.command)}")
            rows += ["shell = true"] if _needs_shell(t.command) else []
            if t.requires:
                rows.append("requires = [" + ", ".join(quote(k) for k in t.requires) + "]   # elsewhere: not run")
            rows += [line] if (line := max_skipped_line(skips, t.name)) else []
        return "\n".join(rows + _skip_hint(r, skips))
    adapter = kind_of(r.kind)
    if adapter.test_file_census and r.judged:
        rows += ["", "# Each test file pytest collects is a target: a new one without a lane is named by the census.",
                 "# The gate lane runs each file in the fresh test environment of the tests check."]
        for name, _lane, what in r.judged:
            path = what.split(" ", 1)[1]
            rows += ["", f"[target.{quote(name)}]", f"path = {quote(path)}",
                     f"command = {quote(python_target_command(r.facts, path))}"]
            rows += [line] if (line := max_skipped_line(skips, name)) else []
        return "\n".join(rows + _skip_hint(r, skips))
    if adapter.example_command is not None:
        command = adapter.example_command
        rows += ["", f"# A {r.kind} project declares its targets here, each with the command that runs it:",
                 '# "smoke" = "gate"', "# [target.smoke]", '# path = "tests/smoke.sh"', f"# command = {quote(command)}"]
    rows += skip_tables(skips, [name for name, lane, _what in r.judged if lane != UNASSIGNED])
    return "\n".join(rows + _skip_hint(r, skips))


def skip_tables(skips: Skips | None, names: Sequence[str]) -> list[str]:
    """``[target.NAME] max_skipped = …`` for each of ``names`` whose clean run skipped tests."""
    rows: list[str] = []
    for name in names:
        if line := max_skipped_line(skips, name):
            rows += ["", f"[target.{quote(name)}]", line]
    return rows


def _skip_hint(r: Reading, skips: Skips | None) -> list[str]:
    return ["", SKIP_HINT] if skips is None and any(lane != UNASSIGNED for _, lane, _ in r.judged) else []


def python_target_command(facts: CargoFacts | MakeFacts | PythonFacts, path: str) -> str:
    """One test file, run by ``relgate pytest`` in a fresh environment holding the tree's wheel."""
    deps = facts.tests if isinstance(facts, PythonFacts) else None
    opt = {"group": "--group", "extra": "--extra", "requirements": "--requirements"}.get(deps.kind if deps else "")
    return "relgate pytest" + (f" {opt} {deps.name}" if opt and deps else "") + f" -- -q {path}"


def lane_settings_toml(settings: dict[str, tuple[tuple[str, ...], bool, str]]) -> str:
    """``[lane.gate] features = ["cuda"]`` (and ``requires = ["cuda"]`` for a CUDA feature) for
    each lane whose every target needs those features, with why init says so."""
    out: list[str] = []
    for lane, (features, gpu, why) in settings.items():
        out += ["", f"# {why}: without it, each runs 0 tests", f"[lane.{lane}]",
                f"features = [{', '.join(quote(f) for f in features)}]"]
        if gpu:
            out.append('requires = ["cuda"]   # a host with a GPU; elsewhere the lane is '
                       '"not run: no host offers cuda"')
    return "\n".join(out)


def package_toml(r: Reading, *, lanes: str | None) -> str:
    pkg = ["# What `nox -s package_verify` and `nox -s publish_dry_run` check.", "", "[package]"]
    publish: list[str] = []
    facts = r.facts
    if isinstance(facts, CargoFacts):
        if lanes is not None:
            pkg.append(f"fixtures = [{quote(lanes)}]   # the census reads it in the published crate too")
        publish.append('# registry = "local"   # cargo publish --locked --dry-run --registry NAME')
    elif isinstance(facts, Found):
        commands = [(key, c) for key, c in (("build_command", facts.package_build),
                                            ("test_command", facts.package_test)) if c]
        pkg += [f"{key} = {quote(c)}" for key, c in commands]
        if any(_needs_shell(c) for _, c in commands):
            pkg.append("shell = true   # the commands above are /bin/sh strings")
    elif isinstance(facts, MakeFacts):
        pkg.append(f"build_command = {quote(make_build_command(facts))}")
        test = next((t for t in ("test", "check") if t in facts.targets), None)
        pkg.append(f'test_command = "make {test}"' if test else '# test_command = "make test"')
    else:
        deps = facts.tests
        if deps is not None and deps.kind == "group":
            pkg.append(f"group = {quote(deps.name)}                 # [dependency-groups]: installed with the wheel")
        elif deps is not None and deps.kind == "extra":
            pkg.append(f"extras = [{quote(deps.name)}]               # installed with the wheel")
        elif "test" in facts.extras:
            pkg.append('extras = ["test"]               # installed with the wheel')
        build = facts.build
        if build is not None and build.extensions:
            pkg.append("# The wheel must hold each compiled extension (and be no pure wheel); read from "
                       f"{build.source}.")
            pkg.append("extensions = { " + ", ".join(
                f"{quote(e.name)} = [{', '.join(quote(x) for x in e.sources)}]" for e in build.extensions) + " }")
        wheel_files = [t.split("/", 1)[1] if t.startswith("src/") else t for t in facts.typed]
        if build is not None:
            wheel_files += [e.name.replace(".", "/") + ".*" for e in build.extensions]
        if wheel_files:
            pkg.append("wheel_fixtures = [" + ", ".join(quote(w) for w in wheel_files) + "]   # paths the wheel holds")
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


#: Lanes of per-board instruments run one at a time by name: their items are attested, not auto.
MANUAL_LANES = {"record": "Record-lane captures re-recorded where this release changed them (run by name)",
                "qualification": "Qualification tools run on each board and toolkit of the release (run by name)"}


def checklist_toml(r: Reading, *, lanes_used: Sequence[str]) -> str:
    package = 'auto = "package"'
    if isinstance(r.facts, CargoFacts):
        package += "\ntargets = [" + ", ".join(quote(s) for s in _package_steps(r.facts)) + "]"
    items = [("host", "Host checks passed (census, release builds, tests, diff check)", 'auto = "session:host"'),
             ("no-warnings", "No compiler warning in any release or test build" if kind_of(r.kind).test_build_warnings
              else "No compiler warning in any release build", 'auto = "warnings"'),
             *((f"lane-{lane}", f"Every {lane}-lane target passed on every board", f'auto = "lane:{lane}"')
               if lane not in MANUAL_LANES else
               (f"lane-{lane}", MANUAL_LANES[lane], "manual = true   # attested, or a run linked with "
                                                   f"relgate run --item lane-{lane} -- nox -s {lane} -- NAME")
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


#: The noxfile ``init`` writes (``str.format`` with ``manifests``): a template file beside this
#: module, so that the engine itself never imports nox (only the generated noxfile does).
NOXFILE = (Path(__file__).resolve().parent / "templates" / "noxfile.py.tmpl").read_text(encoding="utf-8")
