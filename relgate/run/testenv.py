"""The tests of a Python project, run against the tree's own build: ``builtin = "python-tests"``.

    python -I relgate/run/testenv.py --root ROOT [--group G] [--extra E]... [--requirements F] -- PYTEST-ARGS

In a fresh folder (removed afterwards unless ``RELGATE_KEEP_WORK=1``): a new virtual
environment; the project's wheel built from ``ROOT`` (``python -m build --wheel``, the
compiled extensions with it); that wheel — by its path, never a copy from an index or one
already installed — installed with its dependencies and the test dependencies (a PEP 735
``[dependency-groups]`` group, extras of the wheel, a requirements file) by pip from the
caller's index; then ``python -P -m pytest PYTEST-ARGS`` in ``ROOT`` with that
environment's interpreter, ``PYTHONPATH`` and the user's site-packages switched off, so the
source tree and any installed release stay out of ``sys.path``. Every command runs without
``PYTHONPATH``: with a release on it, pip would call the package "already installed" and
skip the wheel. The exit status is pytest's (or that of the step that failed first, named
on the last line).

Standard library only, run as a script (``python -I``): it imports nothing from the
project it tests nor from the folder it runs in.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: relgate depends on tomli there
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["main", "resolve_group"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class Refused(Exception):
    """The test dependencies cannot be read (a missing group, a cycle, a bad entry)."""


class _Failed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def resolve_group(groups: dict, name: str) -> list[str]:
    """PEP 735: the group's requirements, ``{include-group = "…"}`` followed (names normalized)."""
    table = {_norm(k): v for k, v in groups.items()}

    def walk(group: str, seen: tuple[str, ...]) -> list[str]:
        key = _norm(group)
        if key in seen:
            raise Refused(f"dependency-groups.{group} includes itself ({' -> '.join((*seen, key))})")
        entries = table.get(key)
        if not isinstance(entries, list):
            raise Refused(f"[dependency-groups] has no group {group!r} (has {', '.join(groups) or 'none'})")
        out: list[str] = []
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                out.append(entry)
            elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                out += walk(entry["include-group"], (*seen, key))
            else:
                raise Refused(f"dependency-groups.{group}[{i}]: neither a requirement nor an include-group")
        return out

    return list(dict.fromkeys(walk(name, ())))


def _clean_env() -> dict[str, str]:
    """This environment without what would put another copy of the package on ``sys.path``:
    ``PYTHONPATH`` (pip would find a release there "already installed" and skip the wheel),
    ``PYTHONHOME``, the user's site-packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(argv: list[str], *, what: str) -> None:
    print(f"relgate-tests: {what}: {' '.join(argv)}", flush=True)
    code = subprocess.call(argv, stdin=subprocess.DEVNULL, env=_clean_env())
    if code != 0:
        raise _Failed(_fail(f"{what} failed (exit {code})", code))


def _fail(message: str, code: int = 1) -> int:
    print(f"relgate-tests: {message}", flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relgate-tests")
    parser.add_argument("--root", required=True)
    parser.add_argument("--group")
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--requirements")
    parser.add_argument("pytest", nargs="*")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    deps: list[str] = []
    try:
        if args.group:
            data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
            groups = data.get("dependency-groups")
            deps = resolve_group(groups if isinstance(groups, dict) else {}, args.group)
    except (OSError, tomllib.TOMLDecodeError, Refused) as exc:
        return _fail(f"{root / 'pyproject.toml'}: {exc}", 2)
    if args.requirements and not (root / args.requirements).is_file():
        return _fail(f"{root / args.requirements}: no such requirements file", 2)
    work = Path(tempfile.mkdtemp(prefix="relgate-tests-"))
    try:
        venv, dist = work / "venv", work / "dist"
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], what="a fresh environment")
        _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(root)],
             what="the tree's wheel")
        wheels = sorted(dist.glob("*.whl"))
        if len(wheels) != 1:
            return _fail(f"the build left {len(wheels)} wheels in {dist}, expected one")
        wheel = str(wheels[0]) + (f"[{','.join(args.extra)}]" if args.extra else "")
        print(f"relgate-tests: built {wheels[0].name}", flush=True)
        python = venv / "bin" / "python"
        _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python), "install",
              "--no-compile", wheel, *deps, *(("-r", str(root / args.requirements)) if args.requirements else ())],
             what="the wheel and the test dependencies")
        env = _clean_env()
        env.update({"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}",
                    "PYTHONSAFEPATH": "1"})
        # -P: the current folder (the source tree) is not put first on sys.path (3.11+; -I before)
        command = [str(python), "-P" if sys.version_info >= (3, 11) else "-I", "-m", "pytest", *args.pytest]
        print(f"relgate-tests: the tests against {wheels[0].name}: {' '.join(command)}", flush=True)
        return subprocess.call(command, cwd=root, env=env, stdin=subprocess.DEVNULL)
    except _Failed as failed:
        return failed.code
    finally:
        if os.environ.get("RELGATE_KEEP_WORK", "").strip().lower() in ("1", "true", "yes"):
            print(f"relgate-tests: work folder kept (RELGATE_KEEP_WORK): {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
