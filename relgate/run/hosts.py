"""Hosts: where commands run, and what they offer (boards, driver, toolkit, capabilities).

A host's declared facts come from ``hosts/*.toml``; a local host also detects its own
(nvidia-smi, nvcc, tools on PATH), with the probes side by side: nvidia-smi alone can take
tens of milliseconds on a GPU host. An SSH host reuses the parsers over its own connection.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence

from relgate.core.record import record
from relgate.manifest.specs import HostSpec

__all__ = ["ProbeResult", "HostFacts", "Host", "detect_local", "start_detect_local", "parse_nvidia_smi", "parse_nvidia_smi_uuids", "parse_nvcc_version"]

_TOOLS = ("cc", "gcc", "clang", "make", "cargo", "nvcc", "hipcc", "git")


@record
class ProbeResult:
    """One ``[[probe]]`` run on a host: whether it passed, and its output (kept as a host fact)."""

    name: str
    passed: bool
    output: str  # the probe's output (its tail)
    why: str | None = None  # why it failed: exit 1, timed out, output does not match /…/

    def summary(self) -> str:
        """Why it failed and its last output line, shortened: what a ``not-run`` reason quotes."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        last = lines[-1] if lines else "no output"
        last = last if len(last) <= 160 else last[:157] + "..."
        return f"{self.why}: {last}" if self.why else last


@record
class HostFacts:
    boards: tuple[str, ...] = ()
    driver: str | None = None
    toolkit: str | None = None
    capabilities: frozenset[str] = frozenset()
    gpu_uuids: tuple[str, ...] = ()  # by index, where nvidia-smi lists them
    probes: tuple[ProbeResult, ...] = ()  # this run's probes of the host (None run yet: empty)


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
        """The required capabilities (or boards) this host does not offer, in order. A capability
        gated by a ``[[probe]]`` is offered only once its probe passed in this run."""
        offered = self.facts.capabilities | set(self.facts.boards)
        gated = {p.name for p in self.spec.probes}
        passed = {p.name for p in self.facts.probes if p.passed}
        return [r for r in requires if (r not in offered and r not in passed) or (r in gated and r not in passed)]

    def failed_probe(self, capability: str) -> ProbeResult | None:
        """This run's failed probe of ``capability`` on this host, if it failed."""
        return next((p for p in self.facts.probes if p.name == capability and not p.passed), None)

    @property
    def gpu_slots(self) -> int:
        """GPUs steps may take here: declared (``gpus = N``), else as many as were detected."""
        return self.spec.gpus if self.spec.gpus is not None else len(self.facts.gpu_uuids)


def parse_nvidia_smi_uuids(text: str) -> tuple[str, ...]:
    """``name, driver, compute_cap, uuid`` rows → the GPUs' UUIDs in index order (where listed)."""
    rows = [[p.strip() for p in line.split(",")] for line in text.splitlines() if line.strip()]
    return tuple(r[3] for r in rows if len(r) > 3 and r[3].startswith("GPU-"))


def parse_nvidia_smi(text: str) -> tuple[list[str], str | None, set[str]]:
    """``name, driver, compute_cap[, uuid]`` CSV rows → boards, driver, capabilities."""
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


_PROBE_TIMEOUT = 20.0  # seconds for every probe together: a hung nvidia-smi must not hang relgate


def _start_probe(argv: Sequence[str]) -> subprocess.Popen[str] | None:
    try:
        return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def _probe_output(proc: subprocess.Popen[str] | None, deadline: float) -> str | None:
    """The probe's stdout if it exited 0 before the deadline (else it is killed: None)."""
    if proc is None:
        return None
    try:
        out, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return out if proc.returncode == 0 else None


def detect_local(spec: HostSpec) -> HostFacts:
    """Declared facts win; detected ones fill the gaps and add capabilities."""
    return start_detect_local(spec)()


def start_detect_local(spec: HostSpec) -> Callable[[], HostFacts]:
    """Start the probes of :func:`detect_local` and return what waits for them."""
    caps = set(spec.capabilities)
    if not spec.detect:
        return lambda: HostFacts(boards=tuple(spec.boards), driver=spec.driver, toolkit=spec.toolkit,
                                 capabilities=frozenset(caps))
    on_path = {t for t in _TOOLS if shutil.which(t)}
    caps |= on_path
    smi = _start_probe(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap,uuid", "--format=csv,noheader"]) \
        if shutil.which("nvidia-smi") else None
    nvcc = _start_probe(["nvcc", "--version"]) if "nvcc" in on_path and not spec.toolkit else None  # declared wins
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        caps.add("metal")
    deadline = time.monotonic() + _PROBE_TIMEOUT

    def facts() -> HostFacts:
        boards = list(spec.boards)
        driver, toolkit = spec.driver, spec.toolkit
        out = _probe_output(smi, deadline)
        uuids: tuple[str, ...] = ()
        if out:
            found, drv, gpu_caps = parse_nvidia_smi(out)
            uuids = parse_nvidia_smi_uuids(out)
            boards = boards or found
            driver = driver or drv
            caps.update(gpu_caps)
        toolkit = toolkit or parse_nvcc_version(_probe_output(nvcc, deadline) or "")
        return HostFacts(boards=tuple(boards), driver=driver, toolkit=toolkit, capabilities=frozenset(caps),
                         gpu_uuids=uuids)

    return facts
