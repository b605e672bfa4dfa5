"""A real OpenSSH server for tests: generated host and client keys, a temp dir, stopped by pid.

``start_sshd(tmp, address="127.0.0.1")`` starts ``/usr/sbin/sshd -D`` listening on ``address``
and a free port (``port=`` picks one), as this user (root or not: a non-root server logs in
only its own user), public-key login only, with the sftp subsystem. ``netns=("ip", "netns", "exec", "ns1")`` runs it inside a network namespace the
caller made (the address then belongs to that namespace). The returned :class:`Sshd` names
the address, port, host-key fingerprint (``SHA256:…`` as ``ssh-keygen -l`` prints it), a
``known_hosts`` line, the client key, and stops the server (and every session it forked) by pid.
On 127.0.0.1 the server runs with this user's ``~/.bashrc`` replaced, in its own mount
namespace, by the variables that file sets (:func:`_quick_rc`): the same PATH, without the
0.1–0.8 s of pyenv set-up that every SSH command would otherwise spend here.

Tests that need sshd and cannot have it skip with the reason (:func:`sshd_missing`).
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SSHD", "Sshd", "start_sshd", "sshd_missing", "free_port", "keygen", "fingerprint_of"]

SSHD = "/usr/sbin/sshd"
_READY_TIMEOUT = 15.0


def sshd_missing() -> str | None:
    """Why no sshd can be started here, or None."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt-get install -y openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not on PATH"
    return None  # as root or not: a non-root sshd serves its own user (no privilege separation)


def free_port(address: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> Path:
    """A passphrase-less key pair at ``path`` / ``path.pub``."""
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", f"relgate-test-{path.name}", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    return path


def fingerprint_of(pub: Path) -> str:
    """``SHA256:…`` of a public key file, as ``ssh-keygen -l`` prints it."""
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], check=True, capture_output=True,
                         text=True).stdout
    return out.split()[1]


@dataclass(kw_only=True)
class Sshd:
    address: str
    port: int
    dir: Path
    host_key: Path  # private host key; ``host_key.with_suffix(".pub")`` is its public half
    host_key_fingerprint: str
    known_hosts_line: str
    client_key: Path
    user: str
    pid: int
    log: Path
    _proc: subprocess.Popen[bytes] = field(repr=False)

    def write_known_hosts(self, path: Path) -> Path:
        path.write_text(self.known_hosts_line + "\n")
        return path

    def host_file(self, path: Path, *, name: str = "gpu1", known_hosts: str = "known_hosts",
                  extra: str = "") -> Path:
        """A ``hosts/NAME.toml`` for this server (known_hosts written beside it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.write_known_hosts(path.parent / known_hosts)
        path.write_text(
            "[host]\n"
            f'name = "{name}"\nkind = "ssh"\naddress = "{self.address}"\nport = {self.port}\n'
            f'user = "{self.user}"\nidentity = "{self.client_key}"\nknown_hosts = "{known_hosts}"\n'
            f'workdir = "{self.dir / "work"}"\n' + extra)
        return path

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes this server forked (descendants of its pid)."""
        return _descendants(self.pid)

    def kill_sessions(self) -> None:
        """SIGKILL every connection's sshd: clients see the connection drop mid-command."""
        for pid in self.session_pids():
            try:
                with open(f"/proc/{pid}/comm") as fh:
                    if "sshd" not in fh.read():
                        continue
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, FileNotFoundError):
                pass

    def stop(self) -> None:
        """Stop the listener and the sessions it forked (by pid); idempotent."""
        if self._proc.poll() is None:
            sessions = self.session_pids()
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            for pid in sessions:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def start_sshd(tmp: Path, address: str = "127.0.0.1", *, port: int | None = None,
               netns: Sequence[str] = (), host_key: Path | None = None,
               client_key: Path | None = None, extra_config: str = "", sftp: bool = True,
               quick_rc: bool = True) -> Sshd:
    """Start sshd on ``address``; ``netns`` is an ``ip netns exec NAME`` prefix (argv) or empty.

    ``host_key``/``client_key`` reuse existing keys (to restart a server with the same or a
    changed identity); by default both are generated under ``tmp``. ``sftp=False`` leaves
    ``Subsystem sftp`` out, as locked-down hosts do: the server then refuses every SFTP
    session. ``quick_rc=False`` keeps this user's real ``~/.bashrc`` for the sessions (a bench
    that measures a host as it is). A free port picked here can be taken before sshd binds it
    (another pytest-xdist worker, another program): then a new one is picked, up to three times.
    """
    for attempt in range(3):
        try:
            return _start_sshd(tmp, address, port=port, netns=netns, host_key=host_key, client_key=client_key,
                               extra_config=extra_config, sftp=sftp, quick_rc=quick_rc)
        except _PortTaken:
            if port is not None or attempt == 2:
                raise
            host_key, client_key = tmp / "ssh_host_ed25519_key", tmp / "client_ed25519"  # made by the first try
    raise AssertionError("unreachable")


class _PortTaken(RuntimeError):
    pass


_SSHD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # what sshd gives a session
_rc_cache: list[str | None] = []


def _quick_rc() -> str | None:
    """This user's ``~/.bashrc`` as its outcome: the variables it sets in an SSH session, without
    running it (what it puts before or after a variable's value, PATH's, it still adds to
    whatever value the session brings: sshd's ``SetEnv``, a host file's own). bash reads that file for every command sshd runs; here
    it is this machine's pyenv set-up (``eval "$(pyenv init -)"``: 0.1 s per command on an
    idle machine, 0.8 s on a loaded one), which a GPU box would not run. None where there is
    no such file (nothing to replace)."""
    if _rc_cache:
        return _rc_cache[0]
    rc = Path.home() / ".bashrc"
    text = None
    if rc.is_file():
        base = {"HOME": str(Path.home()), "PATH": _SSHD_PATH, "USER": os.environ.get("USER", "root")}

        def env_after(script: str) -> dict[str, str]:
            out = subprocess.run(["bash", "-c", f"{script}env -0"], env=base, capture_output=True, timeout=60).stdout
            return dict(item.split("=", 1) for item in out.decode(errors="replace").split("\0") if "=" in item)

        before, after = env_after(""), env_after(f". {shlex.quote(str(rc))} >/dev/null 2>&1; ")
        skip = {"SHLVL", "_", "PWD", "OLDPWD"}
        lines = []
        for k, v in sorted(after.items()):
            if k in skip or before.get(k) == v or not k.isidentifier():
                continue
            old = before.get(k)
            if old and v.endswith(old):  # prepended to what the session had (PATH): keep doing so
                lines.append(f'export {k}={shlex.quote(v[: -len(old)])}"${k}"')
            elif old and v.startswith(old):
                lines.append(f'export {k}="${k}"{shlex.quote(v[len(old):])}')
            else:
                lines.append(f"export {k}={shlex.quote(v)}")
        text = "# tests/sshd_support.py: what ~/.bashrc sets, without running it\n" + "\n".join(lines) + "\n"
    _rc_cache.append(text)
    return text


def _rc_prefix(tmp: Path) -> tuple[str, ...]:
    """An argv prefix that runs sshd in a mount namespace of its own (a slave of ours: nothing
    leaks back) with ``~/.bashrc`` replaced by :func:`_quick_rc`'s outcome; empty where that
    cannot be done (no file, no ``unshare``, not root): then the real file runs."""
    text = _quick_rc()
    if text is None or shutil.which("unshare") is None or os.geteuid() != 0:
        return ()
    quick = tmp / "quick-bashrc"
    quick.write_text(text)
    rc = Path.home() / ".bashrc"
    return ("unshare", "-m", "--propagation", "slave", "sh", "-c", f'mount --bind "$0" {shlex.quote(str(rc))} && '
            'exec "$@"', str(quick))


def _start_sshd(tmp: Path, address: str, *, port: int | None, netns: Sequence[str], host_key: Path | None,
                client_key: Path | None, extra_config: str, sftp: bool, quick_rc: bool) -> Sshd:
    why = sshd_missing()
    if why:
        raise RuntimeError(why)
    tmp.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation's chroot
    host_key = host_key or keygen(tmp / "ssh_host_ed25519_key")
    client_key = client_key or keygen(tmp / "client_ed25519")
    auth = tmp / "authorized_keys"
    auth.write_text(Path(str(client_key) + ".pub").read_text())
    auth.chmod(0o600)
    if port is None:
        port = free_port(address) if not netns else 22
    user = pwd.getpwuid(os.geteuid()).pw_name  # a non-root sshd logs in only its own user
    config = tmp / "sshd_config"
    listen = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    config.write_text(
        f"ListenAddress {listen}\n"
        f"HostKey {host_key}\n"
        f"PidFile {tmp / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {auth}\n"
        "PermitRootLogin prohibit-password\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "UseDNS no\n"
        "PrintMotd no\n"
        "PrintLastLog no\n"
        "MaxStartups 100:30:200\n"
        "MaxSessions 100\n"
        "LogLevel VERBOSE\n"
        + ("Subsystem sftp internal-sftp\n" if sftp else "")
        + extra_config)
    log = tmp / "sshd.log"
    log.write_text("")
    # Namespace hosts hide ~/.bashrc in their own mount namespace (netns_support._prefix).
    rc = _rc_prefix(tmp) if quick_rc and not netns else ()
    argv = [*netns, *rc, SSHD, "-D", "-e", "-f", str(config), "-E", str(log)]
    check = subprocess.run([*netns, SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(f"sshd -t refused {config}: {check.stderr.strip()}")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + _READY_TIMEOUT
    while "Server listening" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill() if proc.poll() is None else None
            proc.wait()
            text = log.read_text().strip()
            kind = _PortTaken if "Address already in use" in text else RuntimeError
            raise kind(f"sshd on {listen} did not start: {text[-500:]}")
        time.sleep(0.05)
    pub = Path(str(host_key) + ".pub")
    kind, blob = pub.read_text().split()[:2]
    host = address if port == 22 else f"[{address}]:{port}"
    return Sshd(address=address, port=port, dir=tmp, host_key=host_key, host_key_fingerprint=fingerprint_of(pub),
                known_hosts_line=f"{host} {kind} {blob}", client_key=client_key, user=user, pid=proc.pid,
                log=log, _proc=proc)
