"""A Makefile's explicit targets, read from the rule database ``make -pRrq`` prints (no regex over
the file): the explicit targets less the built-in, special (``.PHONY`` …), pattern and file targets.

make runs confined (no process started, no file written, bounded memory and time); this module
never writes, prints or exits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.noexec import available, no_spawn_no_write
from relgate.core.record import record
from relgate.core.repo_paths import inside
from relgate.core.schema import display_path
from relgate.kinds.make.database import MakeDatabase, parse_database

__all__ = ["MAKEFILES", "MakeFacts", "read_make", "make_targets_of", "MAKE_TIMEOUT"]

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


@record
class MakeFacts:
    makefile: str
    targets: tuple[str, ...]  # in the database's order (sorted)
    default_goal: str | None
    database: MakeDatabase | None = None  # the rules and variables (relgate.kinds.make.database)


#: Seconds make may take to print its database (a Makefile that reads a FIFO waits no longer).
MAKE_TIMEOUT = 60
#: The address space make may use while it prints its database.
MAKE_MEMORY = 2 << 30

_DEFAULT_GOAL = re.compile(r"^\.DEFAULT_GOAL :?= (\S+)\s*$", re.M)


def read_make(root: Path, *, make: str | None = None) -> MakeFacts:
    """The Makefile's explicit targets, from the rule database ``make -pRrq`` prints."""
    root = Path(root).resolve()
    makefile = next((n for n in MAKEFILES if (root / n).is_file()), "Makefile")
    exe = make or shutil.which("make")
    if exe is None:
        raise InputError(f"{display_path(root / makefile)}: make is not on PATH (relgate init reads the "
                         "Makefile's rule database with make -pRrq)")
    inside(root, root / makefile, "the Makefile")
    if not available():
        raise InputError(f"{display_path(root / makefile)}: relgate init reads a Makefile with make only where it can "
                         "keep make from running anything ($(shell …), the remaking of included files): Linux on "
                         "x86_64 or aarch64; write the manifests by hand here")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GNUMAKEFLAGS")}
    try:  # started without stdin (`include /dev/stdin` reads nothing), confined: it starts and writes nothing
        done = subprocess.run([exe, "-pRrq", "-f", makefile, ":"], cwd=root, capture_output=True, text=True,
                              timeout=MAKE_TIMEOUT, env={**env, "LC_ALL": "C"}, stdin=subprocess.DEVNULL,
                              preexec_fn=_confined_make, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{display_path(root / makefile)}: make -pRrq did not run: {exc}") from None
    if done.returncode == 126 and not done.stdout:
        raise InputError(f"{display_path(root / makefile)}: make could not be confined (seccomp refused): "
                         "relgate init does not read this Makefile with make")
    if "# Make data base" not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"{display_path(root / makefile)}: make -pRrq printed no rule database: {last}")
    goal = _DEFAULT_GOAL.search(done.stdout)
    return MakeFacts(makefile=makefile, targets=tuple(make_targets_of(done.stdout, root)),
                     default_goal=goal.group(1) if goal else None, database=parse_database(done.stdout))


def _confined_make() -> None:
    """``preexec_fn`` of ``make -pRrq``: bounded memory and CPU (an `include /dev/zero` reads
    forever), then no process and no file written (:func:`no_spawn_no_write`)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MAKE_MEMORY, MAKE_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (MAKE_TIMEOUT, MAKE_TIMEOUT + 5))
    no_spawn_no_write()


def make_targets_of(database: str, root: Path) -> list[str]:
    """The explicit targets in ``make -p`` output: each rule paragraph of the ``# Files``
    section that is a target (not ``# Not a target:``), less special targets (``.PHONY``),
    pattern rules (``%``), paths (``build/x.o``), files that exist and non-phony targets
    other rules depend on (a build folder), and names with no rule (listed in ``.PHONY``
    only); phony targets with a rule are kept whatever their name."""
    rules = parse_database(database).rules
    # a name .PHONY lists with no rule (no prerequisite, no recipe): nothing makes it
    names = [n for n, r in rules.items() if r.prerequisites or r.order_only or r.recipe]
    prerequisites = {p for r in rules.values() for p in (*r.prerequisites, *r.order_only)}
    phony = {n for n, r in rules.items() if r.phony}
    out = []
    for name in dict.fromkeys(names):
        if name in phony:
            out.append(name)
        elif name.startswith(".") or any(ch in name for ch in "%/$=") or "." in name or (Path(root) / name).exists():
            continue  # special, pattern, a path, a file name, an existing file
        elif name in prerequisites:
            continue  # made for another rule (a build folder, an object): a file, not something to ask for
        else:
            out.append(name)
    return sorted(out)
