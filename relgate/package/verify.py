"""``package_verify``: build the project's package from the candidate commit, extract it into a
fresh folder, inspect it, and verify it offline there.

Every stage step is a ledger step (:func:`relgate.stages.run_plan`), in a work folder of its
own (``relgate-package_verify-*`` in the system temp folder, removed afterwards unless
``RELGATE_KEEP_WORK=1``):

``export``     (in-process) ``git archive`` of the candidate commit (the project's folder of
               it), extracted safely into ``src/``: uncommitted files never reach a package
``package``    cargo: ``cargo package --locked --no-verify``; python: ``python -m build``
               (sdist, then the wheel from the sdist); make: ``[package] dist`` (a command
               that leaves a tarball at ``dist_glob``), else ``git archive`` of the commit
``extract``    (in-process) the package archive(s), by :mod:`relgate.archive`'s rules, into a
               fresh folder; logs each archive's sha256
``inspect``    (in-process) no nested archive or tooling material; every declared target
               path, fixture (and python lock) present; the package's version is the
               project's — each finding names the file
then, offline (:mod:`relgate.offline`: a fresh network namespace plus the tools' offline
switches) inside the extracted tree:
  cargo        ``cargo test --lib --no-default-features --no-run``, ``cargo test
               --no-default-features``, one qualification tool's build, one bench's build
  python       a wheelhouse of the wheel's dependencies (the one online step; the lock as
               constraints), a fresh venv, the wheel installed from the wheelhouse with no
               index, the sdist's tests (``[package] test_command``)
  make         ``[package] build_command`` (default ``make``; warning-free), then
               ``test_command`` (default ``make test``)

Steps name the earlier steps they need (``needs``): when one did not pass, the later ones
are "not run: needs X, which did not pass", never green.

``package.toml`` in the manifest folder configures it (optional; validated like every
manifest). :mod:`relgate.publish` shares the spec, the work folder and the export.
"""

from __future__ import annotations

import email.parser
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from relgate.core.errors import ExecutionError
from relgate.core.files import sha256_file
from relgate.core.schema import display_path
from relgate.kinds.registry import kind_of
from relgate.manifest.options import RunOptions
from relgate.manifest.package_spec import load_package_manifest
from relgate.manifest.specs import CommandSpec
from relgate.manifest.targets import Target
from relgate.manifest.workspace import Workspace
from relgate.package.archive import ArchiveError, extract, printable
from relgate.package.inspect import Required, inspect_tree
from relgate.package.work import PIP_HERMETIC, Plan, Work, detect_network
from relgate.run.flow import candidate_facts, finish, run_plan
from relgate.run.plan import PlannedStep, StepFailed
from relgate.run.runner import RunSummary

__all__ = ["declared_targets", "new_plan", "plan_package_verify",
           "run_package_verify", "wheel_requirements"]

PIP_WITH_PYTHON = (22, 3)  # `pip --python`: install into another interpreter's environment

def find_one(folder: Path, pattern: str, what: str) -> Path:
    """The single file ``pattern`` matches in ``folder``; none or several fail the step."""
    found = sorted(p for p in Path(folder).glob(pattern) if p.is_file())
    if len(found) == 1:
        return found[0]
    if not found:
        raise StepFailed(f"no {what} ({pattern}) in {display_path(folder)}")
    raise StepFailed(f"several {what}s ({pattern}) in {display_path(folder)}: {', '.join(p.name for p in found)}")


def export_step(plan: Plan) -> PlannedStep:
    """``git archive`` of the candidate commit, extracted safely: what a package is built from."""
    facts, work = plan.facts, plan.work
    try:
        rel = plan.project.root.resolve().relative_to(facts.toplevel.resolve()).as_posix()
    except ValueError:
        rel = "."
    treeish = facts.commit if rel == "." else f"{facts.commit}:{rel}"

    def action(write: Callable[[str], None]) -> int:
        import subprocess

        argv = ["git", "-C", str(facts.toplevel), "archive", "--format=tar", "-o", str(work.export_tar), treeish]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        except OSError as exc:
            raise ExecutionError(f"cannot run git: {exc.strerror or exc}") from None
        for line in (done.stdout + done.stderr).splitlines():
            write(line)
        if done.returncode != 0:
            raise ExecutionError(f"git archive {treeish} failed (exit {done.returncode})")
        extracted = extract(work.export_tar, work.src, limits=plan.manifest.package.limits)
        write(f"exported {facts.commit} ({rel if rel != '.' else 'the whole tree'}): {extracted.files} files "
              f"into {work.src}")
        for member in extracted.stripped:
            write(f"export: member {printable(member.raw)!r}: {', '.join(member.stripped)} stripped")
        if facts.dirty:
            write("the working tree has uncommitted changes: they are not in the export (every record of this "
                  "run is marked dirty)")
        return 0

    return plan.step("export", action=action, action_name=f"git archive {treeish[:12]}{treeish[40:]} (export)")


def extract_step(plan: Plan, sources: Sequence[tuple[Path, str, str, Path, bool]]) -> PlannedStep:
    """Extract each built archive (folder, glob, what, destination, is the main package) safely;
    each archive's root (its single top folder, else the extraction folder) moves to ``destination``."""

    def action(write: Callable[[str], None]) -> int:
        plan.roots.clear()
        for folder, pattern, what, dest, main in sources:
            archive = find_one(folder, pattern, what)
            write(f"{archive.name}: {archive.stat().st_size} bytes, sha256 {sha256_file(archive)}")
            try:
                extracted = extract(archive, plan.work.unpacked / archive.name, limits=plan.manifest.package.limits)
            except ArchiveError as exc:
                write(str(exc))
                raise StepFailed(str(exc)) from None
            os.rename(extracted.root, dest)
            write(f"{archive.name}: {extracted.files} files, {extracted.size} bytes, extracted into {dest}"
                  + (f" (its top folder {extracted.top}/)" if extracted.top else ""))
            for member in extracted.stripped:
                write(f"{archive.name}: member {printable(member.raw)!r}: {', '.join(member.stripped)} bit"
                      f"{'s' if len(member.stripped) > 1 else ''} stripped (written without them)")
            plan.roots.append((archive.name, dest, main))
        return 0

    return plan.step("extract", action=action, action_name="relgate extract", needs=("package",))


def _archive_version(name: str) -> str | None:
    """The version a package archive's name carries: scankern-0.4.0.crate, pkg-1.0.tar.gz, pkg-1.0-py3-none-any.whl."""
    if name.endswith(".whl"):
        parts = name[:-4].split("-")
        return parts[1] if len(parts) >= 5 else None
    for suffix in (".crate", ".tar.gz", ".zip", ".tar.bz2", ".tar.xz", ".tgz"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem.rsplit("-", 1)[1] if "-" in stem else None
    return None


def _same_version(a: str, b: str) -> bool:
    try:
        from packaging.version import InvalidVersion, Version

        return Version(a) == Version(b)
    except (ImportError, InvalidVersion):
        return a == b


def required_paths(plan: Plan, targets: Sequence[Target]) -> list[Required]:
    manifest = plan.manifest
    shown = display_path(manifest.source)
    out = [Required(path=t.path, what=f"declared target {t.name or '(no name)'} ({t.origin})")
           for t in targets if t.path]
    out += [Required(path=f, what=f"declared fixture ({shown}: package.fixtures)") for f in manifest.package.fixtures]
    if manifest.publish.lock:
        out.append(Required(path=manifest.publish.lock, what=f"lock file ({shown}: publish.lock)"))
    return out


def wheel_required(plan: Plan) -> list[Required]:
    """What the wheel must hold: ``[package] wheel_fixtures``, from the wheel's root."""
    shown = display_path(plan.manifest.source)
    return [Required(path=f, what=f"declared wheel fixture ({shown}: package.wheel_fixtures)")
            for f in plan.manifest.package.wheel_fixtures]


def inspect_step(plan: Plan, required: Sequence[Required], *, check_version: bool,
                 in_wheel: Sequence[Required] = ()) -> PlannedStep:
    spec = plan.manifest.package
    version = plan.project.version

    def action(write: Callable[[str], None]) -> int:
        findings: list[str] = []
        files = 0
        for label, root, main in plan.roots:
            files += sum(len(f) for _, _, f in os.walk(root))
            top = sorted(f"{e.name}/" if e.is_dir() else e.name for e in os.scandir(root))
            write(f"{label} holds: {', '.join(top) or 'nothing'}")  # what export-ignore kept out shows here
            wanted = required if main else in_wheel if label.endswith(".whl") else ()
            for finding in inspect_tree(root, forbid=spec.forbid, allow=spec.allow, required=wanted):
                findings.append(f"{label}: {finding.describe()}")
            found = _archive_version(label)
            if check_version and version is not None and found is not None and not _same_version(found, version):
                findings.append(f"{label}: version {found}, but {display_path(plan.project.source)} says "
                                f"{version} (project.version)")
        for line in findings:
            write(line)
        if findings:
            raise StepFailed(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}, first {findings[0]}")
        n = len(required) + len(in_wheel)
        write(f"clean: {files} files in {', '.join(r[0] for r in plan.roots)}; no archive or tooling material; "
              f"{n} required path{'s' if n != 1 else ''} present")
        return 0

    return plan.step("inspect", action=action, action_name="relgate inspect", needs=("extract",))


def extensions_step(plan: Plan) -> PlannedStep:
    """The declared compiled extensions are in the wheel (and it is no pure wheel). It reads
    the wheel the build left, whatever the build's verdict (a build red for its warnings
    still says here which extension is missing)."""
    from relgate.package.wheelcheck import extension_files, extension_findings

    exts = plan.manifest.package.extensions

    def action(write: Callable[[str], None]) -> int:
        wheel = find_one(plan.work.dist, "*.whl", "wheel")
        try:
            findings = extension_findings(wheel, exts)
            with zipfile.ZipFile(wheel) as zf:
                members = zf.namelist()
        except zipfile.BadZipFile as exc:
            raise StepFailed(f"{wheel.name}: not a wheel: {exc}") from None
        for module in exts:
            for path in extension_files(members, module):
                write(f"{wheel.name}: {module}: {path}")
        for line in findings:
            write(line)
        if findings:
            raise StepFailed(findings[0] + (f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""))
        write(f"{wheel.name}: every declared extension is compiled in ({', '.join(exts)})")
        return 0

    return plan.step("extensions", action=action, action_name="relgate wheel extensions")


def requirements_step(plan: Plan, extras: Sequence[str], group: str | None = None) -> PlannedStep:
    """The built wheel's own dependencies (its extras included), for this interpreter, and
    the ``[dependency-groups]`` group of the exported pyproject.toml: the requirements file
    the wheelhouse, the lock check and the installs work from."""

    def action(write: Callable[[str], None]) -> int:
        wheel = find_one(plan.work.dist, "*.whl", "wheel")
        lines = wheel_requirements(wheel, extras)
        if group:
            lines += [line for line in group_requirements(plan.work.src / "pyproject.toml", group)
                      if line not in lines]
        plan.work.requirements.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        for line in lines:
            write(line)
        write(f"{wheel.name}: {len(lines)} requirement{'s' if len(lines) != 1 else ''}"
              + (f" (extras: {', '.join(extras)})" if extras else "") + f" -> {plan.work.requirements}")
        return 0

    return plan.step("requirements", action=action, action_name="relgate wheel requirements", needs=("package",))


def group_requirements(pyproject: Path, group: str) -> list[str]:
    """A PEP 735 group of ``pyproject`` (its includes followed); a bad or missing one fails the step."""
    from relgate.run.testenv import Refused, resolve_group, tomllib

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        groups = data.get("dependency-groups")
        return resolve_group(groups if isinstance(groups, dict) else {}, group)
    except (OSError, tomllib.TOMLDecodeError, Refused) as exc:
        raise StepFailed(f"{pyproject.name}: package.group {group!r}: {exc}") from None


def wheel_requirements(wheel: Path, extras: Sequence[str]) -> list[str]:
    """``Requires-Dist`` of a wheel whose markers hold here (for ``extras`` too), without markers."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
            if len(names) != 1:
                raise StepFailed(f"{wheel.name}: no single *.dist-info/METADATA")
            meta = email.parser.Parser().parsestr(zf.read(names[0]).decode("utf-8", errors="replace"))
    except zipfile.BadZipFile as exc:
        raise StepFailed(f"{wheel.name}: not a wheel: {exc}") from None
    provided = set(meta.get_all("Provides-Extra") or [])
    missing = [e for e in extras if e not in provided]
    if missing:
        raise StepFailed(f"{wheel.name} provides no extra {missing[0]!r} (package.extras); it has "
                         f"{', '.join(sorted(provided)) or 'none'}")
    out: list[str] = []
    for raw in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(raw)
        except InvalidRequirement as exc:
            raise StepFailed(f"{wheel.name}: bad Requires-Dist {raw!r}: {exc}") from None
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
            continue
        text = req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "")
        text += f" @ {req.url}" if req.url else str(req.specifier)
        if text not in out:
            out.append(text)
    return out


def pip_problem() -> str | None:
    """Why this interpreter's pip cannot install into a fresh venv (``pip --python``), if so."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        found = version("pip")
    except PackageNotFoundError:
        return f"no pip for {sys.executable}"
    numbers = tuple(int(x) for x in re.findall(r"\d+", found)[:2])
    if numbers < PIP_WITH_PYTHON:
        return f"pip {found} cannot install into another environment (pip >= 22.3 can)"
    return None


def pip(*args: str) -> CommandSpec:
    return CommandSpec(argv=(sys.executable, "-m", "pip", "--disable-pip-version-check", *args))


def python_module(*args: str) -> CommandSpec:
    return CommandSpec(argv=(sys.executable, "-m", *args))


def wheelhouse_step(plan: Plan, lock: Path | None, name: str = "wheelhouse") -> PlannedStep:
    """Wheels of every dependency (online, the lock as constraints): all an offline install may use."""
    work = plan.work
    constraint = ("-c", str(lock)) if lock is not None else ()
    return plan.step(name, pip("wheel", "--wheel-dir", str(work.wheelhouse), *constraint, "-r", str(work.requirements)),
                     needs=("requirements",))


# --- package_verify -----------------------------------------------------------------------------


def declared_targets(ws: Workspace) -> tuple[tuple[Target, ...], dict[str, str]]:
    """The project's declared targets and their lanes (none for a project without lanes)."""
    lanes = ws.lanes
    if lanes is not None:
        return lanes.targets, lanes.assignments
    kind = kind_of(ws.project.kind)
    if kind.targets_from_project and any((ws.project.root / m).is_file() for m in kind.marker_files):
        from relgate.manifest.targets import project_targets

        return tuple(project_targets(kind, ws.project.root)), {}
    return (), {}


def _pick(targets: Sequence[Target], lanes: Mapping[str, str], lane: str,
          fallback: Callable[[Target], bool]) -> Target | None:
    named = [t for t in targets if t.name]
    return (next((t for t in named if lanes.get(t.name or "") == lane), None)
            or next((t for t in named if fallback(t)), None))


def _cargo_build_one(target: Target) -> tuple[str, ...]:
    features = ("--features", ",".join(target.required_features)) if target.required_features else ()
    name = target.name or ""
    verb = {"bench": ("bench", "--bench", name), "example": ("build", "--example", name),
            "bin": ("build", "--bin", name)}.get(target.kind, ("test", "--test", name))
    return ("cargo", verb[0], "--offline", "--locked", "--no-default-features", *features, *verb[1:],
            *(("--no-run",) if verb[0] in ("test", "bench") else ()))


def _plan_cargo(plan: Plan, targets: Sequence[Target], lanes: Mapping[str, str]) -> list[PlannedStep]:
    work, spec = plan.work, plan.manifest.package
    cargo_env = {"CARGO_TARGET_DIR": str(work.target)}
    scan = spec.warnings == "deny"
    steps = [plan.step("package", CommandSpec(argv=("cargo", "package", "--locked", "--no-verify", "--allow-dirty")),
                       cwd=work.src, env=cargo_env, needs=("export",)),
             extract_step(plan, [(work.target / "package", "*.crate", "crate", work.package, True)])]
    steps.append(inspect_step(plan, required_paths(plan, targets), check_version=True))
    in_tree: dict[str, Any] = dict(cwd=work.package, env=cargo_env, needs=("extract",), offline=True)
    has_lib = (plan.project.root / "src" / "lib.rs").is_file() or "[lib]" in _read(plan.project.root / "Cargo.toml")
    steps.append(plan.step("offline-lib", CommandSpec(argv=("cargo", "test", "--offline", "--locked", "--lib",
                                                            "--no-default-features", "--no-run")),
                           scan=scan, skip=None if has_lib else "the crate has no library target", **in_tree))
    steps.append(plan.step("offline-tests", CommandSpec(argv=("cargo", "test", "--offline", "--locked",
                                                              "--no-default-features")), **in_tree))
    tool = _pick(targets, lanes, "qualification",
                 lambda t: "qualification" in t.required_features or (t.path or "").startswith("tools/qualification/"))
    bench = _pick(targets, lanes, "bench", lambda t: t.kind == "bench")
    for name, target, what in (("offline-tool", tool, "qualification tool"), ("offline-bench", bench, "bench")):
        if target is None:
            steps.append(plan.step(name, skip=f"the crate declares no {what}", action=lambda write: 0,
                                   action_name=f"cargo build ({what})", needs=("extract",)))
        else:
            steps.append(plan.step(name, CommandSpec(argv=_cargo_build_one(target)), scan=scan, **in_tree))
    return steps


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _plan_python(plan: Plan, targets: Sequence[Target]) -> list[PlannedStep]:
    work, spec, project = plan.work, plan.manifest.package, plan.project
    lock = work.src / plan.manifest.publish.lock if plan.manifest.publish.lock else None
    # The build compiles the extensions: its output is scanned like any build (package.warnings).
    steps = [plan.step("package", python_module("build", "--outdir", str(work.dist), str(work.src)),
                       needs=("export",), scan=spec.warnings == "deny"),
             extract_step(plan, [(work.dist, "*.tar.gz", "sdist", work.package, True),
                                 (work.dist, "*.whl", "wheel", work.wheel, False)]),
             inspect_step(plan, required_paths(plan, targets), check_version=True, in_wheel=wheel_required(plan))]
    if spec.extensions:
        steps.append(extensions_step(plan))
    steps += [requirements_step(plan, spec.extras, spec.group), wheelhouse_step(plan, lock)]
    no_pip = pip_problem()
    venv = python_module("venv", "--without-pip", str(work.venv))
    wanted = project.name + (f"[{','.join(spec.extras)}]" if spec.extras else "") + (f"=={project.version}" if project.version else "")
    # --no-compile: the tests run without bytecode (PYTHONDONTWRITEBYTECODE below) and pip's
    # compile never fails an install; it was half of the install's time (8 of 15 s for relgate).
    install = pip("--python", str(work.venv_python), "install", "--no-compile", "--no-index",
                  "--find-links", str(work.dist), "--find-links", str(work.wheelhouse), "--only-binary", ":all:",
                  *(("-c", str(lock)) if lock is not None else ()), wanted,
                  *(("-r", str(work.requirements)) if spec.group else ()))
    test = spec.test_command or CommandSpec(argv=kind_of(plan.project.kind).package_test)
    venv_env = {"PATH": f"{work.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
                "VIRTUAL_ENV": str(work.venv), "PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": ""}
    steps += [plan.step("offline-venv", venv, needs=("package",), offline=True),
              plan.step("offline-install", install, env=PIP_HERMETIC, needs=("wheelhouse", "offline-venv"),
                        offline=True),
              plan.step("offline-tests", test, cwd=work.package, env=venv_env, offline=True,
                        needs=("extract", "offline-install"))]
    if no_pip:
        steps = [s if s.name not in ("offline-venv", "offline-install", "offline-tests")
                 else _not_run(s, no_pip) for s in steps]
    return steps


def _not_run(step: PlannedStep, why: str) -> PlannedStep:
    """The same step, known at plan time to be impossible here: it records not-run, with why."""
    from dataclasses import replace

    from relgate.run.plan import StepNotRun

    def action(write: Callable[[str], None]) -> int:
        raise StepNotRun(why)

    # Known now, whatever the steps before it do: it does not wait on them.
    return replace(step, commands=(), action=action, action_name=step.display(), needs=())


def _plan_source(plan: Plan, targets: Sequence[Target]) -> list[PlannedStep]:
    work, spec, project, facts = plan.work, plan.manifest.package, plan.project, plan.facts
    if spec.dist is not None:
        package = plan.step("package", spec.dist, cwd=work.src, needs=("export",))
        source = (work.src, spec.dist_glob or "*.tar.gz", "dist tarball", work.package, True)
    else:
        prefix = f"{project.name}-{project.version or facts.short}"
        try:
            rel = project.root.resolve().relative_to(facts.toplevel.resolve()).as_posix()
        except ValueError:
            rel = "."
        treeish = facts.commit if rel == "." else f"{facts.commit}:{rel}"
        package = plan.step("package", CommandSpec(argv=(
            "git", "archive", "--format=tar.gz", f"--prefix={prefix}/", "-o", str(work.dist / f"{prefix}.tar.gz"),
            treeish)), cwd=facts.toplevel, needs=("export",))
        source = (work.dist, f"{prefix}.tar.gz", "source tarball", work.package, True)
    adapter = kind_of(project.kind)
    build = spec.build_command or CommandSpec(argv=adapter.package_build)
    test = spec.test_command or CommandSpec(argv=adapter.package_test)
    return [package, extract_step(plan, [source]),
            inspect_step(plan, required_paths(plan, targets), check_version=spec.dist is None),
            plan.step("offline-build", build, cwd=work.package, needs=("extract",), offline=True,
                      scan=spec.warnings == "deny"),
            plan.step("offline-tests", test, cwd=work.package, needs=("extract",), offline=True)]


def plan_package_verify(plan: Plan, *, targets: Sequence[Target] = (),
                        lanes: Mapping[str, str] | None = None) -> list[PlannedStep]:
    """Every package_verify step for the plan's project kind, in order (pure: nothing runs)."""
    steps = [export_step(plan)]
    flows = {"crate": lambda: _plan_cargo(plan, targets, lanes or {}), "wheel": lambda: _plan_python(plan, targets),
             "source": lambda: _plan_source(plan, targets)}  # how a kind's package is checked (its package_flow)
    return steps + flows[kind_of(plan.project.kind).package_flow]()


def new_plan(ws: Workspace, session: str, lane: str) -> Plan:
    """Load what a package stage needs (bad input: exit 2, before anything runs) and make its work folder."""
    manifest = ws.package or load_package_manifest(ws.manifests_dir, ws.project)  # the defaults, without a file
    facts = candidate_facts(ws)
    network = detect_network()
    try:
        work = Work.create(session)
    except OSError as exc:
        raise ExecutionError(f"cannot make a work folder in {tempfile.gettempdir()}: {exc.strerror or exc}") from None
    return Plan(project=ws.project, manifest=manifest, facts=facts, work=work, network=network,
                host=ws.local_host.name, lane=lane)


def preamble(plan: Plan, session: str, options: RunOptions, out: TextIO, *, offline: bool = True) -> None:
    p = plan.project
    dirty = " (dirty tree: the package is built from the commit; records are marked dirty)"
    print(f"{session}: {p.name} {p.version} ({p.kind}) at {plan.facts.short}{dirty if plan.facts.dirty else ''}",
          file=out)
    print(f"work folder: {plan.work.root}", file=out)
    if offline and not plan.network.namespace:
        print(f"note: no network namespace on this host ({plan.network.words}); offline steps rely on the "
              "tools' offline switches only (recorded in each step as RELGATE_NETWORK)", file=out)
    if options.reuse:
        print(f"note: --reuse does not apply to {session}: every run builds the package afresh", file=out)


def cleanup(plan: Plan, out: TextIO) -> None:
    if os.environ.get("RELGATE_KEEP_WORK", "").strip().lower() in ("1", "true", "yes"):
        print(f"work folder kept (RELGATE_KEEP_WORK): {plan.work.root}", file=out)
    else:
        plan.work.remove()


def run_package_verify(ws: Workspace, *, argv: Sequence[str], options: RunOptions = RunOptions(),
                       out: TextIO = sys.stdout) -> RunSummary:
    """``nox -s package_verify``: build, extract, inspect, verify offline — one ledger run."""
    from relgate.remote.pool import host_pool

    targets, lanes = declared_targets(ws)
    plan = new_plan(ws, "package_verify", "package")
    try:
        steps = plan_package_verify(plan, targets=targets, lanes=lanes)
        preamble(plan, "package_verify", options, out)
        summary = run_plan(ws, steps, session="package_verify", argv=argv, pool=host_pool(ws), out=out,
                           options=options)
    finally:
        cleanup(plan, out)
    return finish(summary, options, out)
