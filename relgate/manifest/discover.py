"""What a repository declares, read with the field's own tools (for ``relgate init``).

- cargo: ``cargo metadata --no-deps --format-version 1`` (targets, kinds, paths,
  ``required-features``, features); ``harness`` (which cargo metadata does not carry) and,
  where cargo is not installed, everything else comes from the Cargo.toml reader
  (:mod:`relgate.manifest.cargo`);
- make: ``make -pRrq`` (the Makefile's real rule database, no regex over the file): the
  explicit targets less the built-in, special (``.PHONY`` …), pattern and file targets;
- python: pyproject's ``[project]`` table.

Reads and runs read-only commands; never writes, prints or exits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from relgate.core.errors import InputError
from relgate.core.noexec import available, no_spawn_no_write
from relgate.core.record import record
from relgate.kinds.make import MAKEFILES
from relgate.kinds.registry import kinds as all_kinds
from relgate.manifest.make_db import MakeDatabase, parse_database
from relgate.manifest.pyfacts import BuildFacts, TestDeps
from relgate.core.repo_paths import inside
from relgate.core.schema import NAME, Checker, display_path, read_toml

__all__ = ["CargoFacts", "CargoTarget", "MakeFacts", "PythonFacts", "detect_kinds", "read_cargo", "read_make",
           "read_python", "make_targets_of", "gpu_features"]



def detect_kinds(root: Path) -> list[tuple[str, str]]:
    """(kind, the file that says so) for every kind ``root`` holds, in the registry's order."""
    found = []
    for kind, names in ((k.name, k.marker_files) for k in all_kinds().values()):
        name = next((n for n in names if (Path(root) / n).is_file()), None)
        if name is not None:
            found.append((kind, name))
    return found


# --- cargo ---------------------------------------------------------------------------------


@record
class CargoTarget:
    name: str
    kind: str  # test bench example bin
    path: str  # relative to the crate root, "/"-separated
    required_features: tuple[str, ...] = ()
    harness: bool = True


@record
class CargoFacts:
    name: str
    version: str | None
    targets: tuple[CargoTarget, ...]
    features: tuple[str, ...]  # without "default", nor an optional dependency's implicit feature
    has_lib: bool
    locked: bool  # Cargo.lock exists
    source: str  # "cargo metadata" or "Cargo.toml"
    gpu_features: tuple[str, ...] = ()  # features that switch CUDA on (by name, or what they enable)


_TARGET_KINDS = ("test", "bench", "example", "bin")


def read_cargo(root: Path, *, cargo: str | None = None) -> CargoFacts:
    """The crate at ``root``: ``cargo metadata`` where cargo is installed, else Cargo.toml."""
    root = Path(root).resolve()
    cargo_toml = inside(root, root / "Cargo.toml", "Cargo.toml")
    from relgate.manifest.cargo import cargo_features, discover_cargo_targets, package_version

    declared = discover_cargo_targets(cargo_toml)  # also harness = false, which metadata does not carry
    harness = {(t.kind, t.name): t.harness for t in declared}
    exe = cargo or shutil.which("cargo")
    if exe:
        meta = _cargo_metadata(exe, root, _toolchain_env(exe))
        pkg = next((p for p in meta.get("packages", []) if Path(p.get("manifest_path", "")) == cargo_toml), None)
        if pkg is None:
            raise InputError(f"{display_path(cargo_toml)}: cargo metadata lists no package (a virtual workspace "
                             "manifest: run relgate init in a member crate)")
        targets = []
        has_lib = False
        for t in pkg.get("targets", []):
            kinds = t.get("kind", [])
            kind = next((k for k in _TARGET_KINDS if k in kinds), None)
            if kind is None:
                has_lib = has_lib or any(k in ("lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro")
                                         for k in kinds)
                continue
            path = _relative(root, t.get("src_path", ""))
            targets.append(CargoTarget(name=t["name"], kind=kind, path=path,
                                       required_features=tuple(t.get("required-features", [])),
                                       harness=harness.get((kind, t["name"]), True)))
        table = pkg.get("features", {}) or {}
        optional = {d.get("rename") or d.get("name") for d in pkg.get("dependencies", []) if d.get("optional")}
        features = tuple(sorted(f for f, enables in table.items()
                                if f != "default" and not (f in optional and enables == [f"dep:{f}"])))
        return CargoFacts(name=pkg.get("name", root.name), version=pkg.get("version"), targets=tuple(targets),
                          features=features, has_lib=has_lib, locked=(root / "Cargo.lock").is_file(),
                          source="cargo metadata", gpu_features=gpu_features(table, features))
    data = read_toml(cargo_toml)
    package = data.get("package") if isinstance(data.get("package"), dict) else {}
    targets = [CargoTarget(name=t.name or "", kind=t.kind, path=t.path or "", required_features=t.required_features,
                           harness=t.harness) for t in declared if t.name]
    table = data.get("features") if isinstance(data.get("features"), dict) else {}
    # the crate's own [features]: an optional dependency's implicit feature is not one to build alone
    features = tuple(sorted((cargo_features(cargo_toml) & set(table)) - {"default"}))
    return CargoFacts(name=str(package.get("name", root.name)), version=package_version(cargo_toml),
                      targets=tuple(targets), features=features,
                      has_lib=(root / "src/lib.rs").is_file() or "lib" in data, locked=(root / "Cargo.lock").is_file(),
                      source="Cargo.toml", gpu_features=gpu_features(table, features))


_GPU = re.compile(r"cuda|^cu(?:dnn|blas|blaslt|fft|rand|solver|sparse|tensor|file|pti)\b|nccl|nvrtc|nvtx|cutlass",
                  re.IGNORECASE)


def gpu_features(table: dict[str, list[str]], features: tuple[str, ...]) -> tuple[str, ...]:
    """The features that switch CUDA on: named so (``cuda``, ``cudnn`` …), or enabling one that
    is, or a CUDA dependency (``dep:cudarc``, ``cudarc/…``), through the feature table."""
    found: dict[str, bool] = {}

    def gpu(name: str, depth: int = 0) -> bool:
        if name in found:
            return found[name]
        found[name] = False  # a cycle is not a GPU
        hit = bool(_GPU.search(name)) or (depth < 16 and any(
            _GPU.search(e.split("/", 1)[0].removeprefix("dep:")) or gpu(e, depth + 1)
            for e in table.get(name, []) if isinstance(e, str)))
        found[name] = hit
        return hit

    return tuple(f for f in features if gpu(f))


def _toolchain_env(exe: str) -> dict[str, str]:
    """The toolchain relgate found, pinned for ``cargo metadata`` in the repository: rustup
    asked from outside the repository (so that its ``rust-toolchain.toml`` — which may name a
    ``path`` inside the repository — is not read), the answer given as ``RUSTUP_TOOLCHAIN``
    (it outranks the toolchain file), ``RUSTC`` the resolved rustc (it outranks a
    ``.cargo/config.toml``'s ``build.rustc``), and no rustc wrapper."""
    env = {k: v for k, v in os.environ.items() if k not in ("RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER")}
    env.update(RUSTC_WRAPPER="", RUSTC_WORKSPACE_WRAPPER="")
    rustup = shutil.which("rustup", path=str(Path(exe).parent)) or shutil.which("rustup")
    neutral = Path(tempfile.gettempdir())
    if rustup is not None and Path(os.path.realpath(exe)).name.startswith("rustup"):
        def ask(*args: str) -> str:
            try:
                done = subprocess.run([rustup, *args], cwd=neutral, capture_output=True, text=True, timeout=60,
                                      stdin=subprocess.DEVNULL, env=env)
            except (OSError, subprocess.TimeoutExpired):
                return ""
            return done.stdout.strip() if done.returncode == 0 else ""

        active = ask("show", "active-toolchain").split()
        if not active:
            raise InputError("cargo metadata: rustup names no active toolchain outside the repository; relgate init "
                             "runs cargo only with the toolchain it found (rustup default stable)")
        env["RUSTUP_TOOLCHAIN"] = active[0]
        cargo, rustc = ask("which", "cargo"), ask("which", "rustc")
        if cargo:
            env["RELGATE_CARGO"] = cargo
        if rustc:
            env["RUSTC"] = rustc
    elif "RUSTC" not in env and shutil.which("rustc"):
        env["RUSTC"] = os.path.realpath(shutil.which("rustc") or "rustc")
    return env


def _cargo_metadata(exe: str, root: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    env = dict(env if env is not None else os.environ)
    exe = env.pop("RELGATE_CARGO", exe)
    argv = [exe, "metadata", "--no-deps", "--format-version", "1", "--offline"]
    try:
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=120, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{display_path(root / 'Cargo.toml')}: cargo metadata did not run: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"{display_path(root / 'Cargo.toml')}: cargo metadata failed: {last}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise InputError(f"{display_path(root / 'Cargo.toml')}: cargo metadata printed no JSON") from None


def _relative(root: Path, path: str) -> str:
    """cargo's absolute ``src_path`` relative to the crate root (cargo prints canonical paths)."""
    try:
        return PurePosixPath(path).relative_to(root.as_posix()).as_posix()
    except ValueError:
        try:
            return PurePosixPath(Path(path).resolve().relative_to(root)).as_posix()
        except ValueError:
            return path


# --- make ----------------------------------------------------------------------------------


@record
class MakeFacts:
    makefile: str
    targets: tuple[str, ...]  # in the database's order (sorted)
    default_goal: str | None
    database: MakeDatabase | None = None  # the rules and variables (relgate.manifest.make_db)


#: Seconds make may take to print its database (a Makefile that reads a FIFO waits no longer).
MAKE_TIMEOUT = 60
#: The address space make may use while it prints its database.
MAKE_MEMORY = 2 << 30

_DEFAULT_GOAL = re.compile(r"^\.DEFAULT_GOAL :?= (\S+)\s*$", re.M)


def read_make(root: Path, *, make: str | None = None) -> MakeFacts:
    """The Makefile's explicit targets, from the rule database ``make -pRrq`` prints."""
    root = Path(root).resolve()
    makefile = next((n for n in MAKEFILES if (root / n).is_file()), "Makefile")
    exe = make or shutil.which("make")
    if exe is None:
        raise InputError(f"{display_path(root / makefile)}: make is not on PATH (relgate init reads the "
                         "Makefile's rule database with make -pRrq)")
    inside(root, root / makefile, "the Makefile")
    if not available():
        raise InputError(f"{display_path(root / makefile)}: relgate init reads a Makefile with make only where it can "
                         "keep make from running anything ($(shell …), the remaking of included files): Linux on "
                         "x86_64 or aarch64; write the manifests by hand here")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GNUMAKEFLAGS")}
    try:  # started without stdin (`include /dev/stdin` reads nothing), confined: it starts and writes nothing
        done = subprocess.run([exe, "-pRrq", "-f", makefile, ":"], cwd=root, capture_output=True, text=True,
                              timeout=MAKE_TIMEOUT, env={**env, "LC_ALL": "C"}, stdin=subprocess.DEVNULL,
                              preexec_fn=_confined_make, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{display_path(root / makefile)}: make -pRrq did not run: {exc}") from None
    if done.returncode == 126 and not done.stdout:
        raise InputError(f"{display_path(root / makefile)}: make could not be confined (seccomp refused): "
                         "relgate init does not read this Makefile with make")
    if "# Make data base" not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"{display_path(root / makefile)}: make -pRrq printed no rule database: {last}")
    goal = _DEFAULT_GOAL.search(done.stdout)
    return MakeFacts(makefile=makefile, targets=tuple(make_targets_of(done.stdout, root)),
                     default_goal=goal.group(1) if goal else None, database=parse_database(done.stdout))


def _confined_make() -> None:
    """``preexec_fn`` of ``make -pRrq``: bounded memory and CPU (an `include /dev/zero` reads
    forever), then no process and no file written (:func:`no_spawn_no_write`)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MAKE_MEMORY, MAKE_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (MAKE_TIMEOUT, MAKE_TIMEOUT + 5))
    no_spawn_no_write()


def make_targets_of(database: str, root: Path) -> list[str]:
    """The explicit targets in ``make -p`` output: each rule paragraph of the ``# Files``
    section that is a target (not ``# Not a target:``), less special targets (``.PHONY``),
    pattern rules (``%``), paths (``build/x.o``), files that exist and non-phony targets
    other rules depend on (a build folder), and names with no rule (listed in ``.PHONY``
    only); phony targets with a rule are kept whatever their name."""
    rules = parse_database(database).rules
    # a name .PHONY lists with no rule (no prerequisite, no recipe): nothing makes it
    names = [n for n, r in rules.items() if r.prerequisites or r.order_only or r.recipe]
    prerequisites = {p for r in rules.values() for p in (*r.prerequisites, *r.order_only)}
    phony = {n for n, r in rules.items() if r.phony}
    out = []
    for name in dict.fromkeys(names):
        if name in phony:
            out.append(name)
        elif name.startswith(".") or any(ch in name for ch in "%/$=") or "." in name or (Path(root) / name).exists():
            continue  # special, pattern, a path, a file name, an existing file
        elif name in prerequisites:
            continue  # made for another rule (a build folder, an object): a file, not something to ask for
        else:
            out.append(name)
    return sorted(out)


def pep440_problem(version: str) -> str | None:
    """Why ``version`` is no PEP 440 version (None: it is one), as packaging reads it."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
    except InvalidVersion:
        return "is not a PEP 440 version (e.g. 1.2.0, 1.2.0rc1, 1.2.0.post1): pip and the package index refuse it"
    return None


# --- python --------------------------------------------------------------------------------


@record
class PythonFacts:
    name: str
    version: str | None
    extras: tuple[str, ...]
    has_tests: bool
    lock: str | None  # requirements.lock, when the project keeps one
    build: BuildFacts | None = None  # the backend and the compiled extensions it declares
    tests: TestDeps | None = None  # where the test dependencies are declared
    test_files: tuple[str, ...] = ()  # what pytest collects (by file), "/"-separated
    typed: tuple[str, ...] = ()  # py.typed markers of the project's packages, from the root


def read_python(root: Path) -> PythonFacts:
    root = Path(root).resolve()
    path = inside(root, root / "pyproject.toml", "pyproject.toml")
    data = read_toml(path)
    c = Checker(path)
    project = c.get(data, "", "project", dict, {})
    name = c.get(project, "project", "name", str)
    if not name:
        raise InputError(f"{display_path(path)}: project.name: missing (relgate init reads the [project] table)")
    why = NAME.problem(name)
    if why is not None:  # it becomes project.name, which check holds to the name rule
        c.problem("project.name", f"{why}: relgate init cannot write it as a project name")
    version = c.line(project, "project", "version")
    if version is not None and (why := pep440_problem(version)) is not None:
        c.problem("project.version", f'"{version}" {why}')
    extras = tuple(c.get(project, "project", "optional-dependencies", dict, {}))
    c.raise_if_problems()
    lock = next((n for n in ("requirements.lock", "requirements.txt") if (root / n).is_file()), None)
    from relgate.manifest.pyfacts import collect_test_files, read_build, test_deps

    files = collect_test_files(root, data)
    typed = sorted(p.relative_to(root).as_posix() for pattern in ("*/py.typed", "src/*/py.typed")
                   for p in root.glob(pattern) if "tests" not in p.parts)
    return PythonFacts(name=name, version=version, extras=extras, has_tests=(root / "tests").is_dir() or bool(files),
                       lock=lock, build=read_build(root, data), tests=test_deps(root, data), test_files=tuple(files),
                       typed=tuple(typed))
