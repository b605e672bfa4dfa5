"""The tree reads as the runbook: one subpackage per stage, imports one way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "relgate"

# Bottom to top: a module may import only from its own floor and the floors below it.
FLOORS = ["core", "kinds", "manifest", "ledger", "run", "remote", "lanes", "evidence", "package", "measure", "signoff",
          "stages", "cli"]


def _floor(module: str) -> str:
    """``relgate.run.runner`` → ``run``; ``relgate.cli`` → ``cli``."""
    parts = module.split(".")
    assert parts[0] == "relgate", module
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("relgate"):
            if node.module == "relgate":
                found += [(node.lineno, f"relgate.{a.name}") for a in node.names if a.name != "__version__"]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append((node.lineno, "<relative>"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("relgate")]
    return found


def _modules() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*.py"))


#: A module past this many lines holds more than one concern (a room that outgrows a screen or
#: two splits by concern, as pypa/build keeps its files).
MAX_LINES = 600


def _long_modules(paths: list[Path], root: Path = REPO) -> list[str]:
    """Each of ``paths`` over ``MAX_LINES`` lines, named with its count."""
    counts = {path: len(path.read_text().splitlines()) for path in paths}
    return [f"{path.relative_to(root)}: {n} lines" for path, n in counts.items() if n > MAX_LINES]


def test_no_module_of_the_engine_is_over_600_lines():
    assert _long_modules(_modules()) == []


def test_the_size_check_names_a_long_module(tmp_path: Path):
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "full.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "short.py").write_text("x = 1\n")
    paths = sorted(tmp_path.glob("*.py"))
    assert _long_modules(paths, root=tmp_path) == [f"long.py: {MAX_LINES + 1} lines"]


def test_every_stage_package_says_what_it_does():
    packages = [p for p in ENGINE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {p.name for p in packages} <= set(FLOORS)
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc, f"{package.name}/__init__.py: say in two lines what the stage does"
        assert len(doc.splitlines()) <= 3, f"{package.name}/__init__.py: keep it to two lines"


def test_imports_run_one_way():
    wrong = []
    for path in _modules():
        rel = path.relative_to(REPO).with_suffix("")
        here = _floor(".".join(rel.parts)) if rel.name != "__init__" else rel.parts[1] if len(rel.parts) > 2 else ""
        if here == "__init__" or here == "":
            continue
        for line, module in _imports(path):
            if module == "<relative>":
                wrong.append(f"{rel}.py:{line}: relative import (use relgate.STAGE.module)")
                continue
            there = _floor(module)
            if there == "__version__" or there not in FLOORS:
                continue
            if FLOORS.index(there) > FLOORS.index(here):
                wrong.append(f"{rel}.py:{line}: {here} imports {module}, a floor above it")
    assert wrong == []


def test_the_engine_never_imports_nox():
    for path in _modules():
        names = {m for _, m in _imports(path)}
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        assert not any(n == "nox" or n.startswith("nox.") for n in names), path
    # nor any file it ships, as text: the noxfile `relgate init` writes registers the session
    # layer (sessions/, installed as relgate_sessions), it holds no sessions of its own
    shipped = [p for p in ENGINE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and re.search(r"^\s*(import nox|from nox)", p.read_text(errors="replace"), re.M)]
    assert shipped == []


def test_the_wheel_holds_every_engine_package_and_the_session_layer():
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    engine = {".".join(p.parent.relative_to(REPO).parts) for p in ENGINE.rglob("__init__.py")
              if "__pycache__" not in p.parts}
    assert set(config["packages"]) == engine | {"relgate_sessions"}
    assert config["package-dir"] == {"relgate_sessions": "sessions"}


@pytest.mark.parametrize("heavy", ["relgate.stages", "git", "build", "twine"])
def test_listing_sessions_imports_no_engine(heavy):
    """`nox -l` only registers sessions: the engine, gitpython and the packaging tools stay unloaded."""
    code = ("import sys, runpy; sys.argv = ['nox']; import nox.registry;"
            f"runpy.run_path({str(REPO / 'noxfile.py')!r});"
            f"print({heavy!r} in sys.modules, sorted(m for m in sys.modules if m.startswith('relgate')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    loaded, relgate_modules = done.stdout.split(" ", 1)
    assert loaded == "False", done.stdout
    assert relgate_modules.strip() == "[]", done.stdout


def test_the_lane_sessions_are_the_engines_built_in_lanes():
    """sessions/lanes.py lists the lane sessions itself (so `nox -l` imports no engine): keep it equal."""
    from relgate.manifest.lanes import BUILTIN_LANE_DEFS
    from sessions.lanes import LANE_SESSIONS

    expected = {name: lane.description for name, lane in BUILTIN_LANE_DEFS.items() if name != "host"}
    assert LANE_SESSIONS == expected


def test_a_local_only_run_does_not_load_the_ssh_side():
    """paramiko and Fabric cost more to import than everything `nox -s host` does on a local host."""
    code = ("import sys; import relgate.stages.steps, relgate.remote.pool, relgate.cli;"
            "print(sorted(m for m in ('paramiko', 'fabric', 'invoke') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.strip() == "[]"


def test_the_host_path_imports_only_what_it_uses():
    """Startup is relgate's fixed cost on every session (bench/fixed_cost.py): the stdlib modules
    only some runs need (a bad name's suggestion, SSH hosts, fleets, declared products) load
    when those runs need them, and the records cost no code generation."""
    code = ("import sys, dataclasses; import relgate.stages.steps, relgate.cli, relgate.remote.fleet;"
            "print(sorted(m for m in ('difflib', 'getpass', 'uuid', 'concurrent.futures', 'glob', 'termios')"
            " if m in sys.modules));"
            "print(sum(dataclasses.is_dataclass(c) and '__record_init__' not in c.__dict__"
            " for m in list(sys.modules.values()) if m and m.__name__.startswith('relgate')"
            " for c in vars(m).values() if isinstance(c, type) and c.__module__ == m.__name__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.split("\n")[:2] == ["[]", "0"], done.stdout


def _engine_graph() -> dict[str, set[str]]:
    """module → the engine modules it imports, at module level or inside a function (a lazy
    import that closes a circle is still a circle: the two modules are one concern)."""
    modules = {".".join(p.relative_to(REPO).with_suffix("").parts): p for p in _modules()}
    modules = {(m[: -len(".__init__")] if m.endswith(".__init__") else m): p for m, p in modules.items()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in modules and t != name and (t.count(".") > 1 or t == "relgate.cli" or t == "relgate.stages"):
                    edges.add(t)  # a module, not a stage package's face (__init__ holds a docstring)
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_among_engine_modules():
    """Two modules that import each other (even lazily, inside a function) are one concern
    drawn in two places: the shared part moves down a floor."""
    assert _circles(_engine_graph()) == []


def test_the_circle_check_finds_a_lazy_circle():
    graph = {"relgate.a.x": {"relgate.a.y"}, "relgate.a.y": {"relgate.a.x"}, "relgate.a.z": {"relgate.a.x"}}
    assert _circles(graph) == [["relgate.a.x", "relgate.a.y"]]


def _calls(path: Path, func: str) -> list[ast.Call]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == func or getattr(n.func, "attr", None) == func)]


def test_one_registry_that_the_cli_and_the_sessions_read():
    """Every command of ``relgate`` is a stage of the one registry, with the registry's description;
    every session runs a registered stage by its name; a name registered twice is an error."""
    from relgate import cli
    from relgate.stages.catalog import stages
    from relgate.stages.registry import stage

    registry = stages()
    sub = next(a for a in cli._parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(registry)
    assert {c.dest: c.help for c in sub._choices_actions} == {s.name: s.description for s in registry.values()}
    used = set()
    for path in sorted((REPO / "sessions").glob("*.py")):
        for call in _calls(path, "stage_session") + _calls(path, "command_session"):
            if path.name == "_common.py":
                continue
            name = call.args[1]
            assert isinstance(name, ast.Constant) and name.value in registry, f"{path.name}:{call.lineno}"
            used.add(name.value)
    assert {"host", "lane", "census", "evidence", "package-verify", "publish-dry-run", "compare", "signoff",
            "tag"} <= used
    with pytest.raises(ValueError, match="registered twice"):
        stage("host", "again")(lambda workspace, options, out: None)  # type: ignore[arg-type,return-value]
    assert registry["host"].run.__module__ == "relgate.stages.host"
    # No second list of commands: the CLI and the sessions keep no table of their own.
    for path in [*sorted((REPO / "sessions").glob("*.py")), REPO / "noxfile.py", ENGINE / "cli.py"]:
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                   if isinstance(t, ast.Name)}
        assert not targets & {"COMMANDS", "_COMMANDS"}, path


def test_no_string_getattr_on_the_stages_and_no_second_path_through_the_cli():
    """The sessions reach a stage through the registry: never ``getattr(relgate.stages, "…")``,
    never by re-parsing argv through ``relgate.cli.main``; one exit-code mapping (``Outcome.of``)."""
    for path in [*sorted((REPO / "sessions").glob("*.py")), REPO / "noxfile.py", *_modules()]:
        for call in _calls(path, "getattr"):
            assert "stages" not in ast.unparse(call.args[0]), f"{path}:{call.lineno}: getattr on the stages"
        if path.is_relative_to(REPO / "sessions") or path.name == "noxfile.py":
            assert "relgate.cli" not in {m for _, m in _imports(path)}, f"{path}: a session goes through relgate.cli"
    mapping = [f"{p.relative_to(REPO)}" for p in [*sorted((REPO / "sessions").glob("*.py")), ENGINE / "cli.py",
                                                   *sorted((ENGINE / "stages").glob("*.py"))]
               if ".ok(" in p.read_text()]
    assert mapping == ["relgate/stages/registry.py"]


_LEDGER_WRITES = {"begin_run", "finish_run", "begin_step", "finish_step", "record_step", "note_step_host",
                  "reusable_pass", "reuse_step", "store_evidence", "store_log"}


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{path.relative_to(REPO)}: one {name}"
    return found[0]


def test_run_one_executes_and_judges_and_never_calls_the_ledger():
    """The step's rows, log and evidence go through the recorder (relgate.run.recorder), whole."""
    body = _function(ENGINE / "run" / "runner.py", "_run_one")
    names = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(body) if isinstance(n, ast.Attribute)}
    assert not names & {"ledger", "Ledger", "_conn"}, "_run_one reaches the ledger itself"
    calls = {n.func.attr: n.lineno for n in ast.walk(body)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _LEDGER_WRITES
             and not (isinstance(n.func.value, ast.Name) and n.func.value.id == "rec")}
    assert not calls, f"_run_one writes ledger rows itself: {calls}"


def test_the_ledger_run_is_the_one_begin_and_finish_of_a_run():
    """A run is begun and finished only by relgate.run.ledger_run.LedgerRun, and the local flow,
    the fleet and the measuring stage all go through it."""
    callers = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("begin_run", "finish_run"):
                callers.append(str(path.relative_to(ENGINE)))
    assert set(callers) == {"run/ledger_run.py"}, callers
    collect = [p for p in _modules() if p.name == "collect.py" and p.parent.name in ("signoff", "measure")]
    assert len(collect) == 1, collect
    for path in (ENGINE / "run" / "flow.py", ENGINE / "remote" / "fleet.py", *collect):
        used = [n for n in ast.walk(ast.parse(path.read_text()))
                if isinstance(n, ast.withitem) and isinstance(n.context_expr, ast.Call)
                and isinstance(n.context_expr.func, ast.Name) and n.context_expr.func.id == "LedgerRun"]
        assert used, f"{path.relative_to(REPO)}: its run is not a `with LedgerRun(...)`"


KIND_NAMES = {"cargo", "make", "python", "cmake"}


def _kind_switches(source: str, name: str = "<source>") -> list[str]:
    """Each place ``source`` switches on a project kind by name: a comparison of something named
    ``kind`` with a kind's name (or a tuple of them), a dict keyed by kind names, a tuple of kind
    names — what relgate/kinds/'s adapters answer instead."""
    def names(node: ast.AST) -> set[str] | None:
        if isinstance(node, ast.Constant) and node.value in KIND_NAMES:
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and \
                all(isinstance(e, ast.Constant) and e.value in KIND_NAMES for e in node.elts):
            return {e.value for e in node.elts}
        return None

    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(names(s) for s in sides) and any("kind" in ast.unparse(s).lower() for s in sides if not names(s)):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict) and len(node.keys) > 1 and \
                all(k is not None and names(k) for k in node.keys):
            found.append(f"{name}:{node.lineno}: a dict keyed by kind names")
        elif isinstance(node, ast.Dict) and len(node.keys) > 1 and all(
                isinstance(k, ast.Attribute) and k.attr == "name" and isinstance(k.value, ast.Name)
                and k.value.id.isupper() for k in node.keys):
            found.append(f"{name}:{node.lineno}: a dict keyed by kind adapters' names")
        elif isinstance(node, (ast.Tuple, ast.Set)) and len(node.elts) > 1 and names(node) and \
                len(names(node) or ()) > 1:
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_kind_switch_outside_the_kind_adapters():
    """A project kind is one adapter in relgate/kinds/ (behind one interface, in one registry):
    nowhere else compares a kind's name, so adding a kind touches its adapter and the registry."""
    found = []
    for path in _modules():
        if path.relative_to(ENGINE).parts[0] == "kinds":
            continue
        found += _kind_switches(path.read_text(), str(path.relative_to(REPO)))
    assert found == []


#: what the rest of the engine may import from relgate/kinds/: the interface, its records, the
#: registry and the shared TOML writing; never a kind's own package
KINDS_INTERFACE = ("relgate.kinds.base", "relgate.kinds.found", "relgate.kinds.registry", "relgate.kinds.writing")


def test_only_the_kinds_interface_is_imported_outside_relgate_kinds():
    """A kind's readers, writers and facts stay behind its adapter: a module outside relgate/kinds/
    that imports relgate.kinds.cargo.reader (say) has grown a kind switch by another name."""
    wrong = []
    for path in _modules():
        if path.relative_to(ENGINE).parts[0] == "kinds":
            continue
        for line, module in _imports(path):
            if module.startswith("relgate.kinds") and module not in KINDS_INTERFACE:
                wrong.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    assert wrong == []


def test_the_kind_switch_check_finds_a_switch():
    source = ('if project.kind == "cargo":\n    pass\n'
              'NEEDS = ("cargo", "make")\n'
              'FILES = {"cargo": 1, "python": 2}\n'
              'ok = kind in ("make", "python")\n'
              'TOOLS = ("cc", "make", "cargo")\n'
              'argv = ("make", "test")\n'
              'FLOWS = {CARGO.name: 1, MAKE.name: 2}\n'
              'ONE = {"x": 1, "y": 2}\n')
    assert sorted(line.split(": ", 1)[0] for line in _kind_switches(source, "x.py")) == [
        "x.py:1", "x.py:3", "x.py:4", "x.py:5", "x.py:5", "x.py:8"]
