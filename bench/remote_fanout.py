"""Benchmark: the same lane on 4 namespace hosts in parallel against the lane on 1 host.

    python bench/remote_fanout.py [--rounds N] [--seconds S]

Makes 4 network-namespace hosts (``tests/netns_support.py``: a veth pair each, a real sshd
inside; needs root) and a fresh copy of examples/tinyinfer whose gate lane runs on every
host of the fleet (``[fleet] every_host = ["gate"]``). Each round, alternating:

* fleet: ``relgate lane gate`` with all 4 hosts declared: every target on every host, one
  worker per host, at once;
* one: the same command with 1 host declared.

Two lanes are measured, each with its own goal line:

* ``wait``: three targets that each wait ``--seconds`` (a stand-in for work done by the
  host's own hardware: a GPU kernel, a device test). On real machines every host brings its
  own CPU and GPU, so this is the lane that shows what fanning out costs relgate itself:
  connecting, detecting, delivering the commit, locking and fetching on 4 hosts at once.
* ``make``: the example's real ``make test`` and ``make contract`` per host. The 4 namespace
  hosts share this machine's cores, so their work competes for the same CPUs. After the
  warm-up each host's checkout is reused (same commit), so make finds its objects built and
  mostly runs the tests. The floor of that sharing is measured in the same rounds, on its
  own goal line: the same two commands through OpenSSH's ``ssh`` on 4 hosts at once (each in
  a built copy of the project) against 1, with no relgate: the sessions, the servers and the
  work of 4 hosts on this machine's cores.

Before timing, each configuration runs once (the commit is delivered, checkouts exist); the
ledger of every timed run is checked: every step on every host must pass, or the figures
are void (exit 1). Prints every round, the medians and the ratios fleet / one against the
goal (<= 1.15). A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from netns_support import netns_hosts, netns_missing  # noqa: E402

from _common import DEFAULT_ROUNDS, Bench, failed, judge, make_project, spread, timed  # noqa: E402
from relgate.ledger.store import Ledger  # noqa: E402

GOAL = 1.15
HOSTS = 4

LANES = {
    "wait": """
[lanes]
"wait-a" = "gate"
"wait-b" = "gate"
"wait-c" = "gate"
[target.wait-a]
path = "src/cli.c"
command = "sleep {seconds}"
requires = ["netns"]
[target.wait-b]
path = "src/kernels_cpu.c"
command = "sleep {seconds}"
requires = ["netns"]
[target.wait-c]
path = "include/tinyinfer.h"
command = "sleep {seconds}"
requires = ["netns"]
[fleet]
every_host = ["gate"]
""",
    "make": """
[lanes]
"kernels-cpu" = "gate"
"cli-contract-cpu" = "gate"
[target.kernels-cpu]
path = "tests/test_kernels.c"
command = "make test"
requires = ["netns"]
[target.cli-contract-cpu]
path = "tests/cli_contract.sh"
command = "make contract"
requires = ["netns"]
[fleet]
every_host = ["gate"]
""",
}


def _ssh_make(hosts: list, copies: list[Path], tmp: Path) -> list[str]:
    """One ``sh -c`` running the make lane's two targets through ``ssh`` on every host at once,
    each in its own copy of the project; its status is 1 when any of them failed."""
    runs = []
    for i, (host, copy) in enumerate(zip(hosts, copies)):
        known = host.sshd.write_known_hosts(tmp / f"floor{i}.known_hosts")
        ssh = ["ssh", "-q", "-i", str(host.sshd.client_key), "-p", str(host.sshd.port), "-o", "BatchMode=yes",
               "-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes",
               f"{host.sshd.user}@{host.sshd.address}", f"cd {shlex.quote(str(copy))} && make test && make contract"]
        runs.append(f"{shlex.join(ssh)} >/dev/null 2>&1 & pids=\"$pids $!\"")
    return ["sh", "-c", 'pids=""; ' + "; ".join(runs) + '; rc=0; for p in $pids; do wait "$p" || rc=1; done; exit $rc']


def check_ledger(home: Path, hosts: int, targets: int) -> str | None:
    """Why the last run does not count (a step not passed, a host missing), or None."""
    with Ledger.open(home) as ledger:
        run = ledger.runs()[-1]
        steps = [s for s in ledger.steps(run_id=run.id) if s.step != "lane-census"]  # in-process, here
    bad = [f"{s.step}: {s.verdict.value} {s.reason or ''}" for s in steps if s.verdict.value != "pass"]
    if bad:
        return "; ".join(bad)
    if len(steps) != hosts * targets or len({s.host for s in steps}) != hosts:
        return f"{len(steps)} steps on {len({s.host for s in steps})} hosts, expected {hosts * targets} on {hosts}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"fleet + one pairs per lane (default {DEFAULT_ROUNDS})")
    parser.add_argument("--seconds", type=float, default=0.5, help="how long each wait target waits (default 0.5)")
    parser.add_argument("--lane", choices=tuple(LANES), action="append", help="only these lanes (repeatable)")
    args = parser.parse_args(argv)
    why = netns_missing()
    if why is not None:
        print(f"remote_fanout: no namespace hosts here: {why}", file=sys.stderr)
        return 1
    cli = [sys.executable, "-m", "relgate.cli", "lane", "gate"]
    results: dict[str, tuple[list[float], list[float]]] = {}
    with Bench("remote_fanout"), tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with netns_hosts(tmp / "netns", HOSTS) as ns:
            root, env = make_project(tmp, "tinyinfer")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent),
                                                           env.get("PYTHONPATH")) if p)
            manifests, hosts_dir = Path(env["RELGATE_MANIFESTS"]), Path(env["RELGATE_HOSTS"])
            fleet_hosts, one_host = tmp / "hosts-fleet", tmp / "hosts-one"
            for folder, count in ((fleet_hosts, HOSTS), (one_host, 1)):
                shutil.copytree(hosts_dir, folder)
                for i, h in enumerate(ns[:count]):
                    h.host_file(folder, f"ns{i + 1}", extra='capabilities = ["netns"]\n')
            for lane, text in LANES.items():
                if args.lane and lane not in args.lane:
                    continue
                (manifests / "lanes.toml").write_text(text.replace("{seconds}", f"{args.seconds:g}"))
                targets = text.count("[target.")
                times: dict[str, list[float]] = {"fleet": [], "one": []}
                copies = [tmp / f"copy{i}" for i in range(HOSTS)] if lane == "make" else []
                for copy in copies:
                    shutil.copytree(root, copy, symlinks=True)
                print(f"\nlane {lane}: relgate lane gate, {targets} targets, on {HOSTS} namespace hosts vs on 1")
                for n in range(0, args.rounds + 1):
                    for label, folder, count in (("fleet", fleet_hosts, HOSTS), ("one", one_host, 1)):
                        run_env = {**env, "RELGATE_HOSTS": str(folder)}
                        wall, cpu, done = timed(cli, run_env, cwd=root)
                        if done.returncode != 0:
                            return failed(f"{label} ({lane})", done)
                        void = check_ledger(Path(env["RELGATE_HOME"]), count, targets)
                        if void is not None:
                            print(f"{label} ({lane}): the run does not count: {void}", file=sys.stderr)
                            return 1
                        if n == 0:
                            print(f"  warm-up {label:5s} {wall:6.2f} s wall")
                            continue
                        times[label].append(wall)
                        print(f"  round {n} {label:5s} {wall:6.2f} s wall  {cpu:6.2f} s cpu")
                    for label, count in (("floor 4", HOSTS), ("floor 1", 1)) if copies else ():
                        wall, _, done = timed(_ssh_make(ns[:count], copies, tmp), env, cwd=root)
                        if done.returncode != 0:
                            return failed(f"{label} (ssh HOST make in copies of the project)", done)
                        if n:
                            times.setdefault(label, []).append(wall)
                            print(f"  round {n} {label} {wall:6.2f} s wall (ssh host 'make test && make contract')")
                results[lane] = (times["fleet"], times["one"])
                if copies:
                    results["make floor"] = (times["floor 4"], times["floor 1"])
                print(f"  {HOSTS} hosts {spread(times['fleet'], 1, '.2f')} s, 1 host {spread(times['one'], 1, '.2f')} s")
    print()
    for lane, (fleet, one) in results.items():
        if lane == "make floor":
            judge(f"fan-out floor, the make lane's commands through OpenSSH, no relgate: {HOSTS} hosts / 1 host",
                  goal=GOAL, ours=fleet, anchor=one, fmt=".3f", ours_label=f"ssh, {HOSTS} hosts",
                  anchor_label="ssh, 1 host")
            continue
        what = (f"three {args.seconds:g} s waits: relgate's own cost of fanning out" if lane == "wait" else
                f"make test/contract: {HOSTS} hosts sharing this machine's {os.cpu_count()} cores")
        judge(f"fan-out, lane {lane} ({what}): {HOSTS} hosts / 1 host", goal=GOAL, ours=fleet, anchor=one,
              fmt=".3f", ours_label=f"{HOSTS} hosts", anchor_label="1 host")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
