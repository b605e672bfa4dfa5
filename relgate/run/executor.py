"""The executor seam: one request in, output streamed to a sink, one result out.

Local and SSH hosts implement the same :class:`Executor` protocol, so callers never
know where a command ran. Output is redacted before it reaches the sink or the tail.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Protocol

from relgate.core.errors import InputError, Interrupted
from relgate.core.record import record
from relgate.core.redact import Redactor, argv_secrets, display_command, env_secrets, redact_env, shell_secrets
from relgate.run.guard import TAG_VAR, describe, fork_mark, guardian, kill_pids, new_tag, tagged
from relgate.run.hosts import Host

__all__ = [
    "CommandRequest", "CommandResult", "LogSink", "FileSink", "Executor", "LocalExecutor",
    "Interrupted", "LogWriteError", "TAIL_LINES", "kill_grace", "VOLATILE_ENV", "ENV_DIGEST_KEY", "refused",
]

TAIL_LINES = 40
_KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a stopped step's group
_LINE_MAX = 1 << 16  # a longer line reaches the sink in pieces (bounded memory)


@record
class CommandRequest:
    """What to run: an argv, or an explicit shell string; env adds to the host's own."""

    argv: tuple[str, ...] | None = None
    shell: str | None = None
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None

    def __post_init__(self) -> None:
        if (self.argv is None) == (self.shell is None):
            raise ValueError("CommandRequest needs exactly one of argv or shell")
        if self.argv is not None and not self.argv:
            raise ValueError("CommandRequest argv is empty")

    def display(self) -> str:
        """The command as a person would type it, secrets redacted."""
        return display_command(argv=self.argv, shell=self.shell)

    def secrets(self) -> list[str]:
        """Secret values the command line itself carries (``--token=…``, ``--password …``)."""
        return shell_secrets(self.shell) if self.shell is not None else argv_secrets(self.argv or ())


@record
class CommandResult:
    """One executed command, local or remote (tox ``Outcome`` habit)."""

    host: str
    command: str
    cwd: str
    env: Mapping[str, str]  # the request's own variables, redacted
    exit_code: int | None  # None: never started, or killed
    signal: int | None
    started: datetime
    duration: float
    timed_out: bool
    spawn_error: str | None
    log_path: Path | None
    tail: str
    log_error: str | None = None  # the log could not be written; the command was stopped
    strays: tuple[str, ...] = ()  # processes that outlived the command (escaped its group): killed
    # Where it really ran, learnt only then (the GPUs of its slot; a Slurm job's node, job id and
    # state; board, driver, toolkit found there): stored with the step (ledger ``facts``)
    facts: Mapping[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.spawn_error is None and self.log_error is None


class LogSink(Protocol):
    """Receives output as it arrives (already decoded and redacted)."""

    path: Path | None

    def write(self, text: str) -> None: ...


def refused(host: str, request: CommandRequest, sink: LogSink, message: str, started: datetime) -> CommandResult:
    """A command the executor would not start on ``host`` (no place, no delivery): the reason in
    the log, and a result whose spawn error carries it (the step is an ``error``)."""
    sink.write(f"# relgate: {message}\n")
    return CommandResult(host=host, command=request.display(), cwd=str(request.cwd), env=redact_env(dict(request.env)),
                         exit_code=None, signal=None, started=started, duration=0.0, timed_out=False,
                         spawn_error=message, log_path=sink.path, tail=message + "\n")


class LogWriteError(OSError):
    """The log could not be written (a full disk, an unwritable folder): the step is an error."""


class FileSink:
    """Appends to a log file as output arrives, so the log is readable while it grows.

    A binary file is written unbuffered (nothing is left to flush, so closing it never fails
    late); a text file is flushed per chunk. The first failed write is kept in ``error`` and
    raised as :class:`LogWriteError`; later writes fail at once. With ``limit``, output past
    that many bytes is not kept: one marker line says where the log was cut.
    """

    def __init__(self, fh: IO[str] | IO[bytes], path: Path, *, limit: int | None = None) -> None:
        self._fh = fh
        self.path = path
        self.error: str | None = None
        self.limit = limit
        self.written = 0
        self.dropped = 0
        self._binary = "b" in getattr(fh, "mode", "")

    def write(self, text: str) -> None:
        if self.limit is None:
            self.note(text)
            return
        data = text.encode()
        room = max(0, self.limit - self.written)
        if len(data) > room:
            self.dropped += len(data) - room
            kept = data[:room].decode("utf-8", "ignore")
            if self.dropped == len(data) - room:  # the first cut: say so, once
                kept += (f"{'' if kept.endswith(chr(10)) or not kept else chr(10)}# relgate: log cut at "
                         f"max_log_bytes = {self.limit}; the rest of the output is not kept\n")
            elif not kept:
                return
            text = kept
        self.note(text)
        self.written += len(data[:room]) if len(data) > room else len(data)

    def note(self, text: str) -> None:
        """Write ``text`` whatever the limit (relgate's own lines)."""
        if self.error is not None:
            raise LogWriteError(self.error)
        try:
            if self._binary:
                data = memoryview(text.encode())
                while data:
                    data = data[self._fh.write(data):]  # type: ignore[arg-type]
            else:
                self._fh.write(text)  # type: ignore[arg-type]
                self._fh.flush()
        except OSError as exc:
            self.error = f"cannot write the log {self.path}: {exc.strerror or exc}"
            raise LogWriteError(self.error) from None


class Executor(Protocol):
    host: Host

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult: ...


def kill_grace(environ: Mapping[str, str] = os.environ) -> float:
    """Seconds a stopped step's group gets between SIGTERM and SIGKILL: ``RELGATE_KILL_GRACE``,
    default 5. A second stop (Ctrl-C, SIGTERM) during the grace cuts it short."""
    raw = environ.get("RELGATE_KILL_GRACE", "").strip()
    if not raw:
        return _KILL_GRACE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"RELGATE_KILL_GRACE={raw!r}: must be a positive number of seconds")
    return value


#: Variables that describe the caller's shell or terminal, not what a build or a test sees
#: differently: left out of :attr:`LocalExecutor.env_digest`.
VOLATILE_ENV = frozenset({"_", "PWD", "OLDPWD", "SHLVL", "PYTEST_CURRENT_TEST", "COLUMNS", "LINES", "TERM_SESSION_ID",
                          "WINDOWID", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "TMUX_PANE",
                          "OLDPWD", "RELGATE_HOME", "RELGATE_MANIFESTS", "RELGATE_HOSTS"})
VOLATILE_PREFIXES = ("NOX_",)
#: The step's recorded env holds the digest under this name (a name no variable can have).
ENV_DIGEST_KEY = "(caller environment sha256)"


class LocalExecutor:
    """Runs commands on this machine, each in its own process group (session), watched by
    a :class:`~relgate.run.guard.Guardian` so that no command outlives relgate."""

    def __init__(self, host: Host, *, base_env: Mapping[str, str] | None = None) -> None:
        self.host = host
        self._base_env = dict(os.environ if base_env is None else base_env)
        self._grace = kill_grace(self._base_env)
        self._guardian = guardian(self._grace)
        self._stop: int | None = None  # the signal relgate was told to stop by (see interrupt)
        self._digest: str | None = None

    @property
    def env_digest(self) -> str:
        """The sha256 of the environment every command here inherits (relgate's caller's), less
        what only describes the shell (:data:`VOLATILE_ENV`): part of the ``--reuse`` key, so that
        ``CFLAGS=-O0 relgate host --reuse`` reuses no pass that ran without it. A hash: no value
        (no secret) reaches the ledger."""
        if self._digest is None:
            digest = hashlib.sha256()
            for name in sorted(self._base_env):
                if name not in VOLATILE_ENV and not name.startswith(VOLATILE_PREFIXES):
                    digest.update(f"{name}\0{self._base_env[name]}\0".encode("utf-8", "surrogateescape"))
            self._digest = digest.hexdigest()
        return self._digest

    def interrupt(self, signum: int) -> None:
        """relgate was told to stop (``signum``) while a thread other than the main one runs a
        command here (a fleet's worker, which no signal reaches): within a quarter of a second
        :meth:`run` ends that command's group and raises :class:`Interrupted` in its own thread,
        as the signal does in the main thread; no later command starts."""
        self._stop = signum

    def _wait(self, proc: subprocess.Popen[bytes], timeout: float | None) -> None:
        """``proc.wait(timeout)``; off the main thread, in short waits that see :meth:`interrupt`."""
        if threading.current_thread() is threading.main_thread():
            proc.wait(timeout=timeout)  # blocks in waitpid (no polling); a signal handler's exception gets through
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._stop is not None:
                raise Interrupted(self._stop)
            left = 0.25 if deadline is None else min(0.25, max(0.0, deadline - time.monotonic()))
            try:
                proc.wait(timeout=left)
                return
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        if self._stop is not None:
            raise Interrupted(self._stop)
        tag = new_tag()
        env = {**self._base_env, **request.env, TAG_VAR: tag}
        # Values of secret-named variables, and secrets passed on the command line: the
        # command may echo either, so both are hidden from the sink, the tail and the record.
        redact = Redactor([*env_secrets(env), *request.secrets()])
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        started = datetime.now(timezone.utc)
        t0 = time.monotonic()

        def result(**kw: object) -> CommandResult:
            base = dict(host=self.host.name, command=redact(request.display()), cwd=str(request.cwd),
                        env=redact_env(dict(request.env)), started=started,
                        duration=time.monotonic() - t0, log_path=sink.path, tail="".join(tail),
                        exit_code=None, signal=None, timed_out=False, spawn_error=None)
            base.update(kw)
            return CommandResult(**base)  # type: ignore[arg-type]

        args: list[str] | str = list(request.argv) if request.argv is not None else request.shell  # type: ignore[assignment]
        self._guardian.expect(tag)  # before the fork: the child may escape before Popen returns
        mark = fork_mark()  # the command's processes are the ones made after it (see tagged)
        proc: subprocess.Popen[bytes] | None = None
        spawn_failed = False
        since = None
        pump: _Pump | None = None
        timed_out = False
        try:  # from the fork on: a stop at any point up to the end still ends the command
            try:
                proc = subprocess.Popen(
                    args, shell=request.shell is not None, cwd=request.cwd, env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True,
                    executable="/bin/sh" if request.shell is not None else None,
                )
            except OSError as exc:
                spawn_failed = True
                what = request.argv[0] if request.argv else "/bin/sh"
                if exc.filename is not None and str(exc.filename) == str(request.cwd):
                    message = f"cannot run {what}: working directory {request.cwd}: {exc.strerror or exc}"
                else:
                    message = f"cannot run {what}: {exc.strerror or exc}"
                tail.append(message + "\n")
                try:
                    sink.write(message + "\n")
                except OSError:
                    pass  # the spawn error is the news; the log's own failure shows on the next step
                return result(spawn_error=message)
            since = None if mark is None else (mark, proc.pid)
            self._guardian.watch(proc.pid, tag)
            pump = _Pump(proc, sink, tail, redact)
            reader = threading.Thread(target=pump.run, daemon=True)
            reader.start()
            try:
                self._wait(proc, request.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc, self._grace)
            if pump.error is not None:  # the log broke: stop whatever the command left running
                _kill_group(proc, self._grace)
            reader.join(timeout=2)
            if reader.is_alive():  # a straggler in the group still holds the pipe
                _kill_group(proc, self._grace)
                reader.join(timeout=2)
            strays = tagged(tag, since=since)
            if strays:  # escaped the group (setsid) and still alive: they do not outlive the step
                described = tuple(describe(pid) for pid in strays)
                kill_pids(strays)
                reader.join(timeout=2)
                pump.note(f"# relgate: {len(strays)} process(es) outlived the command (left its process group); "
                          f"killed: {', '.join(described)}\n")
            else:
                described = ()
        except BaseException:
            # Ctrl-C, SIGTERM/SIGHUP (as Interrupted) or a crash: never leave the command behind.
            # A stop inside Popen itself (the child forked, no Popen object yet) finds the
            # child by its tag once it has exec'ed; a loaded machine does win that race.
            try:
                if proc is not None:
                    _kill_group(proc, self._grace)  # a second stop here SIGKILLs at once and goes on up
            finally:
                kill_pids(tagged(tag, since=since))
                if pump is not None:
                    pump.close()
            raise
        finally:
            # A stop inside Popen may come before the child's exec, while its environment does
            # not carry the tag yet: the guardian keeps the tag then, and ends what carries it
            # when relgate ends.
            if proc is not None or spawn_failed:
                self._guardian.release(None if proc is None else proc.pid, tag)
        pump.close()  # late output of anything left is drained, never written
        code = proc.returncode
        extra = dict(log_error=pump.error, strays=described)
        if timed_out:
            return result(timed_out=True, signal=-code if code is not None and code < 0 else None, **extra)
        if code is not None and code < 0:
            return result(signal=-code, **extra)
        return result(exit_code=code, **extra)


class _Pump:
    """Reads the command's output to its end: decode, redact, keep the tail, write the sink.

    A failed sink write is kept (``error``) and stops the command's group at once; the
    output is still drained so nothing blocks on a full pipe. After :meth:`close`, output
    (of a process that escaped) is drained and dropped, never written to a closed log."""

    def __init__(self, proc: subprocess.Popen[bytes], sink: LogSink, tail: deque[str], redact: Redactor) -> None:
        self._proc, self._sink, self._tail, self._redact = proc, sink, tail, redact
        self._lock = threading.Lock()
        self._closed = False
        self.error: str | None = None

    def run(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for raw in iter(lambda: stream.readline(_LINE_MAX), b""):
                self._emit(decoder.decode(raw))
            self._emit(decoder.decode(b"", final=True))
        except Exception:  # noqa: BLE001 - a reader that dies would block the command on its pipe
            pass
        finally:
            stream.close()

    def _emit(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self._closed:
                return
            text = self._redact(text)
            self._tail.append(text)
            if self.error is not None:
                return
            try:
                self._sink.write(text)
            except OSError as exc:
                self.error = str(exc) if isinstance(exc, LogWriteError) else \
                    f"cannot write the log: {exc.strerror or exc}"
                try:
                    os.killpg(self._proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def note(self, text: str) -> None:
        """relgate's own line, into the tail and (when it still works) the log."""
        with self._lock:
            self._tail.append(text)
            if self.error is None and not self._closed:
                try:
                    self._sink.write(text)
                except OSError as exc:
                    self.error = str(exc) if isinstance(exc, LogWriteError) else \
                        f"cannot write the log: {exc.strerror or exc}"

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _kill_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left after a grace.

    A second stop (Ctrl-C, SIGTERM) during the grace cuts it short: SIGKILL at once, then
    the stop goes on up."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        proc.wait()
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    except BaseException:
        _sigkill_group(proc)
        raise
    _sigkill_group(proc)


def _sigkill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    pending: BaseException | None = None
    while True:  # reap it even through yet another Ctrl-C (the group is already SIGKILLed)
        try:
            proc.wait()
            break
        except BaseException as exc:  # noqa: BLE001 - raised below, once reaped
            pending = exc
    if pending is not None:
        raise pending
