"""Run planned steps on a host: execute, judge, record.

Every step gets a ledger row before it starts (as an unfinished error), its complete
output streamed to a log on disk, a warning scan when it is a build, and a verdict.
A SIGTERM or Ctrl-C while a step runs kills the step's process group, records the step
as ``error`` and stops the run (:class:`~relgate.executor.Interrupted` propagates).

Steps run one after another, unless a host of the pool has GPU slots or is a job scheduler
(a Slurm cluster): then :mod:`relgate.run.slots` runs them side by side, each on a worker
thread with a ledger connection of its own, judged and recorded the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from relgate.core.errors import RelgateError
from relgate.core.patterns import Folded
from relgate.core.record import record
from relgate.core.redact import Redactor
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.store import Ledger
from relgate.run.allowlist import allow_rules_step
from relgate.run.capture import check_capture
from relgate.run.executor import (
    TAIL_LINES,
    CommandRequest,
    CommandResult,
    Executor,
    FileSink,
    Interrupted,
    LogWriteError,
)
from relgate.run.expect import OutputMatcher
from relgate.run.harness import HarnessScanner, exit_status_reason
from relgate.run.hosts import Host
from relgate.run.outage import RegistryOutages
from relgate.run.plan import PlannedStep, StepFailed, StepNotRun
from relgate.run.produces import (
    MARK_START,
    MARKER_PREFIX,
    missing_products,
    missing_since,
    products_since,
    wrote_nothing,
    wrote_since,
)
from relgate.run.recorder import StepOutcome, StepRecorder
from relgate.run.slots import run_side_by_side, side_by_side
from relgate.run.testcounts import CountScanner, judge_counts

if TYPE_CHECKING:  # the scanners are imported by the first step that scans a build
    from relgate.run.scanners import CompilerWarning, StreamScanner

__all__ = ["HostPool", "StepOutcome", "RunSummary", "Reporter", "run_steps", "run_step", "sigterm_interrupts"]

# Signals that mean "someone stopped this command", not "the code crashed".
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP}


class HostPool:
    """The hosts a run may use, and the executor of each host that can run commands."""

    def __init__(self, hosts: Sequence[Host], executors: Mapping[str, Executor]) -> None:
        self.hosts = list(hosts)
        self.executors = dict(executors)
        self._probed: set[str] = set()

    def probed(self, host: Host, requires: Sequence[str]) -> Host:
        """``host`` with its ``[[probe]]`` results, run once per run when a step first requires
        a capability one of them gates (relgate.run.probes)."""
        executor = self.executors.get(host.name)
        if host.name in self._probed or executor is None or not host.spec.probes:
            return executor.host if executor is not None and host.name in self._probed else host
        from relgate.run.probes import gated, probe_host

        if not gated(host, requires):
            return host
        self._probed.add(host.name)
        host = probe_host(executor)
        self._refresh_host(host)
        return host

    def _refresh_host(self, host: Host) -> None:
        self.hosts = [host if h.name == host.name else h for h in self.hosts]

    def place(self, step: PlannedStep) -> Executor | str:
        """The executor of the first host offering what ``step`` needs, or why there is none."""
        candidates = [h for h in self.hosts if step.host is None or h.name == step.host]
        if not candidates:
            return f"no host named {step.host}"
        candidates = [self.probed(h, step.requires) for h in candidates]
        offering = [h for h in candidates if not h.missing(step.requires)]
        for host in offering:
            if host.name in self.executors:
                return self.executors[host.name]
        if offering:
            names = ", ".join(h.name for h in offering)
            return f"only {names} offer {', '.join(step.requires)}, and no executor can reach {names} yet"
        from relgate.run.probes import probe_failures

        failed = probe_failures(candidates, step.requires)
        if failed is not None:
            return failed
        missing = min((h.missing(step.requires) for h in candidates), key=len)
        return f"no host offers {', '.join(missing)}"


@record(frozen=False)
class RunSummary:
    run_id: str
    session: str
    facts: GitFacts
    outcomes: list[StepOutcome] = field(default_factory=list)
    interrupted: str | None = None

    def ok(self, *, require_all: bool = False) -> bool:
        """No fail or error (and, with ``require_all``, nothing left not-run)."""
        if self.interrupted is not None:
            return False
        return not any(o.verdict.blocks or (require_all and o.verdict is Verdict.NOT_RUN) for o in self.outcomes)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for o in self.outcomes if o.verdict is verdict)


class Reporter(Protocol):
    def step_started(self, step: PlannedStep, host: str) -> None: ...

    def step_finished(self, outcome: StepOutcome) -> None: ...


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_steps(steps: Sequence[PlannedStep], *, session: str, run_id: str, facts: GitFacts,
              pool: HostPool, ledger: Ledger, reporter: Reporter, reuse: bool = False) -> RunSummary:
    """Run every step to the end (a red step does not stop the ones after it, except those
    that name it in ``needs``: they are not-run, "needs NAME, which did not pass").

    With ``reuse``, a step that already passed for this exact commit on a clean tree (same
    host and command) is not run again: a new row points at the earlier one. The run itself
    is begun and finished by :class:`relgate.run.ledger_run.LedgerRun`.
    """
    rec = StepRecorder(ledger, run_id=run_id, session=session, facts=facts)
    reuse = reuse and not facts.dirty
    summary = RunSummary(run_id=run_id, session=session, facts=facts)
    passed: set[str] = set()
    outages = RegistryOutages()  # one error per host, not one retry loop each (relgate.run.outage)
    with sigterm_interrupts():
        if steps and side_by_side(list(pool.executors.values())):  # GPU slots, or a job scheduler
            try:
                summary.outcomes.extend(_run_side_by_side(steps, rec=rec, pool=pool, reporter=reporter, reuse=reuse,
                                                           outages=outages))
            except (Interrupted, KeyboardInterrupt) as exc:
                summary.interrupted = _signame(exc)
                raise exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT) from None
            steps = ()
        for step in steps:
            blocked = next((name for name in step.needs if name not in passed), None)
            placed = f"needs {blocked}, which did not pass" if blocked is not None else pool.place(step)
            host_name = placed.host.name if not isinstance(placed, str) else "-"
            reporter.step_started(step, host_name)
            try:
                outcome = _run_guarded(step, placed=placed, rec=rec, reuse=reuse, outages=outages)
            except Interrupted as exc:
                summary.interrupted = signal.Signals(exc.signum).name
                raise
            summary.outcomes.append(outcome)
            if outcome.verdict is Verdict.PASS:
                passed.add(step.name)
            reporter.step_finished(outcome)
        audit = allow_rules_step(summary.outcomes, steps[0].cwd) if steps else None
        if audit is not None:
            reporter.step_started(audit, "-")
            outcome = _run_one(audit, placed=pool.place(audit), rec=rec, reuse=False)
            summary.outcomes.append(outcome)
            reporter.step_finished(outcome)
    return summary


def _run_guarded(step: PlannedStep, *, placed: Executor | str, rec: StepRecorder, reuse: bool,
                 outages: RegistryOutages | None) -> StepOutcome:
    """:func:`_run_one`, unless an earlier step of this run found cargo's registry unreachable on
    the host: then a cargo step is that same ``error`` at once, not run (relgate.run.outage)."""
    if outages is None or isinstance(placed, str) or step.skip:
        return _run_one(step, placed=placed, rec=rec, reuse=reuse)
    first = outages.known(step, placed.host)
    if first is not None:
        return outages.record(step, placed.host, first, rec)
    outcome = _run_one(step, placed=placed, rec=rec, reuse=reuse)
    outages.note(outcome, placed.host)
    return outcome


def _run_side_by_side(steps: Sequence[PlannedStep], *, rec: StepRecorder, pool: HostPool, reporter: Reporter,
                      reuse: bool, outages: RegistryOutages) -> list[StepOutcome]:
    """:func:`relgate.run.slots.run_side_by_side` over ``pool``: each step on a worker thread
    with a ledger connection of its own; the reporter called under a lock."""
    lock = threading.Lock()

    def run(step: PlannedStep, placed: Executor | str) -> tuple[StepOutcome, bool]:
        with lock:
            reporter.step_started(step, "-" if isinstance(placed, str) else placed.host.name)
        with rec.connection() as own:
            outcome = _run_guarded(step, placed=placed, rec=own, reuse=reuse, outages=outages)
        with lock:
            reporter.step_finished(outcome)
        return outcome, outcome.verdict is Verdict.PASS

    return run_side_by_side(steps, place=pool.place, run=run,  # type: ignore[return-value]
                            running=lambda: list(pool.executors.values()))


def run_step(step: PlannedStep, *, session: str, run_id: str, facts: GitFacts, placed: Executor | str,
             ledger: Ledger, reuse: bool = False, outages: RegistryOutages | None = None) -> StepOutcome:
    """One step on ``placed`` (an executor, or why there is none): run, judged, recorded.
    The unit the fleet (``relgate.remote.fleet``) runs on each host's worker; ``outages`` is
    shared by every worker of a run (a registry outage is one error per host)."""
    rec = StepRecorder(ledger, run_id=run_id, session=session, facts=facts)
    return _run_guarded(step, placed=placed, rec=rec, reuse=reuse and not facts.dirty, outages=outages)


def _run_one(step: PlannedStep, *, placed: Executor | str, rec: StepRecorder, reuse: bool) -> StepOutcome:
    """Execute ``step`` and judge it; every row, log and capture it leaves goes through ``rec``."""
    if step.skip or isinstance(placed, str):
        verdict, reason = (Verdict.SKIP, step.skip) if step.skip else (Verdict.NOT_RUN, str(placed))
        return rec.decided(step, verdict=verdict, reason=reason)

    bind = getattr(placed, "bind", None)  # a job scheduler asks for what this step requires (relgate.remote.slurm)
    executor = bind(step) if bind is not None else placed
    host = executor.host
    row = rec.row(step, host, digest=getattr(executor, "env_digest", None))
    if reuse and step.action is None:  # an in-process check is cheap and reads files no commit pins
        board = getattr(executor, "planned_board", None)  # a cluster: the board the step asks for, any node
        earlier = rec.reused(step, row, board=host.board if board is None else board(), any_node=board is not None)
        if earlier is not None:
            return earlier

    env: dict[str, str] = {}
    evidence_file = None
    try:
        if step.evidence_env:
            evidence_file = rec.evidence_path(step)
            env[step.evidence_env] = str(evidence_file)
        partial = rec.partial_log_path(step)
        fh = open(partial, "wb", buffering=0)
    except OSError as exc:  # an unwritable or full ledger home: nothing runs without its log
        what = "make the evidence file" if step.evidence_env and evidence_file is None else "write the log"
        return rec.decided(step, verdict=Verdict.ERROR, reason=f"cannot {what}: {exc.filename}: {exc.strerror or exc}",
                           row=row)
    step_id = rec.begin(row, partial)
    scanner = None
    if step.scan_warnings:
        from relgate.run.scanners import StreamScanner

        scanner = StreamScanner()
    matcher = OutputMatcher(step.expect_output) if step.expect_output is not None else None
    results: list[CommandResult] = []
    built_there: tuple[Verdict, str | None] = (Verdict.ERROR, "cannot tell what the build wrote")
    judged: tuple[Verdict, str] | None = None  # an action's own verdict (not-run, fail) and reason
    interrupted: BaseException | None = None
    with fh:
        started_ns = os.fstat(fh.fileno()).st_mtime_ns  # the step's start on the file system's clock
        log = FileSink(fh, partial, limit=step.max_log_bytes)
        harness = HarnessScanner()
        counter = CountScanner()
        sink = _Tee(log, scanner, matcher, harness, counter)
        try:
            log.write(f"# relgate {rec.session}/{step.name} on {host.name} at {rec.facts.commit}"
                      f"{' (dirty tree)' if rec.facts.dirty else ''}\n")
            if step.action is not None:
                log.write(f"$ {step.display()}  (in-process)\n")
                result, judged = _run_action(step, sink, host.name)
                results.append(result)
            marker = _mark_start(step, host, executor, log) if _built_elsewhere(step, host) else None
            for command in step.commands if not results or results[-1].ok else ():
                log.write(f"$ {command.display()}\n")
                request = CommandRequest(argv=command.argv, shell=command.shell, cwd=step.cwd,
                                         env={**step.env, **env}, timeout=step.timeout)
                result = executor.run(request, sink)
                results.append(result)
                if not result.ok:
                    break
            if _built_elsewhere(step, host) and results and results[-1].ok:
                built_there = _wrote_there(step, host, executor, log, marker, results)
            elif marker is not None:  # a red build: nothing to ask, the marker goes
                executor.run(CommandRequest(argv=("rm", "-f", marker), cwd=step.cwd, timeout=120), log)
        except LogWriteError:
            pass  # the step is an error below; nothing was started after the failed write
        except (Interrupted, KeyboardInterrupt) as exc:
            interrupted = exc
            try:
                log.note(f"\n# relgate: interrupted by {_signame(exc)}; the step was stopped\n")
            except LogWriteError:
                pass
        if log.dropped:
            try:
                log.note(f"# relgate: {log.dropped} bytes of output past max_log_bytes were not kept\n")
            except LogWriteError:
                pass
    step_done = getattr(executor, "step_done", None)  # a cluster: its checkout is free for the next job
    if step_done is not None:
        step_done()
    final, sha = rec.store_log(partial)
    duration = sum(r.duration for r in results)
    tail = results[-1].tail if results else ""
    if interrupted is not None:
        reason = f"interrupted by {_signame(interrupted)} while running"
        rec.finish(StepOutcome(step=step, step_id=step_id, host=host.name, verdict=Verdict.ERROR, reason=reason,
                               duration=duration, log_path=final, log_sha256=sha, tail=tail), complete=False)
        raise interrupted if isinstance(interrupted, Interrupted) else Interrupted(signal.SIGINT)

    found = scanner.finish() if scanner is not None else []
    denied, allowed = [], []
    if found:
        from relgate.run.scanners import partition

        denied, allowed = partition(found, step.allow)
    verdict, reason = (Verdict.ERROR, log.error) if log.error and not results else \
        _judge(step, results, denied, matcher)
    if verdict is Verdict.FAIL and step.action is None and results:
        verdict, reason = _harness_broke(results[-1], harness) or (verdict, reason)
    if judged is not None:
        verdict, reason = judged
    counts = counter.finish() if step.action is None and results else None
    if counts is not None and (verdict is Verdict.PASS or (verdict is Verdict.FAIL and not denied
                                                           and results[-1].exit_code == 5)):
        # a runner that executed nothing did not show anything (relgate.run.testcounts)
        verdict, reason = judge_counts(counts, command=results[-1].command, exit_code=results[-1].exit_code,
                                       max_skipped=step.max_skipped) or (verdict, reason)
    if verdict is Verdict.PASS and _built_elsewhere(step, host):
        verdict, reason = built_there
    elif verdict is Verdict.PASS and step.produces:
        verdict, reason = _judge_products(step, started_ns)
    elif verdict is Verdict.PASS and step.build:
        verdict, reason = _judge_built(step, results, started_ns, rec.home)
    if log.error is not None:  # a step whose log is incomplete is never judged on it
        verdict, reason = Verdict.ERROR, log.error
    if step.timing_only and verdict is Verdict.PASS:
        reason = "timing only: ran to the end, the numbers are kept, not judged"
    host_facts = _step_facts(host, results)
    if host_facts:  # before the evidence is stored: it carries the node's board
        rec.note_host(step_id, host_facts)
    strays = sum(len(r.strays) for r in results)
    if strays and verdict is Verdict.PASS:
        reason = f"{strays} process(es) outlived the command (left its process group) and were killed; see the log"
    verdict, reason, stored = _judge_evidence(step, evidence_file, verdict, reason, rec=rec, step_id=step_id)
    last = results[-1] if results else None
    return rec.finish(StepOutcome(step=step, step_id=step_id, host=host.name, verdict=verdict, reason=reason,
                                  duration=duration, log_path=final, warnings=tuple(denied),
                                  allowed=tuple((w, r.reason) for w, r in allowed), tail=tail, evidence=stored,
                                  scanned=scanner is not None and bool(results) and results[-1].ok,
                                  matched_rules=tuple(dict.fromkeys(r for _, r in allowed)), tests=counts,
                                  facts=host_facts, exit_code=last.exit_code if last else None, log_sha256=sha))


def _judge_evidence(step: PlannedStep, evidence_file: Path | None, verdict: Verdict, reason: str | None, *,
                    rec: StepRecorder, step_id: int) -> tuple[Verdict, str | None, Path | None]:
    """The step's capture checked and kept (where it came back and holds cells), and the
    verdict it leaves: a capture that is bad, empty or missing where one is required is an error."""
    stored = None
    if evidence_file is not None and evidence_file.exists() and evidence_file.stat().st_size > 0:
        try:
            # a test may write $TOKEN there, or a cell keyed api_token; a bad row is not evidence
            capture = check_capture(evidence_file, Redactor.from_env(os.environ, step.env),
                                    shown=f"${step.evidence_env} ({evidence_file})")
            if capture.error is not None:  # not stored; a step that failed anyway says it too
                verdict, reason = (Verdict.ERROR, capture.error) if verdict is Verdict.PASS else \
                    (verdict, f"{reason}; {capture.error}" if reason else capture.error)
            elif capture.cells:
                stored = rec.store_evidence(evidence_file, step_id)
            elif step.evidence_required and verdict is Verdict.PASS:
                verdict, reason = Verdict.ERROR, (f"no evidence: ${step.evidence_env} holds no cell, only comments "
                                                  "or blank lines (expected suite<TAB>arm<TAB>key<TAB>value rows)")
        except OSError as exc:
            verdict, reason = Verdict.ERROR, f"cannot store the evidence: {exc.filename}: {exc.strerror or exc}"
    elif step.evidence_required and verdict is Verdict.PASS:
        verdict = Verdict.ERROR
        reason = (f"expected evidence in ${step.evidence_env}, none came back "
                  f"({'empty file' if evidence_file is not None and evidence_file.exists() else 'no file'})")
    return verdict, reason, stored


def _step_facts(host: Host, results: Sequence[CommandResult]) -> dict[str, object]:
    """Where the step really ran (its commands' facts, the last one's winning) and this run's
    probes of its host (name → passed and output)."""
    out: dict[str, object] = {}
    for r in results:
        out.update(r.facts)
    if host.facts.probes:
        out["probes"] = {p.name: {"passed": p.passed, "output": p.output, "why": p.why} for p in host.facts.probes}
    return out


def _run_action(step: PlannedStep, sink: _Tee, host: str) -> tuple[CommandResult, tuple[Verdict, str] | None]:
    """An engine check run in this process (no interpreter start), recorded like a command;
    the second item is the action's own verdict and reason: not-run (:class:`StepNotRun`: it
    could not check anything) or fail (:class:`StepFailed`: it found the code wrong), if so."""
    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    tail: list[str] = []

    def write(line: str) -> None:
        sink.write(line + "\n")
        tail.append(line + "\n")

    assert step.action is not None
    judged = None
    try:
        code, error = step.action(write), None
    except StepNotRun as exc:
        code, error, judged = None, None, (Verdict.NOT_RUN, str(exc))
        write(f"not run: {exc}")
    except StepFailed as exc:
        code, error, judged = 1, None, (Verdict.FAIL, str(exc))
        write(f"fail: {exc}")
    except RelgateError as exc:
        code, error = 2, "; ".join(exc.lines())
        write(error)
    return CommandResult(host=host, command=step.display(), cwd=str(step.cwd), env={}, exit_code=code,
                         signal=None, started=started, duration=time.monotonic() - t0, timed_out=False,
                         spawn_error=None if error is None else f"{step.display()}: {error}",
                         log_path=sink.path, tail="".join(tail[-TAIL_LINES:])), judged


def _judge(step: PlannedStep, results: list[CommandResult], warnings: list[CompilerWarning],
           matcher: OutputMatcher | None) -> tuple[Verdict, str | None]:
    last = results[-1]
    if last.spawn_error:
        return Verdict.ERROR, last.spawn_error
    if last.timed_out:
        return Verdict.FAIL, f"timed out after {step.timeout:g} s: {last.command}"
    if last.signal is not None:
        name = _signal_name(last.signal)
        if last.signal in _STOP_SIGNALS:
            return Verdict.ERROR, f"{last.command}: killed by {name} from outside relgate"
        return Verdict.FAIL, f"{last.command}: crashed with {name}"
    if last.exit_code != 0:
        more = f"; {_warning_summary(warnings)}" if warnings else ""
        if step.scan_warnings:  # a build: name the source it stopped at, if a compiler said
            from relgate.run.scanners import first_compiler_error

            error = first_compiler_error(last.tail or "")
            more += f"; first error {error}" if error else ""
        return Verdict.FAIL, f"{last.command}: exit {last.exit_code}{more}"
    if warnings:
        first = warnings[0]
        return Verdict.FAIL, f"{_warning_summary(warnings)}, first {first.location}: {first.message}"
    if matcher is not None and not matcher.finish():
        return Verdict.FAIL, f"output does not match /{step.expect_output}/"
    return Verdict.PASS, None


def _warning_summary(warnings: Sequence[CompilerWarning]) -> str:
    from relgate.run.scanners import warning_summary

    return warning_summary(warnings)


def _harness_broke(last: CommandResult, harness: HarnessScanner) -> tuple[Verdict, str] | None:
    """``error`` with the reason when a failed command's exit status or output shows that the
    harness broke (relgate.run.harness), not the code."""
    if last.ok or last.timed_out:
        return None
    by_status = exit_status_reason(last.exit_code)
    if by_status is not None:
        return Verdict.ERROR, f"{last.command}: {by_status}"
    known = harness.finish()
    if known is None:
        return None
    message, line = known
    return Verdict.ERROR, f"{message.reason} ({message.tool}: {line[:160]})"


def _judge_products(step: PlannedStep, started_ns: int) -> tuple[Verdict, str | None]:
    missing = missing_products(step.cwd, step.produces, since_ns=started_ns)
    return (Verdict.PASS, None) if missing is None else (Verdict.FAIL, missing)


def _judge_built(step: PlannedStep, results: list[CommandResult], started_ns: int,
                 home: Path) -> tuple[Verdict, str | None]:
    """A build step that declares no ``produces`` passes only if it wrote a file under its
    folder during the step (a default goal that prints help writes none)."""
    if wrote_nothing(step.cwd, since_ns=started_ns, exclude=(home,)):
        return _nothing_written(step, results, where=str(step.cwd))
    return Verdict.PASS, None


def _nothing_written(step: PlannedStep, results: list[CommandResult], *, where: str) -> tuple[Verdict, str | None]:
    """The verdict of a build that wrote no file under ``where``. A cargo build that finished is
    the exception: cargo's fingerprints vouch for units an earlier build wrote (a no-op rebuild
    writes nothing), and its target folder may lie outside the project."""
    if results and results[-1].command.startswith("cargo ") and "Finished" in results[-1].tail:
        return Verdict.PASS, ("cargo: nothing written under the project (every unit fresh, or a target "
                              "folder elsewhere); cargo checked its fingerprints")
    return Verdict.FAIL, (f"built nothing: no file under {where} was written during the step "
                          "(declare what it builds in produces)")


def _built_elsewhere(step: PlannedStep, host: Host) -> bool:
    """A build (or a step that declares its products) on another machine: asked there what it wrote."""
    return (step.build or bool(step.produces)) and step.action is None and host.spec.kind != "local"


def _mark_start(step: PlannedStep, host: Host, executor: Executor, log: FileSink) -> str | None:
    """The marker made in the build's folder on ``host`` before the build (None: it could not be made)."""
    log.write(f"# relgate: marks the build's start on {host.name}, to ask afterwards what it wrote there\n")
    log.write(f"$ {MARK_START}\n")
    done = executor.run(CommandRequest(shell=MARK_START, cwd=step.cwd, timeout=120), log)
    lines = done.tail.strip().splitlines()
    marker = lines[-1].strip() if done.ok and lines else ""
    return marker if marker.startswith("./" + MARKER_PREFIX) and "\n" not in marker else None


def _wrote_there(step: PlannedStep, host: Host, executor: Executor, log: FileSink, marker: str | None,
                 results: list[CommandResult]) -> tuple[Verdict, str | None]:
    """Whether the build wrote its products (or, declaring none, any file) under its folder on
    ``host``: asked there, after it, against the marker made before it."""
    if marker is None:
        return Verdict.ERROR, f"cannot tell what the build wrote on {host.name}: no start marker could be made " \
                              "in its folder there"
    probe = products_since(marker, step.produces) if step.produces else wrote_since(marker)
    if probe is None:
        return Verdict.ERROR, f"produces: cannot check a ** pattern on {host.name} (not this machine)"
    log.write(f"$ {probe}\n")
    done = executor.run(CommandRequest(shell=probe, cwd=step.cwd, timeout=600), log)
    if not done.ok:
        return Verdict.ERROR, f"cannot tell what the build wrote on {host.name}: {probe} exited {done.exit_code}"
    if step.produces:
        missing = missing_since(done.tail, step.produces)
        return (Verdict.PASS, None) if missing is None else (Verdict.FAIL, missing)
    if done.tail.strip():
        return Verdict.PASS, None
    return _nothing_written(step, results, where=f"{host.name}:{step.cwd}")


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _signame(exc: BaseException) -> str:
    return _signal_name(exc.signum) if isinstance(exc, Interrupted) else "SIGINT"


class _Tee:
    """Log sink that also feeds the warning scanner and the ``expect_output`` matcher
    (they see the output even when the log cannot keep it)."""

    def __init__(self, log: FileSink, scanner: StreamScanner | None, matcher: OutputMatcher | None,
                 harness: HarnessScanner, counter: CountScanner) -> None:
        self._log, self._scanner, self._matcher, self._harness = log, scanner, matcher, harness
        self._counter = counter
        self.path = log.path

    def write(self, text: str) -> None:
        folded = Folded(text)  # lower-cased at most once, for both scanners' cheap tests
        if self._scanner is not None:
            self._scanner.feed(text, folded)
        if self._matcher is not None:
            self._matcher.feed(text)
        self._harness.feed(text, folded)
        self._counter.feed(text)
        self._log.write(text)
