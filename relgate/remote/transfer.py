"""Files to and from an SSH host: SFTP, or the exec channel where the host's sshd offers no
SFTP subsystem (locked-down machines leave ``Subsystem sftp`` out of ``sshd_config``).

The exec channel streams the file through ``cat``: an upload lands in a temporary file
beside the target and is moved into place only when its sha256, computed on the host
(``sha256sum``, or ``shasum -a 256`` on a Mac), is the one relgate sent; a download carries
the host's sha256 of the file beside its bytes, and a file whose bytes hash otherwise is
refused. ``transfer = "exec"`` in the host file uses the exec channel only; by default SFTP is
tried first and, once the host has refused the subsystem, the exec channel is used for every
later transfer of that connection's host.
"""

from __future__ import annotations

import hashlib
import shlex
import socket
from pathlib import Path
from typing import Any, Protocol

import paramiko

from relgate.core.files import sha256_file
from relgate.manifest.specs import HostSpec
from relgate.remote.errors import SshError

__all__ = ["put", "get", "NoSftp"]

_CHUNK = 1 << 18
# OpenSSL's digest first (it uses the CPU's SHA instructions: ≈10× coreutils' sha256sum here)
_HASH = "{ openssl dgst -sha256 -r || sha256sum || shasum -a 256; } 2>/dev/null"
_NOFILE = "@relgate-nofile"
_DIGEST = "@relgate-sha256 "
_TIMEOUT = 600.0


class SshExecutor(Protocol):
    """What a transfer needs of :class:`relgate.remote.ssh.SshExecutor` (typed here, so the
    executor may import this module without a circle)."""

    spec: HostSpec
    no_sftp: str | None

    def connection(self) -> Any: ...

    def transport(self) -> paramiko.Transport: ...

    def with_env(self, command: str) -> str: ...


class NoSftp(SshError):
    """The host's sshd refused the SFTP subsystem (the connection itself is fine)."""


def _sftp(ex: SshExecutor) -> paramiko.SFTPClient:
    """An SFTP session, or :class:`NoSftp` when the host refuses the subsystem."""
    conn = ex.connection()
    try:
        return conn.sftp()
    except (paramiko.SSHException, EOFError) as exc:
        transport = conn.client.get_transport()
        if transport is not None and transport.is_active():  # the subsystem was refused, not the connection
            raise NoSftp(f"{ex.spec.name}'s sshd offers no sftp subsystem ({exc})") from None
        raise


def _channel(ex: SshExecutor) -> bool:
    """True when this transfer goes over the exec channel."""
    return ex.spec.transfer == "exec" or ex.no_sftp is not None


def _fallback_failed(ex: SshExecutor, exc: SshError) -> SshError:
    if ex.spec.transfer == "exec":
        return SshError(f"{exc} (transfer = \"exec\" in {ex.spec.source.name})")
    return SshError(f"{ex.no_sftp}; the exec channel did not do either: {exc}. Enable the subsystem there "
                    "(Subsystem sftp internal-sftp in sshd_config) or fix what the exec channel says")


def put(ex: SshExecutor, local: Path, remote: str) -> str:
    """Upload ``local`` to ``remote``; the channel it went over (``"sftp"`` or ``"exec"``)."""
    if not _channel(ex):
        try:
            _sftp(ex).put(str(local), remote)
            return "sftp"
        except NoSftp as exc:
            ex.no_sftp = str(exc)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"{ex.spec.name}: cannot upload {local.name} to {remote}: {exc}") from None
    try:
        _put_exec(ex, local, remote)
    except SshError as exc:
        raise _fallback_failed(ex, exc) from None
    return "exec"


def get(ex: SshExecutor, remote: str, local: Path) -> bool:
    """Fetch ``remote`` into ``local``; False when it does not exist on the host."""
    if not _channel(ex):
        try:
            sftp = _sftp(ex)
            try:
                sftp.stat(remote)
            except FileNotFoundError:
                return False
            sftp.get(remote, str(local))
            return True
        except NoSftp as exc:
            ex.no_sftp = str(exc)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"{ex.spec.name}: cannot fetch {remote}: {exc}") from None
    try:
        return _get_exec(ex, remote, local)
    except SshError as exc:
        raise _fallback_failed(ex, exc) from None



def _open(ex: SshExecutor, command: str) -> Any:
    try:
        chan = ex.transport().open_session()
        chan.settimeout(_TIMEOUT)
        chan.exec_command(ex.with_env(command))
        return chan
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise SshError(f"{ex.spec.name}: cannot open an exec channel: {exc or type(exc).__name__}") from None


def _put_exec(ex: SshExecutor, local: Path, remote: str) -> None:
    """``cat > tmp``, the host's sha256 of tmp checked against ours, then ``mv tmp remote``."""
    want = sha256_file(local)
    q = shlex.quote
    tmp = f"{remote}.relgate-part"
    chan = _open(ex, f"cat > {q(tmp)} || exit 4; h=$({_HASH} < {q(tmp)} | cut -c1-64); "
                     f"if [ \"$h\" = {want} ]; then mv -f {q(tmp)} {q(remote)}; exit $?; fi; "
                     f"rm -f {q(tmp)}; printf '{_DIGEST}%s\\n' \"$h\" >&2; exit 3")
    try:
        with open(local, "rb") as fh:
            for block in iter(lambda: fh.read(_CHUNK), b""):
                chan.sendall(block)
        chan.shutdown_write()
        out = _drain(chan)
        code = chan.recv_exit_status()
    except (socket.timeout, TimeoutError):
        raise SshError(f"{ex.spec.name}: no answer within {_TIMEOUT:g} s uploading {local.name}") from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise SshError(f"{ex.spec.name}: connection lost uploading {local.name} ({exc or type(exc).__name__})") \
            from None
    finally:
        chan.close()
    if code == 3:
        got = _digest_of(out)
        raise SshError(f"{ex.spec.name}: {local.name} reached {tmp} with sha256 {got}, not {want}; nothing was kept"
                       if got else f"{ex.spec.name}: no openssl, sha256sum or shasum there to verify {local.name}; "
                                   "nothing was kept")
    if code != 0:
        raise SshError(f"{ex.spec.name}: cannot upload {local.name} to {remote} over the exec channel "
                       f"(exit {code}): {out.strip()[-300:]}")


def _get_exec(ex: SshExecutor, remote: str, local: Path) -> bool:
    """The host's sha256 of ``remote`` on stderr, its bytes on stdout; they must agree."""
    q = shlex.quote
    chan = _open(ex, f"[ -f {q(remote)} ] || {{ echo {_NOFILE} >&2; exit 3; }}; "
                     f"h=$({_HASH} < {q(remote)} | cut -c1-64); printf '{_DIGEST}%s\\n' \"$h\" >&2; "
                     f"exec cat {q(remote)}")
    digest = hashlib.sha256()
    err = bytearray()
    try:
        with open(local, "wb") as fh:
            while True:
                data = chan.recv(_CHUNK)
                if chan.recv_stderr_ready():
                    err += chan.recv_stderr(65536)
                if not data:
                    break
                fh.write(data)
                digest.update(data)
        code = chan.recv_exit_status()
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
    except (socket.timeout, TimeoutError):
        raise SshError(f"{ex.spec.name}: no answer within {_TIMEOUT:g} s fetching {remote}") from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise SshError(f"{ex.spec.name}: connection lost fetching {remote} ({exc or type(exc).__name__})") from None
    finally:
        chan.close()
    text = err.decode("utf-8", "replace")
    if code == 3 and _NOFILE in text:
        local.unlink(missing_ok=True)
        return False
    want = _digest_of(text)
    if code != 0 or not want or want != digest.hexdigest():
        local.unlink(missing_ok=True)
        why = (f"exit {code}: {text.strip()[-300:]}" if code != 0 else
               "no openssl, sha256sum or shasum there to verify it" if not want else
               f"its bytes hash to {digest.hexdigest()}, the host says {want}")
        raise SshError(f"{ex.spec.name}: cannot fetch {remote} over the exec channel ({why}); nothing was kept")
    return True


def _drain(chan: Any) -> str:
    out = bytearray()
    while True:
        data = chan.recv(65536)
        while chan.recv_stderr_ready():
            out += chan.recv_stderr(65536)
        if not data:
            break
        out += data
    while chan.recv_stderr_ready():
        out += chan.recv_stderr(65536)
    return out.decode("utf-8", "replace")


def _digest_of(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(_DIGEST):
            value = line[len(_DIGEST):].strip()
            return value if len(value) == 64 else None
    return None
