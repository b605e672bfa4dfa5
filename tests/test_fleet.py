"""Many hosts at once, over real sshd servers in network namespaces this module makes.

Each host is its own namespace (``tests/netns_support.py``): its own address, its own sshd;
a command's ``ip addr`` output proves where it ran. Parallelism is shown without timing:
steps wait at a barrier on the shared file system that only opens when enough of them run
at the same time (serial runs would fail the step, not just be slow).
"""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from netns_support import NetnsHost, netns_hosts, netns_missing

from conftest import git, ledger_of, pid_gone, wait_for
from relgate.core.schema import read_toml
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts, read_git_facts
from relgate.ledger.store import Ledger
from relgate.manifest.specs import CommandSpec, parse_host
from relgate.run.hosts import Host, HostFacts
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool

FILE_SECONDS = 20  # about how long this file takes here: it starts early (tests/conftest.py)

pytestmark = pytest.mark.skipif(netns_missing() is not None, reason=f"no namespace hosts here: {netns_missing()}")

@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("netns")
    with netns_hosts(tmp, 4) as hosts:
        yield hosts


def _facts(tmp: Path) -> GitFacts:
    """The facts of a real one-commit repository (the steps here run in ``tmp``, not in it)."""
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    return read_git_facts(repo)


def _pool(tmp: Path, hosts: list[NetnsHost], *, boards: dict[int, str] | None = None) -> HostPool:
    from relgate.remote.ssh import SshExecutor

    specs, executors = [], {}
    for i, h in enumerate(hosts):
        name = f"ns{i + 1}"
        path = h.host_file(tmp / "hosts", name, extra='detect = false\nconnect_timeout = 5\n')
        spec = parse_host(read_toml(path), path=path)
        board = (boards or {}).get(i)
        host = Host(spec=spec, facts=HostFacts(boards=(board,) if board else (), capabilities=frozenset({"sh"})))
        specs.append(host)
        executors[name] = SshExecutor(host)
    return HostPool(specs, executors)


class _Collect:
    def __init__(self) -> None:
        self.finished: list[str] = []

    def step_started(self, step, host) -> None:  # type: ignore[no-untyped-def]
        pass

    def step_finished(self, outcome) -> None:  # type: ignore[no-untyped-def]
        self.finished.append(outcome.step.name)


def _run(tmp: Path, steps: list[PlannedStep], pool: HostPool, **kw):  # type: ignore[no-untyped-def]
    from relgate.remote.fleet import run_fleet

    facts = _facts(tmp)
    with Ledger.open(tmp / "home") as ledger:
        run_id = ledger.begin_run(session="gate", argv=[], project="t", project_root=tmp, commit=facts.commit,
                                  branch="main", dirty=False)
        result = run_fleet(steps, session="gate", run_id=run_id, facts=facts, pool=pool, ledger=ledger,
                           reporter=_Collect(), **kw)
        rows = {r.step: r for r in ledger.steps(run_id=run_id)}
    return result, rows


def _barrier(gate: Path, need: int) -> str:
    """Shell: announce this host at ``gate``, wait until ``need`` hosts are there at once."""
    return (f'mkdir -p {gate}; touch {gate}/$RG_NAME; n=0; '
            f'while [ $(ls {gate} | wc -l) -lt {need} ]; do n=$((n+1)); '
            f'[ $n -gt 300 ] && {{ echo "alone at the barrier"; exit 7; }}; sleep 0.1; done; '
            f'echo "met {need} at the barrier"; sleep 0.5; rm -f {gate}/$RG_NAME')


def _step(name: str, shell: str, cwd: Path, **kw) -> PlannedStep:  # type: ignore[no-untyped-def]
    return PlannedStep(name=name, commands=(CommandSpec(shell=shell),), cwd=cwd, lane="gate", target=name, **kw)


def test_a_lane_runs_on_every_matching_host_in_parallel_results_per_host(ns, tmp_path: Path) -> None:
    from relgate.remote.fleet import spread

    pool = _pool(tmp_path, ns[:3])
    gate = tmp_path / "gate"
    probe = _step("probe", "echo RG_NAME=$RG_NAME; ip -4 -br addr show; " + _barrier(gate, 3), tmp_path,
                  env={"RG_NAME": "x"})
    steps = spread([probe], pool.hosts)
    steps = [replace(s, env={"RG_NAME": s.host}) for s in steps]
    assert [s.name for s in steps] == ["probe@ns1", "probe@ns2", "probe@ns3"]
    result, rows = _run(tmp_path, steps, pool)
    assert set(result.hosts) == {"ns1", "ns2", "ns3"} and not result.failed
    for i, h in enumerate(ns[:3]):
        name = f"ns{i + 1}"
        outcome, = result.hosts[name].outcomes
        assert outcome.verdict is Verdict.PASS, outcome.reason
        log = outcome.log_path.read_text()
        assert h.address in log and "met 3 at the barrier" in log  # ran there, while the others ran
        assert all(o.address not in log for o in ns[:3] if o is not h)
        assert rows[f"probe@{name}"].host == name


def test_the_bound_on_workers_holds(ns, tmp_path: Path) -> None:
    pool = _pool(tmp_path, ns[:3])
    live, peak = tmp_path / "live", tmp_path / "peak"
    live.mkdir()
    count = (f"touch {live}/$RG_NAME; ls {live} | wc -l >> {peak}; sleep 1; rm {live}/$RG_NAME")
    steps = [_step(f"count@{h.name}", count, tmp_path, host=h.name, env={"RG_NAME": h.name}) for h in pool.hosts]
    result, _ = _run(tmp_path, steps, pool, workers=2)
    assert not result.failed
    seen = [int(x) for x in peak.read_text().split()]
    assert len(seen) == 3 and max(seen) <= 2


def test_sshd_killed_mid_lane_that_host_is_error_with_its_partial_log_the_others_finish(ns, tmp_path: Path) -> None:
    pool = _pool(tmp_path, ns[:3])
    marks = tmp_path / "marks"
    marks.mkdir()
    slow = f"echo started on $RG_NAME; touch {marks}/$RG_NAME; sleep 4; echo finished on $RG_NAME"
    steps = []
    for h in pool.hosts:
        steps.append(_step(f"first@{h.name}", slow, tmp_path, host=h.name, env={"RG_NAME": h.name}))
        steps.append(_step(f"second@{h.name}", "echo second on $RG_NAME", tmp_path, host=h.name,
                           env={"RG_NAME": h.name}))
    victim = ns[1].sshd

    def kill_when_started() -> None:
        if wait_for((marks / "ns2").exists):
            victim.stop()  # the listener and every session: the connection drops mid-command

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    try:
        result, rows = _run(tmp_path, steps, pool)
    finally:
        killer.join()
        ns[1].restart_sshd()
    broken = result.hosts["ns2"].outcomes
    assert [o.verdict for o in broken] == [Verdict.ERROR, Verdict.ERROR]
    assert "lost" in (broken[0].reason or "")
    partial = broken[0].log_path.read_text()
    assert "started on ns2" in partial and "finished on ns2" not in partial
    assert rows["second@ns2"].verdict is Verdict.ERROR  # the host is gone: within its connect timeout
    for name in ("ns1", "ns3"):
        outcomes = result.hosts[name].outcomes
        assert [o.verdict for o in outcomes] == [Verdict.PASS, Verdict.PASS], [o.reason for o in outcomes]
        assert f"finished on {name}" in outcomes[0].log_path.read_text()
    assert set(result.failed) == {"ns2"} and set(result.succeeded) == {"ns1", "ns3"}


# --- multi-host steps: workers first, then the leader ----------------------------------------------

WORKER = """
import os, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
print("READY", os.environ["RELGATE_ROLE"], os.environ["RELGATE_ROLE_ADDRESS"], flush=True)
while True:  # a readiness probe connects and says nothing; the leader says ping
    c, _ = s.accept(); data = c.recv(16)
    if data:
        c.sendall(data.upper() + b"@" + os.environ["RELGATE_ROLE_ADDRESS"].encode()); c.close(); break
    c.close()
print("served; ending", flush=True)
"""
LEADER = """
import os, socket
print("workers:", os.environ["RELGATE_WORKERS"], "shards:", os.environ["RELGATE_ROLE_SHARD"], flush=True)
for peer in os.environ["RELGATE_WORKERS"].split(","):
    host, port = peer.rsplit(":", 1)
    c = socket.create_connection((host, int(port)), timeout=10); c.sendall(b"ping"); print("reply", c.recv(64).decode())
"""


def _multihost(tmp: Path, toml: str):  # type: ignore[no-untyped-def]
    import tomllib

    from relgate.core.schema import Checker
    from relgate.manifest.lanes import BUILTIN_LANE_DEFS, parse_many_hosts

    c = Checker(tmp / "lanes.toml")
    _, steps = parse_many_hosts(c, tomllib.loads(toml), BUILTIN_LANE_DEFS)
    assert not c.problems, c.problems
    return steps["tp"]


def test_multihost_workers_ready_then_the_leader_with_their_addresses_every_role_logged(ns, tmp_path: Path) -> None:
    from relgate.remote.roles import plan_multihost

    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "leader.py").write_text(LEADER)
    spec = _multihost(tmp_path, f"""
[multihost.tp]
lane = "gate"
timeout = 60
[multihost.tp.role.shard]
command = "python3 {tmp_path}/worker.py 7101"
ready_port = 7101
[multihost.tp.role.worker]
command = "python3 {tmp_path}/worker.py 7102"
ready_line = "^READY"
port = 7102
[multihost.tp.role.leader]
command = "python3 {tmp_path}/leader.py"
""")
    pool = _pool(tmp_path, ns[:3])
    result, rows = _run(tmp_path, [], pool, alone=[plan_multihost(spec, pool, cwd=tmp_path)])
    outcome, = result.alone
    log = outcome.log_path.read_text()
    assert outcome.verdict is Verdict.PASS, (outcome.reason, log)
    shard, worker = ns[0].address, ns[1].address
    assert f"leader@ns3 | workers: {shard}:7101,{worker}:7102 shards: {shard}:7101" in log
    assert f"leader@ns3 | reply PING@{shard}:7101" in log and f"leader@ns3 | reply PING@{worker}:7102" in log
    assert "shard@ns1 | served; ending" in log and "worker@ns2 | READY worker" in log
    assert log.index("worker@ns2 ready") < log.index("starting leader@ns3")
    assert rows["tp"].verdict is Verdict.PASS


def _hang(tmp: Path, name: str, before: str) -> str:
    """A role that says ``before``, writes its pid to tmp/NAME.pid, then would run a minute."""
    return (f"sh -c 'echo {before}; echo $$ > {tmp}/{name}.pid; sleep 60; echo {name} ran to the end'")


def _gone(pidfile: Path) -> bool:
    """Whether the process whose pid the file holds has ended (a zombie has: unreaped)."""
    return wait_for(lambda: pid_gone(int(pidfile.read_text().strip())))


def test_multihost_a_role_host_failing_stops_every_role_and_the_step_is_error(ns, tmp_path: Path) -> None:
    from relgate.remote.roles import plan_multihost

    spec = _multihost(tmp_path, f"""
[multihost.tp]
lane = "gate"
[multihost.tp.role.worker]
shell = true
command = "{_hang(tmp_path, 'worker', 'READY')}"
ready_line = "READY"
[multihost.tp.role.leader]
shell = true
command = "{_hang(tmp_path, 'leader', 'leading')}"
""")
    pool = _pool(tmp_path, [ns[3], ns[2]])  # the worker on ns1 (ns[3]), whose sshd dies; the leader on ns2
    marker = tmp_path / "leader.pid"

    def kill_worker_host() -> None:
        if wait_for(marker.exists):
            ns[3].sshd.stop()

    killer = threading.Thread(target=kill_worker_host)
    killer.start()
    try:
        result, rows = _run(tmp_path, [], pool, alone=[plan_multihost(spec, pool, cwd=tmp_path)])
    finally:
        killer.join()
        ns[3].restart_sshd()
    outcome, = result.alone
    log = outcome.log_path.read_text()
    assert outcome.verdict is Verdict.ERROR, (outcome.reason, log)
    assert "host ns1 failed (worker@ns1)" in (outcome.reason or "") and "every role was stopped" in outcome.reason
    assert "# relgate: stopping leader@ns2" in log and "leader@ns2 | leading" in log
    assert "| leader ran to the end" not in log and "| worker ran to the end" not in log
    # the leader's group was ended through its own host; the worker's by its watchdog
    assert _gone(tmp_path / "leader.pid") and _gone(tmp_path / "worker.pid")
    assert rows["tp"].verdict is Verdict.ERROR


def test_multihost_a_worker_that_outlives_the_leader_is_stopped_and_fails_the_step(ns, tmp_path: Path) -> None:
    from relgate.remote.roles import plan_multihost

    spec = _multihost(tmp_path, f"""
[multihost.tp]
lane = "gate"
worker_grace = 1
[multihost.tp.role.worker]
shell = true
command = "{_hang(tmp_path, 'worker', 'READY')}"
ready_line = "READY"
[multihost.tp.role.leader]
command = "echo leader done"
""")
    pool = _pool(tmp_path, ns[:2])
    result, _ = _run(tmp_path, [], pool, alone=[plan_multihost(spec, pool, cwd=tmp_path)])
    outcome, = result.alone
    assert outcome.verdict is Verdict.FAIL
    assert outcome.reason == "worker@ns1 did not end within 1 s after the leader (stopped)"
    assert "leader@ns2 | leader done" in outcome.log_path.read_text()
    assert _gone(tmp_path / "worker.pid")


def test_multihost_not_enough_hosts_is_not_run_with_the_reason(ns, tmp_path: Path) -> None:
    from relgate.remote.roles import plan_multihost

    spec = _multihost(tmp_path, """
[multihost.tp]
lane = "gate"
[multihost.tp.role.worker]
command = "true"
count = 2
requires = ["metal"]
ready_line = "x"
[multihost.tp.role.leader]
command = "true"
""")
    pool = _pool(tmp_path, ns[:2])
    result, _ = _run(tmp_path, [], pool, alone=[plan_multihost(spec, pool, cwd=tmp_path)])
    outcome, = result.alone
    assert outcome.verdict is Verdict.NOT_RUN
    assert outcome.reason == "role worker needs 2 host(s) offering metal besides the other roles' (free: none)"


# --- through the command line: lanes.toml [fleet], per-board lanes, release targets on a host ----------

FLEET_LANES = """
[lanes]
"kernels-cpu" = "gate"
"qual-tool" = "qualification"

[target.kernels-cpu]
path = "tests/test_kernels.c"
command = "make test"
requires = ["netns"]
evidence = true

[target.qual-tool]
path = "src/cli.c"
command = "sh -c 'echo qualifying on $(hostname -I 2>/dev/null || ip -4 -br addr)'"
requires = ["netns"]

[fleet]
every_host = ["gate"]
workers = 4
"""


def _fleet_project(tmp_path: Path, ns: list[NetnsHost], boards: list[str]):  # type: ignore[no-untyped-def]
    from conftest import copy_example

    project = copy_example(tmp_path, "tinyinfer")
    (project.manifests / "lanes.toml").write_text(FLEET_LANES)
    for i, (h, board) in enumerate(zip(ns, boards)):
        h.host_file(project.hosts, f"ns{i + 1}", extra=f'capabilities = ["netns"]\nboards = ["{board}"]\n'
                                                       f'toolkit = "tk 1"\nconnect_timeout = 5\n')
    return project


def test_cli_gate_on_every_host_of_the_fleet_evidence_back_per_host_one_bad_host_does_not_stop_the_others(
        ns, tmp_path: Path) -> None:
    project = _fleet_project(tmp_path, ns[:3], ["H200", "H200", "L4"])
    (project.hosts / "ns3.known_hosts").write_text(ns[0].sshd.known_hosts_line.replace(ns[0].address, ns[2].address)
                                                   + "\n")  # ns3 presents a key we never trusted
    done = project.relgate("lane", "gate")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = project.ledger_rows()
    for name in ("ns1", "ns2"):
        row = rows[f"kernels-cpu@{name}"]
        assert row["verdict"] == "pass" and row["host"] == name and row["board"] == "H200", row
    bad = rows["kernels-cpu@ns3"]
    assert bad["verdict"] == "error" and bad["host"] == "ns3" and "ssh-keyscan" in bad["reason"], bad
    assert "host ns1: 1 pass" in done.stdout and "host ns3: 1 error" in done.stdout
    with ledger_of(project) as ledger:
        captured = {e.step_id for e in ledger.evidence()}
    assert {rows["kernels-cpu@ns1"]["id"], rows["kernels-cpu@ns2"]["id"]} <= captured


def test_cli_qualification_runs_once_per_board_and_toolkit_across_the_fleet(ns, tmp_path: Path) -> None:
    project = _fleet_project(tmp_path, ns[:3], ["H200", "H200", "L4"])
    done = project.relgate("lane", "qualification", "qual-tool")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert sorted(rows) == ["lane-census", "qual-tool@ns1", "qual-tool@ns3"]  # ns2: another H200, same toolkit
    assert rows["lane-census"]["verdict"] == "pass" and rows["lane-census"]["host"] == "local"  # once, here
    log = (project.home / rows["qual-tool@ns3"]["log_path"]).read_text()
    assert f"qualifying on {ns[2].address}" in log or ns[2].address in log


def test_cli_release_targets_run_on_their_host_warning_free_by_the_same_scanners(ns, tmp_path: Path) -> None:
    project = _fleet_project(tmp_path, ns[:3], ["H200", "H200", "L4"])
    (project.root / "warnme.c").write_text("int f(void) { int unused = 1; return 0; }\n")
    project.commit("a file that warns")
    (project.manifests / "builds.toml").write_text("""
[release.spark]
clean = "make clean"
run = "make cpu"
host = "ns2"

[release.strix]
run = "cc -Wall -Wextra -c warnme.c -o warnme.o"
host = "ns3"

[[check]]
name = "release-spark"
release = "spark"

[[check]]
name = "release-strix"
release = "strix"
""")
    done = project.relgate("host")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert rows["release-spark"]["verdict"] == "pass" and rows["release-spark"]["host"] == "ns2"
    spark_log = (project.home / rows["release-spark"]["log_path"]).read_text()
    assert "ar rcs build/libtinyinfer.a" in spark_log and "HEAD of" in spark_log  # built there, on the commit
    strix = rows["release-strix"]
    assert strix["verdict"] == "fail" and strix["host"] == "ns3"
    assert "1 warning, first warnme.c:1" in strix["reason"] and "unused" in strix["reason"]


def test_cli_a_release_target_naming_an_undeclared_host_is_a_manifest_error(tmp_path: Path) -> None:
    from conftest import copy_example

    project = copy_example(tmp_path, "tinyinfer")
    (project.manifests / "builds.toml").write_text('[release.spark]\nrun = "make cpu"\nhost = "sparc"\n\n'
                                                   '[[check]]\nname = "release-spark"\nrelease = "spark"\n')
    (project.hosts / "spark.toml").write_text('[host]\nname = "spark"\nkind = "local"\n')
    done = project.relgate("host")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert 'builds.toml: release-spark: host: no host "sparc"' in done.stderr
    assert 'did you mean "spark"?' in done.stderr


def test_cli_sigterm_during_a_fleet_lane_ends_the_commands_on_every_host_and_the_run_is_interrupted(
        ns, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    project = _fleet_project(tmp_path, ns[:2], ["H200", "L4"])
    marks = tmp_path / "marks"
    marks.mkdir()
    (project.manifests / "lanes.toml").write_text(f"""
[lanes]
"kernels-cpu" = "gate"
[target.kernels-cpu]
path = "tests/test_kernels.c"
command = "sh -c 'echo $$ > {marks}/$(hostname -I | tr -d \\" \\").pid; exec sleep 60'"
requires = ["netns"]
[fleet]
every_host = ["gate"]
""")
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "lane", "gate", "--report", str(report),
                             "--junit", str(junit)], env=project.env, cwd=project.root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(list(marks.glob("*.pid"))) == 2)
        pids = sorted(marks.glob("*.pid"))
        assert len(pids) == 2, proc.communicate(timeout=60)
        running = json.loads(report.read_text())  # written at the start, as a local run's is
        assert running["ok"] is False and running["status"] == "running", running
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    for pidfile in pids:  # the remote commands did not outlive the run
        assert _gone(pidfile), pidfile.name
    with ledger_of(project) as ledger:
        assert ledger.runs()[-1].outcome == "interrupted"
        stopped = [s for s in ledger.steps(run_id=ledger.runs()[-1].id) if s.step != "lane-census"]
        assert len(stopped) == 2 and all(s.verdict is not Verdict.PASS for s in stopped), stopped
        # recorded as stopped by the signal, as locally; not as a lost connection
        assert all(s.verdict is Verdict.ERROR and s.reason == "interrupted by SIGTERM while running"
                   for s in stopped), [(s.step, s.verdict, s.reason) for s in stopped]
    assert json.loads(report.read_text())["status"] == "running"  # never a green left behind
    assert "not finished" in junit.read_text()


def test_cli_sigterm_during_a_fleet_lane_stops_this_machines_step_too_and_records_it_interrupted(
        tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    project = _fleet_project(tmp_path, [], [])  # the fleet is this machine alone: its worker is a thread
    pidfile = tmp_path / "local.pid"
    (project.manifests / "lanes.toml").write_text(f"""
[lanes]
"kernels-cpu" = "gate"
[target.kernels-cpu]
path = "tests/test_kernels.c"
command = "sh -c 'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 600'"
[fleet]
every_host = ["gate"]
""")
    proc = subprocess.Popen([sys.executable, "-m", "relgate.cli", "lane", "gate"], env=project.env, cwd=project.root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(pidfile.exists), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)  # not the 600 s the step would run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert _gone(pidfile)
    with ledger_of(project) as ledger:
        assert ledger.runs()[-1].outcome == "interrupted"
        stopped = [s for s in ledger.steps(run_id=ledger.runs()[-1].id) if s.step != "lane-census"]
        assert [(s.verdict, s.reason) for s in stopped] == [(Verdict.ERROR, "interrupted by SIGTERM while running")]


def test_an_exclusive_host_runs_its_steps_one_after_another_under_one_lock_for_the_lane(ns, tmp_path: Path) -> None:
    project = _fleet_project(tmp_path, ns[:2], ["H200", "L4"])
    (project.hosts / "ns1.toml").write_text((project.hosts / "ns1.toml").read_text() + "exclusive = true\n")
    marks = tmp_path / "marks"
    marks.mkdir()
    (project.manifests / "lanes.toml").write_text(f"""
[lanes]
"first" = "gate"
"second" = "gate"
[target.first]
path = "src/cli.c"
command = "sh -c 'sleep 1; touch {marks}/first-done-$(hostname -I | tr -d \\" \\")'"
requires = ["netns"]
[target.second]
path = "src/kernels_cpu.c"
command = "sh -c 'test -e {marks}/first-done-$(hostname -I | tr -d \\" \\")'"
requires = ["netns"]
[fleet]
every_host = ["gate"]
""")
    # Each host's second step passes only when that host's first one has ended before it started.
    done = project.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert {n: r["verdict"] for n, r in rows.items()} == {
        "lane-census": "pass", "first@ns1": "pass", "second@ns1": "pass", "first@ns2": "pass", "second@ns2": "pass"}
    first = (project.home / rows["first@ns1"]["log_path"]).read_text()
    second = (project.home / rows["second@ns1"]["log_path"]).read_text()
    assert "ns1: locked for this lane" in first and "locked" not in second  # one lock, for the whole lane


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_a_registry_outage_is_one_error_per_host_across_the_fleet(ns, tmp_path: Path) -> None:
    crate = tmp_path / "fetcher"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "fetcher"\nversion = "0.1.0"\nedition = "2021"\n'
                                      '[dependencies]\nserde = "1"\n')
    (crate / "src" / "main.rs").write_text("fn main() {}\n")
    pool = _pool(tmp_path, ns[:2])
    steps = []
    for h in pool.hosts:  # each host its own cargo home and target dir: no lock shared between hosts
        home = tmp_path / f"cargo-home-{h.name}"
        home.mkdir()
        (home / "config.toml").write_text('[source.crates-io]\nreplace-with = "dead"\n'
                                          '[source.dead]\nregistry = "sparse+http://127.0.0.1:1/index/"\n'
                                          "[net]\nretry = 1\n")
        env = {"CARGO_HOME": str(home), "CARGO_TARGET_DIR": str(tmp_path / f"target-{h.name}"),
               "PATH": f"{Path(shutil.which('cargo') or '').parent}:/usr/bin:/bin"}
        steps += [_step(f"fetch-{n}@{h.name}", "cargo build", crate, host=h.name, env=env) for n in range(3)]
    result, rows = _run(tmp_path, steps, pool)
    for h in pool.hosts:
        first = rows[f"fetch-0@{h.name}"]
        assert first.verdict is Verdict.ERROR and first.reason.startswith("cargo cannot reach its registry"), first
        assert first.duration > 0.0
        for n in (1, 2):  # recorded at once as the same error, naming the step that found it on this host
            row = rows[f"fetch-{n}@{h.name}"]
            assert row.verdict is Verdict.ERROR and row.duration == 0.0, row
            assert row.reason == (f"cargo cannot reach its registry (found by fetch-0@{h.name} on {h.name} "
                                  "in this run; not retried)")
    assert set(result.hosts) == {"ns1", "ns2"}
