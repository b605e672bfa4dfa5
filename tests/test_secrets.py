"""Secrets planted every way a run meets them never reach any file under the ledger home,
the reports or the console: env tokens, URL credentials, credential headers, env URLs with
a password, and a test that writes its token into its evidence."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Project

TOKEN = "ghp_plantedTokenValue0123456789"
URL_PW = "planted-url-pw-4242"
BEARER = "planted-bearer-987654"
DB_PW = "planted-db-pw-7777"
PLANTED = (TOKEN, URL_PW, BEARER, DB_PW)

SCRIPT = """\
#!/bin/sh
# relgate secrets test: print every secret this step can see, and write some into evidence
echo "url: $1"
echo "header: $2"
echo "token: $GITHUB_TOKEN"
echo "db: $DB_URL"
echo "$DB_URL" | sed 's/.*:\\(.*\\)@.*/db password alone: \\1/'
printf 'suite\\tarm\\ttoken\\t%s\\n' "$GITHUB_TOKEN" >> "$TINYINFER_EVIDENCE"
printf 'suite\\tarm\\turl\\t%s\\n' "$1" >> "$TINYINFER_EVIDENCE"
printf 'suite\\tarm\\tdb\\t%s\\n' "$DB_URL" >> "$TINYINFER_EVIDENCE"
printf 'suite\\tarm\\tplain\\tkept\\n' >> "$TINYINFER_EVIDENCE"
"""


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def test_planted_secrets_reach_no_file_no_report_and_no_console(tinyinfer: Project, tmp_path: Path) -> None:
    (tinyinfer.root / "tests" / "plant.sh").write_text(SCRIPT)
    lanes = tinyinfer.manifests / "lanes.toml"
    command = f"sh tests/plant.sh https://relgate:{URL_PW}@127.0.0.1/x 'Authorization: Bearer {BEARER}'"
    lanes.write_text(lanes.read_text().replace('command = "make test"\n', f"command = {json.dumps(command)}\n"))
    (tinyinfer.manifests / "builds.toml").write_text(
        "[[check]]\nname = \"curl-like\"\n"
        f"run = \"echo fetch -H 'Authorization: Bearer {BEARER}' https://relgate:{URL_PW}@127.0.0.1/x\"\n"
        "shell = true\n")
    tinyinfer.commit("plant secrets")
    env = {**tinyinfer.env, "GITHUB_TOKEN": TOKEN, "DB_URL": f"postgres://u:{DB_PW}@127.0.0.1/db"}
    report, junit = tmp_path / "out" / "report.json", tmp_path / "out" / "junit.xml"
    import subprocess
    import sys

    def relgate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "relgate.cli", *args], env=env, cwd=tinyinfer.root,
                              capture_output=True, text=True, timeout=600)

    runs = [relgate("check"),
            relgate("host", "--report", str(report), "--junit", str(junit)),
            relgate("lane", "gate", "--report", str(tmp_path / "out" / "gate.json")),
            relgate("evidence", "accept"),
            relgate("evidence", "check"),
            relgate("status", "--json")]
    gate = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert any(s["step"] == "kernels-cpu" and s["verdict"] == "pass" for s in gate["steps"]), runs[2].stdout
    assert "accepted" in runs[3].stdout, runs[3].stdout + runs[3].stderr
    console = "".join(r.stdout + r.stderr for r in runs)
    assert "Traceback" not in console
    files = every_file(tinyinfer.home) + every_file(tmp_path / "out")
    assert any(p.suffix == ".cells" for p in files) and any(p.name.endswith(".sqlite3") for p in files)
    for secret in PLANTED:
        assert secret not in console, secret
        for path in files:
            assert secret.encode() not in path.read_bytes(), (secret, path)
    # what was masked is still there to read, with the secret as ***
    stored = next(p for p in every_file(tinyinfer.home / "objects") if p.suffix == ".cells").read_text()
    assert "suite\tarm\ttoken\t***" in stored and "suite\tarm\tplain\tkept" in stored
    assert "postgres://u:***@127.0.0.1/db" in stored
