"""One workspace, loaded once: the lane table validated up front by `relgate check` and by every
session, the whole plan printed, and the local host detected once per invocation."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOXFILE, Project, git
from relgate.core.errors import InputError
from relgate.ledger.gitfacts import read_git_facts
from relgate.manifest.workspace import Workspace
from relgate.remote.pool import host_pool
from relgate.run.flow import candidate_facts


def _edit(project: Project, old: str, new: str) -> None:
    path = project.manifests / "lanes.toml"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


# (id, edit of the C example's lanes.toml: old text → new text, the one line relgate prints)
BROKEN_LANE_TABLES = [
    ("unknown-key", ('command = "make test-cuda"\nrequires = ["cuda"]', 'command = "make test-cuda"\nrequries = ["cuda"]'),
     'lanes.toml: target.kernels-cuda.requries: unknown key — did you mean "requires"?'),
    ("wrong-type", ('command = "make bench"', 'command = "make bench"\ntimeout = "ten"'),
     'lanes.toml: target.matvec-bench.timeout: expected an integer or a number, got the string "ten"'),
    ("lane-row-not-a-string", ('"matvec-bench" = "bench"', '"matvec-bench" = 3'),
     "lanes.toml: lanes.matvec-bench: expected a string"),
    ("empty-command", ('command = "make bench"', 'command = ""'),
     "lanes.toml: target.matvec-bench.command: empty; say the command that runs this target"),
    ("blank-command", ('command = "make contract"', 'command = "   "'),
     "lanes.toml: target.cli-contract-cpu.command: empty; say the command that runs this target"),
]


def _only_line(stderr: str, says: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("relgate: ") and says in lines[0], (lines[0], says)


@pytest.mark.parametrize(("edit", "says"), [c[1:] for c in BROKEN_LANE_TABLES], ids=[c[0] for c in BROKEN_LANE_TABLES])
def test_relgate_check_rejects_a_broken_lane_table(tinyinfer: Project, edit: tuple[str, str], says: str) -> None:
    _edit(tinyinfer, *edit)
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    _only_line(done.stderr, says)


def test_an_unknown_lane_is_a_census_violation_that_relgate_check_lists(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"', '"kernels-cpu" = "gtae"')
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 1, done  # the census is red; the manifests load
    assert done.stderr == ""
    census = done.stdout.split("lane census:\n", 1)[1].splitlines()
    assert census[0].split()[:2] == ["unknown-lane", "kernels-cpu"]
    assert 'unknown lane "gtae" — did you mean "gate"? (' in census[0]
    assert census[-1].strip().endswith("1 violation")


def test_a_table_for_a_target_cargo_does_not_declare(scankern: Project) -> None:
    (scankern.manifests / "lanes.toml").write_text('[target.scan_paritty]\ntimeout = 60\n')
    done = scankern.relgate("check", timeout=120)
    assert done.returncode == 1, done  # a stale options table: the census's, like a stale row
    line = next(x for x in done.stdout.splitlines() if "target.scan_paritty" in x).split(None, 2)
    assert line[:2] == ["stale-row", "target.scan_paritty"], line
    assert "configures a target that does not exist" in line[2] and 'did you mean "scan_parity"?' in line[2]


def test_every_problem_of_every_file_at_once(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"', '"kernels-cpu" = "gtae"')
    _edit(tinyinfer, 'command = "make bench"', 'command = ""')
    builds = tinyinfer.manifests / "builds.toml"
    builds.write_text(builds.read_text().replace('run = "make cpu"', 'rn = "make cpu"'))
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 4, done.stderr  # rn unknown, run missing, the lane, the command
    assert any("builds.toml: release.cpu.rn" in line for line in lines)
    assert any('unknown lane "gtae"' in line for line in lines)
    assert any("matvec-bench.command: empty" in line for line in lines)


def test_a_folder_named_lanes_toml_is_refused(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "lanes.toml").unlink()
    (tinyinfer.manifests / "lanes.toml").mkdir()
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 2
    _only_line(done.stderr, "lanes.toml: not a file")


SESSIONS = [("host",), ("gate",), ("contract",), ("record",), ("bench",), ("qualification",),
            ("lane", "--", "soak")]


@pytest.mark.parametrize("argv", SESSIONS, ids=[s[0] for s in SESSIONS])
def test_every_lane_session_refuses_a_lane_table_with_an_unknown_lane_before_anything_runs(
        tinyinfer: Project, argv: tuple[str, ...]) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"', '"kernels-cpu" = "gtae"')
    done = tinyinfer.nox(argv[0], extra=argv[1:], timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    relgate_lines = [line for line in output.splitlines() if line.startswith("relgate: ")]
    assert len(relgate_lines) == 2, relgate_lines
    assert relgate_lines[0].endswith('lanes.toml: lanes.kernels-cpu: unknown lane "gtae" — did you mean "gate"? '
                                     "(line 5)"), relgate_lines
    session = "soak" if argv[0] == "lane" else argv[0]
    assert relgate_lines[1].startswith(f"relgate: {session}: refused: the lane table names a lane that does not "
                                       "exist (1 problem above"), relgate_lines
    assert not tinyinfer.home.exists() or not any(tinyinfer.home.rglob("*.log"))  # nothing ran


def test_the_census_session_lists_an_unknown_lane_with_exit_1(tinyinfer: Project) -> None:
    _edit(tinyinfer, '"kernels-cpu" = "gate"', '"kernels-cpu" = "gtae"')
    done = tinyinfer.nox("census", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert any(line.startswith("unknown-lane") and "kernels-cpu" in line and 'did you mean "gate"?' in line
               for line in done.stdout.splitlines()), done.stdout


def test_relgate_check_prints_the_whole_plan(tinyinfer: Project) -> None:
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    sections = [line for line in out.splitlines() if line.startswith("nox -s ")]
    assert sections == ["nox -s host", "nox -s gate", "nox -s contract", "nox -s record  (no targets in this lane)",
                        "nox -s toolkit  (no targets in this lane)", "nox -s bench",
                        "nox -s qualification  (no targets in this lane)",
                        "nox -s lane -- quality"]  # the example's own lane: its quality scorer
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and len(line.split()) > 2}
    assert rows["lane-census"].split()[1:] == ["relgate", "census", "local"]
    assert rows["release-cpu"].endswith("local") and "make clean && make cpu" in rows["release-cpu"]
    assert rows["kernels-cpu"].endswith("local")
    assert rows["kernels-cuda"].endswith("not run: no host offers cuda") or rows["kernels-cuda"].endswith("local")
    assert "local: board " in out  # the detected facts of each host


def test_relgate_check_shows_named_lanes_and_remote_placement(scankern: Project) -> None:
    # An SSH host nothing listens for (a closed port on this machine): it has an executor, so the
    # plan places the step there; running it would be an error, within the connect timeout.
    (scankern.hosts / "gpu1.known_hosts").write_text("")
    (scankern.hosts / "gpu1.toml").write_text(
        '[host]\nname = "gpu1"\nkind = "ssh"\naddress = "127.0.0.1"\nport = 9\nknown_hosts = "gpu1.known_hosts"\n'
        'connect_timeout = 2\ncapabilities = ["cuda", "gpu"]\n')
    qual = scankern.root / "qual" / "lanes.toml"
    (scankern.manifests / "lanes.toml").write_text('[target.scan_parity]\nrequires = ["gpu"]\n')
    assert qual.is_file()
    done = scankern.relgate("check", timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "nox -s record  (runs only the targets named after --)" in out
    assert "nox -s qualification  (runs only the targets named after --)" in out
    parity = next(line for line in out.splitlines() if line.strip().startswith("scan_parity "))
    assert parity.split()[-1] == "gpu1", parity


def _shim(bin_dir: Path, tool: str, calls: Path) -> None:
    """A `tool` first on PATH that logs each call's arguments, then runs the real one."""
    real = shutil.which(tool)
    assert real is not None
    shim = bin_dir / tool
    shim.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexec "{real}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)


def _shimmed(project: Project, tmp_path: Path, *tools: str) -> tuple[dict[str, str], Path]:
    """The project's environment with logging shims of ``tools`` first on PATH, and their log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for tool in tools:
        _shim(bin_dir, tool, calls)
    return {**project.env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, calls


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH (the local host detects it)")
def test_nox_host_gate_contract_detects_the_local_host_once(tinyinfer: Project, tmp_path: Path) -> None:
    env, calls = _shimmed(tinyinfer, tmp_path, "nvcc")
    done = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "host", "gate", "contract"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    versions = [line for line in calls.read_text().splitlines() if line.strip() == "--version"]
    assert len(versions) == 1, calls.read_text()  # three sessions, one detection
    assert "Ran 3 sessions" in done.stderr or "host: success" in done.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH (the local host detects it)")
def test_listing_the_host_checks_detects_nothing(tinyinfer: Project, tmp_path: Path) -> None:
    """The sessions begin the detection early, while the engine loads, but not for --list."""
    env, calls = _shimmed(tinyinfer, tmp_path, "nvcc", "git")
    done = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "host", "--", "--list"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "release-cpu" in done.stdout + done.stderr
    assert not calls.exists(), calls.read_text()
    ran = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "host", "--", "cli-help"],
                         env=env, capture_output=True, text=True, timeout=600)  # red: nothing is built here
    assert "cli-help" in ran.stdout + ran.stderr and "Traceback" not in ran.stdout + ran.stderr
    called = calls.read_text().splitlines()
    assert called.count("--version") == 1 and any(c.startswith("-C ") and " status " in f" {c} " for c in called)


def test_the_workspace_memo_detects_once_and_rereads_dirtiness(tinyinfer: Project) -> None:
    ws = Workspace.load(tinyinfer.root, manifests=tinyinfer.manifests, hosts=tinyinfer.hosts, home=tinyinfer.home)
    first = host_pool(ws)
    second = host_pool(ws)
    assert [h.facts for h in first.hosts] == [h.facts for h in second.hosts]
    assert ws.memo.counts[("host", "local")] == 1
    clean = candidate_facts(ws)
    assert not clean.dirty
    (tinyinfer.root / "new-file").write_text("x")
    later = candidate_facts(ws)
    assert later.commit == clean.commit and later.dirty  # HEAD read once, dirtiness every run
    assert ws.memo.counts[("git", ws.project.root)] == 1


@pytest.mark.parametrize("where", ["root", "subfolder", "linked worktree", "GIT_DIR set", "core.worktree",
                                   "detached", "untracked", "staged"])
def test_one_status_says_what_rev_parse_and_status_say(tinyinfer: Project, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    from relgate.ledger.gitfacts import _plain_toplevel, _start_two

    path = tinyinfer.root
    if where == "subfolder":
        path = tinyinfer.root / "src"
    elif where == "linked worktree":
        path = tmp_path / "linked"
        git(tinyinfer.root, "worktree", "add", "-q", "-b", "other", str(path))
    elif where == "GIT_DIR set":
        monkeypatch.setenv("GIT_DIR", str(tinyinfer.root / ".git"))
    elif where == "core.worktree":
        git(tinyinfer.root, "config", "core.worktree", str(tinyinfer.root))
    elif where == "detached":
        git(tinyinfer.root, "checkout", "-q", "--detach")
    elif where == "untracked":
        (tinyinfer.root / "new-file").write_text("x")
    elif where == "staged":
        (tinyinfer.root / "README.md").write_text("changed\n")
        git(tinyinfer.root, "add", "README.md")
    one_git = where not in ("GIT_DIR set", "core.worktree")
    assert (_plain_toplevel(path) is not None) == one_git
    facts = read_git_facts(path)
    assert facts == _start_two(path)()  # rev-parse and status, as before
    assert facts.toplevel == Path(git(path, "rev-parse", "--show-toplevel").strip())
    assert facts.dirty == (where in ("untracked", "staged"))
    assert facts.branch == {"linked worktree": "other", "detached": None}.get(where, "main")


def test_git_facts_are_what_git_says(tinyinfer: Project, tmp_path: Path) -> None:
    facts = read_git_facts(tinyinfer.root / "src")
    assert facts.commit == git(tinyinfer.root, "rev-parse", "HEAD").strip()
    assert facts.branch == "main" and not facts.dirty and facts.toplevel == tinyinfer.root
    git(tinyinfer.root, "checkout", "-q", "--detach")
    assert read_git_facts(tinyinfer.root).branch is None
    (tinyinfer.root / "untracked").write_text("x")
    assert read_git_facts(tinyinfer.root).dirty
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(InputError, match="no commit yet"):
        read_git_facts(empty)
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(InputError, match="not inside a git repository"):
        read_git_facts(outside)
