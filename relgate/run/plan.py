"""Turn the builds manifest into planned steps (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from relgate.core.errors import ManifestError
from relgate.core.record import record
from relgate.core.schema import did_you_mean, display_path
from relgate.manifest.specs import AllowRule, BuildsSpec, Check, CommandSpec, StepOptions
from relgate.run.outcomes import StepFailed, StepNotRun

if TYPE_CHECKING:
    from relgate.manifest.workspace import Workspace

__all__ = ["PlannedStep", "StepNotRun", "StepFailed", "plan_host_checks", "check_names", "select_checks",
           "check_placement"]


@record
class PlannedStep:
    name: str
    commands: tuple[CommandSpec, ...]
    cwd: Path
    lane: str | None = None
    target: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    requires: tuple[str, ...] = ()
    scan_warnings: bool = False
    allow: tuple[AllowRule, ...] = ()
    expect_output: str | None = None
    produces: tuple[str, ...] = ()  # globs relative to cwd that must exist, newer than the step's start
    build: bool = False  # a release or matrix build: one that wrote no file is "built nothing"
    max_skipped: tuple[int | None, float | None] | None = None  # (count, share) of skipped tests allowed
    skip: str | None = None
    host: str | None = None  # pinned to this host (qualification: one run per board)
    evidence_env: str | None = None  # the variable that names this step's fresh evidence file
    evidence_required: bool = False  # no evidence back is an error, not a pass
    timing_only: bool = False  # bench: ran or not, the numbers are not judged
    max_log_bytes: int | None = None  # the log keeps this much output, then one marker line
    # An engine check run in-process instead of commands: writes lines, returns an exit status.
    action: Callable[[Callable[[str], None]], int] | None = None
    action_name: str | None = None  # how the action displays ("relgate census")
    # Earlier steps of the same run that must pass first; otherwise this one is not run.
    needs: tuple[str, ...] = ()
    # GPUs it takes on a host with GPU slots: a number, "all" (alone), or None: 1 when it
    # requires a GPU capability, else none (relgate.run.slots.gpus_needed)
    gpus: int | str | None = None

    def display(self) -> str:
        if self.action is not None:
            return self.action_name or self.name
        return " && ".join(c.display() for c in self.commands)


def _step(name: str, commands: tuple[CommandSpec, ...], root: Path, opts: StepOptions, *,
          lane: str, expect: str | None = None, skip: str | None = None,
          produces: tuple[str, ...] = (), build: bool = False) -> PlannedStep:
    return PlannedStep(
        name=name, commands=commands, cwd=(root / opts.cwd).resolve(), lane=lane, env=dict(opts.env),
        timeout=opts.timeout, requires=opts.requires, scan_warnings=opts.warnings == "deny",
        allow=opts.allow, expect_output=expect, produces=produces, skip=skip or opts.skip, host=opts.host,
        max_log_bytes=opts.max_log_bytes, build=build,
    )


def plan_host_checks(builds: BuildsSpec, root: Path, *, lane: str = "host",
                     extra: Sequence[PlannedStep] = ()) -> list[PlannedStep]:
    """Every host check in declaration order (a matrix check becomes one step per combination),
    then ``extra`` steps, then ``git diff --check`` unless the checks place it themselves."""
    steps: list[PlannedStep] = []
    for check in builds.checks:
        steps.extend(_plan_check(check, builds, root, lane))
    steps.extend(extra)
    if not any(c.builtin == "git-diff-check" for c in builds.checks):
        steps.append(_diff_check("git-diff-check", builds, root, lane, StepOptions(warnings="ignore")))
    return steps


def check_names(builds: BuildsSpec) -> set[str]:
    """The names that select host checks (``nox -s host -- release-cpu``)."""
    return {c.name for c in builds.checks} | {"git-diff-check"}


def select_checks(steps: Sequence[PlannedStep], names: Sequence[str]) -> list[PlannedStep]:
    """The planned host checks ``names`` select: by check name (a matrix check's name
    selects each of its combinations, ``features[cuda]`` one of them)."""
    wanted = set(names)
    return [s for s in steps if s.name in wanted or s.name.split("[", 1)[0] in wanted]


def _plan_check(check: Check, builds: BuildsSpec, root: Path, lane: str) -> list[PlannedStep]:
    if check.release is not None:
        target = builds.releases[check.release]
        cmds = tuple(c for c in (target.clean, target.run) if c is not None)
        return [_step(check.name, cmds, root, target.options, lane=lane, skip=check.options.skip,
                      expect=target.expect_output or check.expect_output,
                      produces=(*target.produces, *check.produces), build=True)]
    if check.matrix is not None:
        matrix = builds.matrices[check.matrix]
        return [_step(f"{check.name}[{feats}]", (cmd,), root, matrix.options, lane=lane, skip=check.options.skip,
                      build=True)
                for feats, cmd in matrix.expand()]
    if check.builtin == "git-diff-check":
        return [_diff_check(check.name, builds, root, lane, check.options)]
    if check.builtin == "python-tests":
        return [_python_tests(check, root, lane)]
    assert check.run is not None
    return [_step(check.name, (check.run,), root, check.options, lane=lane, expect=check.expect_output,
                  produces=check.produces)]


def _diff_check(name: str, builds: BuildsSpec, root: Path, lane: str, opts: StepOptions) -> PlannedStep:
    """``git diff --check`` of the working tree against the previous release tag (or the first
    commit, or ``host.diff_base``): :mod:`relgate.run.diffcheck`."""
    from dataclasses import replace

    from relgate.run.diffcheck import diff_check_action

    base = builds.diff_base
    step = _step(name, (), root, opts, lane=lane)
    return replace(step, action=diff_check_action(step.cwd, base),
                   action_name=f"git diff --check {base or '<previous release tag>'} --")


def _python_tests(check: Check, root: Path, lane: str) -> PlannedStep:
    """pytest in a fresh environment holding the tree's own wheel (:mod:`relgate.run.testenv`)."""
    import sys

    from relgate.run import testenv

    tests = check.tests
    assert tests is not None
    argv = [sys.executable, "-I", str(Path(testenv.__file__).resolve()), "--root", str(root)]
    if tests.group:
        argv += ["--group", tests.group]
    for extra in tests.extras:
        argv += ["--extra", extra]
    if tests.requirements:
        argv += ["--requirements", tests.requirements]
    return _step(check.name, (CommandSpec(argv=(*argv, "--", *tests.args)),), root, check.options, lane=lane,
                 expect=check.expect_output, produces=check.produces)


def check_placement(ws: Workspace, steps: Sequence[PlannedStep]) -> None:
    """A step pinned to a host no ``hosts/*.toml`` declares is a manifest error (exit 2)."""
    problems = []
    for step in steps:
        if step.host is not None and step.host not in ws.hosts:
            problems.append(f"{display_path(ws.builds.source)}: {step.name}: host: no host \"{step.host}\" in "
                            f"{display_path(ws.hosts_dir)}{did_you_mean(step.host, ws.hosts)}")
    if problems:
        raise ManifestError(problems)
