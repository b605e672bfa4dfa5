"""``relgate init``: a first manifest folder for an existing repository, and ``init --check``.

:func:`plan_init` reads the repository (:mod:`relgate.manifest.discover`) and returns the
files a person would write — ``project.toml``, ``builds.toml``, ``lanes.toml`` (unless the
project keeps its own ``[lanes]`` file, which is reused through ``lanes = "…"``, never
copied), ``package.toml``, ``checklist.toml``, a commented ``measurements.toml``,
``hosts/local.toml`` and a ``noxfile.py`` when there is none — each commented and headed by
the ``#:schema`` line editors read. :func:`write_plan` writes them, never over an existing
file unless forced. :func:`drift` compares a fresh reading with the manifests.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.manifest.discover import CargoFacts, MakeFacts, PythonFacts, detect_kinds, read_cargo, read_make, \
    read_python
from relgate.manifest.keys import BUILTIN_LANES, PROJECT_KINDS
from relgate.manifest.reference import schema_comment
from relgate.manifest.schema import display_path

__all__ = ["PlannedFile", "InitPlan", "plan_init", "write_plan", "drift", "pick_kind", "find_lanes_file",
           "relgate_schemas"]

UNASSIGNED = "?"
_QUOTE = '"'


@record
class PlannedFile:
    path: Path
    text: str
    keep_existing: bool = False  # hosts/local.toml, noxfile.py: an existing one is this machine's / the project's


@record
class InitPlan:
    root: Path
    kind: str
    manifests: Path
    files: tuple[PlannedFile, ...]
    unassigned: tuple[str, ...]  # targets written as `# "name" = "?"` (or missing from the reused lanes file)
    lanes_file: Path | None  # the project's own lanes file, reused
    source: str  # what was read: "cargo metadata", "make -pRrq", "pyproject.toml [project]"
    next_commands: tuple[str, ...]


def relgate_schemas() -> Path | None:
    """The ``schemas/`` folder of the relgate that runs (a checkout or an sdist), if it has one."""
    import relgate

    folder = Path(relgate.__file__).resolve().parent.parent / "schemas"
    return folder if folder.is_dir() else None


def pick_kind(root: Path, kind: str | None) -> str:
    found = detect_kinds(root)
    if kind is not None:
        if kind not in PROJECT_KINDS:
            raise InputError(f"--kind {kind}: one of {', '.join(PROJECT_KINDS)}")
        return kind
    if not found:
        raise InputError(f"{display_path(root)}: no Cargo.toml, Makefile or pyproject.toml; say --kind "
                         f"{'|'.join(PROJECT_KINDS)}")
    if len(found) > 1:
        listed = ", ".join(f"{name} ({k})" for k, name in found)
        raise InputError(f"{display_path(root)}: found {listed}; say which one to qualify with --kind "
                         f"{'|'.join(k for k, _ in found)}")
    return found[0][0]


def find_lanes_file(root: Path, skip: Path | None = None) -> Path | None:
    """The project's own lanes file: ``qual/lanes.toml``, else a TOML file at the root or in
    ``qual/`` holding a ``[lanes]`` table (never one inside the manifest folder ``skip``)."""
    root = Path(root)
    first = root / "qual" / "lanes.toml"
    if first.is_file():
        return first
    header = re.compile(r"""^\s*\[\s*(?:lanes|"lanes"|'lanes')\s*\]\s*(?:#.*)?$""", re.M)
    for folder in (root / "qual", root):
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
            if skip is not None and path.resolve().parent == skip.resolve():
                continue
            if path.name in ("Cargo.toml", "pyproject.toml"):
                continue
            try:
                if header.search(path.read_text(encoding="utf-8", errors="replace")):
                    return path
            except OSError:
                continue
    return None


def _head(name: str, path: Path, schemas: Path | None, what: str, root: Path) -> str:
    line = schema_comment(name, path, schemas, root)
    return (line + "\n" if line else "") + what


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _env_prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


# --- per kind ------------------------------------------------------------------------------


def _cargo_lane(t: object) -> str:
    from relgate.manifest.discover import CargoTarget

    assert isinstance(t, CargoTarget)
    if t.kind == "bench" and not t.harness and t.path.startswith("benches/"):
        return "bench"
    if "qualification" in t.required_features and t.path.startswith("tools/qualification/"):
        return "qualification"
    return UNASSIGNED


def _cargo(facts: CargoFacts) -> tuple[str, list[tuple[str, str, str]]]:
    """builds.toml and (name, lane, what) for every target the census judges."""
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
            "features = [" + ", ".join(_q(s) for s in sets) + "]",
            "",
        ]
    lines += ["[[check]]", 'name = "release"', 'release = "default"', ""]
    if features:
        lines += ["[[check]]", 'name = "features"', 'matrix = "features"', ""]
    if facts.has_lib:
        lines += ["[[check]]", 'name = "unit"', f'run = "cargo test --release{locked} --lib"', ""]
    judged = [(t.name, _cargo_lane(t), f"{t.kind} {t.path}") for t in facts.targets
              if t.kind in ("test", "bench") or t.path.startswith("tools/qualification/")]
    return "\n".join(lines), judged


def _make(facts: MakeFacts) -> str:
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
    lines += [f'run = "make{" " + goal if goal else ""}"', ""]
    offered = [t for t in targets if t not in ("clean", test, goal)]
    if offered:
        lines += ["# The Makefile's other targets, offered as release builds: uncomment the ones a release",
                  "# must build (a target that needs a GPU toolkit: add requires = [\"nvcc\"]).", ""]
        for t in offered:
            lines += [f"# [release.{t}]"] + (['# clean = "make clean"'] if clean else []) + [f'# run = "make {t}"', ""]
    lines += ["[[check]]", 'name = "release"', 'release = "default"', ""]
    if test:
        lines += ["[[check]]", f'name = "{test}"', f'run = "make {test}"', ""]
    return "\n".join(lines)


def _python(facts: PythonFacts) -> str:
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


# --- the plan --------------------------------------------------------------------------------


def plan_init(root: Path, *, kind: str | None = None, manifests: Path | None = None,
              schemas: Path | None = None) -> InitPlan:
    root = Path(root).resolve()
    if not root.is_dir():
        raise InputError(f"{display_path(root)}: no such folder")
    kind = pick_kind(root, kind)
    mdir = Path(manifests).resolve() if manifests is not None else root / "manifests"
    schemas = schemas if schemas is not None else relgate_schemas()
    rel_root = Path(os.path.relpath(root, mdir)).as_posix()
    lanes_file = find_lanes_file(root, skip=mdir)
    judged: list[tuple[str, str, str]] = []
    version: str | None = None
    name = root.name
    if kind == "cargo":
        cargo = read_cargo(root)
        builds, judged = _cargo(cargo)
        name, version, source = cargo.name, cargo.version, cargo.source
    elif kind == "make":
        make = read_make(root)
        builds, source = _make(make), "make -pRrq"
    else:
        py = read_python(root)
        builds, name, version, source = _python(py), py.name, py.version, "pyproject.toml [project]"

    files: list[PlannedFile] = []

    def add(fname: str, schema: str, text: str, *, folder: Path = mdir, keep: bool = False) -> None:
        path = folder / fname
        files.append(PlannedFile(path=path, text=_head(schema, path, schemas, text, root).rstrip("\n") + "\n",
                                 keep_existing=keep))

    # project.toml
    changelog = next((n for n in ("CHANGELOG.md", "CHANGES.md") if (root / n).is_file()), None)
    lines = [f"# Written by relgate init from {source}. Paths are relative to this folder.", "[project]",
             f"name = {_q(name)}", f"root = {_q(rel_root)}", f"kind = {_q(kind)}"]
    if version:
        lines.append(f"version = {_q(version)}")
    if changelog:
        lines.append(f"changelog = {_q(changelog)}")
    lines.append(f'# evidence_env = "{_env_prefix(name)}_EVIDENCE"   # the variable your tests append evidence '
                 "cells to (default RELGATE_EVIDENCE)")
    if lanes_file is not None:
        lines.append(f"lanes = {_q(lanes_file.relative_to(root).as_posix())}   # the project's own lane table")
    add("project.toml", "project", "\n".join(lines))
    add("builds.toml", "builds", builds)

    # lanes: reuse the project's own file; otherwise a table with one row per target
    unassigned: list[str]
    if lanes_file is not None:
        from relgate.manifest.lanes import read_lanes_file

        have = read_lanes_file(lanes_file).assignments
        unassigned = [n for n, _, _ in judged if n not in have]
    else:
        unassigned = [n for n, lane, _ in judged if lane == UNASSIGNED]
        rows = ["# Which lane each target runs in. A target marked \"?\" has none yet: the census names it",
                f"# until it gets one ({', '.join(BUILTIN_LANES)}, or a [lane.NAME] of your own).",
                "", "[lanes]"]
        for tname, lane, what in judged:
            row = f"{_q(tname)} = {_q(lane)}"
            rows.append(f"# {row}   # {what}" if lane == UNASSIGNED else f"{row}   # {what}")
        if kind != "cargo":
            rows += ["", f"# A {kind} project declares its targets here, each with the command that runs it:",
                     "# \"smoke\" = \"gate\"", "# [target.smoke]", "# path = \"tests/smoke.sh\"",
                     f"# command = {_q('make smoke' if kind == 'make' else 'python -m pytest -q tests/test_smoke.py')}"]
        add("lanes.toml", "lanes", "\n".join(rows))

    # package.toml
    pkg = ["# What `nox -s package_verify` and `nox -s publish_dry_run` check.", "", "[package]"]
    if kind == "cargo" and lanes_file is not None:
        pkg.append(f"fixtures = [{_q(lanes_file.relative_to(root).as_posix())}]   # the census reads it in the "
                   "published crate too")
    if kind == "make":
        pkg.append('build_command = "make"')
        make_test = "test" if "test" in make.targets else "check" if "check" in make.targets else None
        pkg.append(f'test_command = "make {make_test}"' if make_test else '# test_command = "make test"')
    if kind == "python":
        if "test" in py.extras:
            pkg.append('extras = ["test"]               # installed with the wheel')
        pkg.append('# test_command = "python -m pytest -q tests"   # the sdist\'s tests, offline (default pytest)')
    pkg += ["", "[publish]"]
    if kind == "cargo":
        pkg.append('# registry = "local"   # cargo publish --locked --dry-run --registry NAME')
    if kind == "python" and py.lock:
        pkg.append(f"lock = {_q(py.lock)}   # publish_dry_run fails when it drifts")
    add("package.toml", "package", "\n".join(pkg))

    # checklist.toml
    lanes_used = sorted({lane for _, lane, _ in judged if lane != UNASSIGNED},
                        key=lambda lane: BUILTIN_LANES.index(lane) if lane in BUILTIN_LANES else 99)
    if lanes_file is not None:
        from relgate.manifest.lanes import read_lanes_file

        used = set(read_lanes_file(lanes_file).assignments.values())
        lanes_used = [lane for lane in BUILTIN_LANES if lane in used] + sorted(used - set(BUILTIN_LANES))
    items = [("host", "Host checks passed (census, release builds, tests, diff check)", 'auto = "session:host"'),
             ("no-warnings", "No compiler warning in any release or test build", 'auto = "warnings"')]
    items += [(f"lane-{lane}", f"Every {lane}-lane target passed on every board", f'auto = "lane:{lane}"')
              for lane in lanes_used]
    package_how = 'auto = "package"'
    if kind == "cargo":  # the package_verify steps this crate has: a bench or tool it lacks is a skip there
        steps = ["export", "package", "extract", "inspect", *(["offline-lib"] if cargo.has_lib else []),
                 "offline-tests"]
        if any("qualification" in t.required_features or t.path.startswith("tools/qualification/")
               for t in cargo.targets):
            steps.append("offline-tool")
        if any(t.kind == "bench" for t in cargo.targets):
            steps.append("offline-bench")
        package_how += "\ntargets = [" + ", ".join(_q(s) for s in steps) + "]"
    items += [("evidence", "Evidence clean against the last accepted release", 'auto = "evidence"'),
              ("package", "Package built from the commit and verified offline", package_how),
              ("ci-green", "CI is green on the release commit", "manual = true"),
              ("maintainer-approval", "A maintainer approved the release", "manual = true")]
    chk = ["# The sign-off: `nox -s signoff` evaluates every item for the candidate commit; `nox -s tag`",
           "# refuses until it is complete. Boards: the machines the release is qualified on (a host",
           "# without a GPU board is \"host:NAME\").", "", "[release]", 'boards = ["host:local"]',
           'tag_requires = ["ci-green", "maintainer-approval"]']
    for item_id, title, how in items:
        chk += ["", "[[item]]", f"id = {_q(item_id)}", f"title = {_q(title)}", how]
    add("checklist.toml", "checklist", "\n".join(chk))

    add("measurements.toml", "measurements", "\n".join([
        "# Measurements for the sign-off: what a bench target measures and the policy that compares the",
        "# previous release with the candidate (see docs/manifests.md). An example, to fill in:",
        "#",
        "# [measure.speed]",
        '# target = "my_bench"                  # the bench-lane target that writes the rows',
        f'# file_env = "{_env_prefix(name)}_MEASURE"    # relgate points it at a fresh file (or output = "stdout")',
        '# format = "csv"                       # csv | tsv | jsonl | kv',
        '# key = ["case"]                       # the columns that name a row',
        '# metrics = { ns_per_iter = "lower" }  # higher | lower | equal is better',
        '# metadata = ["board", "commit", "source_hash"]',
        "# runs = 3",
        "# warmup = 1",
    ]))
    add("local.toml", "host", "\n".join([
        "# This machine. Board, driver, toolkit and capabilities (nvcc, cuda, sm90, …) are detected",
        "# (nvidia-smi, nvcc --version, tools on PATH); anything declared here is added.",
        "[host]", 'name = "local"', 'kind = "local"', "detect = true"]), folder=root / "hosts", keep=True)
    if not (root / "noxfile.py").exists():
        files.append(PlannedFile(path=root / "noxfile.py", text=_NOXFILE.format(manifests=_q(
            Path(os.path.relpath(mdir, root)).as_posix())), keep_existing=True))
    here = Path.cwd().resolve() == root
    shown_m = Path(os.path.relpath(mdir, root)).as_posix() if here else str(mdir)
    ws = "" if here else f" --workspace {root}"
    nox_f = "" if here else f" -f {root / 'noxfile.py'}"
    ours = not (root / "noxfile.py").exists() or _is_ours(root / "noxfile.py")
    env = "" if ours and mdir == root / "manifests" else f"RELGATE_MANIFESTS={shown_m} "
    next_commands = (f"relgate{ws} --manifests {shown_m} check", f"relgate{ws} --manifests {shown_m} census",
                     f"{env}nox{nox_f} -s host")
    return InitPlan(root=root, kind=kind, manifests=mdir, files=tuple(files), unassigned=tuple(unassigned),
                    lanes_file=lanes_file, source=source, next_commands=next_commands)


def _is_ours(noxfile: Path) -> bool:
    try:
        return "written by relgate init" in noxfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


_NOXFILE = '''"""relgate's sessions for this repository (written by relgate init).

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
exec(compile(_SESSIONS.read_text(), str(_SESSIONS), "exec"), {{"__file__": str(_SESSIONS), "__name__": "relgate_noxfile"}})
'''


def write_plan(plan: InitPlan, *, force: bool = False) -> list[tuple[Path, str]]:
    """Write the planned files; (path, "wrote" | "kept") each. An existing file is refused
    (nothing is written) unless ``force``; hosts/local.toml and noxfile.py are kept."""
    existing = [f.path for f in plan.files if f.path.exists() and not f.keep_existing]
    if existing and not force:
        raise InputError(f"{display_path(existing[0])}: exists; relgate init never overwrites a file "
                         f"(--force to replace{' it' if len(existing) == 1 else f' it and {len(existing) - 1} more'}, "
                         "--dry-run to see what it would write)")
    done: list[tuple[Path, str]] = []
    for f in plan.files:
        if f.path.exists() and f.keep_existing and not force:
            done.append((f.path, "kept"))
            continue
        f.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.path.with_name(f".{f.path.name}.relgate-init")
        tmp.write_text(f.text, encoding="utf-8")
        os.replace(tmp, f.path)
        done.append((f.path, "wrote"))
    ignore = plan.root / ".gitignore"
    wanted = [".relgate/"] + (["dist/", "build/", "*.egg-info/"] if plan.kind == "python" else [])
    have = ignore.read_text(encoding="utf-8").splitlines() if ignore.is_file() else []
    missing = [w for w in wanted if w not in have and "/" + w not in have]
    if missing:
        with ignore.open("a", encoding="utf-8") as out:
            if have and have[-1] != "":
                out.write("\n")
            out.write("\n".join(missing) + "\n")
        done.append((ignore, "added " + " ".join(missing) + " to"))
    return done


# --- init --check ----------------------------------------------------------------------------


_MAKE_WORD = re.compile(r"\bmake\s+((?:[A-Za-z0-9][\w.=-]*[ \t]*)+)")


def drift(root: Path, manifests: Path, *, kind: str | None = None) -> list[str]:
    """One line per difference between the repository and its manifests (empty: none)."""
    from relgate.manifest.lanes import read_lanes_file
    from relgate.manifest.schema import read_toml
    from relgate.manifest.specs import parse_project

    mdir = Path(manifests).resolve()
    project = parse_project(read_toml(mdir / "project.toml"), path=mdir / "project.toml")
    root = project.root
    kind = kind or project.kind
    out: list[str] = []
    lanes_path = project.lanes or (mdir / "lanes.toml")
    rows = read_lanes_file(lanes_path).assignments if lanes_path.is_file() else {}
    shown_lanes = display_path(lanes_path)
    if kind == "cargo":
        facts = read_cargo(root)
        judged = [t for t in facts.targets if t.kind in ("test", "bench") or t.path.startswith("tools/qualification/")]
        names = {t.name for t in facts.targets}
        for t in judged:
            if t.name not in rows:
                out.append(f"new target {t.name} ({t.kind} {t.path}): no lane in {shown_lanes}")
        for target in rows:
            if target not in names:
                out.append(f"{shown_lanes}: lane row for a removed target {target}")
        builds = mdir / "builds.toml"
        if builds.is_file():
            matrix = read_toml(builds).get("matrix", {})
            listed = {f for m in matrix.values() if isinstance(m, dict)
                      for s in m.get("features", []) if isinstance(s, str) for f in s.split(",") if f}
            for feature in facts.features:
                if matrix and feature not in listed:
                    out.append(f"new feature {feature} (Cargo.toml): in no feature set of "
                               f"{display_path(builds)} [matrix]")
        if project.version and facts.version and facts.version != project.version:
            out.append(f"version {facts.version} in Cargo.toml, {project.version} in "
                       f"{display_path(mdir / 'project.toml')}")
    elif kind == "make":
        facts_m = read_make(root)
        known: set[str] = set()  # every make target a manifest names, commented offers included
        active: dict[str, str] = {}  # make target → the file of a command that runs it
        files = [mdir / n for n in ("builds.toml", "lanes.toml", "package.toml")]
        if project.lanes is not None:
            files.append(project.lanes)
        for path in files:
            if not path.is_file():
                continue
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                for m in _MAKE_WORD.finditer(line):
                    words = [w for w in m.group(1).split() if "=" not in w]
                    known.update(words)
                    if not line.lstrip().startswith("#"):
                        for word in words:
                            active.setdefault(word, display_path(path))
        if facts_m.default_goal:
            known.add(facts_m.default_goal)
        for target in facts_m.targets:
            if target not in known:
                out.append(f"new Makefile target {target}: named in no command of {display_path(mdir)}")
        for target, where in active.items():
            if target not in facts_m.targets:
                out.append(f"{where}: runs make {target}, which {facts_m.makefile} no longer has")
    else:
        py = read_python(root)
        if project.version and py.version and py.version != project.version:
            out.append(f"version {py.version} in pyproject.toml, {project.version} in "
                       f"{display_path(mdir / 'project.toml')}")
    return out
