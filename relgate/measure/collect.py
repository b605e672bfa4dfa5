"""Measuring: run a measure's (or a quality scorer's) target through the host pool and keep
its rows as one batch; with ``--previous REF``, build REF in its own ``git worktree`` and run
the same target for REF and the candidate interleaved (A B A B …) on the same host, so both
sides share the machine's state. Every run is a ledger step at its own commit.

The steps go through :class:`relgate.run.runner.HostPool` like every other step, so a
remote host slots in where the pool places them.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.core.schema import did_you_mean, display_path
from relgate.core.verdict import Verdict
from relgate.evidence.baselines import board_key
from relgate.lanes.plan import target_command
from relgate.ledger.gitfacts import GitFacts, read_git_facts
from relgate.ledger.store import Ledger
from relgate.manifest.lanes import TargetOptions
from relgate.manifest.measures import MeasureSpec
from relgate.manifest.specs import CommandSpec
from relgate.manifest.workspace import Workspace
from relgate.measure.measurements import Row, parse_rows, record_batch
from relgate.measure.specs import Spec, source_hash, spec_of
from relgate.remote.pool import host_pool
from relgate.run.console import ConsoleReporter
from relgate.run.ledger_run import LedgerRun
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool, RunSummary, StepOutcome

__all__ = ["Side", "previous_side", "measure", "measure_of", "run_name"]


@record
class Side:
    """One side of a comparison: the candidate (the workspace), or a previous release's worktree."""

    label: str  # "candidate" or the ref as given ("v0.3.0")
    facts: GitFacts
    root: Path  # the project root in this side's tree
    release: str | None  # None for the candidate
    aa: str | None = None  # A/A: "a" or "b", the candidate measured against itself


def previous_side(ws: Workspace, ref: str) -> Side:
    """REF checked out in its own worktree under the ledger home (reused while it stays at REF)."""
    facts = read_git_facts(ws.project.root)
    top = Path(facts.toplevel)
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=top,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"--previous {ref}: no such commit or tag in {top}")
    sha = done.stdout.strip()
    tree = ws.home / "worktrees" / sha[:12]
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        add = subprocess.run(["git", "worktree", "add", "--detach", "--force", str(tree), sha], cwd=top,
                             capture_output=True, text=True)
        if add.returncode != 0:
            raise InputError(f"--previous {ref}: git worktree add failed: {add.stderr.strip()}")
    # A reused worktree must still be REF, untouched: its rows are recorded as REF, clean.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tree,
                             capture_output=True, text=True).stdout.strip()
    if head != sha or changed:
        raise InputError(f"--previous {ref}: the worktree {tree} " + ("has local changes" if head == sha else
                         f"is at {head[:12]}, not {sha[:12]}") + "; it would not measure "
                         f"{ref} as released. Remove it (git worktree remove --force {tree}) and run again")
    root = tree / ws.project.root.resolve().relative_to(top.resolve())
    if not root.is_dir():
        raise InputError(f"--previous {ref}: the project folder {root.relative_to(tree)} does not exist at {ref}")
    side_facts = GitFacts(commit=sha, branch=None, dirty=False, toplevel=tree)
    return Side(label=ref, facts=side_facts, root=root, release=ref.removeprefix("v") if ref[:1] == "v" else ref)


def run_name(measure: str, side: str | None, run: int) -> str:
    """A measuring run's step name: ``matvec#2`` for the candidate, ``matvec@v0.3.0#2`` for REF."""
    return f"{measure}{'' if side is None else '@' + side}#{run}"


def measure_of(step_name: str) -> str:
    """The measure a :func:`run_name` belongs to."""
    return step_name.partition("@")[0].partition("#")[0]


def _template(ws: Workspace, spec: Spec) -> PlannedStep:
    """The step that runs ``spec.target`` as its lane would (the lane's command, env, timeout, requires)."""
    lanes = ws.lanes
    if lanes is None:
        raise InputError(f"{display_path(spec.source)}: {spec.name}.target: the project declares no lanes")
    target = next((t for t in lanes.targets if t.name == spec.target), None)
    lane = lanes.assignments.get(spec.target)
    if target is None or lane is None:
        names = [t.name for t in lanes.targets if t.name]
        raise InputError(f"{display_path(spec.source)}: {spec.name}.target: no target \"{spec.target}\" with a lane"
                         f"{did_you_mean(spec.target, names)}")
    if lane not in lanes.lanes:
        raise InputError(f"{display_path(spec.source)}: {spec.name}.target: \"{spec.target}\" is in the lane "
                         f"\"{lane}\", which no lane defines (relgate census)")
    opts = lanes.options.get(spec.target, TargetOptions())
    command = target_command(ws.project, target, lanes.lanes[lane], opts)
    args = spec.args if isinstance(spec, MeasureSpec) else ()
    if args and command.argv is not None:
        argv = list(command.argv)
        command = CommandSpec(argv=tuple([*argv, *args] if "--" in argv else [*argv, "--", *args]))
    elif args:
        command = CommandSpec(shell=f"{command.shell} {' '.join(shlex.quote(a) for a in args)}")
    return PlannedStep(name=spec.name, commands=(command,), cwd=ws.project.root, lane="measure",
                       target=spec.target, env=dict(opts.env), timeout=opts.timeout, requires=opts.requires)


def _output(outcome: StepOutcome, file: Path | None) -> bytes:
    if file is not None:
        return read_user_file(file, what="measurement rows") if file.exists() else b""
    if outcome.log_path is None:
        return b""
    lines = outcome.log_path.read_bytes().splitlines(keepends=True)
    # The log's own lines (`# relgate …` header, `$ command`) are relgate's, not the target's.
    return b"".join(ln for ln in lines if not ln.startswith((b"# relgate ", b"$ ")))


def measure(ws: Workspace, names: Sequence[str], *, previous: str | None = None, argv: Sequence[str] = (),
            out: TextIO = sys.stdout, pool: HostPool | None = None, aa: bool = False) -> tuple[RunSummary, list[int]]:
    """Run every named measure (``runs`` times) and quality scorer (once) for the candidate —
    and for ``previous`` too, interleaved — and record one batch per side; returns the run's
    summary and the new batch ids (none for a side whose runs did not all pass). ``aa``: the
    candidate twice, interleaved (A B A B …), as the two sides of an A/A batch (side "aa")."""
    specs = [spec_of(ws, n) for n in names]
    cand_facts = read_git_facts(ws.project.root)
    sides = [Side(label="candidate", facts=cand_facts, root=ws.project.root, release=None)]
    if aa:
        sides = [Side(label=f"aa-{x}", facts=cand_facts, root=ws.project.root, release=None, aa=x) for x in "ab"]
    elif previous is not None:
        sides.insert(0, previous_side(ws, previous))
    own_pool = pool is None
    pool = pool or host_pool(ws)
    reporter = ConsoleReporter(out)
    folder = ws.home / "measure" / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True, exist_ok=True)
    batch_ids: list[int] = []
    with LedgerRun(ws, session="compare", argv=argv, facts=cand_facts, pool=pool, out=out,
                   close_pool=own_pool) as run:  # REF's steps belong to the candidate's project too
        for spec in specs:
            template = _template(ws, spec)
            placed = pool.place(template)  # one host for both sides and every run: same machine, same board
            if not isinstance(placed, str):
                template = replace(template, host=placed.host.name)
            runs = spec.runs if isinstance(spec, MeasureSpec) else 1
            got: dict[str, list[tuple[StepOutcome, Path | None]]] = {s.label: [] for s in sides}
            for i in range(runs):
                for side in sides:  # A B A B …: both sides share the machine's state
                    name = run_name(spec.name, None if side.release is None and side.aa is None else side.label, i + 1)
                    file = folder / f"{name.replace('@', '_').replace('#', '_')}.rows" if spec.file_env else None
                    env = {**template.env, **({spec.file_env: str(file)} if spec.file_env and file else {})}
                    cwd = side.root / template.cwd.relative_to(ws.project.root)
                    step = replace(template, name=name, env=env, cwd=cwd)
                    part = run.steps([step], facts=side.facts, reporter=reporter)
                    got[side.label].append((part.outcomes[0], file))
            for side in sides:
                batch = _keep(ws, run.ledger, spec, side, got[side.label], pool, run.run_id, run.identity.key, out)
                if batch is not None:
                    batch_ids.append(batch)
    return run.summary, batch_ids


def _keep(ws: Workspace, ledger: Ledger, spec: Spec, side: Side, got: list[tuple[StepOutcome, Path | None]],
          pool: HostPool, run_id: str, project: str, out: TextIO) -> int | None:
    red = [o for o, _ in got if o.verdict is not Verdict.PASS]
    if red:
        print(f"{spec.name} ({side.label}): no batch recorded: {red[0].step.name} {red[0].verdict.value}"
              f" ({red[0].reason})", file=out)
        return None
    host = next(h for h in pool.hosts if h.name == got[0][0].host)
    # Where a step learnt its board only when it ran (a Slurm node), its own facts say it; every
    # run of a batch must have run on the same board (boards are never merged)
    ran_on = {tuple(str(o.facts.get(k) or "") for k in ("board", "driver", "toolkit")) for o, _ in got}
    if len(ran_on) > 1:
        print(f"{spec.name} ({side.label}): no batch recorded: its runs ran on different boards "
              f"({'; '.join(sorted(', '.join(x for x in r if x) for r in ran_on))})", file=out)
        return None
    board, driver, toolkit = next(iter(ran_on))
    known = {"board": board_key(board or host.board, host.name), "driver": driver or host.facts.driver or "",
             "toolkit": toolkit or host.facts.toolkit or "", "host": host.name, "commit": side.facts.commit,
             "dirty": "yes" if side.facts.dirty else "no", "release": side.release or "",
             "source_hash": source_hash(Path(side.facts.toplevel), side.facts.commit, side.root) or "",
             "aa": side.aa or ""}
    runs: list[list[Row]] = []
    raw = b""
    for outcome, file in got:
        data = _output(outcome, file)
        shown = display_path(file) if file is not None else f"output of step #{outcome.step_id}"
        if not data.strip():
            print(f"{spec.name} ({side.label}): no batch recorded: {shown} is empty "
                  f"({'$' + spec.file_env if spec.file_env else 'stdout'} brought no rows back)", file=out)
            return None
        runs.append(parse_rows(data, spec, source=shown, known=known))
        raw += data
    warmup = spec.warmup if isinstance(spec, MeasureSpec) else 0
    batch = record_batch(ledger, spec, runs, project=project,
                         side="aa" if side.aa else "candidate" if side.release is None else "release",
                         board=known["board"],
                         release=side.release, commit=side.facts.commit, dirty=side.facts.dirty, host=host.name,
                         metadata={k: v for k, v in known.items() if v}, warmup=warmup,
                         source=f"{len(runs)} run(s) of {spec.target}", run_id=run_id, raw=raw)
    print(f"{spec.name} ({side.label}): batch #{batch}, {len(runs)} run(s), {warmup} warm-up discarded, "
          f"board {known['board']}", file=out)
    return batch
