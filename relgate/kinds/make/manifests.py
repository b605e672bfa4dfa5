"""What ``relgate init`` writes for a make project and what ``init --check`` says of one (pure:
no I/O but the manifests'): a release build per target that builds, read from the rule database;
the package's build and test commands; new Makefile targets and targets a manifest runs that are gone.
"""

from __future__ import annotations

import re
import shlex

from relgate.core.schema import display_path
from relgate.core.text import inert
from relgate.kinds.found import DriftPlace
from relgate.kinds.make.database import NOT_RELEASES, BuildTarget, build_target, own_recipe_builds, release_builds
from relgate.kinds.make.reader import MakeFacts
from relgate.kinds.writing import quote

__all__ = ["make_builds", "make_package_lines", "make_drift", "make_shell"]

_MAKE_WORD = re.compile(r"\bmake\s+((?:[A-Za-z0-9][\w.=-]*[ \t]*)+)")


def make_shell(target: str) -> str:
    """``make TARGET`` as a shell command that names exactly ``target``."""
    word = target if re.fullmatch(r"[A-Za-z0-9_.+@%/][A-Za-z0-9_.+@%/-]*", target) else shlex.quote(target)
    return f"make {'-- ' if target.startswith('-') else ''}{word}"


def make_command(target: str) -> str:
    """``make TARGET`` as a TOML string whose shell command names exactly ``target``."""
    return quote(make_shell(target))


def make_builds(facts: MakeFacts) -> str:
    """builds.toml of a make project: a release build per target that builds (read from the
    rule database: its recipes compile, link or write), each with what it produces and the
    toolkit it needs; never a goal that only prints help."""
    targets = list(facts.targets)
    clean = "clean" in targets
    test = next((t for t in ("test", "check") if t in targets), None)
    db = facts.database
    releases = release_builds(db, facts.targets, facts.default_goal) if db is not None else []
    lines = [
        f"# Release builds and the host checks `nox -s host` runs, in order (read from make -pRrq on "
        f"{facts.makefile}).",
        "# A release target starts clean; its output must be warning-free, and it must write what it",
        "# produces (a build that writes nothing is `fail: built nothing`).",
        "",
    ]
    skipped = [build_target(db, t) for t in targets if db is not None and t not in ("clean", test)
               and t not in {r.name for r in releases}]
    quiet = [b for b in skipped if not b.builds]
    if quiet:
        lines += ["# Not release builds (their recipes compile and write nothing):"]
        lines += [f"#   make {inert(b.name)}: {inert(b.why)}" for b in quiet]
        lines.append("")
    others = [b for b in skipped if b.builds and b.name not in NOT_RELEASES and own_recipe_builds(db, b.name)
              and not any(ch in b.why for ch in ("-gcc", "-g++", "-clang"))]
    if others:
        lines += ["# Other builds (the same files with other flags, say): add one as a [release.NAME] if a",
                  "# release must build it:"]
        lines += [_offered(b) for b in others]
        lines.append("")
    runners = [b for b in skipped if b.builds and b not in others]
    if runners:
        lines += ["# Targets that run something (a test, a bench, a script): give each a lane in lanes.toml",
                  "# ([target.NAME] command = \"make NAME\"), or a [[check]] here:"]
        lines += [_offered(b) for b in runners]
        lines.append("")
    if not releases:
        lines += ["# No target of this Makefile builds anything that make -pRrq shows; name the release build:",
                  "# [release.default]", '# run = "make TARGET"', '# produces = ["path/of/what/it/builds"]', ""]
    for index, build in enumerate(releases):
        name = "default" if index == 0 else _release_name(build.name)
        lines.append(f"[release.{name}]")
        if clean:
            lines.append('clean = "make clean"')
        lines.append(f"run = {make_command(build.name)}")
        if build.produces:
            lines.append("produces = [" + ", ".join(quote(p) for p in build.produces) + "]")
        if build.toolkits:
            lines.append("requires = [" + ", ".join(quote(k) for k in build.toolkits) + "]   # its recipes call "
                         + " and ".join(build.toolkits) + "; compiles without a GPU")
        lines.append("")
    # the builds that need a toolkit first, so the plain build's files are the ones left for the tests
    ordered = [*range(1, len(releases)), 0] if releases else []
    for index in ordered:
        build = releases[index]
        check = "release" if index == 0 else f"release-{_release_name(build.name)}"
        release = "default" if index == 0 else _release_name(build.name)
        lines += ["[[check]]", f"name = {quote(check)}", f"release = {quote(release)}", ""]
    if test:
        lines += ["[[check]]", f'name = "{test}"', f'run = "make {test}"',
                  'warnings = "deny"   # the test build is a build: the no-warnings item counts it']
        kits = build_target(db, test).toolkits if db is not None else ()
        if kits:
            lines.append("requires = [" + ", ".join(quote(k) for k in kits) + "]")
        lines.append("")
    return "\n".join(lines)


def _offered(build: BuildTarget) -> str:
    """``#   make NAME: what it does; needs nvcc``: a target builds.toml offers in a comment."""
    return f"#   make {inert(build.name)}: {inert(build.why)}" + (f"; needs {', '.join(build.toolkits)}"
                                                                 if build.toolkits else "")


def _release_name(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", target) or "build"


def make_build_command(facts: MakeFacts) -> str:
    """The command that builds the project in package_verify's extracted tree."""
    releases = release_builds(facts.database, facts.targets, facts.default_goal) if facts.database else []
    return make_shell(releases[0].name) if releases else "make"


def make_package_lines(facts: MakeFacts) -> tuple[list[str], list[str]]:
    """package.toml's lines for a make project: the build and test commands of the extracted tree."""
    test = next((t for t in ("test", "check") if t in facts.targets), None)
    return [f"build_command = {quote(make_build_command(facts))}",
            f'test_command = "make {test}"' if test else '# test_command = "make test"'], []


def make_drift(facts_m: MakeFacts, place: DriftPlace) -> list[str]:
    """New Makefile targets, and make targets a manifest runs that are gone."""
    out: list[str] = []
    mdir = place.manifests
    known: set[str] = set()  # every make target a manifest names, commented offers included
    active: dict[str, str] = {}  # make target → the file of a command that runs it
    files = [mdir / n for n in ("builds.toml", "lanes.toml", "package.toml")]
    if place.project_lanes is not None:
        files.append(place.project_lanes)
    for path in files:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            for m in _MAKE_WORD.finditer(line):
                words = [w for w in m.group(1).split() if "=" not in w]
                known.update(words)
                if not line.lstrip().startswith("#"):
                    for word in words:
                        active.setdefault(word, display_path(path))
    if facts_m.default_goal:
        known.add(facts_m.default_goal)
    for target in facts_m.targets:
        if target not in known:
            out.append(f"new Makefile target {target}: named in no command of {display_path(mdir)}")
    for target, where in active.items():
        if target not in facts_m.targets:
            out.append(f"{where}: runs make {target}, which {facts_m.makefile} no longer has")
    return out
