"""Multi-host steps: roles across hosts (tensor-parallel workers on some boxes, a leader on another).

A ``[multihost.NAME]`` step becomes one planned step whose in-process action places every
role on its own host(s) and runs them through the hosts' executors (local or SSH alike):

1. the workers start first, each on a distinct host offering what its role requires, and
   must report ready: a line matching ``ready_line`` in their output, or ``ready_port``
   opening on the worker's address;
2. the leader starts with the workers' addresses in its environment (``RELGATE_WORKERS``:
   ``address[:port]`` comma-separated; ``RELGATE_ROLE_<ROLE>``: the same per role);
3. the leader's exit decides the verdict; the workers must then end on their own, exit 0,
   within ``worker_grace`` seconds (else they are stopped, and the step fails);
4. if any role's host fails (the command could not start there, the connection was lost),
   every role is stopped and the step is ``error``.

Every role's output is kept in the step's log, each line prefixed ``ROLE@HOST |``, and in a
log of its own: each role instance gets a ledger row of its own (``STEP/ROLE@HOST``: its host,
board, driver, toolkit, log and verdict; :func:`record_roles`) beside the step's row, which
carries the leader's verdict. A role is stopped through its own host's executor: its command
writes its pid to a file first, and the stop command ends that process group (SIGTERM, then
SIGKILL after a grace).
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from relgate.core.errors import ExecutionError
from relgate.core.record import record
from relgate.core.redact import redact_env
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.store import Ledger
from relgate.manifest.lanes import MultiHostSpec, RoleSpec
from relgate.run.executor import CommandRequest, CommandResult, Executor, Interrupted
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep, StepFailed, StepNotRun
from relgate.run.runner import HostPool

__all__ = ["plan_multihost", "run_roles", "role_address", "RoleRecord", "RolesAction", "record_roles"]

_POLL = 0.2
_STOP_GRACE = 5


def role_address(host: Host) -> str:
    """The address other roles reach ``host`` at: its SSH address, or loopback for this machine."""
    return host.spec.address or "127.0.0.1"


@record
class RoleRecord:
    """What one role instance did: where, its verdict and why, its own log (a file to store)."""

    label: str  # ROLE@HOST
    role: str
    host: Host
    command: str
    verdict: Verdict
    reason: str | None
    exit_code: int | None
    duration: float
    log: Path | None  # the role's own output (unprefixed); moved into the ledger by record_roles


class RolesAction:
    """The in-process action of a multi-host step: runs the roles, and keeps one
    :class:`RoleRecord` per role instance of its last run (:attr:`records`), whatever the end."""

    def __init__(self, spec: MultiHostSpec, pool: HostPool, cwd: Path) -> None:
        self.spec, self.pool, self.cwd = spec, pool, cwd
        self.records: list[RoleRecord] = []
        self._logs: Path | None = None

    def __call__(self, write: Callable[[str], None]) -> int:
        self.discard()
        self._logs = Path(tempfile.mkdtemp(prefix="relgate-roles-"))
        return run_roles(self.spec, self.pool, cwd=self.cwd, write=write, records=self.records, logs=self._logs)

    def discard(self) -> None:
        """Forget the last run's records and remove their log files (once stored)."""
        self.records = []
        if self._logs is not None:
            shutil.rmtree(self._logs, ignore_errors=True)
            self._logs = None


def plan_multihost(spec: MultiHostSpec, pool: HostPool, *, cwd: Path) -> PlannedStep:
    """The step that runs ``spec``'s roles (in-process; its log holds every role's output, and
    each role's own row is recorded by :func:`record_roles` after it)."""
    roles = ", ".join(f"{r.name}×{r.count}" if r.count > 1 else r.name for r in spec.roles)
    return PlannedStep(name=spec.name, commands=(), cwd=cwd, lane=spec.lane, target=spec.name,
                       action=RolesAction(spec, pool, cwd), action_name=f"multihost {spec.name} ({roles})")


def record_roles(step: PlannedStep, *, ledger: Ledger, session: str, run_id: str, facts: GitFacts) -> list[int]:
    """One ledger row per role instance of ``step``'s last run (``STEP/ROLE@HOST``, with its
    host's board, driver and toolkit, its own log); their ids. Nothing for any other step."""
    action = step.action
    if not isinstance(action, RolesAction):
        return []
    ids = []
    try:
        for r in action.records:
            row = dict(run_id=run_id, session=session, step=f"{step.name}/{r.label}", lane=step.lane,
                       target=step.target, host=r.host.name, board=r.host.board, driver=r.host.facts.driver,
                       toolkit=r.host.facts.toolkit, commit=facts.commit, dirty=facts.dirty, command=r.command,
                       cwd=str(step.cwd), env=redact_env(dict(step.env)))
            final = sha = None
            if r.log is not None and r.log.exists():
                partial = ledger.partial_log_path(facts.commit, run_id, f"{step.name}-{r.label}")
                shutil.move(str(r.log), partial)
                final, sha = ledger.store_log(partial, facts.commit)
            step_id = ledger.begin_step(log_path=final, **row)
            ledger.finish_step(step_id, verdict=r.verdict, reason=r.reason, exit_code=r.exit_code,
                               duration=r.duration, log_path=final, log_sha256=sha)
            ids.append(step_id)
    finally:
        action.discard()
    return ids


@record(frozen=False)
class _Role:
    """One running instance of a role on one host."""

    role: RoleSpec
    index: int
    executor: Executor
    pidfile: str
    thread: threading.Thread | None = None
    result: CommandResult | None = None
    crashed: str | None = None  # the executor raised instead of returning a record
    ready: threading.Event | None = None
    stopped: bool = False
    log: Path | None = None  # this role's own output
    lingered: bool = False  # still running after the leader and the worker grace
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def host(self) -> Host:
        return self.executor.host

    @property
    def label(self) -> str:
        return f"{self.role.name}@{self.host.name}"

    @property
    def address(self) -> str:
        port = self.role.port
        return f"{role_address(self.host)}:{port}" if port else role_address(self.host)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def host_failure(self) -> str | None:
        """Why this role's host failed (not its code), once it ended; else None."""
        if self.crashed is not None:
            return self.crashed
        if self.result is not None and self.result.spawn_error is not None:
            return self.result.spawn_error
        return None


class _Prefixed:
    """A log sink for one role: whole lines into the step log, ``ROLE@HOST | …``; it also
    watches for the role's ready line."""

    def __init__(self, label: str, write: Callable[[str], None], lock: threading.Lock,
                 ready: re.Pattern[str] | None, event: threading.Event, own: IO[str] | None = None) -> None:
        self.path = None
        self._label, self._write, self._lock = label, write, lock
        self._ready, self._event = ready, event
        self._partial = ""
        self._own = own  # the role's own log, unprefixed

    def write(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if len(self._partial) > 65536:  # a line that never ends: keep it in pieces
            lines.append(self._partial)
            self._partial = ""
        self._emit(lines)

    def close(self) -> None:
        if self._partial:
            self._emit([self._partial])
            self._partial = ""
        if self._own is not None:
            self._own.close()

    def _emit(self, lines: Sequence[str]) -> None:
        if self._own is not None:
            self._own.write("".join(line + "\n" for line in lines))
        with self._lock:
            for line in lines:
                self._write(f"{self._label} | {line}")
        if self._ready is not None and not self._event.is_set():
            if any(self._ready.search(line) for line in lines):
                self._event.set()


class _Quiet:
    path = None

    def write(self, text: str) -> None:
        pass


def _place(spec: MultiHostSpec, pool: HostPool) -> list[tuple[RoleSpec, Executor]]:
    used: set[str] = set()
    placed = []
    for role in spec.roles:
        offering = [h for h in pool.hosts if h.name in pool.executors and h.name not in used
                    and not h.missing(role.requires) and (not role.hosts or h.name in role.hosts)]
        if len(offering) < role.count:
            what = f" offering {', '.join(role.requires)}" if role.requires else ""
            among = f" among {', '.join(role.hosts)}" if role.hosts else ""
            free = ", ".join(h.name for h in offering) or "none"
            raise StepNotRun(f"role {role.name} needs {role.count} host(s){what}{among} besides the other "
                             f"roles' (free: {free})")
        for host in offering[:role.count]:
            used.add(host.name)
            placed.append((role, pool.executors[host.name]))
    return placed


def _wrapped(role: RoleSpec, pidfile: str) -> str:
    """The role's command in a shell that first writes its pid (its process group's leader)."""
    inner = role.command.shell if role.command.shell is not None else shlex.join(role.command.argv or ())
    if role.command.shell is not None:
        inner = f"/bin/sh -c {shlex.quote(inner)}"
    return f"echo $$ > {shlex.quote(pidfile)}; {inner}; status=$?; rm -f {shlex.quote(pidfile)}; exit $status"


def _stop_script(pidfile: str) -> str:
    f = shlex.quote(pidfile)
    return (f"p=$(cat {f} 2>/dev/null) || exit 0; "
            "g=$(ps -o pgid= -p \"$p\" 2>/dev/null | tr -d ' '); "
            "if [ -n \"$g\" ]; then kill -TERM -\"$g\" 2>/dev/null; else kill -TERM \"$p\" 2>/dev/null; fi; "
            f"i=0; while kill -0 \"$p\" 2>/dev/null && [ $i -lt {_STOP_GRACE * 10} ]; do sleep 0.1; i=$((i+1)); done; "
            "if [ -n \"$g\" ]; then kill -KILL -\"$g\" 2>/dev/null; fi; kill -KILL \"$p\" 2>/dev/null; "
            f"rm -f {f}; exit 0")


def _start(r: _Role, *, cwd: Path, env: dict[str, str], timeout: float | None,
           write: Callable[[str], None], lock: threading.Lock) -> None:
    r.ready = threading.Event()
    own = open(r.log, "w", encoding="utf-8") if r.log is not None else None
    if own is not None:
        own.write(f"# relgate: {r.label} at {r.address}: {r.role.command.display()}\n")
    sink = _Prefixed(r.label, write, lock, re.compile(r.role.ready_line) if r.role.ready_line else None, r.ready,
                     own)
    request = CommandRequest(shell=_wrapped(r.role, r.pidfile), cwd=cwd, timeout=timeout,
                             env={**r.role.env, **env, "RELGATE_ROLE": r.role.name,
                                  "RELGATE_ROLE_INDEX": str(r.index), "RELGATE_ROLE_ADDRESS": r.address})

    def body() -> None:
        r.started_at = time.monotonic()
        try:
            r.result = r.executor.run(request, sink)
        except Exception as exc:  # the host's executor broke: a host failure
            r.crashed = f"{r.label}: {type(exc).__name__}: {exc}"
        finally:
            r.ended_at = time.monotonic()
            sink.close()

    r.thread = threading.Thread(target=body, name=f"relgate-role-{r.label}", daemon=True)
    r.thread.start()


def _stop(roles: Sequence[_Role], cwd: Path, write: Callable[[str], None], lock: threading.Lock) -> None:
    """Stop every role still running, each through its own host's executor, all at once."""
    live = [r for r in roles if r.running]
    for r in live:
        r.stopped = True
        with lock:
            write(f"# relgate: stopping {r.label}")

    def stop_one(r: _Role) -> None:
        try:
            r.executor.run(CommandRequest(shell=_stop_script(r.pidfile), cwd=cwd, timeout=_STOP_GRACE + 20), _Quiet())
        except Exception:  # noqa: BLE001 - the host is gone; losing the connection ends its processes
            pass

    stoppers = [threading.Thread(target=stop_one, args=(r,), daemon=True) for r in live]
    for t in stoppers:
        t.start()
    for t in stoppers:
        t.join(_STOP_GRACE + 30)
    for r in live:
        assert r.thread is not None
        r.thread.join(_STOP_GRACE + 30)


def _port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


def _outcome(r: _Role) -> str:
    res = r.result
    if res is None:
        return "did not finish"
    if res.timed_out:
        return "timed out"
    if res.signal is not None:
        return f"killed by signal {res.signal}"
    return f"exit {res.exit_code}"


def run_roles(spec: MultiHostSpec, pool: HostPool, *, cwd: Path, write: Callable[[str], None],
              records: list[RoleRecord] | None = None, logs: Path | None = None) -> int:
    """Run the roles of ``spec``; 0 when the leader passed and every worker ended cleanly.
    Raises :class:`StepNotRun` (hosts missing), :class:`StepFailed` (a role's code was wrong)
    or :class:`ExecutionError` (a role's host failed: the step is ``error``). ``records``
    receives one :class:`RoleRecord` per role instance, however the step ends (each role's
    own log in ``logs``)."""
    placed = _place(spec, pool)
    token = uuid.uuid4().hex[:12]
    counters: dict[str, int] = {}
    roles: list[_Role] = []
    for role, executor in placed:
        index = counters.get(role.name, 0)
        counters[role.name] = index + 1
        pidfile = f"/tmp/relgate-role-{token}-{role.name}-{index}.pid"
        roles.append(_Role(role=role, index=index, executor=executor, pidfile=pidfile,
                           log=logs / f"{role.name}-{index}.log" if logs is not None else None))
    lock = threading.Lock()
    for r in roles:
        write(f"# relgate: {r.label} at {r.address}: {r.role.command.display()}")
    try:
        code = _run_placed(spec, roles, cwd=cwd, write=write, lock=lock)
    except BaseException as exc:
        if records is not None:
            records.extend(_records(roles, exc, spec.worker_grace))
        raise
    if records is not None:
        records.extend(_records(roles, None, spec.worker_grace))
    return code


def _records(roles: Sequence[_Role], exc: BaseException | None, grace: float) -> list[RoleRecord]:
    """Each role's verdict: its own end, or how the step's end (``exc``) reached it."""
    out = []
    for r in roles:
        result = r.result
        if r.thread is None:
            verdict = Verdict.NOT_RUN
            reason = f"never started: {_interrupt_reason(exc, 'before it started') or exc or 'the step ended first'}"
        elif (why := _interrupt_reason(exc, "while running")) is not None:
            verdict, reason = Verdict.ERROR, why
        elif (failure := r.host_failure()) is not None and not r.stopped:
            verdict, reason = Verdict.ERROR, failure
        elif r.lingered:
            verdict, reason = Verdict.FAIL, f"did not end within {grace:g} s after the leader (stopped)"
        elif not r.stopped:  # it ended on its own
            verdict, reason = (Verdict.PASS, None) if _outcome(r) == "exit 0" else (Verdict.FAIL, _outcome(r))
        elif isinstance(exc, StepFailed) and str(exc).startswith(f"{r.label} "):  # stopped for its own fault
            verdict, reason = Verdict.FAIL, str(exc)
        else:
            verdict, reason = Verdict.ERROR, f"stopped: {exc or 'the step ended'}"
        duration = (r.ended_at or time.monotonic()) - r.started_at if r.started_at is not None else 0.0
        out.append(RoleRecord(label=r.label, role=r.role.name, host=r.host, command=r.role.command.display(),
                              verdict=verdict, reason=reason, exit_code=result.exit_code if result else None,
                              duration=duration, log=r.log if r.log is not None and r.log.exists() else None))
    return out


def _interrupt_reason(exc: BaseException | None, when: str) -> str | None:
    if isinstance(exc, Interrupted):
        return f"interrupted by {signal.Signals(exc.signum).name} {when}"
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted by SIGINT {when}"
    return None


def _run_placed(spec: MultiHostSpec, roles: list[_Role], *, cwd: Path, write: Callable[[str], None],
                lock: threading.Lock) -> int:
    workers, leader = roles[:-1], roles[-1]
    try:
        for r in workers:
            _start(r, cwd=cwd, env={}, timeout=None, write=write, lock=lock)
        _await_ready(workers, write, lock)
        env = {"RELGATE_WORKERS": ",".join(r.address for r in workers)}
        for name in dict.fromkeys(r.role.name for r in workers):
            env[f"RELGATE_ROLE_{re.sub(r'[^A-Za-z0-9]', '_', name).upper()}"] = ",".join(
                r.address for r in workers if r.role.name == name)
        with lock:
            write(f"# relgate: every worker is ready; starting {leader.label} with RELGATE_WORKERS={env['RELGATE_WORKERS']}")
        _start(leader, cwd=cwd, env=env, timeout=spec.timeout, write=write, lock=lock)
        while leader.running:
            _raise_on_host_failure(workers)
            time.sleep(_POLL)
        _raise_on_host_failure([leader])
        deadline = time.monotonic() + spec.worker_grace
        while any(r.running for r in workers) and time.monotonic() < deadline:
            _raise_on_host_failure(workers)
            time.sleep(_POLL)
        lingering = [r for r in workers if r.running]
        for r in lingering:
            r.lingered = True
        _stop(lingering, cwd, write, lock)
        _raise_on_host_failure(workers)
    except BaseException:
        _stop(roles, cwd, write, lock)
        raise
    problems = []
    if _outcome(leader) != "exit 0":
        problems.append(f"{leader.label} {_outcome(leader)}")
    problems += [f"{r.label} did not end within {spec.worker_grace:g} s after the leader (stopped)"
                 for r in lingering]
    problems += [f"{r.label} {_outcome(r)}" for r in workers if r not in lingering and _outcome(r) != "exit 0"]
    for r in roles:
        write(f"# relgate: {r.label}: {'stopped' if r in lingering else _outcome(r)}")
    if problems:
        raise StepFailed("; ".join(problems))
    return 0


def _raise_on_host_failure(roles: Sequence[_Role]) -> None:
    for r in roles:
        if not r.running and (why := r.host_failure()) is not None:
            raise ExecutionError(f"host {r.host.name} failed ({r.label}): {why}; every role was stopped")


def _await_ready(workers: Sequence[_Role], write: Callable[[str], None], lock: threading.Lock) -> None:
    """Until every worker reported ready; a worker that ended or timed out first fails the step."""
    started = time.monotonic()
    waiting = list(workers)
    while waiting:
        for r in list(waiting):
            assert r.ready is not None
            port = r.role.ready_port
            if r.ready.is_set() or (port is not None and _port_open(role_address(r.host), port)):
                waiting.remove(r)
                with lock:
                    write(f"# relgate: {r.label} ready after {time.monotonic() - started:.1f} s")
                continue
            if not r.running:
                _raise_on_host_failure([r])
                raise StepFailed(f"{r.label} ended ({_outcome(r)}) before it reported ready")
            if time.monotonic() - started > r.role.ready_timeout:
                how = f"port {port} did not open" if port is not None else f"no line matched /{r.role.ready_line}/"
                raise StepFailed(f"{r.label} did not report ready within {r.role.ready_timeout:g} s ({how})")
        if waiting:
            time.sleep(_POLL)
