"""The stages that need no workspace: ``init`` (a first manifest folder, or the drift from it),
``pytest`` (the tree's tests against its own wheel) and ``schema`` (the manifests' JSON Schemas)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import IO

from relgate.core.errors import InputError
from relgate.core.text import inert
from relgate.kinds.registry import kind_names
from relgate.stages.registry import Outcome, Workspace, stage

__all__: list[str] = []


def _init_options(ini: argparse.ArgumentParser) -> None:
    ini.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH")
    ini.add_argument("--kind", choices=kind_names(), help="the kind, when the repository holds several")
    ini.add_argument("--manifests", dest="init_manifests", type=Path,
                     help="the manifest folder to write (default: PATH/manifests)")
    ini.add_argument("--force", action="store_true", help="replace files that exist")
    ini.add_argument("--dry-run", action="store_true", help="print every file it would write; write nothing")
    ini.add_argument("--check", action="store_true", help="one line per drift; exit 1 when anything drifted")


def _pytest_options(pt: argparse.ArgumentParser) -> None:
    pt.add_argument("--root", type=Path, default=Path("."), help="the project root (default: cwd)")
    pt.add_argument("--group", help="a [dependency-groups] group of pyproject.toml (PEP 735)")
    pt.add_argument("--extra", action="append", default=[], help="an extra installed with the wheel")
    pt.add_argument("--requirements", help="a requirements file of the test dependencies, from the root")
    pt.add_argument("pytest_args", nargs="*", metavar="PYTEST-ARG", help="after --: pytest's arguments")


def _schema_options(sch: argparse.ArgumentParser) -> None:
    sch.add_argument("names", nargs="*", metavar="NAME", help="project, builds, lanes, package, measurements, "
                                                               "checklist, intentional, host")
    sch.add_argument("--markdown", action="store_true", help="the manifest reference (docs/manifests.md)")
    sch.add_argument("--write", action="store_true", help="rewrite schemas/*.schema.json and docs/manifests.md")
    sch.add_argument("--out", type=Path, help="with --write: the folder to write into (default: relgate's checkout)")


@stage("init", "write a first manifest folder for the repository at PATH (--check: drift between the repository "
       "and its manifests)", _init_options)
def init(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.core.schema import display_path
    from relgate.manifest.drift import drift
    from relgate.manifest.init import plan_init, write_plan

    root = args.path.resolve()
    manifests = args.init_manifests or args.manifests
    skips = _clean_skips(root, args.home)
    if args.check:
        mdir = (manifests or root / "manifests").resolve()
        if not (mdir / "project.toml").is_file():
            raise InputError(f"{display_path(mdir / 'project.toml')}: no such file (run relgate init first)")
        lines = drift(root, mdir, kind=args.kind) + _skip_drift(mdir, skips)
        for line in lines:
            print(inert(line))  # names and labels read from the repository: one line each, whatever they hold
        if not lines:
            print(f"no drift between {display_path(root)} and {display_path(mdir)}")
        return Outcome(code=1 if lines else 0)
    plan = plan_init(root, kind=args.kind, manifests=manifests, skips=skips)
    print(f"{plan.kind} project at {display_path(plan.root)} (read with {plan.source})")
    if args.dry_run:
        for f in plan.files:
            state = " (exists)" if f.path.exists() else ""
            print(f"--- {display_path(f.path)}{state}")
            print(f.text.rstrip("\n"))
        if plan.gitignore:
            print(f"--- {display_path(plan.root / '.gitignore')} (appended)")
            print("\n".join(plan.gitignore))
        print("--dry-run: nothing written")
    else:
        for path, what in write_plan(plan, force=args.force):
            print(f"{what} {display_path(path)}")
    if plan.lanes_file is not None:
        print(f"lanes: {display_path(plan.lanes_file)} reused (project.lanes)")
    if plan.stale:
        print(f"stale rows ({len(plan.stale)}) in {display_path(plan.lanes_file or plan.root)}: "
              f"{', '.join(map(inert, plan.stale))} — no such target; the census names them until they are dropped")
    for note in plan.notes:
        print(f"not read: {inert(note)}")
    if plan.unassigned:
        print(f"no lane yet ({len(plan.unassigned)}): {', '.join(map(inert, plan.unassigned))} — the census names them "
              "until each has one")
    print("next:")
    for command in plan.next_commands:
        print(f"  {command}")
    return Outcome(code=0)


def _clean_skips(root: Path, home: Path | None) -> dict[str, tuple[int, int, str]] | None:
    """target → (skipped, total, which run) of the ledger's latest clean run of each lane target
    at HEAD (the ledger home: --home, else $RELGATE_HOME, else PATH/.relgate); None when none."""
    import os

    from relgate.ledger.clean_skips import clean_skips

    env = os.environ.get("RELGATE_HOME")
    home = Path(home).resolve() if home is not None else (Path.cwd() / env).resolve() if env else root / ".relgate"
    found = clean_skips(home, root)
    return None if found is None else {t: (c.skipped, c.total, c.source) for t, c in found.items()}


def _skip_drift(mdir: Path, skips: dict[str, tuple[int, int, str]] | None) -> list[str]:
    """A target whose recorded clean run skipped more than its manifest's max_skipped."""
    if not skips:
        return []
    from relgate.core.schema import read_toml
    from relgate.manifest.lanes import load_lanes
    from relgate.manifest.skip_limits import skip_drift
    from relgate.manifest.specs import parse_project

    lanes = load_lanes(parse_project(read_toml(mdir / "project.toml"), path=mdir / "project.toml"), mdir)
    return skip_drift(lanes, skips) if lanes is not None else []


@stage("pytest", "pytest in a fresh environment holding the wheel built from the tree (PATH, default cwd) and its "
       "test dependencies; never an installed copy", _pytest_options)
def run_pytest(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    """``relgate pytest``: :mod:`relgate.run.testenv` in this process's interpreter."""
    from relgate.run.testenv import main as testenv

    argv = ["--root", str(args.root), *(["--group", args.group] if args.group else []),
            *(x for e in args.extra for x in ("--extra", e)),
            *(["--requirements", args.requirements] if args.requirements else []), "--", *args.pytest_args]
    return Outcome(code=testenv(argv))


@stage("schema", "JSON Schemas of the manifest files, or the reference page (--markdown)", _schema_options)
def schema(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.manifest import reference
    from relgate.manifest.keys import FILES

    known = [s.name for s in FILES]
    for name in args.names:
        if name not in known:
            from relgate.core.schema import did_you_mean

            raise InputError(f"schema {name}: no such manifest file{did_you_mean(name, known)} "
                             f"(one of {', '.join(known)})")
    if args.write:
        folder = (args.out or Path(__file__).resolve().parent.parent.parent).resolve()
        for rel, text in reference.generated_files().items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
                print(f"wrote {path}")
        return Outcome(code=0)
    if args.markdown:
        out.write(reference.markdown())
        return Outcome(code=0)
    names = args.names or known
    if len(names) == 1:
        out.write(reference.schema_text(names[0]))
    else:
        json.dump({n: reference.schema_of(n) for n in names}, out, indent=2, ensure_ascii=False)
        print(file=out)
    return Outcome(code=0)
