"""GPU slots: single-GPU steps side by side, each on its own GPU; "all" alone; builds alone.

No machine here has a GPU. The one fake is at the executor seam: the host's facts declare four
GPUs with UUIDs (``gpus = 4`` in a real host file, UUIDs as nvidia-smi would list them); the
steps are real processes on this machine that record the ``CUDA_VISIBLE_DEVICES`` relgate gave
them and their start and end on the clock. Side by side is shown without timing: the GPU
steps meet at a barrier that opens only when enough of them run at once (one at a time, the
first would give up and fail). Overlap is judged from the recorded intervals.
"""

from __future__ import annotations

import itertools
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from steps_support import Quiet, one_commit_repo, run_in_repo

from relgate.core.schema import read_toml
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import read_git_facts
from relgate.ledger.store import Ledger
from relgate.manifest.specs import CommandSpec, parse_host
from relgate.run.executor import LocalExecutor
from relgate.run.hosts import Host, HostFacts, parse_nvidia_smi_uuids
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool

UUIDS = tuple(f"GPU-0000000{i}-aaaa-bbbb-cccc-00000000000{i}" for i in range(4))


def _pool(tmp: Path, gpus: int = 4) -> HostPool:
    path = tmp / "hosts" / "box.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[host]\nname = "box"\nkind = "local"\ndetect = false\ngpus = {gpus}\n'
                    'capabilities = ["cuda", "sh"]\n')
    spec = parse_host(read_toml(path), path=path)
    host = Host(spec=spec, facts=HostFacts(boards=("NVIDIA H100",), capabilities=frozenset({"cuda", "sh"}),
                                           gpu_uuids=UUIDS[:gpus]))
    return HostPool([host], {"box": LocalExecutor(host)})


def _record(out: Path, name: str, body: str) -> str:
    """Shell: append ``name start end CUDA_VISIBLE_DEVICES HIP ROCR`` around ``body``."""
    return (f's=$(date +%s%N); echo "step {name} sees $CUDA_VISIBLE_DEVICES"; {body}; rc=$?; '
            f'echo "{name} $s $(date +%s%N) ${{CUDA_VISIBLE_DEVICES:--}} ${{HIP_VISIBLE_DEVICES:--}} '
            f'${{ROCR_VISIBLE_DEVICES:--}}" >> {out}; exit $rc')


def _barrier(gate: Path, need: int, name: str) -> str:
    return (f'mkdir -p {gate}; touch {gate}/{name}; n=0; '
            f'while [ $(ls {gate} | wc -l) -lt {need} ]; do n=$((n+1)); '
            f'[ $n -gt 600 ] && {{ echo "alone at the barrier"; exit 7; }}; sleep 0.05; done; sleep 0.3')


def _step(name: str, shell: str, cwd: Path, **kw) -> PlannedStep:  # type: ignore[no-untyped-def]
    return PlannedStep(name=name, commands=(CommandSpec(shell=shell),), cwd=cwd, lane="contract", target=name, **kw)


def _intervals(out: Path) -> dict[str, tuple[int, int, str, str, str]]:
    found = {}
    for line in out.read_text().splitlines():
        name, start, end, cvd, hip, rocr = line.split()
        found[name] = (int(start), int(end), cvd, hip, rocr)
    return found


def _overlap(a: tuple[int, int, str, str, str], b: tuple[int, int, str, str, str]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_single_gpu_steps_run_side_by_side_never_sharing_a_gpu_all_and_builds_alone(tmp_path: Path) -> None:
    out = tmp_path / "intervals"
    pool = _pool(tmp_path)
    gate4, gate2 = tmp_path / "gate4", tmp_path / "gate2"
    steps = [
        _step("build-1", _record(out, "build-1", "sleep 0.3"), tmp_path),  # no GPU: a build, alone
        *[_step(f"one-{i}", _record(out, f"one-{i}", _barrier(gate4, 4, f"one-{i}")), tmp_path, requires=("cuda",))
          for i in range(4)],
        *[_step(f"two-{i}", _record(out, f"two-{i}", _barrier(gate2, 2, f"two-{i}")), tmp_path, requires=("cuda",),
                gpus=2) for i in range(2)],
        _step("whole", _record(out, "whole", "sleep 0.3"), tmp_path, requires=("cuda",), gpus="all"),
        *[_step(f"late-{i}", _record(out, f"late-{i}", "sleep 0.2"), tmp_path, requires=("cuda",)) for i in range(3)],
        _step("build-2", _record(out, "build-2", "sleep 0.3"), tmp_path),
        *[_step(f"tail-{i}", _record(out, f"tail-{i}", "sleep 0.2"), tmp_path, requires=("cuda",)) for i in range(2)],
    ]
    summary, rows = run_in_repo(tmp_path, steps, pool, session="contract")
    assert [o.verdict for o in summary.outcomes] == [Verdict.PASS] * len(steps), \
        [(o.step.name, o.reason, o.tail) for o in summary.outcomes]
    assert [o.step.name for o in summary.outcomes] == [s.name for s in steps]  # the ledger reads in plan order
    seen = _intervals(out)
    assert set(seen) == {s.name for s in steps}
    for name, (_, _, cvd, hip, rocr) in seen.items():
        if name.startswith("build"):
            assert cvd == hip == rocr == "-"  # a build takes no GPU
        else:
            assert cvd == hip == rocr and cvd != "-"  # the three variables name the same GPUs
    assert seen["whole"][2] == "0,1,2,3"
    assert sorted(seen[f"one-{i}"][2] for i in range(4)) == ["0", "1", "2", "3"]  # met at the barrier: 4 at once
    for a, b in itertools.combinations(seen, 2):
        if not _overlap(seen[a], seen[b]):
            continue
        assert "build" not in a and "build" not in b, f"{a} overlaps {b}: builds run alone"
        assert "whole" not in (a, b), f"{a} overlaps {b}: an 'all' step runs alone"
        shared = set(seen[a][2].split(",")) & set(seen[b][2].split(","))
        assert not shared, f"{a} and {b} ran at once on GPU {shared}"
    # each step's record names its GPUs (index and UUID); its own log holds only its own output
    for s in steps:
        row = rows[s.name]
        log = Path(tmp_path / "home" / row.log_path).read_text()
        assert f"step {s.name} sees" in log
        assert not any(f"step {o.name} sees" in log for o in steps if o.name != s.name)
        if s.name.startswith("build"):
            assert "gpus" not in row.facts
            continue
        indexes = [int(i) for i in seen[s.name][2].split(",")]
        assert row.facts["gpus"] == [{"index": i, "uuid": UUIDS[i]} for i in indexes]
        assert f"GPU {indexes[0]} ({UUIDS[indexes[0]]})" in log


def test_a_step_asking_more_gpus_than_the_host_has_is_not_run_and_a_red_step_does_not_stop_the_rest(
        tmp_path: Path) -> None:
    pool = _pool(tmp_path, gpus=2)
    steps = [_step("red", "exit 3", tmp_path, requires=("cuda",)),
             _step("greedy", "true", tmp_path, requires=("cuda",), gpus=3),
             _step("after", "echo ran; true", tmp_path, requires=("cuda",)),
             _step("needs-red", "true", tmp_path, requires=("cuda",), needs=("red",))]
    summary, rows = run_in_repo(tmp_path, steps, pool, session="contract")
    verdicts = {o.step.name: (o.verdict, o.reason) for o in summary.outcomes}
    assert verdicts["red"][0] is Verdict.FAIL
    assert verdicts["greedy"] == (Verdict.NOT_RUN, "needs 3 GPUs, box has 2")
    assert verdicts["after"][0] is Verdict.PASS  # contract: every target runs to the end
    assert verdicts["needs-red"] == (Verdict.NOT_RUN, "needs red, which did not pass")
    assert not summary.ok() and rows["greedy"].host == "-"


def test_nvidia_smi_rows_give_the_gpus_uuids_in_index_order() -> None:
    text = ("NVIDIA H100 80GB HBM3, 550.54.15, 9.0, GPU-5a1e\n"
            "NVIDIA H100 80GB HBM3, 550.54.15, 9.0, GPU-77b2\n")
    assert parse_nvidia_smi_uuids(text) == ("GPU-5a1e", "GPU-77b2")
    assert parse_nvidia_smi_uuids("NVIDIA H100, 550.54.15, 9.0\n") == ()


def test_one_gpu_host_still_pins_each_gpu_step_and_runs_them_one_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "intervals"
    pool = _pool(tmp_path, gpus=1)
    steps = [_step(f"s{i}", _record(out, f"s{i}", "sleep 0.1"), tmp_path, requires=("cuda",)) for i in range(3)]
    summary, rows = run_in_repo(tmp_path, steps, pool, session="contract")
    assert all(o.verdict is Verdict.PASS for o in summary.outcomes)
    seen = _intervals(out)
    assert all(v[2] == "0" for v in seen.values())
    assert not any(_overlap(seen[a], seen[b]) for a, b in itertools.combinations(seen, 2))
    assert replace(rows["s0"]).facts["gpus"] == [{"index": 0, "uuid": UUIDS[0]}]


def test_each_running_step_has_its_own_live_line_and_it_ends_with_the_step(tmp_path: Path) -> None:
    import io
    import time

    from relgate.run.console import ConsoleReporter
    from relgate.run.runner import StepOutcome

    out = io.StringIO()
    reporter = ConsoleReporter(out, progress=0.05)
    a, b = (_step(n, "true", tmp_path, requires=("cuda",)) for n in ("alpha", "beta"))
    reporter.step_started(a, "box")
    reporter.step_started(b, "box")
    time.sleep(0.3)  # both tick (a bound on waiting, not a measurement)
    for s in (a, b):
        reporter.step_finished(StepOutcome(step=s, step_id=1, host="box", verdict=Verdict.PASS, reason=None,
                                           duration=0.1))
    seen = out.getvalue()
    assert "contract  alpha  [box]  running" in seen and "contract  beta  [box]  running" in seen
    time.sleep(0.3)
    assert out.getvalue() == seen  # no ticker outlives its step


def test_ctrl_c_stops_every_step_running_on_a_slot_and_starts_no_other(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from conftest import NOXFILE, copy_example, pid_gone, wait_for

    project = copy_example(tmp_path, "tinyinfer")
    pids = tmp_path / "pids"
    pids.mkdir()
    lanes = "[lanes]\n" + "".join(f'"slot-{i}" = "gate"\n' for i in range(3))
    for i in range(3):
        lanes += (f'\n[target.slot-{i}]\npath = "tests/test_kernels.c"\nshell = true\n'
                  f'command = "echo $$ > {pids}/{i}; sleep 120"\nrequires = ["cuda"]\n')
    (project.manifests / "lanes.toml").write_text(lanes)
    (project.hosts / "local.toml").write_text('[host]\nname = "local"\nkind = "local"\ncapabilities = ["cuda"]\n'
                                              "gpus = 2\n")
    proc = subprocess.Popen([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "gate"], env=project.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert wait_for(lambda: len(list(pids.iterdir())) == 2, 60), "two steps never ran side by side"
        running = [int(p.read_text()) for p in pids.iterdir()]
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0 and "Traceback" not in out, out
    assert all(wait_for(lambda p=p: pid_gone(p), 10) for p in running)
    assert sorted(p.name for p in pids.iterdir()) == ["0", "1"]  # the third never started
    rows = project.ledger_rows()
    assert {n for n in rows if n.startswith("slot-")} == {"slot-0", "slot-1"}
    for name in ("slot-0", "slot-1"):
        assert rows[name]["verdict"] == "error" and "interrupted" in rows[name]["reason"], rows[name]


def test_an_ssh_host_with_slots_runs_gpu_steps_side_by_side(tmp_path: Path) -> None:
    import pytest
    from sshd_support import sshd_missing, start_sshd

    if sshd_missing() is not None:
        pytest.skip(f"no sshd here: {sshd_missing()}")
    from relgate.remote.ssh import SshExecutor

    server = start_sshd(tmp_path / "sshd")
    try:
        path = server.host_file(tmp_path / "hosts" / "gpu1.toml", extra="detect = false\ngpus = 2\n")
        spec = parse_host(read_toml(path), path=path)
        host = Host(spec=spec, facts=HostFacts(capabilities=frozenset({"cuda"}), gpu_uuids=UUIDS[:2]))
        executor = SshExecutor(host)
        pool = HostPool([host], {"gpu1": executor})
        out, gate = tmp_path / "intervals", tmp_path / "gate"
        steps = [_step(f"remote-{i}", _record(out, f"remote-{i}", _barrier(gate, 2, f"remote-{i}")), tmp_path,
                       requires=("cuda",)) for i in range(2)]
        steps.append(_step("remote-build", _record(out, "remote-build", "true"), tmp_path))
        summary, rows = run_in_repo(tmp_path, steps, pool, session="contract")
        executor.close()
    finally:
        server.stop()
    assert all(o.verdict is Verdict.PASS for o in summary.outcomes), [(o.step.name, o.reason) for o in summary.outcomes]
    seen = _intervals(out)
    assert sorted(seen[f"remote-{i}"][2] for i in range(2)) == ["0", "1"]  # met at the barrier, one GPU each
    assert seen["remote-build"][2] == "-" and not any(_overlap(seen["remote-build"], seen[f"remote-{i}"])
                                                      for i in range(2))
    assert rows["remote-0"].host == "gpu1" and rows["remote-0"].facts["gpus"][0]["uuid"] in UUIDS


def test_a_fleet_of_hosts_with_slots_runs_every_hosts_gpu_steps_side_by_side(tmp_path: Path) -> None:
    import pytest
    from sshd_support import sshd_missing, start_sshd

    if sshd_missing() is not None:
        pytest.skip(f"no sshd here: {sshd_missing()}")
    from relgate.remote.fleet import run_fleet, spread
    from relgate.remote.ssh import SshExecutor

    servers = [start_sshd(tmp_path / f"sshd{i}") for i in range(2)]
    try:
        hosts, executors = [], {}
        for i, server in enumerate(servers):
            name = f"box{i + 1}"
            path = server.host_file(tmp_path / "hosts" / f"{name}.toml", name=name, known_hosts=f"{name}.known",
                                    extra="detect = false\ngpus = 2\n")
            host = Host(spec=parse_host(read_toml(path), path=path),
                        facts=HostFacts(capabilities=frozenset({"cuda"}), gpu_uuids=UUIDS[2 * i:2 * i + 2]))
            hosts.append(host)
            executors[name] = SshExecutor(host)
        pool = HostPool(hosts, executors)
        out, gate = tmp_path / "intervals", tmp_path / "gate"
        # two targets on every host: 4 steps, which meet only when both hosts run both at once
        steps = spread([_step(f"t{i}", f"RG=t{i}-$RELGATE_H; " + _record(out, "$RG", _barrier(gate, 4, "$RG")),
                              tmp_path, requires=("cuda",)) for i in range(2)], hosts)
        steps = [replace(s, env={"RELGATE_H": s.host}) for s in steps]
        facts = read_git_facts(one_commit_repo(tmp_path))
        with Ledger.open(tmp_path / "home") as ledger:
            run_id = ledger.begin_run(session="gate", argv=[], project="t", project_root=tmp_path,
                                      commit=facts.commit, branch="main", dirty=False)
            result = run_fleet(steps, session="gate", run_id=run_id, facts=facts, pool=pool, ledger=ledger,
                               reporter=Quiet())
            rows = {r.step: r for r in ledger.steps(run_id=run_id)}
        for e in executors.values():
            e.close()
    finally:
        for server in servers:
            server.stop()
    assert not result.failed, {n: [(o.step.name, o.reason, o.tail) for o in r.outcomes] for n, r in result.hosts.items()}
    seen = _intervals(out)
    assert set(seen) == {"t0-box1", "t1-box1", "t0-box2", "t1-box2"}
    for box in ("box1", "box2"):
        assert sorted(seen[f"t{i}-{box}"][2] for i in range(2)) == ["0", "1"]  # one GPU each, on each host
        assert {g["uuid"] for i in range(2) for g in rows[f"t{i}@{box}"].facts["gpus"]} == \
            set(UUIDS[:2] if box == "box1" else UUIDS[2:])


def test_the_json_report_carries_each_steps_gpus(tmp_path: Path) -> None:
    import json

    from relgate.run.reports import write_json_report

    pool = _pool(tmp_path, gpus=2)
    summary, _ = run_in_repo(tmp_path, [_step("g", "true", tmp_path, requires=("cuda",))], pool,
                             session="contract")
    report = tmp_path / "report.json"
    write_json_report(summary, report)
    step, = json.loads(report.read_text())["steps"]
    assert step["facts"]["gpus"] == [{"index": 0, "uuid": UUIDS[0]}] and step["facts"]["visible_devices"] == "0"


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_a_registry_outage_is_one_error_per_host_when_steps_run_on_gpu_slots(tmp_path: Path) -> None:
    crate = tmp_path / "fetcher"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "fetcher"\nversion = "0.1.0"\nedition = "2021"\n'
                                      '[dependencies]\nserde = "1"\n')
    (crate / "src" / "main.rs").write_text("fn main() {}\n")
    home = tmp_path / "cargo-home"
    home.mkdir()
    (home / "config.toml").write_text('[source.crates-io]\nreplace-with = "dead"\n'
                                      '[source.dead]\nregistry = "sparse+http://127.0.0.1:1/index/"\n'
                                      "[net]\nretry = 1\n")
    env = {"CARGO_HOME": str(home), "CARGO_TARGET_DIR": str(tmp_path / "target")}
    steps = [_step(f"fetch-{n}", "cargo build", crate, env=env) for n in range(3)]  # builds: one at a time
    summary, rows = run_in_repo(tmp_path, steps, _pool(tmp_path), session="contract")
    first = rows["fetch-0"]
    assert first.verdict is Verdict.ERROR and first.reason.startswith("cargo cannot reach its registry"), first
    for name in ("fetch-1", "fetch-2"):
        assert rows[name].verdict is Verdict.ERROR and rows[name].duration == 0.0, rows[name]
        assert rows[name].reason == "cargo cannot reach its registry (found by fetch-0 on box in this run; not retried)"
