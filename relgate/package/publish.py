"""``publish_dry_run``: rehearse the publish of the candidate commit's package.

cargo   ``export``; ``lock``: ``cargo tree --locked --depth 0`` (a Cargo.lock that would
        change fails); ``publish``: ``cargo publish --locked --dry-run --registry NAME`` against
        ``[publish] registry`` — not run when no registry is named, or this host configures
        none (``CARGO_REGISTRIES_<NAME>_INDEX``, or ``[registries.NAME]`` in a cargo config).
python  ``export``; ``package``: ``python -m build``; ``twine-check``: ``twine check --strict``;
        ``requirements``: the wheel's own; with ``[publish] lock``, ``resolve`` them afresh with
        the lock as constraints (``pip install --dry-run --report``) and ``lock``: compare — a
        package that resolves but is not locked, a locked one nothing needs any more, or another
        version fails (the lock CI tested is the one that ships); ``index``: a pypiserver on
        127.0.0.1 (its own cached venv, an OS-chosen port, uploads behind a password; stopped by
        its pid at the end), or a reachability check of ``[publish] index_url``; ``upload``: a
        real ``twine upload``; ``wheelhouse`` of the dependencies; ``venv``; ``install``:
        ``pip install NAME==VERSION`` from that index (dependencies from the wheelhouse only);
        ``import``: the package imports from the fresh venv.
make    nothing to publish: one not-run step.

Credentials come from the environment only: TWINE_USERNAME/TWINE_PASSWORD (twine reads
them; for the local index, when the environment has none, the run makes a one-time
password), CARGO_REGISTRIES_<NAME>_TOKEN (cargo reads it). Every log and row hides their
values (the executor redacts every secret-named variable it passes on).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from relgate.core.errors import ExecutionError, InputError
from relgate.core.record import record
from relgate.core.redact import is_secret_name
from relgate.core.schema import display_path, read_toml
from relgate.kinds.registry import kind_of
from relgate.manifest.options import RunOptions
from relgate.manifest.package_spec import read_lock
from relgate.manifest.specs import CommandSpec
from relgate.manifest.workspace import Workspace
from relgate.package.verify import (
    _not_run,
    cleanup,
    export_step,
    new_plan,
    pip,
    pip_problem,
    preamble,
    python_module,
    requirements_step,
    wheelhouse_step,
)
from relgate.package.work import PIP_HERMETIC, Plan
from relgate.run.flow import finish, run_plan
from relgate.run.plan import PlannedStep, StepFailed
from relgate.run.runner import RunSummary

__all__ = ["PYPISERVER", "cache_root", "LocalIndex", "cargo_registry_source", "compare_lock", "plan_publish_dry_run",
           "run_publish_dry_run"]

PYPISERVER_VERSION = "2.4.2"  # known to work; the venv is cached per version and Python
PYPISERVER = f"pypiserver[passlib]=={PYPISERVER_VERSION}"
_READY = ".relgate-ready"
_START_SECONDS = 60.0


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """Where relgate keeps tools between runs: ``RELGATE_CACHE``, else ``$XDG_CACHE_HOME/relgate``,
    else ``~/.cache/relgate``."""
    if environ.get("RELGATE_CACHE"):
        return Path(environ["RELGATE_CACHE"]).resolve()
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "relgate"


def free_port() -> int:
    """A TCP port on 127.0.0.1 the OS has just handed out (and taken back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stream(argv: Sequence[str], write: Callable[[str], None], *, env: Mapping[str, str] | None = None,
            what: str) -> None:
    """Run a helper command, its output line by line into ``write``; a failure is an ExecutionError."""
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=dict(env) if env is not None else None, text=True,
                                errors="replace")
    except OSError as exc:
        raise ExecutionError(f"{what}: cannot run {argv[0]}: {exc.strerror or exc}") from None
    assert proc.stdout is not None
    for line in proc.stdout:
        write(line.rstrip("\n"))
    if proc.wait() != 0:
        raise ExecutionError(f"{what} failed (exit {proc.returncode}); see the log")


def _no_proxy_env(environ: Mapping[str, str]) -> dict[str, str]:
    """NO_PROXY with 127.0.0.1 and localhost added: the local index is never reached through a proxy."""
    current = [h for h in (environ.get("NO_PROXY") or environ.get("no_proxy") or "").split(",") if h.strip()]
    value = ",".join(dict.fromkeys([*current, "127.0.0.1", "localhost"]))
    return {"NO_PROXY": value, "no_proxy": value}


@record(frozen=False)
class LocalIndex:
    """A pypiserver on 127.0.0.1 in its own cached venv (it must not share an environment with
    the project: its dependencies conflict with others'), uploads behind a password. Started
    by the ``index`` step, stopped by its pid (its own process group) when the run ends."""

    folder: Path  # packages/, htpasswd and server.log of this run
    venv: Path
    port: int
    username: str
    password: str
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def simple(self) -> str:
        return self.url + "simple/"

    @property
    def packages(self) -> Path:
        return self.folder / "packages"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def ensure_venv(self, write: Callable[[str], None]) -> None:
        """Make the pypiserver venv once per cache (atomically: built aside, renamed into place)."""
        if (self.venv / _READY).is_file() and self.python.exists():
            write(f"pypiserver venv: {self.venv} (cached)")
            return
        self.venv.parent.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".pypiserver-", dir=self.venv.parent))
        try:
            write(f"making the pypiserver venv {self.venv} ({PYPISERVER})")
            _stream([sys.executable, "-m", "venv", str(aside)], write, what="python -m venv")
            _stream([str(aside / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                     "--quiet", PYPISERVER], write, what=f"pip install {PYPISERVER}")
            (aside / _READY).write_text(PYPISERVER + "\n", encoding="utf-8")
            try:
                os.rename(aside, self.venv)  # only bin/python is used: the venv need not be relocatable
            except OSError:
                if not (self.venv / _READY).is_file():  # not a concurrent run that finished first
                    raise
        except OSError as exc:
            raise ExecutionError(f"cannot make the pypiserver venv {self.venv}: {exc.strerror or exc}") from None
        finally:
            shutil.rmtree(aside, ignore_errors=True)

    def start(self, write: Callable[[str], None]) -> None:
        self.ensure_venv(write)
        self.packages.mkdir(parents=True, exist_ok=True)
        htpasswd = self.folder / "htpasswd"
        clean = {k: v for k, v in os.environ.items() if not is_secret_name(k)}
        _stream([str(self.python), "-c", _HTPASSWD, str(htpasswd)], write, what="writing the index's htpasswd",
                env={**clean, "RELGATE_INDEX_USER": self.username, "RELGATE_INDEX_PASSWORD": self.password})
        log = open(self.folder / "server.log", "wb")
        try:
            self.process = subprocess.Popen(
                [str(self.python), "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(self.port),
                 "-a", "update", "-P", str(htpasswd), "--disable-fallback", str(self.packages)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=clean, start_new_session=True)
        except OSError as exc:
            raise ExecutionError(f"cannot start pypiserver: {exc.strerror or exc}") from None
        finally:
            log.close()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + _START_SECONDS
        while True:
            if self.process.poll() is not None:
                raise ExecutionError(f"pypiserver on 127.0.0.1:{self.port} exited ({self.process.returncode}) "
                                     f"before it answered: {self._log_tail()}")
            try:
                with opener.open(self.url + "health", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ExecutionError(f"pypiserver on 127.0.0.1:{self.port} did not answer within "
                                     f"{_START_SECONDS:g} s: {self._log_tail()}")
            time.sleep(0.1)
        write(f"pypiserver on {self.url} (pid {self.process.pid}): packages in {self.packages}; uploads need "
              "the password; no fallback to another index")

    def _log_tail(self) -> str:
        try:
            lines = (self.folder / "server.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return " | ".join(lines[-3:]) or "no output"

    def stop(self) -> str | None:
        """Stop the server this run started (its process group, by pid); what happened, in words."""
        proc, self.process = self.process, None
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return f"local index stopped (pypiserver, pid {proc.pid})"


_HTPASSWD = """\
import os, sys
from passlib.apache import HtpasswdFile
ht = HtpasswdFile(sys.argv[1], new=True)
ht.set_password(os.environ["RELGATE_INDEX_USER"], os.environ["RELGATE_INDEX_PASSWORD"])
ht.save()
"""

#: the import check, a stdlib script run with the installed environment's interpreter
_IMPORT = str(Path(__file__).resolve().parent / "importcheck.py")


def cargo_registry_source(name: str, root: Path, environ: Mapping[str, str] = os.environ) -> str | None:
    """Where this host configures the cargo registry ``name`` (for messages), or None."""
    if name == "crates-io":
        return "crates.io"
    key = "CARGO_REGISTRIES_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper() + "_INDEX"
    if environ.get(key):
        return f"${key}"
    home = Path(environ.get("CARGO_HOME") or Path.home() / ".cargo")
    for config in (root / ".cargo" / "config.toml", root / ".cargo" / "config", home / "config.toml", home / "config"):
        if not config.is_file():
            continue
        try:
            data = read_toml(config)
        except InputError:
            continue
        entry = data.get("registries", {}).get(name) if isinstance(data.get("registries"), dict) else None
        if isinstance(entry, dict) and entry.get("index"):
            return display_path(config)
    return None


# --- the lock check (python) ----------------------------------------------------------------------


def compare_lock(report: Mapping[str, Any], lock_bytes: bytes, *, shown: str, project: str) -> list[str]:
    """Differences between what pip resolved (its ``--report``) and the lock; [] when they match."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name

    own = canonicalize_name(project)
    resolved: dict[str, tuple[str, str]] = {}
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        name = canonicalize_name(str(meta.get("name", "")))
        if name and name != own:
            resolved[name] = (str(meta.get("name")), str(meta.get("version")))
    entries = {e.name: e for e in read_lock(lock_bytes, shown=shown) if e.applies and e.name != own}
    problems: list[str] = []
    for name, (display, version) in sorted(resolved.items()):
        entry = entries.get(name)
        if entry is None:
            problems.append(f"{display} {version} resolves, but {shown} does not list it")
            continue
        try:
            ok = SpecifierSet(entry.specifier).contains(version, prereleases=True)
        except InvalidSpecifier:
            ok = False
        if not ok:
            problems.append(f"{display}: {shown}:{entry.line} says {entry.specifier}, {version} resolves")
    for name, entry in sorted(entries.items()):
        if name not in resolved:
            problems.append(f"{entry.shown}: {shown}:{entry.line} lists it, but nothing requires it any more")
    return problems


def _lock_step(plan: Plan, lock: str) -> PlannedStep:
    work = plan.work
    report_path = work.root / "resolved.json"
    shown = lock

    def action(write: Callable[[str], None]) -> int:
        try:
            report = json.loads(report_path.read_text(encoding="utf-8"))
            data = (work.src / lock).read_bytes()
        except (OSError, ValueError) as exc:
            raise ExecutionError(f"cannot read the resolution report or the lock: {exc}") from None
        problems = compare_lock(report, data, shown=shown, project=plan.project.name)
        for line in problems:
            write(line)
        if problems:
            write(f"{shown} no longer matches what resolves: update it and commit it (see its header)")
            raise StepFailed(f"{shown} no longer matches what resolves: {len(problems)} difference"
                             f"{'s' if len(problems) != 1 else ''}, first {problems[0]}")
        count = len(report.get("install", []))
        write(f"{shown} matches what resolves: {count} package{'s' if count != 1 else ''}, each locked at the "
              "version that resolves, nothing extra")
        return 0

    return plan.step("lock", action=action, action_name=f"relgate lock check {shown}", needs=("resolve",))


# --- planning ----------------------------------------------------------------------------------------


def _plan_cargo(plan: Plan, environ: Mapping[str, str]) -> list[PlannedStep]:
    work = plan.work
    env = {"CARGO_TARGET_DIR": str(work.target)}
    registry = plan.manifest.publish.registry
    lock = plan.step("lock", CommandSpec(argv=("cargo", "tree", "--locked", "--depth", "0")), cwd=work.src, env=env,
                     needs=("export",))
    command = CommandSpec(argv=("cargo", "publish", "--locked", "--dry-run",
                                *(("--registry", registry) if registry else ())))
    publish = plan.step("publish", command, cwd=work.src, env=env, needs=("lock",),
                        timeout=plan.manifest.publish.timeout)
    if registry is None:
        publish = _not_run(publish, f"no registry configured ({display_path(plan.manifest.source)}: publish.registry)")
    elif cargo_registry_source(registry, plan.project.root, environ) is None:
        var = "CARGO_REGISTRIES_" + re.sub(r"[^A-Za-z0-9]", "_", registry).upper() + "_INDEX"
        publish = _not_run(publish, f'no registry "{registry}" configured on this host (set {var}, or '
                                    f"[registries.{registry}] in a cargo config)")
    return [lock, publish]


def _plan_python(plan: Plan, environ: Mapping[str, str], cache: Path) -> tuple[list[PlannedStep], LocalIndex | None]:
    work, project, manifest = plan.work, plan.project, plan.manifest
    publish = manifest.publish
    timeout = publish.timeout
    steps = [plan.step("package", python_module("build", "--outdir", str(work.dist), str(work.src)),
                       needs=("export",)),
             plan.step("twine-check", python_module("twine", "check", "--strict", str(work.dist / "*")),
                       env={"NO_COLOR": "1"}, needs=("package",)),
             requirements_step(plan, manifest.package.extras)]
    lock = work.src / publish.lock if publish.lock else None
    resolve = pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(work.root / "resolved.json"),
                  *(("-c", str(lock)) if lock else ()), "-r", str(work.requirements))
    if publish.lock:
        steps += [plan.step("resolve", resolve, needs=("requirements",)), _lock_step(plan, publish.lock)]
    else:
        why = f"no lock declared ({display_path(manifest.source)}: publish.lock)"
        steps += [plan.step("resolve", resolve, skip=why), plan.step("lock", skip=why, action=lambda write: 0,
                                                                     action_name="relgate lock check")]

    index: LocalIndex | None = None
    twine_env = {"NO_COLOR": "1", "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
                 **_no_proxy_env(environ)}
    credentials_missing = None
    if publish.index_url is None:
        username = environ.get("TWINE_USERNAME") or "__token__"
        password = environ.get("TWINE_PASSWORD") or secrets.token_urlsafe(24)
        venv = cache / f"pypiserver-{PYPISERVER_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
        index = LocalIndex(folder=work.root / "index", venv=venv, port=free_port(), username=username,
                           password=password)
        if not environ.get("TWINE_PASSWORD"):  # a one-time password for this run's own index
            twine_env.update(TWINE_USERNAME=username, TWINE_PASSWORD=password)
        elif not environ.get("TWINE_USERNAME"):
            twine_env["TWINE_USERNAME"] = username
        upload_url, simple = index.url, index.simple
        local = index

        def start(write: Callable[[str], None]) -> int:
            local.start(write)
            return 0

        steps.append(plan.step("index", action=start, action_name=f"start pypiserver on 127.0.0.1:{index.port}"))
    else:
        simple = publish.index_url
        upload_url = publish.upload_url or (simple[: -len("simple/")] if simple.endswith("/simple/") else simple)
        if not environ.get("TWINE_PASSWORD"):
            credentials_missing = ("no credentials in the environment: set TWINE_PASSWORD (and TWINE_USERNAME; "
                                   "default __token__)")
        elif not environ.get("TWINE_USERNAME"):
            twine_env["TWINE_USERNAME"] = "__token__"
        steps.append(plan.step("index", action=_reach(upload_url), action_name=f"reach {upload_url}"))

    upload = plan.step("upload", python_module("twine", "upload", "--non-interactive", "--disable-progress-bar",
                                               "--repository-url", upload_url, str(work.dist / "*")),
                       env=twine_env, needs=("index", "twine-check"), timeout=timeout)
    if credentials_missing:
        upload = _not_run(upload, credentials_missing)
    name, version = project.name, project.version
    # --no-compile: only the import below uses the venv, and pip's compile never fails an install.
    install = pip("--python", str(work.venv_python), "install", "--no-cache-dir", "--no-compile", "--index-url", simple,
                  "--find-links", str(work.wheelhouse), f"{name}=={version}")
    imports = publish.imports  # none: the distribution's own top-level modules (importcheck.py)
    steps += [upload, wheelhouse_step(plan, lock),
              plan.step("venv", python_module("venv", "--without-pip", str(work.venv)), needs=("package",)),
              plan.step("install", install, env={**PIP_HERMETIC, **_no_proxy_env(environ)},
                        needs=("upload", "wheelhouse", "venv"), timeout=timeout),
              plan.step("import", CommandSpec(argv=(str(work.venv_python), "-I", _IMPORT, name, *imports)),
                        needs=("install",))]
    no_pip = pip_problem()
    if no_pip or version is None:
        why = no_pip or (f"{display_path(project.source)}: project.version is not set, so the install cannot be "
                         "pinned to the uploaded version")
        steps = [_not_run(s, why) if s.name == "install" else s for s in steps]
    return steps, index


def _reach(url: str) -> Callable[[Callable[[str], None]], int]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)

    def action(write: Callable[[str], None]) -> int:
        try:
            with socket.create_connection((host, port), timeout=10):
                pass
        except OSError as exc:
            raise ExecutionError(f"cannot reach the package index at {host}:{port} ({url}): "
                                 f"{exc.strerror or exc}") from None
        write(f"the package index at {host}:{port} answers")
        return 0

    return action


def plan_publish_dry_run(plan: Plan, *, environ: Mapping[str, str] = os.environ,
                         cache: Path | None = None) -> tuple[list[PlannedStep], LocalIndex | None]:
    """Every publish_dry_run step, in order, and the local index the run starts (if any)."""
    steps = [export_step(plan)]
    registries = {"crate": lambda: (_plan_cargo(plan, environ), None),
                  "index": lambda: _plan_python(plan, environ, cache or cache_root(environ))}
    flow = kind_of(plan.project.kind).registry_flow  # how a kind publishes, if it does
    if flow is not None:
        more, index = registries[flow]()
        return steps + more, index
    nothing = plan.step("publish", action=lambda write: 0, action_name="publish")
    return [_not_run(nothing, f"a {plan.project.kind} project has no package registry to publish to "
                              "(package_verify checks its tarball)")], None


def run_publish_dry_run(ws: Workspace, *, argv: Sequence[str], options: RunOptions = RunOptions(),
                        out: TextIO = sys.stdout, environ: Mapping[str, str] = os.environ) -> RunSummary:
    """``nox -s publish_dry_run``: the rehearsal, one ledger run; the local index is always stopped."""
    from relgate.remote.pool import host_pool

    plan = new_plan(ws, "publish_dry_run", "publish")
    index: LocalIndex | None = None
    try:
        steps, index = plan_publish_dry_run(plan, environ=environ)
        preamble(plan, "publish_dry_run", options, out, offline=False)
        summary = run_plan(ws, steps, session="publish_dry_run", argv=argv, pool=host_pool(ws), out=out,
                           options=options)
    finally:
        if index is not None:
            stopped = index.stop()
            if stopped:
                print(stopped, file=out)
        cleanup(plan, out)
    return finish(summary, options, out)
