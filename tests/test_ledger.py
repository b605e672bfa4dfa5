"""The ledger: schema, content-addressed logs, and interrupted steps recorded as error."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOXFILE, Project, pid_gone, wait_for
from relgate.core.errors import InputError, RelgateError
from relgate.core.verdict import Verdict
from relgate.ledger.store import _MIGRATIONS, SCHEMA_VERSION, UNFINISHED_REASON, Ledger

SLOW_STEP = """
[[check]]
name = "slow"
shell = true
run = "echo $$ > {pidfile}; exec sleep 120"

[[check]]
name = "after"
run = "true"
"""


def _wait_for(path: Path, what: str) -> int:
    """The pid the step wrote into ``path``, once it has (conftest's bound turns a hang into a failure)."""
    assert wait_for(lambda: path.exists() and path.read_text().strip() != ""), f"{what} never appeared"
    return int(path.read_text())


def _with_slow_step(project: Project, pidfile: Path) -> None:
    (project.manifests / "builds.toml").write_text(SLOW_STEP.format(pidfile=pidfile))


def _start_nox(project: Project) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "host"], env=project.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigterm_mid_step_records_error_and_kills_the_step(tinyinfer: Project, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    _with_slow_step(tinyinfer, pidfile)
    proc = _start_nox(tinyinfer)
    child = _wait_for(pidfile, "the slow step")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "Traceback" not in out
    assert wait_for(lambda: pid_gone(child)), "the step's process outlived relgate"
    rows = tinyinfer.ledger_rows()
    assert rows["slow"]["verdict"] == "error"
    assert rows["slow"]["reason"] == "interrupted by SIGTERM while running"
    assert "after" not in rows  # the run stopped; nothing after it pretends to have run
    log = tinyinfer.home / rows["slow"]["log_path"]
    assert "interrupted by SIGTERM" in log.read_text()


def test_a_crash_leaves_error_never_pass(tinyinfer: Project, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    _with_slow_step(tinyinfer, pidfile)
    proc = _start_nox(tinyinfer)
    child = _wait_for(pidfile, "the slow step")
    proc.send_signal(signal.SIGKILL)  # relgate gets no chance to clean up
    proc.communicate(timeout=60)
    try:
        rows = tinyinfer.ledger_rows()
        assert rows["slow"]["verdict"] == "error"
        assert rows["slow"]["reason"] == UNFINISHED_REASON
        assert "partial" in rows["slow"]["log_path"]  # the log so far is kept
    finally:
        os.kill(child, signal.SIGKILL)  # we started it (through relgate); end it by its pid


def test_step_killed_from_outside_is_error_and_the_run_goes_on(tinyinfer: Project, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    _with_slow_step(tinyinfer, pidfile)
    proc = _start_nox(tinyinfer)
    os.kill(_wait_for(pidfile, "the slow step"), signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, out
    rows = tinyinfer.ledger_rows()
    assert rows["slow"]["verdict"] == "error"
    assert "killed by SIGTERM from outside relgate" in rows["slow"]["reason"]
    assert rows["after"]["verdict"] == "pass"


def test_schema_is_versioned_and_migrates_forward(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    old = sqlite3.connect(home / "ledger.sqlite3")  # a version-1 ledger, as the first relgate made it
    old.executescript(_MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    old.close()
    with Ledger.open(home) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(home / "ledger.sqlite3")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "steps", "artifacts"} <= tables
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(InputError, match="newer than this relgate understands"):
        Ledger.open(home)


def test_the_fingerprint_moves_when_a_step_finishes_and_reads_no_table_through(tmp_path: Path) -> None:
    from relgate.ledger.store import _FINGERPRINT

    with Ledger.open(tmp_path / "home") as ledger:
        run = ledger.begin_run(session="host", argv=["nox"], project="p", project_root=tmp_path, commit="c" * 40,
                               branch="main", dirty=False)
        before = ledger.fingerprint()
        step = ledger.begin_step(run_id=run, session="host", step="true", lane=None, target=None, host="local",
                                 board=None, driver=None, toolkit=None, commit="c" * 40, dirty=False,
                                 command="true", cwd=None, env={}, log_path=None)
        started = ledger.fingerprint()
        ledger.finish_step(step, verdict=Verdict.PASS, reason=None, exit_code=0, duration=0.0)
        finished = ledger.fingerprint()
        assert len({before, started, finished}) == 3
        plan = " ".join(str(r[-1]) for r in ledger._conn.execute("EXPLAIN QUERY PLAN " + _FINGERPRINT,
                                                                 (UNFINISHED_REASON,)))
    assert "steps_unfinished" in plan and "SCAN steps" not in plan, plan


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ledger.sqlite3").write_text("this is not sqlite")
    with pytest.raises(InputError, match="not a healthy SQLite ledger"):
        Ledger.open(tmp_path)


def test_logs_are_content_addressed_and_never_overwritten(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        paths = []
        for run in ("r1", "r2"):
            partial = ledger.partial_log_path("c0ffee", run, "build")
            partial.write_text("same output\n")
            paths.append(ledger.store_log(partial, "c0ffee"))
        assert paths[0] == paths[1]
        final, sha = paths[0]
        assert final.read_text() == "same output\n" and final.name == f"{sha}.log"
        assert not list((tmp_path / "logs" / "c0ffee" / "partial").iterdir())


def test_steps_of_one_run_point_to_it_and_keep_host_facts(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        run = ledger.begin_run(session="host", argv=["nox"], project="p", project_root=tmp_path, commit="a" * 40,
                               branch="main", dirty=False)
        common = dict(run_id=run, session="host", lane="gate", target=None, commit="a" * 40, dirty=False,
                      command="true", cwd=None, env={"HF_TOKEN": "***"})
        ledger.record_step(step="one", host="box1", board="H100", driver="550", toolkit="cuda 12.4",
                           verdict=Verdict.NOT_RUN, reason="no host offers sm90", **common)
        ledger.record_step(step="two", host="box2", board="MI300X", driver="6.2", toolkit="rocm 6.2",
                           verdict=Verdict.SKIP, reason="manual", **common)
        rows = ledger.steps(run_id=run)
    assert [(r.host, r.board, r.verdict) for r in rows] == [("box1", "H100", Verdict.NOT_RUN),
                                                            ("box2", "MI300X", Verdict.SKIP)]
    assert rows[0].env == {"HF_TOKEN": "***"}


def test_a_version_1_ledger_with_rows_migrates_forward_and_keeps_them(tmp_path: Path) -> None:
    from relgate.ledger.store import _MIGRATIONS, _split_sql

    conn = sqlite3.connect(tmp_path / "ledger.sqlite3")
    for statement in _split_sql(_MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs (id, session, argv, project, project_root, commit_sha, dirty, started)"
                 " VALUES ('r1', 'host', '[]', 'p', '/p', 'c1', 0, '2026-01-01')")
    conn.execute("INSERT INTO steps (run_id, session, step, host, commit_sha, dirty, command, started, verdict)"
                 " VALUES ('r1', 'host', 'build', 'local', 'c1', 0, 'make', '2026-01-01', 'pass')")
    conn.commit()
    conn.close()
    with Ledger.open(tmp_path) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION
        (row,) = ledger.steps(commit="c1")
        assert row.step == "build" and row.verdict is Verdict.PASS and row.reused_from is None
        assert ledger.evidence(commit="c1") == [] and ledger.baselines() == []


def test_a_long_step_gets_live_progress_lines(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "builds.toml").write_text('[[check]]\nname = "slow"\nrun = "sleep 1.5"\n')
    env = {**tinyinfer.env, "RELGATE_PROGRESS_SECONDS": "0.3"}
    done = subprocess.run([sys.executable, "-m", "nox", "-f", str(NOXFILE), "-s", "host"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert "... host  slow  [local]  running" in done.stdout


# --- a fresh home under concurrency, and a damaged ledger --------------------------------------

_OPEN_AND_RUN = """
import sys
from pathlib import Path
from relgate.ledger.store import Ledger
with Ledger.open(Path(sys.argv[1])) as ledger:
    ledger.begin_run(session="s", argv=[], project="p", project_root=Path("."), commit="c" * 40, branch=None,
                     dirty=False)
"""


def test_concurrent_first_runs_on_a_fresh_home_all_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys

    home = tmp_path / "home"
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AND_RUN, str(home)], stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    with Ledger.open(home) as ledger:
        assert len(ledger.runs()) == 8 and ledger.schema_version == SCHEMA_VERSION
    assert sorted(p.name for p in home.iterdir() if p.name.endswith(".tmp")) == []


def _filled_ledger(home: Path) -> Path:
    with Ledger.open(home) as ledger:
        run = ledger.begin_run(session="s", argv=[], project="p", project_root=Path("."), commit="c" * 40,
                               branch=None, dirty=False)
        for i in range(300):
            ledger.record_step(run_id=run, session="s", step=f"step-{i}", lane=None, target=None, host="local",
                               board=None, driver=None, toolkit=None, commit="c" * 40, dirty=False,
                               command="x" * 200, cwd=None, env={}, verdict=Verdict.PASS, reason=None)
    return home / "ledger.sqlite3"


def _damage_truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 100])  # cut inside a page


def _damage_garbage(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)  # the header page stays, every other page is noise
    db.write_bytes(bytes(data))


def _damage_all_garbage(db: Path) -> None:
    db.write_bytes(os.urandom(db.stat().st_size))


def _damage_empty(db: Path) -> None:
    db.write_bytes(b"")


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_garbage, _damage_all_garbage, _damage_empty],
                         ids=["truncated", "garbage-pages", "all-garbage", "zero-bytes"])
def test_a_damaged_ledger_is_refused_and_left_untouched(tmp_path: Path, damage) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    db = _filled_ledger(home)
    damage(db)
    before = db.read_bytes()
    with pytest.raises(InputError) as info:
        Ledger.open(home)
    message = str(info.value)
    assert "not a healthy SQLite ledger" in message and f"mv {db} {db}.broken" in message
    assert "\n" not in message
    assert db.read_bytes() == before  # nothing wrote into it
    assert not (home / "ledger.sqlite3-wal").exists() or (home / "ledger.sqlite3-wal").stat().st_size == 0


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import relgate.ledger.store as store

    calls: list[int] = []
    real = store._quick_check

    def counted(conn: sqlite3.Connection) -> list[str]:
        calls.append(1)
        return real(conn)

    monkeypatch.setattr(store, "_quick_check", counted)
    return calls


def _settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """What SETTLED_NS waits for, in a test's time: the clock has moved past the file's last
    change (a coarse file-system clock ticks in milliseconds), so any later write shows."""
    import relgate.ledger.store as store

    monkeypatch.setattr(store, "SETTLED_NS", 50_000_000)
    time.sleep(0.1)


def test_a_ledger_nothing_changed_is_not_checked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _filled_ledger(home)
    checks = _count_checks(monkeypatch)
    Ledger.open(home).close()  # cleanly closed by _filled_ledger: not checked
    assert len(checks) == 0
    (home / "ledger.verified").unlink()  # a ledger no relgate closed (copied in, from before the stamp)
    monkeypatch.setattr(Ledger, "close", lambda self: self._conn.close())  # and no stamp at close here
    Ledger.open(home).close()  # the file was just written: checked, not stamped (it is not settled)
    assert len(checks) == 1 and not (home / "ledger.verified").exists()
    _settle(monkeypatch)
    Ledger.open(home).close()  # checked and stamped
    Ledger.open(home).close()  # the same file: not read again
    assert len(checks) == 2
    monkeypatch.undo()
    checks = _count_checks(monkeypatch)
    with Ledger.open(home) as ledger:  # a write, then a clean close: the close stamps what it left
        ledger.begin_run(session="s", argv=[], project="p", project_root=tmp_path, commit="c" * 40, branch=None,
                         dirty=False)
    Ledger.open(home).close()
    assert len(checks) == 0
    Ledger.open(home, check=True).close()  # on demand
    assert len(checks) == 1


_KILLED_MID_RUN = """
import os, signal, sys
from pathlib import Path
from relgate.ledger.store import Ledger
ledger = Ledger.open(Path(sys.argv[1]))
ledger.begin_run(session="s", argv=[], project="p", project_root=Path("."), commit="c" * 40, branch=None,
                 dirty=False)
os.kill(os.getpid(), signal.SIGKILL)  # no close: an unclean shutdown
"""


def test_a_ledger_after_an_unclean_shutdown_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed with the ledger open leaves its write in the WAL and no stamp: the
    next open runs the full check (and its clean close spares the one after)."""
    home = tmp_path / "home"
    _filled_ledger(home)
    checks = _count_checks(monkeypatch)
    Ledger.open(home).close()
    assert len(checks) == 0  # closed cleanly by _filled_ledger
    done = subprocess.run([sys.executable, "-c", _KILLED_MID_RUN, str(home)], env={**os.environ,
                          "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert done.returncode == -signal.SIGKILL
    with Ledger.open(home) as ledger:
        assert len(checks) == 1
        assert len(ledger.runs()) == 2  # the killed process's committed run is there
    Ledger.open(home).close()
    assert len(checks) == 1


def test_check_ledger_on_demand_passes_a_healthy_ledger_and_refuses_a_damaged_one(tinyinfer: Project) -> None:
    cli = [sys.executable, "-m", "relgate.cli", "check", "--ledger"]
    done = subprocess.run(cli, cwd=tinyinfer.root, env=tinyinfer.env, capture_output=True, text=True)
    assert done.returncode == 0 and "ledger: none yet" in done.stdout, done.stdout + done.stderr
    home = Path(tinyinfer.env["RELGATE_HOME"])
    _filled_ledger(home)
    done = subprocess.run(cli, cwd=tinyinfer.root, env=tinyinfer.env, capture_output=True, text=True)
    assert done.returncode == 0 and "full integrity check passed, 1 runs" in done.stdout, done.stdout + done.stderr
    db = home / "ledger.sqlite3"
    st = db.stat()
    _damage_garbage(db)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    done = subprocess.run(cli, cwd=tinyinfer.root, env=tinyinfer.env, capture_output=True, text=True)
    assert done.returncode == 2 and "not a healthy SQLite ledger" in done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_garbage], ids=["truncated", "garbage-pages"])
def test_a_ledger_damaged_after_its_check_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     damage) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    db = _filled_ledger(home)
    _settle(monkeypatch)
    Ledger.open(home).close()
    assert (home / "ledger.verified").exists()
    st = db.stat()
    damage(db)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its mtime put back (cp -p, rsync -t)
    before = db.read_bytes()
    with pytest.raises(InputError, match="not a healthy SQLite ledger"):
        Ledger.open(home)
    assert db.read_bytes() == before


@pytest.mark.parametrize("read", [
    lambda ledger: ledger.steps(),
    lambda ledger: ledger.fingerprint(),
    lambda ledger: ledger.record_step(run_id="r", session="s", step="late", lane=None, target=None, host="local",
                                      board=None, driver=None, toolkit=None, commit="c" * 40, dirty=False,
                                      command="true", cwd=None, env={}, verdict=Verdict.SKIP, reason="late"),
], ids=["read", "fingerprint", "write"])
def test_a_ledger_damaged_while_it_is_open_is_one_line_not_a_traceback(tmp_path: Path, read) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    db = _filled_ledger(home)
    with Ledger.open(home) as ledger:  # healthy when opened
        _damage_garbage(db)  # then broken under it, as by another program or a failing disk
        ledger._conn.execute("PRAGMA shrink_memory")  # its pages are read again from the file
        with pytest.raises(RelgateError) as caught:
            read(ledger)
    message = str(caught.value)
    assert str(db) in message and "\n" not in message
    assert "malformed" in message or "not a database" in message or "cannot write the ledger" in message, message


def test_a_ledger_with_frames_in_its_wal_is_always_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _filled_ledger(home)
    _settle(monkeypatch)
    Ledger.open(home).close()
    checks = _count_checks(monkeypatch)
    writer = Ledger.open(home)  # another process's open connection, with a write not yet checkpointed
    writer.begin_run(session="s", argv=[], project="p", project_root=tmp_path, commit="c" * 40, branch=None,
                     dirty=False)
    try:
        Ledger.open(home).close()
    finally:
        writer.close()
    assert len(checks) == 1  # the writer's open was the stamped file; the second found frames in the WAL


# --- an SQLite file that is not a relgate ledger (issue 23) -----------------------------------------


def _foreign_db(db: Path) -> None:
    conn = sqlite3.connect(db)  # another program's database, in the default rollback journal
    conn.executescript("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('x');")
    conn.close()


def _empty_db(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 0")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")  # a valid SQLite file with no table at all
    conn.close()


def _drop_table(table: str):  # noqa: ANN202
    def damage(db: Path) -> None:
        conn = sqlite3.connect(db)
        conn.execute(f"DROP TABLE {table}")
        conn.close()
    return damage


def _drop_column(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE decisions DROP COLUMN note")
    conn.close()


@pytest.mark.parametrize("make,words", [
    (_foreign_db, "schema version 0, it holds tables relgate never made: notes"),
    (_empty_db, "schema version 0, it has no tables"),
    (_drop_table("baselines"), f"schema version {SCHEMA_VERSION} but the table baselines is missing"),
    (_drop_column, f"schema version {SCHEMA_VERSION} but table decisions lacks the column note"),
], ids=["foreign", "empty", "missing-table", "missing-column"])
def test_an_sqlite_file_that_is_not_a_relgate_ledger_is_refused_untouched(
        tmp_path: Path, make, words: str) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    db = home / "ledger.sqlite3"
    if make in (_foreign_db, _empty_db):
        home.mkdir()
    else:
        _filled_ledger(home)
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=DELETE")  # fold the WAL in: the bytes compared below are all of it
        conn.close()
        (home / "ledger.verified").unlink(missing_ok=True)  # the clean close's stamp: the refusal must make none
    make(db)
    before = db.read_bytes()
    with pytest.raises(InputError) as caught:
        Ledger.open(home)
    message = str(caught.value)
    assert message.startswith(f"{db}: an SQLite file but not a relgate ledger ({words}); relgate writes nothing "
                              f"into it. Move it aside (mv {db} {db}.foreign"), message
    assert "\n" not in message and caught.value.exit_code == 2
    assert db.read_bytes() == before  # not adopted: no schema, no WAL switch, no row
    assert not (home / "ledger.sqlite3-wal").exists()
    assert not (home / "ledger.verified").exists()


def test_a_foreign_ledger_stops_the_run_before_any_step(tinyinfer: Project) -> None:
    tinyinfer.home.mkdir(parents=True, exist_ok=True)
    db = tinyinfer.home / "ledger.sqlite3"
    _foreign_db(db)
    before = db.read_bytes()
    marker = tinyinfer.root / "ran"
    (tinyinfer.manifests / "builds.toml").write_text(f'[[check]]\nname = "touch"\nrun = ["touch", "{marker}"]\n')
    for done in (tinyinfer.relgate("host"), tinyinfer.nox("host")):
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"mv {db} {db}.foreign" in done.stderr + done.stdout
        assert "Traceback" not in done.stdout + done.stderr
    assert not marker.exists() and db.read_bytes() == before


@pytest.mark.parametrize("rename", ["works", "fails"])
def test_a_file_moved_into_the_store_is_hashed_first_and_copied_where_it_cannot_be_renamed(
        tmp_path: Path, rename: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``store_file(move=True)`` (accept's baselines): the file is hashed, then renamed into the
    store; where the rename fails (another file system) it is copied, and the same object and
    row result either way. A second file of the same bytes leaves the one object."""
    import hashlib

    from relgate.ledger import store

    if rename == "fails":
        def cross_device(src, dst):
            raise OSError(18, "Invalid cross-device link")

        monkeypatch.setattr(store.os, "replace", lambda src, dst, real=os.replace: (
            cross_device(src, dst) if not str(src).endswith(".tmp") else real(src, dst)))
    data = b"# relgate evidence\ns\ta\tk\t1\n" * 1000
    with Ledger.open(tmp_path / "home") as ledger:
        first, second = tmp_path / "home" / "tmp" / "a.cells", tmp_path / "home" / "tmp" / "b.cells"
        first.parent.mkdir(parents=True)
        first.write_bytes(data)
        second.write_bytes(data)
        sha, rel = ledger.store_file(first, kind="baseline", suffix=".cells", move=True)
        assert (sha, ledger.store_file(second, kind="baseline", suffix=".cells", move=True)) == (sha, (sha, rel))
        assert sha == hashlib.sha256(data).hexdigest() and (tmp_path / "home" / rel).read_bytes() == data
        assert first.exists() == (rename == "fails")  # moved, or copied and left to the caller
        assert not second.exists()  # its object was there: nothing to move
        rows = ledger._conn.execute("SELECT sha256, kind, size FROM artifacts").fetchall()
        assert [tuple(r) for r in rows] == [(sha, "baseline", len(data))]


# --- the --reuse key: every part of it, each changed alone --------------------------------------

_REUSE_KEY = {"commit": "c1", "session": "host", "step": "unit-tests", "host": "local", "command": "make test",
              "env": {"CFLAGS": "-O2"}, "board": "NVIDIA H200", "driver": "550.54", "toolkit": "12.4"}


def _reuse_ledger(home: Path, *, verdict: Verdict = Verdict.PASS, dirty: bool = False) -> tuple[Ledger, str]:
    from relgate.ledger.identity import ProjectIdentity

    ledger = Ledger.open(home)
    ident = ProjectIdentity(name="tinyinfer", root="/p", manifests="/p/manifests")
    run = ledger.begin_run(session="host", argv=[], project="tinyinfer", project_root=Path("/p"), commit="c1",
                           branch=None, dirty=dirty, identity=ident)
    key = {k: v for k, v in _REUSE_KEY.items() if k != "commit"}
    step = ledger.begin_step(run_id=run, lane=None, target=None, commit="c1", dirty=dirty, cwd=None, log_path=None,
                             **key)
    ledger.finish_step(step, verdict=verdict, reason=None, exit_code=0 if verdict is Verdict.PASS else 1,
                       duration=1.0)
    return ledger, run


@pytest.mark.parametrize(("part", "value"), [
    ("commit", "c2"), ("session", "gate"), ("step", "other"), ("host", "h200"), ("command", "make test V=1"),
    ("env", {"CFLAGS": "-O0"}), ("env", {}), ("env", {"CFLAGS": "-O2", "EXTRA": "1"}),
    ("board", "NVIDIA H100"), ("board", None), ("driver", "560.1"), ("toolkit", "13.0"),
])
def test_reuse_needs_every_part_of_the_key_to_match(tmp_path: Path, part: str, value: object) -> None:
    ledger, run = _reuse_ledger(tmp_path / "home")
    with ledger:
        same = ledger.reusable_pass(run_id=run, **_REUSE_KEY)
        assert same is not None and same.verdict is Verdict.PASS and same.command == "make test"
        assert ledger.reusable_pass(run_id=run, **{**_REUSE_KEY, part: value}) is None


@pytest.mark.parametrize(("verdict", "dirty"), [(Verdict.FAIL, False), (Verdict.ERROR, False), (Verdict.SKIP, False),
                                                (Verdict.NOT_RUN, False), (Verdict.PASS, True)])
def test_only_a_clean_pass_is_reused(tmp_path: Path, verdict: Verdict, dirty: bool) -> None:
    ledger, run = _reuse_ledger(tmp_path / "home", verdict=verdict, dirty=dirty)
    with ledger:
        assert ledger.reusable_pass(run_id=run, **_REUSE_KEY) is None
