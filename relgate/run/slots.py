"""GPU slots: a run's steps side by side, each on GPUs of its own; a scheduler's jobs submitted together.

A host's GPUs are slots (``gpus = N`` in its file, else as many as nvidia-smi lists). A step
takes ``gpus`` of them: 1 by default when it requires a GPU capability (``cuda``, ``rocm``,
``hip``, ``metal``, ``smNN`` or one of the host's boards), N, or ``"all"`` (it runs alone).
:func:`run_side_by_side` walks the steps in their order and starts each as soon as what it
needs is free:

* a GPU step on a host with slots waits for enough free GPUs of that host (and for no
  ``"all"`` step to be running there), then runs with ``CUDA_VISIBLE_DEVICES``,
  ``HIP_VISIBLE_DEVICES`` and ``ROCR_VISIBLE_DEVICES`` naming its own GPUs; no two running
  steps ever share one, and the GPUs' index and UUID are recorded with the step;
* a step on a job scheduler (a Slurm host: its executor has ``max_jobs``) is submitted at once,
  up to ``max_jobs`` at a time: the scheduler places and runs them side by side;
* any other step (a build, a check) waits until nothing runs, then runs alone: two builds never
  share the work tree, and no test runs while the tree is being built;
* a step whose ``needs`` are still running waits for them.

Steps start in order (the first that cannot start holds back the ones after it), so the
ledger reads in the runbook's order; each step has its own log (outputs never interleave).
On Ctrl-C/SIGTERM nothing new starts, every running step's command is stopped through its
executor's ``interrupt`` (no signal reaches a worker thread) and recorded as interrupted.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from relgate.core.errors import Interrupted
from relgate.run.executor import CommandRequest, CommandResult, Executor, LogSink
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep

__all__ = ["GPU_CAPABILITIES", "gpus_needed", "side_by_side", "SlotExecutor", "run_side_by_side", "VISIBLE_VARS"]

GPU_CAPABILITIES = frozenset({"cuda", "rocm", "hip", "metal", "gpu"})
VISIBLE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
_SM = re.compile(r"sm\d+")
_POLL = 0.25  # seconds between looks at the stop flag while waiting (signals reach the main thread)


def gpus_needed(step: PlannedStep, host: Host) -> int:
    """How many of ``host``'s GPU slots ``step`` takes (0: none; ``"all"``: every one)."""
    if step.gpus == "all":
        return max(host.gpu_slots, 1)
    if isinstance(step.gpus, int):
        return step.gpus
    boards = set(host.facts.boards) | set(host.spec.boards)
    return 1 if any(r in GPU_CAPABILITIES or _SM.fullmatch(r) or r in boards for r in step.requires) else 0


def side_by_side(executors: Sequence[Executor]) -> bool:
    """Whether a run over these executors schedules steps side by side (a host with GPU slots,
    or a job scheduler); otherwise the runner keeps its one-at-a-time loop."""
    return any(getattr(e, "max_jobs", None) or e.host.gpu_slots >= 1 for e in executors)


class SlotExecutor:
    """``inner`` with the step pinned to GPUs ``indexes`` of its host (the visible-devices
    variables set, the GPUs named in the log and in the result's facts)."""

    def __init__(self, inner: Executor, indexes: Sequence[int]) -> None:
        self.inner = inner
        self.host = inner.host
        self.indexes = tuple(indexes)

    def gpus(self) -> list[dict[str, object]]:
        uuids = self.host.facts.gpu_uuids
        return [{"index": i, "uuid": uuids[i] if i < len(uuids) else None} for i in self.indexes]

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        visible = ",".join(str(i) for i in self.indexes)
        named = ", ".join(f"{g['index']} ({g['uuid'] or 'uuid not detected'})" for g in self.gpus())
        sink.write(f"# relgate: on {self.host.name} GPU {named}: {'='.join((VISIBLE_VARS[0], visible))}\n")
        env = {**request.env, **{var: visible for var in VISIBLE_VARS}}
        result = self.inner.run(replace(request, env=env), sink)
        return replace(result, facts={**result.facts, "gpus": self.gpus(), "visible_devices": visible})

    def interrupt(self, signum: int) -> None:
        stop = getattr(self.inner, "interrupt", None)
        if stop is not None:
            stop(signum)


class _State:
    """What the scheduler and its workers share, under one condition variable."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.free: dict[str, set[int]] = {}  # host → free GPU indexes
        self.alone_on: set[str] = set()  # hosts running an "all" step
        self.jobs: dict[int, int] = {}  # id(executor) → running jobs (schedulers)
        self.running = 0
        self.finished: dict[str, bool] = {}  # step name → passed
        self.pending_names: set[str] = set()
        self.error: BaseException | None = None


def run_side_by_side(steps: Sequence[PlannedStep], *, place: Callable[[PlannedStep], Executor | str],
                     run: Callable[[PlannedStep, Executor | str], tuple[object, bool]],
                     running: Callable[[], Sequence[Executor]]) -> list[object]:
    """Run ``steps`` as the module says; ``run(step, placed)`` runs one (on a worker thread, with
    its own ledger) and returns its outcome and whether it passed; ``running()`` the executors
    to stop on Ctrl-C. The outcomes, in the steps' order."""
    state = _State()
    outcomes: list[object | None] = [None] * len(steps)
    threads: list[threading.Thread] = []
    state.pending_names = {s.name for s in steps}

    def start(i: int, step: PlannedStep, placed: Executor | str, release: Callable[[], None]) -> None:
        def work() -> None:
            passed = False
            try:
                outcomes[i], passed = run(step, placed)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                with state.cond:
                    state.error = state.error or exc
            finally:
                with state.cond:
                    release()
                    state.running -= 1
                    state.finished[step.name] = passed
                    state.cond.notify_all()

        with state.cond:
            state.running += 1
        thread = threading.Thread(target=work, name=f"relgate-step-{step.name}", daemon=True)
        threads.append(thread)
        thread.start()

    def wait_until(ready: Callable[[], bool]) -> None:
        with state.cond:
            while not ready():
                if state.error is not None:
                    raise state.error
                state.cond.wait(timeout=_POLL)

    def nothing() -> None:
        return None

    try:
        for i, step in enumerate(steps):
            earlier = [n for n in step.needs if n in state.pending_names]
            wait_until(lambda: all(n in state.finished for n in earlier))
            blocked = next((n for n in step.needs if not state.finished.get(n, False)), None)
            placed = f"needs {blocked}, which did not pass" if blocked is not None else place(step)
            if step.skip or isinstance(placed, str):
                outcomes[i], passed = run(step, placed)
                with state.cond:
                    state.finished[step.name] = passed
                continue
            host = placed.host
            max_jobs = getattr(placed, "max_jobs", None)
            need = gpus_needed(step, host) if host.gpu_slots >= 1 else 0
            if max_jobs:
                key = id(placed)
                wait_until(lambda: state.jobs.get(key, 0) < max_jobs)
                with state.cond:  # workers give back under the same lock (only this thread takes)
                    state.jobs[key] = state.jobs.get(key, 0) + 1

                def done(key: int = key) -> None:
                    state.jobs[key] -= 1

                start(i, step, placed, done)
            elif need > host.gpu_slots:
                outcomes[i], passed = run(step, f"needs {need} GPUs, {host.name} has {host.gpu_slots}")
                with state.cond:
                    state.finished[step.name] = passed
            elif need:
                free = state.free.setdefault(host.name, set(range(host.gpu_slots)))
                wait_until(lambda: len(free) >= need and host.name not in state.alone_on)
                with state.cond:
                    taken = sorted(free)[:need]
                    free.difference_update(taken)
                    if need == host.gpu_slots and step.gpus == "all":
                        state.alone_on.add(host.name)

                def give_back(name: str = host.name, taken: list[int] = taken) -> None:
                    state.free[name].update(taken)
                    state.alone_on.discard(name)

                start(i, step, SlotExecutor(placed, taken), give_back)
            else:  # a build or check: alone, the tree to itself
                wait_until(lambda: state.running == 0)
                start(i, step, placed, nothing)
                wait_until(lambda: state.running == 0)
        wait_until(lambda: state.running == 0)
    except BaseException as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        for executor in running():
            stop = getattr(executor, "interrupt", None)
            if stop is not None:
                stop(signum)
        for thread in threads:
            while thread.is_alive():  # a second Ctrl-C goes on up at once
                thread.join(timeout=_POLL)
        raise
    if state.error is not None:
        raise state.error
    return [o for o in outcomes if o is not None]
