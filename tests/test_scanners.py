"""Compiler-warning scanners: real gcc, nvcc and cargo output first, then tricky lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.manifest.specs import AllowRule
from relgate.run.scanners import CompilerWarning, StreamScanner, partition, scan, scan_lines

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not on PATH")
needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not on PATH")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a real compiler; return stdout and stderr together, as a build log holds them."""
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def line_of(source: str, marker: str) -> int:
    """1-based line number of the only line holding ``marker``."""
    hits = [n for n, text in enumerate(source.splitlines(), 1) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def summary(warnings: list[CompilerWarning]) -> list[tuple[str, str | None, int | None, str | None]]:
    return [(w.tool, w.file, w.line, w.code) for w in warnings]


# --------------------------------------------------------------------------- gcc

C_WARNINGS = """\
int f(int a, unsigned b) {
    int x; /* unused */
    switch (a) {
    case 1:
        a++; /* falls */
    case 2:
        a--;
        break;
    }
    if (a < b) /* signedness */
        return 1;
    return 0;
}
"""

C_CLEAN = """\
int g(int a) {
    return a + 1;
}
"""


@needs_gcc
def test_gcc_real_warnings_file_line_and_flag(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text(C_WARNINGS)
    log = run(["gcc", "-Wall", "-Wextra", "-c", "k.c", "-o", "k.o"], tmp_path)
    assert "note:" in log  # the fall-through note is in the log, and is not a warning

    found = {(w.file, w.line, w.code) for w in scan(log)}

    assert found == {
        ("k.c", line_of(C_WARNINGS, "unused"), "-Wunused-variable"),
        ("k.c", line_of(C_WARNINGS, "falls"), "-Wimplicit-fallthrough="),
        ("k.c", line_of(C_WARNINGS, "signedness"), "-Wsign-compare"),
    }
    unused = next(w for w in scan(log) if w.code == "-Wunused-variable")
    assert unused.tool == "gcc"
    assert unused.column is not None
    assert "unused variable" in unused.message
    assert unused.describe() == (
        f"k.c:{unused.line}:{unused.column}: warning: {unused.message} [-Wunused-variable]"
    )


@needs_gcc
def test_gcc_colours_and_hyperlinks_give_the_same_warnings(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text(C_WARNINGS)
    base = ["gcc", "-Wall", "-Wextra", "-c", "k.c", "-o", "k.o"]
    plain = run(base, tmp_path)
    coloured = run(base + ["-fdiagnostics-color=always", "-fdiagnostics-urls=always"], tmp_path)
    assert "\x1b[" in coloured and "\x1b]8;;" in coloured

    assert [w.describe() for w in scan(coloured)] == [w.describe() for w in scan(plain)]
    assert all("\x1b" not in w.text for w in scan(coloured))


@needs_gcc
def test_gcc_clean_file_has_no_warnings(tmp_path: Path) -> None:
    (tmp_path / "clean.c").write_text(C_CLEAN)
    log = run(["gcc", "-Wall", "-Wextra", "-c", "clean.c", "-o", "clean.o"], tmp_path)
    assert scan(log) == []


@needs_gcc
def test_gcc_header_compiled_twice_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "h.h").write_text("static inline int h(void) { int y; return 0; }\n")
    (tmp_path / "a.c").write_text('#include "h.h"\nint a(void) { return h(); }\n')
    (tmp_path / "b.c").write_text('#include "h.h"\nint b(void) { return h(); }\n')
    log = run(["gcc", "-Wall", "-c", "a.c", "b.c"], tmp_path)
    assert log.count("warning:") == 2

    assert summary(scan(log)) == [("gcc", "h.h", 1, "-Wunused-variable")]


@needs_gcc
def test_gcc_command_line_warning_has_a_file_and_no_line(tmp_path: Path) -> None:
    (tmp_path / "clean.c").write_text(C_CLEAN)
    log = run(["gcc", "-DFOO=1", "-DFOO=2", "-c", "clean.c", "-o", "clean.o"], tmp_path)

    [warning] = scan(log)
    assert (warning.tool, warning.file, warning.line) == ("gcc", "<command-line>", None)
    assert warning.message == '"FOO" redefined'
    assert warning.location == "<command-line>"


@needs_clang
def test_clang_real_warnings(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text(C_WARNINGS)
    log = run(["clang", "-Wall", "-Wextra", "-c", "k.c", "-o", "k.o"], tmp_path)
    found = {(w.tool, w.file, w.line, w.code) for w in scan(log)}
    assert ("gcc", "k.c", line_of(C_WARNINGS, "unused"), "-Wunused-variable") in found
    assert all(w.file == "k.c" for w in scan(log))


# --------------------------------------------------------------------------- nvcc

CU_SOURCE = """\
__global__ void kern(float *p) {
    int unused;
    p[0] = 1.0f;
}
"""


@needs_nvcc
def test_nvcc_real_177_d(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(CU_SOURCE)
    log = run(["nvcc", "-c", "k.cu", "-o", "k.o"], tmp_path)
    assert "Remark:" in log and "int unused;" in log  # the remark and the echoed source

    [warning] = scan(log)  # host and device passes may both report it: counted once
    assert (warning.tool, warning.file, warning.line, warning.code) == (
        "nvcc",
        "k.cu",
        line_of(CU_SOURCE, "unused"),
        "177-D",
    )
    assert warning.message == 'variable "unused" was declared but never referenced'
    assert warning.describe() == f"k.cu:{warning.line}: warning: {warning.message} [177-D]"


@needs_nvcc
def test_nvcc_driver_and_ptxas_warnings(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(CU_SOURCE)
    log = run(["nvcc", "-G", "-lineinfo", "-c", "k.cu", "-o", "k.o"], tmp_path)

    found = scan(log)
    tools = [(w.tool, w.file) for w in found if w.code != "177-D"]
    assert tools and all(tool == ("nvcc", None) for tool in tools)
    assert any("-lineinfo" in w.message for w in found)
    assert [w.file for w in found if w.code == "177-D"] == ["k.cu"]


# --------------------------------------------------------------------------- cargo

CARGO_TOML = """\
[package]
name = "scanme"
version = "0.1.0"
edition = "2021"

[lib]
path = "src/lib.rs"
"""

LIB_RS = """\
pub fn add(a: u64, b: u64) -> u64 {
    let unused = 5;
    a + b
}
"""


@pytest.fixture(scope="module")
def crate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crate")
    (root / "src").mkdir()
    (root / "Cargo.toml").write_text(CARGO_TOML)
    (root / "src" / "lib.rs").write_text(LIB_RS)
    return root


def cargo(crate: Path, target: str, *args: str) -> str:
    env = {"CARGO_TARGET_DIR": str(crate / target), "CARGO_NET_OFFLINE": "true"}
    return run(["cargo", "build", *args], crate, env)


@needs_cargo
def test_cargo_text_one_warning_summary_not_counted(crate: Path) -> None:
    log = cargo(crate, "target-text", "--color=always")
    assert "generated 1 warning" in scan_strip(log)  # the summary is there ...

    [warning] = scan(log)  # ... and is not a warning
    assert (warning.tool, warning.file, warning.line, warning.column) == (
        "rustc",
        "src/lib.rs",
        line_of(LIB_RS, "unused"),
        9,
    )
    assert warning.message == "unused variable: `unused`"
    assert warning.text == "warning: unused variable: `unused`"


@needs_cargo
def test_cargo_json_one_warning(crate: Path) -> None:
    log = cargo(crate, "target-json", "--message-format=json")
    assert '"reason":"compiler-message"' in log

    [warning] = scan(log)
    assert (warning.tool, warning.file, warning.line, warning.column, warning.code) == (
        "rustc",
        "src/lib.rs",
        line_of(LIB_RS, "unused"),
        9,
        "unused_variables",
    )
    assert warning.message == "unused variable: `unused`"


def scan_strip(log: str) -> str:
    """The log without colour escapes (only to check what the test fed in)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", log)


# --------------------------------------------------------------------------- tricky lines

W = CompilerWarning


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "src/k.c:12:5: warning: unused variable 'x' [-Wunused-variable]",
            [("gcc", "src/k.c", 12, 5, "unused variable 'x'", "-Wunused-variable")],
            id="clang",
        ),
        pytest.param(
            "k.c:7: warning: no newline at end of file",
            [("gcc", "k.c", 7, None, "no newline at end of file", None)],
            id="gcc-no-column",
        ),
        pytest.param(
            "C:\\src\\k.c:3:9: warning: unused variable 'x' [-Wunused-variable]",
            [("gcc", "C:\\src\\k.c", 3, 9, "unused variable 'x'", "-Wunused-variable")],
            id="windows-path",
        ),
        pytest.param(
            "k.c:3:9: warning: unused variable 'x' [-Wunused-variable,Unused Entity Issue]",
            [("gcc", "k.c", 3, 9, "unused variable 'x'", "-Wunused-variable,Unused Entity Issue")],
            id="clang-category",
        ),
        pytest.param(
            "k.c:3:9: warning: use of uninitialized value 'x' [CWE-457] "
            "[-Wanalyzer-use-of-uninitialized-value]",
            [
                (
                    "gcc",
                    "k.c",
                    3,
                    9,
                    "use of uninitialized value 'x' [CWE-457]",
                    "-Wanalyzer-use-of-uninitialized-value",
                )
            ],
            id="gcc-analyzer",
        ),
        pytest.param(
            "cc1: warning: command-line option '-Wfoo' is valid for C++ but not for C",
            [("gcc", "cc1", None, None, "command-line option '-Wfoo' is valid for C++ but not for C", None)],
            id="cc1",
        ),
        pytest.param(
            "clang: warning: argument unused during compilation: '-L/x' "
            "[-Wunused-command-line-argument]",
            [
                (
                    "gcc",
                    None,
                    None,
                    None,
                    "argument unused during compilation: '-L/x'",
                    "-Wunused-command-line-argument",
                )
            ],
            id="clang-driver",
        ),
        pytest.param(
            "/usr/bin/ld: warning: libfoo.so.1, needed by libbar.so, not found",
            [("generic", None, None, None, "libfoo.so.1, needed by libbar.so, not found", None)],
            id="ld",
        ),
        pytest.param(
            "nvcc warning : The 'compute_75' architecture is deprecated",
            [("nvcc", None, None, None, "The 'compute_75' architecture is deprecated", None)],
            id="nvcc-driver",
        ),
        pytest.param(
            "ptxas /tmp/tmpxft_1.ptx, line 12; warning : Double is not supported. Demoting to float",
            [("nvcc", "/tmp/tmpxft_1.ptx", 12, None, "Double is not supported. Demoting to float", None)],
            id="ptxas-with-line",
        ),
        pytest.param(
            'k.cu(4): warning: variable "v" was set but never used',
            [("nvcc", "k.cu", 4, None, 'variable "v" was set but never used', None)],
            id="old-nvcc-no-number",
        ),
        pytest.param(
            "make[2]: warning: jobserver unavailable: using -j1.",
            [("generic", None, None, None, "jobserver unavailable: using -j1.", None)],
            id="make",
        ),
        pytest.param(
            "warning: unused manifest key: package.foo",
            [("generic", None, None, None, "unused manifest key: package.foo", None)],
            id="cargo-no-arrow",
        ),
        pytest.param(
            "warning[E0170]: pattern binding `A` is named the same as a variant\n"
            "  --> src/main.rs:10:9\n   |\n10 |         A => {}\n",
            [("rustc", "src/main.rs", 10, 9, "pattern binding `A` is named the same as a variant", "E0170")],
            id="rustc-code",
        ),
        pytest.param(
            "warning[clippy::needless_return]: unneeded `return` statement\n"
            " --> src/lib.rs:3:5\n",
            [("rustc", "src/lib.rs", 3, 5, "unneeded `return` statement", "clippy::needless_return")],
            id="clippy",
        ),
        pytest.param(
            "warning: unused import: `std::fs`\n\n --> src/lib.rs:1:5\n",
            [("rustc", "src/lib.rs", 1, 5, "unused import: `std::fs`", None)],
            id="rustc-arrow-after-blank",
        ),
        pytest.param(
            "warning: unused manifest key: a\n   Compiling x v0.1.0\n"
            "error[E0425]: cannot find value `y`\n --> src/lib.rs:2:5\n",
            [("generic", None, None, None, "unused manifest key: a", None)],
            id="error-arrow-not-taken",
        ),
        pytest.param(
            "warning: `crate` (lib) generated 3 warnings\n"
            "warning: `crate` (lib test) generated 3 warnings (3 duplicates)\n"
            'warning: `crate` (bin "x") generated 1 warning (run `cargo fix` to apply 1 suggestion)\n'
            "warning: 2 warnings emitted\n"
            "warning: build failed, waiting for other jobs to finish...\n",
            [],
            id="cargo-summaries",
        ),
        pytest.param(
            "0 warnings:\nBuild finished, 2 warnings.\nwarnings: none\n"
            "cc1: all warnings being treated as errors\n1 warning generated.\n"
            'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n'
            "-Wno-warning-option\nThis warning is for project developers.\n",
            [],
            id="not-warnings",
        ),
        pytest.param(
            "k.c:7:5: note: here: the warning: above\n"
            "   11 |     puts(\"warning: be careful\");\n"
            "      |          ^~~~~~~~~~~~~~~~~~~~~\n",
            [],
            id="note-and-echo-lines",
        ),
        pytest.param(
            "k.cu(2): warning #550-D: variable \"v\" was set but never used\n"
            '      puts("warning: x");\n'
            "          ^\n"
            "\n"
            'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n',
            [("nvcc", "k.cu", 2, None, 'variable "v" was set but never used', "550-D")],
            id="nvcc-echo-not-counted",
        ),
        pytest.param(
            "k.c:3:9: warning: unused variable 'x' [-Wunused-variable]\n"
            "make: warning: Clock skew detected.\n",
            [
                ("gcc", "k.c", 3, 9, "unused variable 'x'", "-Wunused-variable"),
                ("generic", None, None, None, "Clock skew detected.", None),
            ],
            id="generic-after-caretless-gcc",
        ),
        pytest.param(
            "\x1b[01m\x1b[Kk.c:3:9:\x1b[m\x1b[K \x1b[01;35m\x1b[Kwarning: \x1b[m\x1b[Kunused "
            "[\x1b[01;35m\x1b[K\x1b]8;;https://gcc.gnu.org/x\x07-Wunused-variable\x1b]8;;\x07"
            "\x1b[m\x1b[K]",
            [("gcc", "k.c", 3, 9, "unused", "-Wunused-variable")],
            id="ansi-and-osc8",
        ),
        pytest.param(
            "\x1b[1m\x1b[33mwarning\x1b[0m\x1b[1m: unused variable: `u`\x1b[0m\r\n"
            " \x1b[1m\x1b[94m--> \x1b[0msrc/lib.rs:2:9\r\n",
            [("rustc", "src/lib.rs", 2, 9, "unused variable: `u`", None)],
            id="ansi-rustc-crlf",
        ),
        pytest.param(
            "CMake Warning at CMakeLists.txt:2 (message):\n  careful: thing\n\n\n"
            "CMake Warning:\n  Manually-specified variables were not used by the project:\n",
            [
                ("generic", "CMakeLists.txt", 2, None, "careful: thing", None),
                (
                    "generic",
                    None,
                    None,
                    None,
                    "Manually-specified variables were not used by the project:",
                    None,
                ),
            ],
            id="cmake",
        ),
        pytest.param(
            "-- Warning: ccache not found - consider installing it for faster compilation or disable this "
            "warning with GGML_CCACHE=OFF\n"
            "CMake Warning at CMakeLists.txt:9 (message):\n  no ccache\n\n",
            [("generic", "CMakeLists.txt", 9, None, "no ccache", None)],
            id="cmake-status-message-is-a-note",  # ggml's configure: message(STATUS "Warning: …")
        ),
        pytest.param(
            "   Building [=====>    ] 3/10: foo\r\x1b[K"
            "k.c:3:9: warning: unused variable 'x' [-Wunused-variable]\n",
            [("gcc", "k.c", 3, 9, "unused variable 'x'", "-Wunused-variable")],
            id="progress-bar-carriage-return",
        ),
        pytest.param(
            '{"reason":"compiler-message","message":{"level":"warning","message":"unused",'
            '"code":null,"spans":[{"file_name":"a.rs","line_start":1,"column_start":2,'
            '"is_primary":false},{"file_name":"b.rs","line_start":3,"column_start":4,'
            '"is_primary":true}]}}\n'
            '{"reason":"compiler-message","message":{"level":"warning",'
            '"message":"2 warnings emitted","code":null,"spans":[]}}\n'
            '{"reason":"compiler-message","message":{"level":"error","message":"boom",'
            '"rendered":"warning: not me","code":null,"spans":[]}}\n'
            '{"$message_type":"diagnostic","level":"warning","message":"direct rustc",'
            '"code":{"code":"dead_code","explanation":null},"spans":[]}\n'
            '{"reason":"compiler-artifact","note":"warning: not me either"}\n',
            [
                ("rustc", "b.rs", 3, 4, "unused", None),
                ("rustc", None, None, None, "direct rustc", "dead_code"),
            ],
            id="json",
        ),
        pytest.param(
            '{"reason": "compiler-message", "rendered": "warning: half a line\n',
            [("generic", None, None, None, "half a line", None)],
            id="malformed-json-is-text",
        ),
    ],
)
def test_tricky_lines(text: str, expected: list[tuple[object, ...]]) -> None:
    found = [(w.tool, w.file, w.line, w.column, w.message, w.code) for w in scan(text)]
    assert found == expected


def test_identical_warnings_are_deduplicated_but_not_different_ones() -> None:
    text = (
        "h.h:1:33: warning: unused variable 'y' [-Wunused-variable]\n"
        "h.h:1:33: warning: unused variable 'y' [-Wunused-variable]\n"
        "h.h:1:34: warning: unused variable 'y' [-Wunused-variable]\n"
    )
    assert [w.column for w in scan(text)] == [33, 34]


def test_location_forms() -> None:
    base = dict(tool="gcc", message="m", code=None, text="t")
    assert W(file="a.c", line=3, column=4, **base).location == "a.c:3:4"
    assert W(file="a.c", line=3, column=None, **base).location == "a.c:3"
    assert W(file="cc1", line=None, column=None, **base).location == "cc1"
    assert W(file=None, line=None, column=None, **base).location == "<build output>"


# --------------------------------------------------------------------------- streaming

MIXED_LOG = (
    "[1/3] gcc -c k.c\n"
    "k.c: In function \u2018f\u2019:\n"
    "\x1b[01m\x1b[Kk.c:3:9:\x1b[m\x1b[K \x1b[01;35m\x1b[Kwarning: \x1b[m\x1b[Kunused variable "
    "\u2018x\u2019 [\x1b[01;35m\x1b[K-Wunused-variable\x1b[m\x1b[K]\n"
    "    3 |     int x;\n"
    "      |         ^\n"
    "k.cu(2): warning #177-D: variable \"unused\" was declared but never referenced\n"
    "      int unused;\n"
    "          ^\n"
    "\n"
    'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n'
    "   Compiling cr v0.1.0\n"
    "warning: unused variable: `unused`\n"
    " --> src/lib.rs:2:9\n"
    "  |\n"
    "2 |     let unused = 5;\n"
    "  |         ^^^^^^ help: if this is intentional, prefix it with an underscore\n"
    "\n"
    "warning: `cr` (lib) generated 1 warning\n"
    "nvcc warning : The 'compute_75' architecture is deprecated\n"
    "make: warning: Clock skew detected.\n"
    "warning: trailing, no newline"
)


def test_mixed_log() -> None:
    assert [(w.tool, w.location) for w in scan(MIXED_LOG)] == [
        ("gcc", "k.c:3:9"),
        ("nvcc", "k.cu:2"),
        ("rustc", "src/lib.rs:2:9"),
        ("nvcc", "<build output>"),
        ("generic", "<build output>"),
        ("generic", "<build output>"),
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 10_000])
def test_stream_chunks_anywhere_equal_scan(size: int) -> None:
    for log in (MIXED_LOG, MIXED_LOG.replace("\n", "\r\n")):
        scanner = StreamScanner()
        for start in range(0, len(log), size):
            scanner.feed(log[start : start + size])
        assert scanner.finish() == scan(MIXED_LOG)


@pytest.mark.parametrize("size", [4096, 65536, 1 << 20])
def test_bulk_output_between_warnings_in_large_chunks_equals_scan(size: int) -> None:
    """Chunks with no warning in them skip the per-line pass (one test of the whole chunk);
    what they hold between warnings (a held echo line, a pending rustc header, a caret) still
    counts: the result equals scanning the log line by line."""
    bulk = "".join(f"[{n:05d}] compiling object {n} of the release build -O3\n" for n in range(6000))
    pieces = MIXED_LOG.split("\n")
    log = "\n".join(piece + "\n" + (bulk if n % 3 == 0 else "") for n, piece in enumerate(pieces))
    # a line whose IGNORECASE "warning" is a non-ASCII letter, and a JSON line, after bulk output
    log += "\n" + bulk + "make: warnıng: dotless i\n" + bulk + '{"reason": "build-finished"}\n'
    for text in (log, log.replace("\n", "\r\n")):
        scanner = StreamScanner()
        for start in range(0, len(text), size):
            scanner.feed(text[start : start + size])
        assert scanner.finish() == scan(log) == scan_lines(log.splitlines(keepends=True))
    assert len(scan(log)) > len(scan(MIXED_LOG))  # the dotless-i line is one more
    # bulk output arriving as a chunk of its own right after each line: while a rustc header
    # waits for its arrow, or a generic warning for the line that shows whether it was an echo
    between = "".join(piece + "\n" + bulk for piece in pieces)
    scanner = StreamScanner()
    for piece in pieces:
        scanner.feed(piece + "\n")
        scanner.feed(bulk)
    assert scanner.finish() == scan(between)
    # a generic warning on the line after a located one is held (a source echo?); the bulk
    # line after it is no caret, so it counts, even when that line comes in a chunk of its own
    echo = ["k.c:3:9: warning: unused variable 'x' [-Wunused-variable]\n", "    // warning: keep x\n", bulk,
            "   ^\nwarning: the last one\n"]
    scanner = StreamScanner()
    for piece in echo:
        scanner.feed(piece)
    assert scanner.finish() == scan("".join(echo))
    assert len(scan("".join(echo))) == 3


def test_crlf_and_scan_lines_equal_scan() -> None:
    expected = scan(MIXED_LOG)
    assert scan(MIXED_LOG.replace("\n", "\r\n")) == expected
    assert scan_lines(MIXED_LOG.splitlines(keepends=True)) == expected
    assert scan_lines(MIXED_LOG.split("\n")) == expected


def test_finish_is_idempotent_and_feed_after_finish_is_refused() -> None:
    scanner = StreamScanner()
    scanner.feed("warning: pending rustc header with no arrow")
    first = scanner.finish()
    assert [w.message for w in first] == ["pending rustc header with no arrow"]
    assert scanner.finish() == first
    with pytest.raises(RuntimeError):
        scanner.feed("more\n")


# --------------------------------------------------------------------------- allowlist

UNUSED = W(
    tool="gcc",
    file="src/k.c",
    line=12,
    column=None,
    message="unused variable 'x'",
    code="-Wunused-variable",
    text="src/k.c:12: warning: unused variable 'x' [-Wunused-variable]",
)
DEPRECATED = W(
    tool="nvcc",
    file=None,
    line=None,
    column=None,
    message="The 'compute_75' architecture is deprecated",
    code=None,
    text="nvcc warning : The 'compute_75' architecture is deprecated",
)


def test_describe_shape() -> None:
    assert UNUSED.describe() == "src/k.c:12: warning: unused variable 'x' [-Wunused-variable]"
    assert DEPRECATED.describe() == (
        "<build output>: warning: The 'compute_75' architecture is deprecated"
    )


def test_partition_allows_one_of_two() -> None:
    rule = AllowRule.create(r"compute_75' architecture is deprecated", "sm_75 fleet until Q3", "t")
    other = AllowRule.create(r"never matches", "unused rule", "t")

    denied, allowed = partition([UNUSED, DEPRECATED], [other, rule])

    assert denied == [UNUSED]
    assert allowed == [(DEPRECATED, rule)]


def test_partition_first_matching_rule_wins_and_order_is_kept() -> None:
    by_flag = AllowRule(pattern=r"\[-Wunused-variable\]$", reason="vendored code")
    by_file = AllowRule(pattern=r"^src/", reason="all of src")
    denied, allowed = partition([DEPRECATED, UNUSED], [by_flag, by_file])
    assert denied == [DEPRECATED]
    assert allowed == [(UNUSED, by_flag)]
    assert partition([], [by_flag]) == ([], [])
    assert partition([UNUSED], []) == ([UNUSED], [])


WHERE = "manifests/builds.toml: release.cpu.allow[0]"


@pytest.mark.parametrize(
    ("pattern", "reason", "message"),
    [
        ("unused (", "why", f"{WHERE}.pattern: bad regex 'unused (': missing ), unterminated subpattern"),
        ("", "why", f"{WHERE}.pattern: empty; it would allow every warning"),
        (3, "why", f"{WHERE}.pattern: expected a string (a regex), got int"),
        ("unused", "", f"{WHERE}.reason: required; say why this warning is acceptable"),
        ("unused", "   ", f"{WHERE}.reason: required; say why this warning is acceptable"),
        ("unused", None, f"{WHERE}.reason: expected a string, got NoneType"),
    ],
)
def test_allow_rule_create_rejects(pattern: object, reason: object, message: str) -> None:
    with pytest.raises(InputError) as info:
        AllowRule.create(pattern, reason, WHERE)
    assert str(info.value).startswith(message)


def test_allow_rule_create_accepts_and_direct_construction_validates_too() -> None:
    rule = AllowRule.create(r"-Wunused", "generated code", WHERE)
    assert rule == AllowRule(pattern=r"-Wunused", reason="generated code")
    assert rule.matches(UNUSED) and not rule.matches(DEPRECATED)
    with pytest.raises(InputError):
        AllowRule(pattern="(", reason="x")
