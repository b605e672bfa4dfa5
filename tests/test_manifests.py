"""The table of malformed manifests: every problem is one line naming the file and the key.

The pure parse functions are tested directly with a table of (file, TOML, message); a few
representative cases also run end to end through ``relgate check`` and ``nox -s host``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Project
from relgate.core.errors import InputError, ManifestError
from relgate.core.schema import display_path, read_toml
from relgate.manifest.intentional import parse_intentional
from relgate.manifest.specs import CommandSpec, parse_builds, parse_host, parse_project
from relgate.manifest.workspace import LOCAL_HOST, Workspace

PARSERS: dict[str, Callable[..., Any]] = {
    "project.toml": parse_project, "builds.toml": parse_builds, "gpu.toml": parse_host,
    "intentional.toml": parse_intentional,
}

PROJECT_OK = '[project]\nname = "p"\nroot = "."\nkind = "make"\nversion = "1.0.0"\n'
RELEASE_OK = '[release.cpu]\nrun = "make cpu"\n'


class Prefix(str):
    """An expected message whose tail (a library's own wording) is not pinned."""


def problems(tmp_path: Path, name: str, text: str | bytes) -> list[str]:
    """Read and parse one file the way the workspace does; the one-line problems, or []."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    try:
        PARSERS[name](read_toml(path), path=path)
    except ManifestError as exc:
        assert exc.lines() == exc.problems
        return exc.problems
    except InputError as exc:
        return exc.lines()
    return []


def expected_line(tmp_path: Path, name: str, message: str) -> str:
    """``file: key: what``, or ``file:LINE:COL: …`` for a TOML syntax error."""
    shown = display_path(tmp_path / name)
    message = message.replace("{dir}", str(tmp_path.resolve()))
    return shown + message if message.startswith(":") else f"{shown}: {message}"


def has_line(lines: list[str], wanted: str, prefix: bool) -> bool:
    return any(line.startswith(wanted) if prefix else line == wanted for line in lines)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n")
    (tmp_path / "a-file").write_text("")
    return tmp_path


# (id, file name, TOML text, the one-line message after "FILE: ")
MALFORMED: list[tuple[str, str, str | bytes, str]] = [
    # TOML itself
    ("syntax-error", "builds.toml", '[release.cpu\nrun = "make"\n',
     Prefix(":1:13: TOML syntax error: ")),
    ("syntax-duplicate-key", "builds.toml", '[release.cpu]\nrun = "a"\nrun = "b"\n',
     ":3:10: TOML syntax error: Cannot overwrite a value"),
    ("syntax-at-end-of-file", "builds.toml", '[release.cpu]\nrun = "make',
     ":2:12: TOML syntax error: Unterminated string (at end of file)"),
    ("syntax-error-project", "project.toml", '[project]\nname = "p"\nversion = 1.0.0\n',
     Prefix(":3:")),
    ("not-utf8", "builds.toml", b"# caf\xe9\n", "not UTF-8 (byte 5)"),
    # project.toml
    ("project-wrong-type", "project.toml", PROJECT_OK.replace('name = "p"', "name = 3"),
     "project.name: expected a string, got the number 3"),
    ("project-empty-name", "project.toml", PROJECT_OK.replace('name = "p"', 'name = " "'),
     "project.name: must not be empty"),
    ("project-missing-required", "project.toml", PROJECT_OK.replace('kind = "make"\n', "").replace('root = "."\n', ""),
     "project.root: missing (required)"),
    ("project-empty-version", "project.toml", PROJECT_OK.replace('version = "1.0.0"', 'version = ""'),
     "project.version: must not be empty (leave it out when the project has no version)"),
    ("project-missing-table", "project.toml", "# nothing\n", "project: missing (required)"),
    ("project-unknown-key", "project.toml", PROJECT_OK + 'verison = "2"\n',
     'project.verison: unknown key — did you mean "version"?'),
    ("project-unknown-table", "project.toml", PROJECT_OK + "[projcet.extra]\n",
     'projcet: unknown key — did you mean "project"?'),
    ("project-root-missing", "project.toml", PROJECT_OK.replace('root = "."', 'root = "nope"'),
     "project.root: {dir}/nope does not exist"),
    ("project-root-not-a-dir", "project.toml", PROJECT_OK.replace('root = "."', 'root = "a-file"'),
     "project.root: {dir}/a-file is not a directory"),
    ("project-bad-kind", "project.toml", PROJECT_OK.replace('kind = "make"', 'kind = "carg"'),
     'project.kind: unknown value "carg" — did you mean "cargo"? (one of "make", "cargo", "cmake", "python")'),
    ("project-bad-evidence-env", "project.toml", PROJECT_OK + 'evidence_env = "MY-EVIDENCE"\n',
     'project.evidence_env: "MY-EVIDENCE" is not an environment variable name'),
    ("project-missing-changelog", "project.toml", PROJECT_OK + 'changelog = "NEWS.md"\n',
     "project.changelog: {dir}/NEWS.md does not exist"),
    # builds.toml: structure
    ("unknown-key", "builds.toml", '[release.x]\nrn = "make"\n',
     'release.x.rn: unknown key — did you mean "run"?'),
    ("unknown-key-missing-run", "builds.toml", '[release.x]\nrn = "make"\n', "release.x.run: missing (required)"),
    ("unknown-top-level-table", "builds.toml", '[releases.x]\nrun = "make"\n',
     'releases: unknown key — did you mean "release"?'),
    ("unknown-top-level-no-guess", "builds.toml", '[lanes]\nx = "gate"\n', "lanes: unknown key"),
    ("release-not-a-table", "builds.toml", "[release]\ncpu = 3\n", "release.cpu: expected a table, got the number 3"),
    ("check-not-an-array", "builds.toml", 'check = "x"\n', 'check: expected an array, got the string "x"'),
    # commands
    ("shell-syntax-in-argv-string", "builds.toml", '[release.x]\nrun = "make && make install"\n',
     "release.x.run: uses shell syntax; set shell = true or give an argv array"),
    ("shell-syntax-in-check", "builds.toml", '[[check]]\nname = "t"\nrun = "make test | tee log"\n',
     "check[0].run: uses shell syntax; set shell = true or give an argv array"),
    ("unbalanced-quote", "builds.toml", "[release.x]\nrun = \"make 'cpu\"\n",
     "release.x.run: cannot split into arguments: No closing quotation"),
    ("empty-command", "builds.toml", '[release.x]\nrun = "  "\n', "release.x.run: must not be empty"),
    ("argv-not-strings", "builds.toml", '[release.x]\nrun = ["make", 3]\n',
     "release.x.run: expected a non-empty array of strings"),
    ("shell-needs-a-string", "builds.toml", '[release.x]\nshell = true\nrun = ["make", "cpu"]\n',
     "release.x.run: shell = true needs the command as one string"),
    # options
    ("negative-timeout", "builds.toml", RELEASE_OK + "timeout = -5\n",
     "release.cpu.timeout: must be a positive number of seconds"),
    ("zero-timeout", "builds.toml", RELEASE_OK + "timeout = 0\n",
     "release.cpu.timeout: must be a positive number of seconds"),
    ("timeout-wrong-type", "builds.toml", RELEASE_OK + 'timeout = "10"\n',
     'release.cpu.timeout: expected an integer or a number, got the string "10"'),
    ("bad-warnings-policy", "builds.toml", RELEASE_OK + 'warnings = "dny"\n',
     'release.cpu.warnings: unknown value "dny" — did you mean "deny"? (one of "deny", "ignore")'),
    ("bad-env-name", "builds.toml", RELEASE_OK + 'env = { "1ABC" = "x" }\n',
     'release.cpu.env: "1ABC" is not an environment variable name'),
    ("env-value-not-string", "builds.toml", RELEASE_OK + "env = { JOBS = 8 }\n",
     "release.cpu.env.JOBS: expected a string, got the number 8"),
    ("requires-not-strings", "builds.toml", RELEASE_OK + 'requires = ["nvcc", 9]\n',
     "release.cpu.requires[1]: expected a string, got the number 9"),
    ("allow-without-reason", "builds.toml", RELEASE_OK + '[[release.cpu.allow]]\npattern = "Wunused"\n',
     "release.cpu.allow[0].reason: missing (required)"),
    ("allow-empty-reason", "builds.toml", RELEASE_OK + '[[release.cpu.allow]]\npattern = "W"\nreason = " "\n',
     "release.cpu.allow[0].reason: required; say why this warning is acceptable"),
    ("allow-bad-regex", "builds.toml", RELEASE_OK + '[[release.cpu.allow]]\npattern = "(unused"\nreason = "r"\n',
     Prefix("release.cpu.allow[0].pattern: bad regex '(unused': ")),
    ("allow-empty-pattern", "builds.toml", RELEASE_OK + '[[release.cpu.allow]]\npattern = ""\nreason = "r"\n',
     "release.cpu.allow[0].pattern: empty; it would allow every warning"),
    ("allow-unknown-key", "builds.toml",
     RELEASE_OK + '[[release.cpu.allow]]\npattern = "W"\nreason = "r"\nreasn = "r"\n',
     'release.cpu.allow[0].reasn: unknown key — did you mean "reason"?'),
    # checks
    ("check-two-kinds", "builds.toml", RELEASE_OK + '[[check]]\nname = "c"\nrun = "make"\nrelease = "cpu"\n',
     "check[0]: needs exactly one of run, release, matrix, builtin (has run, release)"),
    ("check-no-kind", "builds.toml", '[[check]]\nname = "c"\n',
     "check[0]: needs exactly one of run, release, matrix, builtin"),
    ("check-missing-name", "builds.toml", '[[check]]\nrun = "make"\n', "check[0].name: missing (required)"),
    ("check-unknown-release", "builds.toml", RELEASE_OK + '[[check]]\nname = "c"\nrelease = "cp"\n',
     'check[0].release: no release target "cp" — did you mean "cpu"?'),
    ("check-unknown-matrix", "builds.toml", '[[check]]\nname = "c"\nmatrix = "feature"\n',
     'check[0].matrix: no matrix "feature"'),
    ("check-bad-builtin", "builds.toml", '[[check]]\nname = "c"\nbuiltin = "git-diff-chek"\n',
     'check[0].builtin: unknown value "git-diff-chek" — did you mean "git-diff-check"? (one of "git-diff-check", "python-tests")'),
    ("check-bad-expect-output", "builds.toml", '[[check]]\nname = "c"\nrun = "x"\nexpect_output = "[a"\n',
     Prefix("check[0].expect_output: bad regular expression: ")),
    ("check-option-on-release-check", "builds.toml",
     RELEASE_OK + '[[check]]\nname = "c"\nrelease = "cpu"\ntimeout = 5\n',
     "check[0].timeout: set it on the release target or matrix this check runs"),
    ("expect-output-on-release-and-its-check", "builds.toml",
     '[release.cpu]\nrun = "make"\nexpect_output = "a"\n[[check]]\nname = "c"\nrelease = "cpu"\nexpect_output = "b"\n',
     "check[0].expect_output: release.cpu.expect_output is set already; keep one"),
    ("produces-outside-the-project", "builds.toml", '[release.cpu]\nrun = "make"\nproduces = ["../x"]\n',
     'release.cpu.produces[0]: "../x": a path or glob relative to the step\'s cwd, inside the project'),
    ("produces-on-a-matrix-check", "builds.toml",
     '[matrix.f]\nrun = "b {features}"\nfeatures = [""]\n[[check]]\nname = "c"\nmatrix = "f"\nproduces = ["x"]\n',
     "check[0].produces: a matrix check takes no expect_output or produces"),
    ("duplicate-check-names", "builds.toml", '[[check]]\nname = "t"\nrun = "a"\n[[check]]\nname = "t"\nrun = "b"\n',
     'check[1].name: duplicate check name "t"'),
    ("empty-skip-reason", "builds.toml", '[[check]]\nname = "t"\nrun = "a"\nskip = ""\n',
     "check[0].skip: needs a reason (a non-empty string)"),
    # matrices
    ("matrix-without-placeholder", "builds.toml", '[matrix.feat]\nrun = "cargo build"\nfeatures = [""]\n',
     'matrix.feat.run: needs a "{features}" placeholder'),
    ("matrix-no-features", "builds.toml", '[matrix.feat]\nrun = "cargo build -F {features}"\nfeatures = []\n',
     "matrix.feat.features: must list at least one feature set"),
    ("matrix-missing-features", "builds.toml", '[matrix.feat]\nrun = "cargo build -F {features}"\n',
     "matrix.feat.features: missing (required)"),
    # hosts/*.toml
    ("host-bad-kind", "gpu.toml", '[host]\nname = "gpu"\nkind = "sshh"\naddress = "10.0.0.2"\n',
     'host.kind: unknown value "sshh" — did you mean "ssh"? (one of "local", "ssh", "slurm")'),
    ("host-ssh-without-address", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\n',
     "host.address: an ssh host needs an address"),
    ("host-ssh-empty-address", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = ""\n',
     "host.address: an ssh host needs an address"),
    ("host-bad-port", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = "h"\nport = 70000\n',
     "host.port: 70000 is not a TCP port"),
    ("host-port-zero", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = "h"\nport = 0\n',
     "host.port: 0 is not a TCP port"),
    ("host-port-wrong-type", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = "h"\nport = "22"\n',
     'host.port: expected an integer, got the string "22"'),
    ("host-unknown-key", "gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\nadress = "h"\naddress = "h"\n',
     'host.adress: unknown key — did you mean "address"?'),
    ("host-boards-not-strings", "gpu.toml", '[host]\nname = "gpu"\nboards = ["H200", 1]\n',
     "host.boards[1]: expected a string, got the number 1"),
    ("host-missing-table", "gpu.toml", 'name = "gpu"\n', "host: missing (required)"),
    # values that parse but mean nothing (or something else) at run time
    ("timeout-nan", "builds.toml", RELEASE_OK + "timeout = nan\n",
     "release.cpu.timeout: must be a finite number of seconds, got nan"),
    ("timeout-inf", "builds.toml", RELEASE_OK + "timeout = inf\n",
     "release.cpu.timeout: must be a finite number of seconds, got inf"),
    ("project-empty-root", "project.toml", PROJECT_OK.replace('root = "."', 'root = ""'),
     "project.root: must not be empty"),
    ("project-blank-version", "project.toml", PROJECT_OK.replace('version = "1.0.0"', 'version = " "'),
     "project.version: must not be empty (leave it out when the project has no version)"),
    ("check-empty-name", "builds.toml", '[[check]]\nname = ""\nrun = "make"\n', "check[0].name: must not be empty"),
    ("check-blank-command", "builds.toml", '[[check]]\nname = "c"\nrun = "   "\n', "check[0].run: must not be empty"),
    ("check-empty-program", "builds.toml", '[[check]]\nname = "c"\nrun = ["", "x"]\n',
     "check[0].run: the program (first element) must not be empty"),
    ("host-empty-name", "gpu.toml", '[host]\nname = ""\n', "host.name: must not be empty"),
    ("host-empty-board", "gpu.toml", '[host]\nname = "gpu"\nboards = ["H200", ""]\n',
     "host.boards[1]: must not be empty"),
    ("ssh-host-named-local", "gpu.toml", '[host]\nname = "local"\nkind = "ssh"\naddress = "10.0.0.2"\n',
     "host.name: \"local\" is this machine's name; give the ssh host its own name"),
    ("intentional-no-reason", "intentional.toml", '[[change]]\nsuite = "scan"\n',
     "change[0].reason: missing (required)"),
    ("intentional-empty-reason", "intentional.toml", '[[change]]\nsuite = "scan"\nreason = " "\n',
     "change[0].reason: must say why this change is intended"),
    ("intentional-key-without-arm", "intentional.toml", '[[change]]\nsuite = "s"\nkey = "k"\nreason = "r"\n',
     "change[0].key: a key needs its arm (suite, arm, key name one cell)"),
    ("intentional-unknown-key", "intentional.toml", '[[change]]\nsuite = "s"\nreason = "r"\nbaord = "H100"\n',
     'change[0].baord: unknown key — did you mean "board"?'),
    ("intentional-unknown-table", "intentional.toml", '[[changes]]\nsuite = "s"\n',
     'changes: unknown key — did you mean "change"?'),
]


@pytest.mark.parametrize(("name", "text", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_manifest(folder: Path, name: str, text: str | bytes, message: str) -> None:
    lines = problems(folder, name, text)
    wanted = expected_line(folder, name, message)
    assert has_line(lines, wanted, isinstance(message, Prefix)), f"wanted {wanted!r} in {lines!r}"
    for line in lines:  # every problem: one line, naming the file
        assert "\n" not in line
        assert line.startswith(display_path(folder / name) + ":")


# One problem must not come back as several: (id, file, TOML, exactly these messages).
NO_CASCADE: list[tuple[str, str, str, list[str]]] = [
    ("wrong-type-is-not-also-empty", "project.toml", PROJECT_OK.replace('name = "p"', "name = 3"),
     ["project.name: expected a string, got the number 3"]),
    ("project-not-a-table", "project.toml", "project = 3\n", ["project: expected a table, got the number 3"]),
    ("project-table-missing", "project.toml", "[projct]\n",
     ['projct: unknown key — did you mean "project"?', "project: missing (required)"]),
    ("allow-entry-not-a-table", "builds.toml", RELEASE_OK + "allow = [3]\n",
     ["release.cpu.allow[0]: expected a table, got the number 3"]),
    ("check-entry-not-a-table", "builds.toml", 'check = [3, { name = "a", run = "x" }]\n',
     ["check[0]: expected a table, got the number 3"]),
    ("nameless-checks-are-not-duplicates", "builds.toml", '[[check]]\nrun = "a"\n[[check]]\nrun = "b"\n',
     ["check[0].name: missing (required)", "check[1].name: missing (required)"]),
    ("broken-release-is-not-also-unknown", "builds.toml", '[release.cpu]\nrn = "make"\n[[check]]\nname = "c"\n'
     'release = "cpu"\n',
     ['release.cpu.rn: unknown key — did you mean "run"?', "release.cpu.run: missing (required)"]),
]


@pytest.mark.parametrize(("name", "text", "messages"), [m[1:] for m in NO_CASCADE], ids=[m[0] for m in NO_CASCADE])
def test_one_problem_is_reported_once(folder: Path, name: str, text: str, messages: list[str]) -> None:
    assert problems(folder, name, text) == [expected_line(folder, name, m) for m in messages]


def test_every_problem_in_a_file_is_reported_in_order(folder: Path) -> None:
    text = (
        '[release.cpu]\nrun = "make cpu"\ntimeout = -1\n'
        '[matrix.feat]\nrun = "cargo build"\nfeatures = ["a"]\n'
        '[[check]]\nname = "c"\nrelease = "missing"\n'
        '[[check]]\nname = "c"\nrun = "x"\nskip = ""\n'
    )
    assert problems(folder, "builds.toml", text) == [expected_line(folder, "builds.toml", m) for m in (
        "release.cpu.timeout: must be a positive number of seconds",
        'matrix.feat.run: needs a "{features}" placeholder',
        'check[0].release: no release target "missing"',
        'check[1].name: duplicate check name "c"',
        "check[1].skip: needs a reason (a non-empty string)",
    )]


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_toml(tmp_path / "builds.toml")
    assert str(info.value) == f"{display_path(tmp_path / 'builds.toml')}: no such file"
    assert info.value.exit_code == 2


def test_display_path_is_relative_below_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / "m" / "builds.toml") == "m/builds.toml"
    assert display_path(Path("/elsewhere/builds.toml")) == "/elsewhere/builds.toml"


# --- what a valid manifest gives ------------------------------------------------------------


def test_the_bundled_manifests_and_host_load() -> None:
    ws = Workspace.load(REPO, environ={})
    assert ws.project.name == "tinyinfer" and ws.project.kind == "make"
    assert ws.project.root == (REPO / "examples" / "tinyinfer").resolve()
    assert ws.project.evidence_env == "TINYINFER_EVIDENCE"
    names = [c.name for c in ws.builds.checks]
    assert {"release-cpu", "unit-tests", "git-diff-check"} <= set(names) and len(names) == len(set(names))
    assert ws.builds.releases["cpu"].run == CommandSpec(argv=("make", "cpu"))
    assert ws.local_host.name == "local"


def test_a_valid_builds_file(folder: Path) -> None:
    path = folder / "builds.toml"
    path.write_text(
        '[release.cpu]\nclean = ["make", "clean"]\nrun = "make cpu"\ntimeout = 90\nenv = { CFLAGS = "-O2" }\n'
        '[[release.cpu.allow]]\npattern = "Wdeprecated"\nreason = "vendored header"\n'
        '[matrix.feat]\nrun = "cargo build -F {features}"\nfeatures = ["", "cuda"]\nplus = ["half"]\n'
        '[[check]]\nname = "m"\nmatrix = "feat"\n'
        '[[check]]\nname = "sh"\nrun = "make test | tee log"\nshell = true\nskip = "flaky on CI"\n'
    )
    spec = parse_builds(read_toml(path), path=path)
    cpu = spec.releases["cpu"]
    assert cpu.clean == CommandSpec(argv=("make", "clean"))
    assert cpu.options.timeout == 90.0 and cpu.options.env == {"CFLAGS": "-O2"}
    assert [(r.pattern, r.reason) for r in cpu.options.allow] == [("Wdeprecated", "vendored header")]
    assert cpu.options.warnings == "deny"
    assert [feats for feats, _ in spec.matrices["feat"].expand()] == ["", "half", "cuda", "cuda,half"]
    assert spec.matrices["feat"].expand()[3][1] == CommandSpec(argv=("cargo", "build", "-F", "cuda,half"))
    sh = spec.checks[1]
    assert sh.run == CommandSpec(shell="make test | tee log")
    assert sh.options.skip == "flaky on CI" and sh.options.warnings == "ignore"


def test_an_ssh_host(tmp_path: Path) -> None:
    path = tmp_path / "gpu.toml"
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "known_hosts").write_text("")
    path.write_text('[host]\nname = "h200"\nkind = "ssh"\naddress = "10.0.0.7"\nport = 2222\n'
                    'boards = ["NVIDIA H200"]\ncapabilities = ["cuda", "sm90"]\nexclusive = true\n'
                    'known_hosts = "keys/known_hosts"\nidentity = "keys/id"\npermission = "shared box"\n'
                    'connect_timeout = 3\ncommand_timeout = 600\nenv = { CUDA_VISIBLE_DEVICES = "0" }\n')
    spec = parse_host(read_toml(path), path=path)
    assert (spec.name, spec.kind, spec.address, spec.port) == ("h200", "ssh", "10.0.0.7", 2222)
    assert spec.capabilities == ("cuda", "sm90") and spec.exclusive and spec.detect  # declared facts add to detected
    assert spec.known_hosts == tmp_path / "keys" / "known_hosts" and spec.identity == str(tmp_path / "keys" / "id")
    assert (spec.permission, spec.connect_timeout, spec.command_timeout) == ("shared box", 3.0, 600.0)
    assert spec.env == {"CUDA_VISIBLE_DEVICES": "0"}


@pytest.mark.parametrize(("body", "problem"), [
    ('address = "10.0.0.7"\n', "host.known_hosts: an ssh host needs a known_hosts file (relative to this file); "
     "fill it with ssh-keyscan -p 22 10.0.0.7 after checking the fingerprint"),
    ('address = "10.0.0.7"\nknown_hosts = "nope"\n', "host.known_hosts: {dir}/nope does not exist; create it with "
     "ssh-keyscan -p 22 10.0.0.7 >> {dir}/nope after checking the fingerprint"),
    ('address = "h"\nknown_hosts = "kh"\nconnect_timeout = 0\n', "host.connect_timeout: must be a positive number of seconds"),
    ('address = "h"\nknown_hosts = "kh"\npermission = " "\n', "host.permission: needs a reason (a non-empty string)"),
    ('address = "h"\nknown_hosts = "kh"\nworkdir = "relgate"\n', 'host.workdir: "relgate" must be absolute (or start with ~) on the host'),
    ('address = "h"\nknown_hosts = "kh"\nenv = { "A-B" = "1" }\n', 'host.env: "A-B" is not an environment variable name'),
])
def test_ssh_host_keys_are_checked(tmp_path: Path, body: str, problem: str) -> None:
    (tmp_path / "kh").write_text("")
    path = tmp_path / "gpu.toml"
    path.write_text('[host]\nname = "gpu"\nkind = "ssh"\n' + body)
    with pytest.raises(ManifestError) as info:
        parse_host(read_toml(path), path=path)
    assert info.value.lines() == [f"{display_path(path)}: " + problem.format(dir=tmp_path)]


# --- the workspace: folders, several files ---------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def layout(folder: Path) -> tuple[Path, Path, Path]:
    """An empty workspace folder, and manifest and host folders elsewhere."""
    ws = folder / "ws"
    ws.mkdir()
    write(folder / "m" / "project.toml", PROJECT_OK.replace('root = "."', 'root = ".."'))
    write(folder / "m" / "builds.toml", RELEASE_OK)
    write(folder / "h" / "local.toml", '[host]\nname = "local"\nkind = "local"\n')
    return ws, folder / "m", folder / "h"


def test_env_vars_select_the_manifest_and_host_folders(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    write(hdir / "gpu1.toml", '[host]\nname = "gpu1"\nkind = "ssh"\naddress = "10.0.0.2"\nknown_hosts = "kh"\n')
    write(hdir / "kh", "")
    ws = Workspace.load(ws_dir, environ={"RELGATE_MANIFESTS": str(mdir), "RELGATE_HOSTS": str(hdir)})
    assert ws.manifests_dir == mdir.resolve() and ws.hosts_dir == hdir.resolve()
    assert ws.project.name == "p" and list(ws.builds.releases) == ["cpu"]
    assert sorted(ws.hosts) == ["gpu1", "local"]


def test_arguments_win_over_env_vars(layout: tuple[Path, Path, Path], folder: Path) -> None:
    ws_dir, mdir, hdir = layout
    with pytest.raises(InputError, match="no such manifest folder"):
        Workspace.load(ws_dir, environ={"RELGATE_MANIFESTS": str(folder / "nope"), "RELGATE_HOSTS": str(hdir)})
    ws = Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={"RELGATE_MANIFESTS": str(folder / "nope"),
                                                                     "RELGATE_HOSTS": str(folder / "nope")})
    assert ws.project.name == "p"


def test_without_a_local_host_file_the_builtin_one_is_added(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    (hdir / "local.toml").unlink()
    ws = Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert ws.hosts == {"local": LOCAL_HOST}


def test_builds_toml_is_optional(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    (mdir / "builds.toml").unlink()
    ws = Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert ws.builds.checks == () and dict(ws.builds.releases) == {}


@pytest.mark.parametrize("which", ["manifest", "host"])
def test_a_missing_folder_says_so(layout: tuple[Path, Path, Path], folder: Path, which: str) -> None:
    ws_dir, mdir, hdir = layout
    missing = folder / "missing"
    kwargs = {"manifests": missing, "hosts": hdir} if which == "manifest" else {"manifests": mdir, "hosts": missing}
    with pytest.raises(InputError) as info:
        Workspace.load(ws_dir, environ={}, **kwargs)
    assert info.value.lines() == [f"{display_path(missing)}: no such {which} folder"]
    assert info.value.exit_code == 2


def test_a_missing_project_file_says_so(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    (mdir / "project.toml").unlink()
    with pytest.raises(ManifestError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert info.value.lines() == [f"{display_path(mdir / 'project.toml')}: no such file"]


def test_a_symlink_loop_named_lanes_toml_is_an_error_not_a_skipped_census(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    (mdir / "lanes.toml").symlink_to(mdir / "lanes.toml")
    with pytest.raises(InputError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert info.value.lines() == [f"{display_path(mdir / 'lanes.toml')}: not a file (the lane table is a TOML file)"]


def test_a_symlink_loop_for_project_toml_is_one_line(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    (mdir / "project.toml").unlink()
    (mdir / "project.toml").symlink_to(mdir / "loop.toml")
    (mdir / "loop.toml").symlink_to(mdir / "project.toml")
    with pytest.raises(InputError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert info.value.lines() == [f"{mdir / 'project.toml'}: a symlink loop, not a file"]


def test_lane_targets_refuse_blank_commands_and_nan_timeouts(tmp_path: Path) -> None:
    from relgate.core.schema import Checker
    from relgate.manifest.lanes import _parse_target

    c = Checker(tmp_path / "lanes.toml")
    _parse_target(c, "t", {"path": "tests/t.c", "command": "  ", "timeout": float("nan")})
    _parse_target(c, "u", {"path": "tests/u.c", "command": [" "]})
    shown = display_path(tmp_path / "lanes.toml")
    assert c.problems == [f"{shown}: target.t.command: empty; say the command that runs this target",
                          f"{shown}: target.t.timeout: must be a finite number of seconds, got nan",
                          f"{shown}: target.u.command: expected a non-empty array of strings (or one string with "
                          "shell = true)"]


def test_duplicate_host_names_across_files(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    write(hdir / "a.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = "10.0.0.1"\nknown_hosts = "kh"\n')
    write(hdir / "b.toml", '[host]\nname = "gpu"\nkind = "ssh"\naddress = "10.0.0.2"\nknown_hosts = "kh"\n')
    write(hdir / "kh", "")
    with pytest.raises(ManifestError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert info.value.lines() == [
        f'{display_path(hdir / "b.toml")}: host.name: duplicate host "gpu" (also in {display_path(hdir / "a.toml")})'
    ]


def test_problems_in_every_file_are_reported_together(layout: tuple[Path, Path, Path]) -> None:
    ws_dir, mdir, hdir = layout
    write(mdir / "project.toml", PROJECT_OK.replace('kind = "make"', 'kind = "carg"').replace('"."', '".."'))
    write(mdir / "builds.toml", "[release.cpu\n")
    write(hdir / "gpu.toml", '[host]\nkind = "ssh"\n')
    with pytest.raises(ManifestError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    lines = info.value.lines()
    assert len(lines) == 3
    assert lines[0].startswith(display_path(mdir / "project.toml") + ": project.kind: ")
    assert lines[1].startswith(display_path(mdir / "builds.toml") + ":1:13: TOML syntax error")
    assert lines[2] == f"{display_path(hdir / 'gpu.toml')}: host.address: an ssh host needs an address"


# --- end to end: relgate check, nox -s host ---------------------------------------------------

# (id, file under the fixture's manifests/ or hosts/ folder, text to write, expected lines as
# (file name, what the line says after it))
END_TO_END = [
    ("syntax-error", "manifests/builds.toml", '[release.cpu\nrun = "make cpu"\n',
     [("builds.toml", ":1:13: TOML syntax error: ")]),
    ("unknown-key", "manifests/builds.toml", '[release.cpu]\nrn = "make cpu"\n[[check]]\nname = "c"\nrelease = "cpu"\n',
     [("builds.toml", ': release.cpu.rn: unknown key — did you mean "run"?'),
      ("builds.toml", ": release.cpu.run: missing (required)")]),
    ("missing-root", "manifests/project.toml",
     '[project]\nname = "t"\nroot = "no-such-dir"\nkind = "make"\nversion = "1"\n',
     [("project.toml", ": project.root: ")]),
    ("bad-host", "hosts/gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\nport = 99999\n',
     [("gpu.toml", ": host.address: an ssh host needs an address"),
      ("gpu.toml", ": host.port: 99999 is not a TCP port")]),
]


def plant(project: Project, relpath: str, text: str) -> Path:
    base = project.manifests if relpath.startswith("manifests/") else project.hosts
    return write(base / relpath.split("/", 1)[1], text)


def assert_one_line_per_problem(stderr: str, expected: list[tuple[str, str]]) -> None:
    lines = stderr.splitlines()
    assert len(lines) == len(expected), stderr
    for line, (fname, says) in zip(lines, expected):
        assert line.startswith("relgate: "), line
        assert f"{fname}{says}" in line, (line, fname, says)


@pytest.mark.parametrize(("relpath", "text", "expected"), [e[1:] for e in END_TO_END], ids=[e[0] for e in END_TO_END])
def test_relgate_check_reports_malformed_manifests(tinyinfer: Project, relpath: str, text: str,
                                                   expected: list[tuple[str, str]]) -> None:
    plant(tinyinfer, relpath, text)
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert_one_line_per_problem(done.stderr, expected)
    if relpath.endswith("project.toml"):
        assert "no-such-dir does not exist" in done.stderr


def test_relgate_check_with_valid_manifests_lists_what_would_run(tinyinfer: Project) -> None:
    write(tinyinfer.hosts / "gpu1.toml", '[host]\nname = "gpu1"\nkind = "ssh"\naddress = "10.0.0.2"\n'
                                          'known_hosts = "kh"\n')
    write(tinyinfer.hosts / "kh", "")
    done = tinyinfer.relgate("check", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "project tinyinfer 0.3.0 (make)" in done.stdout
    assert "hosts: gpu1, local" in done.stdout  # RELGATE_HOSTS picked the fixture's folder
    assert any("release-cpu" in line and "make cpu" in line for line in done.stdout.splitlines())


def test_manifests_argument_wins_over_the_env_var(tinyinfer: Project, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other / "project.toml", (tinyinfer.manifests / "project.toml").read_text().replace(
        'name = "tinyinfer"', 'name = "other-project"'))
    plant(tinyinfer, "manifests/builds.toml", "[broken\n")  # the env var's folder is broken
    done = tinyinfer.relgate("--manifests", str(other), "check", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "project other-project 0.3.0" in done.stdout


def test_relgate_check_with_a_missing_manifest_folder(tinyinfer: Project, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = tinyinfer.relgate("--manifests", str(missing), "check", timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"relgate: {missing}: no such manifest folder\n"


def test_nox_host_with_a_malformed_manifest_exits_2_without_a_traceback(tinyinfer: Project) -> None:
    plant(tinyinfer, "manifests/builds.toml", '[release.cpu]\nrn = "make cpu"\n')
    plant(tinyinfer, "hosts/gpu.toml", '[host]\nname = "gpu"\nkind = "ssh"\n')
    done = tinyinfer.nox("host", timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    relgate_lines = [line for line in output.splitlines() if line.startswith("relgate: ")]
    assert_one_line_per_problem("\n".join(relgate_lines), [
        ("builds.toml", ': release.cpu.rn: unknown key — did you mean "run"?'),
        ("builds.toml", ": release.cpu.run: missing (required)"),
        ("gpu.toml", ": host.address: an ssh host needs an address"),
    ])
    assert not tinyinfer.home.exists() or not any(tinyinfer.home.rglob("*.log"))  # nothing ran


def test_relgate_cli_module_runs_from_elsewhere(tinyinfer: Project, tmp_path: Path) -> None:
    """``python -m relgate.cli --manifests DIR --hosts DIR`` from an unrelated cwd."""
    plant(tinyinfer, "manifests/builds.toml", '[release.cpu]\nrun = "make cpu"\ntimeout = -1\n')
    done = subprocess.run(
        [sys.executable, "-m", "relgate.cli", "--manifests", str(tinyinfer.manifests), "--hosts",
         str(tinyinfer.hosts), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == "relgate: manifests/builds.toml: release.cpu.timeout: must be a positive number of seconds\n"


def test_a_project_without_a_changelog_or_a_version_validates(tmp_path: Path) -> None:
    """The C engine keeps neither: both are optional; each default is documented in the README."""
    from relgate.manifest.specs import parse_project

    (tmp_path / "engine").mkdir()
    path = tmp_path / "project.toml"
    spec = parse_project({"project": {"name": "ds4", "root": "engine", "kind": "make"}}, path=path)
    assert spec.version is None and spec.changelog is None and spec.evidence_env == "RELGATE_EVIDENCE"
    (tmp_path / "engine" / "CHANGELOG.md").write_text("# changes\n")
    spec = parse_project({"project": {"name": "ds4", "root": "engine", "kind": "make"}}, path=path)
    assert spec.changelog == tmp_path / "engine" / "CHANGELOG.md"  # the default, when the project keeps one
    with pytest.raises(ManifestError, match="project.changelog: .*NEWS.md does not exist"):
        parse_project({"project": {"name": "ds4", "root": "engine", "kind": "make", "changelog": "NEWS.md"}},
                      path=path)


# --- inputs that must never be accepted (issue 23): versions, names, seconds, paths, depth ------

PY_PROJECT = '[project]\nname = "p"\nroot = "."\nkind = "python"\nversion = "{v}"\n'
CARGO_PROJECT = '[project]\nname = "p"\nroot = "."\nkind = "cargo"\nversion = "{v}"\n'
MAKE_PROJECT = '[project]\nname = "p"\nroot = "."\nkind = "make"\nversion = "{v}"\n'
DEEP = "x = " + "[" * 3000 + "]" * 3000 + "\n"

INPUTS: list[tuple[str, str, str, str]] = [
    # a version for the project's kind
    ("python-version", "project.toml", PY_PROJECT.format(v="1.0.0-garbage!"),
     'project.version: "1.0.0-garbage!" is not a PEP 440 version (e.g. 1.2.0, 1.2.0rc1, 1.2.0.post1)'),
    ("python-version-spaces", "project.toml", PY_PROJECT.format(v=" 1.0 "), 'project.version: " 1.0 " has spaces'),
    ("cargo-version", "project.toml", CARGO_PROJECT.format(v="1.0"),
     'project.version: "1.0" is not a semver version (MAJOR.MINOR.PATCH, e.g. 0.4.0 or 1.0.0-rc.1), as cargo needs'),
    ("cargo-version-leading-zero", "project.toml", CARGO_PROJECT.format(v="01.2.3"),
     'project.version: "01.2.3" is not a semver version'),
    ("make-version-escape", "project.toml", MAKE_PROJECT.format(v="1.0\\u001b[2K"),
     'project.version: "1.0\\x1b[2K" is not a printable version string'),
    # names, wherever a manifest declares one
    ("project-name-nul", "project.toml", PROJECT_OK.replace('name = "p"', 'name = "p\\u0000"'),
     'project.name: "p\\x00" is not a name: it holds a NUL byte (character 2: \\x00)'),
    ("release-slash", "builds.toml", '[release."cpu/../x"]\nrun = "make"\n',
     'release."cpu/../x": "cpu/../x" is not a name: it holds "/" (a name is never a path) (character 4: /)'),
    ("matrix-dotdot", "builds.toml", '[matrix."a..b"]\nrun = "x {features}"\nfeatures = [""]\n',
     'matrix."a..b": "a..b" is not a name: it holds ".."'),
    ("check-newline", "builds.toml", '[[check]]\nname = "ok\\nPASS release"\nrun = "true"\n',
     'check[0].name: "ok\\nPASS release" is not a name: it holds a line break (character 3: \\n)'),
    ("check-bidi", "builds.toml", '[[check]]\nname = "gate\\u202e"\nrun = "true"\n',
     'check[0].name: "gate\\u202e" is not a name: it holds a bidirectional-text control (it reorders what a '
     'reader sees) (character 5: \\u202e)'),
    ("check-escape", "builds.toml", '[[check]]\nname = "a\\u001b[31m"\nrun = "true"\n',
     'check[0].name: "a\\x1b[31m" is not a name: it holds a control character (character 2: \\x1b)'),
    ("release-too-long", "builds.toml", f'[release.{"r" * 201}]\nrun = "make"\n',
     f'release."{"r" * 60}…": "{"r" * 60}…" is not a name: 201 characters long (200 at most)'),
    ("host-name-bidi", "gpu.toml", '[host]\nname = "gpu\\u2066"\nkind = "local"\n',
     'host.name: "gpu\\u2066" is not a name: it holds a bidirectional-text control'),
    ("host-board-slash", "gpu.toml", '[host]\nname = "gpu"\nkind = "local"\nboards = ["H100/80G"]\n',
     'host.boards[0]: "H100/80G" is not a name: it holds "/"'),
    # seconds out of range
    ("timeout-zero", "builds.toml", RELEASE_OK + "timeout = 0\n",
     "release.cpu.timeout: must be a positive number of seconds"),
    ("timeout-inf", "builds.toml", RELEASE_OK + "timeout = inf\n",
     "release.cpu.timeout: must be a finite number of seconds, got inf"),
    ("timeout-absurd", "builds.toml", RELEASE_OK + "timeout = 1e300\n",
     "release.cpu.timeout: 1e+300 seconds is past 2592000 (30 days): not a timeout"),
    ("host-timeout-nan", "gpu.toml", '[host]\nname = "gpu"\nkind = "local"\nconnect_timeout = nan\n',
     "host.connect_timeout: must be a finite number of seconds, got nan"),
    ("host-lock-wait-negative", "gpu.toml", '[host]\nname = "gpu"\nkind = "local"\nlock_wait = -1\n',
     "host.lock_wait: must be a positive number of seconds (or 0)"),
    # cwd: inside the project root (whether it exists is the workspace's check, below)
    ("cwd-absolute", "builds.toml", RELEASE_OK + 'cwd = "/tmp"\n',
     'release.cpu.cwd: "/tmp" is absolute; give a path relative to the project root'),
    ("cwd-dotdot", "builds.toml", '[[check]]\nname = "c"\nrun = "true"\ncwd = "src/../../.."\n',
     'check[0].cwd: "src/../../.." leaves the project root ("..")'),
    # a value nested deeper than the parser can go: one line, not a RecursionError traceback
    ("deeply-nested", "builds.toml", DEEP,
     "a value is nested too deeply to read (arrays or inline tables inside each other hundreds of levels deep)"),
]


@pytest.mark.parametrize(("name", "text", "message"), [m[1:] for m in INPUTS], ids=[m[0] for m in INPUTS])
def test_inputs_that_must_never_be_accepted(folder: Path, name: str, text: str, message: str) -> None:
    lines = problems(folder, name, text)
    wanted = expected_line(folder, name, message)
    assert any(line.startswith(wanted) for line in lines), f"wanted {wanted!r} in {lines!r}"
    for line in lines:
        assert "\n" not in line and line.isprintable(), line  # one line; nothing that forges or reorders text
        assert line.startswith(display_path(folder / name) + ":")


@pytest.mark.parametrize("kind,version", [("python", "1.2.0rc1"), ("python", "2024.1.post3"), ("cargo", "0.4.0"),
                                          ("cargo", "1.0.0-rc.1+build.5"), ("make", "v3 (beta)")])
def test_versions_of_each_kind_that_are_accepted(folder: Path, kind: str, version: str) -> None:
    text = PROJECT_OK.replace('kind = "make"', f'kind = "{kind}"').replace('"1.0.0"', f'"{version}"')
    assert problems(folder, "project.toml", text) == []


def test_the_name_rule_is_one_declarative_definition_exportable_as_json_schema() -> None:
    import re

    import jsonschema

    from relgate.core.schema import NAME

    schema = NAME.json_schema()
    assert schema["maxLength"] == 200 and schema["minLength"] == 1
    for good in ("release-cpu", "scan_parity", "NVIDIA H200", "host:local", "features[cuda]"):
        assert NAME.problem(good) is None and re.match(NAME.pattern, good)
        jsonschema.validate(good, schema)
    for bad in ("a/b", "a..b", "x" * 201, "a\u202eb", "a\x00b", "a\x1bb", "a\u2028b", ""):
        assert NAME.problem(bad) is not None and not re.match(NAME.pattern, bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def _lanes_layout(layout: tuple[Path, Path, Path], lanes: str) -> tuple[Path, Path, Path]:
    ws_dir, mdir, hdir = layout
    write(mdir / "lanes.toml", lanes)
    return ws_dir, mdir, hdir


@pytest.mark.parametrize("lanes,message", [
    ('[lanes]\n"t\\u202e" = "gate"\n[target."t\\u202e"]\ncommand = "true"\n',
     'lanes."t\\u202e": "t\\u202e" is not a name: it holds a bidirectional-text control'),
    ('[lanes]\nt = "soak"\n[target.t]\ncommand = "true"\n[lane."so/ak"]\ndescription = "d"\n',
     'lane."so/ak": "so/ak" is not a name: it holds "/"'),
    ('[lanes]\nt = "gate"\n[target.t]\ncommand = "true"\npath = "/etc/passwd"\n',
     'target.t.path: "/etc/passwd" is absolute; give a path relative to the project root'),
    ('[lanes]\nt = "gate"\n[target.t]\ncommand = "true"\npath = "../../outside.c"\n',
     'target.t.path: "../../outside.c" leaves the project root ("..")'),
    ('[lanes]\nt = "gate"\n[target.t]\ncommand = "true"\ntimeout = 1e12\n',
     "target.t.timeout: 1e+12 seconds is past 2592000 (30 days): not a timeout"),
    ("[lanes]\nt = " + "[" * 3000 + "]" * 3000 + "\n",
     "a value is nested too deeply to read"),
], ids=["target-bidi", "lane-slash", "path-absolute", "path-outside", "timeout-absurd", "deep"])
def test_lanes_file_names_paths_and_depth(layout: tuple[Path, Path, Path], lanes: str, message: str) -> None:
    ws_dir, mdir, hdir = _lanes_layout(layout, lanes)
    with pytest.raises(InputError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    shown = display_path(mdir / "lanes.toml")
    assert any(line.startswith(f"{shown}: {message}") for line in info.value.lines()), info.value.lines()
    assert all("\n" not in line and line.isprintable() for line in info.value.lines())


@pytest.mark.parametrize("cwd,says", [("missing", "does not exist"), ("a-file", "is not a folder"),
                                      ("escape", "outside the project root")])
def test_a_cwd_that_is_missing_or_resolves_outside_the_root_is_refused(layout: tuple[Path, Path, Path],
                                                                       folder: Path, cwd: str, says: str) -> None:
    ws_dir, mdir, hdir = layout
    (folder / "escape").symlink_to(folder.parent)  # inside the root by name, outside by where it leads
    write(mdir / "builds.toml", RELEASE_OK + f'cwd = "{cwd}"\n')
    with pytest.raises(ManifestError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    assert len(info.value.lines()) == 1, info.value.lines()
    line = info.value.lines()[0]
    assert line.startswith(f"{display_path(mdir / 'builds.toml')}: release.cpu.cwd: ") and says in line, line


def test_a_missing_package_fixture_is_found_at_load(layout: tuple[Path, Path, Path], folder: Path) -> None:
    ws_dir, mdir, hdir = layout
    write(mdir / "package.toml", '[package]\nfixtures = ["a-file", "tests/data/golden.bin", "data/*.bin"]\n')
    with pytest.raises(ManifestError) as info:
        Workspace.load(ws_dir, manifests=mdir, hosts=hdir, environ={})
    shown = display_path(mdir / "package.toml")
    assert info.value.lines() == [
        f"{shown}: package.fixtures[1]: {folder.resolve() / 'tests/data/golden.bin'} does not exist (every package "
        "must hold it)",
        f'{shown}: package.fixtures[2]: "data/*.bin" matches no file under {folder.resolve()} (every package must '
        "hold it)"]


def test_relgate_check_refuses_a_hostile_name_and_a_missing_fixture_and_runs_nothing(tinyinfer: Project) -> None:
    write(tinyinfer.manifests / "package.toml", '[package]\nfixtures = ["tests/data/none.bin"]\n')
    with open(tinyinfer.manifests / "builds.toml", "a") as fh:
        fh.write('\n[[check]]\nname = "evil\\nrelease-cpu  pass"\nrun = ["touch", "ran"]\n')
    for done in (tinyinfer.relgate("check", timeout=120), tinyinfer.relgate("host", timeout=120)):
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 2 and "Traceback" not in done.stderr, done.stderr
        assert "package.toml: package.fixtures[0]: " in lines[1] and "tests/data/none.bin does not exist" in lines[1]
        assert 'builds.toml: check[' in lines[0] and '.name: "evil\\nrelease-cpu  pass" is not a name' in lines[0]
    assert not (tinyinfer.root / "ran").exists() and not tinyinfer.home.exists()


def test_a_make_project_without_builds_toml_says_what_it_skipped(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "builds.toml").unlink()
    done = tinyinfer.relgate("host", timeout=300)
    assert "Traceback" not in done.stderr
    rows = tinyinfer.ledger_rows(timeout=120)
    assert rows["host-checks"]["verdict"] == "not-run", rows
    assert rows["host-checks"]["reason"].startswith("no builds.toml in "), rows["host-checks"]
    assert "host-checks" in done.stdout and "no builds.toml" in done.stdout
    strict = tinyinfer.relgate("host", "--require-all", timeout=300)
    assert strict.returncode == 1, strict.stdout  # a skipped manifest is never a green --require-all


def test_a_cargo_project_without_a_lanes_file_has_no_census_and_says_so(scankern: Project) -> None:
    project_toml = scankern.manifests / "project.toml"
    project_toml.write_text("\n".join(line for line in project_toml.read_text().splitlines()
                                      if not line.startswith("lanes")) + "\n")
    (scankern.manifests / "builds.toml").write_text('[[check]]\nname = "quick"\nrun = ["true"]\n')
    for optional in ("checklist.toml", "measurements.toml"):  # they name lane targets
        (scankern.manifests / optional).unlink()
    done = scankern.relgate("host", timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    rows = scankern.ledger_rows(timeout=120)
    census = rows["lane-census"]
    assert census["verdict"] == "not-run" and census["reason"].startswith("no lanes file"), census
    assert rows["quick"]["verdict"] == "pass"
    assert "host-checks" not in rows  # a builds.toml is there
    check = scankern.relgate("check", timeout=120)
    assert check.returncode == 0, check.stderr
    assert any("lane-census" in line and "not run: no lanes file" in line for line in check.stdout.splitlines()), \
        check.stdout


def test_checklist_item_ids_go_through_the_name_rule(tmp_path: Path) -> None:
    from relgate.manifest.checklist import parse_checklist

    data = {"release": {"version": "1.0.0", "boards": ["host:local"]},
            "item": [{"id": "a" * 201, "title": "t", "manual": True}, {"id": "x..y", "title": "t", "manual": True}]}
    with pytest.raises(ManifestError) as info:
        parse_checklist(data, path=tmp_path / "checklist.toml")
    shown = display_path(tmp_path / "checklist.toml")
    assert [line.split(" is not a name: ")[1] for line in info.value.lines()] == [
        "201 characters long (200 at most)", 'it holds ".."']
    assert all(line.startswith(f"{shown}: item[") for line in info.value.lines())


def test_the_seconds_rule_exports_as_json_schema_and_agrees_with_the_checker(tmp_path: Path) -> None:
    import jsonschema

    from relgate.core.schema import Checker, seconds_json_schema

    for zero in (False, True):
        schema = seconds_json_schema(zero=zero)
        for value in (0, 0.5, 600, 2592000, 2592001, -1, 1e300):
            c = Checker(tmp_path / "x.toml")
            accepted = c.seconds({"t": value}, "", "t", zero=zero) is not None
            try:
                jsonschema.validate(value, schema)
                valid = True
            except jsonschema.ValidationError:
                valid = False
            assert accepted == valid, (zero, value, c.problems)
