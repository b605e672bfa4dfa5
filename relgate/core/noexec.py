"""Run a reading tool so that it can start nothing and write nothing (Linux seccomp).

``relgate init`` reads a Makefile's rule database with ``make -pRrq``; GNU make has no switch
that stops ``$(shell …)`` while it reads, nor the remaking of an included makefile (``-q`` and
``-n`` do not prevent it). :func:`no_spawn_no_write` is a ``preexec_fn`` that installs a seccomp
filter in the child before it executes the tool: from then on every process-creating call
(``fork``, ``vfork``, ``clone``, ``clone3``) and every open for writing (``open``/``openat`` with a
write, create, truncate or append flag; ``creat``, ``openat2``), rename, unlink, link, mkdir,
rmdir, truncate and chmod fails with ``EPERM``. What the tool prints still comes back on the
pipes it was given. The filter is inherited by nothing (nothing can be started) and ends with
the process. Where seccomp is not available (another OS, another architecture),
:func:`available` is False and callers refuse rather than run the repository's code.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

__all__ = ["available", "no_spawn_no_write"]

_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | errno.EPERM
_LD_W_ABS, _JEQ, _JSET, _RET = 0x20, 0x15, 0x45, 0x06
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# arch → (AUDIT_ARCH, syscalls always refused, {open-like syscall: index of its flags argument})
_TABLES = {
    "x86_64": (0xC000003E,
               (57, 58, 56, 435,  # fork vfork clone clone3
                85, 437,  # creat openat2
                82, 264, 316, 87, 263, 84, 83, 258, 76, 77, 90, 268, 88, 266, 86, 265, 260, 92, 94, 93),
               {2: 1, 257: 2}),  # open(flags = arg 1), openat(flags = arg 2)
    "aarch64": (0xC00000B7,
                (220, 435,  # clone clone3
                 437, 38, 276, 35, 34, 45, 46, 53, 36, 37, 54, 55),
                {56: 2}),  # openat
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def available() -> bool:
    return sys.platform.startswith("linux") and _machine() in _TABLES


def _program() -> list[tuple[int, int, int, int]]:
    arch, refused, opens = _TABLES[_machine()]
    prog = [(_LD_W_ABS, 0, 0, 4), (_JEQ, 1, 0, arch), (_RET, 0, 0, _DENY), (_LD_W_ABS, 0, 0, 0)]
    checks = [(nr, None) for nr in refused] + [(nr, arg) for nr, arg in opens.items()]
    base = len(prog)
    allow_at = base + len(checks)
    deny_at = allow_at + 1
    flags_at = {nr: deny_at + 1 + 4 * i for i, nr in enumerate(opens)}
    for i, (nr, arg) in enumerate(checks):
        target = deny_at if arg is None else flags_at[nr]
        prog.append((_JEQ, target - (base + i) - 1, 0, nr))
    prog += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _DENY)]
    for nr, arg in opens.items():  # the low 32 bits of the flags argument (little-endian)
        prog += [(_LD_W_ABS, 0, 0, 16 + 8 * arg), (_JSET, 1, 0, _WRITE_FLAGS), (_RET, 0, 0, _ALLOW),
                 (_RET, 0, 0, _DENY)]
    return prog


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def no_spawn_no_write() -> None:
    """``preexec_fn``: from here on this process starts nothing and writes no file."""
    prog = _program()
    data = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(data, len(data))
    fprog = _Fprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        os._exit(126)  # never run the tool unconfined
