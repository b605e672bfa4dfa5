"""Benchmark: `nox -s host` against the plain shell script a person would write instead.

    python bench/host_vs_shell.py [--rounds N] [--warmup N] [--nox CMD]

Both sides run the same commands on the same fresh copy of examples/tinyinfer:

* relgate's side is ``nox -f REPO/noxfile.py -s host``, timed as a whole process (interpreter
  start, nox, workspace load, host detection, git facts, the ledger, the steps themselves);
* the alternative is a generated ``set -e`` bash script that runs the host checks' commands
  in order, each in its step's folder, all output appended to a log file. The commands come
  from relgate's own planner, planned as ``stages.run_host_checks`` plans them
  (``plan_host_checks``, plus the host lane's targets when the project keeps lanes); a step
  relgate would not run (``skip``, or a ``requires`` no host offers, e.g. no nvcc) is left
  out of the script too. relgate's own bookkeeping steps (the lane census, a relgate process)
  have no counterpart in a person's script: they count on relgate's side only.

After the first nox run the script checks the ledger: the steps nox recorded, and which of
them ran, must be exactly the ones planned here, or the comparison is void (exit 1).

Runs alternate (shell, nox, shell, nox, ...) so caches warm both sides alike; warm-up rounds
run first and are not counted. The result is the ratio of the medians, nox / shell, against
the goal (<= 1.10). Exit 0 unless a run failed: then 1, with the failed run's output tail.
This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from relgate import stages  # noqa: E402
from relgate.ledger import Ledger  # noqa: E402
from relgate.plan import PlannedStep, plan_host_checks  # noqa: E402
from relgate.workspace import Workspace  # noqa: E402

EXAMPLE = "tinyinfer"
GOAL = 1.10
TAIL_LINES = 40


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)


def make_project(tmp: Path) -> dict[str, str]:
    """Copy the example into its own git repo with manifests, hosts and a fresh ledger home
    (what tests/conftest.py's copy_example does); returns the environment that selects them."""
    root = tmp / EXAMPLE
    shutil.copytree(REPO / "examples" / EXAMPLE, root, ignore=shutil.ignore_patterns("build", "target"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    manifests = tmp / "manifests"
    shutil.copytree(REPO / "manifests", manifests)
    project = manifests / "project.toml"
    text = project.read_text()
    old = f'root = "../examples/{EXAMPLE}"'
    if old not in text:
        raise SystemExit(f"{project}: no line {old!r} to repoint at the copy")
    project.write_text(text.replace(old, f'root = "{root}"'))
    hosts = tmp / "hosts"
    shutil.copytree(REPO / "hosts", hosts)
    return {**os.environ, "RELGATE_MANIFESTS": str(manifests), "RELGATE_HOSTS": str(hosts),
            "RELGATE_HOME": str(tmp / "home"), "NO_COLOR": "1"}


@dataclass
class Plan:
    own: list[PlannedStep]  # relgate's bookkeeping steps (nox side only)
    run: list[PlannedStep]  # the project's commands relgate runs here (both sides)
    left_out: list[tuple[PlannedStep, str]]  # planned, but relgate would not run them here (neither side)
    order: list[tuple[str, bool]]  # every step's name in nox's order, and whether it runs


def plan(env: dict[str, str]) -> Plan:
    """The host session's steps, planned the way ``stages.run_host_checks`` plans them."""
    ws = Workspace.load(REPO, environ=env)
    own: list[PlannedStep] = []
    extra: list[PlannedStep] = []
    lanes = None
    if hasattr(stages, "census_step"):  # lanes: census first, host-lane targets before git diff --check
        from relgate.lanes import load_lanes, plan_lane
        lanes = load_lanes(ws.project, ws.manifests_dir)
    if lanes is not None:
        own.append(stages.census_step(ws))
        extra = plan_lane(ws.project, lanes, "host", names=())
        steps = plan_host_checks(ws.builds, ws.project.root, extra=extra)
    else:
        steps = plan_host_checks(ws.builds, ws.project.root)
    if hasattr(stages, "host_pool"):
        pool = stages.host_pool(ws)
        def why_not(step: PlannedStep) -> str | None:
            placed = pool.place(step)
            return f"not run: {placed}" if isinstance(placed, str) else None
    else:  # one local host
        host = stages.local_host(ws)
        def why_not(step: PlannedStep) -> str | None:
            missing = host.missing(step.requires)
            return f"not run: no host offers {', '.join(missing)}" if missing else None
    result = Plan(own=own, run=[], left_out=[], order=[(s.name, True) for s in own])
    for step in steps:
        why = f"skip: {step.skip}" if step.skip else why_not(step)
        if why:
            result.left_out.append((step, why))
        else:
            result.run.append(step)
        result.order.append((step.name, not why))
    return result


def check_ledger(env: dict[str, str], planned: Plan) -> str | None:
    """Compare the latest run in the ledger with the plan; a difference voids the comparison."""
    with Ledger.open(Path(env["RELGATE_HOME"])) as ledger:
        runs = ledger.runs()
        rows = ledger.steps(run_id=runs[-1].id) if runs else []
    recorded = [(r.step, str(r.verdict) not in ("skip", "not-run")) for r in rows]
    if recorded != planned.order:
        return (f"nox recorded (step, ran) {recorded}, the plan here is {planned.order}: "
                "this script no longer plans what `nox -s host` runs")
    return None


def shell_script(steps: list[PlannedStep], log: Path, evidence: Path) -> str:
    """A person's script: the same commands in order, stop at the first failure, keep a log."""
    q = shlex.quote
    lines = ["#!/usr/bin/env bash",
             "# The host checks' commands as a plain script (generated by bench/host_vs_shell.py).",
             "set -e",
             f"exec >>{q(str(log))} 2>&1"]
    for step in steps:
        lines.append(f"echo '== {step.name}'")
        body = [f"cd {q(str(step.cwd))}"]
        for command in step.commands:
            if command.shell is not None:  # relgate runs these through /bin/sh
                body.append(f"/bin/sh -c {q(command.shell)}")
            else:
                body.append(command.display())
        env = dict(step.env)
        evidence_env = getattr(step, "evidence_env", None)
        if evidence_env:  # the project's tests append evidence here, as under relgate
            cells = evidence / f"{step.name}.cells"
            body.insert(0, f"rm -f {q(str(cells))}")
            env[evidence_env] = str(cells)
        if env:  # a subshell keeps the step's variables to the step
            exports = " ".join(f"{k}={q(v)}" for k, v in env.items())
            lines.append(f"(export {exports}; {'; '.join(body)})")
        else:
            lines.extend(body)
    return "\n".join(lines) + "\n"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall clock of the whole process, and the CPU time (user + sys) of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def failed(label: str, done: subprocess.CompletedProcess[str], log: Path | None = None) -> int:
    out = done.stdout + done.stderr
    if log is not None and log.exists():
        out += log.read_text(errors="replace")
    tail = "\n".join(out.splitlines()[-TAIL_LINES:])
    print(f"\n{label} failed (exit {done.returncode}); last lines of its output:\n{tail}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each side (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--nox", default="nox", help="the nox command, as typed (default: nox on PATH)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    nox_cmd = shlex.split(args.nox)
    resolved = shutil.which(nox_cmd[0])
    if resolved is None:
        nox_cmd = [sys.executable, "-m", "nox"]
    nox_argv = [*nox_cmd, "-f", str(REPO / "noxfile.py"), "-s", "host"]

    with tempfile.TemporaryDirectory(prefix="relgate-bench-") as tmpdir:
        tmp = Path(tmpdir)
        env = make_project(tmp)
        planned = plan(env)
        log = tmp / "shell.log"
        script = tmp / "host.sh"
        (tmp / "evidence").mkdir()
        script.write_text(shell_script(planned.run, log, tmp / "evidence"))
        shell_argv = ["bash", str(script)]

        print(f"relgate: {shlex.join(nox_argv)}" + (f"   ({nox_cmd[0]} -> {resolved})" if resolved else ""))
        print(f"shell:   {shlex.join(shell_argv)}   (output to {log.name})")
        print(f"steps:   {', '.join(s.name for s in planned.run)}")
        for step in planned.own:
            print(f"         nox side only: {step.name} (relgate's own step, not a project command)")
        for step, why in planned.left_out:
            print(f"         left out of both: {step.name} ({why})")
        print()

        sides = (("shell", shell_argv), ("nox", nox_argv))
        times: dict[str, list[float]] = {"shell": [], "nox": []}
        cpu: dict[str, list[float]] = {"shell": [], "nox": []}
        checked = False
        for rnd in range(-args.warmup + 1, args.rounds + 1):
            row = []
            for label, cmd in sides:
                seconds, cpu_s, done = timed(cmd, env)
                if done.returncode != 0:
                    return failed(f"{label} run (round {rnd})", done, log if label == "shell" else None)
                if label == "nox" and not checked:
                    checked = True
                    problem = check_ledger(env, planned)
                    if problem:
                        print(f"\nledger check failed: {problem}", file=sys.stderr)
                        return 1
                if rnd >= 1:
                    times[label].append(seconds)
                    cpu[label].append(cpu_s)
                row.append(f"{label} {seconds:6.3f} s")
            tag = f"round {rnd}" if rnd >= 1 else "warm-up"
            print(f"{tag:>8}:  " + "   ".join(row) + ("" if rnd >= 1 else "   (not counted)"))

    shell_med = statistics.median(times["shell"])
    nox_med = statistics.median(times["nox"])
    ratio = nox_med / shell_med
    print()
    print(f"median:   shell {shell_med:6.3f} s   nox {nox_med:6.3f} s   "
          f"(relgate adds {nox_med - shell_med:+.3f} s)")
    shell_cpu, nox_cpu = statistics.median(cpu["shell"]), statistics.median(cpu["nox"])
    print(f"cpu time (user+sys of the process tree, for reference; a busy machine moves it less): "
          f"shell {shell_cpu:.3f} s   nox {nox_cpu:.3f} s   ratio {nox_cpu / shell_cpu:.3f}")
    print(f"ratio nox/shell: {ratio:.3f}   goal <= {GOAL:.2f}   {'PASS' if ratio <= GOAL else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
