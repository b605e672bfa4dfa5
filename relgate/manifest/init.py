"""``relgate init``: a first manifest folder for an existing repository, and ``init --check``.

:func:`plan_init` reads the repository (the kind's adapter: ``ProjectKind.discover``) and returns the
files a person would write — ``project.toml``, ``builds.toml``, ``lanes.toml`` (unless the
project keeps its own ``[lanes]`` file, which is reused through ``lanes = "…"``, never
copied), ``package.toml``, ``checklist.toml``, a commented ``measurements.toml``,
``hosts/local.toml`` and a ``noxfile.py`` when there is none — each commented and headed by
the ``#:schema`` line editors read (their text: :mod:`relgate.manifest.init_files`).
:func:`write_plan` writes them, never over an existing
file unless forced. ``init --check`` is :mod:`relgate.manifest.drift`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.repo_paths import inside
from relgate.core.schema import display_path
from relgate.kinds.found import Found
from relgate.kinds.registry import detect_kinds, kind_of, kinds
from relgate.manifest.init_files import (
    NOXFILE,
    UNASSIGNED,
    Reading,
    checklist_toml,
    host_toml,
    lane_settings_toml,
    lanes_toml,
    measurements_toml,
    package_toml,
    project_toml,
    quote,
    skip_tables,
)
from relgate.manifest.keys import BUILTIN_LANES, PROJECT_KINDS
from relgate.manifest.reference import schema_comment
from relgate.manifest.skip_limits import Skips

if TYPE_CHECKING:
    from relgate.manifest.lanes import LanesFile

__all__ = ["PlannedFile", "InitPlan", "plan_init", "read_repository", "write_plan", "pick_kind", "find_lanes_file",
           "relgate_schemas", "find_changelog", "CHANGELOG_NAMES"]


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
    stale: tuple[str, ...]  # rows of the reused lanes file that name no target
    lanes_file: Path | None  # the project's own lanes file, reused
    source: str  # what was read: "cargo metadata", "make -pRrq", "pyproject.toml [project]"
    next_commands: tuple[str, ...]
    gitignore: tuple[str, ...] = ()  # lines appended to .gitignore (the ledger home, bytecode, python's build output)
    notes: tuple[str, ...] = ()  # what the kind's reader could not read without running the project's code


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
        markers = [k.marker_files[-1] for k in kinds().values()]  # the usual name last: Makefile
        raise InputError(f"{display_path(root)}: no {', '.join(markers[:-1])} or {markers[-1]}; say --kind "
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
        return inside(root, first, "qual/lanes.toml")
    header = re.compile(r"""^\s*\[\s*(?:lanes|"lanes"|'lanes')\s*\]\s*(?:#.*)?$""", re.M)
    for folder in (root / "qual", root):
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
            if skip is not None and path.resolve().parent == skip.resolve():
                continue
            if any(path.name in k.marker_files for k in kinds().values()) or not path.is_file():
                continue
            try:
                inside(root, path, path.name)
            except InputError:  # a symlink out of the repository (a shared rustfmt.toml): not read
                continue
            try:
                if header.search(path.read_text(encoding="utf-8", errors="replace")):
                    return path
            except OSError:
                continue
    return None


#: the names changelogs go by, in the order init prefers them (Markdown and reStructuredText)
CHANGELOG_NAMES = tuple(f"{stem}{ext}" for stem in ("CHANGELOG", "CHANGES", "NEWS", "HISTORY", "RELEASE_NOTES")
                        for ext in (".md", ".rst", ".txt", ""))


def find_changelog(root: Path) -> str | None:
    """The project's changelog at the root (any case: ``Changes.rst``, ``changelog.md``), if it keeps one."""
    try:
        present = {p.name.upper(): p.name for p in Path(root).iterdir() if p.is_file()}
    except OSError:
        return None
    return next((present[n.upper()] for n in CHANGELOG_NAMES if n.upper() in present), None)


def _lane_settings(found: Found, assignments: dict[str, str],
                   lanes_file: LanesFile | None = None) -> dict[str, tuple[tuple[str, ...], bool, str]]:
    """lane → (the features its targets need, whether one switches CUDA on, why), for each lane
    whose files all start with the same ``#![cfg(feature = …)]``, else whose reused lane file
    names ``--features`` for it (relgate.manifest.lane_features): one line in [lane.NAME]
    instead of one per target. Empty for a kind without features."""
    if found.features is None:
        return {}
    gates = dict(found.feature_gates)
    by_lane: dict[str, list[str | None]] = {}
    for name, lane in assignments.items():
        if name in gates:
            by_lane.setdefault(lane, []).append(gates[name])
    out: dict[str, tuple[tuple[str, ...], bool, str]] = {}
    for lane, gated in by_lane.items():
        if gated and gated[0] is not None and len(set(gated)) == 1 and lane in BUILTIN_LANES:
            why = f"every {lane}-lane file starts with #![cfg(feature = {quote(gated[0])})]"
            out[lane] = ((gated[0],), gated[0] in found.gpu_features, why)
    if lanes_file is not None:
        from relgate.manifest.lane_features import lane_file_features

        said = lane_file_features(lanes_file, declared=found.features, lanes_named=BUILTIN_LANES)
        for lane, (features, why) in said.items():
            if lane not in out:
                out[lane] = (features, any(f in found.gpu_features for f in features), why)
    return out


def _head(name: str, path: Path, schemas: Path | None, what: str, root: Path) -> str:
    line = schema_comment(name, path, schemas, root)
    return (line + "\n" if line else "") + what


def read_repository(root: Path, kind: str) -> tuple[Reading, str]:
    """What init reads (the kind's adapter reads it), and the builds.toml it makes of it."""
    adapter = kind_of(kind)
    found = adapter.discover(root)
    return Reading(kind=kind, facts=found, judged=found.judged_rows()), adapter.builds_toml(found)


def plan_init(root: Path, *, kind: str | None = None, manifests: Path | None = None,
              schemas: Path | None = None, skips: Skips | None = None) -> InitPlan:
    """Every file init would write for the repository at ``root`` (nothing is written).
    ``skips``: each lane target's skipped tests in the latest clean run at HEAD, read from the
    ledger by the stage (None: none recorded) — written as ``max_skipped``."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise InputError(f"{display_path(root)}: no such folder")
    kind = pick_kind(root, kind)
    mdir = Path(manifests).resolve() if manifests is not None else root / "manifests"
    schemas = schemas if schemas is not None else relgate_schemas()
    reading, builds = read_repository(root, kind)
    lanes_file = find_lanes_file(root, skip=mdir)
    lanes_rel = lanes_file.relative_to(root).as_posix() if lanes_file is not None else None
    if lanes_file is not None:  # reused: the census names what it lacks
        from relgate.manifest.lanes import read_lanes_file

        reused = read_lanes_file(lanes_file)
        have = reused.assignments
        unassigned = [n for n, _, _ in reading.judged if n not in have]
        used = set(have.values())
    else:
        unassigned = [n for n, lane, _ in reading.judged if lane == UNASSIGNED]
        used = {lane for _, lane, _ in reading.judged if lane != UNASSIGNED}
    lanes_used = [lane for lane in BUILTIN_LANES if lane in used] + sorted(used - set(BUILTIN_LANES))
    assignments = have if lanes_file is not None else {n: lane for n, lane, _ in reading.judged if lane != UNASSIGNED}
    settings = _lane_settings(reading.facts, assignments, reused if lanes_file is not None else None)
    targets = {t for t, _, _ in reading.judged} | set(reading.facts.also_targets)
    stale = tuple(sorted(n for n in assignments if n not in targets)) if lanes_file is not None else ()
    changelog = find_changelog(root)
    texts = [("project.toml", "project", project_toml(reading, rel_root=Path(os.path.relpath(root, mdir)).as_posix(),
                                                      lanes=lanes_rel, changelog=changelog)),
             ("builds.toml", "builds", builds)]
    if lanes_file is None:
        texts.append(("lanes.toml", "lanes", lanes_toml(reading, skips) + lane_settings_toml(settings)))
    elif settings or (extra := _skip_tables_beside(lanes_file, assignments, skips)):
        # the project's own table stays as it is; the settings sit beside it
        extra = _skip_tables_beside(lanes_file, assignments, skips) if settings else extra
        texts.append(("lanes.toml", "lanes", "# Settings for every target of a lane (the [lanes] table is "
                      f"{lanes_rel}).\n" + (lane_settings_toml(settings) + "\n".join(extra)).lstrip("\n")))
    texts += [("package.toml", "package", package_toml(reading, lanes=lanes_rel)),
              ("checklist.toml", "checklist", checklist_toml(reading, lanes_used=lanes_used)),
              ("measurements.toml", "measurements", measurements_toml(reading))]
    files = [PlannedFile(path=mdir / name, text=_head(schema, mdir / name, schemas, text, root).rstrip("\n") + "\n")
             for name, schema, text in texts]
    host = root / "hosts" / "local.toml"
    files.append(PlannedFile(path=host, text=_head("host", host, schemas, host_toml(), root) + "\n",
                             keep_existing=True))
    if not (root / "noxfile.py").exists():
        files.append(PlannedFile(path=root / "noxfile.py", keep_existing=True,
                                 text=NOXFILE.format(manifests=quote(Path(os.path.relpath(mdir, root)).as_posix()))))
    for f in files:
        _parses(f)
    gitignore = _gitignore_missing(root, kind)
    _stays_inside(root, mdir, [f.path for f in files], bool(gitignore))  # --dry-run refuses what init would
    return InitPlan(root=root, kind=kind, manifests=mdir, files=tuple(files), unassigned=tuple(unassigned),
                    stale=stale, lanes_file=lanes_file, source=reading.source, next_commands=_next_commands(root, mdir),
                    gitignore=gitignore, notes=reading.facts.notes)


def _skip_tables_beside(lanes_file: Path, assignments: dict[str, str], skips: Skips | None) -> list[str]:
    """max_skipped for the targets of a reused lanes file, each one it has no [target.X] for
    (that one is the project's: it is never edited)."""
    from relgate.manifest.lanes import read_lanes_file

    own = read_lanes_file(lanes_file).tables.get("target", {})
    return skip_tables(skips, [n for n in assignments if not (isinstance(own, dict) and n in own)])


def _parses(f: PlannedFile) -> None:
    """A generated manifest is TOML that parses: what could not be represented is refused here,
    with one line, before anything is written (never a file that check refuses)."""
    if f.path.suffix != ".toml":
        return
    import tomllib

    try:
        tomllib.loads(f.text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{display_path(f.path)}: relgate init cannot write it: a name read from the repository "
                         f"does not make valid TOML ({exc}); nothing was written") from None


def _base_of(root: Path, manifests: Path, path: Path) -> Path:
    """The folder a planned file must stay in: the repository, or a manifest folder a person
    named outside it (``--manifests``) for that folder's files."""
    if path.parent == manifests and root not in manifests.parents:
        return manifests
    return root


def _stays_inside(root: Path, manifests: Path, paths: list[Path], gitignore: bool) -> None:
    for path in paths:  # a symlinked manifests/, hosts/ or file leading out of its folder: refused
        inside(_base_of(root, manifests, path), path, f"{path.name}'s path", verb="writes")
    if gitignore:
        inside(root, root / ".gitignore", ".gitignore", verb="writes")


#: Lines that already keep nox's bytecode of the noxfile (``__pycache__/noxfile.*.pyc``) out.
_PYCACHE_IGNORED = ("__pycache__", "__pycache__/", "/__pycache__/", "**/__pycache__", "**/__pycache__/",
                    "*.pyc", "*.py[cod]", "*.py[co]")


def _gitignore_missing(root: Path, kind: str) -> tuple[str, ...]:
    """The ledger's home, the bytecode nox writes beside the noxfile it imports (a `git add -A`
    would commit it, and package_verify then finds it in the package), python's build output."""
    ignore = inside(root, root / ".gitignore", ".gitignore")
    have = [line.strip() for line in ignore.read_text(encoding="utf-8", errors="replace").splitlines()] \
        if ignore.is_file() else []
    wanted = [w for w in (".relgate/",) if w not in have and "/" + w not in have]
    if not set(have) & set(_PYCACHE_IGNORED):
        wanted.append("__pycache__/")
    wanted += [w for w in kind_of(kind).gitignore if w not in have and "/" + w not in have]
    return tuple(wanted)


def _next_commands(root: Path, mdir: Path) -> tuple[str, ...]:
    """check, census, nox -s host — as typed where the person stands."""
    here = Path.cwd().resolve() == root
    shown = Path(os.path.relpath(mdir, root)).as_posix() if here else str(mdir)
    ws = "" if here else f" --workspace {root}"
    nox_f = "" if here else f" -f {root / 'noxfile.py'}"
    ours = not (root / "noxfile.py").exists() or _is_ours(root / "noxfile.py")
    env = "" if ours and mdir == root / "manifests" else f"RELGATE_MANIFESTS={shown} "
    return (f"relgate{ws} --manifests {shown} check", f"relgate{ws} --manifests {shown} census",
            f"{env}nox{nox_f} -s host")


def _is_ours(noxfile: Path) -> bool:
    try:  # a FIFO or a device there is no noxfile of ours (and is never read: it would wait)
        return noxfile.is_file() and "written by relgate init" in noxfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def write_plan(plan: InitPlan, *, force: bool = False) -> list[tuple[Path, str]]:
    """Write the planned files; (path, "wrote" | "kept") each. An existing file is refused
    (nothing is written) unless ``force``; hosts/local.toml and noxfile.py are kept."""
    _stays_inside(plan.root, plan.manifests, [f.path for f in plan.files], bool(plan.gitignore))
    ignore = plan.root / ".gitignore"
    if plan.gitignore and ignore.exists() and not ignore.is_file():  # a FIFO would hang the append: before any write
        raise InputError(f"{display_path(ignore)}: not a regular file: relgate init appends nothing to it")
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
        try:
            f.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.path.with_name(f".{f.path.name}.relgate-init")
            tmp.write_text(f.text, encoding="utf-8")
            os.replace(tmp, f.path)
        except OSError as exc:  # manifests/ is a file, a read-only folder, a full disk: one line
            raise InputError(f"{display_path(f.path)}: cannot write: {exc.strerror or exc}") from None
        done.append((f.path, "wrote"))
    if plan.gitignore:  # appended, never rewritten
        ignore = plan.root / ".gitignore"
        text = ignore.read_text(encoding="utf-8", errors="replace") if ignore.is_file() else ""
        try:
            with ignore.open("a", encoding="utf-8") as out:
                out.write(("\n" if text and not text.endswith("\n") else "") + "\n".join(plan.gitignore) + "\n")
        except OSError as exc:
            raise InputError(f"{display_path(ignore)}: cannot append: {exc.strerror or exc}") from None
        done.append((ignore, "added " + " ".join(plan.gitignore) + " to"))
    return done
