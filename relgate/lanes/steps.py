"""The steps every lane session runs: the lane census first, then the lane's targets, or a
``not-run`` step saying why nothing was selected — a lane that runs nothing is never green."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from relgate.core.errors import ExecutionError, ManifestError
from relgate.kinds.base import RunListing
from relgate.kinds.registry import kind_of
from relgate.lanes.plan import plan_lane
from relgate.manifest.lanes import LanesSpec
from relgate.manifest.specs import ProjectSpec
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep, StepFailed, StepNotRun

if TYPE_CHECKING:  # the census is imported by the step that runs it
    from relgate.lanes.census import Violation

__all__ = ["census_lines", "census_step", "violations_summary", "not_run_step", "lane_steps", "refuse_unknown_lanes",
           "NO_TARGETS"]

NO_TARGETS = "no targets in this lane"


def census_lines(project: ProjectSpec, lanes: LanesSpec, write: Callable[[str], None]) -> int:
    """The lane census: one line per violation, a count; 0 clean, 1 violations."""
    return 1 if _census(project, lanes, write) else 0


def _census(project: ProjectSpec, lanes: LanesSpec, write: Callable[[str], None]) -> list[Violation]:
    from relgate.lanes.census import render_violations, run_census  # by the step that runs it

    adapter = kind_of(project.kind)
    listed = adapter.listed_tests(project.root, _listing(project.root, write))
    violations = run_census(kind=project.kind, root=project.root, targets=lanes.targets, lanes=lanes.file,
                            known_lanes=lanes.lanes, references=lanes.references, option_files=lanes.option_files,
                            runner_tests=listed, runner=adapter.test_runner)
    if listed is not None:
        write(f"{adapter.test_runner} lists {len(listed)} test{'' if len(listed) == 1 else 's'}")
    for line in render_violations(violations):
        write(line)
    write(f"census: {len(lanes.targets)} targets, {len(lanes.file.rows)} lane rows, "
          f"{len(violations)} violation{'' if len(violations) == 1 else 's'}")
    return violations


def _listing(root: Path, write: Callable[[str], None]) -> RunListing:
    """How a kind asks its test runner what it lists: the command in the census's log, its
    output there too when it fails (an ``error`` of the census step: never a census that
    checked less)."""

    def run(argv: Sequence[str]) -> str:
        write("$ " + shlex.join(argv))
        try:
            done = subprocess.run(list(argv), cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=_LISTING_TIMEOUT)
        except OSError as exc:
            raise ExecutionError(f"census: cannot run {argv[0]}: {exc.strerror or exc}") from None
        except subprocess.TimeoutExpired:
            raise ExecutionError(f"census: {shlex.join(argv)} ran past {_LISTING_TIMEOUT} s") from None
        if done.returncode != 0:
            for line in (done.stdout + done.stderr).splitlines()[-40:]:
                write(line)
            raise ExecutionError(f"census: {shlex.join(argv)} exited {done.returncode} (its output is in the log)")
        return done.stdout

    return run


_LISTING_TIMEOUT = 600


def violations_summary(violations: Sequence[Violation], limit: int = 160) -> str:
    """``4 violations: unassigned overflow; stale-row layout, oveflow_old`` (rule by rule, cut to
    ``limit`` characters; every line is in the step's log)."""
    by_rule: dict[str, list[str]] = {}
    for v in violations:
        by_rule.setdefault(v.rule, []).append(v.target)
    text = "; ".join(f"{rule} {', '.join(names)}" for rule, names in by_rule.items())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{len(violations)} violation{'' if len(violations) == 1 else 's'}: {text}"


def _census_action(project: ProjectSpec, lanes: LanesSpec) -> Callable[[Callable[[str], None]], int]:
    def action(write: Callable[[str], None]) -> int:
        violations = _census(project, lanes, write)
        if violations:
            raise StepFailed(violations_summary(violations))
        return 0

    return action


def refuse_unknown_lanes(project: ProjectSpec, lanes: LanesSpec, session: str) -> None:
    """A lane session refuses a lane table that names a lane no lane defines (which targets
    a lane holds is then a guess): a :class:`ManifestError` (exit 2) naming every unknown
    lane and every other census violation at once."""
    unknown = lanes.unknown_lanes()
    if not unknown:
        return
    from relgate.lanes.census import run_census

    others = [v for v in run_census(kind=project.kind, root=project.root, targets=lanes.targets, lanes=lanes.file,
                                    known_lanes=lanes.lanes, references=lanes.references,
                                    option_files=lanes.option_files)
              if v.rule != "unknown-lane"]
    raise ManifestError([*unknown, *(f"census: {v.rule}: {v.target}: {v.message}" for v in others),
                         f"{session}: refused: the lane table names a lane that does not exist "
                         f"({len(unknown) + len(others)} problem{'' if len(unknown) + len(others) == 1 else 's'} "
                         "above; relgate census lists the same)"])


def census_step(project: ProjectSpec, lanes: LanesSpec, *, lane: str = "host") -> PlannedStep:
    """The lane census as a step, in-process, with its own log, row and exit status."""
    return PlannedStep(name="lane-census", commands=(), cwd=project.root, lane=lane,
                       action=_census_action(project, lanes), action_name="relgate census")


def not_run_step(name: str, reason: str, *, project: ProjectSpec, lane: str,
                 action_name: str | None = None) -> PlannedStep:
    """A step that records ``not-run: reason`` (so ``--require-all`` fails it)."""

    def action(write: Callable[[str], None]) -> int:
        write(f"not run: {reason}")
        raise StepNotRun(reason)

    return PlannedStep(name=name, commands=(), cwd=project.root, lane=lane, action=action,
                       action_name=action_name or f"select the {lane} targets")


def lane_steps(project: ProjectSpec, lanes: LanesSpec, lane: str, *, names: Sequence[str] = (),
               hosts: Sequence[Host] = (), other_names: Collection[str] = ()) -> list[PlannedStep]:
    """The census, then the lane's steps; a lane that selects no target without names
    filtering it is one ``not-run: no targets in this lane`` step."""
    steps = plan_lane(project, lanes, lane, names=names, hosts=hosts, other_names=other_names)
    if not steps and not names:
        steps = [not_run_step(lane, NO_TARGETS, project=project, lane=lane)]
    return [census_step(project, lanes, lane=lane), *steps]
