#!/usr/bin/env python3
"""Qualify the C example through relgate's SSH executor against a real sshd on 127.0.0.1.

On whatever machine it runs (a workstation here, the GPU machine with the kit):

1. commits a copy of ``examples/tinyinfer`` into a fresh git repository (the candidate);
2. starts ``sshd`` (``--sshd``: the system's here, the kit's wrapper on the device) on
   127.0.0.1 with host and client keys generated for this run, and writes a strict
   ``known_hosts`` for it;
3. writes a hosts folder: ``local`` with ``detect = false`` and only the CPU tools it has
   (so it never claims a GPU, even on a GPU machine), and ``gpu``, ``kind = "ssh"`` at
   127.0.0.1, whose board, driver and toolkit are detected over SSH;
4. runs ``nox -s host gate contract bench -- --require-all`` on the default manifests; where
   relgate has a ``signoff`` session, the whole sign-off around it: first the previous release
   (the same sources one commit earlier, tagged ``v0.3.0-previous``) through ``gate contract``
   with its evidence accepted as the baseline; after the lanes, the release's boards named as
   this run used them (the CPU items on ``local``, the CUDA items on the board detected over
   SSH), ``nox -s compare -- --previous v0.3.0-previous`` (previous and candidate interleaved on
   the same host and board; again while the policy asks for another batch, at most 4),
   ``nox -s evidence``, the three manual items skipped with the reason (a person's to
   attest), ``nox -s signoff``, and ``nox -s tag``, which must refuse (CI and a maintainer
   have not attested);
5. writes into ``--out``: ``summary.md`` (placement checked, verdicts, what was not run),
   ``status.json`` (``relgate status --json``), ``nox.log``, ``logs.txt`` (the logs of
   the steps on the ssh host and of every step that did not pass, then sshd's log),
   ``evidence.tsv``, ``measurements.tsv`` (the bench rows with their metadata),
   ``check.txt`` (``relgate check`` and the host files) and ``signoff.txt``: eight flat text files.

``--cpu-on ssh`` also sends the CPU steps to the ssh host (a rehearsal of the remote path
where no GPU exists). Exit status: nox's (1 when ``--require-all`` finds an arm not run),
3 when a step was placed where it must not be, 2 for bad usage or an sshd that will not start.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
CHECKOUT = EXAMPLE.parent.parent
SSH_HOST = "gpu"
CPU_TOOLS = ("cc", "gcc", "make", "git")
GPU_CAPS = {"cuda", "nvcc"}
SESSIONS = ("host", "gate", "contract", "bench")
MAX_BATCHES = 4  # of nox -s compare, each a separate batch of both sides
PREVIOUS = "v0.3.0-previous"  # the tag of the previous release in the qualification repository
# The manual items are a person's: the qualification writes down why it did not do them,
# and `nox -s tag` still refuses until CI and a maintainer attest (tag_requires).
SKIPS = {
    "agent-checks": "manual agent checks are a person's, on the release hardware; the automated SSH "
                    "qualification ran none",
    "ci-green": "CI is not part of the device qualification; a maintainer attests it on the release commit",
    "maintainer-approval": "a maintainer approves the release after reading this sign-off; not given by a script",
}
REMOTE_ONLY = "qualify-remote"  # the capability --cpu-on ssh requires of every step


class Failed(Exception):
    """A one-line reason to stop with exit 2."""


def sh(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)  # type: ignore


GIT_ENV = {"GIT_AUTHOR_NAME": "relgate qualify", "GIT_AUTHOR_EMAIL": "qualify@127.0.0.1",
           "GIT_COMMITTER_NAME": "relgate qualify", "GIT_COMMITTER_EMAIL": "qualify@127.0.0.1"}


def git(root: Path, *argv: str) -> str:
    done = sh(["git", *argv], cwd=root, env={**os.environ, **GIT_ENV})
    if done.returncode != 0:
        raise Failed(f"git {argv[0]} in {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def previous_release(work: Path) -> tuple[Path, str]:
    """The example's tree (no build output, not qualified/) committed in a repository of its own
    and tagged ``PREVIOUS``: the release the candidate is measured and diffed against."""
    root = work / "tinyinfer"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "qualified"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "previous release: examples/tinyinfer")
    git(root, "tag", "-a", "-m", "the previous release (same sources, one commit before the candidate)", PREVIOUS)
    return root, git(root, "rev-parse", "HEAD")


def candidate(root: Path) -> str:
    """One commit after the previous release, outside the release notes (so it is its own candidate)."""
    readme = root / "README.md"
    readme.write_text(readme.read_text() + "\nRelease candidate, qualified over SSH by relgate.\n")
    git(root, "commit", "-qam", "candidate: examples/tinyinfer")
    return git(root, "rev-parse", "HEAD")


def keygen(keygen_bin: str, path: Path) -> Path:
    done = sh([keygen_bin, "-q", "-t", "ed25519", "-N", "", "-C", f"relgate-qualify-{path.name}", "-f", str(path)])
    if done.returncode != 0:
        raise Failed(f"{keygen_bin}: {done.stderr.strip()}")
    return path


def start_sshd(sshd: str, keygen_bin: str, d: Path) -> tuple[subprocess.Popen[bytes], int, str]:
    """sshd -D on 127.0.0.1 (a free port); returns the process, its port and the known_hosts line."""
    d.mkdir(mode=0o700)
    host_key = keygen(keygen_bin, d / "ssh_host_ed25519_key")
    client = keygen(keygen_bin, d / "id_ed25519")
    auth = d / "authorized_keys"
    auth.write_text((d / "id_ed25519.pub").read_text())
    auth.chmod(0o600)
    try:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation's empty dir
    except OSError as exc:
        raise Failed(f"/run/sshd (sshd's privilege separation dir): {exc.strerror}") from None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Sessions get this process's PATH (nvcc, nvidia-smi, the kit's git): relgate's delivery
    # runs git on the host without the host file's env (see README, "found").
    (d / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1:{port}\nHostKey {host_key}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {auth}\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nUseDNS no\n"
        "PrintMotd no\nPrintLastLog no\nMaxStartups 100:30:200\nMaxSessions 100\nLogLevel VERBOSE\n"
        f"Subsystem sftp internal-sftp\nSetEnv PATH={os.environ.get('PATH', '/usr/bin:/bin')}\n")
    check = sh([sshd, "-t", "-f", str(d / "sshd_config")])
    if check.returncode != 0:
        raise Failed(f"{sshd} -t refused {d / 'sshd_config'}: {check.stderr.strip()}")
    log = d / "sshd.log"
    log.write_text("")
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config"), "-E", str(log)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while "Server listening" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise Failed(f"sshd did not start on 127.0.0.1:{port}: {log.read_text().strip()[-400:]}")
        time.sleep(0.05)
    kind, blob = (d / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    return proc, port, f"[127.0.0.1]:{port} {kind} {blob}"


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def write_hosts(hosts: Path, *, port: int, known_hosts: str, key: Path, workdir: Path, cpu_on: str) -> None:
    hosts.mkdir()
    caps = [t for t in CPU_TOOLS if shutil.which(t)]
    (hosts / "local.toml").write_text(
        "# This machine: nothing detected, so a GPU here is never claimed; only its CPU tools.\n"
        f'[host]\nname = "local"\nkind = "local"\ndetect = false\ncapabilities = {json.dumps(caps)}\n')
    (hosts / "known_hosts").write_text(known_hosts + "\n")
    extra = f'capabilities = ["{REMOTE_ONLY}"]\n' if cpu_on == "ssh" else ""
    (hosts / f"{SSH_HOST}.toml").write_text(
        "# The GPU machine over SSH: board, driver, toolkit detected there; strict known_hosts.\n"
        f'[host]\nname = "{SSH_HOST}"\nkind = "ssh"\naddress = "127.0.0.1"\nport = {port}\n'
        f'user = "{getpass.getuser()}"\nidentity = "{key}"\nknown_hosts = "known_hosts"\n'
        f'workdir = "{workdir}"\n' + extra)


def name_the_boards(manifests: Path, *, cpu: str, cuda: str) -> None:
    """The release is qualified on the boards this run used: the CPU items on ``cpu``, the CUDA
    items on ``cuda`` (the board detected over SSH, or ``host:gpu`` where it has none)."""
    path = manifests / "checklist.toml"
    text = path.read_text()
    old = 'boards = ["host:local"]\n'
    if old not in text:
        raise Failed(f"{path}: no `{old.strip()}` line under [release] to name the boards in")
    path.write_text(text.replace(old, f"boards = {json.dumps([cpu])}\n"
                                      f"backend_boards = {{ cuda = {json.dumps([cuda])} }}   # qualify_over_ssh\n", 1))


def board_of(steps: list[dict], host: str) -> str:
    return next((s["board"] for s in steps if s["host"] == host and s["board"]), None) or f"host:{host}"


def write_manifests(dest: Path, root: Path, cpu_on: str) -> None:
    shutil.copytree(CHECKOUT / "manifests", dest)
    project = dest / "project.toml"
    project.write_text(project.read_text().replace('root = "../examples/tinyinfer"', f'root = "{root}"'))
    if cpu_on != "ssh":
        return
    # Every step that requires nothing requires what only the ssh host offers (a check of a
    # release target takes the target's; relgate's builtins run here).
    for name, marker in (("lanes.toml", "[target."), ("builds.toml", "[release."), ("builds.toml", "[[check]]")):
        path = dest / name
        out: list[str] = []
        block: list[str] = []

        def flush() -> None:
            keys = {line.split("=")[0].strip() for line in block if "=" in line}
            if block and block[0].startswith(marker) and not keys & {"requires", "release", "builtin"}:
                block.insert(1, f'requires = ["{REMOTE_ONLY}"]\n')
            out.extend(block)
            block.clear()

        for line in path.read_text().splitlines(keepends=True):
            if line.startswith("["):
                flush()
            block.append(line)
        flush()
        path.write_text("".join(out))


def nox_sessions(env: dict[str, str]) -> set[str]:
    done = sh([sys.executable, "-m", "nox", "-f", str(CHECKOUT / "noxfile.py"), "-l"], env=env)
    return {line.split()[1] for line in done.stdout.splitlines() if line[:2] in ("* ", "- ")}


def run_logged(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> int:
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            fh.write(line)
        rc = proc.wait()
        fh.write(f"# exit {rc}\n")
    return rc


def gpu_steps(manifests: Path) -> set[str]:
    """The steps whose placement needs what only a GPU machine offers (``requires`` cuda/nvcc)."""
    lanes = tomllib.loads((manifests / "lanes.toml").read_text())
    builds = tomllib.loads((manifests / "builds.toml").read_text())
    ours = {n for n, lane in lanes.get("lanes", {}).items() if lane in SESSIONS}  # the lanes this run runs
    names = {n for n, t in lanes.get("target", {}).items() if GPU_CAPS & set(t.get("requires", ())) and n in ours}
    releases = {n for n, t in builds.get("release", {}).items() if GPU_CAPS & set(t.get("requires", ()))}
    return names | {c["name"] for c in builds.get("check", []) if c.get("release") in releases}


def misplaced(steps: list[dict], gpu: set[str]) -> list[str]:
    """GPU steps that ran anywhere but the ssh host, or were not run for another reason than
    a missing capability; and any step missing from the ledger."""
    wrong = [f"{name} has no ledger row" for name in sorted(gpu - {s["step"] for s in steps})]
    for s in steps:
        if s["step"] not in gpu:
            continue
        if s["verdict"] != "not-run" and s["host"] != SSH_HOST:
            wrong.append(f"{s['step']} ran on {s['host']}, not on {SSH_HOST}")
        if s["verdict"] == "not-run" and "no host offers" not in (s["reason"] or ""):
            wrong.append(f"{s['step']} not run: {s['reason']}")
    return wrong


def ledger_steps(cli: list[str], env: dict[str, str], root: Path, keep: Path | None = None,
                 commit: str | None = None) -> list[dict]:
    status = sh([*cli, "status", "--json", *(["--commit", commit] if commit else [])], env=env, cwd=root)
    if status.returncode != 0:
        raise Failed(f"relgate status --json: {status.stderr.strip()}")
    if keep is not None:
        keep.write_text(status.stdout)
    return json.loads(status.stdout)["steps"]


def gather(out: Path, home: Path, steps: list[dict], sshd_log: Path, previous: list[dict]) -> tuple[int, int]:
    sys.path.insert(0, str(CHECKOUT))
    from relgate.ledger.store import Ledger

    parts = []
    for s in steps:
        if s["host"] == SSH_HOST or s["verdict"] != "pass":
            body = (home / s["log_path"]).read_text(errors="replace") if s["log_path"] else "(no log)\n"
            parts.append(f"===== {s['step']} on {s['host']}: {s['verdict']} ({s['reason'] or '-'})\n{body}")
    parts.append(f"===== sshd log\n{sshd_log.read_text(errors='replace')}")
    (out / "logs.txt").write_text("\n".join(parts))
    with Ledger.open(home) as ledger:
        rows = ledger.evidence()
    lines = ["# host\tboard\ttoolkit\tlane\ttarget\tcommit\tsha256 (one capture per block)"]
    for r in rows:
        lines.append(f"# {r.host}\t{r.board or '-'}\t{r.toolkit or '-'}\t{r.lane}\t{r.target}\t{r.commit_sha}\t{r.sha256}")
        lines.extend((home / r.path).read_text().splitlines())
    (out / "evidence.tsv").write_text("\n".join(lines) + "\n")
    meas = ["step\thost\tboard\tdriver\ttoolkit\tcommit\tmeasurement"]
    for s in [*steps, *previous]:  # the bench lane's rows, and the sign-off's measure and scorer runs (both sides)
        if s["log_path"] and (s["lane"] in ("bench", "measure", "quality")):
            for line in (home / s["log_path"]).read_text().splitlines():
                if line.startswith(("bench ", "call ", "summary ", "api_summary ")):
                    meas.append("\t".join([s["step"], s["host"], s["board"] or "-", s["driver"] or "-",
                                           s["toolkit"] or "-", s["commit_sha"], line]))
    (out / "measurements.tsv").write_text("\n".join(meas) + "\n")
    return len(rows), len(meas) - 1


def summarise(out: Path, *, sha: str, rc: int, steps: list[dict], wrong: list[str], evidence: int,
              measurements: int, signoff: str, cpu_on: str) -> None:
    remote = [s for s in steps if s["host"] == SSH_HOST]
    facts = next(((s["board"], s["driver"], s["toolkit"]) for s in remote), (None, None, None))
    lines = [f"# qualify_over_ssh: tinyinfer {sha}", "",
             f"- nox -s {' '.join(SESSIONS)} -- --require-all: exit {rc} ({'green' if rc == 0 else 'RED'})",
             f"- CPU steps on: {cpu_on}; ssh host {SSH_HOST} = sshd on 127.0.0.1 (strict known_hosts)",
             f"- facts detected over SSH on {SSH_HOST}: board={facts[0]}, driver={facts[1]}, toolkit={facts[2]}",
             f"- placement: {'as intended' if not wrong else 'WRONG: ' + '; '.join(wrong)}",
             f"- evidence captures: {evidence}; measurement rows: {measurements}; sign-off: {signoff}", "",
             "| step | lane | host | verdict | reason |", "| --- | --- | --- | --- | --- |"]
    lanes = [s for s in steps if s["session"] in SESSIONS]
    lines += [f"| {s['step']} | {s['lane'] or '-'} | {s['host']} | {s['verdict']} | {s['reason'] or ''} |"
              for s in lanes]
    not_run = [s["step"] for s in lanes if s["verdict"] != "pass"]
    lines += ["", f"Not passed: {', '.join(not_run) if not_run else 'none'}"]
    rest = [s for s in steps if s["session"] not in SESSIONS]
    if rest:  # the sign-off's own runs at the candidate: compare (both sides), the scorers, evidence
        lines += ["", "Sign-off runs at the candidate:", "", "| session | step | host | board | verdict | reason |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {s['session']} | {s['step']} | {s['host']} | {s['board'] or '-'} | {s['verdict']} | "
                  f"{(s['reason'] or '').replace('|', '/')} |" for s in rest]
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for the gathered files (created)")
    p.add_argument("--sshd", default=os.environ.get("RELGATE_SSHD", "/usr/sbin/sshd"))
    p.add_argument("--ssh-keygen", default=shutil.which("ssh-keygen") or "ssh-keygen")
    p.add_argument("--cpu-on", choices=("local", "ssh"), default="local")
    p.add_argument("--keep", action="store_true", help="keep the temp folder (printed)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="relgate-qualify-"))
    proc = None
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        root, prev_sha = previous_release(work)
        proc, port, known = start_sshd(args.sshd, args.ssh_keygen, work / "ssh")
        print(f"qualify: sshd pid {proc.pid} on 127.0.0.1:{port}", flush=True)
        write_hosts(work / "hosts", port=port, known_hosts=known, key=work / "ssh" / "id_ed25519",
                    workdir=work / "remote", cpu_on=args.cpu_on)
        write_manifests(work / "manifests", root, args.cpu_on)
        home = work / "home"
        env = {**os.environ, "RELGATE_MANIFESTS": str(work / "manifests"), "RELGATE_HOSTS": str(work / "hosts"),
               "RELGATE_HOME": str(home), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))}
        cli = [sys.executable, "-m", "relgate.cli"]
        hosts = "".join(f"# --- hosts/{f.name}\n{f.read_text()}" for f in sorted((work / "hosts").glob("*.toml")))
        checked = sh([*cli, "check"], env=env, cwd=root)
        (args.out / "check.txt").write_text(f"$ relgate check  # exit {checked.returncode}\n"
                                            f"{checked.stdout}{checked.stderr}{hosts}")
        nox = [sys.executable, "-m", "nox", "-f", str(CHECKOUT / "noxfile.py")]
        log = args.out / "nox.log"
        log.write_text("")
        signs = args.out / "signoff.txt"
        signs.write_text("")
        with_signoff = "signoff" in nox_sessions(env)
        if with_signoff:  # the previous release's evidence, on the same boards, accepted as the baseline
            run_logged([*nox, "-s", "gate", "contract"], env, root, signs)
            run_logged([*cli, "evidence", "accept", "--release", PREVIOUS.removeprefix("v")], env, root, signs)
        sha = candidate(root)
        print(f"qualify: previous {PREVIOUS} {prev_sha}, candidate {sha}", flush=True)
        rc = run_logged([*nox, "-s", *SESSIONS, "--", "--require-all"], env, root, log)
        signoff = "no signoff session in this relgate"
        if with_signoff:
            name_the_boards(work / "manifests", cpu=board_of(ledger_steps(cli, env, root), "local"
                                                                if args.cpu_on == "local" else SSH_HOST),
                            cuda=board_of(ledger_steps(cli, env, root), SSH_HOST))
            steps_of = ["compare", "--", "--previous", PREVIOUS]
            batches = 1
            # The policy asks for another batch (exit 3) while a row's interval straddles a threshold;
            # run what it asks for, at most MAX_BATCHES (max_batches), and let it decide (pass,
            # slower, block, or undecided: too noisy).
            while run_logged([*nox, "-s", *steps_of], env, root, signs) == 3 and batches < MAX_BATCHES:
                batches += 1
            run_logged([*nox, "-s", "evidence"], env, root, signs)
            for item, reason in SKIPS.items():
                run_logged([*cli, "skip", item, "--by", "qualify_over_ssh", "--reason", reason], env, root, signs)
            src = run_logged([*nox, "-s", "signoff"], env, root, signs)
            trc = run_logged([*nox, "-s", "tag"], env, root, signs)
            signoff = (f"nox -s signoff exit {src}; nox -s tag exit {trc} (signoff.txt); "
                       f"{batches} compare batch(es)")
            md = work / "home" / "signoff" / "signoff.md"
            if md.exists():
                with open(signs, "a") as fh:
                    fh.write(f"\n===== signoff.md\n{md.read_text()}")
        else:
            signs.write_text(signoff + "\n")
        steps = ledger_steps(cli, env, root, keep=args.out / "status.json")
        wrong = misplaced(steps, gpu_steps(work / "manifests"))
        previous = [s for s in ledger_steps(cli, env, root, commit=PREVIOUS) if s["session"] == "compare"]
        evidence, measurements = gather(args.out, home, steps, work / "ssh" / "sshd.log", previous)
        summarise(args.out, sha=sha, rc=rc, steps=steps, wrong=wrong, evidence=evidence,
                  measurements=measurements, signoff=signoff, cpu_on=args.cpu_on)
        print((args.out / "summary.md").read_text(), flush=True)
        return 3 if wrong else rc
    except Failed as exc:
        print(f"qualify_over_ssh: {exc}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            stop(proc)
        if args.keep:
            print(f"qualify: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
