"""The SSH executor, commit delivery, locks and remote lanes against a real OpenSSH server on
127.0.0.1 (started by the tests, generated host and client keys)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_support import Sshd, keygen, sshd_missing, start_sshd

from conftest import Project, git, ledger_of, pid_gone, speed_exit, wait_for

FILE_SECONDS = 35  # about how long this file takes here: it starts early (tests/conftest.py)

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=sshd_missing() or "")

from relgate.core.schema import read_toml  # noqa: E402
from relgate.manifest.specs import parse_host  # noqa: E402
from relgate.remote.delivery import deliver  # noqa: E402
from relgate.remote.locks import LockHeld, acquire, lock_dir, parse_gpu_processes, release  # noqa: E402
from relgate.remote.ssh import SshError, SshExecutor  # noqa: E402
from relgate.run.executor import CommandRequest, CommandResult  # noqa: E402
from relgate.run.hosts import Host, HostFacts  # noqa: E402


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()


class Sink:
    path = None

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def executor(sshd: Sshd, tmp_path: Path, extra: str = "", name: str = "gpu1") -> SshExecutor:
    path = sshd.host_file(tmp_path / "hosts" / f"{name}.toml", name=name, extra=extra)
    spec = parse_host(read_toml(path), path=path)
    return SshExecutor(Host(spec=spec, facts=HostFacts()))


# --- the executor ---------------------------------------------------------------------------


def test_a_command_streams_its_output_redacted_with_the_same_record_as_locally(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path, extra='env = { HOST_SIDE = "from-the-host-file" }\n')
    sink = Sink()
    result = ex.run(CommandRequest(shell='echo out; echo "tok=$API_TOKEN"; echo err >&2; echo $HOST_SIDE; exit 3',
                                   cwd=Path("/tmp"), env={"API_TOKEN": "s3cr3t-value"}), sink)
    assert isinstance(result, CommandResult)
    assert result.exit_code == 3 and not result.ok and result.spawn_error is None and result.host == "gpu1"
    assert sink.text == "out\ntok=***\nerr\nfrom-the-host-file\n"
    assert "s3cr3t-value" not in result.tail and result.env == {"API_TOKEN": "***"}
    ok = ex.run(CommandRequest(argv=("sh", "-c", "pwd"), cwd=Path("/tmp")), Sink())
    assert ok.ok
    ex.close()


def test_a_missing_working_directory_is_an_error_not_a_failure(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    result = ex.run(CommandRequest(argv=("true",), cwd=Path("/nonexistent/relgate")), Sink())
    assert result.spawn_error == "cannot run on gpu1: working directory /nonexistent/relgate does not exist there"


def test_an_unknown_host_key_is_refused_naming_the_fingerprint_and_how_to_trust_it(sshd: Sshd,
                                                                                   tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    ex.spec.known_hosts.write_text("")  # type: ignore[union-attr]
    result = ex.run(CommandRequest(argv=("true",), cwd=Path("/tmp")), Sink())
    assert result.spawn_error is not None and result.exit_code is None
    message = result.spawn_error
    assert message.startswith(f"gpu1 (127.0.0.1:{sshd.port}): unknown host key ssh-ed25519 ")
    assert sshd.host_key_fingerprint in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {ex.spec.known_hosts}" in message
    # Nothing was learned: the file is still empty, the next connection is refused too.
    assert ex.spec.known_hosts.read_text() == ""  # type: ignore[union-attr]
    with pytest.raises(SshError, match="unknown host key"):
        ex.capture("true")


def test_a_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    other = keygen(tmp_path / "other_host_key")
    kind, blob = Path(str(other) + ".pub").read_text().split()[:2]
    ex.spec.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")  # type: ignore[union-attr]
    with pytest.raises(SshError) as info:
        ex.capture("true")
    message = str(info.value)
    assert "host key CHANGED" in message and sshd.host_key_fingerprint in message
    expected = subprocess.run(["ssh-keygen", "-lf", str(other) + ".pub"], capture_output=True, text=True).stdout
    assert f"expects {expected.split()[1]}" in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {ex.spec.known_hosts}" in message


def test_a_host_that_does_not_answer_is_an_error_after_the_connect_timeout(tmp_path: Path, sshd: Sshd) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts TCP, never says a word (no SSH banner)
    port = silent.getsockname()[1]
    try:
        path = sshd.host_file(tmp_path / "hosts" / "dark.toml", name="dark",
                              extra="connect_timeout = 1\n")
        text = path.read_text().replace(f"port = {sshd.port}", f"port = {port}")
        path.write_text(text)
        ex = SshExecutor(Host(spec=parse_host(read_toml(path), path=path), facts=HostFacts()))
        result = ex.run(CommandRequest(argv=("true",), cwd=Path("/tmp")), Sink())
        assert result.spawn_error is not None
        assert "within the connect timeout (1 s)" in result.spawn_error, result.spawn_error
    finally:
        silent.close()
    refused = sshd.host_file(tmp_path / "hosts" / "off.toml", name="off")
    refused.write_text(refused.read_text().replace(f"port = {sshd.port}", f"port = {port}"))  # closed now
    ex = SshExecutor(Host(spec=parse_host(read_toml(refused), path=refused), facts=HostFacts()))
    result = ex.run(CommandRequest(argv=("true",), cwd=Path("/tmp")), Sink())
    assert result.spawn_error is not None and "cannot connect" in result.spawn_error


def test_the_kept_connection_sends_small_packets_at_once(sshd: Sshd, tmp_path: Path) -> None:
    # A command is a few small messages each way; with Nagle's algorithm on, one of them waits
    # for the host's delayed ACK of the one before (40 ms on Linux) and every short command pays.
    ex = executor(sshd, tmp_path)
    sock = ex._transport().sock
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    assert ex.run(CommandRequest(argv=("true",), cwd=Path("/tmp")), Sink()).ok
    ex.close()


def test_a_command_timeout_ends_the_remote_process_group(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    pids = tmp_path / "pids"
    sink = Sink()
    result = ex.run(CommandRequest(shell=f"sleep 300 & echo $! > {pids}; echo $$ >> {pids}; echo started; wait",
                                   cwd=Path("/tmp"), timeout=1), sink)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert "started\n" in sink.text and "timed out after 1 s" in sink.text
    for pid in map(int, pids.read_text().split()):
        assert wait_for(lambda pid=pid: pid_gone(pid)), f"remote pid {pid} outlived the timeout"


def test_a_dropped_connection_is_an_error_with_the_partial_log_and_ends_the_remote_side(sshd: Sshd,
                                                                                          tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    pids = tmp_path / "pids"
    sink = Sink()

    def kill_when_started() -> None:
        wait_for(lambda: "started" in sink.text)  # then (or after the shared bound, and the test fails) cut it
        sshd.kill_sessions()
        sshd.stop()  # and nobody to reconnect to: the host's watchdog ends the group

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    result = ex.run(CommandRequest(shell=f"sleep 300 & echo $! > {pids}; echo started; wait", cwd=Path("/tmp")), sink)
    killer.join()
    assert result.spawn_error is not None and result.exit_code is None
    assert result.spawn_error.startswith("connection to gpu1 lost while the command ran (the partial log is kept)")
    assert sink.text.startswith("started\n")
    assert wait_for(lambda: pid_gone(int(pids.read_text()))), "the remote command outlived its connection"


# --- locks ----------------------------------------------------------------------------------


def test_an_exclusive_host_held_by_another_run_is_refused_naming_the_holder(sshd: Sshd, tmp_path: Path) -> None:
    first, second = executor(sshd, tmp_path), executor(sshd, tmp_path, name="gpu1b")
    workdir = str(sshd.dir / "work")
    held = acquire(first, workdir=workdir, owner="alice@ci", run_id="run-A")
    with pytest.raises(LockHeld) as info:
        acquire(second, workdir=workdir, owner="bob@laptop", run_id="run-B", wait=0.5)
    message = str(info.value)
    assert "locked by alice@ci, run run-A, pid " in message and "(waited 0.5 s)" in message
    release(first, held)
    mine = acquire(second, workdir=workdir, owner="bob@laptop", run_id="run-B")
    assert mine.owner == "bob@laptop" and mine.pid != held.pid
    release(second, mine)
    assert not Path(lock_dir(workdir)).exists()


def test_a_stale_lock_is_taken_over_saying_so(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    workdir = sshd.dir / "work"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that is dead on this boot
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    lock = Path(lock_dir(str(workdir)))
    lock.mkdir(parents=True)
    (lock / "owner.json").write_text(json.dumps({"owner": "carol@old", "run_id": "run-0", "pid": gone.pid,
                                                 "started": "2026-01-01T00:00:00Z", "boot_id": boot}))
    said: list[str] = []
    taken = acquire(ex, workdir=str(workdir), owner="dave@now", run_id="run-1", say=said.append)
    assert taken.owner == "dave@now"
    assert said == [f"gpu1: taking over a stale lock (carol@old, run run-0, pid {gone.pid} on gpu1, since "
                    f"2026-01-01T00:00:00Z): pid {gone.pid} is gone on this boot"]
    # A lock from before a reboot (another boot id) is stale too, whatever its pid.
    release(ex, taken)
    lock.mkdir()
    (lock / "owner.json").write_text(json.dumps({"owner": "erin@old", "run_id": "run-9", "pid": 1,
                                                 "started": "2026-01-01T00:00:00Z", "boot_id": "0" * 36}))
    said.clear()
    acquire(ex, workdir=str(workdir), owner="dave@now", run_id="run-2", say=said.append)
    assert len(said) == 1 and "the host rebooted since" in said[0]


def test_gpu_preflight_output_is_parsed_with_users() -> None:
    me, procs = parse_gpu_processes("@me ci\n4242,python,2048 MiB,bob\n77,/usr/bin/ollama,512 MiB,ci\n")
    assert me == "ci"
    assert [(p.pid, p.user, p.memory) for p in procs] == [(4242, "bob", "2048 MiB"), (77, "ci", "512 MiB")]


# --- delivery -------------------------------------------------------------------------------


def test_delivery_checks_out_the_exact_commit_and_the_next_one_ships_incrementally(sshd: Sshd, tmp_path: Path,
                                                                                    tinyinfer: Project) -> None:
    ex = executor(sshd, tmp_path)
    workdir = str(sshd.dir / "work")
    first_sha = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    first = deliver(ex, repo=tinyinfer.root, commit=first_sha, workdir=workdir, project="tinyinfer")
    assert not first.incremental and not first.reused and first.bundle_bytes > 0
    assert git(Path(first.checkout), "rev-parse", "HEAD").strip() == first_sha
    again = deliver(ex, repo=tinyinfer.root, commit=first_sha, workdir=workdir, project="tinyinfer")
    assert again.reused and again.bundle_bytes == 0 and again.checkout == first.checkout
    (tinyinfer.root / "NOTES.md").write_text("one more line\n")
    second_sha = tinyinfer.commit("one commit more")
    second = deliver(ex, repo=tinyinfer.root, commit=second_sha, workdir=workdir, project="tinyinfer")
    assert second.incremental and 0 < second.bundle_bytes < first.bundle_bytes / 10
    assert (Path(second.checkout) / "NOTES.md").read_text() == "one more line\n"
    assert git(Path(second.checkout), "rev-parse", "HEAD").strip() == second_sha


# --- whole lanes on the SSH host --------------------------------------------------------------


def remote_lanes(project: Project, sshd: Sshd, *, host_extra: str = "", evidence_command: str | None = None) -> None:
    """kernels-cpu needs the capability only the SSH host offers, so the gate lane runs there."""
    lanes = project.manifests / "lanes.toml"
    text = lanes.read_text().replace('command = "make test"\nevidence = true',
                                     f'command = "{evidence_command or "make test"}"\nevidence = true\n'
                                     'requires = ["remote-box"]', 1)
    assert text != lanes.read_text()
    lanes.write_text(text)
    sshd.host_file(project.hosts / "gpu1.toml", extra='capabilities = ["remote-box"]\n' + host_extra)


def test_a_gate_lane_runs_on_the_ssh_host_with_log_facts_and_evidence_brought_back(sshd: Sshd,
                                                                                    tinyinfer: Project) -> None:
    remote_lanes(tinyinfer, sshd)
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "pass" and row["host"] == "gpu1" and row["dirty"] is False, row
    log = (tinyinfer.home / row["log_path"]).read_text()
    sha = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    assert f"gpu1: HEAD of {sshd.dir / 'work' / 'tinyinfer' / sha} verified = {sha}" in log
    assert "full bundle of" in log and "evidence fetched from gpu1:" in log
    assert re.search(r"test_kernels", log)  # the build and the tests' own output, streamed back
    with ledger_of(tinyinfer) as ledger:
        rows = ledger._conn.execute("SELECT host, path FROM evidence").fetchall()
    assert [r[0] for r in rows] == ["gpu1"]
    assert "kernels" in (tinyinfer.home / rows[0][1]).read_text()
    # The next commit ships as an incremental bundle; the facts were detected on the host.
    (tinyinfer.root / "NOTES.md").write_text("x\n")
    tinyinfer.commit("a small change")
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert "incremental bundle of" in (tinyinfer.home / row["log_path"]).read_text()


def test_a_dirty_tree_ships_the_committed_candidate_and_says_dirty(sshd: Sshd, tinyinfer: Project) -> None:
    remote_lanes(tinyinfer, sshd)
    makefile = tinyinfer.root / "Makefile"
    makefile.write_text(makefile.read_text() + "\n# an uncommitted edit\n")
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "pass" and row["dirty"] is True
    log = (tinyinfer.home / row["log_path"]).read_text()
    assert "the local tree is dirty: the host runs the committed candidate only" in log
    sha = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    assert "uncommitted" not in (sshd.dir / "work" / "tinyinfer" / sha / "Makefile").read_text()


def test_evidence_expected_and_not_brought_back_is_an_error_and_exits_1(sshd: Sshd, tinyinfer: Project) -> None:
    remote_lanes(tinyinfer, sshd, evidence_command="make cpu")  # builds, writes no evidence
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "error" and row["host"] == "gpu1"
    assert row["reason"] == "expected evidence in $TINYINFER_EVIDENCE, none came back (no file)"


def test_a_permission_host_is_used_only_when_the_run_names_it(sshd: Sshd, tinyinfer: Project) -> None:
    remote_lanes(tinyinfer, sshd, host_extra='permission = "the maintainers\' shared box"\n')
    done = tinyinfer.relgate("lane", "gate")
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "not-run" and row["host"] == "-"
    assert "gpu1 may be used only when the run names it (the maintainers' shared box): --allow-host gpu1" \
        in row["reason"]
    assert not (sshd.dir / "work").exists()  # nothing was delivered there
    done = tinyinfer.relgate("lane", "gate", "--allow-host", "gpu1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert tinyinfer.ledger_rows()["kernels-cpu"]["host"] == "gpu1"
    done = tinyinfer.relgate("lane", "gate", "--allow-host", "gpu2")
    assert done.returncode == 2 and "--allow-host gpu2: no host named gpu2" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_exclusive_host_locked_by_another_run_is_an_error_naming_the_holder(sshd: Sshd, tinyinfer: Project,
                                                                              tmp_path: Path) -> None:
    remote_lanes(tinyinfer, sshd, host_extra="exclusive = true\n")
    holder = executor(sshd, tmp_path, name="other")
    lock = acquire(holder, workdir=str(sshd.dir / "work"), owner="alice@ci", run_id="nightly-7")
    try:
        done = tinyinfer.relgate("lane", "gate")
    finally:
        release(holder, lock)
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "error" and "gpu1 is exclusive and locked by alice@ci, run nightly-7" in row["reason"]
    done = tinyinfer.relgate("lane", "gate")  # free again: this run takes the lock, and gives it back
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tinyinfer.home / tinyinfer.ledger_rows()["kernels-cpu"]["log_path"]).read_text()
    assert "gpu1: locked for this lane" in log
    assert not Path(lock_dir(str(sshd.dir / "work"))).exists()


def test_an_unreachable_host_makes_its_steps_errors_and_the_run_exit_1(sshd: Sshd, tinyinfer: Project) -> None:
    remote_lanes(tinyinfer, sshd)
    sshd.stop()
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "error" and row["host"] == "gpu1" and "cannot connect" in row["reason"]


# --- facts over SSH, the GPU preflight ----------------------------------------------------------


def test_facts_are_detected_on_the_host_and_declared_ones_added(sshd: Sshd, tmp_path: Path) -> None:
    from relgate.remote.facts import detect_remote

    ex = executor(sshd, tmp_path, extra='capabilities = ["remote-box"]\ntoolkit = "declared 1.0"\n')
    facts = detect_remote(ex)
    assert {"remote-box", "git", "make"} <= facts.capabilities  # git and make are really there
    assert facts.toolkit == "declared 1.0"


def test_rocm_and_macos_probe_output_is_read() -> None:
    from relgate.manifest.specs import HostSpec
    from relgate.remote.facts import facts_from_probe

    spec = HostSpec(name="strix", kind="ssh", address="10.0.0.9", source=Path("strix.toml"))
    rocm = facts_from_probe(spec, {
        "uname": "Linux x86_64", "tools": "hipcc\nmake",
        "rocminfo": "  Name:                    AMD Ryzen AI MAX+ 395\n  Marketing Name:          AMD Ryzen AI MAX+ 395\n"
                    "  Name:                    gfx1151\n  Marketing Name:          AMD Radeon 8060S Graphics\n",
        "hipcc": "HIP version: 6.4.43482-0f2d60242\nAMD clang version 19.0.0git\n"})
    assert rocm.boards == ("AMD Radeon 8060S Graphics",) and rocm.toolkit == "rocm 6.4"
    assert {"rocm", "gfx1151", "hipcc", "make"} <= rocm.capabilities
    mac = facts_from_probe(spec, {"uname": "Darwin arm64", "tools": "clang\nmake", "macos": "15.1\nApple M3 Max\n"})
    assert mac.boards == ("Apple M3 Max",) and mac.driver == "macOS 15.1" and "metal" in mac.capabilities


def test_gpu_preflight_refuses_when_another_users_process_holds_gpu_memory(sshd: Sshd, tmp_path: Path) -> None:
    """No GPU here: a stand-in nvidia-smi on the host's PATH (through the host file's env) prints
    what the real one prints for a compute process; the process itself is real, and another user's."""
    from relgate.remote.locks import gpu_preflight

    other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "120"])
    try:
        fake = tmp_path / "fakebin"
        fake.mkdir()
        (fake / "nvidia-smi").write_text(f"#!/bin/sh\necho '{other.pid}, python3, 40960 MiB'\n")
        (fake / "nvidia-smi").chmod(0o755)
        env = f'env = {{ PATH = "{fake}:/usr/local/bin:/usr/bin:/bin" }}\n'
        said: list[str] = []
        with pytest.raises(SshError) as info:
            gpu_preflight(executor(sshd, tmp_path, extra=env), say=said.append)
        assert said == [f"gpu1: GPU memory held by pid {other.pid} python3 (40960 MiB) of nobody"]
        assert str(info.value).startswith(f"gpu1: GPU busy: pid {other.pid} python3 (40960 MiB) of nobody;")
        said.clear()
        gpu_preflight(executor(sshd, tmp_path, extra=env + 'allow_busy_gpu = "the night job only reads"\n',
                               name="gpu1x"), say=said.append)
        assert said[-1] == ("gpu1x: starting although another user's process holds GPU memory: "
                            "allow_busy_gpu = 'the night job only reads'")
    finally:
        other.kill()
        other.wait()


def test_a_remote_command_killed_by_a_signal_is_recorded_as_the_signal(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path)
    killed = ex.run(CommandRequest(shell="kill -KILL $$", cwd=Path("/tmp")), Sink())
    assert killed.signal == 9 and killed.exit_code is None and killed.spawn_error is None
    crashed = ex.run(CommandRequest(shell="kill -SEGV $$", cwd=Path("/tmp")), Sink())
    assert crashed.signal == 11


# --- the previous release measured on the same SSH host (found on the H200 run) --------------------------


def test_compare_previous_runs_both_sides_on_the_ssh_host_each_on_its_own_verified_commit(sshd: Sshd,
                                                                                          tinyinfer: Project) -> None:
    """`nox -s compare -- --previous REF` builds REF in a worktree under the ledger home; on the H200
    run the previous side of every CUDA measure was refused ("…/worktrees/… is outside the project").
    Both sides now run on the host that offers the capability, each in the checkout of its own commit."""
    lanes = tinyinfer.manifests / "lanes.toml"
    text = lanes.read_text().replace('command = "make bench"\n', 'command = "make bench"\nrequires = ["remote-box"]\n', 1)
    assert text != lanes.read_text()
    lanes.write_text(text)
    sshd.host_file(tinyinfer.hosts / "gpu1.toml", extra='capabilities = ["remote-box"]\n')
    previous = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    git(tinyinfer.root, "tag", "v0.2.0")
    (tinyinfer.root / "README.md").write_text((tinyinfer.root / "README.md").read_text() + "\nCandidate.\n")
    candidate = tinyinfer.commit("candidate")
    done = tinyinfer.nox("compare", extra=("--", "matvec", "--previous", "v0.2.0"))
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == speed_exit(done.stdout), done.stdout + done.stderr  # timings: any verdict, never a refusal
    with ledger_of(tinyinfer) as ledger:
        steps = [s for s in ledger.steps() if s.session == "compare"]
    assert [s.step for s in steps] == [f"matvec{side}#{i}" for i in range(1, 6) for side in ("@v0.2.0", "")]
    assert all(s.verdict.value == "pass" and s.host == "gpu1" for s in steps), [(s.step, s.reason) for s in steps]
    assert {s.commit_sha for s in steps if "@" in s.step} == {previous}
    assert {s.commit_sha for s in steps if "@" not in s.step} == {candidate}
    logs = {s.step: (tinyinfer.home / s.log_path).read_text() for s in steps if s.log_path}
    work = sshd.dir / "work" / "tinyinfer"
    assert f"HEAD of {work / previous} verified = {previous}" in logs["matvec@v0.2.0#1"]
    assert f"HEAD of {work / candidate} verified = {candidate}" in logs["matvec#1"]
    # A worktree with local changes is neither measured nor shipped as REF: refused before anything runs.
    tree = next((tinyinfer.home / "worktrees").iterdir())
    (tree / "Makefile").write_text((tree / "Makefile").read_text() + "\n# local change\n")
    done = tinyinfer.nox("compare", extra=("--", "matvec", "--previous", "v0.2.0"))
    assert "Traceback" not in done.stdout + done.stderr and done.returncode != 0, done.stdout + done.stderr
    assert f"the worktree {tree} has local changes; it would not measure v0.2.0 as released" in \
        done.stdout + done.stderr


def test_a_build_on_the_ssh_host_that_wrote_nothing_there_fails_built_nothing(sshd: Sshd, tinyinfer: Project) -> None:
    """The "built nothing" rule holds on another machine too: asked there, through the step's own
    connection, on that file system's clock (a marker before the build, find -newer after)."""
    sshd.host_file(tinyinfer.hosts / "gpu1.toml", extra='capabilities = ["remote-box"]\n')
    builds = tinyinfer.manifests / "builds.toml"
    builds.write_text(builds.read_text() + '\n[release.remote]\nrun = "true"\nrequires = ["remote-box"]\n\n'
                      '[[check]]\nname = "release-remote"\nrelease = "remote"\n')
    done = tinyinfer.nox("host", extra=("--", "release-remote"))
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows("host")["release-remote"]
    assert row["host"] == "gpu1" and row["exit_code"] == 0, row
    assert row["verdict"] == "fail" and row["reason"].startswith("built nothing: no file under gpu1:"), row
    log = (tinyinfer.home / row["log_path"]).read_text()
    assert "$ mktemp ./.relgate-build-start.XXXXXX" in log and "-newer ./.relgate-build-start." in log, log
    # the same build writing a file there passes, and leaves no marker behind
    builds.write_text(builds.read_text().replace('run = "true"', 'run = "sh -c \'echo x > built.bin\'"'))
    done = tinyinfer.nox("host", extra=("--", "release-remote"))
    assert done.returncode == 0, done.stdout + done.stderr
    row = tinyinfer.ledger_rows("host")["release-remote"]
    assert row["verdict"] == "pass" and row["host"] == "gpu1", row
    assert "./built.bin" in (tinyinfer.home / row["log_path"]).read_text()
    checkouts = list((sshd.dir / "work").rglob(".relgate-build-start.*"))
    assert checkouts == [], checkouts
    # what it produces is checked there too: a file it wrote passes, one it did not write fails
    builds.write_text(builds.read_text().replace('requires = ["remote-box"]\n',
                                                 'requires = ["remote-box"]\nproduces = ["built.*", "Makefile"]\n', 1))
    done = tinyinfer.nox("host", extra=("--", "release-remote"))
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows("host")["release-remote"]
    assert row["verdict"] == "fail" and row["reason"] == "Makefile older than the step: Makefile was not rebuilt", row
    builds.write_text(builds.read_text().replace('"Makefile"]', '"missing/*.so"]'))
    tinyinfer.nox("host", extra=("--", "release-remote"))
    row = tinyinfer.ledger_rows("host")["release-remote"]
    assert row["verdict"] == "fail" and row["reason"] == "produced nothing matching missing/*.so", row
    builds.write_text(builds.read_text().replace(', "missing/*.so"]', "]"))
    done = tinyinfer.nox("host", extra=("--", "release-remote"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tinyinfer.ledger_rows("host")["release-remote"]["verdict"] == "pass"
    assert list((sshd.dir / "work").rglob(".relgate-build-start.*")) == []
    # a red build is its own verdict, and its marker goes too
    builds.write_text(builds.read_text().replace('run = "sh -c \'echo x > built.bin\'"', 'run = "false"'))
    assert tinyinfer.nox("host", extra=("--", "release-remote")).returncode == 1
    row = tinyinfer.ledger_rows("host")["release-remote"]
    assert row["verdict"] == "fail" and row["exit_code"] == 1, row
    assert list((sshd.dir / "work").rglob(".relgate-build-start.*")) == []
