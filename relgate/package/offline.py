"""Run a command with no network: in a fresh network namespace (no interface up, not even
loopback), plus the tools' own offline switches, which the caller sets in the environment
(:data:`OFFLINE_ENV`).

    python -I relgate/offline.py -- cargo test --offline           (--namespace=require)
    python -I relgate/offline.py --namespace=try -- make test
    python -I relgate/offline.py --probe

(:mod:`relgate.packaging` runs it as ``relgate-offline``, a launcher in the run's own work
folder, first on the step's PATH.)

It makes the namespace itself (``unshare(CLONE_NEWNET)`` as root, else a user namespace
with the caller's own uid and gid mapped, as ``unshare -rn`` does), says on its first line
what it got — so every step's log tells whether the network was really cut — and then
``exec``s the command. ``--namespace=require`` fails (exit 126) when no namespace can be
made; ``--namespace=try`` goes on with the offline switches only, and says so.

This file imports only the standard library and is run as a script (``python -I
path/to/offline.py``), so it never imports a package from the folder it runs in.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["OFFLINE_ENV", "make_namespace", "probe", "main"]

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_DISCARD = "http://127.0.0.1:9"  # nothing listens there: a client that ignores the switches fails fast

#: The tools' offline switches, set on every offline step (recorded in its ledger row).
OFFLINE_ENV = {
    "CARGO_NET_OFFLINE": "true",
    "PIP_NO_INDEX": "1",
    "PIP_CONFIG_FILE": os.devnull,  # no site or user pip config (find-links, extra indexes)
    "UV_OFFLINE": "1",
    "HTTP_PROXY": _DISCARD,
    "HTTPS_PROXY": _DISCARD,
    "ALL_PROXY": _DISCARD,
    "http_proxy": _DISCARD,
    "https_proxy": _DISCARD,
    "all_proxy": _DISCARD,
    "NO_PROXY": "",
    "no_proxy": "",
}


def _unshare(flags: int) -> str | None:
    """None on success, else why not."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux-only (this is {sys.platform})"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError as exc:
        return f"cannot load libc: {exc}"
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        return f"unshare: {os.strerror(err)}"
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def make_namespace() -> tuple[bool, str]:
    """Move this process into a fresh network namespace: (done, what happened, in words)."""
    why = _unshare(_CLONE_NEWNET)
    if why is None:
        return True, "a fresh network namespace (no interface up)"
    uid, gid = os.getuid(), os.getgid()
    why_user = _unshare(_CLONE_NEWUSER | _CLONE_NEWNET)
    if why_user is not None:
        return False, f"{why}; as a user namespace: {why_user}"
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        return False, f"{why}; user namespace made but its id maps failed: {exc.strerror or exc}"
    return True, "a fresh network namespace in a user namespace (no interface up)"


def probe(script: str | None = None) -> tuple[bool, str]:
    """Whether this host lets relgate make a network namespace: tried in a child process (this
    script, ``--probe``), so the caller's own process is never moved."""
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-I", script or os.path.abspath(__file__), "--probe"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"cannot run the probe: {exc}"
    words = (done.stdout.strip() or done.stderr.strip()).partition(": ")[2]
    return done.returncode == 0, words


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--probe"]:  # in this (single-threaded, short-lived) process
        done, why = make_namespace()
        print(("yes: " if done else "no: ") + why)
        return 0 if done else 1
    mode = "require"
    if args and args[0].startswith("--namespace="):
        mode = args.pop(0).split("=", 1)[1]
    if mode not in ("require", "try") or not args or args[0] != "--" or len(args) < 2:
        print("usage: offline.py [--namespace=require|try] -- COMMAND [ARG …] | --probe", file=sys.stderr)
        return 2
    command = args[1:]
    done, what = make_namespace()
    if done:
        print(f"relgate offline: {what}; offline switches set", flush=True)
    elif mode == "require":
        print(f"relgate offline: cannot cut the network ({what}); refusing to run {command[0]}", flush=True)
        return 126
    else:
        print(f"relgate offline: no network namespace on this host ({what}); relying on the tools' offline "
              "switches only", flush=True)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"relgate offline: cannot run {command[0]}: {exc.strerror or exc}", flush=True)
        return 127
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main())
