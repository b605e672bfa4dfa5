"""The host pool: every declared host with its executor, local or SSH.

SSH hosts connect and detect their facts when placement first needs them (a local-only
session never dials the GPU boxes), all at once in parallel when the whole fleet is asked
for (``pool.hosts``). A host with ``permission = "…"`` takes part only when the run names
it (``--allow-host NAME``). Before the first command on an SSH host the pool's executor takes
the host's lock (exclusive hosts, for the whole lane, with the GPU preflight), delivers the
candidate commit and verifies the remote HEAD; every command then runs in that checkout, and
the evidence file it wrote is fetched back into the local ledger's file for the step.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.schema import did_you_mean
from relgate.manifest.workspace import Workspace
from relgate.remote.errors import SshError
from relgate.run.executor import CommandRequest, CommandResult, Executor, LocalExecutor, LogSink, refused
from relgate.run.facts import host_key
from relgate.run.flow import candidate_facts
from relgate.run.hosts import Host, HostFacts, detect_local
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool

if TYPE_CHECKING:
    from relgate.remote.delivery import Delivery
    from relgate.remote.locks import HostLock

# The SSH side (paramiko, Fabric) is imported by the first SSH host's executor: a run on
# local hosts only never pays for it.

__all__ = ["host_pool", "RemotePool", "RemoteExecutor", "RunContext"]

_DEFAULT_WORKDIR = "~/.relgate-work"


class RunContext:
    """What every remote executor of one pool shares: the candidate and who is asking."""

    def __init__(self, ws: Workspace) -> None:
        facts = candidate_facts(ws)
        self.commit = facts.commit
        self.dirty = facts.dirty
        self.toplevel_dir = facts.toplevel
        self.memo = ws.memo
        self.project = ws.project.name
        self.root = ws.project.root
        self.evidence_env = ws.project.evidence_env
        import getpass  # a run with SSH hosts only (getpass imports termios)

        self.token = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}-{os.urandom(3).hex()}"
        self.owner = f"{getpass.getuser()}@{socket.gethostname()}"

    def toplevel(self) -> tuple[Path, str]:
        """The local git repository holding the project, and the project's folder inside it."""
        top = Path(self.toplevel_dir).resolve()
        try:
            return top, self.root.resolve().relative_to(top).as_posix()
        except ValueError:
            raise SshError(f"{self.root} is not inside its git repository {top}: nothing can be delivered") from None

    def candidate(self) -> Side:
        repo, subdir = self.toplevel()
        return Side(repo=repo, subdir=subdir, commit=self.commit, dirty=self.dirty, root=self.root.resolve())

    def side_of(self, cwd: Path) -> Side:
        """The tree a command's ``cwd`` belongs to: the candidate's, or another worktree of the same
        repository (``nox -s compare --previous REF`` builds REF in one); anything else has no
        place on a remote host."""
        cwd = cwd.resolve()
        if cwd == self.root.resolve() or self.root.resolve() in cwd.parents:
            return self.candidate()
        repo, subdir = self.toplevel()
        done = _git(cwd, "rev-parse", "--show-toplevel", "--git-common-dir", "HEAD")
        lines = done.stdout.splitlines()
        if done.returncode != 0 or len(lines) != 3:
            raise SshError(f"{cwd} is outside the project and no worktree of its repository")
        top, common, commit = Path(lines[0]).resolve(), (cwd / lines[1]).resolve(), lines[2]
        own = _git(repo, "rev-parse", "--git-common-dir").stdout.strip()
        root = top / subdir if subdir != "." else top
        if common != (repo / own).resolve() or not (cwd == root or root in cwd.parents):
            raise SshError(f"{cwd} is outside the project and no worktree of its repository")
        dirty = bool(_git(top, "status", "--porcelain", "--untracked-files=no").stdout.strip())
        if dirty:
            raise SshError(f"the worktree {top} has local changes: the host would run its commit "
                           f"{commit[:12]}, not what is there; commit or reset them")
        return Side(repo=top, subdir=subdir, commit=commit, dirty=False, root=root)


@record
class Side:
    """One tree whose commit a remote host checks out: the candidate, or a worktree at REF."""

    repo: Path  # the local repository (or worktree) the bundle is made from
    subdir: str  # the project's folder inside it ("." for the top)
    commit: str
    dirty: bool
    root: Path  # the project's folder in this tree, resolved


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)


class RemoteExecutor:
    """An SSH host as the runner sees it: prepared once (lock, preflight, delivery), then each
    command in the candidate's checkout, evidence fetched back after it."""

    def __init__(self, host: Host, ctx: RunContext) -> None:
        self.host = host
        from relgate.remote.ssh import SshExecutor

        self.ssh = SshExecutor(host)
        self._ctx = ctx
        self._detected = False
        self._failed: str | None = None
        self._prepared = False
        self._deliveries: dict[str, Delivery] = {}  # commit → its verified checkout on the host
        self._lock: HostLock | None = None
        self._workdir: str | None = None
        self._folders: set[str] = set()  # remote folders made in this run (the evidence folder)
        self._guard = threading.Lock()

    @property
    def reachable(self) -> bool:
        """Connected and detected (probes run there only then)."""
        return self._detected and self._failed is None

    def detect(self) -> Host:
        """Connect and detect the host's facts (declared ones when it cannot be reached)."""
        with self._guard:
            if not self._detected:
                from relgate.remote.facts import detect_remote

                self._detected = True
                try:  # once per invocation, like the local host's (a failure is not remembered)
                    facts = self._ctx.memo.get(("ssh-host", self.host.name), lambda: detect_remote(self.ssh))
                    self.host = replace(self.host, facts=facts)
                    self.ssh.host = self.host
                except SshError as exc:
                    self._failed = str(exc)
            return self.host

    def _prepare(self, sink: LogSink, side: Side) -> str | Delivery:
        """The host locked (once) and ``side``'s commit checked out and verified (once per commit);
        the delivery, or why the host cannot run anything."""
        with self._guard:
            if self._failed is not None:
                return self._failed
            if side.commit in self._deliveries:
                return self._deliveries[side.commit]
            from relgate.remote.delivery import deliver
            from relgate.remote.locks import acquire, gpu_preflight

            say = lambda line: sink.write(f"# relgate: {line}\n")  # noqa: E731
            try:
                workdir = self._remote_workdir()
                if self.host.spec.exclusive and not self._prepared:
                    self._lock = acquire(self.ssh, workdir=workdir, owner=self._ctx.owner, run_id=self._ctx.token,
                                         wait=self.host.spec.lock_wait, say=say)
                    say(f"{self.host.name}: locked for this lane ({self._lock.describe()})")
                    gpu_preflight(self.ssh, say=say)
                self._prepared = True
                d = deliver(self.ssh, repo=side.repo, commit=side.commit, workdir=workdir,
                            project=self._ctx.project, project_subdir=side.subdir)
            except SshError as exc:
                self._failed = str(exc)
                return self._failed
            self._deliveries[side.commit] = d
            how = ("checkout reused" if d.reused else "checked out") + (
                f", {'incremental' if d.incremental else 'full'} bundle of {d.bundle_bytes} bytes"
                + (f" over the exec channel ({self.ssh.no_sftp or 'transfer = exec'})" if d.channel == "exec" else "")
                if d.bundle_bytes else ", commit already there")
            say(f"{self.host.name}: HEAD of {d.checkout} verified = {d.commit} ({how})")
            if side.dirty:
                say("the local tree is dirty: the host runs the committed candidate only; the records say dirty")
            return d

    def _remote_workdir(self) -> str:
        if self._workdir is None:
            workdir = self.host.spec.workdir or _DEFAULT_WORKDIR
            if workdir.startswith("~"):
                code, home = self.ssh.capture("cd && pwd")
                if code != 0 or not home.strip().startswith("/"):
                    raise SshError(f"{self.host.name}: cannot find the home folder for workdir {workdir}")
                workdir = home.strip() + workdir[1:]
            self._workdir = workdir
        return self._workdir

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        started = datetime.now(timezone.utc)
        try:
            side = self._ctx.side_of(Path(request.cwd))
        except SshError as exc:
            return self._refused(request, sink, f"{exc}; it has no place on {self.host.name}", started)
        delivery = self._prepare(sink, side)
        if isinstance(delivery, str):
            return self._refused(request, sink, delivery, started)
        rel = Path(request.cwd).resolve().relative_to(side.root).as_posix()
        cwd = PurePosixPath(delivery.project_dir) / rel
        env = dict(request.env)
        local_evidence: Path | None = None
        remote_evidence = ""
        if self._ctx.evidence_env in env:
            from relgate.remote.delivery import remote_layout

            local_evidence = Path(env[self._ctx.evidence_env])
            base = remote_layout(self._remote_workdir(), self._ctx.project)
            remote_evidence = f"{base}/evidence/{self._ctx.token}/{local_evidence.name}"
            env[self._ctx.evidence_env] = remote_evidence
            folder = str(PurePosixPath(remote_evidence).parent)  # one per run and host: made once
            if folder not in self._folders:
                try:
                    self.ssh.capture(f"mkdir -p {shlex.quote(folder)}")
                except SshError as exc:
                    return self._refused(request, sink, str(exc), started)
                self._folders.add(folder)
        result = self.ssh.run(replace(request, cwd=cwd, env=env), sink)
        if local_evidence is None:
            return result
        try:
            got = self.ssh.get(remote_evidence, local_evidence)
        except SshError as exc:
            message = f"evidence not brought back from {self.host.name}:{remote_evidence}: {exc}"
            sink.write(f"# relgate: {message}\n")
            return result if result.spawn_error else replace(result, spawn_error=message)
        over = " over the exec channel" if got and (self.ssh.no_sftp or self.host.spec.transfer == "exec") else ""
        sink.write(f"# relgate: evidence {'fetched from' if got else 'not written at'} "
                   f"{self.host.name}:{remote_evidence}{over}\n")
        return result

    def _refused(self, request: CommandRequest, sink: LogSink, message: str, started: datetime) -> CommandResult:
        return refused(self.host.name, request, sink, message, started)

    def probe(self, command: str, timeout: float) -> tuple[int | None, str]:
        """A ``[[probe]]`` over this host's connection: exit status (None: it could not run) and output."""
        try:
            return self.ssh.capture(command, timeout=timeout)
        except SshError as exc:
            return None, str(exc)

    def interrupt(self, signum: int) -> None:
        """From another thread: stop the command running here (see :meth:`SshExecutor.interrupt`)."""
        self.ssh.interrupt(signum)

    def close(self) -> None:
        with self._guard:
            if self._lock is not None:
                from relgate.remote.locks import release

                try:
                    release(self.ssh, self._lock)
                except SshError:
                    pass  # the lock's pid dies with the connection: the next run sees it stale
                self._lock = None
            self.ssh.close()


class RemotePool(HostPool):
    """:class:`HostPool` with SSH hosts detected on demand and permission hosts held back."""

    def __init__(self, hosts: Sequence[Host], executors: dict[str, Executor], *, blocked: dict[str, str],
                 connect: bool = True) -> None:
        self._hosts: list[Host] = []
        super().__init__(hosts, executors)
        self.blocked = dict(blocked)
        self._connect = connect
        self._all_detected = not connect

    @property  # type: ignore[override]
    def hosts(self) -> list[Host]:
        """Every usable host with its facts (connects to every SSH host, in parallel, once)."""
        if not self._all_detected:
            self._all_detected = True
            remote = [e for e in self.executors.values() if isinstance(e, RemoteExecutor)]
            if remote:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(max_workers=min(16, len(remote))) as workers:
                    list(workers.map(RemoteExecutor.detect, remote))
            self._refresh()
        return [h for h in self._hosts if h.name not in self.blocked]

    @hosts.setter
    def hosts(self, value: list[Host]) -> None:
        self._hosts = list(value)

    def _refresh(self) -> None:
        self._hosts = [self.executors[h.name].host if h.name in self.executors else h for h in self._hosts]

    def _refresh_host(self, host: Host) -> None:
        self._refresh()

    def place(self, step: PlannedStep) -> Executor | str:
        if step.host is not None and step.host in self.blocked:
            return self.blocked[step.host]
        for host in self._hosts:
            if (step.host is not None and host.name != step.host) or host.name in self.blocked:
                continue
            executor = self.executors.get(host.name)
            if isinstance(executor, RemoteExecutor) and self._connect:
                host = executor.detect()
                self._refresh()
            if executor is not None and self._connect and not isinstance(executor, RemoteExecutor) or \
                    isinstance(executor, RemoteExecutor) and executor.reachable:
                host = self.probed(host, step.requires)
            if executor is not None and not host.missing(step.requires):
                return executor
        held = [h for h in self._hosts if h.name in self.blocked and (step.host is None or h.name == step.host)
                and not h.missing(step.requires)]
        placed = super().place(step)
        if isinstance(placed, str) and held:
            placed += "; " + "; ".join(self.blocked[h.name] for h in held)
        return placed

    def close(self) -> None:
        for executor in self.executors.values():
            close = getattr(executor, "close", None)  # SSH connections and locks; a cluster's queued jobs
            if close is not None:
                close()


def host_pool(ws: Workspace, *, allow_hosts: Sequence[str] = (), connect: bool = True) -> RemotePool:
    """Every declared host; local ones detect their facts and get a local executor, SSH ones a
    remote executor that connects when first needed (``connect=False``: never, for a plan that
    only shows placement on the declared facts, as ``relgate check`` does)."""
    for name in allow_hosts:
        if name not in ws.hosts:
            raise InputError(f"--allow-host {name}: no host named {name}" + did_you_mean(name, ws.hosts))
    hosts: list[Host] = []
    executors: dict[str, Executor] = {}
    blocked: dict[str, str] = {}
    ctx: RunContext | None = None
    for spec in ws.hosts.values():
        if spec.kind == "local":
            # once per invocation: the facts live on the workspace's memo
            host = Host(spec=spec, facts=ws.memo.get(host_key(spec.name), lambda spec=spec: detect_local(spec)))
            executors[host.name] = LocalExecutor(host)
        elif spec.kind == "slurm":  # each step a job (relgate.remote.slurm), loaded by a run with a cluster only
            from relgate.remote.slurm import SlurmExecutor, slurm_host

            host = slurm_host(spec)
            ctx = ctx or RunContext(ws)
            executors[host.name] = SlurmExecutor(host, ctx)
        else:
            host = Host(spec=spec, facts=HostFacts(boards=spec.boards, driver=spec.driver, toolkit=spec.toolkit,
                                                   capabilities=frozenset(spec.capabilities)))
            ctx = ctx or RunContext(ws)
            executors[host.name] = RemoteExecutor(host, ctx)
        if spec.permission and spec.name not in allow_hosts:
            blocked[spec.name] = (f"{spec.name} may be used only when the run names it ({spec.permission}): "
                                  f"--allow-host {spec.name}")
        hosts.append(host)
    hosts.sort(key=lambda h: h.spec.kind != "local")  # prefer this machine when it offers what is needed
    return RemotePool(hosts, executors, blocked=blocked, connect=connect)
