"""The executor seam: one request in, output streamed to a sink, one result out.

Local and SSH hosts implement the same :class:`Executor` protocol, so callers never
know where a command ran. Output is redacted before it reaches the sink or the tail.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Protocol

from relgate.core.redact import Redactor, argv_secrets, display_command, is_secret_name, redact_env, shell_secrets
from relgate.run.hosts import Host

__all__ = [
    "CommandRequest", "CommandResult", "LogSink", "FileSink", "Executor", "LocalExecutor",
    "Interrupted", "TAIL_LINES",
]

TAIL_LINES = 40
_KILL_GRACE = 5.0


class Interrupted(BaseException):
    """relgate itself was told to stop (SIGTERM/SIGINT) while a command ran."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
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

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.spawn_error is None


class LogSink(Protocol):
    """Receives output as it arrives (already decoded and redacted)."""

    path: Path | None

    def write(self, text: str) -> None: ...


class FileSink:
    """Appends to a log file, flushing per chunk so the log is readable while it grows."""

    def __init__(self, fh: IO[str], path: Path) -> None:
        self._fh = fh
        self.path = path

    def write(self, text: str) -> None:
        self._fh.write(text)
        self._fh.flush()


class Executor(Protocol):
    host: Host

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult: ...


class LocalExecutor:
    """Runs commands on this machine, each in its own process group."""

    def __init__(self, host: Host, *, base_env: Mapping[str, str] | None = None) -> None:
        self.host = host
        self._base_env = dict(os.environ if base_env is None else base_env)

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        env = {**self._base_env, **request.env}
        # Values of secret-named variables, and secrets passed on the command line: the
        # command may echo either, so both are hidden from the sink, the tail and the record.
        redact = Redactor([*(v for k, v in env.items() if is_secret_name(k)), *request.secrets()])
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
        try:
            proc = subprocess.Popen(
                args, shell=request.shell is not None, cwd=request.cwd, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True,
                executable="/bin/sh" if request.shell is not None else None,
            )
        except OSError as exc:
            what = request.argv[0] if request.argv else "/bin/sh"
            if exc.filename is not None and str(exc.filename) == str(request.cwd):
                message = f"cannot run {what}: working directory {request.cwd}: {exc.strerror or exc}"
            else:
                message = f"cannot run {what}: {exc.strerror or exc}"
            sink.write(message + "\n")
            tail.append(message + "\n")
            return result(spawn_error=message)

        reader = threading.Thread(target=_pump, args=(proc.stdout, sink, tail, redact), daemon=True)
        reader.start()
        timed_out = False
        try:
            try:
                # Blocks in waitpid (no polling); a signal handler's exception still gets through.
                proc.wait(timeout=request.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
        except BaseException:
            # Ctrl-C, SIGTERM (as Interrupted) or a crash: never leave the command behind.
            _kill_group(proc)
            reader.join(timeout=2)
            raise
        reader.join(timeout=2)
        if reader.is_alive():  # a straggler in the group still holds the pipe
            _kill_group(proc)
            reader.join(timeout=2)
        code = proc.returncode
        if timed_out:
            return result(timed_out=True, signal=-code if code is not None and code < 0 else None)
        if code is not None and code < 0:
            return result(signal=-code)
        return result(exit_code=code)


def _pump(stream: IO[bytes], sink: LogSink, tail: deque[str], redact: Redactor) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for raw in iter(stream.readline, b""):
        text = redact(decoder.decode(raw))
        sink.write(text)
        tail.append(text)
    rest = decoder.decode(b"", final=True)
    if rest:
        sink.write(rest)
        tail.append(rest)
    stream.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left after a grace."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=_KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
