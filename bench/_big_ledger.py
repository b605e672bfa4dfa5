"""Shared by the sign-off benchmarks: a big ledger for a copy of the C example.

``populate`` fills the ledger under ``home`` with ``steps`` step rows (host, gate, contract,
bench, package and publish sessions over runs of 50), an evidence capture of ``cells`` cells
and its accepted baseline, and the attestations a sign-off asks for. ``distinct``: every row a
step of its own (else the 50 names repeat over the runs); ``write_logs``: each row's log file
written (else the rows name logs that are not there)."""

from __future__ import annotations

from pathlib import Path

from _common import REPO

SESSIONS = ("host", "gate", "contract", "bench", "package_verify", "publish_dry_run")
PER_RUN = 50


def populate(home: Path, root: Path, steps: int, cells: int, env: dict[str, str], *, distinct: bool = False,
             write_logs: bool = False) -> None:
    from relgate.core.verdict import Verdict
    from relgate.evidence.baselines import accept
    from relgate.ledger.gitfacts import read_git_facts
    from relgate.ledger.identity import project_identity
    from relgate.ledger.store import Ledger
    from relgate.manifest.workspace import Workspace

    facts = read_git_facts(root)
    identity = project_identity(Workspace.load(REPO, environ=env), facts)
    logs = home / "logs" / facts.commit
    if write_logs:
        logs.mkdir(parents=True, exist_ok=True)
    with Ledger.open(home) as ledger:
        conn = ledger._conn  # bulk insert: the API's one-transaction-per-row would time the setup, not the sign-off
        for r in range(steps // PER_RUN):
            session = SESSIONS[r % len(SESSIONS)]
            run_id = ledger.begin_run(session=session, argv=["nox", "-s", session], project="tinyinfer",
                                      project_root=root, commit=facts.commit, branch=facts.branch, dirty=False,
                                      identity=identity)
            rows = []
            for i in range(PER_RUN):
                n = r * PER_RUN + i if distinct else i
                if write_logs:
                    (logs / f"{n:064x}.log").write_text(f"$ make step{n}\nstep {n}: ok\n")
                rows.append((run_id, session, f"{session}-step-{n}", session, f"t{n}", "local", None, facts.commit,
                             0, f"make step{n}", "2026-12-01T00:00:00", 0.1, 0, Verdict.PASS.value, None,
                             f"logs/{facts.commit}/{n:064x}.log", identity.key))
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO steps (run_id, session, step, lane, target, host, board, commit_sha, dirty, command,"
                " env, started, duration, exit_code, verdict, reason, log_path, project_key) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,'{}',?,?,?,?,?,?,?)", rows)
            conn.execute("COMMIT")
            ledger.finish_run(run_id, "ok")
        body = "".join(f"suite{i // 2500}\tcpu\tcase{i:07d}\t{i * 0.5:.3f}\n" for i in range(cells))
        capture = home / "capture.cells"
        capture.write_text("# relgate evidence\n" + body)
        run_id = ledger.begin_run(session="gate", argv=["nox", "-s", "gate"], project="tinyinfer", project_root=root,
                                  commit=facts.commit, branch=facts.branch, dirty=False, identity=identity)
        step = ledger.begin_step(run_id=run_id, session="gate", step="kernels-cpu", lane="gate", target="kernels-cpu",
                                 host="local", board=None, driver=None, toolkit=None, commit=facts.commit, dirty=False,
                                 command="make test", cwd=str(root), env={}, log_path=None)
        ledger.finish_step(step, verdict=Verdict.PASS, reason=None, exit_code=0, duration=1.0)
        ledger.store_evidence(capture, step_id=step)
        ledger.finish_run(run_id, "ok")
        accept(ledger, commit=facts.commit, release="0.2.0", project=identity)
        for who in ("ci-green", "maintainer-approval", "agent-checks"):
            ledger.add_decision(project=identity.key, commit=facts.commit, dirty=False, item=who, kind="attest",
                                by="bench", note=None)
