"""Benchmark: relgate's own fixed cost, and what `nox -l` costs with relgate's sessions.

    python bench/fixed_cost.py [--rounds N] [--warmup N] [--against DIR]

Two measurements, each in the same run as its alternative (alternating, so caches and a busy
machine affect both alike; warm-up rounds first, not counted; min / median / max of each side and of the per-round
difference, judged on its median; see bench/_common.py):

* fixed cost: ``nox -s host`` on a project whose builds.toml holds one host check, ``true``,
  and no lanes (and ``git diff --check`` turned into that one check), minus an empty nox
  session (``nox -f EMPTY -s noop``) — what relgate adds around a step: importing the engine,
  loading the workspace, detecting the host, git facts, the ledger, the table. Goal ≤ 20 ms.
* the same for ``nox -s host -- git-diff-check`` on a copy of the bundled C example
  (examples/tinyinfer): the lane census, git facts and host detection included. Goal ≤ 20 ms.
* listing: ``nox -l`` with relgate's noxfile against ``nox -l`` with an empty noxfile.
  Goal ≤ 1.3×.

With ``--against DIR`` another checkout's ``nox -s host`` (its own noxfile, sessions and
engine; its own ledger home) runs in the same rounds, so two versions are compared on one
machine state.

With ``--ledger-steps N`` each ledger home first holds N finished steps (runs of 50, each
with a 2 KB tail, as a project's ledger grows; written by that checkout's own engine): what
a mature ledger adds to every run (nothing, where the full check runs only after an unclean
shutdown or on demand).

After the first nox run the ledger's last run must hold exactly one passed step (``true``)
and the skipped one, or the comparison is void (exit 1). This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import DEFAULT_ROUNDS, NOOP_NOXFILE, REPO, Bench, failed, git, judge, make_project, spread, timed  # noqa: E402,E501

FIXED_GOAL_MS = 20.0
LIST_GOAL = 1.3


def _project(tmp: Path, *, compile_each_run: bool) -> dict[str, str]:
    root = tmp / "tiny"
    root.mkdir()
    (root / "README").write_text("a project with one host check\n")
    (root / "CHANGELOG.md").write_text("# Changelog\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    manifests = tmp / "manifests"
    manifests.mkdir()
    (manifests / "project.toml").write_text(
        f'[project]\nname = "tiny"\nroot = "{root}"\nkind = "make"\nversion = "1.0.0"\n'
        'changelog = "CHANGELOG.md"\nevidence_env = "TINY_EVIDENCE"\n')
    (manifests / "builds.toml").write_text('[[check]]\nname = "true"\nrun = "true"\n\n'
                                           '[[check]]\nname = "git-diff-check"\nbuiltin = "git-diff-check"\n'
                                           'skip = "one check only: this bench measures the fixed cost"\n')
    hosts = tmp / "hosts"
    hosts.mkdir()
    (hosts / "local.toml").write_text('[host]\nname = "local"\nkind = "local"\n')
    env = {**os.environ, "RELGATE_MANIFESTS": str(manifests), "RELGATE_HOSTS": str(hosts),
           "RELGATE_HOME": str(tmp / "home"), "NO_COLOR": "1"}
    # As on a user's machine, both sides keep their bytecode: with PYTHONDONTWRITEBYTECODE
    # (set on some build machines) every run of an editable checkout recompiles its sources,
    # which measures the compiler, not relgate. --compile-each-run keeps it to show that cost.
    if not compile_each_run:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# Fills a ledger home with finished steps through a checkout's own engine (argv: home, steps).
_FILL = """
import sys
from pathlib import Path
from relgate.core.verdict import Verdict
from relgate.ledger.store import Ledger
home, steps = Path(sys.argv[1]), int(sys.argv[2])
import contextlib
with Ledger.open(home) as ledger:
    for first in range(0, steps, 50):
      with getattr(ledger, "_tx", contextlib.nullcontext)():  # one commit per run of 50 steps
        run = ledger.begin_run(session="host", argv=["nox", "-s", "host"], project="earlier",
                               project_root=Path("/nonexistent"), commit="e" * 40, branch="main", dirty=False)
        for n in range(first, min(first + 50, steps)):
            step = ledger.begin_step(run_id=run, session="host", step=f"check-{n % 50}", lane=None, target=None,
                                     host="local", board=None, driver=None, toolkit=None, commit="e" * 40,
                                     dirty=False, command="make -j8 all", cwd="/nonexistent", env={}, log_path=None)
            ledger.finish_step(step, verdict=Verdict.PASS, reason=None, exit_code=0, duration=1.0,
                               tail="x" * 2000)
        ledger.finish_run(run, "ok")
"""


def _fill_ledger(home: Path, steps: int, checkout: Path) -> None:
    subprocess.run([sys.executable, "-c", _FILL, str(home), str(steps)], check=True,
                   env={**os.environ, "PYTHONPATH": str(checkout)})


def _check_ledger(home: Path) -> str | None:
    import sqlite3

    # closed here: an open reader would keep frames in the WAL and make every run do the full check
    with contextlib.closing(sqlite3.connect(home / "ledger.sqlite3")) as db:
        rows = db.execute("SELECT step, verdict FROM steps WHERE run_id = (SELECT id FROM runs"
                          " WHERE project = 'tiny' ORDER BY started DESC, rowid DESC LIMIT 1) ORDER BY id").fetchall()
    wanted = [("true", "pass"), ("git-diff-check", "skip")]
    return None if rows == wanted else f"ledger holds {rows}, expected {wanted}"


def _check_diff_check(home: Path) -> str | None:
    """The bundled C example's `nox -s host -- git-diff-check`: its last run holds the census and
    the one check, passed."""
    import sqlite3

    # closed here: an open reader would keep frames in the WAL and make every run do the full check
    with contextlib.closing(sqlite3.connect(home / "ledger.sqlite3")) as db:
        rows = db.execute("SELECT step, verdict FROM steps WHERE run_id = (SELECT id FROM runs"
                          " ORDER BY started DESC, rowid DESC LIMIT 1) ORDER BY id").fetchall()
    if ("git-diff-check", "pass") not in rows or any(v != "pass" for _, v in rows if _ != "git-diff-check"):
        return f"ledger holds {rows}, expected git-diff-check passed (and the lane census)"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3 * DEFAULT_ROUNDS)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--compile-each-run", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE from the environment (every run recompiles relgate)")
    ap.add_argument("--ledger-steps", type=int, default=0, metavar="N",
                    help="fill each ledger home with N finished steps first (a mature ledger)")
    ap.add_argument("--against", type=Path, metavar="DIR",
                    help="another relgate checkout whose `nox -s host` runs in the same rounds")
    args = ap.parse_args()
    nox = [sys.executable, "-m", "nox"]
    with Bench("fixed_cost"), tempfile.TemporaryDirectory(prefix="relgate-bench-fixed-") as name:
        tmp = Path(name)
        env = _project(tmp, compile_each_run=args.compile_each_run)
        c_root, c_env = make_project(tmp / "c", "tinyinfer")
        c_env = {**c_env, **{k: v for k, v in env.items() if k not in c_env}}
        if not args.compile_each_run:
            c_env.pop("PYTHONDONTWRITEBYTECODE", None)
        empty = tmp / "empty" / "noxfile.py"
        empty.parent.mkdir()
        empty.write_text(NOOP_NOXFILE)
        sides = {
            "relgate host": [*nox, "-f", str(REPO / "noxfile.py"), "-s", "host"],
            "relgate git-diff-check": [*nox, "-f", str(REPO / "noxfile.py"), "-s", "host", "--", "git-diff-check"],
            "empty session": [*nox, "-f", str(empty), "-s", "noop"],
            "relgate nox -l": [*nox, "-f", str(REPO / "noxfile.py"), "-l"],
            "empty nox -l": [*nox, "-f", str(empty), "-l"],
        }
        envs = {label: env for label in sides}
        envs["relgate git-diff-check"] = c_env
        cwds = {label: tmp for label in sides}
        cwds["relgate git-diff-check"] = c_root
        if args.against is not None:
            # its noxfile puts its own folder first on sys.path: its sessions import its engine
            sides["against host"] = [*nox, "-f", str(args.against.resolve() / "noxfile.py"), "-s", "host"]
            envs["against host"] = {**env, "RELGATE_HOME": str(tmp / "home-against")}
            cwds["against host"] = tmp
        if args.ledger_steps:
            first = Path(envs["relgate host"]["RELGATE_HOME"])
            _fill_ledger(first, args.ledger_steps, REPO)
            shutil.copytree(first, envs["relgate git-diff-check"]["RELGATE_HOME"])  # the same ledger, copied
            if args.against is not None:
                _fill_ledger(Path(envs["against host"]["RELGATE_HOME"]), args.ledger_steps, args.against.resolve())
            print(f"each ledger home holds {args.ledger_steps} finished steps first")
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpus: dict[str, list[float]] = {k: [] for k in sides}
        from relgate.ledger.integrity import _file_state, _verified  # this checkout's, for the diagnosis below

        checked: dict[str, int] = {}  # our runs that opened a ledger not as its last clean close left it
        for round_no in range(args.warmup + args.rounds):
            for label, argv in sides.items():
                home = Path(envs[label]["RELGATE_HOME"])
                if label in ("relgate host", "relgate git-diff-check") and round_no >= args.warmup:
                    state = _file_state(home / "ledger.sqlite3")
                    if state is None or state != _verified(home):
                        checked[label] = checked.get(label, 0) + 1
                        print(f"  ({label}: the ledger is not as a clean close left it: state {state}, "
                              f"stamp {_verified(home)}; this run does the full check)")
                wall, cpu, done = timed(argv, envs[label], cwd=cwds[label])
                if done.returncode != 0:
                    return failed(label, done)
                if round_no == 0 and label in ("relgate host", "against host", "relgate git-diff-check"):
                    check = _check_diff_check if label == "relgate git-diff-check" else _check_ledger
                    problem = check(Path(envs[label]["RELGATE_HOME"]))
                    if problem:
                        print(f"void: {label}: {problem}", file=sys.stderr)
                        return 1
                if round_no >= args.warmup:
                    times[label].append(wall)
                    cpus[label].append(cpu)
            if round_no >= args.warmup:
                print(f"round {round_no - args.warmup + 1}: " + ", ".join(
                    f"{k} {times[k][-1] * 1000:.0f} ms" for k in sides))
    print()
    for label in ("relgate host", "relgate git-diff-check"):
        print(f"{label}: the full ledger check ran in {checked.get(label, 0)} of {args.rounds} timed rounds")
    steps = f", ledger of {args.ledger_steps} steps" if args.ledger_steps else ""
    judge(f"fixed cost: nox -s host, one `true` check{steps} − empty nox session", goal=FIXED_GOAL_MS,
          ours=times["relgate host"], anchor=times["empty session"], mode="difference", unit="ms", scale=1000,
          fmt=".1f", ours_label="relgate host (true)", anchor_label="empty nox session")
    judge(f"fixed cost: nox -s host -- git-diff-check on examples/tinyinfer{steps} − empty nox session",
          goal=FIXED_GOAL_MS, ours=times["relgate git-diff-check"], anchor=times["empty session"], mode="difference",
          unit="ms", scale=1000, fmt=".1f", ours_label="relgate git-diff-check", anchor_label="empty nox session")
    judge("nox -l: relgate's noxfile / an empty noxfile", goal=LIST_GOAL, ours=times["relgate nox -l"],
          anchor=times["empty nox -l"], unit="ms", scale=1000, fmt=".2f", ours_label="relgate nox -l",
          anchor_label="empty nox -l")
    print("CPU (user + sys of each process tree), min / median / max: " + "; ".join(
        f"{k} {spread(v, 1000, '.0f')} ms" for k, v in cpus.items()))
    for label in ("relgate host", "relgate git-diff-check"):
        diffs = [a - b for a, b in zip(cpus[label], cpus["empty session"])]
        print(f"  CPU {label} − empty session per round: {spread(diffs, 1000, '.0f')} ms")
    if args.against is not None:
        judge(f"{args.against}: fixed cost in the same rounds", goal=FIXED_GOAL_MS, ours=times["against host"],
              anchor=times["empty session"], mode="difference", unit="ms", scale=1000, fmt=".1f",
              ours_label="against host", anchor_label="empty nox session")
    return 0


if __name__ == "__main__":
    sys.exit(main())
