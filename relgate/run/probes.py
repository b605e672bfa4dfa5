"""Capabilities that need a check: a host file's ``[[probe]]`` runs on the host itself (locally,
over SSH, on a Slurm node) once per run, when a step first requires what it gates; the
capability is offered only if the probe exited 0 (and its output matched ``expect``). Its
output is a host fact: stored with every step that ran there, and quoted in the ``not-run``
reason of a step that required it where it failed ("rdma probe failed on HOST (…)")."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from relgate.core.redact import Redactor, env_secrets, shell_secrets
from relgate.manifest.host_extras import ProbeSpec
from relgate.run.executor import CommandRequest, Executor
from relgate.run.hosts import Host, ProbeResult

__all__ = ["probe_host", "gated", "probe_failures"]

_KEEP = 4000  # characters of a probe's output kept as the fact


class _Capture:
    path = None

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> None:
        if self.size < 1 << 20:  # a probe that floods is cut, not kept whole
            self.parts.append(text)
            self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts)


def gated(host: Host, requires: Iterable[str]) -> bool:
    """Whether any of ``requires`` is a capability ``host`` gates by a probe."""
    names = {p.name for p in host.spec.probes}
    return any(r in names for r in requires)


def _run_one(executor: Executor, spec: ProbeSpec) -> ProbeResult:
    runner = getattr(executor, "probe", None)  # an executor with its own way (an SSH connection, a Slurm node)
    if runner is not None:
        code, text = runner(spec.run, spec.timeout)
        why = None if code == 0 else (f"exit {code}" if code is not None else "could not run")
    else:
        sink = _Capture()
        result = executor.run(CommandRequest(shell=spec.run, cwd=Path("/"), timeout=spec.timeout), sink)
        text = sink.text()
        why = (result.spawn_error or (f"timed out after {spec.timeout:g} s" if result.timed_out else None)
               or (f"exit {result.exit_code}" if result.exit_code not in (0, None) else None)
               or (f"killed by signal {result.signal}" if result.signal else None))
    if why is None and spec.expect is not None and not re.search(spec.expect, text, re.MULTILINE):
        why = f"output does not match /{spec.expect}/"
    # a secret the probe printed never reaches the ledger (its output is stored as a host fact)
    redact = Redactor([*env_secrets(os.environ), *env_secrets(executor.host.spec.env), *shell_secrets(spec.run)])
    return ProbeResult(name=spec.name, passed=why is None, output=redact(text[-_KEEP:]), why=why)


def probe_host(executor: Executor) -> Host:
    """``executor``'s host with its probes run (each once, in order) and their results in its
    facts; the executor's ``host`` is updated too (later steps there see the same)."""
    host = executor.host
    results = tuple(_run_one(executor, spec) for spec in host.spec.probes)
    host = replace(host, facts=replace(host.facts, probes=results))
    executor.host = host  # type: ignore[misc]
    return host


def probe_failures(hosts: Sequence[Host], requires: Iterable[str]) -> str | None:
    """``rdma probe failed on gpu1 (rdma: disabled)``: the failed probes that keep a step off
    ``hosts`` (None if no probe is why)."""
    wanted = list(requires)
    parts = []
    for host in hosts:
        for name in wanted:
            failed = host.failed_probe(name)
            if failed is not None:
                parts.append(f"{name} probe failed on {host.name} ({failed.summary()})")
    return "; ".join(parts) or None
