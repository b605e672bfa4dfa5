"""Hosts: where commands run, and what they offer (boards, driver, toolkit, capabilities).

A host's declared facts come from ``hosts/*.toml``; a local host also detects its own
(nvidia-smi, nvcc, tools on PATH). Detection parses command output through a ``probe``
callable, so an SSH host can reuse the parsers over its own connection.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence

from relgate.core.record import record
from relgate.manifest.specs import HostSpec

__all__ = ["HostFacts", "Host", "detect_local", "parse_nvidia_smi", "parse_nvcc_version"]

Probe = Callable[[Sequence[str]], "str | None"]
_TOOLS = ("cc", "gcc", "clang", "make", "cargo", "nvcc", "hipcc", "git")


@record
class HostFacts:
    boards: tuple[str, ...] = ()
    driver: str | None = None
    toolkit: str | None = None
    capabilities: frozenset[str] = frozenset()


@record
class Host:
    spec: HostSpec
    facts: HostFacts

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def board(self) -> str | None:
        return ", ".join(self.facts.boards) or None

    def describe(self) -> str:
        """``board NVIDIA H200, driver 580.159.04, toolkit cuda 13.0; offers cuda, make, sm90``."""
        facts = self.facts
        offers = ", ".join(sorted(facts.capabilities)) or "nothing detected"
        return (f"board {self.board or 'none'}, driver {facts.driver or 'none'}, toolkit {facts.toolkit or 'none'}; "
                f"offers {offers}")

    def missing(self, requires: Iterable[str]) -> list[str]:
        """The required capabilities (or boards) this host does not offer, in order."""
        offered = self.facts.capabilities | set(self.facts.boards)
        return [r for r in requires if r not in offered]


def parse_nvidia_smi(text: str) -> tuple[list[str], str | None, set[str]]:
    """``name, driver, compute_cap`` CSV rows → boards, driver, capabilities."""
    boards: list[str] = []
    drivers: set[str] = set()
    caps: set[str] = set()
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0]:
            continue
        boards.append(parts[0])
        drivers.add(parts[1])
        caps.add("cuda")
        if len(parts) > 2 and re.fullmatch(r"\d+\.\d+", parts[2]):
            caps.add("sm" + parts[2].replace(".", ""))
    driver = ", ".join(sorted(drivers)) or None
    return boards, driver, caps


def parse_nvcc_version(text: str) -> str | None:
    m = re.search(r"release (\d+\.\d+)", text)
    return f"cuda {m.group(1)}" if m else None


def _local_probe(argv: Sequence[str]) -> str | None:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def detect_local(spec: HostSpec, probe: Probe = _local_probe) -> HostFacts:
    """Declared facts win; detected ones fill the gaps and add capabilities."""
    caps = set(spec.capabilities)
    boards = list(spec.boards)
    driver, toolkit = spec.driver, spec.toolkit
    if spec.detect:
        caps.update(t for t in _TOOLS if shutil.which(t))
        if shutil.which("nvidia-smi"):
            out = probe(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap",
                         "--format=csv,noheader"])
            if out:
                found, drv, gpu_caps = parse_nvidia_smi(out)
                boards = boards or found
                driver = driver or drv
                caps |= gpu_caps
        if shutil.which("nvcc"):
            toolkit = toolkit or parse_nvcc_version(probe(["nvcc", "--version"]) or "")
        if platform.system() == "Darwin" and platform.machine() == "arm64":
            caps.add("metal")
    return HostFacts(boards=tuple(boards), driver=driver, toolkit=toolkit, capabilities=frozenset(caps))
