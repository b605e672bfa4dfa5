"""What a project's CMakeLists.txt say, read WITHOUT configuring: configuring runs the
repository's code, and ``relgate init`` never does that (issue 36).

:func:`read_cmakelists` walks the tree as CMake would — ``add_subdirectory``, ``include`` of a
file in the tree, ``function``/``macro`` calls, ``foreach`` over a known list — keeping the
variables a plain ``set``/``option``/``list(APPEND)``/``project`` gives, and records the
project, its languages (CUDA: required, optional or none) and each ``add_test`` with the
LABELS and WORKING_DIRECTORY that ``set_tests_properties`` / ``set_property(TEST …)`` give it.
Conditions are not evaluated: every branch of an ``if`` is read and a test says which ``if``
it sits in. What it cannot know — a test name from a variable it cannot resolve, tests named
only when a test program runs (``gtest_discover_tests``) — goes to ``unread``, never guessed.
"""

from __future__ import annotations

import os
from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.kinds.cmake.syntax import UNKNOWN as _UNKNOWN
from relgate.kinds.cmake.syntax import Command, arguments, parse, split_list
from relgate.kinds.cmake.variables import Scope, merge_branches, set_variables

__all__ = ["CMakeTest", "CMakeRead", "read_cmakelists", "MAX_FILES"]

#: the most CMake files one read follows, the largest one, and the deepest nesting of
#: include / add_subdirectory / function calls
MAX_FILES = 5000
MAX_FILE_BYTES = 8 << 20
MAX_DEPTH = 64
MAX_ITEMS = 10000
#: the most commands one read evaluates (loops and calls counted each time): a tree that needs
#: more is refused rather than read for ever
MAX_STEPS = 2_000_000

_DISCOVERED = {"gtest_discover_tests", "gtest_add_tests", "catch_discover_tests", "doctest_discover_tests",
               "discover_tests", "pytest_discover_tests"}
#: commands (not modelled) that write variables named among their arguments
_WRITERS = {"string", "math", "file", "get_filename_component", "cmake_path", "find_program", "find_library",
            "find_path", "find_file", "get_property", "get_target_property", "get_directory_property",
            "get_cmake_property", "get_source_file_property", "get_test_property", "execute_process",
            "separate_arguments", "cmake_host_system_information", "try_compile", "try_run",
            "check_c_compiler_flag", "check_cxx_compiler_flag", "check_include_file", "check_symbol_exists",
            "check_c_source_compiles", "check_cxx_source_compiles", "check_function_exists", "site_name",
            "load_cache", "aux_source_directory", "define_property", "cmake_language"}
_SETTERS = {"set", "option", "unset", "list", "string", "cmake_parse_arguments", "get_filename_component"}
_ADD_TEST_KEYS = {"NAME", "COMMAND", "CONFIGURATIONS", "WORKING_DIRECTORY", "COMMAND_EXPAND_LISTS"}
_PROJECT_KEYS = {"VERSION", "DESCRIPTION", "HOMEPAGE_URL", "LANGUAGES"}
_BLOCKS = {"if": "endif", "foreach": "endforeach", "while": "endwhile", "function": "endfunction",
           "macro": "endmacro", "block": "endblock"}


@record
class CMakeTest:
    """One CTest test: its name, LABELS, command (as written: a target name stays a target
    name), WORKING_DIRECTORY, and where it was read (``tests/CMakeLists.txt:12``, or ``ctest``
    from ``ctest --show-only=json-v1``). ``conditions``: the ``if`` it sits in, as written."""

    name: str
    labels: tuple[str, ...]
    command: tuple[str, ...]
    working_directory: str | None
    where: str
    conditions: tuple[str, ...] = ()


@record
class CMakeRead:
    """A source tree's CMake files as read without configuring. ``cuda``: ``required``,
    ``optional`` (``check_language(CUDA)``, or CUDA enabled under an ``if``) or ``none``;
    ``unread``: ``file:line: why`` for each test name or label it could not resolve;
    ``files``: the files read, relative to the root, in order."""

    project: str | None
    version: str | None
    languages: tuple[str, ...]
    cuda: str
    tests: tuple[CMakeTest, ...]
    unread: tuple[str, ...]
    files: tuple[str, ...]


class _Return(Exception):
    """return() at the top of a file or function body."""


class _Dir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tests: list[dict] = []
        self.children: list[_Dir] = []


class _Reader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[str] = []
        self.unread: list[str] = []
        self.functions: dict[str, tuple[list[str], list[Command], bool, str]] = {}
        self.project: str | None = None
        self.version: str | None = None
        self.languages: list[str] = []
        self.cuda = "none"
        self.depth = 0
        self.steps = 0

    # -- files ---------------------------------------------------------------------------
    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def inside(self, path: Path, where: str, what: str) -> Path:
        """``path`` (absolute, lexically normalised) when it lies in the tree with no symlink on the way."""
        path = Path(os.path.normpath(path))
        if not path.is_relative_to(self.root):
            raise InputError(f"{where}: {what} {path} is outside the source tree {self.root}: refused")
        cur = self.root
        for part in path.relative_to(self.root).parts:
            cur = cur / part
            if cur.is_symlink():
                raise InputError(f"{where}: {what} {self.rel(cur)} is a symlink: refused (it may lead out of the tree)")
        return path

    def load(self, path: Path) -> list[Command]:
        if len(self.files) >= MAX_FILES:
            raise InputError(f"{self.rel(path)}: more than {MAX_FILES} CMake files in one tree: refused")
        rel = self.rel(path)
        data = read_user_file(path, what="a CMake file", limit=MAX_FILE_BYTES)
        self.files.append(rel)
        return parse(data.decode("utf-8", errors="replace"), rel)

    # -- evaluation ----------------------------------------------------------------------
    def args(self, cmd: Command, scope: Scope, missing: list[str] | None = None) -> list[str]:
        return arguments(cmd.args, scope.vars, [] if missing is None else missing)

    def run(self, cmds: list[Command], scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        i = 0
        while i < len(cmds):
            cmd = cmds[i]
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise InputError(f"{file}:{cmd.line}: more than {MAX_STEPS} commands to evaluate: refused")
            if cmd.name in _BLOCKS:
                end, branches = self.block(cmds, i, file)
                self.run_block(cmd, branches, scope, d, file, conds)
                i = end + 1
                continue
            if cmd.name.startswith("end") or cmd.name in ("else", "elseif"):
                raise InputError(f"{file}:{cmd.line}: {cmd.name}() without its opening command")
            if cmd.name == "return":
                if len(conds) == scope.base:
                    raise _Return()
            else:
                self.command(cmd, scope, d, file, conds)
            i += 1

    def block(self, cmds: list[Command], start: int, file: str) -> tuple[int, list[tuple[Command, list[Command]]]]:
        """The index of the command that closes the block opened at ``start``, and its branches."""
        opener = cmds[start].name
        closer = _BLOCKS[opener]
        depth = 0
        branches: list[tuple[Command, list[Command]]] = [(cmds[start], [])]
        for j in range(start + 1, len(cmds)):
            name = cmds[j].name
            if name == opener:
                depth += 1
            elif name == closer:
                if depth == 0:
                    return j, branches
                depth -= 1
            elif depth == 0 and opener == "if" and name in ("elseif", "else"):
                branches.append((cmds[j], []))
                continue
            branches[-1][1].append(cmds[j])
        raise InputError(f"{file}:{cmds[start].line}: {opener}() has no {closer}()")

    def run_block(self, cmd: Command, branches: list[tuple[Command, list[Command]]], scope: Scope, d: _Dir,
                  file: str, conds: tuple[str, ...]) -> None:
        if cmd.name == "if":
            first = "if(" + " ".join(a.text for a in cmd.args) + ")"
            before, after = dict(scope.vars), []
            for head, body in branches:  # each branch from the state before the if
                shown = first if head is cmd else f"{head.name}({' '.join(a.text for a in head.args)}) after {first}"
                scope.vars.clear()
                scope.vars.update(before)
                self.run(body, scope, d, file, conds + (shown,))
                after.append(dict(scope.vars))
            if branches[-1][0].name != "else":
                after.append(before)  # no branch taken
            scope.vars.clear()
            scope.vars.update(merge_branches(before, after))
        elif cmd.name == "foreach":
            self.foreach(cmd, branches[0][1], scope, d, file, conds)
        elif cmd.name in ("function", "macro"):
            names = [a.text for a in cmd.args]
            if names:
                self.functions[names[0].lower()] = (names[1:], branches[0][1], cmd.name == "macro", file)
        elif cmd.name == "block":
            self.run(branches[0][1], Scope(dict(scope.vars), scope, len(conds)), d, file, conds)
        elif any(c.name == "add_test" or c.name in self.functions for c in branches[0][1]):  # while
            self.unread.append(f"{file}:{cmd.line}: a while() loop is not followed; the tests it adds are not read")

    def foreach(self, cmd: Command, body: list[Command], scope: Scope, d: _Dir, file: str,
                conds: tuple[str, ...]) -> None:
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        if not args:
            raise InputError(f"{file}:{cmd.line}: foreach() needs a loop variable")
        var, rest = args[0], args[1:]
        items: list[str] | None = rest
        if rest[:1] == ["IN"]:
            items = []
            mode = None
            for word in rest[1:]:
                if word in ("LISTS", "ITEMS", "ZIP_LISTS"):
                    mode = word
                elif mode == "ITEMS":
                    items.append(word)
                elif mode == "LISTS":
                    value = scope.vars.get(word)
                    if value is None or value == _UNKNOWN:
                        items = None
                        break
                    items += split_list(value)
                else:
                    items = None
                    break
        elif rest[:1] == ["RANGE"]:
            try:
                nums = [int(x) for x in rest[1:]]
                span = range(0, nums[0] + 1) if len(nums) == 1 else range(nums[0], nums[1] + 1, *nums[2:3])
                items = [str(n) for n in span] if len(span) <= MAX_ITEMS else None
            except (ValueError, IndexError):
                items = None
        if missing or items is None or len(items) > MAX_ITEMS:
            items = [_UNKNOWN]  # read the body once with the loop variable unknown
        for item in items:
            scope.vars[var] = item
            self.run(body, scope, d, file, conds)

    def call(self, cmd: Command, scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        params, body, is_macro, defined_in = self.functions[cmd.name]
        if self.depth >= MAX_DEPTH:
            self.unread.append(f"{file}:{cmd.line}: {cmd.name}() nested deeper than {MAX_DEPTH} calls: not followed")
            return
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        bound = {"ARGC": str(len(args)), "ARGV": ";".join(args), "ARGN": ";".join(args[len(params):])}
        bound.update({f"ARGV{n}": a for n, a in enumerate(args)})
        bound.update({p: (args[n] if n < len(args) else "") for n, p in enumerate(params)})
        if missing:  # a list argument that did not resolve: positions are not known
            bound = {k: _UNKNOWN for k in bound} | {p: _UNKNOWN for p in params}
        self.depth += 1
        try:
            if is_macro:
                inner = Scope(dict(scope.vars) | bound, scope.parent, len(conds))
                try:
                    self.run(body, inner, d, defined_in, conds)
                except _Return:
                    pass
                for key, value in inner.vars.items():
                    if key not in bound:
                        scope.vars[key] = value
            else:
                try:
                    self.run(body, Scope(dict(scope.vars) | bound, scope, len(conds)), d, defined_in, conds)
                except _Return:
                    pass
        finally:
            self.depth -= 1

    # -- commands ------------------------------------------------------------------------
    def command(self, cmd: Command, scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        name, where = cmd.name, f"{file}:{cmd.line}"
        if name in self.functions:
            self.call(cmd, scope, d, file, conds)
        elif name in _SETTERS and set_variables(cmd, scope):
            pass
        elif name == "file" and self.glob(cmd, scope):
            pass
        elif name == "project":
            self.read_project(cmd, scope)
        elif name in ("enable_language", "check_language", "find_package"):
            self.language(cmd, scope, conds)
        elif name == "add_subdirectory":
            self.subdirectory(cmd, scope, d, file, conds)
        elif name == "include":
            self.include(cmd, scope, d, file, conds)
        elif name == "add_test":
            self.add_test(cmd, scope, d, file, conds)
        elif name in ("set_tests_properties", "set_property"):
            self.properties(cmd, scope, d, where)
        elif name in _DISCOVERED:
            self.unread.append(f"{where}: {name}() names its tests only when the test program runs: not read")
        elif name in _WRITERS or name.startswith("check_"):  # string() forms not modelled too
            for arg in cmd.args:
                if arg.kind == "unquoted" and arg.text.replace("_", "").isalnum():
                    scope.vars[arg.text] = _UNKNOWN

    def glob(self, cmd: Command, scope: Scope) -> bool:
        """file(GLOB|GLOB_RECURSE VAR [LIST_DIRECTORIES b] [RELATIVE dir] patterns…) over the tree
        (no symlink followed, nothing outside the root); False for the other file() forms."""
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        if len(args) < 3 or args[0] not in ("GLOB", "GLOB_RECURSE"):
            return False
        recurse, out, words = args[0] == "GLOB_RECURSE", args[1], args[2:]
        listdirs, relative, patterns = not recurse, None, []
        while words:
            word = words.pop(0)
            if word in ("LIST_DIRECTORIES", "RELATIVE") and words:
                value = words.pop(0)
                listdirs, relative = ((value.upper() in ("TRUE", "ON", "1", "YES"), relative) if word != "RELATIVE"
                                      else (listdirs, value))
            elif word not in ("CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"):
                patterns.append(word)
        here = Path(scope.vars["CMAKE_CURRENT_SOURCE_DIR"])
        found: list[str] = []
        for pattern in patterns:
            full = Path(os.path.normpath(here / pattern))
            if missing or not full.is_relative_to(self.root) or (recurse and any(c in str(full.parent) for c in "*?[")):
                scope.vars[out] = _UNKNOWN
                return True
            found += _glob(full, recurse, listdirs)
        if relative is not None:
            found = [os.path.relpath(f, relative) for f in found]
        scope.vars[out] = ";".join(sorted(set(found))) if len(found) <= MAX_ITEMS else _UNKNOWN
        return True

    def read_project(self, cmd: Command, scope: Scope) -> None:
        args = self.args(cmd, scope)
        if not args:
            return
        name, langs, version, key = args[0], [], None, None
        for word in args[1:]:
            if word in _PROJECT_KEYS:
                key = word
            elif key is None or key == "LANGUAGES":
                langs.append(word)
            elif key == "VERSION" and version is None:
                version = word
        langs = [] if langs == ["NONE"] else langs or ["C", "CXX"]
        self.languages += [x for x in langs if x not in self.languages]
        if "CUDA" in langs:
            self.cuda = "required"
        if self.project is None:
            self.project, self.version = name, version
            scope.vars["CMAKE_PROJECT_NAME"] = name
        src = scope.vars.get("CMAKE_CURRENT_SOURCE_DIR", "")
        scope.vars.update({"PROJECT_NAME": name, "PROJECT_SOURCE_DIR": src, f"{name}_SOURCE_DIR": src,
                           "PROJECT_VERSION": version or "", f"{name}_VERSION": version or ""})
        for n, part in enumerate(("MAJOR", "MINOR", "PATCH", "TWEAK")):
            pieces = (version or "").split(".")
            scope.vars[f"PROJECT_VERSION_{part}"] = pieces[n] if n < len(pieces) else ""

    def language(self, cmd: Command, scope: Scope, conds: tuple[str, ...]) -> None:
        args = self.args(cmd, scope)
        if cmd.name == "find_package":
            if args[:1] in (["CUDAToolkit"], ["CUDA"]):
                required = "REQUIRED" in args and not conds
                self.cuda = "required" if required or self.cuda == "required" else "optional"
            return
        langs = [a for a in args if a != "OPTIONAL"]
        if cmd.name == "check_language":
            for lang in langs[:1]:
                scope.vars[f"CMAKE_{lang}_COMPILER"] = _UNKNOWN
                if lang == "CUDA" and self.cuda == "none":
                    self.cuda = "optional"
            return
        self.languages += [x for x in langs if x not in self.languages]
        if "CUDA" in langs:
            self.cuda = "required" if not conds or self.cuda == "required" else "optional"

    def subdirectory(self, cmd: Command, scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        where = f"{file}:{cmd.line}"
        if not args or "${" in args[0]:
            self.unread.append(f"{where}: add_subdirectory({' '.join(a.text for a in cmd.args)}): the directory is "
                               f"not known without configuring: not read")
            return
        path = self.inside(Path(scope.vars["CMAKE_CURRENT_SOURCE_DIR"]) / args[0], where, "add_subdirectory")
        listfile = path / "CMakeLists.txt"
        if not listfile.exists() and not listfile.is_symlink():
            self.unread.append(f"{where}: add_subdirectory({args[0]}): no {self.rel(listfile)}: not read")
            return
        self.inside(listfile, where, "add_subdirectory")
        if self.depth >= MAX_DEPTH:
            raise InputError(f"{where}: add_subdirectory nested deeper than {MAX_DEPTH}: refused")
        child = _Dir(path)
        d.children.append(child)
        variables = dict(scope.vars)
        variables.update({"CMAKE_CURRENT_SOURCE_DIR": str(path), "CMAKE_CURRENT_LIST_DIR": str(path),
                          "CMAKE_CURRENT_LIST_FILE": str(listfile)})
        self.depth += 1
        try:
            self.run_file(listfile, Scope(variables, scope, len(conds)), child, conds)
        finally:
            self.depth -= 1

    def include(self, cmd: Command, scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        if not args:
            return
        target, where = args[0], f"{file}:{cmd.line}"
        here = Path(scope.vars["CMAKE_CURRENT_SOURCE_DIR"])
        if "/" in target or target.endswith(".cmake"):
            candidates = [here / target]
        else:  # a module: a file of CMAKE_MODULE_PATH inside the tree, else one of CMake's own
            candidates = [here / p / f"{target}.cmake" for p in split_list(scope.vars.get("CMAKE_MODULE_PATH", ""))
                          if p != _UNKNOWN]
        for path in candidates:
            path = Path(os.path.normpath(path))
            if not path.is_relative_to(self.root) or "${" in str(path):
                continue
            if path.is_file():
                path = self.inside(path, where, "include")
                if self.depth >= MAX_DEPTH:
                    raise InputError(f"{where}: include nested deeper than {MAX_DEPTH}: refused")
                saved = {k: scope.vars.get(k) for k in ("CMAKE_CURRENT_LIST_DIR", "CMAKE_CURRENT_LIST_FILE")}
                scope.vars.update({"CMAKE_CURRENT_LIST_DIR": str(path.parent), "CMAKE_CURRENT_LIST_FILE": str(path)})
                self.depth += 1
                try:
                    self.run_file(path, scope, d, conds)
                finally:
                    self.depth -= 1
                    scope.vars.update({k: v for k, v in saved.items() if v is not None})
                return
        if missing or scope.vars.get("CMAKE_MODULE_PATH") == _UNKNOWN or "/" in target or target.endswith(".cmake"):
            self.unread.append(f"{where}: include({target}): not found in the tree without configuring; what it "
                               f"defines is not read")

    def run_file(self, path: Path, scope: Scope, d: _Dir, conds: tuple[str, ...]) -> None:
        cmds = self.load(path)
        try:
            self.run(cmds, scope, d, self.rel(path), conds)
        except _Return:
            pass

    def add_test(self, cmd: Command, scope: Scope, d: _Dir, file: str, conds: tuple[str, ...]) -> None:
        where = f"{file}:{cmd.line}"
        missing: list[str] = []
        args = self.args(cmd, scope, missing)
        if not args:
            raise InputError(f"{where}: add_test() needs a test name")
        wd = None
        if args[0] == "NAME":
            fields: dict[str, list[str]] = {}
            key = "NAME"
            for word in args[1:]:
                if word in _ADD_TEST_KEYS and not (key == "COMMAND" and word == "COMMAND"):
                    key = word
                    fields.setdefault(key, [])
                else:
                    fields.setdefault(key, []).append(word)
            name = (fields.get("NAME") or [""])[0]
            command = fields.get("COMMAND", [])
            wd = (fields.get("WORKING_DIRECTORY") or [None])[0]
        else:
            name, command = args[0], args[1:]
        if not name or "${" in name or "$ENV{" in name or _UNKNOWN in name:
            shown = " ".join(a.text for a in cmd.args[:3])
            self.unread.append(f"{where}: add_test({shown} …): the test name is not known without configuring")
            return
        d.tests.append({"name": name, "labels": [], "command": [c.replace(_UNKNOWN, "?") for c in command],
                        "wd": wd, "where": where, "conds": conds})

    def properties(self, cmd: Command, scope: Scope, d: _Dir, where: str) -> None:
        args = self.args(cmd, scope)
        if cmd.name == "set_property":
            if args[:1] != ["TEST"] or "PROPERTY" not in args:
                return
            head, tail = args[1:args.index("PROPERTY")], args[args.index("PROPERTY") + 1:]
            append = "APPEND" in head or "APPEND_STRING" in head
            names = [n for n in head if n not in ("APPEND", "APPEND_STRING")]
            if "DIRECTORY" in names:
                self.unread.append(f"{where}: set_property(TEST … DIRECTORY …) on another directory: not read")
                return
            if not tail:
                return
            props = [(tail[0], tail[1:])]
        else:
            if "PROPERTIES" not in args:
                raise InputError(f"{where}: set_tests_properties() without PROPERTIES")
            names, rest = args[:args.index("PROPERTIES")], args[args.index("PROPERTIES") + 1:]
            append = False
            props = [(rest[n], split_list(rest[n + 1]) if n + 1 < len(rest) else []) for n in range(0, len(rest), 2)]
        wanted = [p for p in props if p[0] in ("LABELS", "WORKING_DIRECTORY")]
        if not wanted:
            return
        for test_name in names:
            if "${" in test_name or _UNKNOWN in test_name:
                self.unread.append(f"{where}: {cmd.name}({test_name} …): the test name is not known without "
                                   f"configuring; its labels are not read")
                continue
            found = [t for t in d.tests if t["name"] == test_name]
            if not found:
                self.unread.append(f"{where}: {cmd.name}({test_name} …): no test {test_name} was added in this "
                                   f"directory before it")
                continue
            for key, values in wanted:
                if any("${" in v or _UNKNOWN in v for v in values):
                    self.unread.append(f"{where}: {key} of {test_name} is not known without configuring")
                    continue
                for test in found:
                    if key == "LABELS":
                        test["labels"] = (test["labels"] if append else []) + values
                    else:
                        test["wd"] = ";".join(values) or None

    def tests(self, d: _Dir) -> list[CMakeTest]:
        """In CTest's order: a directory's own tests, then its subdirectories'."""
        out = [CMakeTest(name=t["name"], labels=tuple(t["labels"]), command=tuple(t["command"]),
                         working_directory=t["wd"], where=t["where"], conditions=t["conds"]) for t in d.tests]
        for child in d.children:
            out += self.tests(child)
        return out


def _glob(pattern: Path, recurse: bool, listdirs: bool) -> list[str]:
    """The paths ``pattern`` matches, as CMake's file(GLOB) / file(GLOB_RECURSE) find them."""
    from fnmatch import fnmatchcase

    parts = pattern.parts
    if recurse:
        found = []
        for top, dirs, files in os.walk(pattern.parent):  # symlinked directories are not entered
            names = files + dirs if listdirs else files + [d for d in dirs if os.path.islink(os.path.join(top, d))]
            found += [os.path.join(top, n) for n in names if fnmatchcase(n, parts[-1])]
            if len(found) > MAX_ITEMS:
                break
        return found
    level = [Path(parts[0])]
    for part in parts[1:]:
        if not any(c in part for c in "*?["):
            level = [p / part for p in level if (p / part).exists() or (p / part).is_symlink()]
            continue
        level = [p / name for p in level if p.is_dir() and not p.is_symlink()
                 for name in sorted(os.listdir(p)) if fnmatchcase(name, part)][: MAX_ITEMS + 1]
    return [str(p) for p in level if listdirs or not p.is_dir()]


def read_cmakelists(root: Path) -> CMakeRead:
    """The CMake files of the source tree at ``root``, read without configuring it (an
    :class:`InputError` ``file:line: …`` for malformed text, a symlink or a path out of the tree)."""
    root = Path(os.path.abspath(root))
    top = root / "CMakeLists.txt"
    if top.is_symlink():
        raise InputError(f"{top}: a symlink: refused (it may lead out of the tree)")
    reader = _Reader(root)
    src = str(root)
    variables = {"CMAKE_SOURCE_DIR": src, "CMAKE_CURRENT_SOURCE_DIR": src, "CMAKE_CURRENT_LIST_DIR": src,
                 "CMAKE_CURRENT_LIST_FILE": str(top), "PROJECT_SOURCE_DIR": src, "CMAKE_MODULE_PATH": ""}
    d = _Dir(root)
    try:
        reader.run_file(top, Scope(variables, None, 0), d, ())
    except RecursionError:
        raise InputError(f"{top.name}: nested too deeply to read (references, blocks or calls): refused") from None
    return CMakeRead(project=reader.project, version=reader.version, languages=tuple(reader.languages),
                     cuda=reader.cuda, tests=tuple(reader.tests(d)), unread=tuple(dict.fromkeys(reader.unread)),
                     files=tuple(reader.files))
