"""Faults with real components: a full or read-only filesystem (tmpfs under ``unshare -m``),
real signals to real process groups, a step that escapes with ``setsid``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Project, pid_gone, wait_for

FILE_SECONDS = 30  # about how long this file takes here: it starts early (tests/conftest.py)

WAIT_S = 60.0  # an upper bound for the polling below (a hang shows as a failure); never a measurement

needs_unshare = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None
    or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0,
    reason="needs root and unshare -m (a private mount namespace for the tmpfs)")


def one_check(project: Project, command: str, name: str = "noisy") -> None:
    """The project's builds manifest with a single shell check."""
    (project.manifests / "builds.toml").write_text(
        f"[[check]]\nname = {json.dumps(name)}\nrun = {json.dumps(command)}\nshell = true\n")
    (project.manifests / "lanes.toml").unlink(missing_ok=True)  # no census: the check is the only step


def relgate_cmd(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "relgate.cli", *args])


def in_mount_ns(project: Project, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["unshare", "-m", "sh", "-ec", script], env=project.env, cwd=project.root,
                          capture_output=True, text=True, timeout=600)


def dump_steps(project: Project) -> str:
    code = ("import json,sys; from relgate.ledger.store import Ledger; l=Ledger.open(sys.argv[1]);"
            "print('ROWS'+json.dumps([r.to_json() for r in l.steps()]))")
    return shlex.join([sys.executable, "-c", code, str(project.home)])


def rows_of(out: str) -> list[dict]:
    line = next(x for x in out.splitlines() if x.startswith("ROWS"))
    return json.loads(line[4:])


@needs_unshare
def test_a_full_log_filesystem_ends_the_step_as_error_and_the_run_finishes(tinyinfer: Project) -> None:
    one_check(tinyinfer, "yes relgate-fills-the-disk")  # never ends on its own
    logs = tinyinfer.home / "logs"
    logs.mkdir(parents=True)
    done = in_mount_ns(tinyinfer, f"mount -t tmpfs -o size=1m tmpfs {logs}\n"
                                  f"{relgate_cmd('host')} && echo EXIT=0 || echo EXIT=$?\n{dump_steps(tinyinfer)}")
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert "EXIT=1" in out, out
    row = next(r for r in rows_of(done.stdout) if r["step"] == "noisy")
    assert row["verdict"] == "error" and "No space left on device" in row["reason"], row
    assert "cannot write the log" in row["reason"]


@needs_unshare
def test_a_full_ledger_home_never_hangs_and_says_what_broke(tinyinfer: Project) -> None:
    one_check(tinyinfer, "yes relgate-fills-the-disk")
    home = tinyinfer.home
    home.mkdir()
    done = in_mount_ns(tinyinfer, f"mount -t tmpfs -o size=2m tmpfs {home}\n"
                                  f"{relgate_cmd('host')} && echo EXIT=0 || echo EXIT=$?\n"
                                  f"rm -rf {home}/logs\n{dump_steps(tinyinfer)}")
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert "EXIT=0" not in out and "EXIT=" in out, out
    assert "No space left on device" in out or "disk is full" in out, out
    row = next(r for r in rows_of(done.stdout) if r["step"] == "noisy")
    assert row["verdict"] == "error", row  # "never finished", or the log's own failure: never a pass


@needs_unshare
@pytest.mark.parametrize("folder", ["logs", "evidence", "objects"])
def test_a_read_only_folder_of_the_ledger_home_is_an_error_not_a_traceback(tinyinfer: Project, folder: str) -> None:
    lanes = tinyinfer.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('command = "make test"\n',
                                               # a valid row: printf's \t (a tab inside sh -c splits words)
                                               'command = ["sh", "-c", "printf \'suite\\\\tarm\\\\tk\\\\tv\\\\n\' '
                                               '>> $TINYINFER_EVIDENCE"]\n'))
    ro = tinyinfer.home / folder
    ro.mkdir(parents=True)
    done = in_mount_ns(tinyinfer, f"mount -t tmpfs -o ro tmpfs {ro}\n"
                                  f"{relgate_cmd('lane', 'gate')} && echo EXIT=0 || echo EXIT=$?\n"
                                  f"{dump_steps(tinyinfer)}")
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert "EXIT=1" in out, out
    row = next(r for r in rows_of(done.stdout) if r["step"] == "kernels-cpu")
    assert row["verdict"] == "error" and "Read-only file system" in row["reason"], row


# --- signals ------------------------------------------------------------------------------------


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for entry in Path("/proc").iterdir():  # members that are only zombies are gone too
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat[2]) == pgid and stat[0] != "Z":
            return True
    return False




def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(x) for x in (task / "children").read_text().split()]
    return out


def start_stubborn(project: Project, tmp_path: Path, *, kill_guardian: bool, extra: tuple[str, ...] = (),
                   env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    """relgate running a step whose whole group ignores SIGTERM; returns relgate and the group.
    The group's leader notes each SIGTERM it receives in ``tmp_path/terms`` (and stays)."""
    marker, terms = tmp_path / "pgid", tmp_path / "terms"
    one_check(project, f"trap '' TERM; (while :; do sleep 1; done) & trap 'echo term >> {terms}' TERM; "
                       f"ps -o pgid= $$ > {marker}.tmp; mv {marker}.tmp {marker}; while :; do wait; done")
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "host", *extra], env={**project.env, **(env or {})},
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert wait_for(marker.exists), "the step never started"
    pgid = int(marker.read_text())
    if kill_guardian:  # so that only relgate itself can have ended the group
        for child in children(proc.pid):
            if child != pgid:
                os.kill(child, signal.SIGKILL)
    return proc, pgid


def test_a_second_ctrl_c_sigkills_the_group_at_once(tinyinfer: Project, tmp_path: Path) -> None:
    # A grace of an hour: if the group ends, the second Ctrl-C ended it, not the grace running out.
    proc, pgid = start_stubborn(tinyinfer, tmp_path, kill_guardian=True, env={"RELGATE_KILL_GRACE": "3600"})
    try:
        proc.send_signal(signal.SIGINT)
        assert wait_for((tmp_path / "terms").exists), "the first Ctrl-C never reached the step's group"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=WAIT_S)
        assert proc.returncode != 0
        assert "Traceback" not in out, out
        assert wait_for(lambda: not group_alive(pgid)), "the step's processes outlived relgate"
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        proc.kill()


def test_sighup_stops_the_step_and_records_it(tinyinfer: Project, tmp_path: Path) -> None:
    proc, pgid = start_stubborn(tinyinfer, tmp_path, kill_guardian=True)
    try:
        proc.send_signal(signal.SIGHUP)
        out, _ = proc.communicate(timeout=WAIT_S)
        assert proc.returncode != 0 and "Traceback" not in out, out
        assert wait_for(lambda: not group_alive(pgid))
        rows = tinyinfer.ledger_steps()
        assert rows[-1]["verdict"] == "error" and "SIGHUP" in rows[-1]["reason"], rows[-1]
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        proc.kill()


def test_a_step_never_outlives_a_sigkilled_relgate(tinyinfer: Project, tmp_path: Path) -> None:
    proc, pgid = start_stubborn(tinyinfer, tmp_path, kill_guardian=False)
    try:
        proc.kill()  # SIGKILL: relgate gets no chance at all; its guardian does the work
        proc.communicate(timeout=WAIT_S)
        assert wait_for(lambda: not group_alive(pgid)), "the step was orphaned"
        rows = tinyinfer.ledger_steps()
        assert rows[-1]["verdict"] == "error" and "never finished" in rows[-1]["reason"]
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


@pytest.mark.parametrize("grep", ["gnu", "without -z"])
def test_a_sigkilled_relgate_leaves_no_escaped_process_behind(tinyinfer: Project, tmp_path: Path, grep: str) -> None:
    # The escaped process left the group (setsid) and ignores SIGTERM: only the guardian's
    # search for the step's tag, and its SIGKILL after the grace, can end it. "without -z":
    # a grep that refuses -z, as BusyBox's does, first on the guardian's PATH.
    env = {**tinyinfer.env, "RELGATE_KILL_GRACE": "0.5"}
    if grep == "without -z":
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "grep").write_text('#!/bin/sh\nfor a in "$@"; do case $a in -*z*) echo "grep: -z: unknown option" >&2; '
                                   f'exit 2;; esac; done\nexec {shutil.which("grep")} "$@"\n')
        (shim / "grep").chmod(0o755)
        env["PATH"] = f"{shim}{os.pathsep}{env.get('PATH', os.environ['PATH'])}"
    pidfile = tmp_path / "escaped.pid"
    one_check(tinyinfer, f"setsid sh -c 'trap \"\" TERM; echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; "
                         f"while :; do sleep 1; done' & while :; do sleep 1; done")
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "host"], env=env, cwd=tinyinfer.root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    escaped = 0
    try:
        assert wait_for(pidfile.exists), "the step never started"
        escaped = int(pidfile.read_text())
        assert os.getsid(escaped) == escaped  # it really left relgate's group and session
        proc.kill()
        proc.wait(timeout=WAIT_S)
        assert wait_for(lambda: pid_gone(escaped)), "the escaped process outlived a SIGKILLed relgate"
    finally:
        proc.kill()
        if escaped and not pid_gone(escaped):
            os.kill(escaped, signal.SIGKILL)


def test_a_step_that_escapes_before_relgate_learns_its_pid_is_still_ended(tmp_path: Path) -> None:
    # CI caught it: under load the step's child ran, left its group with setsid and wrote its
    # pid before Popen returned in relgate, and relgate was SIGKILLed then: the guardian had not
    # heard of the step. It is told the step's tag before the fork; here that is all it heard
    # when relgate's end (its pipe closing) comes.
    from relgate.run.guard import TAG_VAR, Guardian, new_tag

    tag = new_tag()
    guardian = Guardian(0.2)
    guardian.expect(tag)
    pidfile = tmp_path / "escaped.pid"
    escaped = subprocess.Popen(["sh", "-c", f"trap '' TERM; echo $$ > {pidfile}; while :; do sleep 1; done"],
                               env={**os.environ, TAG_VAR: tag}, start_new_session=True)
    try:
        assert wait_for(pidfile.exists), "the step never started"
        assert guardian._proc is not None and guardian._proc.stdin is not None
        guardian._proc.stdin.close()  # relgate is gone
        assert wait_for(lambda: escaped.poll() is not None), "the escaped process outlived relgate"
        assert escaped.returncode == -signal.SIGKILL  # it ignored the TERM; the KILL after the grace ended it
    finally:
        if escaped.poll() is None:
            escaped.kill()
            escaped.wait()


def test_a_process_that_escapes_with_setsid_is_reported_and_stopped(tinyinfer: Project, tmp_path: Path) -> None:
    pidfile = tmp_path / "escaped.pid"
    one_check(tinyinfer, f"setsid sh -c 'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; sleep 1; "
                         f"echo late output; exec sleep 1000' & "
                         f"while [ ! -s {pidfile} ]; do sleep 0.05; done; echo main done")
    done = tinyinfer.relgate("host", timeout=int(WAIT_S))
    escaped = int(pidfile.read_text())
    try:
        out = done.stdout + done.stderr
        assert "Traceback" not in out and "Exception in thread" not in out, out
        assert wait_for(lambda: not Path(f"/proc/{escaped}").exists()
                        or Path(f"/proc/{escaped}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
        rows = tinyinfer.ledger_steps()
        row = next(r for r in rows if r["step"] == "noisy")
        assert "outlived the command" in (row["reason"] or ""), row
        log = (tinyinfer.home / row["log_path"]).read_text()
        assert f"pid {escaped}" in log and "killed" in log
    finally:
        try:
            os.kill(escaped, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize(("first", "last", "made", "alive", "pid_max", "ring"), [
    (5000, 5040, 40, 300, 32768, (5000, 5040)),  # the usual case: the pids since the step's own
    (32000, 700, 1100, 300, 32768, (32000, 700)),  # the allocator wrapped: from 32000 round to 700
    (5000, 5040, 16000, 800, 32768, None),  # so many new tasks it may have come round past 5000
    (5000, 5040, 100, 31600, 32768, None),  # so many pids in use that skipping them may have too
    (5000, 5040, -1, 300, 32768, None),  # a count that went back: nothing is assumed
])
def test_the_pids_a_step_can_have_made_are_a_ring_or_unknown(first: int, last: int, made: int, alive: int,
                                                              pid_max: int, ring: tuple[int, int] | None) -> None:
    from relgate.run.guard import ring as pid_ring

    assert pid_ring(first, last, made=made, alive_before=alive, pid_max=pid_max) == ring


def test_only_the_processes_made_since_the_mark_are_read_and_all_of_them_are_found(tmp_path: Path) -> None:
    from relgate.run.guard import TAG_VAR, fork_mark, new_tag, tagged

    tag = new_tag()
    env = {**os.environ, TAG_VAR: tag}
    before = subprocess.Popen(["sleep", "1000"], env=env, start_new_session=True)
    mark = fork_mark()
    after = subprocess.Popen(["sleep", "1000"], env=env, start_new_session=True)
    pidfile = tmp_path / "grandchild.pid"
    try:
        assert mark is not None  # this machine's /proc has the counts
        # one that left its session, made by a process of the step (as a test's daemon is)
        subprocess.run(["sh", "-c", f"setsid sleep 1000 & echo $! > {pidfile}"], env=env, check=True)
        grandchild = int(pidfile.read_text())
        # read once it is sleep: a process in the middle of an exec shows no environment yet
        assert wait_for(lambda: Path(f"/proc/{grandchild}/cmdline").read_bytes().startswith(b"sleep\0"))
        assert sorted(tagged(tag, since=(mark, after.pid))) == sorted([after.pid, grandchild])
        assert sorted(tagged(tag)) == sorted([before.pid, after.pid, grandchild])  # without a mark: all
        made, alive = mark
        assert sorted(tagged(tag, since=((made - 10**9, alive), after.pid))) == sorted(
            [before.pid, after.pid, grandchild])  # a count that says the pids went round: all are read
    finally:
        for proc in (before, after):
            proc.kill()
            proc.wait()
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("via", ["relgate", "nox"])
def test_a_ledger_damaged_between_runs_is_refused_before_anything_runs(tinyinfer: Project, tmp_path: Path,
                                                                       via: str) -> None:
    marker = tmp_path / "ran"
    one_check(tinyinfer, f"touch {marker}")
    first = tinyinfer.relgate("host")
    assert first.returncode == 0, first.stdout + first.stderr
    marker.unlink()
    db = tinyinfer.home / "ledger.sqlite3"
    data = bytearray(db.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)  # garbage over every page but the header
    db.write_bytes(bytes(data))
    before = db.read_bytes()
    done = tinyinfer.relgate("host") if via == "relgate" else tinyinfer.nox("host")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out and f"{db}: not a healthy SQLite ledger" in out
    assert not marker.exists()  # nothing ran
    assert db.read_bytes() == before  # nothing wrote into it


def test_an_interrupted_run_leaves_no_stale_green_report(tinyinfer: Project, tmp_path: Path) -> None:
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    extra = ("--report", str(report), "--junit", str(junit))
    one_check(tinyinfer, "true", name="quick")
    done = tinyinfer.relgate("host", *extra)
    assert done.returncode == 0 and json.loads(report.read_text())["ok"] is True, done.stdout
    proc, pgid = start_stubborn(tinyinfer, tmp_path, kill_guardian=False, extra=extra)
    try:
        data = json.loads(report.read_text())  # while the run goes on
        assert data["ok"] is False and data["status"] == "running"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=WAIT_S)
        data = json.loads(report.read_text())
        assert data["ok"] is False and data["status"] == "running", data
        assert 'errors="1"' in junit.read_text() and "not finished" in junit.read_text()
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        proc.kill()
