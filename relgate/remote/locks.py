"""Host hygiene: the exclusive-host lock and the GPU preflight.

An exclusive host is locked for a whole lane: a directory ``workdir/.relgate-lock`` made
with ``mkdir`` (atomic), holding ``owner.json`` (owner, run id, pid, start time, boot id).
The pid is the SSH session process of the holder's connection on that host, so the lock
lives exactly as long as the holder's connection: a lock whose pid is gone on the same boot,
or whose boot id is not the host's current one (it rebooted), is stale and taken over,
saying so. A live holder makes a second run wait (``lock_wait`` seconds) or refuse, naming it.

The GPU preflight lists the processes holding GPU memory (nvidia-smi) with their users and
refuses a heavy lane when another user's process holds it, unless the host file says why
that is acceptable (``allow_busy_gpu = "reason"``).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable

from relgate.core.record import record
from relgate.remote.ssh import SshError, SshExecutor

__all__ = ["HostLock", "LockHeld", "acquire", "release", "GpuProcess", "parse_gpu_processes", "gpu_preflight",
           "lock_dir"]

_BOOT = ("cat /proc/sys/kernel/random/boot_id 2>/dev/null || "
         "sysctl -n kern.boottime 2>/dev/null | sed 's/ usec.*//;s/[^0-9]//g'")
_POLL = 2.0


class LockHeld(SshError):
    """A live holder keeps the host's lock."""


@record
class HostLock:
    host: str
    path: str
    owner: str
    run_id: str
    pid: int
    started: str
    boot_id: str

    def describe(self) -> str:
        return f"{self.owner}, run {self.run_id}, pid {self.pid} on {self.host}, since {self.started}"


def lock_dir(workdir: str) -> str:
    return f"{workdir.rstrip('/')}/.relgate-lock"


def _holder(text: str, host: str, path: str) -> HostLock | None:
    try:
        data = json.loads(text)
        return HostLock(host=host, path=path, owner=str(data["owner"]), run_id=str(data["run_id"]),
                        pid=int(data["pid"]), started=str(data["started"]), boot_id=str(data["boot_id"]))
    except (ValueError, KeyError, TypeError):
        return None


def _try(ex: SshExecutor, path: str, *, owner: str, run_id: str) -> tuple[str, str, str]:
    """One attempt: ("TAKEN", owner.json, boot) or ("HELD", holder's owner.json, boot, alive)."""
    q = shlex.quote
    script = (
        f"L={q(path)}; boot=$({_BOOT}); started=$(date -u +%Y-%m-%dT%H:%M:%SZ); mkdir -p \"$(dirname \"$L\")\"; "
        "if mkdir \"$L\" 2>/dev/null; then "
        f"printf '{{\"owner\": \"%s\", \"run_id\": \"%s\", \"pid\": %s, \"started\": \"%s\", \"boot_id\": \"%s\"}}' "
        f"{q(owner)} {q(run_id)} \"$PPID\" \"$started\" \"$boot\" > \"$L/owner.json.tmp\" && "
        "mv \"$L/owner.json.tmp\" \"$L/owner.json\" && echo TAKEN && cat \"$L/owner.json\" && exit 0; fi; "
        "echo HELD; cat \"$L/owner.json\" 2>/dev/null; echo; echo \"@boot $boot\"; "
        "pid=$(sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p' \"$L/owner.json\" 2>/dev/null); "
        "if [ -n \"$pid\" ] && ps -p \"$pid\" >/dev/null 2>&1; then echo '@alive yes'; else echo '@alive no'; fi"
    )
    code, out = ex.capture(script)
    lines = out.splitlines()
    if code != 0 or not lines or lines[0] not in ("TAKEN", "HELD"):
        raise SshError(f"{ex.spec.name}: cannot take the host lock {path}: {out.strip()[-300:]}")
    return lines[0], "\n".join(lines[1:]), out


def acquire(ex: SshExecutor, *, workdir: str, owner: str, run_id: str, wait: float = 0.0,
            say: Callable[[str], None] = lambda line: None) -> HostLock:
    """Take the host's lock (waiting up to ``wait`` s for a live holder); stale locks are taken
    over, saying so through ``say``. Raises :class:`LockHeld` naming the holder."""
    path = lock_dir(workdir)
    host = ex.spec.name
    deadline = time.monotonic() + wait
    announced = False
    while True:
        state, body, raw = _try(ex, path, owner=owner, run_id=run_id)
        if state == "TAKEN":
            mine = _holder(body.strip(), host, path)
            if mine is None:
                raise SshError(f"{host}: the lock {path} was written unreadably: {body[:200]!r}")
            return mine
        text = body.split("\n@boot ")[0].strip()
        boot = raw.split("@boot ", 1)[1].splitlines()[0].strip() if "@boot " in raw else ""
        alive = "@alive yes" in raw
        holder = _holder(text, host, path)
        stale_why = None
        if holder is not None and holder.boot_id != boot:
            stale_why = f"the host rebooted since (boot {holder.boot_id[:8]} → {boot[:8]})"
        elif holder is not None and not alive:
            stale_why = f"pid {holder.pid} is gone on this boot"
        elif holder is None and not text:
            stale_why = None  # being written right now: treat as held for a moment
        if stale_why is not None:
            assert holder is not None
            say(f"{host}: taking over a stale lock ({holder.describe()}): {stale_why}")
            q = shlex.quote
            ex.capture(f"mv {q(path)} {q(path)}.stale.$$ 2>/dev/null && rm -rf {q(path)}.stale.$$; true")
            continue
        who = holder.describe() if holder is not None else f"unreadable lock {path}"
        if time.monotonic() >= deadline:
            waited = f" (waited {wait:g} s)" if wait else ""
            raise LockHeld(f"{host} is exclusive and locked by {who}{waited}; "
                           f"lock_wait in the host file makes a run wait for it")
        if not announced:
            say(f"{host}: locked by {who}; waiting up to {wait:g} s")
            announced = True
        time.sleep(min(_POLL, max(0.1, deadline - time.monotonic())))


def release(ex: SshExecutor, lock: HostLock) -> None:
    """Remove the lock if it is still ours (same run id and pid)."""
    q = shlex.quote
    run_pat = f'"run_id": "{lock.run_id}"'
    pid_pat = f'"pid": {lock.pid},'
    ex.capture(f"grep -qF {q(run_pat)} {q(lock.path)}/owner.json 2>/dev/null && "
               f"grep -qF {q(pid_pat)} {q(lock.path)}/owner.json && rm -rf {q(lock.path)}; true")


@record
class GpuProcess:
    pid: int
    name: str
    memory: str
    user: str

    def describe(self) -> str:
        return f"pid {self.pid} {self.name} ({self.memory}) of {self.user}"


_GPU_SCRIPT = (
    "command -v nvidia-smi >/dev/null 2>&1 || { echo '@no-nvidia-smi'; exit 0; }; echo \"@me $(id -un)\"; "
    "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null | "
    "while IFS=, read -r pid name mem; do pid=$(echo $pid); "
    "u=$(ps -o user= -p \"$pid\" 2>/dev/null | tr -d ' '); echo \"$pid,$name,$mem,${u:-?}\"; done"
)


def parse_gpu_processes(text: str) -> tuple[str | None, list[GpuProcess]]:
    """The preflight's output → (the login user, processes holding GPU memory)."""
    me = None
    procs: list[GpuProcess] = []
    for line in text.splitlines():
        if line.startswith("@me "):
            me = line[4:].strip()
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            procs.append(GpuProcess(pid=int(parts[0]), name=parts[1], memory=parts[2], user=parts[3]))
    return me, procs


def gpu_preflight(ex: SshExecutor, *, say: Callable[[str], None]) -> None:
    """Record the processes holding GPU memory; raise SshError when another user's holds it
    (unless the host file's ``allow_busy_gpu`` says why that is fine)."""
    _, out = ex.capture(_GPU_SCRIPT)
    if "@no-nvidia-smi" in out:
        return
    me, procs = parse_gpu_processes(out)
    for proc in procs:
        say(f"{ex.spec.name}: GPU memory held by {proc.describe()}")
    others = [p for p in procs if p.user != me]
    if not others:
        return
    if ex.spec.allow_busy_gpu:
        say(f"{ex.spec.name}: starting although another user's process holds GPU memory: "
            f"allow_busy_gpu = {ex.spec.allow_busy_gpu!r}")
        return
    raise SshError(f"{ex.spec.name}: GPU busy: {'; '.join(p.describe() for p in others)}; a heavy lane does not "
                   "start (allow_busy_gpu = \"reason\" in the host file allows it)")
