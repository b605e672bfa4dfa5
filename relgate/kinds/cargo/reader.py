"""The crate at a root, read with cargo's own tool: ``cargo metadata --no-deps --format-version 1``
(targets, kinds, paths, ``required-features``, features); ``harness`` (which cargo metadata does
not carry) and, where cargo is not installed, everything else comes from the Cargo.toml reader
(:mod:`relgate.kinds.cargo.crate`).

Runs cargo read-only, with the toolchain relgate found; never writes, prints or exits.
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
from relgate.core.record import record
from relgate.core.repo_paths import inside
from relgate.core.schema import display_path, read_toml
from relgate.kinds.cargo.crate import cargo_features, discover_cargo_targets, package_version

__all__ = ["CargoFacts", "CargoTarget", "read_cargo", "gpu_features"]


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
    lib_tests: bool = True  # a source file under src/ holds a #[test] (else `cargo test --lib` runs 0 tests)


_TARGET_KINDS = ("test", "bench", "example", "bin")


def read_cargo(root: Path, *, cargo: str | None = None) -> CargoFacts:
    """The crate at ``root``: ``cargo metadata`` where cargo is installed, else Cargo.toml."""
    root = Path(root).resolve()
    cargo_toml = inside(root, root / "Cargo.toml", "Cargo.toml")
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
