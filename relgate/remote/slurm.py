"""A Slurm cluster as a host (``kind = "slurm"``): each step's command is a job, through ``srun``.

The runner places a step on the cluster when it offers what the step requires (a board of
``[host.board.NAME]``, a declared capability); :meth:`SlurmExecutor.bind` ties the step's
``requires`` and ``gpus`` to the executor, so each command becomes an ``srun`` that asks Slurm
for a node with that board (``--gres``/``--constraint``/``--partition``) within the host's
partition, account and time limit (:func:`relgate.remote.slurm_jobs.srun_argv`). Submission is
from this machine, through the local executor: ``srun``'s output streams into the step's log
as it arrives, and a stop (Ctrl-C, SIGTERM, a timeout) ends ``srun``, then ``scancel``s the job.

On the node, before the command, the job script writes the node's facts (its name, the job
id, the GPUs Slurm gave it, nvidia-smi's board/driver/UUIDs and nvcc's toolkit where present)
and checks that the checkout's HEAD is the candidate commit. The candidate is delivered once
per commit into the host's ``workdir``, which every node shares (``git fetch`` of the exact
commit, detached worktrees); a step's commands run in a checkout no other running job uses
(one per job running at once, reused after). The evidence file lives in the work dir too and
is copied back into the ledger after the job. The job's final state and exit code come from ``sacct``
(or ``scontrol`` where the cluster keeps no accounting) and go into the step's facts, with the
node, the job id and every attempt: a job the cluster ended under the step (preempted, time
limit, node failure, OOM kill, cancelled by someone else) is submitted again up to
``resubmit`` times, then is ``error``; never ``fail``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from relgate.core.errors import Interrupted
from relgate.remote.slurm_jobs import (
    JobState,
    Query,
    gres_gpu_type,
    job_of,
    most_gpus,
    node_boards,
    parse_facts,
    read_state,
    scancel,
    srun_argv,
)
from relgate.remote.slurm_submit import submitter
from relgate.run.executor import CommandRequest, CommandResult, LogSink, refused
from relgate.run.hosts import Host, HostFacts
from relgate.run.plan import PlannedStep
from relgate.run.slots import gpus_needed

__all__ = ["SlurmExecutor", "slurm_host"]

_STATE_POLL = 10  # tries (0.2 s apart) for a just-ended job's final state to settle
_CANCEL_WAIT = 30.0  # seconds a stopped run waits for its cancelled jobs to leave the queue


def slurm_host(spec: Any) -> Host:
    """A Slurm host as placement sees it: it offers every board of its ``[host.board]`` tables,
    the boards and capabilities it declares; its nodes' own facts come with each step."""
    boards = tuple(dict.fromkeys([*spec.boards, *spec.slurm.boards]))
    return Host(spec=spec, facts=HostFacts(boards=boards, driver=spec.driver, toolkit=spec.toolkit,
                                           capabilities=frozenset(spec.capabilities)))


class SlurmExecutor:
    """The cluster as one host whose steps run side by side (up to ``max_jobs`` jobs at once)."""

    def __init__(self, host: Host, ctx: Any) -> None:
        self.host = host
        self.spec = host.spec.slurm
        self.max_jobs = self.spec.max_jobs
        self._ctx = ctx  # relgate.remote.pool.RunContext: the candidate, the run's token
        self.submit = submitter(host)  # this machine, or the login node over SSH
        self._lock = threading.Lock()
        self._trees: dict[str, list[str]] = {}  # commit → its checkouts (one per job running at once)
        self._busy: set[str] = set()
        self._folders: set[str] = set()
        self._count = 0
        self._live: set[str] = set()  # job names submitted and not known to be over
        self._nodes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.stopped = False

    def bind(self, step: PlannedStep) -> _Job:
        return _Job(self, step)

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        job = _Job(self, None)
        try:
            return job.run(request, sink)
        finally:
            job.step_done()

    def interrupt(self, signum: int) -> None:
        """From another thread: end every ``srun`` (their workers raise Interrupted and cancel their jobs)."""
        self.stopped = True
        self.submit.interrupt(signum)

    def close(self) -> None:
        """Cancel whatever this run still has in the queue."""
        with self._lock:
            live = sorted(self._live)
        if live:
            scancel(live, self.submit.query, wait=_CANCEL_WAIT)
        self.submit.close()

    def probe(self, command: str, timeout: float) -> tuple[int | None, str]:
        """A ``[[probe]]`` as a job on a node of the partition: its exit status and output."""
        argv = ["srun", f"--job-name={self._name()}", "--nodes=1", "--ntasks=1"]
        argv += [f"--partition={self.spec.partition}"] if self.spec.partition else []
        argv += [f"--account={self.spec.account}"] if self.spec.account else []
        done = self.submit.query([*argv, "/bin/sh", "-c", command])
        told = "".join(line for line in done.stderr.splitlines(keepends=True)  # the exit status says it already
                       if not re.match(r"srun: error: \S+: task \d+: Exited with exit code \d+", line))
        return done.returncode, done.stdout + told

    # -- what the jobs share ----------------------------------------------------------------
    def _name(self) -> str:
        with self._lock:
            self._count += 1
            return f"relgate-{self._ctx.token}-{self._count}"

    def checkout(self, side: Any, say: Any) -> str:
        """A checkout of the candidate in the shared workdir that no running job of this run uses:
        jobs side by side never share a tree (two builds in one tree would clobber each other).
        The first is made once per commit; another only when every one is taken, and each is
        reused by later jobs (its build outputs with it, as in a tree built step after step)."""
        with self._lock:
            trees = self._trees.setdefault(side.commit, [])
            free = next((t for t in trees if t not in self._busy), None)
            if free is not None:
                self._busy.add(free)
                return free
            checkout, how = self.submit.checkout(side, self.host.spec.workdir, self._ctx.project,
                                                 _safe(self._ctx.project), len(trees))
            trees.append(checkout)
            self._busy.add(checkout)
        say(f"{self.host.name}: HEAD of {checkout} verified = {side.commit} ({how}, from {self.submit.where}; "
            "each job checks it again on its node)")
        return checkout

    def release(self, checkout: str) -> None:
        with self._lock:
            self._busy.discard(checkout)

    def all_gpus(self, requires: Sequence[str]) -> int | None:
        """For ``gpus = "all"``: the most GPUs (of the board asked for) a node of its partition has."""
        board = next((self.spec.boards[r] for r in requires if r in self.spec.boards), None)
        partition = (board.partition if board is not None else None) or self.spec.partition
        answer = self.submit.query(["sinfo", "-h", "-N", "-o", "%G", *([f"--partition={partition}"] if partition else [])])
        if answer.returncode != 0:
            return None
        return most_gpus(answer.stdout, gres_gpu_type(board.gres if board is not None else None))

    def folder(self, path: str) -> None:
        """``path`` made where jobs are submitted from (once per run)."""
        with self._lock:
            if path in self._folders:
                return
        self.submit.mkdir(path)
        with self._lock:
            self._folders.add(path)

    def node_facts(self, node: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        with self._lock:
            known = self._nodes.get(node)
        if known is None:
            known = node_boards(node, self.submit.query)
            with self._lock:
                self._nodes[node] = known
        return known


class _Job:
    """One step's commands as jobs on the cluster (its requires and gpus bound)."""

    def __init__(self, cluster: SlurmExecutor, step: PlannedStep | None) -> None:
        self.cluster = cluster
        self.host = cluster.host
        self.step = step
        self._tree: str | None = None  # the checkout this step's commands run in (one tree per step)

    def step_done(self) -> None:
        """The step is over: its checkout is free for the next job."""
        if self._tree is not None:
            self.cluster.release(self._tree)
            self._tree = None

    def interrupt(self, signum: int) -> None:
        self.cluster.interrupt(signum)

    def planned_board(self) -> str | None:
        """The board this step asks the cluster for (the first required one with a board table);
        the step's row carries it, whichever node ran it."""
        requires = self.step.requires if self.step is not None else ()
        return next((r for r in requires if r in self.cluster.spec.boards), None)

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        c, started = self.cluster, datetime.now(timezone.utc)
        say = lambda line: sink.write(f"# relgate: {line}\n")  # noqa: E731
        try:
            side = c._ctx.side_of(Path(request.cwd))
            checkout = self._tree = self._tree or c.checkout(side, say)
        except Exception as exc:  # noqa: BLE001 - SshError (outside the project), git failing: the host cannot run it
            return self._refused(request, sink, f"{c.host.name}: cannot deliver the candidate: {exc}", started)
        rel = Path(request.cwd).resolve().relative_to(side.root).as_posix()
        workdir = PurePosixPath(checkout) / side.subdir / rel if side.subdir != "." else PurePosixPath(checkout) / rel
        env = dict(request.env)
        jobs_dir = PurePosixPath(c.host.spec.workdir) / _safe(c._ctx.project) / "jobs" / c._ctx.token
        try:
            c.folder(str(jobs_dir))
        except OSError as exc:
            return self._refused(request, sink, f"{c.host.name}: {exc}", started)
        local_evidence = Path(env[c._ctx.evidence_env]) if c._ctx.evidence_env in env else None
        attempts: list[dict[str, Any]] = []
        requires = self.step.requires if self.step is not None else ()
        gpus = self.step.gpus if self.step is not None else None
        gpu_step = self.step is not None and gpus_needed(self.step, self.host) > 0
        for attempt in range(c.spec.resubmit + 1):
            name = c._name()
            facts_file = jobs_dir / f"{name}.facts"
            if local_evidence is not None:
                remote_evidence = jobs_dir / f"{name}.evidence"
                env[c._ctx.evidence_env] = str(remote_evidence)
            tail = [str(facts_file), side.commit, checkout, str(workdir), "--"]
            tail += list(request.argv) if request.argv is not None else ["/bin/sh", "-c", request.shell or ""]
            argv = srun_argv(c.spec, name=name, requires=requires, gpus=gpus, gpu_step=gpu_step, script_args=tail,
                             all_gpus=c.all_gpus(requires) if gpus == "all" else None)
            say(f"job {name}: {' '.join(a for a in argv[:argv.index('/bin/sh')])} (attempt {attempt + 1})")
            with c._lock:
                c._live.add(name)
            try:
                result = c.submit.run(replace(request, argv=tuple(argv), shell=None, cwd=PurePosixPath(checkout), env=env),
                                      sink)
            except (Interrupted, KeyboardInterrupt):
                left = scancel([name], c.submit.query, wait=_CANCEL_WAIT)
                with c._lock:
                    c._live.discard(name)
                say(f"job {name} cancelled (scancel): relgate was stopped"
                    + (f"; squeue still lists it after {_CANCEL_WAIT:g} s" if left else "; it left the queue"))
                raise
            text = c.submit.read(str(facts_file))
            job_facts = parse_facts(text) if text else {}
            job = (job_facts.get("job") or [None])[0] or job_of(name, c.submit.query)
            state = _final_state(job, c.submit.query) if job else None
            if result.timed_out or state is None or state.state in ("PENDING", "RUNNING", "COMPLETING"):
                scancel([name], c.submit.query)  # relgate's own timeout, or srun gone with the job alive
            with c._lock:
                c._live.discard(name)
            node = (job_facts.get("node") or [None])[0] or (state.node if state else None)
            record = {"job_id": job, "name": name, "node": node, "state": state.state if state else "NEVER-STARTED",
                      "exit_code": state.exit_code if state else None, "source": state.source if state else None}
            attempts.append(record)
            say(f"job {job or name} on {node or 'no node'}: {record['state']}, exit {record['exit_code']} "
                f"({record['source'] or 'no state'})")
            if local_evidence is not None and c.submit.fetch(str(remote_evidence), local_evidence):
                say(f"evidence fetched from {c.host.name}:{remote_evidence}")
            facts = self._facts(job_facts, attempts, requires)
            head = (job_facts.get("head") or [""])[0]
            if job_facts and head != side.commit:
                return replace(result, spawn_error=f"{node}: the checkout's HEAD is {head or 'unreadable'}, not "
                               f"{side.commit}", facts=facts)
            if job_facts:
                say(f"{node}: HEAD of {checkout} verified = {head} on the node, before the command")
            if result.timed_out or state is None or not state.infra or c.stopped:
                if not job_facts:  # nothing shows the command ran on a node, on the candidate: never a pass
                    why = ("timed out before the job started on a node (it waited in the queue)" if result.timed_out
                           else f"Slurm ran no job on a node (srun exit {result.exit_code}, "
                           f"{record['state']}; its answer is in the log)"
                           if state is None or not state.node else
                           f"the job left no facts at {facts_file} (exit {result.exit_code}, "
                           f"{record['state']}): the job script did not run, or the nodes do not share "
                           f"{c.host.spec.workdir}")
                    return replace(result, facts=facts, spawn_error=f"srun {name}: {why}")
                return replace(result, facts=facts)
            if attempt < c.spec.resubmit:
                say(f"job {job} ended {state.state} under the step (not the code): resubmitting "
                    f"({attempt + 1} of {c.spec.resubmit})")
        why = (f"slurm job {job} on {node or 'no node'} ended {state.state} (exit {state.exit_code}, "
               f"{state.source}); submitted {len(attempts)} time(s)")
        return replace(result, spawn_error=why, exit_code=None, facts=facts)

    def _facts(self, job: dict[str, list[str]], attempts: list[dict[str, Any]],
               requires: Sequence[str]) -> dict[str, Any]:
        last = attempts[-1]
        out: dict[str, Any] = {"slurm": {**last, "attempts": attempts}}
        node = last["node"]
        gpus = [g.split(",") for g in job.get("gpu", [])]
        visible = (job.get("visible") or [""])[0]
        mine = {i for i in visible.split(",") if i.isdigit()}
        if mine and len(gpus) > len(mine):  # nvidia-smi saw the whole node: keep the GPUs Slurm gave the job
            gpus = [g for g in gpus if g[0].strip() in mine]
        board = self.planned_board()
        if node:
            types, features = self.cluster.node_facts(node)
            out["slurm"]["node_gres"], out["slurm"]["node_features"] = list(types), list(features)
            found = board if board is not None else (types[0] if types else None)
            if found:
                out["board"] = found
        if gpus:  # nvidia-smi on the node: the boards' own names, the driver, the UUIDs
            out["gpu_names"] = list(dict.fromkeys(g[1].strip() for g in gpus if len(g) > 1))
            out["driver"] = ", ".join(dict.fromkeys(g[2].strip() for g in gpus if len(g) > 2))
            out["gpus"] = [{"index": int(g[0]), "uuid": g[3].strip()} for g in gpus if len(g) > 3 and g[0].isdigit()]
        if visible:
            out["visible_devices"] = visible
            out.setdefault("gpus", [{"index": int(i), "uuid": None} for i in visible.split(",") if i.isdigit()])
        toolkit = (job.get("toolkit") or [""])[0]
        if toolkit:
            out["toolkit"] = toolkit
        return out

    def _refused(self, request: CommandRequest, sink: LogSink, message: str, started: datetime) -> CommandResult:
        return refused(self.host.name, request, sink, message, started)


def _final_state(job: str, query: Query) -> JobState:
    """The job's state once Slurm has settled it (a job is COMPLETING for a moment after srun ends)."""
    state = read_state(job, query)
    for _ in range(_STATE_POLL):
        if state.state not in ("COMPLETING", "RUNNING", "PENDING", "CONFIGURING"):
            break
        time.sleep(0.2)
        state = read_state(job, query)
    return state


def _safe(project: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", project) or "project"
