"""The SSH executor's own cost, against a real sshd on 127.0.0.1 started for the run.

1. Per-command latency on a kept connection: relgate's ``SshExecutor.run`` (wrapper script,
   own process group, streamed log) vs a raw paramiko ``exec_command`` on the same transport,
   alternating. Goal: relgate / raw ≤ 1.1. Both pay for the login shell sshd starts, which
   here reads root's ``~/.bashrc`` (pyenv's set-up: ≈100 ms); for reference the same pair is
   measured again with that file hidden (a bare shell, as on a plain GPU box), where what
   relgate's wrapper costs on the host (``/bin/sh``, ``setsid``, the command as a program) shows.
2. Bytes shipped for a one-commit change: the incremental bundle vs the full one, on a copy
   of examples/tinyinfer and on a clone of relgate's own history. Goal ≤ 0.02.
3. A step printing 100 MB remotely: relgate (a fresh interpreter running the executor into a
   log file) vs ``ssh host cmd > file`` (OpenSSH's client), alternating. Goals: ≤ 1.2 wall,
   relgate's peak memory ≤ 64 MiB (ru_maxrss of that interpreter, imports included).
4. A file of ``--transfer-mb`` MB (default 64) up and back down: relgate over SFTP, relgate over
   the exec channel (``transfer = "exec"``: ``cat``, the host's sha256 checked, ``mv``) and
   OpenSSH's ``ssh host 'cat > f' < file``, alternating. Goal: exec / sftp ≤ 1.5 each way.

    python bench/remote_ssh.py [--rounds N] [--mb 100] [--line TEXT]
                               [--only latency|bundle|stream|transfer ...] [--transfer-mb N] [--host-file F]
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sshd_support import start_sshd  # noqa: E402

from _common import REPO, git, make_project  # noqa: E402
from relgate.manifest.schema import read_toml  # noqa: E402
from relgate.manifest.specs import parse_host  # noqa: E402
from relgate.remote.delivery import deliver  # noqa: E402
from relgate.remote.ssh import SshExecutor  # noqa: E402
from relgate.run.executor import CommandRequest  # noqa: E402
from relgate.run.hosts import Host, HostFacts  # noqa: E402


class _Null:
    path = None

    def write(self, text: str) -> None:
        pass


def _executor(host_file: Path) -> SshExecutor:
    return SshExecutor(Host(spec=parse_host(read_toml(host_file), path=host_file), facts=HostFacts()))


def _verdict(ratio: float, goal: float) -> str:
    return "PASS" if ratio <= goal else "MISS"


def latency(ex: SshExecutor, rounds: int, *, label: str = "latency", goal: float | None = 1.1) -> float:
    transport = ex._transport()

    def raw() -> float:
        t0 = time.perf_counter()
        chan = transport.open_session()
        chan.exec_command("true")
        while chan.recv(65536):
            pass
        code = chan.recv_exit_status()
        assert code == 0
        return time.perf_counter() - t0

    def ours() -> float:
        t0 = time.perf_counter()
        result = ex.run(CommandRequest(argv=("true",), cwd=Path("/tmp")), _Null())
        assert result.ok, result
        return time.perf_counter() - t0

    raw(), ours()  # warm-up
    a, b = [], []
    for _ in range(rounds):
        b.append(raw())
        a.append(ours())
    ours_ms, raw_ms = statistics.median(a) * 1000, statistics.median(b) * 1000
    ratio = ours_ms / raw_ms
    verdict = f"(goal ≤ {goal:g}) {_verdict(ratio, goal)}" if goal is not None else "(for reference, no goal)"
    print(f"{label}: relgate {ours_ms:.1f} ms, raw paramiko {raw_ms:.1f} ms (median of {rounds}); "
          f"relgate adds {ours_ms - raw_ms:.1f} ms; ratio {ratio:.3f} {verdict}")
    return ratio


def _bare_shell(tmp: Path) -> tuple[str, ...] | None:
    """An argv prefix that runs sshd in a mount namespace of its own with this user's
    ``~/.bashrc`` hidden (bind-mounted over by an empty file; nothing leaks back), or None
    where ``unshare`` is missing."""
    if shutil.which("unshare") is None:
        return None
    empty = tmp / "empty-rc"
    empty.touch()
    rc = Path.home() / ".bashrc"
    return ("unshare", "-m", "--propagation", "slave", "sh", "-c",
            f'[ -f {rc} ] && mount --bind "$0" {rc}; exec "$@"', str(empty))


def bare_latency(tmp: Path, rounds: int) -> None:
    prefix = _bare_shell(tmp)
    if prefix is None:
        print("latency, bare shell: skipped (no unshare here)")
        return
    try:
        server = start_sshd(tmp / "sshd-bare", netns=prefix)
    except RuntimeError as exc:
        print(f"latency, bare shell: skipped ({exc})")
        return
    try:
        ex = _executor(server.host_file(tmp / "hosts-bare" / "gpu1.toml"))
        latency(ex, rounds, label="latency, bare shell (~/.bashrc hidden)", goal=None)
        ex.close()
    finally:
        server.stop()


def bundles(ex: SshExecutor, tmp: Path) -> None:
    tiny, _ = make_project(tmp / "tiny", "tinyinfer")
    own = tmp / "own"
    subprocess.run(["git", "clone", "-q", "--no-local", str(REPO), str(own)], check=True)
    for label, repo in (("examples/tinyinfer", tiny), ("relgate's own history", own)):
        work = f"{ex.capture('mktemp -d')[1].strip()}/work-{repo.name}"
        sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        full = deliver(ex, repo=repo, commit=sha.strip(), workdir=work, project=repo.name)
        (repo / "BENCH_NOTE.md").write_text("one more line for a one-commit change\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "one commit")
        sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        inc = deliver(ex, repo=repo, commit=sha.strip(), workdir=work, project=repo.name)
        assert inc.incremental and not full.incremental
        ratio = inc.bundle_bytes / full.bundle_bytes
        print(f"bundle ({label}): incremental {inc.bundle_bytes} B, full {full.bundle_bytes} B; ratio {ratio:.4f} "
              f"(goal ≤ 0.02) {_verdict(ratio, 0.02)}")


_CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path[:0] = {paths!r}
from relgate.manifest.schema import read_toml
from relgate.manifest.specs import parse_host
from relgate.remote.ssh import SshExecutor
from relgate.run.executor import CommandRequest, FileSink
from relgate.run.hosts import Host, HostFacts
host_file = Path({host_file!r})
ex = SshExecutor(Host(spec=parse_host(read_toml(host_file), path=host_file), facts=HostFacts()))
ex.capture("true")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
with open({out!r}, "w") as fh:
    result = ex.run(CommandRequest(shell={cmd!r}, cwd=Path("/tmp")), FileSink(fh, Path({out!r})))
wall = time.perf_counter() - t0
print(json.dumps({{"wall": wall, "ok": result.ok, "rss_before": before,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


_FABRIC = """
import json, resource, sys, time
from pathlib import Path
sys.path[:0] = {paths!r}
from relgate.manifest.schema import read_toml
from relgate.manifest.specs import parse_host
from relgate.remote.ssh import connect
host_file = Path({host_file!r})
conn = connect(parse_host(read_toml(host_file), path=host_file))
t0 = time.perf_counter()
result = conn.run({cmd!r}, hide=True, warn=True)
print(json.dumps({{"wall": time.perf_counter() - t0, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def stream(host_file: Path, tmp: Path, rounds: int, mb: int, fabric_mb: int, line: str) -> None:
    cmd = f"yes {shlex.quote(line)} | head -c {mb * 1000 * 1000}"  # 100-byte lines by default
    ours_out, theirs_out = tmp / "ours.log", tmp / "ssh.log"
    child = _CHILD.format(paths=[str(REPO)], host_file=str(host_file), out=str(ours_out), cmd=cmd)
    spec = parse_host(read_toml(host_file), path=host_file)
    ssh = ["ssh", "-q", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={spec.known_hosts}",
           "-o", "StrictHostKeyChecking=yes", "-o", "ControlMaster=no", "-i", str(spec.identity), "-p", str(spec.port),
           f"{spec.user}@{spec.address}", cmd]
    a, b, rss = [], [], []
    for i in range(rounds + 1):
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(1)
        record = json.loads(done.stdout.strip().splitlines()[-1])
        assert record["ok"], record
        t0 = time.perf_counter()
        with open(theirs_out, "wb") as fh:
            subprocess.run(ssh, stdout=fh, check=True)
        theirs = time.perf_counter() - t0
        assert ours_out.stat().st_size == theirs_out.stat().st_size, (ours_out.stat(), theirs_out.stat())
        if i == 0:
            continue  # warm-up
        a.append(record["wall"])
        b.append(theirs)
        rss.append(record["rss"] / 1024)
        print(f"  round {i}: relgate {record['wall']:.2f} s, ssh > file {theirs:.2f} s, relgate peak "
              f"{record['rss'] / 1024:.1f} MiB (before the step {record['rss_before'] / 1024:.1f} MiB)")
    for small in (fabric_mb, 2 * fabric_mb) if fabric_mb else ():
        # Fabric's own capture keeps all output and slows as it grows (100 MB ran past 13 minutes here).
        small_cmd = f"yes {'x' * 99} | head -c {small * 1000 * 1000}"
        fabric_child = _FABRIC.format(paths=[str(REPO)], host_file=str(host_file), cmd=small_cmd)
        done = subprocess.run([sys.executable, "-c", fabric_child], capture_output=True, text=True)
        if done.returncode == 0:
            record = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  for reference, Fabric's own capture (Connection.run, hide=True) of {small} MB: "
                  f"{record['wall']:.2f} s ({small / record['wall']:.1f} MB/s), peak {record['rss'] / 1024:.1f} MiB")
    ratio = statistics.median(a) / statistics.median(b)
    peak = max(rss)
    print(f"stream {mb} MB: relgate {statistics.median(a):.2f} s, ssh > file {statistics.median(b):.2f} s; ratio "
          f"{ratio:.2f} (goal ≤ 1.2) {_verdict(ratio, 1.2)}; relgate peak memory {peak:.1f} MiB (goal ≤ 64) "
          f"{'PASS' if peak <= 64 else 'MISS'}")


def transfer(server_host_file: Path, tmp: Path, rounds: int, mb: int) -> None:
    import hashlib
    import os

    exec_file = server_host_file.with_name("gpu1-exec.toml")
    exec_file.write_text(server_host_file.read_text().replace('name = "gpu1"', 'name = "gpu1x"')
                         + 'transfer = "exec"\n')
    sftp, chan = _executor(server_host_file), _executor(exec_file)
    spec = sftp.spec
    blob = tmp / "blob.bin"
    with open(blob, "wb") as fh:
        for _ in range(mb):
            fh.write(os.urandom(1 << 20))
    want = hashlib.sha256(blob.read_bytes()).hexdigest()
    remote = str(tmp / "remote.bin")
    ssh = ["ssh", "-q", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={spec.known_hosts}",
           "-o", "StrictHostKeyChecking=yes", "-o", "ControlMaster=no", "-i", str(spec.identity), "-p", str(spec.port),
           f"{spec.user}@{spec.address}"]

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def up_ssh() -> None:
        with open(blob, "rb") as fh:
            subprocess.run([*ssh, f"cat > {remote}"], stdin=fh, check=True)

    def down_ssh() -> None:
        with open(tmp / "back.bin", "wb") as fh:
            subprocess.run([*ssh, f"cat {remote}"], stdout=fh, check=True)

    ways = {"sftp": sftp, "exec": chan}
    times: dict[str, list[float]] = {f"{w} {d}": [] for w in (*ways, "ssh cat") for d in ("up", "down")}
    for i in range(rounds + 1):
        got = {}
        for name, ex in ways.items():
            got[f"{name} up"] = timed(lambda ex=ex: ex.put(blob, remote))
            got[f"{name} down"] = timed(lambda ex=ex: ex.get(remote, tmp / "back.bin"))
            assert hashlib.sha256((tmp / "back.bin").read_bytes()).hexdigest() == want
        got["ssh cat up"], got["ssh cat down"] = timed(up_ssh), timed(down_ssh)
        if i == 0:
            continue  # warm-up (connections opened, page cache)
        for key, value in got.items():
            times[key].append(value)
        print(f"  round {i}: " + ", ".join(f"{k} {v:.2f} s" for k, v in got.items()))
    assert chan.no_sftp is None and chan.spec.transfer == "exec"
    for key, values in times.items():
        print(f"  {key}: min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f} s")
    for d in ("up", "down"):
        ratio = statistics.median(times[f"exec {d}"]) / statistics.median(times[f"sftp {d}"])
        vs = statistics.median(times[f"exec {d}"]) / statistics.median(times[f"ssh cat {d}"])
        print(f"transfer {mb} MB {d}: exec / sftp {ratio:.2f} (goal ≤ 1.5) {_verdict(ratio, 1.5)}; "
              f"exec / ssh cat {vs:.2f}")
    sftp.close()
    chan.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--line", default="x" * 99, help="the line the remote step prints over and over (default: "
                   "99 x's; a compiler-like line with ':' makes redaction look for secret words in every chunk)")
    p.add_argument("--fabric-mb", type=int, default=2, help="for reference, Fabric's own capture of this many MB "
                   "and twice as many (0: not measured)")
    p.add_argument("--transfer-mb", type=int, default=64, help="the file the transfer part sends up and back")
    p.add_argument("--only", choices=("latency", "bundle", "stream", "transfer"), action="append",
                   help="run only these parts (repeatable)")
    p.add_argument("--host-file", type=Path, help="use the sshd this host file names instead of starting one "
                   "(user, identity and known_hosts required)")
    args = p.parse_args()
    parts = set(args.only or ("latency", "bundle", "stream", "transfer"))
    with tempfile.TemporaryDirectory(prefix="relgate-bench-ssh-") as tmp_name:
        tmp = Path(tmp_name)
        server = None if args.host_file else start_sshd(tmp / "sshd")
        try:
            host_file = args.host_file.resolve() if args.host_file else server.host_file(tmp / "hosts" / "gpu1.toml")
            ex = _executor(host_file)
            if "latency" in parts:
                latency(ex, max(args.rounds * 10, 20))
                bare_latency(tmp, max(args.rounds * 10, 20))
            if "bundle" in parts:
                bundles(ex, tmp)
            ex.close()
            if "stream" in parts:
                stream(host_file, tmp, args.rounds, args.mb, args.fabric_mb, args.line)
            if "transfer" in parts:
                transfer(host_file, tmp, args.rounds, args.transfer_mb)
        finally:
            if server is not None:
                server.stop()
    print(f"(ru_maxrss of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
