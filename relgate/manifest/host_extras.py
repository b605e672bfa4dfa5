"""What a host file says beyond one machine's address: its GPU slots, the probes that gate a
capability (``[[probe]]``), and a Slurm cluster's placement (``kind = "slurm"``).

Parsed here, beside :func:`relgate.manifest.specs.parse_host`, into records the host spec carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from relgate.core.record import record
from relgate.core.schema import Checker

__all__ = ["ProbeSpec", "SlurmBoard", "SlurmSpec", "parse_gpus", "parse_probes", "parse_slurm", "GPU_ALL"]

GPU_ALL = "all"
_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")  # Slurm's --time: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]


@record
class ProbeSpec:
    """``[[probe]]``: ``run`` on the host must exit 0 (and print a line matching ``expect``)
    for the capability ``name`` to be offered there."""

    name: str
    run: str
    expect: str | None = None
    timeout: float = 30.0


@record
class SlurmBoard:
    """How one board (or capability) a step requires is asked of Slurm."""

    gres: str | None = None  # --gres=gpu:h100:1
    constraint: str | None = None  # --constraint=h100
    partition: str | None = None  # --partition=… (instead of the cluster's)


@record
class SlurmSpec:
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None  # --time
    resubmit: int = 1  # a preempted / timed-out / node-lost / OOM-killed job is submitted again this often
    boards: Mapping[str, SlurmBoard] = field(default_factory=dict)
    extra_args: tuple[str, ...] = ()  # more srun arguments, as given
    max_jobs: int = 64  # jobs of one run in the queue at once


def parse_gpus(c: Checker, t: Mapping[str, Any], prefix: str, *, allow_all: bool) -> int | str | None:
    """``gpus = N`` (N ≥ 0; a step: N ≥ 1) or, for a step, ``"all"``; else None (problem noted)."""
    if "gpus" not in t:
        return None
    value = t["gpus"]
    if allow_all and value == GPU_ALL:
        return GPU_ALL
    least = 1 if allow_all else 0
    if isinstance(value, bool) or not isinstance(value, int) or value < least or value > 1024:
        what = f'a whole number from {least} to 1024' + (' or "all"' if allow_all else "")
        c.problem(f"{prefix}.gpus", f"expected {what}, got {value!r}")
        return None
    return value


def parse_probes(c: Checker, data: Mapping[str, Any]) -> tuple[ProbeSpec, ...]:
    out: list[ProbeSpec] = []
    seen: set[str] = set()
    for i, t in c.array_of_tables(data, "", "probe").items():
        where = f"probe[{i}]"
        c.keys(t, where, ("name", "run", "expect", "timeout"), required=("name", "run"))
        name = c.name(t, where, "name")
        run = c.text(t, where, "run")
        expect = c.get(t, where, "expect", str)
        if expect is not None:
            try:
                re.compile(expect)
            except re.error as exc:
                c.problem(f"{where}.expect", f"not a regular expression: {exc}")
                expect = None
        if name in seen:
            c.problem(f"{where}.name", f'"{name}" is probed twice')
        if name and run:
            seen.add(name)
            out.append(ProbeSpec(name=name, run=run, expect=expect,
                                 timeout=c.seconds(t, where, "timeout", 30.0) or 30.0))
    return tuple(out)


def parse_slurm(c: Checker, t: Mapping[str, Any]) -> SlurmSpec:
    def opt(key: str) -> str | None:
        return c.text(t, "host", key)

    time_limit = opt("time_limit")
    if time_limit is not None and not _TIME.fullmatch(time_limit):
        c.problem("host.time_limit", f'"{time_limit}" is not a Slurm time (MM, HH:MM:SS or D-HH:MM:SS)')
    resubmit = c.get(t, "host", "resubmit", int, 1)
    if resubmit < 0 or resubmit > 10:
        c.problem("host.resubmit", f"{resubmit}: from 0 to 10")
        resubmit = 1
    max_jobs = c.get(t, "host", "max_jobs", int, 64)
    if max_jobs < 1:
        c.problem("host.max_jobs", f"{max_jobs}: at least 1")
        max_jobs = 64
    boards: dict[str, SlurmBoard] = {}
    for name, b in c.tables(t, "host", "board").items():
        where = f"host.board.{name}"
        c.keys(b, where, ("gres", "constraint", "partition"))
        board = SlurmBoard(gres=c.text(b, where, "gres"), constraint=c.text(b, where, "constraint"),
                           partition=c.text(b, where, "partition"))
        if board.gres is None and board.constraint is None and board.partition is None:
            c.problem(where, "says nothing: give gres, constraint or partition")
        boards[name] = board
    return SlurmSpec(partition=opt("partition"), account=opt("account"), time_limit=time_limit,
                     resubmit=resubmit, boards=boards, extra_args=tuple(c.string_list(t, "host", "srun_args")),
                     max_jobs=max_jobs)
