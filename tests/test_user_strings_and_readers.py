"""Hostile probes, round four (issue 36): forged sign-off documents (the input rule for user
strings, verify-signoff's content checks) and inputs with no end (FIFOs, devices, directories,
sparse files, lines with no end). Real relgate processes, a real git repository of the C
example, real make/gcc runs, real ssh-keygen signatures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_evidence_captures import _cells
from test_signoff import BASELINE, BOARD, CHECKLIST, SPEED, _csv, _ok

from conftest import Project, git

HOSTILE = [
    ("newline", "alice\n**Verdict: complete.**", "a line break"),
    ("carriage-return", "ok\r| forged | passed |", "a line break"),
    ("ansi", "bob\x1b[2K\x1b[1Gcomplete", "an ANSI escape"),
    ("bidi", "eve\u202egnissap", "a bidirectional-text control"),
    ("nel", "x\x85## 9.9.9", "a line break"),
    ("nul", "x\x00y", "a control character"),
]


@pytest.fixture
def project(tinyinfer: Project) -> Project:
    (tinyinfer.manifests / "checklist.toml").write_text(CHECKLIST.format(board=BOARD))
    (tinyinfer.manifests / "measurements.toml").write_text(SPEED.format())
    return tinyinfer


def _run(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """relgate with arguments that may hold any character but NUL (argv cannot)."""
    return project.relgate(*args)


@pytest.mark.parametrize("name,value,what", [h for h in HOSTILE if "\x00" not in h[1]], ids=[h[0] for h in HOSTILE
                                                                                               if "\x00" not in h[1]])
@pytest.mark.parametrize("command", [
    ("attest", "ci-green", "--by", "{v}"),
    ("attest", "ci-green", "--by", "alice", "--note", "{v}"),
    ("skip", "cuda", "--reason", "{v}"),
    ("skip", "cuda", "--reason", "fine", "--by", "{v}"),
    ("run", "--item", "ci-green", "--note", "{v}", "--", "true"),
], ids=["attest-by", "attest-note", "skip-reason", "skip-by", "run-note"])
def test_a_typed_string_with_a_line_break_or_an_escape_is_refused_naming_the_option(
        project: Project, command: tuple[str, ...], name: str, value: str, what: str) -> None:
    args = [a.replace("{v}", value) for a in command]
    option = next(a for a in command if a.startswith("--") and command[command.index(a) + 1] == "{v}")
    done = _run(project, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"relgate: {option}: holds {what}" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and value not in done.stderr  # the value itself is not echoed raw
    assert not (project.home / "ledger.sqlite3").exists() or _decisions(project) == 0


def _decisions(project: Project) -> int:
    import sqlite3

    with sqlite3.connect(project.home / "ledger.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]


def test_markdown_typed_on_one_line_stays_text_in_every_document(project: Project) -> None:
    """One line, but Markdown: the emphasis, the table pipe and the HTML tag are escaped, so no
    verdict, cell or tag appears that relgate did not write."""
    forged = "ok **Verdict: complete.** Nothing blocks. | passed | <script>x</script> [a](javascript:x)"
    _ok(project.relgate("attest", "ci-green", "--by", "Mallory <m@x> | **boss**", "--note", forged))
    _ok(project.relgate("skip", "cuda", "--reason", forged), 0)
    done = project.relgate("signoff", "--out", str(project.home / "so"))
    assert done.returncode == 1, done.stdout + done.stderr  # incomplete: nothing ran
    md = (project.home / "so" / "signoff.md").read_text()
    section = (project.home / "so" / "changelog-section.md").read_text()
    for text in (md, section):
        assert "**Verdict: complete.**" not in text
        assert "<script>" not in text and "| passed |" not in text and "](javascript" not in text
    assert "\\*\\*Verdict: complete.\\*\\*" in md and "&lt;" not in md  # escaped as Markdown, shown as typed
    assert md.count("**Verdict:") == 1 and "**Verdict: incomplete**" in md
    table = [ln for ln in md.splitlines() if ln.startswith("| `cuda`")]
    assert len(table) == 1 and table[0].count(" | ") == 3  # four cells: the pipe typed in the reason is escaped
    doc = json.loads((project.home / "so" / "signoff.json").read_text())
    assert doc["complete"] is False


@pytest.mark.parametrize("key,value,where", [
    ("title", "CI is green\n\n# Verdict: complete", "item[2].title"),
    ("title", "CI\u202e green", "item[2].title"),
    ("version", "0.3.0\n## 9.9.9", "release.version"),
    ("version", "0.3.0\x1b[8m", "release.version"),
    ("not_validated", "CUDA not validated.\r\nNothing blocks.", "item[1].not_validated"),
], ids=["title-newline", "title-bidi", "version-heading", "version-ansi", "not-validated-crlf"])
def test_a_checklist_string_with_a_line_break_or_an_escape_is_refused_at_check(project: Project, key: str,
                                                                               value: str, where: str) -> None:
    text = CHECKLIST.format(board=BOARD)
    encoded = json.dumps(value)  # a TOML basic string: the JSON escapes are TOML's
    if key == "title":
        text = text.replace('title = "CI is green"', f"title = {encoded}")
    elif key == "version":
        text = text.replace("[release]\n", f"[release]\nversion = {encoded}\n")
    else:
        text = text.replace('not_validated = "CUDA was not validated for this release."', f"not_validated = {encoded}")
    (project.manifests / "checklist.toml").write_text(text)
    done = project.relgate("check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"checklist.toml: {where}: " in done.stderr and "one line of plain text" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_project_version_with_a_line_break_is_refused(project: Project) -> None:
    path = project.manifests / "project.toml"
    path.write_text(path.read_text().replace('version = "0.3.0"', 'version = "0.3.0\\n## 9.9.9"'))
    done = project.relgate("check")
    assert done.returncode == 2 and "project.version: " in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("args,message", [
    (("--board", "b\x1b[31mred"), "measure add --board: holds an ANSI escape"),
    (("--board", "../../x"), 'measure add --board: "../../x" is not a name'),
    (("--board", "a\nb"), "measure add --board: holds a line break"),
    (("--board", BOARD, "--release", "1.0\n## 9.9.9"), "measure add --release: holds a line break"),
    (("--board", BOARD, "--release", "../../etc"), "is not a name"),
    (("--board", BOARD, "--meta", "note=a\rb"), "measure add --meta note: holds a line break"),
    (("--board", BOARD, "--meta", "k\x1b=v"), "holds an ANSI escape"),
    (("--board", BOARD, "--meta", f"board=OTHER"), "measure add --meta board=OTHER: relgate fills board itself "
                                                   "(--board names the board)"),
    (("--board", BOARD, "--meta", "release=9.9.9"), "relgate fills release itself"),
], ids=["board-ansi", "board-path", "board-newline", "release-newline", "release-path", "meta-cr", "meta-key-esc",
        "meta-board", "meta-release"])
def test_measure_add_refuses_hostile_board_release_and_meta(project: Project, tmp_path: Path,
                                                           args: tuple[str, ...], message: str) -> None:
    base = _csv(tmp_path, "base.csv", BASELINE.format(p=1000, g=50, p2=800, g2=40))
    side = () if "--release" in args else ("--release", "0.2.0")
    done = project.relgate("measure", "add", "speed", str(base), *args, *side, "--meta", "driver=1",
                           "--meta", "dtype=f16")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("release", ["../../x", "1.0\n## 9.9.9", "1.0\x1b[2K"])
def test_evidence_accept_refuses_a_hostile_release(project: Project, release: str) -> None:
    done = project.relgate("evidence", "accept", "--release", release)
    assert done.returncode == 2 and "evidence accept --release: " in done.stderr, done.stdout + done.stderr


def test_evidence_diff_shows_cr_and_ansi_as_escapes(tmp_path: Path) -> None:
    base = tmp_path / "base.tsv"
    cand = tmp_path / "cand.tsv"
    base.write_bytes(b"s\ta\tk\t1\n")
    forged = "2\r0 identical, 0 moved, 0 only in base, 0 only in candidate\x1b[K"
    cand.write_bytes(f"s\ta\tk\t{forged}\ns\x1b[31m\ta\tk2\tv\u202e\n".encode())
    done = subprocess.run([sys.executable, "-m", "relgate.cli", "evidence", "diff", str(base), str(cand)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\r" not in done.stdout and "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert "MOVED s / a / k | 1 -> 2\\r0 identical" in done.stdout
    assert "ONLY-CANDIDATE s\\x1b[31m / a / k2 | v\\u202e" in done.stdout
    assert done.stdout.splitlines()[-1] == "0 identical, 1 moved, 0 only in base, 1 only in candidate"


# --- verify-signoff checks what was signed, not only the signature ------------------------------------

needs_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                  reason="ssh-keygen is not on PATH (apt-get install -y openssh-client)")


def _signer(tmp_path: Path) -> tuple[Path, Path]:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "re", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("re@example.invalid " + (tmp_path / "id_ed25519.pub").read_text())
    return key, allowed


def _signed(tmp_path: Path, key: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "relgate-signoff", str(path)],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return path


def _doc(**over: object) -> bytes:
    doc = {"project": "tinyinfer", "version": "0.3.0", "commit": "a" * 40, "dirty": False, "complete": True,
           "same_tree": ["a" * 40], "items": [{"id": "cpu", "status": "passed"}], **over}
    return json.dumps(doc).encode()


def _verify(path: Path, allowed: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relgate.cli", "verify-signoff", str(path), "--allowed-signers",
                           str(allowed), *more], capture_output=True, text=True, timeout=120)


@needs_keygen
def test_verify_signoff_checks_the_content(tmp_path: Path) -> None:
    key, allowed = _signer(tmp_path)
    good = _signed(tmp_path, key, "good.json", _doc())
    done = _verify(good, allowed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "good signature by re@example.invalid" in done.stdout and "complete: true" in done.stdout
    assert _verify(good, allowed, "--commit", "a" * 12).returncode == 0
    other = _verify(good, allowed, "--commit", "b" * 40)
    assert other.returncode == 1 and f"it signs off commit {'a' * 12}, not {'b' * 40}" in other.stdout
    # signed, but it says it is not complete / dirty / has an open item: 1
    for name, data, why in [("false.json", _doc(complete=False), '"complete": false'),
                            ("dirty.json", _doc(dirty=True), "dirty tree"),
                            ("open.json", _doc(items=[{"id": "ci", "status": "missing"}]), "open items: ci (missing)")]:
        done = _verify(_signed(tmp_path, key, name, data), allowed)
        assert done.returncode == 1 and why in done.stdout, (name, done.stdout, done.stderr)
    # signed, but not a sign-off at all: bad input, 2
    for name, data, why in [("text.json", b"hello, this is not JSON\n", "not JSON"),
                            ("list.json", b"[1, 2]\n", "a JSON list, not an object"),
                            ("shape.json", json.dumps({"complete": True}).encode(), '"project" is missing'),
                            ("sha.json", _doc(commit="HEAD"), "no full commit sha"),
                            ("str.json", _doc(complete="true"), '"complete" is a str, not bool')]:
        done = _verify(_signed(tmp_path, key, name, data), allowed)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert why in done.stderr and "Traceback" not in done.stderr, (name, done.stderr)


# --- inputs with no end: every reader refuses what is not a regular file, and caps what it reads ------


def _specials(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as fh:
        fh.truncate(2 << 30)  # 2 GiB of nothing: no line end in it
    (tmp_path / "adir").mkdir()
    return {"fifo": fifo, "dev-zero": Path("/dev/zero"), "sparse": sparse, "dir": tmp_path / "adir"}


KINDS = {"fifo": "a FIFO (named pipe)", "dev-zero": "a character device", "sparse": "over the",
         "dir": "directory"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_evidence_diff_refuses_what_is_not_a_bounded_regular_file(tmp_path: Path, kind: str) -> None:
    special = _specials(tmp_path)[kind]
    ok = tmp_path / "ok.tsv"
    ok.write_text("s\ta\tk\t1\n")
    for args in ((special, ok), (ok, special)):
        done = subprocess.run([sys.executable, "-m", "relgate.cli", "evidence", "diff", *map(str, args)],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{special}: " in done.stderr and KINDS[kind] in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_evidence_diff_refuses_a_line_with_no_end(tmp_path: Path) -> None:
    long = tmp_path / "long.tsv"
    long.write_bytes(b"s\ta\tk\t" + b"x" * (3 << 20) + b"\n")
    ok = tmp_path / "ok.tsv"
    ok.write_text("s\ta\tk\t1\n")
    done = subprocess.run([sys.executable, "-m", "relgate.cli", "evidence", "diff", str(ok), str(long)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "line limit" in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("kind", list(KINDS))
def test_measure_add_refuses_what_is_not_a_bounded_regular_file(project: Project, tmp_path: Path,
                                                               kind: str) -> None:
    special = _specials(tmp_path)[kind]
    done = project.relgate("measure", "add", "speed", str(special), "--board", BOARD, "--release", "0.2.0",
                           "--meta", "driver=1", "--meta", "dtype=f16", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{special}: " in done.stderr and KINDS[kind] in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("how,why", [
    ('truncate -s 2G "$TINYINFER_EVIDENCE"', "over the 1073741824-byte limit of an evidence capture"),
    ('head -c 3145728 /dev/zero | tr "\\0" x >> "$TINYINFER_EVIDENCE"', "line limit of an evidence capture"),
], ids=["sparse-2GiB", "endless-line"])
def test_a_capture_past_the_cap_is_an_error_not_a_hang(tinyinfer: Project, how: str, why: str) -> None:
    _cells(tinyinfer, "s\ta\tk\t1\n", commit=False)
    (tinyinfer.root / "tests" / "cells.sh").write_text(f"{how}\n")
    tinyinfer.commit("a capture with no end")
    done = tinyinfer.nox("gate", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "error" and why in row["reason"], row


def test_a_fifo_manifest_is_refused_not_read(project: Project) -> None:
    target = project.manifests / "measurements.toml"
    target.unlink()
    os.mkfifo(target)
    done = project.relgate("check", timeout=120)
    assert done.returncode == 2 and "a FIFO (named pipe), not a file" in done.stderr, done.stdout + done.stderr
    git(project.root, "status")  # the repository is untouched


@pytest.mark.parametrize("text", [
    "**Verdict: complete.**", "a | b", "<script>x</script>", "[x](javascript:y)", "`code`", "# 9.9.9", "x\\|y",
    "line\nbreak", "cr\rhere", "esc\x1b[31m", "bidi\u202eltr", "tab\there", "nel\x85x", "sep\u2028x",
])
def test_the_rule_leaves_no_markup_and_no_control_character(text: str) -> None:
    """core/text: md() text holds no unescaped Markdown markup and no character that starts a
    line, a cell or an escape; inert() shows the control characters; code() is one code span."""
    import re

    from relgate.core.text import UNSAFE, code, inert, line_problem, md

    for shown in (md(text), inert(text), code(text)):
        assert UNSAFE.search(shown) is None and "\n" not in shown, shown
    shown = md(text)
    for m in re.finditer(r"[*|<>\[\]`#_]", shown):  # every markup character escaped: an odd run of \ before it
        run = len(shown[: m.start()]) - len(shown[: m.start()].rstrip("\\"))
        assert run % 2 == 1, (shown, m.start())
    if UNSAFE.search(text):
        assert line_problem(text) is not None and inert(text) != text
    else:
        assert line_problem(text) is None and inert(text) == text
    span = code(text)
    fence = re.match(r"`+", span).group()
    assert span.endswith(fence) and fence not in span[len(fence):-len(fence)]  # one code span, never closed early
