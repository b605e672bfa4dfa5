"""A real Slurm cluster for tests: munged, slurmctld and one slurmd per node, own config, stopped by pid.

``slurm_cluster(tmp, nodes)`` writes ``slurm.conf``/``gres.conf`` into ``tmp``, starts Debian's
``munged`` (its own key and socket), ``slurmctld`` and one ``slurmd -N NAME`` per node, and yields
a :class:`Cluster` (the ``SLURM_CONF`` to point clients at, ``squeue``/``scancel`` helpers). Each
node is a :class:`NodeSpec`: its GPU GRES (``gpu:TYPE:COUNT``) backed by plain files (no machine
here has the GPUs; Slurm only hands their indexes out), and its features.

One node runs on 127.0.0.1 (``netns=False``). Several nodes each get a network namespace of their
own (``tests/netns_support.py`` makes the veth links): ``slurmd`` is started there through
``nsenter --net=/run/netns/NAME``, which keeps this machine's ``/sys`` (``ip netns exec``
remounts it, and slurmd then finds no cgroup file system); the controller listens on the first
namespace's gateway address, which every namespace reaches through its own gateway. Spool,
pid and log files carry ``%n`` (the node's name).

Everything started here is stopped by pid (SIGTERM, then SIGKILL); the namespaces are removed.
Tests skip with the install line only where Slurm or munge is missing (:func:`slurm_missing`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NodeSpec", "Cluster", "slurm_missing", "slurm_cluster", "INSTALL"]

INSTALL = "apt-get update && apt-get install -y slurm-wlm munge"
_TOOLS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scancel", "scontrol")
_READY = 60.0
_MINORS = (3, 5, 7, 8, 9)  # /dev/null, zero, full, random, urandom


def slurm_missing() -> str | None:
    """Why no Slurm cluster can be started here (naming the install line), or None."""
    missing = [t for t in _TOOLS if shutil.which(t) is None and not Path(f"/usr/sbin/{t}").exists()]
    if missing:
        return f"{', '.join(missing)} not installed ({INSTALL})"
    if os.geteuid() != 0:
        return "the test cluster's daemons run as root"
    return None


@dataclass(kw_only=True)
class NodeSpec:
    name: str
    gpu_type: str = "h100"
    gpus: int = 1
    features: tuple[str, ...] = ()
    cpus: int = 4


@dataclass(kw_only=True)
class Cluster:
    dir: Path
    conf: Path
    nodes: list[NodeSpec]
    addresses: dict[str, str]
    netns: dict[str, str] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def jobs(self) -> list[tuple[str, str, str]]:
        """``(job id, name, state)`` of every job in ``squeue``."""
        out = self.run("squeue", "-h", "-o", "%i|%j|%T").stdout
        return [tuple(line.split("|", 2)) for line in out.splitlines() if line.strip()]  # type: ignore[misc]

    def host_file(self, path: Path, *, name: str = "cluster", extra: str = "") -> Path:
        """A ``kind = "slurm"`` host file for this cluster (a board table per GPU type)."""
        boards = sorted({n.gpu_type for n in self.nodes})
        tables = "".join(f'\n[host.board.{b}]\ngres = "gpu:{b}:1"\n' for b in boards)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[host]\nname = "{name}"\nkind = "slurm"\nworkdir = "{self.dir / "work"}"\n'
                        f'partition = "gpu"\ntime_limit = "00:10:00"\n{extra}'
                        f'\n[host.env]\nSLURM_CONF = "{self.conf}"\n{tables}')
        return path


def _hostname() -> str:
    return socket.gethostname().split(".")[0]


def _conf(tmp: Path, nodes: Sequence[NodeSpec], addresses: dict[str, str], ctld: str, ports: tuple[int, int],
          partitions: dict[str, Sequence[str]]) -> str:
    lines = [
        "ClusterName=relgate-test",
        f"SlurmctldHost={_hostname()}({ctld})",
        f"SlurmctldPort={ports[0]}", f"SlurmdPort={ports[1]}",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={tmp / 'munge.socket'}",
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={tmp / 'state'}", f"SlurmdSpoolDir={tmp / 'spool'}/%n",
        f"SlurmctldPidFile={tmp / 'slurmctld.pid'}", f"SlurmdPidFile={tmp / 'slurmd'}-%n.pid",
        f"SlurmctldLogFile={tmp / 'slurmctld.log'}", f"SlurmdLogFile={tmp / 'slurmd'}-%n.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
        "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "SchedulerParameters=sched_min_interval=0", "GresTypes=gpu", "MpiDefault=none", "ReturnToService=2",
        "MinJobAge=3600", "SlurmdParameters=config_overrides", "KillWait=2", "InactiveLimit=0",
        "SlurmctldDebug=info", "SlurmdDebug=info",
    ]
    for n in nodes:
        feats = f" Feature={','.join(n.features)}" if n.features else ""
        lines.append(f"NodeName={n.name} NodeAddr={addresses[n.name]} CPUs={n.cpus} RealMemory=1000 "
                     f"Gres=gpu:{n.gpu_type}:{n.gpus}{feats} State=UNKNOWN")
    lines.append("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    for name, members in partitions.items():
        lines.append(f"PartitionName={name} Nodes={','.join(members)} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _wait(predicate, what: str, log: Path | None = None) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + _READY
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
    raise RuntimeError(f"{what} did not come up within {_READY:g} s\n{tail}")


@contextmanager
def _munge(tmp: Path, stack: ExitStack) -> None:  # type: ignore[misc]
    key = tmp / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    pidfile = tmp / "munged.pid"
    subprocess.run(["munged", "--force", f"--key-file={key}", f"--socket={tmp / 'munge.socket'}",
                    f"--pid-file={pidfile}", f"--log-file={tmp / 'munged.log'}", f"--seed-file={tmp / 'munge.seed'}"],
                   check=True, capture_output=True, timeout=30)
    _wait(lambda: _read_pid(pidfile) is not None, "munged", tmp / "munged.log")
    pid = _read_pid(pidfile)
    assert pid is not None
    stack.callback(_stop, pid)
    yield


@contextmanager
def slurm_cluster(tmp: Path, nodes: Sequence[NodeSpec], *, netns: bool = False,
                  partitions: dict[str, Sequence[str]] | None = None) -> Iterator[Cluster]:
    """A running cluster of ``nodes`` (on 127.0.0.1, or one network namespace each); every node
    is in partition ``gpu``, and ``partitions`` adds others (name → node names)."""
    why = slurm_missing()
    if why is not None:
        raise RuntimeError(why)
    tmp.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o755)
    for sub in ("state", "spool", "gpu", "work"):
        (tmp / sub).mkdir(exist_ok=True)
    with ExitStack() as stack:
        addresses: dict[str, str] = {}
        names: dict[str, str] = {}
        if netns:
            from netns_support import _allocation_lock, _make_link, _remove_link, _used_subnets

            links = []
            with _allocation_lock():
                used = _used_subnets()
                free = (i for i in range(1, 16000) if i not in used)
                for n in nodes:
                    link = _make_link(next(free))
                    stack.callback(_remove_link, link[0])
                    links.append(link)
            for n, (name, address, _gw) in zip(nodes, links):
                addresses[n.name], names[n.name] = address, name
            ctld = links[0][2]
        else:
            for n in nodes:
                addresses[n.name] = "127.0.0.1"
            ctld = "127.0.0.1"
        conf = tmp / "slurm.conf"
        conf.write_text(_conf(tmp, nodes, addresses, ctld, (_free_port(), _free_port()), dict(partitions or {})))
        gres = []
        for n in nodes:
            for i in range(n.gpus):
                # No GPU here: each "GPU" is a character device node of the memory devices
                # (null, zero, full, random …): Slurm only needs a device file to hand out by
                # index; it sets CUDA_VISIBLE_DEVICES from that index (a regular file it refuses)
                dev = tmp / "gpu" / n.name / f"nvidia{i}"
                dev.parent.mkdir(exist_ok=True)
                os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, _MINORS[i % len(_MINORS)]))
                gres.append(f"NodeName={n.name} Name=gpu Type={n.gpu_type} File={dev}")
        (tmp / "gres.conf").write_text("\n".join(gres) + "\n")
        stack.enter_context(_munge(tmp, stack))
        cluster = Cluster(dir=tmp, conf=conf, nodes=list(nodes), addresses=addresses, netns=names)
        env = cluster.env
        ctld_log = tmp / "slurmctld.log"
        subprocess.run(["slurmctld", "-i", "-f", str(conf)], env=env, check=True, capture_output=True, timeout=30)
        _wait(lambda: _read_pid(tmp / "slurmctld.pid") is not None, "slurmctld", ctld_log)
        pid = _read_pid(tmp / "slurmctld.pid")
        assert pid is not None
        stack.callback(_stop, pid)
        cluster.pids.append(pid)
        for n in nodes:
            argv = ["slurmd", "-N", n.name, "-f", str(conf)]
            if n.name in names:
                argv = ["nsenter", f"--net=/run/netns/{names[n.name]}", *argv]
            subprocess.run(argv, env=env, check=True, capture_output=True, timeout=30)
            pidfile = tmp / f"slurmd-{n.name}.pid"
            _wait(lambda p=pidfile: _read_pid(p) is not None, f"slurmd {n.name}", tmp / f"slurmd-{n.name}.log")
            npid = _read_pid(pidfile)
            assert npid is not None
            stack.callback(_stop, npid)
            cluster.pids.append(npid)

        def idle() -> bool:
            out = cluster.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split("\n")
            states = dict(line.split() for line in out if len(line.split()) == 2)
            return len(states) == len(nodes) and all(s in ("idle", "mix", "alloc") for s in states.values())

        _wait(idle, "every node idle in sinfo", ctld_log)
        stack.callback(_cancel_all, cluster)
        yield cluster


def _cancel_all(cluster: Cluster) -> None:
    cluster.run("scancel", "--full", "-u", "root", check=False)
