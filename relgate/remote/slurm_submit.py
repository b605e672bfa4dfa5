"""Where a Slurm host's jobs are submitted from: this machine, or a login node over SSH.

Both offer the same few things to :mod:`relgate.remote.slurm`: run ``srun`` with its output
streamed to the step's log (:meth:`run`, the executor seam of the local or SSH executor), ask
the cluster a short question (:meth:`query`: ``sacct``, ``scontrol``, ``squeue``, ``scancel``),
read a small file the job wrote in the shared work dir, copy the evidence file back, and make
the candidate's checkout in the work dir. Over SSH everything goes through the existing SSH
executor (strict host keys, the host file's ``env``) and the candidate travels as a git bundle
(:func:`relgate.remote.delivery.deliver`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.run.executor import CommandRequest, CommandResult, LocalExecutor, LogSink
from relgate.run.hosts import Host

__all__ = ["Answer", "LocalSubmit", "SshSubmit", "submitter"]

_QUERY_TIMEOUT = 30.0


class Answer:
    """A short command's exit status (None: it could not run) and its output."""

    def __init__(self, code: int | None, out: str, err: str = "") -> None:
        self.returncode, self.stdout, self.stderr = code, out, err


class LocalSubmit:
    """``srun`` and the queries run on this machine (a submit host of the cluster)."""

    where = "this machine"

    def __init__(self, host: Host) -> None:
        self.env: Mapping[str, str] = {**os.environ, **host.spec.env}
        self._ex = LocalExecutor(host, base_env=self.env)

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        return self._ex.run(request, sink)

    def interrupt(self, signum: int) -> None:
        self._ex.interrupt(signum)

    def query(self, argv: Sequence[str]) -> Answer:
        try:
            done = subprocess.run(list(argv), env=dict(self.env), capture_output=True, text=True,
                                  timeout=_QUERY_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Answer(None, "", str(exc))
        return Answer(done.returncode, done.stdout, done.stderr)

    def read(self, path: str) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return None

    def fetch(self, remote: str, local: Path) -> bool:
        if not Path(remote).exists():
            return False
        shutil.copyfile(remote, local)
        return True

    def mkdir(self, path: str) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)

    def checkout(self, side: Any, workdir: str, project: str, safe: str, index: int = 0) -> tuple[str, str]:
        """Checkout ``index`` of the candidate (``checkouts/SHA``, ``SHA.1`` …) and how it got there."""
        root = Path(workdir) / safe
        repo = root / "repo.git"
        checkout = root / "checkouts" / (side.commit + (f".{index}" if index else ""))
        if not (repo / "HEAD").exists():
            repo.parent.mkdir(parents=True, exist_ok=True)
            _git(repo.parent, "init", "-q", "--bare", str(repo))
        _git(repo, "fetch", "-q", str(side.repo), f"+{side.commit}:refs/relgate/{side.commit}")
        how = "checkout reused"
        if not checkout.exists():
            _git(repo, "worktree", "add", "-q", "--detach", str(checkout), side.commit)
            how = "checked out"
        head = _git(checkout, "rev-parse", "HEAD").strip()
        if head != side.commit:
            raise OSError(f"HEAD of {checkout} is {head}, not {side.commit}")
        return str(checkout), how

    def close(self) -> None:
        pass


class SshSubmit:
    """``srun`` and the queries run on the login node (``address`` in the host file), over SSH."""

    def __init__(self, host: Host) -> None:
        from relgate.remote.ssh import SshExecutor  # a cluster reached over SSH only

        self._ssh = SshExecutor(host)
        self.where = f"login node {host.spec.address}"
        self.env = dict(host.spec.env)
        # Jobs run side by side share this connection: their srun streams run at once (channels
        # of their own), but queries, deliveries and fetches take turns, since one SFTP client
        # answering two threads at once can leave one of them waiting for a reply forever.
        self._turn = threading.RLock()

    def run(self, request: CommandRequest, sink: LogSink) -> CommandResult:
        return self._ssh.run(request, sink)

    def interrupt(self, signum: int) -> None:
        self._ssh.interrupt(signum)

    def query(self, argv: Sequence[str]) -> Answer:
        from relgate.remote.errors import SshError

        try:
            with self._turn:
                code, out = self._ssh.capture(shlex.join(argv), timeout=_QUERY_TIMEOUT)
        except SshError as exc:
            return Answer(None, "", str(exc))
        return Answer(code, out)

    def read(self, path: str) -> str | None:
        answer = self.query(["cat", path])
        return answer.stdout if answer.returncode == 0 else None

    def fetch(self, remote: str, local: Path) -> bool:
        from relgate.remote.errors import SshError

        try:
            with self._turn:
                return self._ssh.get(remote, local)
        except SshError:
            return False

    def mkdir(self, path: str) -> None:
        answer = self.query(["mkdir", "-p", path])
        if answer.returncode != 0:
            raise OSError(f"mkdir -p {path} on {self.where}: {answer.stdout.strip() or answer.stderr.strip()}")

    def checkout(self, side: Any, workdir: str, project: str, safe: str, index: int = 0) -> tuple[str, str]:
        from relgate.remote.delivery import deliver, remote_layout

        with self._turn:
            d = deliver(self._ssh, repo=side.repo, commit=side.commit, workdir=workdir, project=project,
                        project_subdir=side.subdir)
        how = ("checkout reused" if d.reused else "checked out") + (
            f", {'incremental' if d.incremental else 'full'} bundle of {d.bundle_bytes} bytes over SSH"
            if d.bundle_bytes else "")
        if not index:
            return d.checkout, how
        bare, tree = f"{remote_layout(workdir, project)}/repo.git", f"{d.checkout}.{index}"
        made = self.query(["sh", "-c", f'[ -d "$2" ] || git -C "$1" worktree add -q --detach "$2" "$3"; '
                           'git -C "$2" rev-parse HEAD', "sh", bare, tree, side.commit])
        if made.returncode != 0 or made.stdout.split()[-1:] != [side.commit]:
            raise OSError(f"cannot make the checkout {tree} on {self.where}: {made.stdout.strip()[-300:]}")
        return tree, "another checkout for jobs side by side"

    def close(self) -> None:
        self._ssh.close()


def submitter(host: Host) -> LocalSubmit | SshSubmit:
    """Through the login node when the host file names one (``address``), else from here."""
    return SshSubmit(host) if host.spec.address else LocalSubmit(host)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise OSError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout
