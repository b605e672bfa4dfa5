"""A package stage's work folder, the network it runs offline behind, and its plan: what
package_verify and publish_dry_run share (moved whole from ``package/verify.py``)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from relgate.core.errors import ExecutionError
from relgate.core.record import record
from relgate.core.redact import Redactor
from relgate.ledger.gitfacts import GitFacts
from relgate.manifest.package_spec import PackageManifest
from relgate.manifest.specs import CommandSpec, ProjectSpec
from relgate.package import offline
from relgate.run.plan import PlannedStep

__all__ = ["OFFLINE_SCRIPT", "PIP_HERMETIC", "Network", "Plan", "Work", "detect_network"]

OFFLINE_SCRIPT = str(Path(offline.__file__).resolve())

# --- the run's work folder, and the network --------------------------------------------------


@dataclass(frozen=True)
class Work:
    """The folder one run builds in; every path a step uses is here."""

    root: Path

    @classmethod
    def create(cls, session: str) -> "Work":
        work = cls(Path(tempfile.mkdtemp(prefix=f"relgate-{session}-")).resolve())
        for folder in (work.dist, work.wheelhouse, work.bin):
            folder.mkdir()
        # Offline steps run `relgate-offline -- COMMAND`: this run's own launcher of relgate/offline.py
        # (found first on the step's PATH), so no package under test can stand in for it.
        launcher = work.bin / "relgate-offline"
        launcher.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -I {shlex.quote(OFFLINE_SCRIPT)} \"$@\"\n",
                            encoding="utf-8")
        launcher.chmod(0o755)
        return work

    @property
    def src(self) -> Path:  # the exported commit
        return self.root / "src"

    @property
    def export_tar(self) -> Path:
        return self.root / "export.tar"

    @property
    def dist(self) -> Path:  # the built package archives
        return self.root / "dist"

    @property
    def unpacked(self) -> Path:
        return self.root / "unpacked"

    @property
    def package(self) -> Path:  # the extracted package's root
        return self.root / "package"

    @property
    def wheel(self) -> Path:  # the extracted wheel
        return self.root / "wheel"

    @property
    def target(self) -> Path:  # CARGO_TARGET_DIR
        return self.root / "target"

    @property
    def wheelhouse(self) -> Path:
        return self.root / "wheelhouse"

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def requirements(self) -> Path:  # the wheel's requirements
        return self.root / "requirements.txt"

    @property
    def bin(self) -> Path:  # relgate-offline
        return self.root / "bin"

    @property
    def venv_python(self) -> Path:
        return self.venv / "bin" / "python"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@record
class Network:
    """Whether offline steps run in a fresh network namespace here, and why (not)."""

    namespace: bool
    words: str

    @property
    def record(self) -> str:
        """What each offline step's row records (``RELGATE_NETWORK``)."""
        return ("cut: " if self.namespace else "offline switches only: ") + self.words

    def wrap(self, command: CommandSpec) -> CommandSpec:
        """``relgate-offline -- COMMAND`` (``--namespace=try`` where no namespace can be made)."""
        argv = command.argv if command.argv is not None else ("/bin/sh", "-c", command.shell or "")
        mode = () if self.namespace else ("--namespace=try",)
        return CommandSpec(argv=("relgate-offline", *mode, "--", *argv))

    @property
    def env(self) -> dict[str, str]:
        return {**offline.OFFLINE_ENV, "RELGATE_NETWORK": self.record}


def detect_network() -> Network:
    done, words = offline.probe(OFFLINE_SCRIPT)
    return Network(namespace=done, words=words or "unknown")


# --- steps ----------------------------------------------------------------------------------------

_TOOLS = ("cargo", "make", "git", "gcc", "cc", "clang", "nvcc", "hipcc")
#: pip looks nowhere but where the command line says (no config file, no find-links or index from the environment).
# A PYTHONPATH from the caller's shell would let pip see a checkout as "already installed"
# (and the tests import it instead of the wheel): the package is judged as installed, alone.
PIP_HERMETIC = {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": "", "PIP_INDEX_URL": "",
                "PIP_CONSTRAINT": "", "PYTHONPATH": ""}


@record(frozen=False)
class Plan:
    """What one stage run shares between its steps: where, on which host, with which network."""

    project: ProjectSpec
    manifest: PackageManifest
    facts: GitFacts
    work: Work
    network: Network
    host: str
    lane: str
    roots: list[tuple[str, Path, bool]] = field(default_factory=list)  # filled by extract: label, root, main?

    def step(self, name: str, command: CommandSpec | None = None, *, cwd: Path | None = None,
             env: Mapping[str, str] | None = None, needs: Sequence[str] = (), offline: bool = False,
             scan: bool = False, timeout: float | None = None, skip: str | None = None,
             action: Callable[[Callable[[str], None]], int] | None = None, action_name: str | None = None,
             ) -> PlannedStep:
        """One step; ``offline`` ones run through :mod:`relgate.offline` with the offline switches."""
        commands: tuple[CommandSpec, ...] = ()
        requires: tuple[str, ...] = ()
        step_env = dict(env or {})
        if command is not None:
            tool = command.argv[0] if command.argv else None
            requires = (tool,) if tool in _TOOLS else ()
            if offline:
                path = step_env.get("PATH") or os.environ.get("PATH") or os.defpath
                step_env = {**self.network.env, **step_env, "PATH": f"{self.work.bin}{os.pathsep}{path}"}
                command = self.network.wrap(command)
            commands = (command,)
        return PlannedStep(name=name, commands=commands, cwd=cwd or self.work.root, lane=self.lane, env=step_env,
                           timeout=timeout if timeout is not None else self.manifest.package.timeout,
                           requires=requires, scan_warnings=scan, skip=skip, host=self.host, needs=tuple(needs),
                           action=_guarded(name, action) if action is not None else None, action_name=action_name)


def _guarded(name: str, action: Callable[[Callable[[str], None]], int]) -> Callable[[Callable[[str], None]], int]:
    """An action as the runner gets it: its lines redacted like command output, and a file-system
    failure an error of the harness (one line), never a traceback."""

    def run(write: Callable[[str], None]) -> int:
        try:
            return action(_safe(write))
        except OSError as exc:
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            raise ExecutionError(f"{name}:{where} {exc.strerror or exc}") from None

    return run



def _safe(write: Callable[[str], None]) -> Callable[[str], None]:
    """``write`` with secrets of the environment hidden (actions write to the log directly)."""
    redact = Redactor.from_env(os.environ)
    return lambda line: write(redact(line))
