"""A Slurm cluster as a host, against a real Slurm the tests start (``tests/slurm_support.py``).

Debian's slurmctld, slurmd and munged run with their own config in a temp dir: one node on
127.0.0.1, then two nodes in network namespaces. The GPUs are GRES backed by device files
(no machine here has a GPU: Slurm hands out their indexes and sets CUDA_VISIBLE_DEVICES,
which is all relgate reads); everything else is real: the lanes go through ``nox -s gate``,
each step is an ``srun`` job on a node, the candidate is delivered into the shared work dir
and verified on the node, the evidence comes back into the ledger. Concurrency is shown
without timing: two jobs meet at a barrier that opens only when both run at once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_support import Cluster, NodeSpec, slurm_cluster, slurm_missing

from conftest import NOXFILE, Project, copy_example, git, wait_for

FILE_SECONDS = 60

pytestmark = pytest.mark.skipif(slurm_missing() is not None, reason=f"no Slurm here: {slurm_missing()}")


@pytest.fixture(scope="module")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm1"), [NodeSpec(name="n1", gpu_type="h100", gpus=2)]) as c:
        yield c


def _project(tmp: Path, cluster: Cluster, targets: dict[str, tuple[str, str]], extra: str = "") -> Project:
    """tinyinfer's tree with a gate lane of ``targets`` (name → (board, shell command)) and the cluster's host file."""
    project = copy_example(tmp, "tinyinfer")
    # A commit of this test's own: copies of one example made in the same second are one commit,
    # and the cluster's shared work folder would then hold this candidate already (reused, not sent).
    (project.root / "TEST_ID").write_text(f"{tmp}\n")
    project.commit("this test's own candidate")
    lanes = "[lanes]\n" + "".join(f'"{n}" = "gate"\n' for n in targets)
    for name, (board, command) in targets.items():
        lanes += (f'\n[target.{name}]\npath = "tests/test_kernels.c"\nshell = true\n'
                  f'command = {json.dumps(command)}\nrequires = ["{board}"]\n')
    (project.manifests / "lanes.toml").write_text(lanes)
    cluster.host_file(project.hosts / "cluster.toml", extra=extra)
    return project


def _barrier(gate: Path, need: int) -> str:
    return (f'mkdir -p {gate}; touch {gate}/$SLURM_JOB_ID; n=0; '
            f'while [ $(ls {gate} | wc -l) -lt {need} ]; do n=$((n+1)); '
            f'[ $n -gt 600 ] && {{ echo "alone at the barrier"; exit 7; }}; sleep 0.05; done')


def test_a_lane_runs_as_jobs_on_the_node_with_logs_evidence_and_node_facts_back(one_node: Cluster,
                                                                                tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    cell = ("printf 'kern\\t%s\\tnode\\t%s\\n' \"$RG\" \"$SLURMD_NODENAME\" >> \"$TINYINFER_EVIDENCE\"; "
            "echo \"$RG on $SLURMD_NODENAME gpu $CUDA_VISIBLE_DEVICES at $(git rev-parse HEAD)\"; ")
    project = _project(tmp_path, one_node, {
        "kern-a": ("h100", "RG=a; " + _barrier(gate, 2) + "; " + cell),
        "kern-b": ("h100", "RG=b; " + _barrier(gate, 2) + "; " + cell),
        "red": ("h100", "echo about to fail; exit 3"),
    })
    lanes = project.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('requires = ["h100"]\n', 'requires = ["h100"]\nevidence = true\n', 2))
    host = project.hosts / "cluster.toml"  # the cluster offers two boards; these steps ask for one
    host.write_text(host.read_text() + '\n[host.board.a100]\ngres = "gpu:a100:1"\n')
    commit = git(project.root, "rev-parse", "HEAD").strip()  # the manifests live outside the tree
    done = project.nox("gate")
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out  # red fails the lane
    rows = project.ledger_rows()
    for name in ("kern-a", "kern-b"):
        row = rows[name]
        assert row["verdict"] == "pass", (row["reason"], row["tail"])
        assert row["host"] == "cluster" and row["board"] == "h100" and row["commit_sha"] == commit
        slurm = row["facts"]["slurm"]
        assert slurm["node"] == "n1" and slurm["state"] == "COMPLETED" and slurm["exit_code"] == "0:0"
        assert slurm["job_id"].isdigit() and slurm["source"] in ("sacct", "scontrol")
        assert len(slurm["attempts"]) == 1
        log = (project.home / row["log_path"]).read_text()
        tag = name[-1]
        assert f"{tag} on n1 gpu {row['facts']['visible_devices']} at {commit}" in log  # ran there, on the commit
        assert f"n1: HEAD of {one_node.dir / 'work'}" in log and f"verified = {commit} on the node" in log
    # submitted together: both met at the barrier, each on its own GPU, each in a checkout of its own
    assert {rows["kern-a"]["facts"]["visible_devices"], rows["kern-b"]["facts"]["visible_devices"]} == {"0", "1"}
    trees = {n: re.search(r"n1: HEAD of (\S+) verified", (project.home / rows[n]["log_path"]).read_text()).group(1)
             for n in ("kern-a", "kern-b", "red")}
    assert trees["kern-a"] != trees["kern-b"], trees  # never two jobs in one tree
    with project_ledger(project) as ledger:
        evidence = ledger.evidence(commit=commit)
        cells = {e.target: ledger.resolve(e.path).read_text() for e in evidence}
    assert cells["kern-a"] == "kern\ta\tnode\tn1\n" and cells["kern-b"] == "kern\tb\tnode\tn1\n"
    assert {e.board for e in evidence} == {"h100"}  # indexed under the board it ran on
    red = rows["red"]
    assert red["verdict"] == "fail" and red["exit_code"] == 3, red  # the code's red, not the cluster's
    assert red["facts"]["slurm"]["state"] == "FAILED" and red["facts"]["slurm"]["exit_code"] == "3:0"
    assert len(red["facts"]["slurm"]["attempts"]) == 1  # a red step is never resubmitted
    assert "about to fail" in (project.home / red["log_path"]).read_text()
    assert one_node.jobs() == []


def project_ledger(project: Project):  # type: ignore[no-untyped-def]
    from relgate.ledger.store import Ledger

    return Ledger.open(project.home)


def _canceller(cluster: Cluster, marks: Path, rules: dict[str, int], stop: threading.Event) -> threading.Thread:
    """Cancel (``scancel``, as a preemption would end it) the running jobs whose step wrote
    ``marks/NAME-JOBID``, the first ``rules[NAME]`` of each step's jobs."""
    done: dict[str, set[str]] = {name: set() for name in rules}

    def loop() -> None:
        while not stop.is_set():
            for mark in marks.glob("*-*") if marks.exists() else ():
                name, _, job = mark.name.rpartition("-")
                if name in rules and job not in done[name] and len(done[name]) < rules[name]:
                    cluster.run("scancel", job, check=False)
                    done[name].add(job)
            stop.wait(0.1)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_a_job_the_cluster_cancels_is_error_and_resubmitted_once_never_fail(one_node: Cluster,
                                                                             tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    started = f"touch {marks}/$RG-$SLURM_JOB_ID; sleep 60 & wait $!; echo done"
    quick = f"touch {marks}/$RG-$SLURM_JOB_ID; if [ $(ls {marks} | grep -c $RG-) -lt 2 ]; then sleep 60 & wait $!; fi; echo done"
    project = _project(tmp_path, one_node, {"doomed": ("h100", f"RG=doomed; {started}"),
                                            "flaky": ("h100", f"RG=flaky; {quick}")})
    stop = threading.Event()
    thread = _canceller(one_node, marks, {"doomed": 2, "flaky": 1}, stop)
    try:
        done = project.nox("gate")
    finally:
        stop.set()
        thread.join()
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out
    rows = project.ledger_rows()
    doomed, flaky = rows["doomed"], rows["flaky"]
    assert doomed["verdict"] == "error", doomed
    attempts = doomed["facts"]["slurm"]["attempts"]
    assert [a["state"].split()[0] for a in attempts] == ["CANCELLED", "CANCELLED"]  # resubmitted once, no more
    assert "ended CANCELLED" in doomed["reason"] and "submitted 2 time(s)" in doomed["reason"]
    assert flaky["verdict"] == "pass", flaky  # the resubmitted job ran to the end
    assert [a["state"].split()[0] for a in flaky["facts"]["slurm"]["attempts"]] == ["CANCELLED", "COMPLETED"]
    log = (project.home / flaky["log_path"]).read_text()
    assert "resubmitting (1 of 1)" in log and "done" in log
    assert len(list(marks.glob("doomed-*"))) == 2
    assert one_node.jobs() == []


def test_ctrl_c_during_a_run_leaves_no_job_in_the_queue(one_node: Cluster, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project = _project(tmp_path, one_node, {
        f"long-{i}": ("h100", f"touch {marks}/$SLURM_JOB_ID; sleep 120") for i in range(3)})  # 2 GPUs: one waits
    argv = [sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "gate"]
    proc = subprocess.Popen(argv, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        assert wait_for(lambda: len(list(marks.iterdir())) >= 2, 60), "the jobs never started"
        assert len(one_node.jobs()) == 3  # two running, one pending
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0 and "Traceback" not in out, out
    assert one_node.jobs() == [], one_node.jobs()  # nothing left running or pending
    rows = project.ledger_rows()
    started = [r for r in rows.values() if r["step"].startswith("long-")]
    assert started and all(r["verdict"] == "error" and "interrupted" in (r["reason"] or "") for r in started), started


def test_a_two_node_cluster_places_each_step_on_the_node_with_its_board(tmp_path: Path) -> None:
    from netns_support import netns_missing

    if netns_missing() is not None:
        pytest.skip(f"no network namespaces here: {netns_missing()}")
    nodes = [NodeSpec(name="gpu-h", gpu_type="h100", features=("h100",)),
             NodeSpec(name="gpu-a", gpu_type="a100", features=("a100", "bigmem"))]
    with slurm_cluster(tmp_path / "slurm2", nodes, netns=True) as cluster:
        report = "echo \"$RG on $SLURMD_NODENAME at $(ip -4 -o addr show scope global | awk '{print $4}')\""
        project = _project(tmp_path, cluster, {"on-h100": ("h100", f"RG=h; {report}"),
                                               "on-a100": ("a100", f"RG=a; {report}"),
                                               "on-bigmem": ("bigmem", f"RG=m; {report}")})
        host = project.hosts / "cluster.toml"
        host.write_text(host.read_text() + '\n[host.board.bigmem]\nconstraint = "bigmem"\n')
        done = project.nox("gate")
        out = done.stdout + done.stderr
        assert done.returncode == 0 and "Traceback" not in out, out
        rows = project.ledger_rows()
        for step, node, board in (("on-h100", "gpu-h", "h100"), ("on-a100", "gpu-a", "a100"),
                                  ("on-bigmem", "gpu-a", "bigmem")):
            row = rows[step]
            assert row["verdict"] == "pass" and row["facts"]["slurm"]["node"] == node, row
            assert row["board"] == board
            log = (project.home / row["log_path"]).read_text()
            assert f"on {node} at {cluster.addresses[node]}/30" in log  # ran in that node's namespace
        assert rows["on-a100"]["facts"]["slurm"]["node_features"] == ["a100", "bigmem"]


def test_order_and_failure_read_the_same_on_the_cluster_contract_require_all_and_reuse(one_node: Cluster,
                                                                                      tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project = _project(tmp_path, one_node, {
        "first-red": ("h100", f"touch {marks}/first-red-$SLURM_JOB_ID; exit 1"),
        "then-green": ("h100", f"touch {marks}/then-green-$SLURM_JOB_ID; echo green"),
        "no-such-board": ("b200", "echo never"),
    })
    lanes = project.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('= "gate"', '= "contract"'))
    done = project.nox("contract", extra=("--", "--require-all"))
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out
    rows = project.ledger_rows()
    # contract: every target ran to the end and every red is listed; nothing offers b200: not-run
    assert rows["first-red"]["verdict"] == "fail" and rows["then-green"]["verdict"] == "pass"
    assert rows["no-such-board"]["verdict"] == "not-run" and rows["no-such-board"]["reason"] == "no host offers b200"
    assert "--require-all: 1 step(s) not run count as a failure" in out
    # --reuse: the pass on this commit stands (same cluster, same board, any node); the red runs again
    again = project.nox("contract", extra=("--", "--reuse", "then-green", "first-red"))
    assert again.returncode != 0, again.stdout
    rows = project.ledger_rows()
    assert rows["then-green"]["reason"].startswith("reused: passed as step #"), rows["then-green"]
    assert rows["then-green"]["facts"]["slurm"]["node"] == "n1"  # the original's node facts come along
    assert len(list(marks.glob("then-green-*"))) == 1 and len(list(marks.glob("first-red-*"))) == 2


def test_a_probe_runs_as_a_job_on_a_node_and_its_failure_keeps_the_steps_off(one_node: Cluster,
                                                                             tmp_path: Path) -> None:
    count = tmp_path / "probed"
    project = _project(tmp_path, one_node, {"needs-rdma": ("rdma", "echo never"),
                                            "needs-ib": ("ib", "echo ran on $SLURMD_NODENAME")})
    host = project.hosts / "cluster.toml"
    host.write_text(host.read_text() + f'''
[[probe]]
name = "rdma"
run = "echo $SLURMD_NODENAME >> {count}; echo 'rdma: disabled on '$SLURMD_NODENAME; exit 1"

[[probe]]
name = "ib"
run = "echo $SLURMD_NODENAME >> {count}; echo 'state: PORT_ACTIVE'"
expect = "PORT_ACTIVE"
''')
    done = project.nox("gate")
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert rows["needs-rdma"]["verdict"] == "not-run"
    assert rows["needs-rdma"]["reason"] == "rdma probe failed on cluster (exit 1: rdma: disabled on n1)"
    ib = rows["needs-ib"]
    assert ib["verdict"] == "pass" and ib["facts"]["probes"]["ib"]["passed"] is True, ib
    assert "PORT_ACTIVE" in ib["facts"]["probes"]["ib"]["output"]
    assert count.read_text().split() == ["n1", "n1"]  # each probe once, as a job on the node


def test_jobs_submitted_from_a_login_node_over_ssh(one_node: Cluster, tmp_path: Path) -> None:
    from sshd_support import sshd_missing, start_sshd

    if sshd_missing() is not None:
        pytest.skip(f"no sshd here: {sshd_missing()}")
    server = start_sshd(tmp_path / "sshd")
    try:
        cell = ("printf 'kern\\t%s\\tnode\\t%s\\n' \"$RG\" \"$SLURMD_NODENAME\" >> \"$TINYINFER_EVIDENCE\"; "
                "echo on $SLURMD_NODENAME")
        gate = tmp_path / "gate"  # two jobs at once: two checkouts on the login node's side
        project = _project(tmp_path, one_node, {"via-login": ("h100", f"RG=l; {_barrier(gate, 2)}; {cell}"),
                                                "via-login-2": ("h100", f"RG=m; {_barrier(gate, 2)}; {cell}")})
        lanes = project.manifests / "lanes.toml"
        lanes.write_text(lanes.read_text().replace('requires = ["h100"]\n', 'requires = ["h100"]\nevidence = true\n'))
        host = project.hosts / "cluster.toml"
        server.write_known_hosts(project.hosts / "login.known_hosts")
        host.write_text(host.read_text().replace(
            'kind = "slurm"\n', f'kind = "slurm"\naddress = "{server.address}"\nport = {server.port}\n'
                                f'user = "{server.user}"\nidentity = "{server.client_key}"\n'
                                'known_hosts = "login.known_hosts"\n'))
        commit = git(project.root, "rev-parse", "HEAD").strip()
        done = project.nox("gate")
        out = done.stdout + done.stderr
        assert done.returncode == 0 and "Traceback" not in out, out
        rows = project.ledger_rows()
        logs = {}
        for name in ("via-login", "via-login-2"):
            row = rows[name]
            assert row["verdict"] == "pass" and row["facts"]["slurm"]["node"] == "n1", row
            logs[name] = (project.home / row["log_path"]).read_text()
            assert f"from login node {server.address}" in logs[name]
            assert f"verified = {commit} on the node" in logs[name] and "on n1" in logs[name]
        assert "bundle of" in logs["via-login"] + logs["via-login-2"]  # the candidate went over SSH
        trees = {re.search(r"n1: HEAD of (\S+) verified", log).group(1) for log in logs.values()}
        assert len(trees) == 2  # side by side, each in its own checkout
        with project_ledger(project) as ledger:
            cells = sorted(ledger.resolve(e.path).read_text() for e in ledger.evidence(commit=commit))
        assert cells == ["kern\tl\tnode\tn1\n", "kern\tm\tnode\tn1\n"]
        # an unknown login-node key is refused, nothing is submitted
        (project.hosts / "login.known_hosts").write_text("")
        refused = project.nox("gate")
        row = project.ledger_rows()["via-login"]
        assert refused.returncode != 0 and row["verdict"] == "error" and "unknown host key" in row["reason"], row
        assert one_node.jobs() == []
    finally:
        server.stop()


def test_a_job_whose_node_left_no_facts_is_error_never_a_pass(one_node: Cluster, tmp_path: Path) -> None:
    # srun_args = ["/bin/true"] makes srun run /bin/true with the job script as its arguments, as a
    # wrapper that swallowed it would: the job exits 0, yet nothing shows where or on what it ran
    project = _project(tmp_path, one_node, {"blind": ("h100", "echo ran")}, extra='srun_args = ["/bin/true"]\n')
    done = project.nox("gate")
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
    row = project.ledger_rows()["blind"]
    assert row["verdict"] == "error", row
    assert "the job left no facts" in row["reason"] and "COMPLETED" in row["reason"], row
    assert row["facts"]["slurm"]["state"] == "COMPLETED"  # Slurm's word alone is not relgate's pass


def test_the_nodes_gpus_driver_and_toolkit_are_recorded_where_nvidia_smi_and_nvcc_answer(one_node: Cluster,
                                                                                          tmp_path: Path) -> None:
    # No GPU here: nvidia-smi and nvcc on the node's PATH are scripts printing what the real
    # tools print on an H100 node (the GPU is the one fake); Slurm gives the job GPU 0 or 1
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nprintf '0, NVIDIA H100 80GB HBM3, 550.54.15, GPU-aaaa\\n"
                                     "1, NVIDIA H100 80GB HBM3, 550.54.15, GPU-bbbb\\n'\n")
    (fake / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    project = _project(tmp_path, one_node, {"on-gpu": ("h100", "echo gpu $CUDA_VISIBLE_DEVICES")})
    host = project.hosts / "cluster.toml"
    host.write_text(host.read_text().replace("[host.env]\n", f'[host.env]\nPATH = "{fake}:{os.environ["PATH"]}"\n'))
    done = project.nox("gate")
    assert done.returncode == 0, done.stdout + done.stderr
    row = project.ledger_rows()["on-gpu"]
    index = int(row["facts"]["visible_devices"])
    assert row["board"] == "h100" and row["driver"] == "550.54.15" and row["toolkit"] == "cuda 12.4", row
    assert row["facts"]["gpu_names"] == ["NVIDIA H100 80GB HBM3"]
    assert row["facts"]["gpus"] == [{"index": index, "uuid": ["GPU-aaaa", "GPU-bbbb"][index]}]  # its own GPU only


def test_a_measure_on_the_cluster_is_recorded_under_the_board_it_ran_on(one_node: Cluster, tmp_path: Path) -> None:
    line = "echo bench matvec device=cuda n=64 timing=kernel median_us=12.5 dtype=f32 runs=1"
    project = _project(tmp_path, one_node, {"matvec-bench": ("h100", line)})
    (project.manifests / "measurements.toml").write_text(
        '[measure.matvec]\ntarget = "matvec-bench"\noutput = "stdout"\nformat = "kv"\nselect = ["bench"]\n'
        'key = ["n", "timing"]\nmetrics = { median_us = "lower" }\n'
        'metadata = ["board", "commit", "device", "dtype", "runs"]\nruns = 2\nwarmup = 0\n')
    (project.manifests / "checklist.toml").unlink()  # it names the shipped measures this test leaves out
    host = project.hosts / "cluster.toml"  # the cluster offers two boards; the runs ask for one
    host.write_text(host.read_text() + '\n[host.board.a100]\ngres = "gpu:a100:1"\n')
    done = project.relgate("compare", "matvec")
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "matvec#2" in out, out
    with project_ledger(project) as ledger:
        key = ledger._conn.execute("SELECT project FROM measure_batches LIMIT 1").fetchone()[0]
        batch, = ledger.batches(project=key, measure="matvec")
    assert batch.board == "h100" and batch.host == "cluster", batch  # the node's board, not the cluster's list
    assert batch.metadata["board"] == "h100"


def test_a_gpus_all_step_gets_every_gpu_of_its_node(one_node: Cluster, tmp_path: Path) -> None:
    project = _project(tmp_path, one_node, {"whole": ("h100", "echo all $CUDA_VISIBLE_DEVICES"),
                                            "one": ("h100", "echo one $CUDA_VISIBLE_DEVICES")})
    lanes = project.manifests / "lanes.toml"
    lanes.write_text(lanes.read_text().replace('[target.whole]\n', '[target.whole]\ngpus = "all"\n'))
    done = project.nox("gate")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = project.ledger_rows()
    assert rows["whole"]["facts"]["visible_devices"] == "0,1"  # the node has two
    assert "all 0,1" in (project.home / rows["whole"]["log_path"]).read_text()
    assert rows["one"]["facts"]["visible_devices"] in ("0", "1")


def test_a_board_the_cluster_cannot_give_is_error_with_slurms_answer(one_node: Cluster, tmp_path: Path) -> None:
    # the host file maps b200 to a GRES no node has: Slurm refuses the job; nothing ran, so error
    project = _project(tmp_path, one_node, {"on-b200": ("b200", "echo never")})
    host = project.hosts / "cluster.toml"
    host.write_text(host.read_text() + '\n[host.board.b200]\ngres = "gpu:b200:1"\n')
    done = project.nox("gate")
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
    row = project.ledger_rows()["on-b200"]
    assert row["verdict"] == "error" and "Slurm ran no job on a node (srun exit 1" in row["reason"], row
    assert "srun: error" in (project.home / row["log_path"]).read_text()


def test_a_build_on_the_cluster_is_asked_there_what_it_wrote(one_node: Cluster, tmp_path: Path) -> None:
    """"built nothing" and ``produces`` hold on a cluster too: a marker made in the job's checkout
    before the build, a find -newer after, both through the cluster, the marker removed."""
    project = _project(tmp_path, one_node, {"kern": ("h100", "true")})
    builds = project.manifests / "builds.toml"
    builds.write_text('[release.node]\nrun = "true"\nrequires = ["h100"]\n\n[[check]]\nname = "release-node"\n'
                      'release = "node"\n')
    done = project.nox("host", extra=("--", "release-node"))
    assert done.returncode == 1, done.stdout + done.stderr
    row = project.ledger_rows()["release-node"]
    assert row["host"] == "cluster" and row["exit_code"] == 0, row
    assert row["verdict"] == "fail" and row["reason"].startswith("built nothing: no file under cluster:"), row
    builds.write_text(builds.read_text().replace('run = "true"', 'run = "sh -c \'echo x > node.bin\'"\n'
                                                 'produces = ["node.bin"]'))
    done = project.nox("host", extra=("--", "release-node"))
    assert done.returncode == 0, done.stdout + done.stderr
    row = project.ledger_rows()["release-node"]
    assert row["verdict"] == "pass" and row["facts"]["slurm"]["node"] == "n1", row
    assert list((one_node.dir / "work").rglob(".relgate-build-start.*")) == []
    assert one_node.jobs() == []
