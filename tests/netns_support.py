"""Separate SSH hosts for tests: one network namespace each, a veth pair to the root namespace,
a real sshd inside (``tests/sshd_support.py``).

``netns_hosts(tmp, 4)`` makes namespaces ``rgNNNNN`` (``ip netns add``), each joined to the
root namespace by a veth pair on its own /30 of 10.241.0.0/16 (root side ``.1``, the host
``.2``, a route to the rest of the pool through the root end, forwarding enabled on the
root ends only), starts sshd on the host address inside the namespace, and yields one
:class:`NetnsHost` per namespace. Everything is torn down by name and pid on exit: the sshd
(and the sessions it forked), any process still inside a namespace we made, the veth
pair, the namespace. Addresses are only ever assigned inside namespaces made here.

Subnets are picked under a lock file, skipping every 10.241.x.y already on an interface, so
test runs of several worktrees side by side never collide. Where namespaces cannot be made
(not root, no ``ip``, a kernel without netns) :func:`netns_missing` says why, for a skip.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from sshd_support import Sshd, sshd_missing, start_sshd

__all__ = ["NetnsHost", "netns_missing", "netns_hosts"]

_POOL = ipaddress.ip_network("10.241.0.0/16")
_LOCK = Path("/run/relgate-test-netns.lock")
_probe_result: list[str | None] = []


@dataclass(kw_only=True)
class NetnsHost:
    netns: str  # the namespace's name (``ip netns exec NAME …``)
    address: str  # the host's address, inside the namespace
    gateway: str  # the root namespace's end of the veth pair
    sshd: Sshd

    def host_file(self, hosts_dir: Path, name: str, extra: str = "") -> Path:
        """``hosts_dir/NAME.toml`` for this host (its known_hosts file beside it)."""
        return self.sshd.host_file(hosts_dir / f"{name}.toml", name=name, known_hosts=f"{name}.known_hosts",
                                   extra=extra)

    def restart_sshd(self) -> None:
        """Stop this host's sshd (if still running) and start it again with the same keys."""
        old = self.sshd
        old.stop()
        self.sshd = start_sshd(old.dir, self.address, port=22, netns=_prefix(old.dir.parent, self.netns),
                               host_key=old.host_key, client_key=old.client_key)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def netns_missing() -> str | None:
    """Why network namespaces with an sshd cannot be made here, or None (probed once)."""
    if _probe_result:
        return _probe_result[0]
    why = sshd_missing()
    if why is None and shutil.which("ip") is None:
        why = "the ip command (iproute2) is not on PATH"
    if why is None:
        name = f"rgprobe{uuid.uuid4().hex[:6]}"
        made = _ip("netns", "add", name, check=False)
        if made.returncode != 0:
            why = f"ip netns add failed: {made.stderr.strip() or made.returncode}"
        else:
            _ip("netns", "del", name, check=False)
    _probe_result.append(why)
    return why


def _used_subnets() -> set[int]:
    """Indexes of the /30s of the pool that any interface of the root namespace already uses."""
    out = _ip("-4", "-o", "addr", "show").stdout
    used = set()
    for match in re.finditer(r"inet (10\.241\.\d+\.\d+)", out):
        offset = int(ipaddress.ip_address(match.group(1))) - int(_POOL.network_address)
        used.add(offset // 4)
    return used


@contextmanager
def _allocation_lock() -> Iterator[None]:
    with open(_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _make_link(index: int) -> tuple[str, str, str]:
    """Namespace ``rgNNNNN`` with the host end of a veth pair; returns (netns, host, gateway)."""
    base = int(_POOL.network_address) + 4 * index
    gateway, address = str(ipaddress.ip_address(base + 1)), str(ipaddress.ip_address(base + 2))
    name = f"rg{index:05d}"
    outer, inner = f"{name}h", f"{name}n"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", name)
        _ip("addr", "add", f"{gateway}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("-n", name, "addr", "add", f"{address}/30", "dev", inner)
        _ip("-n", name, "link", "set", inner, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        # Hosts reach each other (multi-host steps) through the root namespace: a route to the
        # pool in each namespace, and forwarding on our own veth ends only (not system-wide).
        _ip("-n", name, "route", "add", str(_POOL), "via", gateway)
        Path(f"/proc/sys/net/ipv4/conf/{outer}/forwarding").write_text("1\n")
    except BaseException:
        _remove_link(name)
        raise
    return name, address, gateway


def _remove_link(name: str) -> None:
    """End what still runs inside namespace ``name`` (we made it: all of it is ours), then
    remove its veth pair and the namespace."""
    pids = _ip("netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("link", "del", f"{name}h", check=False)  # removes both ends
    _ip("netns", "del", name, check=False)


def _prefix(tmp: Path, name: str) -> tuple[str, ...]:
    """``ip netns exec NAME`` with this user's ``~/.bashrc`` hidden inside the host's own mount
    namespace (``ip netns exec`` makes one, a slave of ours: nothing leaks back). bash reads
    that file for every command sshd runs; here it is this machine's pyenv set-up (0.4 s of
    CPU per command), which separate hosts would not spend on this machine's cores."""
    tmp.mkdir(parents=True, exist_ok=True)
    empty = tmp / "empty-rc"
    empty.touch()
    rc = Path.home() / ".bashrc"
    hide = f'[ -f {rc} ] && mount --bind "$0" {rc}; exec "$@"'
    return ("ip", "netns", "exec", name, "sh", "-c", hide, str(empty))


@contextmanager
def netns_hosts(tmp: Path, count: int) -> Iterator[list[NetnsHost]]:
    """``count`` namespace hosts, each with an sshd on port 22 of its own address."""
    why = netns_missing()
    if why is not None:
        raise RuntimeError(why)
    with ExitStack() as stack:
        links: list[tuple[str, str, str]] = []
        with _allocation_lock():
            used = _used_subnets()
            free = (i for i in range(1, _POOL.num_addresses // 4) if i not in used)
            for _ in range(count):
                link = _make_link(next(free))
                stack.callback(_remove_link, link[0])
                links.append(link)
        hosts = []
        for name, address, gateway in links:
            sshd = start_sshd(tmp / name, address, port=22, netns=_prefix(tmp, name))
            host = NetnsHost(netns=name, address=address, gateway=gateway, sshd=sshd)
            stack.callback(lambda h=host: h.sshd.stop())  # the current one, after any restart
            hosts.append(host)
        yield hosts
