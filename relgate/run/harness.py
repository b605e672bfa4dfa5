"""Harness failures: the host, the GPU or the network broke, not the code under test.

A step that failed is ``error``, not ``fail``, when its exit status or its output says the
harness broke: a cargo step that cannot reach its registry, a CUDA program on a host whose
GPU is absent, busy or out of memory, a process killed by SIGKILL (the OOM killer, or
someone outside relgate; a shell reports it as exit 137). The table is small and per tool;
each message is one the tool really prints (see tests/test_harness.py). Anything else a
failing step prints keeps it a ``fail``.
"""

from __future__ import annotations

import re

from relgate.core.patterns import Folded, LazyPattern
from relgate.core.record import record

__all__ = ["KnownMessage", "KNOWN_MESSAGES", "REGISTRY_DOWN", "HarnessScanner", "exit_status_reason"]


@record
class KnownMessage:
    tool: str
    pattern: str  # a regex searched in each output line
    reason: str  # what the verdict's reason says


#: What a verdict says when cargo could not reach its registry (relgate.run.outage reuses it).
REGISTRY_DOWN = "cargo cannot reach its registry"

KNOWN_MESSAGES: tuple[KnownMessage, ...] = (
    # cargo: curl's errors as cargo prints them ("[7] Could not connect to server (…)"), and
    # its own download failures; none of these can come from the code under test.
    KnownMessage(tool="cargo", pattern=r"^\s*\[\d+\] (?:Could not connect to server|Couldn't connect to server|"
                                       r"Couldn't resolve host name|Could not resolve hostname|Timeout was reached|"
                                       r"SSL connect error)",
                 reason=REGISTRY_DOWN),
    KnownMessage(tool="cargo", pattern=r"^(?:error|warning): spurious network error",
                 reason=REGISTRY_DOWN),
    KnownMessage(tool="cargo", pattern=r"^\s*failed to download from `[^`]+`$",
                 reason=REGISTRY_DOWN),
    # CUDA runtime (cudaGetErrorString of cudaErrorNoDevice, cudaErrorDevicesUnavailable,
    # cudaErrorInsufficientDriver, cudaErrorMemoryAllocation) and the driver API names.
    KnownMessage(tool="cuda", pattern=r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE",
                 reason="no CUDA-capable device on this host"),
    KnownMessage(tool="cuda", pattern=r"CUDA-capable device\(s\) is/are busy or unavailable|all CUDA-capable "
                                      r"devices are busy or unavailable|CUDA_ERROR_DEVICE_UNAVAILABLE",
                 reason="the GPU is busy or unavailable"),
    KnownMessage(tool="cuda", pattern=r"CUDA driver version is insufficient for CUDA runtime version|"
                                      r"CUDA_ERROR_INSUFFICIENT_DRIVER",
                 reason="the CUDA driver is missing or older than the runtime"),
    KnownMessage(tool="cuda", pattern=r"(?i:\bcuda\b)[^\n]*\bout of memory\b|cudaErrorMemoryAllocation|"
                                      r"CUDA_ERROR_OUT_OF_MEMORY",
                 reason="the GPU is out of memory"),
)

_ANY = LazyPattern("|".join(f"(?P<m{i}>{m.pattern})" for i, m in enumerate(KNOWN_MESSAGES)), re.MULTILINE)
_CHEAP = re.compile(r"\[\d+\]|network|download|CUDA|cuda", re.IGNORECASE)
_BRACKET = re.compile(r"\[\d+\]")
_CHEAP_WORDS = ("network", "download", "cuda")


def _may_match(text: str, folded: Folded | None = None) -> bool:
    """False only when no line of ``text`` can pass ``_CHEAP``: one test of a whole chunk, so
    bulk output with no such word is not split into lines at all. ASCII text is searched for
    the words with :meth:`~relgate.core.patterns.Folded.has_word` (exactly ``_CHEAP``'s
    IGNORECASE there; ``folded``, when given, is ``Folded(text)``, shared with the warning
    scanner); other text gets ``_CHEAP`` itself (IGNORECASE folds a few non-ASCII letters
    onto ASCII ones)."""
    if folded is None or folded.text is not text:
        folded = Folded(text)
    if not folded.ascii:
        return _CHEAP.search(text) is not None
    if "[" in text and _BRACKET.search(text):
        return True
    return any(folded.has_word(word) for word in _CHEAP_WORDS)


class HarnessScanner:
    """Watch output as it arrives (any chunking); remember the first known harness message."""

    def __init__(self) -> None:
        self._buffer = ""
        self.found: tuple[KnownMessage, str] | None = None  # the message and the line it was in

    def feed(self, chunk: str, folded: Folded | None = None) -> None:
        """Take the next piece of output. ``folded``, when given, is ``Folded(chunk)``, shared
        with the warning scanner fed the same chunk."""
        if self.found is not None:
            return
        text = self._buffer + chunk
        if not _may_match(text, folded):  # no line here can hold a known message
            self._buffer = text[text.rfind("\n") + 1:][-4096:]
            return
        lines = text.split("\n")
        self._buffer = lines.pop()[-4096:]  # a line longer than that is no tool's message
        for line in lines:
            if self._line(line):
                return

    def finish(self) -> tuple[KnownMessage, str] | None:
        if self.found is None and self._buffer:
            self._line(self._buffer)
        self._buffer = ""
        return self.found

    def _line(self, line: str) -> bool:
        line = line.rstrip("\r")
        if not _CHEAP.search(line):
            return False
        match = _ANY.search(line)
        if match is None:
            return False
        index = int(next(name for name, value in match.groupdict().items() if value is not None)[1:])
        self.found = (KNOWN_MESSAGES[index], line.strip())
        return True


def exit_status_reason(exit_code: int | None) -> str | None:
    """A harness failure the exit status alone shows: 137 is a shell's report of SIGKILL."""
    if exit_code == 128 + 9:
        return "killed by SIGKILL (exit 137): the OOM killer, or someone outside relgate"
    return None
