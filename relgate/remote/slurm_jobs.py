"""Slurm as data: the ``srun`` line for a step, the job's state read back (``sacct``, or
``scontrol show job`` where the cluster keeps no accounting), and what each state means for
relgate (mapped once, here: ReFrame's and submitit's habit).

A job that ran the command to its end (``COMPLETED``, or ``FAILED`` with the command's exit
code) is judged like any command: pass or fail. A job the cluster ended under it
(``PREEMPTED``, ``TIMEOUT``, ``NODE_FAIL``, ``OUT_OF_MEMORY``, ``BOOT_FAIL``, ``DEADLINE``, or
``CANCELLED`` by someone other than relgate) is infrastructure: submitted again up to the host's
``resubmit``, then ``error``; never ``fail``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from relgate.core.record import record
from relgate.manifest.host_extras import GPU_ALL, SlurmSpec

__all__ = ["INFRA_STATES", "JobState", "srun_argv", "read_state", "parse_scontrol", "parse_facts", "node_boards",
           "JOB_SCRIPT", "job_of", "scancel", "Query", "gres_gpu_type", "most_gpus"]

INFRA_STATES = frozenset({"PREEMPTED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                          "CANCELLED", "REVOKED", "REQUEUED", "SUSPENDED"})

# Runs on the node: its facts into $1 (node, job, GPUs, the checkout's HEAD, driver, toolkit),
# the HEAD checked against the candidate ($2), then the command in $4 (after "--").
JOB_SCRIPT = r"""f="$1"; want="$2"; checkout="$3"; dir="$4"; shift 5
head=$(git -C "$checkout" rev-parse HEAD 2>/dev/null)
{ echo "node=${SLURMD_NODENAME:-$(hostname)}"; echo "job=${SLURM_JOB_ID:-}"
  echo "visible=${CUDA_VISIBLE_DEVICES:-}"; echo "head=$head"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version,uuid --format=csv,noheader 2>/dev/null | sed 's/^/gpu=/'; fi
  if command -v nvcc >/dev/null 2>&1; then nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/toolkit=cuda \1/p'; fi
} > "$f.part" && mv "$f.part" "$f"
if [ "$head" != "$want" ]; then
  echo "# relgate: HEAD of $checkout on ${SLURMD_NODENAME:-this node} is ${head:-unreadable}, not $want" >&2; exit 86
fi
cd "$dir" || exit 86
exec "$@"
"""


@record
class JobState:
    state: str  # COMPLETED, FAILED, CANCELLED, PREEMPTED, … ("UNKNOWN" when the cluster no longer knows it)
    exit_code: str  # "code:signal" as Slurm writes it
    node: str | None
    source: str  # "sacct" or "scontrol"

    @property
    def infra(self) -> bool:
        return self.state.split()[0] in INFRA_STATES


def srun_argv(spec: SlurmSpec, *, name: str, requires: Sequence[str], gpus: int | str | None,
              gpu_step: bool, script_args: Sequence[str], all_gpus: int | None = None) -> list[str]:
    """``srun`` for one step: partition, account, time, and per required board its
    ``--gres``/``--constraint``/``--partition`` from ``[host.board.NAME]``; a GPU step with no
    board table asks for ``--gres=gpu:N``; ``gpus = "all"`` asks for the whole node
    (``--exclusive``) with every GPU of it (``all_gpus``: the most such a node has)."""
    if gpus == GPU_ALL and all_gpus:
        gpus_count: int | str | None = all_gpus
    else:
        gpus_count = gpus
    partition, gres, constraints = spec.partition, None, []
    for need in requires:
        board = spec.boards.get(need)
        if board is None:
            continue
        partition = board.partition or partition
        gres = board.gres or gres
        if board.constraint:
            constraints.append(board.constraint)
    count = gpus_count if isinstance(gpus_count, int) else 1
    if gres is not None and isinstance(gpus_count, int):
        gres = re.sub(r":\d+$", f":{count}", gres) if re.search(r":\d+$", gres) else f"{gres}:{count}"
    elif gres is None and gpu_step and isinstance(gpus_count, int) or gres is None and gpu_step and gpus is None:
        gres = f"gpu:{count}"
    argv = ["srun", f"--job-name={name}", "--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1"]
    argv += [f"--partition={partition}"] if partition else []
    argv += [f"--account={spec.account}"] if spec.account else []
    argv += [f"--time={spec.time_limit}"] if spec.time_limit else []
    argv += [f"--gres={gres}"] if gres else []
    argv += [f"--constraint={'&'.join(constraints)}"] if constraints else []
    argv += ["--exclusive"] if gpus == GPU_ALL else []
    return [*argv, *spec.extra_args, "/bin/sh", "-c", JOB_SCRIPT, "relgate-job", *script_args]


def gres_gpu_type(gres: str | None) -> str | None:
    """``gpu:h100:1`` → ``h100``; ``gpu:1`` or None → None."""
    parts = (gres or "").split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "gpu" else None


def most_gpus(sinfo: str, gpu_type: str | None) -> int | None:
    """The most GPUs (of ``gpu_type``, or any) one node lists in ``sinfo -N -o %G`` output."""
    counts = [int(m.group(2)) for m in re.finditer(r"gpu(?::([^:,()\s]+))?:(\d+)", sinfo)
              if gpu_type is None or m.group(1) == gpu_type]
    return max(counts) if counts else None


def parse_scontrol(text: str) -> dict[str, str]:
    """``Key=Value Key=Value …`` (``scontrol show … -o``) → a mapping (values up to the next key)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(\w[\w:/]*)=(.*?)(?=\s+\w[\w:/]*=|$)", text.strip()):
        out.setdefault(m.group(1), m.group(2).strip())
    return out


def parse_facts(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out.setdefault(key.strip(), []).append(value.strip())
    return out


class _Answer(Protocol):
    returncode: int | None
    stdout: str
    stderr: str


Query = Callable[[Sequence[str]], _Answer]  # runs a short command where jobs are submitted from


def read_state(job: str, query: Query) -> JobState:
    """The job's final state and exit code: ``sacct`` where the cluster keeps accounting, else
    ``scontrol show job`` (which knows a job for ``MinJobAge`` after it ended)."""
    done = query(["sacct", "-j", job, "-X", "-n", "-P", "-o", "State,ExitCode,NodeList"])
    if done.returncode == 0 and done.stdout.strip():
        state, code, node = (done.stdout.strip().splitlines()[0].split("|") + ["", "", ""])[:3]
        return JobState(state=state or "UNKNOWN", exit_code=code or "?", node=node or None, source="sacct")
    done = query(["scontrol", "show", "job", job, "-o"])
    if done.returncode == 0:
        fields = parse_scontrol(done.stdout)
        node = fields.get("NodeList")
        return JobState(state=fields.get("JobState", "UNKNOWN"), exit_code=fields.get("ExitCode", "?"),
                        node=None if node in (None, "(null)") else node, source="scontrol")
    why = (done.stderr.strip() or done.stdout.strip()) or "no answer"
    return JobState(state="UNKNOWN", exit_code="?", node=None, source=f"none ({why[:120]})")


def job_of(name: str, query: Query) -> str | None:
    """The id of the job named ``name`` (pending, running, or recently ended), if Slurm knows it."""
    done = query(["squeue", "-h", "-t", "all", f"--name={name}", "-o", "%i"])
    ids = [i for i in done.stdout.split() if i.isdigit()] if done.returncode == 0 else []
    return ids[-1] if ids else None


def node_boards(node: str, query: Query) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The GPU types in ``node``'s GRES and its features (``scontrol show node``)."""
    done = query(["scontrol", "show", "node", node, "-o"])
    if done.returncode != 0:
        return (), ()
    fields = parse_scontrol(done.stdout)
    types = tuple(dict.fromkeys(m.group(1) for m in re.finditer(r"gpu:([^:(),]+):\d+", fields.get("Gres", ""))))
    features = tuple(f for f in fields.get("AvailableFeatures", "").split(",") if f and f != "(null)")
    return types, features


def scancel(names: Sequence[str], query: Query, *, wait: float = 0.0) -> list[str]:
    """Cancel the jobs named ``names`` (whatever their state); with ``wait``, up to that many
    seconds until ``squeue`` no longer lists them (a cancelled job is COMPLETING while its
    processes end). The names still listed then."""
    for name in names:
        query(["scancel", f"--name={name}"])
    left = list(names)
    deadline = time.monotonic() + wait
    while left and wait > 0:
        done = query(["squeue", "-h", f"--name={','.join(left)}", "-o", "%j"])
        if done.returncode != 0:
            break
        listed = set(done.stdout.split())
        left = [n for n in left if n in listed]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return left
