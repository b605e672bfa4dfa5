"""Find compiler warnings in build output, and decide which ones an allowlist accepts.

A release build step is warning-free or it fails. This module only reads text: it
recognises the formats real compilers print (gcc/clang/hipcc, rustc/cargo in text and
JSON form, nvcc and its helpers, CMake) and falls back to any ``warning:`` line, so a
tool nobody planned for still cannot slip a warning through.

Pure and stdlib-only: the session layer feeds it the output, this module never runs,
prints or exits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from relgate.core.patterns import Folded
from relgate.core.record import record
from relgate.manifest.specs import AllowRule

__all__ = [
    "CompilerWarning",
    "StreamScanner",
    "first_compiler_error",
    "partition",
    "scan",
    "scan_lines",
    "warning_summary",
]


@record
class CompilerWarning:
    """One warning, as found in build output.

    ``tool`` is ``"gcc"`` (also clang and hipcc, which print the same format),
    ``"rustc"``, ``"nvcc"`` (also ptxas, nvlink and friends) or ``"generic"`` (any
    other ``warning:`` line, CMake's warnings, and a bare ``warning: ...`` that no
    ``--> file:line:col`` follows, since nothing says which tool printed it).
    ``text`` is the line the warning came from, colour escapes removed (for rustc's
    text format, the ``warning:`` line, not the ``-->`` line).
    """

    tool: str
    file: str | None
    line: int | None
    column: int | None
    message: str
    code: str | None
    text: str
    printed: int = 1  # how many times the output held it (a header's warning, once per file that includes it)

    @property
    def location(self) -> str:
        """``file:line:col``, ``file:line``, ``file``, or ``<build output>``."""
        if self.file is None:
            return "<build output>"
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"

    def describe(self) -> str:
        """One line, the same shape for every tool; allow rules are matched against it.

        ``src/k.c:12:9: warning: unused variable 'x' [-Wunused-variable]``
        """
        suffix = f" [{self.code}]" if self.code else ""
        return f"{self.location}: warning: {self.message}{suffix}"


def partition(
    warnings: Sequence[CompilerWarning], allow: Sequence[AllowRule]
) -> tuple[list[CompilerWarning], list[tuple[CompilerWarning, AllowRule]]]:
    """Split into (denied, allowed); each allowed warning comes with the first rule that matched."""
    denied: list[CompilerWarning] = []
    allowed: list[tuple[CompilerWarning, AllowRule]] = []
    for warning in warnings:
        described = warning.describe()
        for rule in allow:
            if re.search(rule.pattern, described) is not None:
                allowed.append((warning, rule))
                break
        else:
            denied.append(warning)
    return denied, allowed


def warning_summary(warnings: Sequence[CompilerWarning]) -> str:
    """``6 warnings at 6 places, 9 lines`` (just ``1 warning`` when each was printed once at its own place)."""
    n = len(warnings)
    places = len({w.location for w in warnings})
    lines = sum(w.printed for w in warnings)
    head = f"{n} warning{'' if n == 1 else 's'}"
    if places == n and lines == n:
        return head
    return f"{head} at {places} place{'' if places == 1 else 's'}, {lines} line{'' if lines == 1 else 's'}"


# A compiler's error with its place: gcc/clang "file:line[:col]: [fatal ]error: msg", nvcc "file(line): error: msg".
_COMPILER_ERROR = re.compile(r"^(?P<where>[^\s:()][^:()\n]*?(?::\d+(?::\d+)?|\(\d+\))):\s*(?:fatal )?error\b[^:\n]*:\s*"
                             r"(?P<msg>.+)$", re.M)


def first_compiler_error(text: str) -> str | None:
    """``file:line:col: message`` of the first compiler error in ``text`` (a failed build's
    last lines), so that a red build names the source it stopped at; None when there is none."""
    match = _COMPILER_ERROR.search(_ANSI.sub("", text)) if "error" in text else None
    return f"{match['where']}: {match['msg'].strip()[:160]}" if match else None


def scan(text: str) -> list[CompilerWarning]:
    """Every warning in ``text`` (a whole build log), in order, each once (``printed``: how often)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return scan_lines(lines)


def scan_lines(lines: Iterable[str]) -> list[CompilerWarning]:
    """Like :func:`scan`, for output already split into lines (line endings may remain)."""
    scanner = StreamScanner()
    for line in lines:
        for part in line.rstrip("\r\n").split("\n"):
            scanner._line(part)
    return scanner.finish()


# --------------------------------------------------------------------------- patterns

# CSI (colours, erase-line), OSC (gcc's hyperlinks, ended by BEL or ST), other escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")

# Cheap test first: only lines containing this (or JSON, or a pending "-->") go further.
_HAS_WARNING = re.compile("warning", re.IGNORECASE)


def _may_warn(text: str, folded: Folded | None = None) -> bool:
    """False only when no line of ``text`` (whole lines and a partial last one) can reach past
    the scanner's cheap test: none names a warning, none starts with ``{`` (JSON), and there is
    no escape sequence whose removal could join one up. One test of a whole chunk; ASCII text
    gets :meth:`Folded.has_word` (exactly ``_HAS_WARNING``'s IGNORECASE there), other text the
    regex itself. ``folded``, when given, is ``Folded(text)`` (shared with other scanners)."""
    if "\x1b" in text or ("{" in text and (text.startswith("{") or "\n{" in text or "\r{" in text)):
        return True
    if folded is None or folded.text is not text:
        folded = Folded(text)
    if not folded.ascii:
        return _HAS_WARNING.search(text) is not None
    return folded.has_word("warning")

# gcc/clang/hipcc: "file:line:col: warning: msg [-Wflag]" and "file:line: warning: msg".
_GCC = re.compile(
    r"^(?P<file>\S.*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*warning\s*:\s*(?P<msg>.*)$"
)
# cc1 / <command-line>: the "file" is the pass or pseudo-file, with no line.
_GCC_PASS = re.compile(
    r"^(?P<file>cc1(?:plus|obj|objplus)?|<command-line>|<command line>|<built-in>)"
    r":\s*warning\s*:\s*(?P<msg>.*)$"
)
# The compiler drivers themselves: "gcc: warning: ...", "clang-17: warning: ...".
_GCC_DRIVER = re.compile(
    r"^(?:\S*/)?(?:[\w.+-]*-)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|hipcc|hipcc\.pl|amdclang\+\+?|"
    r"lto-wrapper|lto1)(?:-\d+(?:\.\d+)*)?(?:\.exe)?:\s*warning\s*:\s*(?P<msg>.*)$"
)
# Other gcc-style diagnostics: claimed so their text never counts as a generic warning.
_GCC_OTHER = re.compile(
    r"^\S.*?:\d+:(?:\d+:)?\s*(?:note|error|fatal error|remark|in expansion of|required from)\b"
)
# "[-Wflag]" (clang may add ",Category"); gcc's analyzer puts a "[CWE-457]" before it.
_GCC_FLAG = re.compile(r"\s*\[(?P<code>-W[^\]]*)\]\s*$")

# rustc/cargo text: "warning: msg", "warning[E0xxx]: msg", "warning[clippy::x]: msg".
_RUST_HEADER = re.compile(r"^warning(?:\[(?P<code>[^\]]+)\])?\s*:\s*(?P<msg>.*)$")
_RUST_OTHER_HEADER = re.compile(r"^(?:error|note|help|failure-note)(?:\[[^\]]+\])?\s*:")
_RUST_ARROW = re.compile(r"^\s*-->\s*(?P<file>.+?):(?P<line>\d+)(?::(?P<col>\d+))?\s*$")
# Cargo's and rustc's summaries are not warnings themselves.
_RUST_SUMMARY = re.compile(
    r"^(?:`[^`]*` \([^)]*\) generated \d+ warnings?\b"
    r"|\d+ warnings? emitted\b"
    r"|build failed, waiting for other jobs to finish"
    r"|`[^`]*` \([^)]*\) generated \d+ warnings? and \d+ errors?\b"
    # cargo's own notes about its registry (it retries): the network's, never the code's
    r"|spurious network error\b)"
)
_RUST_WINDOW = 3  # the "-->" comes right after the header; allow a couple of lines

# nvcc (cudafe): "file(line): warning #177-D: msg" and "file(line): warning: msg".
_NVCC = re.compile(
    r"^(?P<file>\S.*?)\((?P<line>\d+)\):\s*warning(?:\s*#(?P<code>[\w-]+))?\s*:\s*(?P<msg>.*)$"
)
# "nvcc warning : The 'compute_..' architectures are deprecated", "ptxas warning : ...",
# "ptxas /tmp/x.ptx, line 12; warning : ...".
_NVCC_TOOL = re.compile(
    r"^(?P<prog>nvcc|ptxas|nvlink|fatbinary|cicc|cudafe\+\+|nvdisasm|cuobjdump)\b"
    r"(?:\s+(?P<file>[^,;:]+?),\s*line\s+(?P<line>\d+)\s*;)?"
    r"\s*warning\s*:\s*(?P<msg>.*)$"
)

# setuptools' (distutils') own notes about packaging, not compiling: MANIFEST.in patterns
# that matched nothing, byte-compiling switched off, a missing README, metadata checks. A
# note of build_ext (an extension that failed to build) is not among them: it counts.
_SETUPTOOLS_NOTE = re.compile(
    r"^warning: (?:no (?:previously-included )?(?:files|directories) (?:found )?matching '[^']*'"
    r"(?: found)?(?: anywhere in distribution| under directory '[^']*')?$"
    r"|(?:sdist|build_py|install_lib|check|egg_info|install_scripts|install_data|bdist_wheel): )"
)

# CMake: "CMake Warning at CMakeLists.txt:2 (message):" with the message indented below,
# "CMake Warning:", "CMake Warning (dev) at ...", "CMake Deprecation Warning at ...".
_CMAKE = re.compile(
    r"^CMake (?:Deprecation )?Warning(?: \(dev\))?"
    r"(?: at (?P<file>.+?):(?P<line>\d+)(?: \([^)]*\))?)?\s*:\s*(?P<msg>.*)$"
)

# CMake's message(STATUS …) lines ("-- Warning: ccache not found …", ggml's): notes, not
# diagnostics; a project's own warning is message(WARNING …), which _CMAKE reads.
_CMAKE_STATUS = "-- "

# Anything else: singular "warning", optional spaces, a colon ("0 warnings:" is not one).
_GENERIC = re.compile(r"\bwarning\s*:\s*(?P<msg>.*)$", re.IGNORECASE)

# Source echoed under a diagnostic: gcc/rustc "  3 |     int x;", clang/nvcc caret lines.
_GUTTER = re.compile(r"^\s*\d*\s*\|")
_CARET = re.compile(r"^\s*[~^]")


# --------------------------------------------------------------------------- scanner


@record(frozen=False)
class _Pending:
    """A warning whose location or message is on a later line."""

    kind: str  # "rustc" (waiting for "-->") or "cmake" (waiting for the indented message)
    tool: str
    file: str | None
    line: int | None
    message: str
    code: str | None
    text: str
    left: int


class StreamScanner:
    """Scan build output as it arrives: ``feed()`` chunks (split anywhere), then ``finish()``.

    >>> s = StreamScanner()
    >>> s.feed("k.c:3:9: warning: unused variable 'x' [-Wunused-var")
    >>> s.feed("iable]\\n")
    >>> [w.describe() for w in s.finish()]
    ["k.c:3:9: warning: unused variable 'x' [-Wunused-variable]"]
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._found: list[CompilerWarning] = []
        self._seen: dict[tuple[str, str | None, int | None, int | None, str], int] = {}  # key → index in _found
        self._pending: _Pending | None = None
        # A generic warning on the line after a located one may be that line's source echo;
        # it is held until the next line shows whether a caret follows it.
        self._held: CompilerWarning | None = None
        self._echo_next = False
        self._finished = False

    def feed(self, chunk: str, folded: Folded | None = None) -> None:
        """Take the next piece of output; complete lines are scanned now. ``folded``, when
        given, is ``Folded(chunk)``, shared with other scanners fed the same chunk."""
        if self._finished:
            raise RuntimeError("StreamScanner.feed() after finish()")
        if "\n" not in chunk:
            self._buffer += chunk
            return
        text = self._buffer + chunk
        if self._idle() and not _may_warn(text, folded):  # bulk output naming no warning: no line to look at
            self._buffer = text[text.rfind("\n") + 1:]
            return
        lines = text.split("\n")
        self._buffer = lines.pop()
        for line in lines:
            self._line(line)

    def _idle(self) -> bool:
        """Nothing held between lines: a line that names no warning and is no JSON changes nothing."""
        return self._held is None and self._pending is None and not self._echo_next

    def finish(self) -> list[CompilerWarning]:
        """Scan what is left and return every warning found, in order, each once."""
        if not self._finished:
            self._finished = True
            if self._buffer:
                self._line(self._buffer)
                self._buffer = ""
            self._release_held()
            self._flush_pending()
        return list(self._found)

    @property
    def lines(self) -> int:
        """How many warning lines the output held (each place counted as often as it was printed)."""
        return sum(w.printed for w in self._found)

    # ------------------------------------------------------------------ per line

    def _line(self, raw: str) -> None:
        if raw.endswith("\r"):
            raw = raw.rstrip("\r")
        if "\r" in raw:
            # Progress bars redraw with a bare carriage return: each piece is a line.
            for piece in raw.split("\r"):
                self._one(piece)
        else:
            self._one(raw)

    def _one(self, line: str) -> None:
        if "\x1b" in line:
            line = _ANSI.sub("", line)

        if self._held is not None:
            held, self._held = self._held, None
            if not _CARET.match(line):
                self._add(held)
        echo_line = self._echo_next
        self._echo_next = False

        if self._pending is not None and self._pending_takes(line):
            return

        if not (_HAS_WARNING.search(line) or line.startswith("{")):
            return

        if line.startswith("{") and self._json(line):
            return
        if self._specific(line):
            return

        if _GUTTER.match(line) or _GCC_OTHER.match(line) or _RUST_OTHER_HEADER.match(line):
            return
        if line.startswith(_CMAKE_STATUS):  # message(STATUS "Warning: …"): a note; message(WARNING) is _CMAKE's
            return
        match = _GENERIC.search(line)
        if match is None:
            return
        warning = CompilerWarning(
            tool="generic",
            file=None,
            line=None,
            column=None,
            message=match["msg"].strip(),
            code=None,
            text=line,
        )
        if echo_line:
            self._held = warning
        else:
            self._flush_pending()
            self._add(warning)

    def _pending_takes(self, line: str) -> bool:
        """Give the pending warning a look at ``line``; True when the line is used up."""
        pending = self._pending
        assert pending is not None
        if pending.kind == "rustc":
            if "-->" in line:
                match = _RUST_ARROW.match(line)
                if match is not None:
                    self._pending = None
                    self._add(
                        CompilerWarning(
                            tool="rustc",
                            file=match["file"],
                            line=int(match["line"]),
                            column=int(match["col"]) if match["col"] else None,
                            message=pending.message,
                            code=pending.code,
                            text=pending.text,
                        )
                    )
                    return True
            if _RUST_OTHER_HEADER.match(line) or _RUST_HEADER.match(line):
                self._flush_pending()
                return False
        else:  # cmake: the message is the first indented line below the header
            stripped = line.strip()
            if stripped and line[:1] in (" ", "\t"):
                pending.message = stripped
                self._flush_pending()
                return True
            if stripped:
                self._flush_pending()
                return False
        pending.left -= 1
        if pending.left <= 0:
            self._flush_pending()
        return False

    def _specific(self, line: str) -> bool:
        """Apply the per-tool rules; True when one of them claimed the line."""
        first = line[:1]
        if first == "w":
            if _SETUPTOOLS_NOTE.match(line):
                return True  # setuptools about packaging (see _SETUPTOOLS_NOTE), not a compiler
            match = _RUST_HEADER.match(line)
            if match is not None:
                self._flush_pending()
                msg = match["msg"].strip()
                if _RUST_SUMMARY.match(msg):
                    return True
                self._pending = _Pending(
                    kind="rustc",
                    tool="rustc" if match["code"] else "generic",
                    file=None,
                    line=None,
                    message=msg,
                    code=match["code"],
                    text=line,
                    left=_RUST_WINDOW,
                )
                return True
        elif first == "C" and line.startswith("CMake "):
            match = _CMAKE.match(line)
            if match is not None:
                self._flush_pending()
                self._pending = _Pending(
                    kind="cmake",
                    tool="generic",
                    file=match["file"],
                    line=int(match["line"]) if match["line"] else None,
                    message=match["msg"].strip(),
                    code=None,
                    text=line,
                    left=_RUST_WINDOW,
                )
                if self._pending.message:
                    self._flush_pending()
                return True

        match = _NVCC_TOOL.match(line)
        if match is not None:
            self._emit(
                tool="nvcc",
                file=match["file"],
                line=int(match["line"]) if match["line"] else None,
                column=None,
                message=match["msg"].strip(),
                code=None,
                text=line,
            )
            return True
        match = _NVCC.match(line)
        if match is not None:
            self._emit(
                tool="nvcc",
                file=match["file"],
                line=int(match["line"]),
                column=None,
                message=match["msg"].strip(),
                code=match["code"],
                text=line,
            )
            self._echo_next = True
            return True
        match = _GCC.match(line)
        if match is not None:
            message, code = _split_flag(match["msg"])
            self._emit(
                tool="gcc",
                file=match["file"],
                line=int(match["line"]),
                column=int(match["col"]) if match["col"] else None,
                message=message,
                code=code,
                text=line,
            )
            self._echo_next = True
            return True
        match = _GCC_PASS.match(line) or _GCC_DRIVER.match(line)
        if match is not None:
            message, code = _split_flag(match["msg"])
            self._emit(
                tool="gcc",
                file=match.groupdict().get("file"),
                line=None,
                column=None,
                message=message,
                code=code,
                text=line,
            )
            return True
        return False

    def _json(self, line: str) -> bool:
        """cargo ``--message-format=json`` / rustc ``--error-format=json``; True if claimed."""
        if '"reason"' not in line and '"$message_type"' not in line and '"spans"' not in line:
            return False
        try:
            obj = json.loads(line)
        except ValueError:
            return False
        if not isinstance(obj, dict):
            return False
        if "reason" in obj:  # cargo's stream: only compiler messages can be warnings
            if obj.get("reason") != "compiler-message":
                return True
            diag = obj.get("message")
        elif "$message_type" in obj:  # rustc's own stream: diagnostics, artifacts, ...
            if obj.get("$message_type") != "diagnostic":
                return True
            diag = obj
        elif isinstance(obj.get("spans"), list) and "level" in obj:  # older rustc
            diag = obj
        else:
            return False
        if not isinstance(diag, dict) or diag.get("level") != "warning":
            return True
        message = str(diag.get("message") or "").strip()
        spans = [s for s in diag.get("spans") or [] if isinstance(s, dict)]
        if not spans and _RUST_SUMMARY.match(message):
            return True
        span = next((s for s in spans if s.get("is_primary")), spans[0] if spans else None)
        code_obj = diag.get("code")
        code = code_obj.get("code") if isinstance(code_obj, dict) else None
        self._emit(
            tool="rustc",
            file=_str_or_none(span.get("file_name")) if span else None,
            line=_int_or_none(span.get("line_start")) if span else None,
            column=_int_or_none(span.get("column_start")) if span else None,
            message=message,
            code=_str_or_none(code),
            text=line,
        )
        return True

    # ------------------------------------------------------------------ recording

    def _emit(self, **fields: Any) -> None:
        self._flush_pending()
        self._add(CompilerWarning(**fields))

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        self._add(
            CompilerWarning(
                tool=pending.tool,
                file=pending.file,
                line=pending.line,
                column=None,
                message=pending.message or "CMake Warning",
                code=pending.code,
                text=pending.text,
            )
        )

    def _release_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._add(held)

    def _add(self, warning: CompilerWarning) -> None:
        key = (warning.tool, warning.file, warning.line, warning.column, warning.message)
        index = self._seen.get(key)
        if index is None:
            self._seen[key] = len(self._found)
            self._found.append(warning)
        else:
            first = self._found[index]
            self._found[index] = replace(first, printed=first.printed + 1)


def _split_flag(msg: str) -> tuple[str, str | None]:
    match = _GCC_FLAG.search(msg)
    if match is None:
        return msg.strip(), None
    return msg[: match.start()].strip(), match["code"]


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
