"""The SSH executor: the executor seam of :mod:`relgate.run.executor` over one kept connection.

Built on Fabric's ``Connection`` (paramiko underneath), with the host-key policy set on every
client: the host file's ``known_hosts`` is loaded and an unknown or changed key is refused
with a message naming the host, the key's fingerprint and how to trust it. Fabric accepts
unknown keys by default; this module never does.

A command runs in its own process group on the host (``setsid``, or perl's ``setpgrp`` where
there is none, as on macOS); its pid is reported on the channel's stderr, so a timeout or an
interrupt ends the whole group, and a watchdog on the host ends it when the SSH session that
started it is gone (a dropped connection). An exit status of 129–159 is read as the signal
that killed the command (128 + N, as the shell reports it), so an OOM kill is an ``error``
and a segfault a ``fail``, as locally. Output is read from the channel in large chunks
and written to the log sink as it arrives, redacted line by line, in bounded memory.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shlex
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

import paramiko
from fabric import Config, Connection

from relgate.core.redact import Redactor, is_secret_name, redact_env
from relgate.manifest.specs import HostSpec
from relgate.remote.errors import SshError
from relgate.run.executor import TAIL_LINES, CommandRequest, CommandResult, Interrupted, LogSink
from relgate.run.hosts import Host

__all__ = ["SshError", "SshExecutor", "fingerprint", "connect", "wrapper_script"]

_CHUNK = 1 << 20
_WINDOW = 1 << 22  # 4 MiB: room for bulk output to flow (the default is 2 MiB), and the bound on what paramiko buffers
_MAX_PACKET = 1 << 18
_HOLD = 4096  # bytes of an unfinished line kept back, so a secret split across chunks is still hidden
_LINE_CAP = 1 << 16  # an unfinished line longer than this is written anyway (bounded memory)
_KILL_GRACE = 5.0
_PGID = "@relgate-pgid "
_NOCWD = "@relgate-nocwd"

# paramiko logs a failed handshake at ERROR with a traceback; the error reaches the person once,
# as the step's reason, not again on stderr through logging's last-resort handler.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:…`` as ``ssh-keygen -l`` and OpenSSH's own prompts print it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def _keyscan(spec: HostSpec) -> str:
    return f"ssh-keyscan -p {spec.port} {spec.address} >> {spec.known_hosts}"


class _Refuse(paramiko.MissingHostKeyPolicy):
    """paramiko's ``RejectPolicy``, with a message a person can act on."""

    def __init__(self, spec: HostSpec) -> None:
        self._spec = spec

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        spec = self._spec
        raise SshError(
            f"{spec.name} ({spec.address}:{spec.port}): unknown host key {key.get_name()} {fingerprint(key)}, "
            f"not in {spec.known_hosts}; check the fingerprint on the host (ssh-keygen -lf "
            f"/etc/ssh/ssh_host_*_key.pub), then trust it: {_keyscan(spec)}")


def _transport_factory(sock: Any, **kwargs: Any) -> paramiko.Transport:
    """paramiko's Transport, preferring AES-GCM where the server offers it: an AEAD cipher done
    in one C call per packet, where CTR + a separate HMAC costs two (bulk output is bound by it)."""
    transport = paramiko.Transport(sock, **kwargs)
    options = transport.get_security_options()
    gcm = tuple(c for c in options.ciphers if c.endswith("-gcm@openssh.com"))
    options.ciphers = gcm + tuple(c for c in options.ciphers if c not in gcm)
    return transport


def connect(spec: HostSpec) -> Connection:
    """An open Fabric connection with strict host keys, or :class:`SshError`."""
    if spec.known_hosts is None:
        raise SshError(f"{spec.name}: no known_hosts file in {spec.source}; host keys are never accepted blindly")
    kwargs: dict[str, Any] = {"banner_timeout": spec.connect_timeout, "auth_timeout": spec.connect_timeout,
                              "transport_factory": _transport_factory}
    if spec.identity:
        kwargs.update(key_filename=[spec.identity], allow_agent=False, look_for_keys=False)
    config = Config(overrides={"load_ssh_configs": False, "run": {"hide": True}})
    conn = Connection(spec.address, user=spec.user, port=spec.port, config=config,
                      connect_timeout=max(1, int(round(spec.connect_timeout))), connect_kwargs=kwargs)
    client = conn.client
    client.set_missing_host_key_policy(_Refuse(spec))
    try:
        client.load_host_keys(str(spec.known_hosts))
    except (OSError, paramiko.SSHException) as exc:
        raise SshError(f"{spec.name}: cannot read known_hosts {spec.known_hosts}: {exc}") from None
    where = f"{spec.name} ({spec.user + '@' if spec.user else ''}{spec.address}:{spec.port})"
    try:
        conn.open()
    except SshError:
        raise
    except paramiko.BadHostKeyException as exc:
        raise SshError(
            f"{where}: host key CHANGED: it offers {exc.key.get_name()} {fingerprint(exc.key)}, {spec.known_hosts} "
            f"expects {fingerprint(exc.expected_key)}; if the host was really re-keyed, check the new "
            f"fingerprint on the host, remove the old line from {spec.known_hosts}, then: {_keyscan(spec)}") from None
    except paramiko.AuthenticationException as exc:
        raise SshError(f"{where}: authentication failed ({exc}); identity {spec.identity or 'agent/default keys'}") \
            from None
    except (TimeoutError, socket.timeout):
        raise SshError(f"{where}: no answer within the connect timeout ({spec.connect_timeout:g} s)") from None
    except paramiko.SSHException as exc:
        transport = client.get_transport()
        saved = getattr(transport, "saved_exception", None) if transport is not None else None
        text = str(saved or exc)
        if "banner" in text.lower() or "no existing session" in text.lower():
            text = (f"no SSH handshake within the connect timeout ({spec.connect_timeout:g} s): the host "
                    "accepted the connection but did not answer, or closed it")
        raise SshError(f"{where}: {text}") from None
    except OSError as exc:
        raise SshError(f"{where}: cannot connect: {exc.strerror or exc}") from None
    transport = client.get_transport()
    if transport is not None:
        transport.set_keepalive(max(1, int(spec.keepalive)))
        _no_delay(transport.sock)
    return conn


def _no_delay(sock: Any) -> None:
    """Turn Nagle's algorithm off on the connection's socket, as OpenSSH's client does for
    interactive sessions. A command on a kept connection is a few small messages each way
    (open the channel, the exec request, the script on stdin, the close); with Nagle on, one
    of them waits for the host's delayed ACK of the one before (40 ms on Linux), which was
    most of a short command's time here, raw paramiko's as much as relgate's. Bulk output is
    unaffected (full packets go out at once either way). A socket-like object that is not a
    TCP socket (a proxy command) is left as it is."""
    try:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, OSError):
        pass


def wrapper_script(request: CommandRequest, cwd: str, env: Mapping[str, str]) -> str:
    """The POSIX sh script (sent on stdin, so no secret shows in the host's process list) that
    runs the command in its own process group, reports the group on stderr, and ends the
    group when the SSH channel that started it is gone.

    The script is one ``{ … }`` block, so the host's shell reads all of it before it runs any
    of it; relgate then keeps the channel's stdin open and sends nothing more. The watchdog, a
    subshell of the script (no program of its own), blocks reading that stdin: it sees EOF only
    when the channel or the connection is gone (sshd closes the pipe, or dies), and then ends
    the group, at once. Per command the host starts ``/bin/sh``, ``setsid`` and the command;
    nothing polls."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    if request.argv is not None:
        command = shlex.join(request.argv)
    else:
        command = "/bin/sh -c " + shlex.quote(request.shell or "")
    return (
        "{\n"
        + exports
        + f"cd {shlex.quote(cwd)} 2>/dev/null || {{ echo '{_NOCWD}' >&2; exit 127; }}\n"
        "if command -v setsid >/dev/null 2>&1; then set -- setsid\n"
        "else set -- perl -e 'setpgrp(0,0); exec @ARGV or die \"cannot run $ARGV[0]: $!\\n\"'; fi\n"
        "exec 3<&0\n"  # the channel's stdin, for the watchdog (a background job's own stdin is /dev/null)
        f'"$@" {command} </dev/null 3<&- 2>&1 &\n'
        "pid=$!\n"
        f"printf '{_PGID}%s\\n' \"$pid\" >&2\n"
        "( trap '' HUP; read -r _ <&3\n"
        "  kill -TERM -\"$pid\" 2>/dev/null && { sleep 2; kill -KILL -\"$pid\" 2>/dev/null; }\n"
        ") </dev/null >/dev/null 2>&1 &\n"
        "watch=$!\n"
        "exec 3<&-\n"
        'wait "$pid"; rc=$?\n'
        'kill "$watch" 2>/dev/null\n'
        "exit $rc\n"
        "}\n"
    )


def kill_group_script(pgid: int, grace: float = _KILL_GRACE) -> str:
    steps = int(grace * 10)
    return (f"kill -TERM -{pgid} 2>/dev/null; i=0; while kill -0 -{pgid} 2>/dev/null && [ $i -lt {steps} ]; "
            f"do sleep 0.1; i=$((i+1)); done; kill -KILL -{pgid} 2>/dev/null; true")


class _Lines:
    """Decode, redact and write output as it arrives, whole lines at a time; only a bounded
    unfinished line is held back (as bytes: a cut at a newline never splits a character)."""

    def __init__(self, sink: LogSink, redact: Redactor) -> None:
        self._sink, self._redact = sink, redact
        self._held = b""
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)

    def feed(self, data: bytes) -> None:
        buf = self._held + data if self._held else data
        cut = buf.rfind(b"\n") + 1
        if not cut and len(buf) > _LINE_CAP:
            cut = len(buf) - _HOLD
            while cut > 0 and (buf[cut] & 0xC0) == 0x80:  # not inside a UTF-8 sequence
                cut -= 1
        if cut:
            self._held = buf[cut:]
            self._emit(buf[:cut].decode("utf-8", "replace"))
        else:
            self._held = buf

    def close(self) -> None:
        rest, self._held = self._held, b""
        if rest:
            self._emit(rest.decode("utf-8", "replace"))

    def _emit(self, text: str) -> None:
        text = self._redact(text)
        self._sink.write(text)
        # The last TAIL_LINES lines (of the last 2 * _LINE_CAP characters), found by rfind from
        # the end: splitting the whole chunk into lines cost more than the rest of this path.
        floor = max(0, len(text) - 2 * _LINE_CAP)
        start = len(text) - (text[-1:] == "\n")
        for _ in range(TAIL_LINES):
            start = text.rfind("\n", floor, start)
            if start < 0:
                break
        self.tail.extend(text[floor if start < 0 else start + 1:].splitlines(keepends=True))


class SshExecutor:
    """Runs commands on one SSH host over one kept connection (reopened after a loss)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.spec = host.spec
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self._stop: int | None = None  # the signal relgate was told to stop by (see interrupt)
        self.no_sftp: str | None = None  # why SFTP is out, once the host refused the subsystem

    # --- the connection -------------------------------------------------------------------

    def connection(self) -> Connection:
        with self._lock:
            if self._conn is not None and self._conn.is_connected:
                return self._conn
            self._conn = None
            self._conn = connect(self.spec)
            return self._conn

    def interrupt(self, signum: int) -> None:
        """relgate was told to stop (``signum``) while another thread runs a command here (a
        fleet's worker): within a quarter of a second that command's remote process group is
        ended and :meth:`run` raises :class:`Interrupted` in its own thread, so the step is
        recorded as interrupted, as a local one is; no later command starts."""
        self._stop = signum

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def transport(self) -> paramiko.Transport:
        """The open connection's transport (connecting first when needed). Raises SshError."""
        return self._transport()

    def _transport(self) -> paramiko.Transport:
        transport = self.connection().client.get_transport()
        if transport is None or not transport.is_active():
            raise SshError(f"{self.spec.name}: the connection is closed")
        return transport

    def capture(self, command: str, *, timeout: float = 60.0, limit: int = 1 << 20) -> tuple[int | None, str]:
        """Run a short shell command with the host file's ``env`` (its PATH finds git, nvcc …); its
        exit status and (bounded) stdout+stderr. Raises SshError."""
        try:
            chan = self._transport().open_session()
            chan.set_combine_stderr(True)
            chan.settimeout(timeout)
            chan.exec_command(self.with_env(command))
            out = bytearray()
            while True:
                data = chan.recv(65536)
                if not data:
                    break
                if len(out) < limit:
                    out += data[: limit - len(out)]
            code = chan.recv_exit_status()
            chan.close()
        except (socket.timeout, TimeoutError):
            raise SshError(f"{self.spec.name}: no answer within {timeout:g} s to {command[:60]!r}") from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._drop()
            raise SshError(f"{self.spec.name}: connection lost ({exc or type(exc).__name__})") from None
        return (None if code == -1 else code), out.decode("utf-8", "replace")

    def with_env(self, command: str) -> str:
        """``command`` with the host file's ``env`` exported first (PATH to a toolkit, …)."""
        return "".join(f"export {k}={shlex.quote(v)}; " for k, v in self.spec.env.items()) + command

    def put(self, local: Path, remote: str) -> str:
        """Upload a file (SFTP, or the exec channel: :mod:`relgate.remote.transfer`); the
        channel it went over. Raises SshError."""
        from relgate.remote import transfer

        return transfer.put(self, local, remote)

    def get(self, remote: str, local: Path) -> bool:
        """Fetch a file; False when it does not exist on the host. Raises SshError otherwise."""
        from relgate.remote import transfer

        return transfer.get(self, remote, local)

    def _drop(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is gone either way
                pass

    # --- the executor seam ----------------------------------------------------------------

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        env = {**self.spec.env, **request.env}
        redact = Redactor([*(v for k, v in env.items() if is_secret_name(k)), *request.secrets()])
        lines = _Lines(sink, redact)
        started = datetime.now(timezone.utc)
        t0 = time.monotonic()
        timeout = request.timeout if request.timeout is not None else self.spec.command_timeout

        def result(**kw: object) -> CommandResult:
            lines.close()
            base = dict(host=self.host.name, command=redact(request.display()), cwd=str(request.cwd),
                        env=redact_env(dict(request.env)), started=started, duration=time.monotonic() - t0,
                        log_path=sink.path, tail="".join(lines.tail), exit_code=None, signal=None,
                        timed_out=False, spawn_error=None)
            base.update(kw)
            return CommandResult(**base)  # type: ignore[arg-type]

        def say(message: str) -> None:
            lines.feed(f"\n# relgate: {message}\n".encode())

        if self._stop is not None:
            raise Interrupted(self._stop)
        try:
            chan = self._transport().open_session(window_size=_WINDOW, max_packet_size=_MAX_PACKET)
            chan.exec_command("exec /bin/sh -s")
            # stdin stays open: its EOF is the host-side watchdog's sign that the channel is gone
            chan.sendall(wrapper_script(request, str(PurePosixPath(request.cwd)), env).encode())
        except SshError as exc:
            say(str(exc))
            return result(spawn_error=str(exc))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._drop()
            message = f"{self.spec.name}: cannot start the command: {exc or type(exc).__name__}"
            say(message)
            return result(spawn_error=message)

        control = bytearray()
        pgid: int | None = None
        timed_out = False
        deadline = None if timeout is None else t0 + timeout
        chan.settimeout(0.25)
        try:
            while True:
                try:
                    data = chan.recv(_CHUNK)
                except socket.timeout:
                    data = None
                if chan.recv_stderr_ready():
                    control += chan.recv_stderr(65536)
                    if pgid is None and _PGID.encode() in control:
                        pgid = _parse_pgid(control)
                if data:
                    lines.feed(data)
                elif data == b"":
                    break
                if deadline is not None and not timed_out and time.monotonic() > deadline:
                    timed_out = True
                    say(f"timed out after {timeout:g} s; ending the remote process group {pgid}")
                    self._kill(pgid)
                    deadline = time.monotonic() + _KILL_GRACE + 5  # drain what the group still prints
                elif timed_out and deadline is not None and time.monotonic() > deadline:
                    break
                if self._stop is not None:
                    raise Interrupted(self._stop)  # the group is ended below
            chan.status_event.wait(timeout=30)  # set by the exit status, or by the channel closing
            while chan.recv_stderr_ready():
                control += chan.recv_stderr(65536)
        except BaseException:
            # Ctrl-C, SIGTERM (Interrupted, here or from interrupt()) or a crash: never leave
            # the command behind.
            self._kill(pgid or _await_pgid(chan, control))
            raise
        pgid = pgid or _parse_pgid(control)
        transport = chan.get_transport()
        status = chan.exit_status if chan.exit_status_ready() else -1
        if transport is None or not transport.is_active():
            message = self._lost(pgid)
            say(message)
            return result(spawn_error=message, timed_out=timed_out)
        chan.close()
        if status == -1:  # the session ended without a status: the wrapper itself was killed there
            self._kill(pgid)
            message = f"the command's shell on {self.spec.name} ended without an exit status (killed there?)"
            say(message)
            return result(spawn_error=message, timed_out=timed_out)
        if _NOCWD.encode() in control:
            message = f"cannot run on {self.spec.name}: working directory {request.cwd} does not exist there"
            say(message)
            return result(spawn_error=message)
        if timed_out:
            return result(timed_out=True)
        if 128 < status < 128 + 32:  # sh's status of a command killed by a signal, as ssh reports it
            return result(signal=status - 128)
        return result(exit_code=status)

    def _kill(self, pgid: int | None) -> None:
        if pgid is None:
            return
        try:
            self.capture(kill_group_script(pgid), timeout=_KILL_GRACE + 10)
        except SshError:
            pass

    def _lost(self, pgid: int | None) -> str:
        """A dropped connection: reconnect once to end the command's process group."""
        self._drop()
        base = f"connection to {self.spec.name} lost while the command ran (the partial log is kept)"
        if pgid is None:
            return base
        try:
            self.capture(kill_group_script(pgid, grace=2.0), timeout=self.spec.connect_timeout + 10)
        except SshError as exc:
            return f"{base}; could not reconnect to end process group {pgid} ({exc}); its watchdog ends it"
        return f"{base}; the remote process group {pgid} was ended"


def _await_pgid(chan: paramiko.Channel, control: bytearray, limit: float = 5.0) -> int | None:
    """The command's process group, waiting a little for the line that names it when the
    stop came before it (a stop just after the start must still end the command)."""
    deadline = time.monotonic() + limit
    while True:
        while chan.recv_stderr_ready():
            control += chan.recv_stderr(65536)
        pgid = _parse_pgid(control)
        if pgid is not None or chan.closed or chan.exit_status_ready() or time.monotonic() > deadline:
            return pgid
        time.sleep(0.05)


def _parse_pgid(control: bytes | bytearray) -> int | None:
    for line in bytes(control).decode("utf-8", "replace").splitlines():
        if line.startswith(_PGID) and line[len(_PGID):].strip().isdigit():
            return int(line[len(_PGID):])
    return None
