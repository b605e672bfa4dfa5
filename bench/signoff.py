#!/usr/bin/env python3
"""Benchmark: ``nox -s signoff`` on a big ledger, cold and re-run with nothing new.

Builds, in a temporary directory, a copy of the C example (its own git repo, manifests,
hosts, ledger home) whose ledger holds ``--steps`` step rows (default 10,000: host, gate,
contract, bench, package and publish sessions over many runs) and an evidence capture and
accepted baseline of ``--cells`` cells each (default 1,000,000), checked by a real
``nox -s evidence``; plus measurement batches and decisions. Then it times, alternating:

- cold: ``nox -s signoff`` into a fresh out folder (assembles and writes everything);
- re-run: ``nox -s signoff`` again with nothing new (must leave identical bytes);
- the floor, in the same run: ``python -c pass``, an empty nox session (``nox -s noop`` of a
  noxfile with one empty session: what nox itself costs), ``nox -l`` (nox's start and
  relgate's noxfile import), and the re-run through ``relgate signoff`` (no nox) and
  in-process (``Workspace.load`` and ``run_signoff``, after the imports).

Goals: cold ≤ 2 s, re-run ≤ 0.3 s (both whole ``nox -s signoff`` processes). The re-run's
share that is relgate's own (re-run minus the empty nox session) is printed beside it. As on
a user's machine, bytecode is kept (``PYTHONDONTWRITEBYTECODE`` is dropped from the
environment; ``--compile-each-run`` keeps it). Prints PASS or MISS; exits 1 only when a timed
run failed or a re-run changed a byte.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _big_ledger import populate  # noqa: E402

from _common import DEFAULT_ROUNDS, NOOP_NOXFILE, REPO, Bench, failed, judge, make_project, spread, timed  # noqa: E402,E501

sys.path.insert(0, str(REPO))

GOAL_COLD, GOAL_RERUN = 2.0, 0.3


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--cells", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--compile-each-run", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE from the environment (every run recompiles relgate)")
    args = ap.parse_args()
    with Bench("signoff"), tempfile.TemporaryDirectory(prefix="relgate-bench-signoff-") as tmp:
        root, env = make_project(Path(tmp), "tinyinfer", compile_each_run=args.compile_each_run)
        env = {**env, "PYTHONPATH": str(REPO)}  # this checkout's relgate, whichever `pip install -e` points at
        empty = Path(tmp) / "empty" / "noxfile.py"
        empty.parent.mkdir()
        empty.write_text(NOOP_NOXFILE)
        home = Path(env["RELGATE_HOME"])
        t0 = time.perf_counter()
        populate(home, root, args.steps, args.cells, env)
        nox = [sys.executable, "-m", "nox", "-f", str(REPO / "noxfile.py")]
        wall, _, done = timed([*nox, "-s", "evidence"], env)
        if done.returncode != 0:
            return failed("nox -s evidence", done)
        print(f"ledger: {args.steps} steps, {args.cells} evidence cells (capture and baseline), evidence checked "
              f"in {wall:.2f} s; setup {time.perf_counter() - t0:.1f} s")
        cold, rerun, floor, cli, inproc, bare, noop = [], [], [], [], [], [], []
        reference = None
        for r in range(args.rounds):
            out = Path(tmp) / f"out{r}"
            w, _, done = timed([*nox, "-s", "signoff", "--", "--out", str(out)], env)
            if done.returncode not in (0, 1):  # 1: incomplete (the big ledger has no real host run); still timed
                return failed("nox -s signoff (cold)", done)
            cold.append(w)
            first = digest(out)
            w, _, done = timed([*nox, "-s", "signoff", "--", "--out", str(out)], env)
            if done.returncode not in (0, 1) or "nothing new" not in done.stdout:
                return failed("nox -s signoff (re-run)", done)
            rerun.append(w)
            if digest(out) != first or (reference is not None and first != reference):
                print("MISS: a re-run with nothing new changed the files", file=sys.stderr)
                return 1
            reference = first
            w, _, done = timed([*nox, "-l"], env)
            floor.append(w)
            w, _, done = timed([sys.executable, "-m", "nox", "-f", str(empty), "-s", "noop"], env)
            if done.returncode != 0:
                return failed("nox -s noop (empty noxfile)", done)
            noop.append(w)
            w, _, done = timed([sys.executable, "-m", "relgate.cli", "--workspace", str(REPO), "signoff", "--out",
                                str(out)], env)
            if done.returncode not in (0, 1) or "nothing new" not in done.stdout:
                return failed("relgate signoff (re-run)", done)
            cli.append(w)
            w, _, done = timed([sys.executable, "-c", "pass"], env)
            bare.append(w)
            w, _, done = timed([sys.executable, "-c", "import sys, time, io; from pathlib import Path;"
                                "from relgate.manifest.workspace import Workspace;"
                                "from relgate.signoff.stage import run_signoff; t=time.perf_counter();"
                                f"run_signoff(Workspace.load(Path({str(REPO)!r})), out_dir=Path({str(out)!r}),"
                                " out=io.StringIO()); print(time.perf_counter()-t)"], env)
            if done.returncode != 0:
                return failed("run_signoff in-process", done)
            inproc.append(float(done.stdout.strip()))
            print(f"round {r + 1}: cold {cold[-1]:.2f} s, re-run {rerun[-1]:.3f} s, empty nox session "
                  f"{noop[-1]:.3f} s, nox -l {floor[-1]:.3f} s, "
                  f"relgate signoff re-run {cli[-1]:.3f} s, in-process re-run {inproc[-1]:.3f} s, "
                  f"python -c pass {bare[-1]:.3f} s")
        print()
        judge("sign-off, cold nox -s signoff", goal=GOAL_COLD, ours=cold, mode="value", unit="s", fmt=".3f",
              ours_label="cold")
        judge("sign-off, re-run with nothing new (identical bytes every round)", goal=GOAL_RERUN, ours=rerun,
              mode="value", unit="s", fmt=".3f", ours_label="re-run")
        print(f"  anchor, the same rounds: an empty nox session {spread(noop)} s; re-run / empty session per round "
              f"{spread([a / b for a, b in zip(rerun, noop)])}; relgate's own share (re-run − empty session) "
              f"{spread([a - b for a, b in zip(rerun, noop)], 1000, '.0f')} ms")
        print(f"  floor: python -c pass {spread(bare)} s; nox -l {spread(floor)} s; relgate signoff re-run "
              f"without nox {spread(cli)} s; run_signoff in-process {spread(inproc)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
