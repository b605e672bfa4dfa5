"""LocalExecutor: real processes, real signals, real process groups."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import pid_gone, wait_for
from relgate.core.errors import InputError
from relgate.core.redact import MASK
from relgate.manifest.specs import HostSpec
from relgate.run.executor import TAIL_LINES, CommandRequest, CommandResult, FileSink, LocalExecutor, kill_grace
from relgate.run.hosts import Host, HostFacts

HOST = Host(spec=HostSpec(name="local", kind="local", source=Path("x")), facts=HostFacts())


class ListSink:
    """Collects what the executor writes, chunk by chunk, safe to read from another thread."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._chunks: list[str] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self._chunks.append(text)

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self._chunks)




def run(request: CommandRequest, *, base_env: dict[str, str] | None = None) -> tuple[CommandResult, ListSink]:
    sink = ListSink(path=Path("/logs/step.log"))
    result = LocalExecutor(HOST, base_env=base_env).run(request, sink)
    return result, sink


# --- requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"argv": ("true",), "shell": "true"},  # both
        {},  # neither
        {"argv": ()},  # an empty argv
    ],
    ids=["argv-and-shell", "neither", "empty-argv"],
)
def test_request_needs_exactly_one_command(kwargs: dict[str, object], tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CommandRequest(cwd=tmp_path, **kwargs)  # type: ignore[arg-type]


def test_argv_runs_without_a_shell(tmp_path: Path) -> None:
    # `$HOME` and `;` reach the program as they are: no shell interprets them
    result, sink = run(CommandRequest(argv=("printf", "%s|%s\n", "$HOME", "a;b"), cwd=tmp_path))
    assert sink.text == "$HOME|a;b\n"
    assert result.exit_code == 0 and result.ok
    assert result.command == shlex.join(["printf", "%s|%s\n", "$HOME", "a;b"])


def test_shell_string_runs_in_sh(tmp_path: Path) -> None:
    result, sink = run(CommandRequest(shell="x=4; echo $((x * 2)) && echo done | tr a-z A-Z", cwd=tmp_path))
    assert sink.text == "8\nDONE\n"
    assert result.ok
    assert result.command == "x=4; echo $((x * 2)) && echo done | tr a-z A-Z"


def test_cwd_is_honoured(tmp_path: Path) -> None:
    sub = tmp_path / "sub dir"
    sub.mkdir()
    result, sink = run(CommandRequest(argv=(sys.executable, "-c", "import os; print(os.getcwd())"), cwd=sub))
    assert Path(sink.text.strip()).resolve() == sub.resolve()
    assert result.cwd == str(sub)


def test_env_adds_to_the_base_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELGATE_TEST_OUTSIDE", "not-in-base")
    base = {"PATH": os.environ["PATH"], "BASE_ONLY": "from-base", "OVERRIDE": "base"}
    request = CommandRequest(
        shell='printf "%s/%s/%s/%s\\n" "$BASE_ONLY" "$ADDED" "$OVERRIDE" "${RELGATE_TEST_OUTSIDE-unset}"',
        cwd=tmp_path, env={"ADDED": "from-request", "OVERRIDE": "request"},
    )
    result, sink = run(request, base_env=base)
    assert sink.text == "from-base/from-request/request/unset\n"
    # the record keeps the request's own variables, not the whole environment
    assert result.env == {"ADDED": "from-request", "OVERRIDE": "request"}


def test_default_base_env_is_the_process_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELGATE_TEST_INHERITED", "inherited")
    _, sink = run(CommandRequest(shell='echo "$RELGATE_TEST_INHERITED"', cwd=tmp_path))
    assert sink.text == "inherited\n"


# --- output ---------------------------------------------------------------------------------


def test_stdout_and_stderr_are_interleaved_in_order(tmp_path: Path) -> None:
    _, sink = run(CommandRequest(shell="echo out1; echo err1 >&2; echo out2; echo err2 >&2", cwd=tmp_path))
    assert sink.text == "out1\nerr1\nout2\nerr2\n"


def test_output_reaches_the_sink_as_it_arrives(tmp_path: Path) -> None:
    go = tmp_path / "go"
    # Prints a line, then waits (bounded, longer than the test's own bound) for a file that
    # the test creates only after it has seen that line in the sink.
    script = (f"echo first; i=0; while [ ! -e {shlex.quote(str(go))} ] && [ $i -lt 1200 ]; "
              f"do sleep 0.05; i=$((i+1)); done; echo second")
    sink = ListSink()
    box: dict[str, CommandResult] = {}
    worker = threading.Thread(
        target=lambda: box.update(result=LocalExecutor(HOST).run(CommandRequest(shell=script, cwd=tmp_path), sink)),
        daemon=True,
    )
    worker.start()
    try:
        seen = wait_for(lambda: "first\n" in sink.text)
        before_go = sink.text
    finally:
        go.touch()
    worker.join(timeout=120)
    assert seen, "the first line did not reach the sink while the command was still running"
    assert "second" not in before_go
    assert box["result"].ok
    assert sink.text == "first\nsecond\n"


def test_file_sink_writes_the_log_as_it_grows(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    with log.open("w") as fh:
        sink = FileSink(fh, log)
        result = LocalExecutor(HOST).run(CommandRequest(shell="echo one; echo two >&2", cwd=tmp_path), sink)
    assert log.read_text() == "one\ntwo\n"
    assert result.log_path == log


def test_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    code = "for i in range(100): print(f'line {i}')"
    result, sink = run(CommandRequest(argv=(sys.executable, "-c", code), cwd=tmp_path))
    assert sink.text.count("\n") == 100
    assert result.tail.splitlines() == [f"line {i}" for i in range(100 - TAIL_LINES, 100)]


def test_non_utf8_output_is_replaced_not_fatal(tmp_path: Path) -> None:
    result, sink = run(CommandRequest(argv=("printf", "ok \\377\\376 bad\\n\\303"), cwd=tmp_path))
    assert result.ok
    assert sink.text.startswith("ok \ufffd\ufffd bad\n")
    assert sink.text.endswith("\ufffd")  # a truncated sequence at the very end, flushed once
    assert "\ufffd" in result.tail


# --- outcomes -------------------------------------------------------------------------------


def test_exit_code(tmp_path: Path) -> None:
    result, _ = run(CommandRequest(shell="exit 3", cwd=tmp_path))
    assert (result.exit_code, result.signal, result.timed_out, result.spawn_error) == (3, None, False, None)
    assert not result.ok


def test_signal(tmp_path: Path) -> None:
    result, _ = run(CommandRequest(shell="kill -SEGV $$", cwd=tmp_path))
    assert result.signal == signal.SIGSEGV == 11
    assert result.exit_code is None
    assert not result.timed_out and not result.ok


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {shlex.quote(str(pidfile))}; echo started; wait"
    result, sink = run(CommandRequest(shell=script, cwd=tmp_path, timeout=2))
    assert result.timed_out
    assert result.exit_code is None
    assert result.signal in (signal.SIGTERM, signal.SIGKILL)
    assert not result.ok
    assert "started" in sink.text
    pid = int(pidfile.read_text())
    try:
        assert wait_for(lambda: pid_gone(pid)), f"grandchild {pid} survived the timeout"
    finally:
        if not pid_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_interrupt_from_another_thread_stops_the_command_and_raises_interrupted(tmp_path: Path) -> None:
    # A fleet's worker thread runs the command; SIGTERM reaches only the main thread, which
    # calls interrupt(): the worker's run ends the whole group and raises Interrupted there.
    from relgate.run.executor import Interrupted

    pidfile = tmp_path / "grandchild.pid"
    executor = LocalExecutor(HOST)
    sink = ListSink()
    raised: list[BaseException] = []

    def worker() -> None:
        try:
            executor.run(CommandRequest(shell=f"sleep 300 & echo $! > {shlex.quote(str(pidfile))}; echo started; "
                                        "wait", cwd=tmp_path), sink)
        except BaseException as exc:  # noqa: BLE001 - what the worker saw is the result here
            raised.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    assert wait_for(lambda: "started" in sink.text and pidfile.exists() and pidfile.read_text().strip())
    pid = int(pidfile.read_text())
    try:
        executor.interrupt(signal.SIGTERM)
        thread.join(timeout=60)
        assert not thread.is_alive()
        assert len(raised) == 1 and isinstance(raised[0], Interrupted) and raised[0].signum == signal.SIGTERM, raised
        assert wait_for(lambda: pid_gone(pid)), f"grandchild {pid} survived the interrupt"
        with pytest.raises(Interrupted):  # no later command starts
            executor.run(CommandRequest(argv=("true",), cwd=tmp_path), ListSink())
    finally:
        if not pid_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_stop_that_lands_inside_popen_still_ends_the_forked_command(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # CI once sent SIGTERM while the main thread was still inside Popen (the child forked and
    # already running, no Popen object returned yet): the step outlived relgate. The signal's
    # exception is raised here at that very point, after the real fork.
    import subprocess

    from relgate.run import executor as executor_module
    from relgate.run.executor import Interrupted

    pidfile = tmp_path / "child.pid"
    real_popen = subprocess.Popen

    class PopenThenStop(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
            raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(executor_module.subprocess, "Popen", PopenThenStop)
    with pytest.raises(Interrupted):
        LocalExecutor(HOST).run(CommandRequest(shell=f"echo $$ > {shlex.quote(str(pidfile))}; exec sleep 300",
                                               cwd=tmp_path), ListSink())
    pid = int(pidfile.read_text())
    try:
        assert wait_for(lambda: pid_gone(pid)), f"the command {pid} outlived a stop inside Popen"
    finally:
        if not pid_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_background_straggler_holding_the_output_is_stopped(tmp_path: Path) -> None:
    # The command exits at once but leaves a grandchild that holds the output pipe open:
    # the executor returns the command's own exit status and does not leave it behind.
    pidfile = tmp_path / "straggler.pid"
    result, sink = run(CommandRequest(shell=f"sleep 300 & echo $! > {shlex.quote(str(pidfile))}; echo bye",
                                      cwd=tmp_path))
    assert result.exit_code == 0 and not result.timed_out
    assert sink.text == "bye\n"
    pid = int(pidfile.read_text())
    try:
        assert wait_for(lambda: pid_gone(pid)), f"straggler {pid} was left running"
    finally:
        if not pid_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_command_that_cannot_start_is_a_result_not_an_exception(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-tool"
    result, sink = run(CommandRequest(argv=(str(missing), "--flag"), cwd=tmp_path))
    assert result.spawn_error is not None
    assert str(missing) in result.spawn_error and "No such file" in result.spawn_error
    assert result.exit_code is None and result.signal is None and not result.ok
    assert result.spawn_error in sink.text and result.spawn_error in result.tail


def test_a_file_that_is_not_executable_cannot_start(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    result, _ = run(CommandRequest(argv=(str(script),), cwd=tmp_path))
    assert result.spawn_error is not None and "Permission denied" in result.spawn_error


def test_a_missing_working_directory_is_named(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    result, _ = run(CommandRequest(argv=("true",), cwd=gone))
    assert result.spawn_error is not None
    assert "working directory" in result.spawn_error and str(gone) in result.spawn_error


def test_the_record(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc)
    result, _ = run(CommandRequest(argv=("sh", "-c", "echo a; echo b"), cwd=tmp_path, env={"MODE": "x"}))
    assert result.host == "local"
    assert result.command == "sh -c 'echo a; echo b'"
    assert result.cwd == str(tmp_path)
    assert result.env == {"MODE": "x"}
    assert result.started.tzinfo is not None and result.started >= before.replace(microsecond=0)
    assert result.duration >= 0
    assert result.log_path == Path("/logs/step.log")
    assert result.tail == "a\nb\n"
    assert (result.exit_code, result.signal, result.timed_out, result.spawn_error) == (0, None, False, None)


# --- secrets --------------------------------------------------------------------------------

SECRETS = ("hf_secretvalue123", "abc123456")


def assert_no_secrets(result: CommandResult, sink: ListSink) -> None:
    for where, text in (("sink", sink.text), ("tail", result.tail), ("command", result.command),
                        ("env", repr(result.env))):
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} leaked into {where}: {text!r}"


def test_secrets_never_reach_the_sink_tail_or_record_argv(tmp_path: Path) -> None:
    code = ("import os, sys; print('env', os.environ['HF_TOKEN']); print('arg', sys.argv[1]); "
            "print('bare', sys.argv[1].split('=')[1]); print('err', os.environ['HF_TOKEN'], file=sys.stderr)")
    request = CommandRequest(argv=(sys.executable, "-c", code, "--token=abc123456"), cwd=tmp_path,
                             env={"HF_TOKEN": "hf_secretvalue123"})
    result, sink = run(request)
    assert result.ok
    assert_no_secrets(result, sink)
    # the output did arrive, with the secrets masked
    assert f"env {MASK}\n" in sink.text and f"err {MASK}\n" in sink.text
    assert f"arg --token={MASK}\n" in sink.text and f"bare {MASK}\n" in sink.text
    assert result.env == {"HF_TOKEN": MASK}
    assert f"--token={MASK}" in result.command


def test_secrets_never_reach_the_sink_tail_or_record_shell(tmp_path: Path) -> None:
    # the secret is spelled out in the shell string itself, and passed as a separate word
    script = 'echo "$HF_TOKEN"; echo hf_secretvalue123 >&2; set -- --password abc123456; echo "$2"'
    result, sink = run(CommandRequest(shell=script, cwd=tmp_path, env={"HF_TOKEN": "hf_secretvalue123"}))
    assert result.ok
    assert_no_secrets(result, sink)
    assert sink.text == f"{MASK}\n{MASK}\n{MASK}\n"
    assert result.command == f'echo "$HF_TOKEN"; echo {MASK} >&2; set -- --password {MASK}; echo "$2"'


def test_a_secret_from_the_base_env_is_masked_too(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"], "GITHUB_TOKEN": "ghp_basesecret42"}
    result, sink = run(CommandRequest(shell='echo "t=$GITHUB_TOKEN."', cwd=tmp_path), base_env=base)
    assert "ghp_basesecret42" not in sink.text and "ghp_basesecret42" not in result.tail
    assert sink.text == f"t={MASK}.\n"


def test_the_kill_grace_is_five_seconds_unless_the_environment_says_otherwise():
    assert kill_grace({}) == 5.0 and kill_grace({"RELGATE_KILL_GRACE": " "}) == 5.0
    assert kill_grace({"RELGATE_KILL_GRACE": "2.5"}) == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(InputError, match="RELGATE_KILL_GRACE=.*must be a positive number of seconds"):
            kill_grace({"RELGATE_KILL_GRACE": bad})
