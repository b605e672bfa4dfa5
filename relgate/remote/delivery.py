"""Exact commit delivery: the candidate commit reaches a host as a git bundle, is checked out
there (one checkout per project and commit, reused while the commit is the same), and the
remote HEAD is verified equal to the candidate sha before anything runs.

On the host, under ``workdir/PROJECT/``: ``repo.git`` (a bare repository that keeps every
delivered commit as ``refs/relgate/SHA``) and one detached worktree per commit. The bundle
is incremental (``--not`` the delivered commits that are ancestors of the candidate) when
the host already holds one, full otherwise. A dirty local tree ships only what it is: the
committed candidate (the records say dirty, as they do locally).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
from pathlib import Path

from relgate.core.record import record
from relgate.remote.ssh import SshError, SshExecutor

__all__ = ["Delivery", "deliver", "make_bundle", "remote_layout"]


@record
class Delivery:
    commit: str
    checkout: str  # the worktree on the host
    project_dir: str  # the project's root inside that worktree
    bundle_bytes: int  # 0 when the host already held the commit
    incremental: bool
    reused: bool  # the checkout for this commit was already there
    channel: str = ""  # how the bundle went: "sftp", or "exec" (cat, sha256-checked) where sshd has no SFTP


def remote_layout(workdir: str, project: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", project) or "project"
    return f"{workdir.rstrip('/')}/{safe}"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SshError(f"git {' '.join(args)} in {repo}: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def make_bundle(repo: Path, commit: str, out: Path, *, bases: list[str]) -> bool:
    """Bundle ``commit`` (which must be HEAD of ``repo``) into ``out``, excluding ``bases``
    that are its ancestors; True when that made it incremental."""
    head = _git(repo, "rev-parse", "HEAD")
    if head != commit:
        raise SshError(f"HEAD of {repo} moved to {head[:12]} while delivering {commit[:12]}")
    usable = [b for b in bases if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", b, commit],
                                                  capture_output=True).returncode == 0]
    usable = [b for b in usable if b != commit]
    args = ["bundle", "create", "-q", str(out), "HEAD"] + (["--not", *usable] if usable else [])
    _git(repo, *args)
    return bool(usable)


def deliver(ex: SshExecutor, *, repo: Path, commit: str, workdir: str, project: str,
            project_subdir: str = ".") -> Delivery:
    """Make ``commit`` of the local ``repo`` the checked-out HEAD of a worktree on the host."""
    base = remote_layout(workdir, project)
    bare = f"{base}/repo.git"
    checkout = f"{base}/{commit}"
    q = shlex.quote
    code, out = ex.capture(f"mkdir -p {q(base)} && {{ [ -d {q(bare)} ] || git init -q --bare {q(bare)}; }} && "
                           f"git -C {q(bare)} for-each-ref --format='%(objectname)' refs/relgate/")
    if code != 0:
        raise SshError(f"{ex.spec.name}: cannot prepare {bare} (is git installed there?): {out.strip()[-300:]}")
    held = [line.strip() for line in out.splitlines() if re.fullmatch(r"[0-9a-f]{40,64}", line.strip())]
    sent, incremental, channel = 0, False, ""
    if commit not in held:
        local = [h for h in held if subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{h}^{{commit}}"],
                                                   capture_output=True).returncode == 0]
        with tempfile.TemporaryDirectory(prefix="relgate-bundle-") as tmp:
            bundle = Path(tmp) / f"{commit}.bundle"
            incremental = make_bundle(repo, commit, bundle, bases=local)
            sent = bundle.stat().st_size
            remote_bundle = f"{base}/incoming-{commit}.bundle"
            channel = ex.put(bundle, remote_bundle)
        code, out = ex.capture(f"git -C {q(bare)} fetch -q {q(remote_bundle)} HEAD:refs/relgate/{commit} 2>&1; "
                               f"rc=$?; rm -f {q(remote_bundle)}; exit $rc", timeout=600)
        if code != 0:
            raise SshError(f"{ex.spec.name}: the bundle of {commit[:12]} did not apply: {out.strip()[-300:]}")
    # One round trip: the checkout reused (tracked files as committed; build outputs and
    # untracked files stay as a warm cache) or made afresh, then its HEAD and tracked files verified.
    code, out = ex.capture(
        f"c={q(checkout)}; b={q(bare)}; "
        f'if [ -d "$c" ] && [ "$(git -C "$c" rev-parse HEAD 2>/dev/null)" = {commit} ]; then echo @reused; '
        f'git -C "$c" diff --quiet HEAD -- || git -C "$c" checkout -qf HEAD; '
        f'else rm -rf "$c"; git -C "$b" worktree prune; '
        f'git -C "$b" worktree add -q --detach "$c" {commit} 2>&1 || {{ echo @not-checked-out; exit 3; }}; fi; '
        f'echo "@head $(git -C "$c" rev-parse HEAD)"; git -C "$c" diff --quiet HEAD -- && echo @clean',
        timeout=600)
    if "@not-checked-out" in out:
        text = out.replace("@not-checked-out", "").strip()
        raise SshError(f"{ex.spec.name}: cannot check out {commit[:12]} in {checkout}: {text[-300:]}")
    reused = re.search(r"^@reused$", out, re.MULTILINE) is not None
    head = re.search(r"^@head (\S*)$", out, re.MULTILINE)
    found = head.group(1) if head else ""
    if code != 0 or found != commit or not re.search(r"^@clean$", out, re.MULTILINE):
        raise SshError(f"{ex.spec.name}: HEAD of {checkout} is {found[:12] or 'unknown'}, "
                       f"not the candidate {commit[:12]} (or its tracked files differ); nothing was run")
    sub = project_subdir.strip("/")
    project_dir = checkout if sub in ("", ".") else f"{checkout}/{sub}"
    return Delivery(commit=commit, checkout=checkout, project_dir=project_dir, bundle_bytes=sent,
                    incremental=incremental, reused=reused, channel=channel)
