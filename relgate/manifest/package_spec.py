"""``package.toml``: what a project's package must and must not hold, how it is built and
tested (make, python), and how its publish is rehearsed — plus the python lock file it names.

Optional, in the manifest folder; validated like every manifest (unknown keys with a
did-you-mean, every problem naming the file and the dotted key, exit 2). ``parse_package``
is pure; ``load_package_manifest`` reads the file and checks the lock it names.

    [package]
    forbid = ["*.bak"]                 # globs on top of the defaults (relgate.inspect_package)
    allow = ["tests/data/*.tar.gz"]    # globs exempt from the defaults
    fixtures = ["tests/data/x.bin"]    # paths (or globs) every package must hold
    dist = "make dist"                 # make: builds the tarball …
    dist_glob = "dist/*.tar.gz"        # … found here (default: git archive of the commit)
    build_command = "make"             # make: in the extracted tree (default make)
    test_command = "make test"         # make (default make test), python (default pytest)
    shell = false                      # the three commands above as /bin/sh strings
    extras = ["test"]                  # python: installed with the wheel, resolved for the lock
    group = "tests"                    # python: a [dependency-groups] group installed for the tests
    extensions = { "mypkg._speedups" = ["src/mypkg/_speedups.c"] }   # python: compiled, in the wheel
    wheel_fixtures = ["mypkg/py.typed"]  # python: paths (or globs) the wheel must hold
    warnings = "deny"                  # compile steps in the extracted tree: warning-free
    timeout = 1800                     # seconds, each step
    max_unpacked_bytes = 536870912     # extraction limits of every archive (these are the defaults)
    max_members = 100000
    max_ratio = 100                    # unpacked bytes per byte of the archive

    [publish]
    registry = "local"                 # cargo: the registry of cargo publish --dry-run
    index_url = "https://…/simple/"    # python: an existing index (default: a local pypiserver)
    upload_url = "https://…/legacy/"   # python: where twine uploads (default: index_url less simple/)
    lock = "requirements.lock"         # python: lock or constraints file, from the project root
    import = ["mypkg"]                 # python: imported after the install (default: the name)
    timeout = 600

Credentials never go here: they come from the environment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from relgate.core.errors import InputError, ManifestError
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.core.schema import Checker, display_path, read_toml
from relgate.core.text import words
from relgate.kinds.registry import kind_of
from relgate.kinds.registry import kinds as all_kinds
from relgate.manifest.keys import PACKAGE, WARNING_POLICIES
from relgate.manifest.specs import CommandSpec, ProjectSpec, _command

__all__ = ["PACKAGE_FILE", "ArchiveLimits", "DEFAULT_LIMITS", "LockEntry", "PackageManifest", "PackageSpec",
           "PublishSpec", "load_package_manifest", "parse_package", "read_lock"]

PACKAGE_FILE = "package.toml"
_PACKAGE_KEYS = PACKAGE.top("package").names()
_PUBLISH_KEYS = PACKAGE.top("publish").names()
# package.toml key → the kinds that take it (each kind's adapter lists its own keys)
_ONLY: Mapping[str, tuple[str, ...]] = {
    key: tuple(k.name for k in all_kinds().values() if key in k.package_keys)
    for key in dict.fromkeys(key for k in all_kinds().values() for key in k.package_keys)}
_HINTS = {"test_command": " (cargo packages run cargo test --offline --no-default-features)",
          "lock": " (a cargo package ships its Cargo.lock; --locked checks it)",
          "registry": " (python: index_url)", "index_url": " (cargo: registry)"}
_CREDENTIAL_KEY = re.compile(r"token|password|passwd|secret|credential|auth|^user(name)?$|api[-_]?key", re.I)
_CREDENTIALS = ("credentials never go in a manifest: relgate takes them from the environment "
                "(TWINE_USERNAME/TWINE_PASSWORD, CARGO_REGISTRIES_<NAME>_TOKEN)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_REGISTRY = re.compile(r"[A-Za-z0-9_-]+")


# --- package.toml -------------------------------------------------------------------------------


@record
class ArchiveLimits:
    """How far an archive may expand when relgate extracts it (``[package]`` overrides each).

    Checked while streaming, on the bytes really written (a declared size can lie), never
    after the fact: past any of them the archive is refused, naming the member and the numbers.
    """

    max_unpacked_bytes: int = 512 << 20  # 512 MiB of member data in all
    max_members: int = 100_000
    max_ratio: float = 100.0  # unpacked bytes per byte of the archive file, once past ratio_floor
    #: Below this many unpacked bytes the ratio is not judged: a tiny archive cannot be a bomb.
    ratio_floor: int = 1 << 20


DEFAULT_LIMITS = ArchiveLimits()
#: Upper bounds of the manifest keys: past them a limit no longer limits anything.
_LIMIT_BOUNDS = {"max_unpacked_bytes": 1 << 50, "max_members": 100_000_000, "max_ratio": 1_000_000}


@record
class PackageSpec:
    forbid: tuple[str, ...] = ()  # globs, on top of the defaults
    allow: tuple[str, ...] = ()  # globs exempt from the defaults
    fixtures: tuple[str, ...] = ()  # paths (or globs) every package must hold, from the project root
    dist: CommandSpec | None = None  # make: builds the source tarball
    dist_glob: str | None = None  # make: where dist leaves it, from the project root
    build_command: CommandSpec | None = None  # make: in the extracted tree (default: make)
    test_command: CommandSpec | None = None  # make (default make test), python (default pytest)
    extras: tuple[str, ...] = ()  # python: extras installed with the wheel (and resolved for the lock)
    group: str | None = None  # python: a [dependency-groups] group installed with the wheel for the tests
    extensions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # python: module → its sources
    wheel_fixtures: tuple[str, ...] = ()  # python: paths (or globs) the wheel must hold, from its root
    warnings: str = "deny"  # compile steps: the python package build, the builds in the extracted tree
    timeout: float | None = None  # seconds, each step
    limits: ArchiveLimits = field(default_factory=ArchiveLimits)  # extraction limits of every archive


@record
class PublishSpec:
    registry: str | None = None  # cargo: registry name
    index_url: str | None = None  # python: an existing index pip installs from (default: a local one)
    upload_url: str | None = None  # python: twine's repository URL (default: index_url less "simple/")
    lock: str | None = None  # python: lock or constraints file, from the project root
    imports: tuple[str, ...] = ()  # python: modules imported after the install (default: the name)
    timeout: float | None = None


@record
class PackageManifest:
    package: PackageSpec = field(default_factory=PackageSpec)
    publish: PublishSpec = field(default_factory=PublishSpec)
    source: Path


def _keys(c: Checker, table: Mapping[str, Any], prefix: str, allowed: Sequence[str]) -> None:
    """Unknown keys with a did-you-mean; a key that looks like a credential gets told where those live."""
    creds = [k for k in table if k not in allowed and _CREDENTIAL_KEY.search(k)]
    for key in creds:
        c.problem(f"{prefix}.{key}" if prefix else key, _CREDENTIALS)
    c.keys({k: v for k, v in table.items() if k not in creds}, prefix, allowed)


def _relative(c: Checker, where: str, value: str) -> str | None:
    path = PurePosixPath(value.replace("\\", "/"))
    if not value.strip():
        c.problem(where, "must not be empty")
    elif path.is_absolute() or re.match(r"^[A-Za-z]:", value):
        c.problem(where, f'"{value}" is absolute; give a path relative to the project root')
    elif ".." in path.parts:
        c.problem(where, f'"{value}" leaves the project root ("..")')
    else:
        return value
    return None


def _globs(c: Checker, table: Mapping[str, Any], prefix: str, key: str) -> tuple[str, ...]:
    out = []
    for i, glob in enumerate(c.string_list(table, prefix, key)):
        if not glob.strip("/ "):
            c.problem(f"{prefix}.{key}[{i}]", "an empty glob matches nothing")
        else:
            out.append(glob)
    return tuple(out)


def _timeout(c: Checker, table: Mapping[str, Any], prefix: str) -> float | None:
    return c.seconds(table, prefix, "timeout")


def _limits(c: Checker, table: Mapping[str, Any]) -> ArchiveLimits:
    """``max_unpacked_bytes``, ``max_members`` (positive integers) and ``max_ratio`` (a finite
    number above 1), each within its bound; a bad one is reported and its default kept."""
    values: dict[str, Any] = {}
    for key, kind in (("max_unpacked_bytes", int), ("max_members", int), ("max_ratio", (int, float))):
        value = c.get(table, "package", key, kind)
        if value is None:
            continue
        if not math.isfinite(value) or value < 1 or (key == "max_ratio" and value <= 1):
            c.problem(f"package.{key}", f"{value} is not a limit: "
                      + ("a number above 1 (unpacked bytes per archive byte)" if key == "max_ratio"
                         else "a positive integer"))
        elif value > _LIMIT_BOUNDS[key]:
            c.problem(f"package.{key}", f"{value} is past {_LIMIT_BOUNDS[key]}: it would limit nothing")
        else:
            values[key] = float(value) if key == "max_ratio" else value
    return ArchiveLimits(**values)


def _url(c: Checker, table: Mapping[str, Any], key: str) -> str | None:
    value = c.get(table, "publish", key, str)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.username or parts.password:
        c.problem(f"publish.{key}", _CREDENTIALS)
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        c.problem(f"publish.{key}", f'"{value}" is not an http(s) URL')
        return None
    return value if value.endswith("/") else value + "/"


def parse_package(data: Mapping[str, Any], *, path: Path, kind: str) -> PackageManifest:
    """``package.toml`` of a ``kind`` project, validated (pure: no file is read)."""
    c = Checker(path)
    _keys(c, data, "", PACKAGE.names())
    pkg = c.get(data, "", "package", dict, {})
    pub = c.get(data, "", "publish", dict, {})
    _keys(c, pkg, "package", _PACKAGE_KEYS)
    _keys(c, pub, "publish", _PUBLISH_KEYS)
    for table, prefix in ((pkg, "package"), (pub, "publish")):
        for key in table:
            kinds = _ONLY.get(key)
            if kinds and kind not in kinds:
                c.problem(f"{prefix}.{key}", f"only for {words(kinds)} projects (this one is {kind})"
                          + _HINTS.get(key, ""))

    shell = bool(c.get(pkg, "package", "shell", bool, False))
    dist = _command(c, pkg, "package", "dist", shell)
    dist_glob = c.get(pkg, "package", "dist_glob", str)
    if dist is not None and dist_glob is None and kind_of(kind).dist_needs_glob:
        c.problem("package.dist_glob", 'missing: say where package.dist leaves the tarball (e.g. "dist/*.tar.gz")')
    if dist_glob is not None:
        if dist is None:
            c.problem("package.dist_glob", "only with package.dist (without it the package is git archive "
                                           "of the commit)")
        dist_glob = _relative(c, "package.dist_glob", dist_glob)
    fixtures = tuple(f for i, raw in enumerate(c.string_list(pkg, "package", "fixtures"))
                     if (f := _relative(c, f"package.fixtures[{i}]", raw)) is not None)
    extras = tuple(c.string_list(pkg, "package", "extras"))
    for i, extra in enumerate(extras):
        if not _NAME.fullmatch(extra):
            c.problem(f"package.extras[{i}]", f'"{extra}" is not an extra name')
    extensions: dict[str, tuple[str, ...]] = {}
    raw_ext = c.get(pkg, "package", "extensions", dict, {})
    for module, sources in (raw_ext or {}).items():
        if not _MODULE.fullmatch(module):
            c.problem(f"package.extensions.{module}", f"{module!r} is not a dotted module name")
        elif not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
            c.problem(f"package.extensions.{module}", "a list of source paths (strings)")
        else:
            extensions[module] = tuple(sources)
    wheel_fixtures = tuple(f for i, raw in enumerate(c.string_list(pkg, "package", "wheel_fixtures"))
                           if (f := _relative(c, f"package.wheel_fixtures[{i}]", raw)) is not None)
    package = PackageSpec(
        forbid=_globs(c, pkg, "package", "forbid"), allow=_globs(c, pkg, "package", "allow"), fixtures=fixtures,
        dist=dist, dist_glob=dist_glob, build_command=_command(c, pkg, "package", "build_command", shell),
        test_command=_command(c, pkg, "package", "test_command", shell), extras=extras, extensions=extensions,
        group=c.get(pkg, "package", "group", str), wheel_fixtures=wheel_fixtures,
        warnings=c.choice(pkg, "package", "warnings", WARNING_POLICIES, default="deny") or "deny",
        timeout=_timeout(c, pkg, "package"), limits=_limits(c, pkg),
    )

    registry = c.get(pub, "publish", "registry", str)
    if registry is not None and not _REGISTRY.fullmatch(registry):
        c.problem("publish.registry", f'"{registry}" is not a cargo registry name')
        registry = None
    index_url, upload_url = _url(c, pub, "index_url"), _url(c, pub, "upload_url")
    if upload_url is not None and "index_url" not in pub:
        c.problem("publish.upload_url", "only with publish.index_url (where pip installs from)")
    lock = c.get(pub, "publish", "lock", str)
    if lock is not None:
        lock = _relative(c, "publish.lock", lock)
    raw_imports = c.get(pub, "publish", "import", (str, list))
    imports = [raw_imports] if isinstance(raw_imports, str) else list(raw_imports or [])
    for i, name in enumerate(imports):
        if not isinstance(name, str) or not _MODULE.fullmatch(name):
            c.problem(f"publish.import[{i}]" if isinstance(raw_imports, list) else "publish.import",
                      f"{name!r} is not a module name")
    publish = PublishSpec(registry=registry, index_url=index_url, upload_url=upload_url, lock=lock,
                          imports=tuple(i for i in imports if isinstance(i, str)), timeout=_timeout(c, pub, "publish"))
    c.raise_if_problems()
    return PackageManifest(package=package, publish=publish, source=Path(path))


def load_package_manifest(manifests_dir: Path, project: ProjectSpec) -> PackageManifest:
    """``package.toml`` of the manifest folder (defaults when there is none), with the files it
    names checked against the project: a declared lock must exist and read as one."""
    path = Path(manifests_dir) / PACKAGE_FILE
    if not path.exists():
        return PackageManifest(source=path)
    manifest = parse_package(read_toml(path), path=path, kind=project.kind)
    missing = [f"{display_path(path)}: package.fixtures[{i}]: " + (
        f'"{fixture}" matches no file under {project.root}' if any(ch in fixture for ch in "*?[")
        else f"{project.root / fixture} does not exist") + " (every package must hold it)"
        for i, fixture in enumerate(manifest.package.fixtures) if not _present(project.root, fixture)]
    if missing:  # found by `relgate check` and every stage's load, not when a package lacks it
        raise ManifestError(missing)
    lock = manifest.publish.lock
    if lock is not None:
        if not (project.root / lock).is_file():
            raise ManifestError([f"{display_path(path)}: publish.lock: {project.root / lock} does not exist"])
        read_lock(read_user_file(project.root / lock, what="a lock file", line_limit=None),
                  shown=display_path(project.root / lock))
    return manifest


def _present(root: Path, fixture: str) -> bool:
    if any(ch in fixture for ch in "*?["):
        return next(iter(Path(root).glob(fixture)), None) is not None
    return (Path(root) / fixture).exists()


# --- lock files (python) ------------------------------------------------------------------------


@record
class LockEntry:
    name: str  # canonical
    shown: str  # as written
    specifier: str  # "==1.2.3", ">=2", "" …
    applies: bool  # its marker holds for this interpreter (or it has none)
    line: int


def read_lock(data: bytes, *, shown: str) -> list[LockEntry]:
    """A requirements-format lock or constraints file (``pip freeze`` output: ``name==version``,
    markers allowed; option lines and ``--hash`` options are ignored). Bad lines: InputError."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{shown}: not UTF-8 (byte {exc.start})") from None
    entries: list[LockEntry] = []
    logical: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append((start, pending + line))
        pending = ""
    if pending:
        logical.append((start, pending))
    seen: dict[str, int] = {}
    for number, line in logical:
        body = re.sub(r"(^|\s)#.*$", "", line).strip()
        body = re.split(r"\s--?[A-Za-z]", " " + body, maxsplit=1)[0].strip()  # trailing --hash=… options
        if not body:
            continue
        try:
            req = Requirement(body)
        except InvalidRequirement as exc:
            raise InputError(f"{shown}:{number}: not a requirement: {body} ({exc})") from None
        name = canonicalize_name(req.name)
        if name in seen:
            raise InputError(f"{shown}:{number}: {req.name} is listed twice (also line {seen[name]})")
        seen[name] = number
        applies = req.marker is None or req.marker.evaluate({"extra": ""})
        entries.append(LockEntry(name=name, shown=req.name, specifier=str(req.specifier), applies=applies,
                                 line=number))
    return entries
