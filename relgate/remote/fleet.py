"""Many hosts at once: a lane on every matching host in parallel, results collected per host.

:func:`spread` turns each step of a lane listed in ``[fleet] every_host`` into one step per
host that offers what it requires (``kernels-cpu@gpu1``, ``kernels-cpu@gpu2``); a per-board
lane arrives already pinned (one step per board and toolkit). :func:`run_fleet` gives each
host one worker (at most ``workers`` at once) that runs that host's steps in order, so a
host never runs two steps at a time (an exclusive host stays exclusive) unless it has GPU
slots or is a cluster: then its steps run side by side as :mod:`relgate.run.slots` says; the results come
back per host (Fabric's ``GroupResult`` habit). One host's failure never stops the others:
a step that breaks its worker is ``error`` with the reason, and so is every step that host
had left, while the other hosts run to the end. Steps listed as ``alone`` (multi-host steps,
which occupy several hosts) run after the parallel part, one at a time; each of their roles
gets a ledger row of its own beside the step's (:func:`relgate.remote.roles.record_roles`).

On SIGTERM/Ctrl-C no new step starts; the command each worker is running, on an SSH host or
on this machine, is stopped (its process group ended, through the executor's ``interrupt``:
no signal reaches a worker thread) and its step recorded as interrupted, as in a run without
the fleet, before the connections close and relgate exits.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from relgate.core.record import record
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.store import Ledger
from relgate.manifest.lanes import DEFAULT_WORKERS
from relgate.manifest.options import RunOptions
from relgate.manifest.workspace import Workspace
from relgate.run.console import ConsoleReporter
from relgate.run.executor import Executor, Interrupted
from relgate.run.flow import candidate_facts
from relgate.run.hosts import Host
from relgate.run.ledger_run import LedgerRun
from relgate.run.outage import RegistryOutages
from relgate.run.plan import PlannedStep, check_placement
from relgate.run.recorder import StepRecorder
from relgate.run.runner import HostPool, Reporter, RunSummary, StepOutcome, run_step, sigterm_interrupts
from relgate.run.slots import run_side_by_side, side_by_side

__all__ = ["HostResult", "FleetResult", "spread", "run_fleet", "run_fleet_plan",
           "render_hosts"]


@record
class HostResult:
    """What one host did in this run: its steps' outcomes in order, and why its worker broke."""

    host: str
    outcomes: tuple[StepOutcome, ...]
    broken: str | None = None  # the worker itself broke (not a red step): the reason

    @property
    def ok(self) -> bool:
        return self.broken is None and not any(o.verdict.blocks for o in self.outcomes)


@record
class FleetResult:
    """Per-host results (``GroupResult``): every host's, whatever the others did."""

    hosts: Mapping[str, HostResult]
    unplaced: tuple[StepOutcome, ...] = ()  # skipped, or nothing could run them
    alone: tuple[StepOutcome, ...] = ()  # multi-host steps, run after the parallel part

    @property
    def succeeded(self) -> dict[str, HostResult]:
        return {name: r for name, r in self.hosts.items() if r.ok}

    @property
    def failed(self) -> dict[str, HostResult]:
        return {name: r for name, r in self.hosts.items() if not r.ok}

    def outcomes(self, order: Sequence[PlannedStep]) -> list[StepOutcome]:
        """Every outcome, in the order the steps were planned."""
        index = {id(step): i for i, step in enumerate(order)}
        every = [*self.unplaced, *(o for r in self.hosts.values() for o in r.outcomes), *self.alone]
        return sorted(every, key=lambda o: index.get(id(o.step), len(index)))


def spread(steps: Sequence[PlannedStep], hosts: Sequence[Host]) -> list[PlannedStep]:
    """Each step not pinned to a host becomes one step per host offering what it requires,
    named ``NAME@HOST``; a step no host offers stays as it is (placement says why), and so does
    an in-process check (the lane census), which runs once, here."""
    out: list[PlannedStep] = []
    for step in steps:
        pinned = step.host is not None or step.action is not None
        offering = [] if pinned else [h for h in hosts if not h.missing(step.requires)]
        if not offering:
            out.append(step)
            continue
        out.extend(replace(step, name=f"{step.name}@{h.name}", host=h.name) for h in offering)
    return out


class _Shared:
    """What every worker of one fleet run shares (the reporter is called under a lock)."""

    def __init__(self, *, session: str, run_id: str, facts: GitFacts, home: Path, reporter: Reporter,
                 reuse: bool) -> None:
        self.session, self.run_id, self.facts, self.home, self.reuse = session, run_id, facts, home, reuse
        self._reporter = reporter
        self._lock = threading.Lock()
        self.stop = threading.Event()
        self.outages = RegistryOutages()  # a registry outage is one error per host (relgate.run.outage)

    def finished(self, outcome: StepOutcome) -> None:
        with self._lock:
            self._reporter.step_finished(outcome)


def run_fleet(steps: Sequence[PlannedStep], *, session: str, run_id: str, facts: GitFacts, pool: HostPool,
              ledger: Ledger, reporter: Reporter, reuse: bool = False, workers: int = DEFAULT_WORKERS,
              alone: Sequence[PlannedStep] = ()) -> FleetResult:
    """Run ``steps`` with one worker per host (at most ``workers`` hosts at once), then the
    ``alone`` steps one at a time; every host's steps are recorded whatever the others did."""
    shared = _Shared(session=session, run_id=run_id, facts=facts, home=ledger.home, reporter=reporter, reuse=reuse)
    unplaced: list[StepOutcome] = []
    groups: dict[str, list[tuple[Executor, PlannedStep]]] = {}
    for step in steps:
        placed = pool.place(step)
        if step.skip or isinstance(placed, str):
            outcome = run_step(step, session=session, run_id=run_id, facts=facts, placed=placed, ledger=ledger)
            unplaced.append(outcome)
            shared.finished(outcome)
            continue
        groups.setdefault(_worker_of(placed.host), []).append((placed, step))
    results: dict[str, HostResult] = {}
    with sigterm_interrupts():
        if groups:
            from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait  # a fleet run only

            threads = ThreadPoolExecutor(max_workers=max(1, min(workers, len(groups))),
                                         thread_name_prefix="relgate-host")
            futures = [threads.submit(_host_worker, placed, shared) for placed in groups.values()]
            try:
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                    for future in done:
                        results.update((r.host, r) for r in future.result())
            except BaseException as exc:
                # No new step starts; each running command is stopped (its process group ended)
                # and its step recorded as interrupted before the connections close.
                shared.stop.set()
                signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
                for placed in groups.values():
                    for executor, _ in placed:
                        stop = getattr(executor, "interrupt", None)
                        if stop is not None:
                            stop(signum)
                threads.shutdown(wait=True, cancel_futures=True)  # a second stop goes on up at once
                raise
            threads.shutdown(wait=True)
        alone_outcomes = []
        if alone:
            from relgate.remote.roles import record_roles  # a run with multi-host steps only
        for step in alone:
            try:
                outcome = run_step(step, session=session, run_id=run_id, facts=facts, placed=pool.place(step),
                                   ledger=ledger, reuse=reuse)
            finally:  # each role's own row (host, board, log), however the step ended
                record_roles(step, ledger=ledger, session=session, run_id=run_id, facts=facts)
            alone_outcomes.append(outcome)
            shared.finished(outcome)
    order = dict.fromkeys(e.host.name for placed in groups.values() for e, _ in placed)
    ordered = {name: results[name] for name in order if name in results}
    return FleetResult(hosts=ordered, unplaced=tuple(unplaced), alone=tuple(alone_outcomes))


def _worker_of(host: Host) -> str:
    """Hosts that share a worker: every local host is this machine (one work tree), so its
    steps never run side by side; each SSH host has its own."""
    return "(this machine)" if host.spec.kind == "local" else host.name


def _host_worker(placed: Sequence[tuple[Executor, PlannedStep]], shared: _Shared) -> list[HostResult]:
    """One worker's steps in order, on this thread's own ledger connection; per-host results.
    A host with GPU slots (or a cluster) runs its steps side by side (relgate.run.slots)."""
    if len({id(e) for e, _ in placed}) == 1 and side_by_side([placed[0][0]]):
        return _side_by_side_worker(placed[0][0], [s for _, s in placed], shared)
    outcomes: dict[str, list[StepOutcome]] = {}
    passed: set[str] = set()
    broken: dict[str, str] = {}
    with Ledger.open(shared.home) as ledger:
        for executor, step in placed:
            host = executor.host.name
            done = outcomes.setdefault(host, [])
            if shared.stop.is_set():
                break
            if host in broken:
                done.append(_record_error(step, host, executor.host, broken[host], ledger, shared))
                continue
            blocked = next((n for n in step.needs if n not in passed), None)
            placed: Executor | str = executor if blocked is None else f"needs {blocked}, which did not pass"
            try:
                outcome = run_step(step, session=shared.session, run_id=shared.run_id, facts=shared.facts,
                                   placed=placed, ledger=ledger, reuse=shared.reuse, outages=shared.outages)
            except (Interrupted, KeyboardInterrupt):
                raise
            except Exception as exc:  # the host's executor broke: this host stops, the others go on
                broken[host] = f"{type(exc).__name__}: {exc}"
                done.append(_record_error(step, host, executor.host, broken[host], ledger, shared))
                continue
            done.append(outcome)
            if outcome.verdict is Verdict.PASS:
                passed.add(step.name)
            shared.finished(outcome)
    return [HostResult(host=h, outcomes=tuple(o), broken=broken.get(h)) for h, o in outcomes.items()]


def _side_by_side_worker(executor: Executor, steps: Sequence[PlannedStep], shared: _Shared) -> list[HostResult]:
    """One host's steps on its GPU slots (or as a cluster's jobs), each on a thread with a ledger
    connection of its own; a step that breaks the host's executor makes the rest ``error``."""
    name = executor.host.name
    broken: list[str] = []

    def run(step: PlannedStep, placed: Executor | str) -> tuple[StepOutcome, bool]:
        with Ledger.open(shared.home) as ledger:
            if broken and not isinstance(placed, str):
                return _record_error(step, name, executor.host, broken[0], ledger, shared), False
            try:
                outcome = run_step(step, session=shared.session, run_id=shared.run_id, facts=shared.facts,
                                   placed=placed, ledger=ledger, reuse=shared.reuse, outages=shared.outages)
            except (Interrupted, KeyboardInterrupt):
                raise
            except Exception as exc:  # the host's executor broke: its other steps are error
                broken.append(f"{type(exc).__name__}: {exc}")
                return _record_error(step, name, executor.host, broken[0], ledger, shared), False
        shared.finished(outcome)
        return outcome, outcome.verdict is Verdict.PASS

    done = run_side_by_side(steps, place=lambda step: executor, run=run, running=lambda: [executor])
    return [HostResult(host=name, outcomes=tuple(done), broken=broken[0] if broken else None)]  # type: ignore[arg-type]


def _record_error(step: PlannedStep, name: str, host: Host, why: str, ledger: Ledger,
                  shared: _Shared) -> StepOutcome:
    reason = f"host {name} broke during this lane: {why}"
    rec = StepRecorder(ledger, run_id=shared.run_id, session=shared.session, facts=shared.facts)
    outcome = rec.decided(step, verdict=Verdict.ERROR, reason=reason, host=host, name=name)
    shared.finished(outcome)
    return outcome


def render_hosts(result: FleetResult, out: TextIO = sys.stdout) -> None:
    """One line per host: its verdict counts, and why its worker broke."""
    for name, r in result.hosts.items():
        counts = ", ".join(f"{n} {v.value}" for v in Verdict if (n := sum(o.verdict is v for o in r.outcomes)))
        print(f"host {name}: {counts or 'nothing ran'}{'  (broke: ' + r.broken + ')' if r.broken else ''}",
              file=out)


def run_fleet_plan(ws: Workspace, steps: Sequence[PlannedStep], *, session: str, argv: Sequence[str],
                   pool: HostPool, reuse: bool = False, workers: int = DEFAULT_WORKERS,
                   alone: Sequence[PlannedStep] = (), out: TextIO = sys.stdout,
                   options: RunOptions | None = None) -> RunSummary:
    """:func:`relgate.run.flow.run_plan` over the fleet: one ledger run, the per-host lines, the table;
    the reports ``options`` asks for say "running" until :func:`relgate.run.flow.finish` replaces them."""
    facts = candidate_facts(ws)
    check_placement(ws, [*steps, *alone])
    with LedgerRun(ws, session=session, argv=argv, facts=facts, pool=pool, out=out, options=options) as run:
        result = run_fleet(steps, session=session, run_id=run.run_id, facts=facts, pool=pool, ledger=run.ledger,
                           reporter=ConsoleReporter(out, progress=0), reuse=reuse, workers=workers, alone=alone)
        run.record(result.outcomes([*steps, *alone]))
    render_hosts(result, out)
    return run.summary
