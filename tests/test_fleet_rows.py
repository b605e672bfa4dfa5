"""Fleet runs, as the ledger and the reports keep them, over real OpenSSH servers on 127.0.0.1
(one per host): a multi-host step records one row per role (its host, board, log, verdict)
beside the step's row with the leader's verdict, and `relgate status` lists them; SIGTERM
during it records every role as interrupted, not as a lost connection; the --report file says
"running" before the first remote step."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_support import Sshd, sshd_missing, start_sshd

from conftest import Project, copy_example, ledger_of, pid_gone, wait_for
from relgate.core.verdict import Verdict

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=sshd_missing() or "")

BOARDS = ["H200", "H200", "L4"]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Sshd]]:
    started: list[Sshd] = []
    try:
        for i in range(3):
            started.append(start_sshd(tmp_path / f"sshd{i + 1}"))
        yield started
    finally:
        for server in started:
            server.stop()


def _project(tmp_path: Path, servers: list[Sshd], multihost: str) -> Project:
    project = copy_example(tmp_path, "tinyinfer")
    (project.manifests / "lanes.toml").write_text(
        '[lanes]\n"kernels-cpu" = "gate"\n\n[target.kernels-cpu]\npath = "tests/test_kernels.c"\n'
        'command = "true"\n\n' + multihost)
    for i, (server, board) in enumerate(zip(servers, BOARDS)):
        name = f"h{i + 1}"
        server.host_file(project.hosts / f"{name}.toml", name=name, known_hosts=f"{name}.known_hosts",
                         extra=f'capabilities = ["rbox"]\nboards = ["{board}"]\ntoolkit = "tk 1"\ndetect = false\n'
                               'connect_timeout = 10\n')
    return project


def _multihost(marks: Path, leader: str) -> str:
    """Two workers that wait for the leader's mark, then end on their own; the leader runs ``leader``."""
    worker = (f"echo READY $RELGATE_ROLE $RELGATE_ROLE_INDEX; "
              f"while [ ! -e {marks}/leader-done ]; do sleep 0.1; done; echo worker $RELGATE_ROLE_INDEX done")
    return f"""
[multihost.tp]
lane = "gate"
[multihost.tp.role.worker]
shell = true
command = "{worker}"
count = 2
requires = ["rbox"]
ready_line = "^READY"
[multihost.tp.role.leader]
shell = true
command = "{leader}"
requires = ["rbox"]
"""


def test_a_multihost_step_records_one_row_per_role_and_the_leaders_verdict(servers: list[Sshd],
                                                                           tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project = _project(tmp_path, servers, _multihost(
        marks, f"echo leading $RELGATE_WORKERS; touch {marks}/leader-done; echo leader done"))
    done = project.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert rows["tp"]["verdict"] == "pass", rows["tp"]
    roles = {name: row for name, row in rows.items() if name.startswith("tp/")}
    assert sorted(roles) == ["tp/leader@h3", "tp/worker@h1", "tp/worker@h2"], sorted(rows)
    for name, board in (("tp/worker@h1", "H200"), ("tp/worker@h2", "H200"), ("tp/leader@h3", "L4")):
        row = roles[name]
        assert row["verdict"] == "pass" and row["host"] == name.split("@")[1] and row["board"] == board, row
        assert row["toolkit"] == "tk 1" and row["lane"] == "gate" and row["session"] == "gate"
        assert row["run_id"] == rows["tp"]["run_id"]
        own = (project.home / row["log_path"]).read_text()
        assert " | " not in own  # its own output, not the step's prefixed lines
        says = {"tp/worker@h1": "worker 0 done", "tp/worker@h2": "worker 1 done", "tp/leader@h3": "leader done"}
        assert says[name] in own, own
    assert "READY worker 0" in (project.home / roles["tp/worker@h1"]["log_path"]).read_text()
    assert "READY worker 1" in (project.home / roles["tp/worker@h2"]["log_path"]).read_text()
    step_log = (project.home / rows["tp"]["log_path"]).read_text()
    assert "leader@h3 | leader done" in step_log and "worker@h1 | READY worker 0" in step_log
    table = project.relgate("status")
    assert table.returncode == 0, table.stderr
    listed = {line.split()[3]: line.split()[4:6] for line in table.stdout.splitlines()[2:] if len(line.split()) > 5}
    assert listed["tp/worker@h1"] == ["h1", "pass"] and listed["tp/leader@h3"] == ["h3", "pass"], table.stdout


def test_a_failing_leader_fails_the_step_and_its_own_row_the_workers_pass(servers: list[Sshd],
                                                                          tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project = _project(tmp_path, servers, _multihost(marks, f"touch {marks}/leader-done; echo wrong; exit 3"))
    done = project.relgate("lane", "gate")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert rows["tp"]["verdict"] == "fail" and rows["tp"]["reason"] == "leader@h3 exit 3", rows["tp"]
    assert (rows["tp/leader@h3"]["verdict"], rows["tp/leader@h3"]["reason"]) == ("fail", "exit 3")
    assert rows["tp/leader@h3"]["exit_code"] == 3
    assert rows["tp/worker@h1"]["verdict"] == "pass" and rows["tp/worker@h2"]["verdict"] == "pass"


def test_sigterm_during_a_multihost_step_records_every_role_interrupted(servers: list[Sshd], tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    leader = f"echo $$ > {marks}/leader.pid; exec sleep 120"
    project = _project(tmp_path, servers, _multihost(marks, leader))
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "lane", "gate", "--report", str(report)],
                            env=project.env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert wait_for((marks / "leader.pid").exists, 120), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert wait_for(lambda: pid_gone(int((marks / "leader.pid").read_text())))  # the leader did not outlive it
    with ledger_of(project) as ledger:
        run = ledger.runs()[-1]
        assert run.outcome == "interrupted"
        steps = {s.step: s for s in ledger.steps(run_id=run.id)}
    assert sorted(steps) == ["kernels-cpu", "lane-census", "tp", "tp/leader@h3", "tp/worker@h1", "tp/worker@h2"]
    for name in ("tp", "tp/leader@h3", "tp/worker@h1", "tp/worker@h2"):
        s = steps[name]
        assert (s.verdict, s.reason) == (Verdict.ERROR, "interrupted by SIGTERM while running"), (name, s.reason)
    assert not any("connection" in (s.reason or "") for s in steps.values())
    assert json.loads(report.read_text())["status"] == "running"  # never a green left behind


def test_the_report_says_running_before_the_first_remote_step(servers: list[Sshd], tmp_path: Path) -> None:
    """One host accepts the connection and never answers: relgate is dialling it (no step can
    have started) when the report must already say "running" instead of the last run's green."""
    project = copy_example(tmp_path, "tinyinfer")
    (project.manifests / "lanes.toml").write_text(
        '[lanes]\n"kernels-cpu" = "gate"\n\n[target.kernels-cpu]\npath = "tests/test_kernels.c"\n'
        'command = "true"\nrequires = ["rbox"]\n\n[fleet]\nevery_host = ["gate"]\n')
    servers[0].host_file(project.hosts / "h1.toml", name="h1", known_hosts="h1.known_hosts",
                         extra='capabilities = ["rbox"]\ndetect = false\n')
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    port = silent.getsockname()[1]
    servers[1].host_file(project.hosts / "mute.toml", name="mute", known_hosts="mute.known_hosts",
                         extra='capabilities = ["rbox"]\nconnect_timeout = 120\n')  # detected: dialled first
    text = (project.hosts / "mute.toml").read_text().replace(f"port = {servers[1].port}", f"port = {port}")
    (project.hosts / "mute.toml").write_text(text)
    (project.hosts / "mute.known_hosts").write_text(servers[1].known_hosts_line.replace(str(servers[1].port),
                                                                                         str(port)) + "\n")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"ok": True, "status": "done", "steps": []}))  # the last run's green
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    acceptor.start()
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "lane", "gate", "--report", str(report)],
                            env=project.env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert wait_for(lambda: bool(accepted), 120), "relgate never dialled the mute host"
        assert wait_for(lambda: json.loads(report.read_text()).get("status") == "running", 120), report.read_text()
        with ledger_of(project) as ledger:
            assert not ledger.runs()  # still dialling: the run, and every step, is still ahead
        accepted[0].close()  # the mute host hangs up: its step is an error, the others run
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        silent.close()
    assert proc.returncode == 1, out + err
    final = json.loads(report.read_text())
    assert "status" not in final and final["ok"] is False
    verdicts = {s["step"]: s["verdict"] for s in final["steps"]}
    assert verdicts["kernels-cpu@h1"] == "pass" and verdicts["kernels-cpu@mute"] == "error", verdicts
