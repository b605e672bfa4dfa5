"""Host facts detected over SSH: boards, driver, toolkit, capabilities.

The same parsers as for this machine (:mod:`relgate.run.hosts`: nvidia-smi, nvcc) read the
host's output, plus ROCm (rocminfo, hipcc) and macOS (the Apple GPU, the OS version, which
carries the Metal driver). One round trip: a probe script prints each tool's output in a
section. Declared facts win; detected ones fill the gaps and add capabilities.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from relgate.manifest.specs import HostSpec
from relgate.remote.ssh import SshExecutor
from relgate.run.hosts import HostFacts, parse_nvcc_version, parse_nvidia_smi, parse_nvidia_smi_uuids

__all__ = ["detect_remote", "parse_probe", "parse_rocminfo", "parse_hipcc_version", "facts_from_probe",
           "PROBE_SCRIPT"]

_TOOLS = ("cc", "gcc", "clang", "make", "cargo", "nvcc", "hipcc", "git")
_MARK = "@@relgate-probe "
PROBE_SCRIPT = "; ".join([
    f"echo '{_MARK}uname'; uname -s -m",
    f"echo '{_MARK}tools'; for t in {' '.join(_TOOLS)}; do command -v $t >/dev/null 2>&1 && echo $t; done",
    f"echo '{_MARK}nvidia-smi'; nvidia-smi --query-gpu=name,driver_version,compute_cap,uuid --format=csv,noheader "
    "2>/dev/null",
    f"echo '{_MARK}nvcc'; nvcc --version 2>/dev/null",
    f"echo '{_MARK}rocminfo'; rocminfo 2>/dev/null | grep -E '^ *(Name|Marketing Name):'",
    f"echo '{_MARK}hipcc'; hipcc --version 2>/dev/null",
    f"echo '{_MARK}macos'; if [ \"$(uname -s)\" = Darwin ]; then sw_vers -productVersion; "
    "system_profiler SPDisplaysDataType 2>/dev/null | sed -n 's/^ *Chipset Model: //p'; fi",
    "true",
])


def parse_probe(text: str) -> dict[str, str]:
    """The probe script's output, by section."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(_MARK):
            current = line[len(_MARK):].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def parse_rocminfo(text: str) -> tuple[list[str], set[str]]:
    """``Name: gfx1151`` / ``Marketing Name: …`` agent lines → boards and capabilities."""
    boards: list[str] = []
    caps: set[str] = set()
    pending: str | None = None
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "Name":
            pending = value if re.fullmatch(r"gfx[0-9a-f]+", value) else None
        elif key == "Marketing Name" and pending is not None:
            boards.append(value)
            caps |= {"rocm", pending}
            pending = None
    return boards, caps


def parse_hipcc_version(text: str) -> str | None:
    m = re.search(r"HIP version: (\d+\.\d+)", text)
    return f"rocm {m.group(1)}" if m else None


def facts_from_probe(spec: HostSpec, sections: Mapping[str, str]) -> HostFacts:
    caps = set(spec.capabilities)
    boards = list(spec.boards)
    driver, toolkit = spec.driver, spec.toolkit
    caps.update(t for t in sections.get("tools", "").split() if t in _TOOLS)
    found, drv, gpu_caps = parse_nvidia_smi(sections.get("nvidia-smi", ""))
    if found:
        boards = boards or found
        driver = driver or drv
        caps |= gpu_caps
    toolkit = toolkit or parse_nvcc_version(sections.get("nvcc", ""))
    rboards, rcaps = parse_rocminfo(sections.get("rocminfo", ""))
    if rboards:
        boards = boards or rboards
        caps |= rcaps
    toolkit = toolkit or parse_hipcc_version(sections.get("hipcc", ""))
    uname = sections.get("uname", "").split()
    mac = [line.strip() for line in sections.get("macos", "").splitlines() if line.strip()]
    if uname[:1] == ["Darwin"] and mac:
        driver = driver or f"macOS {mac[0]}"
        boards = boards or mac[1:]
        if uname[1:2] == ["arm64"]:
            caps.add("metal")
    return HostFacts(boards=tuple(boards), driver=driver, toolkit=toolkit, capabilities=frozenset(caps),
                     gpu_uuids=parse_nvidia_smi_uuids(sections.get("nvidia-smi", "")))


def detect_remote(ex: SshExecutor) -> HostFacts:
    """Facts of the executor's host (declared only, when ``detect = false``). Raises SshError."""
    spec = ex.spec
    if not spec.detect:
        return HostFacts(boards=spec.boards, driver=spec.driver, toolkit=spec.toolkit,
                         capabilities=frozenset(spec.capabilities))
    _, out = ex.capture(PROBE_SCRIPT, timeout=120)
    return facts_from_probe(spec, parse_probe(out))
