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

Every role's output is kept in the step's log, each line prefixed ``ROLE@HOST |``. A role
is stopped through its own host's executor: its command writes its pid to a file first, and
the stop command ends that process group (SIGTERM, then SIGKILL after a grace).
"""

from __future__ import annotations

import re
import shlex
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from relgate.core.errors import ExecutionError
from relgate.core.record import record
from relgate.manifest.lanes import MultiHostSpec, RoleSpec
from relgate.run.executor import CommandRequest, CommandResult, Executor
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep, StepFailed, StepNotRun
from relgate.run.runner import HostPool

__all__ = ["plan_multihost", "run_roles", "role_address"]

_POLL = 0.2
_STOP_GRACE = 5


def role_address(host: Host) -> str:
    """The address other roles reach ``host`` at: its SSH address, or loopback for this machine."""
    return host.spec.address or "127.0.0.1"


def plan_multihost(spec: MultiHostSpec, pool: HostPool, *, cwd: Path) -> PlannedStep:
    """The step that runs ``spec``'s roles (in-process; its log holds every role's output)."""
    roles = ", ".join(f"{r.name}×{r.count}" if r.count > 1 else r.name for r in spec.roles)
    return PlannedStep(name=spec.name, commands=(), cwd=cwd, lane=spec.lane, target=spec.name,
                       action=lambda write: run_roles(spec, pool, cwd=cwd, write=write),
                       action_name=f"multihost {spec.name} ({roles})")


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
                 ready: re.Pattern[str] | None, event: threading.Event) -> None:
        self.path = None
        self._label, self._write, self._lock = label, write, lock
        self._ready, self._event = ready, event
        self._partial = ""

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

    def _emit(self, lines: Sequence[str]) -> None:
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
    sink = _Prefixed(r.label, write, lock, re.compile(r.role.ready_line) if r.role.ready_line else None, r.ready)
    request = CommandRequest(shell=_wrapped(r.role, r.pidfile), cwd=cwd, timeout=timeout,
                             env={**r.role.env, **env, "RELGATE_ROLE": r.role.name,
                                  "RELGATE_ROLE_INDEX": str(r.index), "RELGATE_ROLE_ADDRESS": r.address})

    def body() -> None:
        try:
            r.result = r.executor.run(request, sink)
        except Exception as exc:  # the host's executor broke: a host failure
            r.crashed = f"{r.label}: {type(exc).__name__}: {exc}"
        finally:
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


def run_roles(spec: MultiHostSpec, pool: HostPool, *, cwd: Path, write: Callable[[str], None]) -> int:
    """Run the roles of ``spec``; 0 when the leader passed and every worker ended cleanly.
    Raises :class:`StepNotRun` (hosts missing), :class:`StepFailed` (a role's code was wrong)
    or :class:`ExecutionError` (a role's host failed: the step is ``error``)."""
    placed = _place(spec, pool)
    token = uuid.uuid4().hex[:12]
    counters: dict[str, int] = {}
    roles: list[_Role] = []
    for role, executor in placed:
        index = counters.get(role.name, 0)
        counters[role.name] = index + 1
        pidfile = f"/tmp/relgate-role-{token}-{role.name}-{index}.pid"
        roles.append(_Role(role=role, index=index, executor=executor, pidfile=pidfile))
    workers, leader = roles[:-1], roles[-1]
    lock = threading.Lock()
    for r in roles:
        write(f"# relgate: {r.label} at {r.address}: {r.role.command.display()}")
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
