"""The manifests that describe a project under qualification.

Each ``parse_*`` function is pure: it takes the mapping read from a TOML file and the
file's path (for messages) and returns frozen records, or raises :class:`ManifestError`
listing every problem found, one line each, naming the file and the dotted key.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Protocol

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.redact import display_command
from relgate.core.schema import Checker, did_you_mean, printable
from relgate.kinds.registry import DEFAULT_KIND, kind_of
from relgate.kinds.writing import SHELL_OPERATORS
from relgate.manifest.host_extras import ProbeSpec, SlurmSpec, parse_gpus, parse_probes, parse_slurm
from relgate.manifest.keys import (
    BUILDS,
    CHECK_BUILTINS,
    HOST,
    HOST_KINDS,
    OPTION_KEYS,
    OUTPUT_KEYS,
    PROJECT,
    PROJECT_KINDS,
    SLURM_KEYS,
    TRANSFERS,
    WARNING_POLICIES,
)

__all__ = [
    "PROJECT_KINDS", "AllowRule", "CommandSpec", "ProjectSpec", "ReleaseTarget", "Matrix", "Check",
    "BuildsSpec", "PythonTests", "SHELL_OPERATORS", "HostSpec", "parse_project", "parse_builds", "parse_host",
    "version_problem", "cwd_problems",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Described(Protocol):
    def describe(self) -> str: ...


@record
class AllowRule:
    """Accept the warnings whose ``describe()`` the regex ``pattern`` matches (search).

    ``reason`` is required: an accepted warning must say why it is acceptable.
    """

    pattern: str
    reason: str
    where: str = field(default="", compare=False)  # "manifests/builds.toml: release.cpu.allow[0]", for messages

    def __post_init__(self) -> None:
        _validate_rule(self.pattern, self.reason, "allow rule")

    @classmethod
    def create(cls, pattern: Any, reason: Any, where: str) -> AllowRule:
        """Validate values read from a manifest; errors start with ``where``.

        ``where`` names the rule, e.g. ``"manifests/builds.toml: release.cpu.allow[0]"``;
        a problem is reported as ``"<where>.pattern: bad regex ..."``.
        """
        _validate_rule(pattern, reason, where)
        return cls(pattern=pattern, reason=reason, where=where)

    def matches(self, warning: _Described) -> bool:
        """Whether this rule accepts ``warning``."""
        return re.search(self.pattern, warning.describe()) is not None


def _validate_rule(pattern: Any, reason: Any, where: str) -> None:
    if not isinstance(pattern, str):
        raise InputError(f"{where}.pattern: expected a string (a regex), got {type(pattern).__name__}")
    if not pattern:
        raise InputError(f"{where}.pattern: empty; it would allow every warning")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{where}.pattern: bad regex {pattern!r}: {exc}") from None
    if not isinstance(reason, str):
        raise InputError(f"{where}.reason: expected a string, got {type(reason).__name__}")
    if not reason.strip():
        raise InputError(f"{where}.reason: required; say why this warning is acceptable")


@record
class CommandSpec:
    """One command: an argv, or an explicit shell string (``shell = true``)."""

    argv: tuple[str, ...] | None = None
    shell: str | None = None

    def display(self) -> str:
        """As a person would type it; secrets on the command line (``--token=…``) are hidden."""
        return display_command(argv=self.argv, shell=self.shell)


@record
class ProjectSpec:
    name: str
    root: Path
    kind: str
    version: str | None  # None: the project has no version (a C engine often has none)
    changelog: Path | None  # None: no changelog (project.changelog unset and no CHANGELOG.md at the root)
    evidence_env: str
    source: Path
    lanes: Path | None = None  # the project's own lanes file (``qual/lanes.toml``), if it keeps one


@record
class StepOptions:
    """What every buildable entry (release target, matrix, check) can say."""

    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    requires: tuple[str, ...] = ()
    warnings: str = "deny"
    allow: tuple[AllowRule, ...] = ()
    skip: str | None = None
    host: str | None = None  # runs on this host only (``host = "spark"``): see the placement section
    max_log_bytes: int | None = None  # keep this much of the output in the log, then one marker


@record
class ReleaseTarget:
    """A named release build; it starts clean (``clean`` runs first)."""

    name: str
    clean: CommandSpec | None
    run: CommandSpec
    options: StepOptions
    expect_output: str | None = None  # a regex the build's output must match
    produces: tuple[str, ...] = ()  # globs (relative to cwd) that must exist, newer than the step's start


@record
class Matrix:
    """``features`` × (nothing + each of ``plus``), one build step each."""

    name: str
    run: str  # a template with {features}
    shell: bool
    features: tuple[str, ...]
    plus: tuple[str, ...]
    options: StepOptions

    def expand(self) -> list[tuple[str, CommandSpec]]:
        """(feature set, command) for every combination, in declaration order."""
        sets: list[str] = []
        for feats in self.features:
            sets.append(feats)
            for extra in self.plus:
                sets.append(",".join(f for f in (feats, extra) if f))
        out = []
        tokens = None if self.shell else shlex.split(self.run)
        for feats in sets:
            if tokens is None:
                out.append((feats, CommandSpec(shell=self.run.replace("{features}", shlex.quote(feats)))))
            else:  # substitute per argument: an empty feature set stays one (empty) argument
                out.append((feats, CommandSpec(argv=tuple(t.replace("{features}", feats) for t in tokens))))
        return out


@record
class Check:
    """One host check: exactly one of a command, a release target, a matrix, a builtin."""

    name: str
    run: CommandSpec | None = None
    release: str | None = None
    matrix: str | None = None
    builtin: str | None = None
    expect_output: str | None = None
    produces: tuple[str, ...] = ()
    options: StepOptions
    tests: PythonTests | None = None  # builtin = "python-tests": its test dependencies and pytest's arguments


@record
class PythonTests:
    """``builtin = "python-tests"``: where the test dependencies come from, pytest's arguments."""

    group: str | None = None
    extras: tuple[str, ...] = ()
    requirements: str | None = None
    args: tuple[str, ...] = ("-q",)


@record
class BuildsSpec:
    checks: tuple[Check, ...]
    releases: Mapping[str, ReleaseTarget]
    matrices: Mapping[str, Matrix]
    diff_base: str | None
    source: Path
    declared: bool = True  # False: the manifest folder has no builds.toml (what did not run is said)


@record
class HostSpec:
    name: str
    kind: str
    address: str | None = None
    user: str | None = None
    port: int = 22
    identity: str | None = None
    workdir: str | None = None
    boards: tuple[str, ...] = ()
    driver: str | None = None
    toolkit: str | None = None
    capabilities: tuple[str, ...] = ()
    detect: bool = True
    exclusive: bool = False
    source: Path
    # ssh hosts (issue 11): paths are resolved against the host file's folder
    known_hosts: Path | None = None
    permission: str | None = None  # used only when the run names it (--allow-host NAME)
    connect_timeout: float = 10.0
    command_timeout: float | None = None  # per command, when the step sets none
    keepalive: float = 15.0
    env: Mapping[str, str] = field(default_factory=dict)
    lock_wait: float = 0.0  # an exclusive host held by another run: wait this long, then refuse
    allow_busy_gpu: str | None = None  # why a lane may start while another user's process holds GPU memory
    transfer: str = "sftp"  # file transfers: "sftp" (the exec channel where sshd has no SFTP), or "exec" only
    gpus: int | None = None  # GPU slots declared (``gpus = 8``); None: as many as are detected
    probes: tuple[ProbeSpec, ...] = ()  # capabilities offered only while their probe passes
    slurm: SlurmSpec | None = None  # kind = "slurm": how steps are placed on the cluster


# --- project.toml ---------------------------------------------------------------------

_PROJECT = PROJECT.top("project")


def parse_project(data: Mapping[str, Any], *, path: Path) -> ProjectSpec:
    c = Checker(path)
    c.keys(data, "", PROJECT.names(), required=PROJECT.required_names())
    table = c.get(data, "", "project", dict, {})
    # No [project] table (or not a table): that one problem, not one per missing key.
    c.keys(table, "project", _PROJECT.names(),
           required=_PROJECT.required_names() if isinstance(data.get("project"), dict) else ())
    name = c.get(table, "project", "name", str, "")
    if name:
        c.name_ok("project.name", name)
    root_text = c.text(table, "project", "root", "")
    kind = c.choice(table, "project", "kind", PROJECT_KINDS, default=DEFAULT_KIND)
    version = c.get(table, "project", "version", str)
    if version is not None and not version.strip():
        c.problem("project.version", "must not be empty (leave it out when the project has no version)")
    elif version is not None and "kind" in table and kind is not None:
        why = version_problem(kind, version)
        if why:
            c.problem("project.version", why)
    changelog = c.get(table, "project", "changelog", str)
    evidence_env = c.get(table, "project", "evidence_env", str, "RELGATE_EVIDENCE")
    if isinstance(table.get("name"), str) and not name.strip():
        c.problem("project.name", "must not be empty")
    if evidence_env and not _ENV_NAME.fullmatch(evidence_env):
        c.problem("project.evidence_env", f'"{evidence_env}" is not an environment variable name')
    root = (Path(path).parent / root_text).resolve() if root_text else Path(path).parent
    if root_text and not root.is_dir():
        c.problem("project.root", f"{root} does not exist" if not root.exists() else f"{root} is not a directory")
    elif root_text and changelog is not None and not changelog.strip():
        c.problem("project.changelog", "empty path: leave the key out for no changelog")
    elif root_text and changelog is not None and not (root / changelog).is_file():
        c.problem("project.changelog", f"{root / changelog} is a folder, not a file (the changelog is one file)"
                  if (root / changelog).is_dir() else f"{root / changelog} does not exist")
    if changelog is None and (root / "CHANGELOG.md").is_file():
        changelog = "CHANGELOG.md"  # the default, when the project keeps one
    lanes = c.get(table, "project", "lanes", str)
    if lanes is not None and root.is_dir() and not (root / lanes).is_file():
        c.problem("project.lanes", f"{root / lanes} does not exist")
    c.raise_if_problems()
    return ProjectSpec(name=name, root=root, kind=kind or DEFAULT_KIND, version=version or None,
                       changelog=root / changelog if changelog else None, evidence_env=evidence_env,
                       source=Path(path),
                       lanes=root / lanes if lanes else None)


def version_problem(kind: str, version: str) -> str | None:
    """Why ``version`` is not a version of a ``kind`` project (None when it is one): PEP 440
    for python, semver for cargo, any non-empty printable string for make."""
    shown = printable(version if len(version) <= 60 else version[:60] + "…")
    return kind_of(kind).version_problem(shown, version)


# --- builds.toml ----------------------------------------------------------------------

_OPTION_KEYS = OPTION_KEYS
_RELEASE, _MATRIX, _CHECK = BUILDS.top("release").entry(), BUILDS.top("matrix").entry(), BUILDS.top("check")
_ALLOW = _RELEASE.field("allow")


def _options(c: Checker, table: Mapping[str, Any], prefix: str, *, warnings_default: str) -> StepOptions:
    timeout = c.seconds(table, prefix, "timeout")
    allow: list[AllowRule] = []
    for i, rule in c.array_of_tables(table, prefix, "allow").items():
        where = f"{prefix}.allow[{i}]"
        c.keys(rule, where, _ALLOW.names(), required=_ALLOW.required_names())
        pattern = c.get(rule, where, "pattern", str)
        reason = c.get(rule, where, "reason", str)
        if pattern is None or reason is None:
            continue
        try:
            allow.append(AllowRule.create(pattern, reason, f"{c.shown}: {where}"))
        except InputError as exc:
            c.problems.append(str(exc))
    env = c.string_map(table, prefix, "env")
    for key in env:
        if not _ENV_NAME.fullmatch(key):
            c.problem(f"{prefix}.env", f'"{key}" is not an environment variable name')
    skip = c.get(table, prefix, "skip", str)
    if skip is not None and not skip.strip():
        c.problem(f"{prefix}.skip", "needs a reason (a non-empty string)")
    max_log = c.get(table, prefix, "max_log_bytes", int)
    if max_log is not None and max_log < 4096:
        c.problem(f"{prefix}.max_log_bytes", f"{max_log} is too small to be a log (4096 bytes at least)")
        max_log = None
    return StepOptions(
        max_log_bytes=max_log,
        cwd=c.relative_path(table, prefix, "cwd", "the project root", "."),
        env=env,
        timeout=timeout,
        requires=tuple(c.string_list(table, prefix, "requires")),
        warnings=c.choice(table, prefix, "warnings", WARNING_POLICIES, default=warnings_default) or warnings_default,
        allow=tuple(allow),
        skip=skip,
        host=_placement_host(c, table, prefix),
    )




def _command(c: Checker, table: Mapping[str, Any], prefix: str, key: str, shell: bool) -> CommandSpec | None:
    value = c.get(table, prefix, key, (str, list))
    if value is None:
        return None
    where = f"{prefix}.{key}"
    if isinstance(value, list):
        if shell:
            c.problem(where, "shell = true needs the command as one string")
            return None
        if not value or not all(isinstance(v, str) for v in value):
            c.problem(where, "expected a non-empty array of strings")
            return None
        if not value[0].strip():
            c.problem(where, "the program (first element) must not be empty")
            return None
        return CommandSpec(argv=tuple(value))
    if not value.strip():
        c.problem(where, "must not be empty")
        return None
    if shell:
        return CommandSpec(shell=value)
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        c.problem(where, f"cannot split into arguments: {exc}")
        return None
    if any(tok in SHELL_OPERATORS for tok in argv):
        c.problem(where, "uses shell syntax; set shell = true or give an argv array")
        return None
    return CommandSpec(argv=tuple(argv))


_OUTPUT_KEYS = OUTPUT_KEYS


def _outputs(c: Checker, table: Mapping[str, Any], prefix: str) -> tuple[str | None, tuple[str, ...]]:
    """``expect_output`` (a regex the output must match) and ``produces`` (relative globs)."""
    expect = c.get(table, prefix, "expect_output", str)
    if expect is not None:
        try:
            re.compile(expect)
        except re.error as exc:
            c.problem(f"{prefix}.expect_output", f"bad regular expression: {exc}")
    produces = c.string_list(table, prefix, "produces")
    for i, pattern in enumerate(produces):
        parts = Path(pattern).parts
        if not pattern.strip() or Path(pattern).is_absolute() or ".." in parts:
            c.problem(f"{prefix}.produces[{i}]", f'"{pattern}": a path or glob relative to the step\'s cwd, '
                      "inside the project")
    return expect, tuple(produces)


def parse_builds(data: Mapping[str, Any], *, path: Path) -> BuildsSpec:
    c = Checker(path)
    c.keys(data, "", BUILDS.names())

    host = c.get(data, "", "host", dict, {})
    c.keys(host, "host", BUILDS.top("host").names())
    diff_base = c.get(host, "host", "diff_base", str)

    releases: dict[str, ReleaseTarget] = {}
    release_tables = c.tables(data, "", "release")
    for name, table in release_tables.items():
        prefix = f"release.{name}"
        c.keys(table, prefix, _RELEASE.names(), required=_RELEASE.required_names())
        shell = bool(c.get(table, prefix, "shell", bool, False))
        run = _command(c, table, prefix, "run", shell)
        clean = _command(c, table, prefix, "clean", shell)
        options = _options(c, table, prefix, warnings_default="deny")
        expect, produces = _outputs(c, table, prefix)
        if run is not None:
            releases[name] = ReleaseTarget(name=name, clean=clean, run=run, options=options, expect_output=expect,
                                           produces=produces)

    matrices: dict[str, Matrix] = {}
    for name, table in c.tables(data, "", "matrix").items():
        prefix = f"matrix.{name}"
        c.keys(table, prefix, _MATRIX.names(), required=_MATRIX.required_names())
        run = c.get(table, prefix, "run", str)
        if run is not None and "{features}" not in run:
            c.problem(f"{prefix}.run", 'needs a "{features}" placeholder')
        features = c.string_list(table, prefix, "features")
        if "features" in table and not features:
            c.problem(f"{prefix}.features", "must list at least one feature set")
        matrices[name] = Matrix(
            name=name, run=run or "", shell=bool(c.get(table, prefix, "shell", bool, False)),
            features=tuple(features), plus=tuple(c.string_list(table, prefix, "plus")),
            options=_options(c, table, prefix, warnings_default="deny"),
        )

    checks: list[Check] = []
    seen: set[str] = set()
    for i, table in c.array_of_tables(data, "", "check").items():
        prefix = f"check[{i}]"
        c.keys(table, prefix, _CHECK.names(), required=_CHECK.required_names())
        name = c.text(table, prefix, "name", "")
        if name and not c.name_ok(f"{prefix}.name", name):
            name = ""
        if name and name in seen:
            c.problem(f"{prefix}.name", f'duplicate check name "{name}"')
        seen.add(name)
        kinds = [k for k in ("run", "release", "matrix", "builtin") if k in table]
        if len(kinds) != 1:
            c.problem(prefix, "needs exactly one of run, release, matrix, builtin"
                      + (f" (has {', '.join(kinds)})" if kinds else ""))
        release = c.get(table, prefix, "release", str)
        # A declared target with its own problems is reported there, not again here.
        if release is not None and release not in release_tables:
            c.problem(f"{prefix}.release", f'no release target "{release}"' + did_you_mean(release, release_tables))
        matrix = c.get(table, prefix, "matrix", str)
        if matrix is not None and matrix not in matrices:
            c.problem(f"{prefix}.matrix", f'no matrix "{matrix}"' + did_you_mean(matrix, matrices))
        builtin = c.choice(table, prefix, "builtin", CHECK_BUILTINS)
        expect, produces = _outputs(c, table, prefix)
        if release is not None or matrix is not None:
            # A release check may add what the build must show; everything else is the target's.
            own = {"skip", *(_OUTPUT_KEYS if release is not None else ())}
            for key in sorted(set(table) & {"shell", *_OUTPUT_KEYS, *_OPTION_KEYS} - own):
                c.problem(f"{prefix}.{key}", "set it on the release target or matrix this check runs"
                          if key not in _OUTPUT_KEYS else "a matrix check takes no expect_output or produces")
        target = releases.get(release or "")
        if expect is not None and target is not None and target.expect_output is not None:
            c.problem(f"{prefix}.expect_output", f"release.{release}.expect_output is set already; keep one")
        shell = bool(c.get(table, prefix, "shell", bool, False))
        tests = None
        own_keys = [k for k in ("group", "extras", "requirements", "args") if k in table]
        if builtin == "python-tests":
            tests = PythonTests(group=c.get(table, prefix, "group", str), extras=tuple(c.string_list(table, prefix,
                                "extras")), requirements=c.get(table, prefix, "requirements", str),
                                args=tuple(c.string_list(table, prefix, "args")) if "args" in table else ("-q",))
        else:
            for key in own_keys:
                c.problem(f"{prefix}.{key}", 'only with builtin = "python-tests"')
        checks.append(Check(
            name=name, run=_command(c, table, prefix, "run", shell), release=release, matrix=matrix,
            builtin=builtin, expect_output=expect, produces=produces,
            options=_options(c, table, prefix, warnings_default="ignore"), tests=tests,
        ))
    c.raise_if_problems()
    return BuildsSpec(checks=tuple(checks), releases=releases, matrices=matrices,
                      diff_base=diff_base, source=Path(path))


# --- hosts/*.toml -----------------------------------------------------------------------

_HOST = HOST.top("host")


def parse_host(data: Mapping[str, Any], *, path: Path) -> HostSpec:
    c = Checker(path)
    c.keys(data, "", HOST.names(), required=HOST.required_names())
    t = c.get(data, "", "host", dict, {})
    kind = c.choice(t, "host", "kind", HOST_KINDS, default="local") or "local"
    c.keys(t, "host", tuple(k for k in _HOST.names() if kind == "slurm" or k not in SLURM_KEYS or k in t))
    for k in SLURM_KEYS:
        if k in t and kind != "slurm":
            c.problem(f"host.{k}", f'only a kind = "slurm" host takes it (this one is kind = "{kind}")')
    address = c.get(t, "host", "address", str)
    if kind == "ssh" and not address:
        c.problem("host.address", "an ssh host needs an address")
    name = c.text(t, "host", "name", Path(path).stem)
    if name:
        c.name_ok("host.name" if "name" in t else "host", name)
    if kind != "local" and name == "local":
        c.problem("host.name", '"local" is this machine\'s name; give the ssh host its own name')
    port = c.get(t, "host", "port", int, 22)
    if not 0 < port < 65536:
        c.problem("host.port", f"{port} is not a TCP port")
    here = Path(path).parent
    known_hosts = c.get(t, "host", "known_hosts", str)
    if kind in ("ssh", "slurm") and address and not known_hosts:
        c.problem("host.known_hosts", "an ssh host needs a known_hosts file (relative to this file); "
                  f"fill it with ssh-keyscan -p {port} {address} after checking the fingerprint")
    known_path = (here / Path(known_hosts).expanduser()) if known_hosts else None
    if known_path is not None and kind in ("ssh", "slurm") and address and not known_path.is_file():
        c.problem("host.known_hosts", f"{known_path} does not exist; create it with "
                  f"ssh-keyscan -p {port} {address} >> {known_path} after checking the fingerprint")
    identity = c.get(t, "host", "identity", str)
    if identity:
        identity = str(here / Path(identity).expanduser())
    if kind == "ssh":  # (a slurm host's is checked below)
        workdir = c.get(t, "host", "workdir", str)
        if workdir is not None and not workdir.startswith(("/", "~")):
            c.problem("host.workdir", f'"{workdir}" must be absolute (or start with ~) on the host')
    env = c.string_map(t, "host", "env")
    for key in env:
        if not _ENV_NAME.fullmatch(key):
            c.problem("host.env", f'"{key}" is not an environment variable name')
    spec = HostSpec(
        name=name, kind=kind, address=address,
        user=c.get(t, "host", "user", str), port=port, identity=identity,
        workdir=c.get(t, "host", "workdir", str), boards=tuple(c.names(t, "host", "boards")),
        driver=c.get(t, "host", "driver", str), toolkit=c.get(t, "host", "toolkit", str),
        capabilities=tuple(c.names(t, "host", "capabilities")),
        detect=bool(c.get(t, "host", "detect", bool, True)),
        exclusive=bool(c.get(t, "host", "exclusive", bool, False)), source=Path(path),
        known_hosts=known_path, permission=_reason(c, t, "permission"),
        connect_timeout=c.seconds(t, "host", "connect_timeout", 10.0) or 10.0,
        command_timeout=c.seconds(t, "host", "command_timeout"),
        keepalive=c.seconds(t, "host", "keepalive", 15.0) or 15.0,
        env=env, lock_wait=c.seconds(t, "host", "lock_wait", 0.0, zero=True) or 0.0,
        allow_busy_gpu=_reason(c, t, "allow_busy_gpu"),
        transfer=c.choice(t, "host", "transfer", TRANSFERS, default="sftp") or "sftp",
        gpus=parse_gpus(c, t, "host", allow_all=False), probes=parse_probes(c, data),
        slurm=parse_slurm(c, t) if kind == "slurm" else None,
    )
    if kind == "slurm" and not spec.workdir:
        c.problem("host.workdir", "a slurm host needs a work directory its nodes share (checkouts, evidence)")
    elif kind == "slurm" and spec.workdir and not spec.workdir.startswith("/"):
        c.problem("host.workdir", f'"{spec.workdir}" must be absolute')
    c.raise_if_problems()
    return spec


def _reason(c: Checker, t: Mapping[str, Any], key: str) -> str | None:
    value = c.get(t, "host", key, str)
    if value is not None and not value.strip():
        c.problem(f"host.{key}", "needs a reason (a non-empty string)")
        return None
    return value


def cwd_problems(builds: BuildsSpec, root: Path) -> list[str]:
    """Each step's ``cwd`` must be a folder inside the project root (symlinks resolved): one
    line per problem, naming builds.toml and the dotted key."""
    from relgate.core.schema import display_path

    shown = display_path(builds.source)
    real_root = Path(root).resolve()
    entries = [(f"release.{n}", r.options) for n, r in builds.releases.items()]
    entries += [(f"matrix.{n}", m.options) for n, m in builds.matrices.items()]
    entries += [(f"check[{i}]", ch.options) for i, ch in enumerate(builds.checks)]
    out = []
    for where, options in entries:
        if options.cwd == ".":
            continue
        folder = (real_root / options.cwd).resolve()
        if folder != real_root and real_root not in folder.parents:
            out.append(f"{shown}: {where}.cwd: \"{options.cwd}\" resolves to {folder}, outside the project root "
                       f"{real_root}")
        elif not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            out.append(f"{shown}: {where}.cwd: {folder} {what}")
    return out


# --- placement: a release target or check on its hardware -----------------------------------
# ``requires`` names capabilities or boards a host must offer; ``host`` pins the step to one
# declared host (``make clean && make cuda-spark`` on the Spark box). Both place the step.


def _placement_host(c: Checker, table: Mapping[str, Any], prefix: str) -> str | None:
    host = c.get(table, prefix, "host", str)
    if host is not None and not host.strip():
        c.problem(f"{prefix}.host", "must name a host (hosts/NAME.toml)")
        return None
    return host
