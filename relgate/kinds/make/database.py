"""What a Makefile's targets do, from the rule database ``make -pRrq`` prints (for ``relgate
init``): which targets build something, what they build, which toolkits their recipes call.

Pure: it reads the database text :func:`relgate.kinds.make.reader.read_make` already got; it
runs nothing. A target *builds* when its recipe, or a prerequisite's (followed through the
rule graph), invokes a compiler, an archiver or a linker, or writes a file (``-o FILE``, a
redirect, ``cp``, ``install``); a target whose recipes only print (``@echo …``: a help goal)
builds nothing. Variables are expanded from the database's own definitions, so ``$(NVCC)``
is nvcc where the Makefile says ``NVCC = nvcc``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from relgate.core.record import record

__all__ = ["MakeRule", "MakeDatabase", "BuildTarget", "parse_database", "build_target", "release_builds",
           "own_recipe_builds"]

# Programs whose run means something was compiled, archived or linked.
_COMPILERS = ("cc", "gcc", "g++", "c++", "clang", "clang++", "nvcc", "hipcc", "icx", "icpx", "gfortran", "ar", "ld",
              "rustc", "cargo", "go", "zig", "emcc", "xcrun", "ninja", "cmake")
_WRITERS = ("cp", "install", "ln", "touch", "tar", "zip", "objcopy", "strip")
_PRINTERS = ("echo", "printf", "true", ":", "exit", "cat", "test", "[")
#: Toolkits whose compiler a host must offer for the target to build: compiler → capability.
TOOLKITS = {"nvcc": "nvcc", "hipcc": "hipcc"}
_VAR = re.compile(r"\$[({]([A-Za-z0-9_.-]+)[)}]")
_WORD = re.compile(r"[A-Za-z0-9_+.\-/]+")


@record
class MakeRule:
    target: str
    prerequisites: tuple[str, ...]
    order_only: tuple[str, ...]
    recipe: tuple[str, ...]
    phony: bool


@record
class MakeDatabase:
    variables: Mapping[str, str]
    rules: Mapping[str, MakeRule]


@record
class BuildTarget:
    name: str
    builds: bool  # a recipe in its graph compiles, links or writes
    produces: tuple[str, ...]  # the files it makes (its own name, or its direct file prerequisites)
    toolkits: tuple[str, ...]  # capabilities its recipes need: nvcc, hipcc
    why: str  # what showed it builds, or why it does not ("only prints: @echo …")


def parse_database(text: str) -> MakeDatabase:
    """The variables and the rules of ``make -p`` output."""
    variables: dict[str, str] = {}
    var_start = text.find("\n# Variables\n")
    files_start = text.find("\n# Files\n")
    if var_start >= 0:
        for line in text[var_start: files_start if files_start > var_start else len(text)].split("\n"):
            match = re.match(r"^([A-Za-z0-9_.-]+) :?= ?(.*)$", line)
            if match and not line.startswith("#"):
                variables[match.group(1)] = match.group(2)
    end = text.find("\n# Finished Make data base", files_start)
    section = text[files_start: end if end > 0 else len(text)] if files_start >= 0 else ""
    phony: set[str] = set()
    raw: list[tuple[list[str], list[str], list[str], list[str]]] = []
    for block in section.split("\n\n"):
        lines = [line for line in block.split("\n") if line]
        if not lines or lines[0].startswith("# Not a target"):
            continue
        rule = next((line for line in lines if not line.startswith(("#", "\t"))), None)
        if rule is None or ":" not in rule or "=" in rule.split(":", 1)[0]:
            continue
        head, _, deps = rule.partition(":")
        deps = deps.lstrip(":")
        normal, _, order = deps.partition("|")
        if head.strip() == ".PHONY":
            phony.update(normal.split())
            continue
        recipe = [line[1:] for line in lines if line.startswith("\t")]
        raw.append((head.split(), normal.split(), order.split(), recipe))
    rules: dict[str, MakeRule] = {}
    for heads, normal, order, recipe in raw:
        for name in heads:
            rules[name] = MakeRule(target=name, prerequisites=tuple(normal), order_only=tuple(order),
                                   recipe=tuple(recipe), phony=name in phony)
    return MakeDatabase(variables=variables, rules=rules)


# make's built-in variables, which -R (no built-in variables) leaves out of the database
_BUILTIN_VARIABLES = {"CC": "cc", "CXX": "g++", "AR": "ar", "LD": "ld", "AS": "as", "RM": "rm -f", "MAKE": "make",
                      "CPP": "cc -E", "FC": "f77"}


def _expand(text: str, variables: Mapping[str, str], depth: int = 0) -> str:
    if depth > 8 or "$" not in text:
        return text
    return _VAR.sub(lambda m: _expand(variables.get(m.group(1), _BUILTIN_VARIABLES.get(m.group(1), "")),
                                      variables, depth + 1), text)


def _commands(line: str) -> list[list[str]]:
    """The words of each command of a recipe line (``a && b; c | d``), prefixes ``@-+`` dropped."""
    out = []
    line = re.sub(r'"[^"]*"|\'[^\']*\'', '""', line)  # a quoted | or ; is text, not a pipe
    for part in re.split(r"&&|\|\||;|\|", line):
        words = part.strip().lstrip("@-+").split()
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value before the program
        if words:
            out.append(words)
    return out


def _judge_line(line: str) -> tuple[bool, set[str], str | None]:
    """(it builds, the toolkits it calls, what showed it) for one expanded recipe line."""
    builds, kits, why = False, set(), None
    for words in _commands(line):
        program = words[0].rsplit("/", 1)[-1]
        for word in words:
            name = word.rsplit("/", 1)[-1]
            if name in TOOLKITS:
                kits.add(TOOLKITS[name])
        if program in _COMPILERS or program.endswith(("-gcc", "-g++", "-clang")) or program == "make" \
                or program.startswith("$(MAKE"):
            builds, why = True, why or f"runs {program}"
        elif program in _WRITERS or "-o" in words[1:] or any(w.startswith(">") and "/dev/null" not in w
                                                             for w in words[1:]):
            builds, why = True, why or f"writes files ({program})"
        elif program not in _PRINTERS and program != "mkdir" and program != "rm":
            builds, why = True, why or f"runs {program}"  # a program of the project's own: it may build
    return builds, kits, why


def build_target(db: MakeDatabase, name: str) -> BuildTarget:
    """What ``make NAME`` does, as far as the database tells."""
    seen: set[str] = set()
    builds, kits, why = False, set(), None
    printed: list[str] = []
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        rule = db.rules.get(current)
        if rule is None:
            continue
        for line in rule.recipe:
            expanded = _expand(line, db.variables)
            b, k, w = _judge_line(expanded)
            kits |= k
            if b and not builds:
                builds, why = True, f"{w} (make {current})" if current != name else w
            elif not b and expanded.strip():
                printed.append(expanded.strip())
        stack.extend(reversed([*rule.prerequisites, *rule.order_only]))
    if not builds:
        why = f"only prints or removes ({printed[0][:60]})" if printed else "has no recipe that does anything"
    return BuildTarget(name=name, builds=builds, produces=_products(db, name) if builds else (),
                       toolkits=tuple(sorted(kits)), why=why or "")


def _outputs(db: MakeDatabase, rule: MakeRule) -> list[str]:
    """The files a rule's recipe names with ``-o FILE`` (``$@``: the rule's target), objects
    (``.o``) left out: what a person runs is the program or library."""
    found: list[str] = []
    for line in rule.recipe:
        for words in _commands(_expand(line.replace("$@", rule.target), db.variables)):
            for flag, value in zip(words, words[1:]):
                if flag == "-o" and not value.endswith((".o", ".obj")) and "$" not in value and value not in found:
                    found.append(value)
    return found


def _products(db: MakeDatabase, name: str) -> tuple[str, ...]:
    """The files ``make NAME`` makes: NAME itself when it is a file rule with a recipe, else its
    prerequisites that are (through phony ones); a folder made by ``mkdir`` alone is none."""
    out: list[str] = []
    seen: set[str] = set()

    def visit(target: str, top: bool) -> None:
        if target in seen:
            return
        seen.add(target)
        rule = db.rules.get(target)
        if rule is None:
            return
        written = _outputs(db, rule)
        if written:
            out.extend(w for w in written if w not in out)
            if not rule.phony:
                return
        elif not rule.phony and rule.recipe and not any(ch in target for ch in "%$") \
                and any("$@" in line or target in line for line in rule.recipe):
            out.append(target)
            return
        if rule.phony or top:
            for dep in rule.prerequisites:
                visit(dep, False)

    visit(name, True)
    return tuple(out)


#: Targets that are never a release build, whatever their recipes do.
NOT_RELEASES = ("clean", "distclean", "mrproper", "install", "uninstall", "dist", "help", "test", "check", "tests",
                "format", "fmt", "lint", "docs", "doc")


def own_recipe_builds(db: MakeDatabase, name: str) -> bool:
    """Whether ``name``'s own recipe only compiles, links, writes or makes folders (an empty
    one too: the prerequisites build). One that runs a program (a test, a bench, a script) is
    a target that runs something, not a release build."""
    rule = db.rules.get(name)
    for line in rule.recipe if rule is not None else ():
        for words in _commands(_expand(line, db.variables)):
            program = words[0].rsplit("/", 1)[-1]
            if program in ("mkdir", "rm") or program in _WRITERS or program in _COMPILERS or program == "make":
                continue
            if program in _PRINTERS:
                continue
            return False  # a cross compiler (x86_64-w64-mingw32-gcc) too: no host says it has one
    return True


def release_builds(db: MakeDatabase, targets: tuple[str, ...], default_goal: str | None) -> list[BuildTarget]:
    """The targets a release builds, best first: the default goal when it builds, ``all``, then
    the others; a target that only prints (help) is none, nor one that runs a program (test,
    bench), nor one that builds exactly what an earlier one does."""
    order = [t for t in (default_goal, "all") if t in targets] + [t for t in targets if t not in (default_goal, "all")]
    out: list[BuildTarget] = []
    seen: set[tuple[str, ...]] = set()
    for name in dict.fromkeys(order):
        if name in NOT_RELEASES or not own_recipe_builds(db, name):
            continue
        found = build_target(db, name)
        key = tuple(sorted(found.produces))
        if not found.builds or (key and key in seen):
            continue
        seen.add(key)
        out.append(found)
    plain = [b for b in out if not b.toolkits]
    return plain[:1] + [b for b in out if b not in plain[:1]]
