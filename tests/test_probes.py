"""Capabilities that need a check: ``[[probe]]`` in a host file, run on the host itself.

The probes here are real commands on this machine and over a real sshd on 127.0.0.1 (they
print what ``rdma_ctl status`` / ``ibv_devinfo -v`` would: no machine here has RDMA). Each
appends a line to a counter file, so "once per run per host" is counted, not assumed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sshd_support import sshd_missing, start_sshd
from steps_support import run_in_repo

from relgate.core.errors import ManifestError
from relgate.core.schema import read_toml
from relgate.core.verdict import Verdict
from relgate.manifest.specs import CommandSpec, parse_host
from relgate.run.executor import LocalExecutor
from relgate.run.hosts import Host, HostFacts
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool

PROBES = '''
[[probe]]
name = "rdma"
run = "echo probed-rdma >> {count}; echo 'rdma: disabled'; exit 1"

[[probe]]
name = "ib"
run = "echo probed-ib >> {count}; printf 'port: 1\\n  state: PORT_ACTIVE (4)\\n  GID[0]: fe80::1\\n'"
expect = "PORT_ACTIVE"

[[probe]]
name = "nvlink"
run = "echo probed-nvlink >> {count}; echo 'link 0: inactive'"
expect = "link 0: active"
'''


def _step(name: str, requires: tuple[str, ...], cwd: Path) -> PlannedStep:
    return PlannedStep(name=name, commands=(CommandSpec(shell=f"echo ran {name}"),), cwd=cwd, lane="gate",
                       target=name, requires=requires)


def _check(summary, rows, count: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    got = {o.step.name: (o.verdict, o.reason) for o in summary.outcomes}
    assert got["needs-rdma"] == (Verdict.NOT_RUN, f"rdma probe failed on {host} (exit 1: rdma: disabled)")
    assert got["needs-nvlink"] == (Verdict.NOT_RUN, f"nvlink probe failed on {host} "
                                                    "(output does not match /link 0: active/: link 0: inactive)")
    assert got["needs-ib"] == (Verdict.PASS, None) and got["needs-ib-again"] == (Verdict.PASS, None)
    assert got["plain"] == (Verdict.PASS, None)
    # once per run per host: each probe ran once, though two steps required ib
    assert sorted(count.read_text().split()) == ["probed-ib", "probed-nvlink", "probed-rdma"]
    # the probes' output is a host fact of every step that ran there
    probes = rows["needs-ib"].facts["probes"]
    assert probes["ib"]["passed"] is True and "PORT_ACTIVE" in probes["ib"]["output"]
    assert probes["rdma"] == {"passed": False, "output": "rdma: disabled\n", "why": "exit 1"}
    assert rows["needs-rdma"].host == "-" and "ran needs-rdma" not in (rows["needs-rdma"].tail or "")


def test_a_failed_probe_keeps_its_capability_off_and_a_passing_one_is_recorded(tmp_path: Path) -> None:
    count = tmp_path / "count"
    path = tmp_path / "hosts" / "box.toml"
    path.parent.mkdir()
    # rdma is declared too: a declared capability whose probe fails is still not offered
    path.write_text('[host]\nname = "box"\ndetect = false\ncapabilities = ["rdma", "sh"]\n'
                    + PROBES.format(count=count))
    spec = parse_host(read_toml(path), path=path)
    host = Host(spec=spec, facts=HostFacts(capabilities=frozenset(spec.capabilities)))
    pool = HostPool([host], {"box": LocalExecutor(host)})
    steps = [_step("plain", ("sh",), tmp_path), _step("needs-rdma", ("rdma",), tmp_path),
             _step("needs-ib", ("ib",), tmp_path), _step("needs-nvlink", ("nvlink",), tmp_path),
             _step("needs-ib-again", ("ib",), tmp_path)]
    summary, rows = run_in_repo(tmp_path, steps, pool, session="gate")
    _check(summary, rows, count, "box")
    assert "probes" not in rows["plain"].facts  # it ran before any step required a probed capability


@pytest.mark.skipif(sshd_missing() is not None, reason=f"no sshd here: {sshd_missing()}")
def test_probes_run_on_the_ssh_host_itself(tmp_path: Path) -> None:
    from relgate.remote.ssh import SshExecutor

    server = start_sshd(tmp_path / "sshd")
    try:
        count = tmp_path / "count-remote"  # the sshd is on this machine: the file is visible to both
        path = server.host_file(tmp_path / "hosts" / "gpu1.toml", extra="detect = false\n")
        path.write_text(path.read_text() + PROBES.format(count=count))
        spec = parse_host(read_toml(path), path=path)
        host = Host(spec=spec, facts=HostFacts(capabilities=frozenset({"sh"})))
        executor = SshExecutor(host)
        pool = HostPool([host], {"gpu1": executor})
        steps = [_step("plain", ("sh",), tmp_path), _step("needs-rdma", ("rdma",), tmp_path),
                 _step("needs-ib", ("ib",), tmp_path), _step("needs-nvlink", ("nvlink",), tmp_path),
                 _step("needs-ib-again", ("ib",), tmp_path)]
        summary, rows = run_in_repo(tmp_path, steps, pool, session="gate")
        _check(summary, rows, count, "gpu1")
        executor.close()
    finally:
        server.stop()


@pytest.mark.parametrize(("text", "message"), [
    ('[[probe]]\nname = "rdma"\n', "probe[0].run: missing (required)"),
    ('[[probe]]\nname = "rdma"\nrun = "x"\nexpect = "("\n', "probe[0].expect: not a regular expression"),
    ('[[probe]]\nname = "rdma"\nrun = "x"\n[[probe]]\nname = "rdma"\nrun = "y"\n',
     'probe[1].name: "rdma" is probed twice'),
    ('[[probe]]\nname = "rdma"\nrun = "x"\nexpcet = "y"\n', 'probe[0].expcet: unknown key — did you mean "expect"?'),
])
def test_a_bad_probe_is_named_by_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "box.toml"
    path.write_text('[host]\nname = "box"\n' + text)
    with pytest.raises(ManifestError) as caught:
        parse_host(read_toml(path), path=path)
    assert any(p.startswith(f"{path}: {message}") for p in caught.value.problems), caught.value.problems


def test_a_secret_a_probe_prints_never_reaches_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABRIC_API_TOKEN", "s3cr3t-value-42")
    path = tmp_path / "hosts" / "box.toml"
    path.parent.mkdir()
    path.write_text('[host]\nname = "box"\ndetect = false\ncapabilities = ["sh"]\n\n[[probe]]\nname = "ib"\n'
                    'run = "echo state: PORT_ACTIVE token=$FABRIC_API_TOKEN"\nexpect = "PORT_ACTIVE"\n')
    spec = parse_host(read_toml(path), path=path)
    host = Host(spec=spec, facts=HostFacts(capabilities=frozenset(spec.capabilities)))
    summary, rows = run_in_repo(tmp_path, [_step("needs-ib", ("ib",), tmp_path)],
                                HostPool([host], {"box": LocalExecutor(host)}), session="gate")
    output = rows["needs-ib"].facts["probes"]["ib"]["output"]
    assert summary.outcomes[0].verdict is Verdict.PASS and "PORT_ACTIVE" in output
    assert "s3cr3t-value-42" not in output
    assert not [f for f in (tmp_path / "home").rglob("*") if f.is_file() and b"s3cr3t" in f.read_bytes()]
