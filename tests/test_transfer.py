"""Files to and from a host whose sshd has no SFTP subsystem (``Subsystem sftp`` left out, as
on locked-down GPU boxes): delivery and evidence fall back to the exec channel, checked by
sha256; ``transfer = "exec"`` forces it; when neither works the error names the cause. Against
real OpenSSH servers on 127.0.0.1, one of them started without the subsystem."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_support import Sshd, sshd_missing, start_sshd

from conftest import Project, git

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=sshd_missing() or "")

from relgate.core.errors import ManifestError  # noqa: E402
from relgate.core.schema import read_toml  # noqa: E402
from relgate.manifest.specs import parse_host  # noqa: E402
from relgate.remote.delivery import deliver  # noqa: E402
from relgate.remote.ssh import SshError, SshExecutor  # noqa: E402
from relgate.run.hosts import Host, HostFacts  # noqa: E402


@pytest.fixture
def no_sftp(tmp_path: Path) -> Iterator[Sshd]:
    server = start_sshd(tmp_path / "sshd-nosftp", sftp=False)
    yield server
    server.stop()


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()


def executor(server: Sshd, tmp_path: Path, extra: str = "") -> SshExecutor:
    path = server.host_file(tmp_path / "hosts" / "gpu1.toml", extra=extra)
    return SshExecutor(Host(spec=parse_host(read_toml(path), path=path), facts=HostFacts()))


def test_the_server_really_refuses_sftp(no_sftp: Sshd, tmp_path: Path) -> None:
    ex = executor(no_sftp, tmp_path)
    with pytest.raises(Exception):  # noqa: B017 - paramiko's own error: the subsystem request fails
        ex.connection().sftp()
    assert "subsystem request for sftp by user root failed, subsystem not found" in no_sftp.log.read_text()
    ex.close()


def test_put_and_get_fall_back_to_the_exec_channel(no_sftp: Sshd, tmp_path: Path) -> None:
    ex = executor(no_sftp, tmp_path)
    local = tmp_path / "blob.bin"
    local.write_bytes(bytes(range(256)) * 4096 + b"tail without a newline")  # binary, 1 MiB and a bit
    remote = str(no_sftp.dir / "blob.bin")
    assert ex.put(local, remote) == "exec"
    assert "offers no sftp subsystem" in (ex.no_sftp or "")
    assert Path(remote).read_bytes() == local.read_bytes()
    assert not Path(remote + ".relgate-part").exists()
    back = tmp_path / "back.bin"
    assert ex.get(remote, back) is True
    assert back.read_bytes() == local.read_bytes()
    assert ex.get(str(no_sftp.dir / "absent"), tmp_path / "absent") is False
    assert not (tmp_path / "absent").exists()
    ex.close()


def test_transfer_exec_in_the_host_file_never_asks_for_sftp(sshd: Sshd, tmp_path: Path) -> None:
    ex = executor(sshd, tmp_path, extra='transfer = "exec"\n')
    assert ex.spec.transfer == "exec"
    local = tmp_path / "a.txt"
    local.write_text("evidence\trow\n")
    assert ex.put(local, str(sshd.dir / "a.txt")) == "exec"
    assert (sshd.dir / "a.txt").read_text() == "evidence\trow\n"
    assert ex.get(str(sshd.dir / "a.txt"), tmp_path / "b.txt") and (tmp_path / "b.txt").read_text() == "evidence\trow\n"
    ex.close()
    assert "subsystem request for sftp" not in sshd.log.read_text()
    plain = executor(sshd, tmp_path / "plain")
    assert plain.spec.transfer == "sftp" and plain.put(local, str(sshd.dir / "c.txt")) == "sftp"
    plain.close()


def test_a_bad_transfer_value_is_a_manifest_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "kh").write_text("")
    path = tmp_path / "gpu1.toml"
    path.write_text('[host]\nname = "gpu1"\nkind = "ssh"\naddress = "10.0.0.2"\nknown_hosts = "kh"\n'
                    'transfer = "scp"\n')
    with pytest.raises(ManifestError) as err:
        parse_host(read_toml(path), path=path)
    assert err.value.problems == [f'{path}: host.transfer: unknown value "scp" (one of "sftp", "exec")']


def test_when_neither_channel_works_the_error_names_the_missing_subsystem(no_sftp: Sshd, tmp_path: Path) -> None:
    ex = executor(no_sftp, tmp_path)
    local = tmp_path / "x.bundle"
    local.write_bytes(b"x" * 100)
    with pytest.raises(SshError) as err:
        ex.put(local, str(no_sftp.dir / "no" / "such" / "dir" / "x.bundle"))
    message = str(err.value)
    assert message.startswith("gpu1's sshd offers no sftp subsystem"), message
    assert "the exec channel did not do either" in message and "x.bundle" in message
    assert "Subsystem sftp internal-sftp" in message  # how to enable it
    ex.close()


def test_a_transfer_whose_sha256_differs_on_the_host_is_refused_and_nothing_kept(no_sftp: Sshd,
                                                                                 tmp_path: Path) -> None:
    """The host's own hashing tools disagree (here an openssl and a sha256sum on the host's PATH
    that lie): the upload is not moved into place and the download is not kept."""
    fakebin = no_sftp.dir / "fakebin"
    fakebin.mkdir()
    for tool in ("openssl", "sha256sum"):
        (fakebin / tool).write_text("#!/bin/sh\ncat >/dev/null\necho " + "0" * 64 + "  -\n")
        (fakebin / tool).chmod(0o755)
    ex = executor(no_sftp, tmp_path, extra=f'env = {{ PATH = "{fakebin}:/usr/bin:/bin" }}\n')
    local = tmp_path / "y.bin"
    local.write_bytes(b"payload\n")
    target = no_sftp.dir / "y.bin"
    with pytest.raises(SshError) as err:
        ex.put(local, str(target))
    assert f"with sha256 {'0' * 64}, not " in str(err.value) and "nothing was kept" in str(err.value)
    assert not target.exists() and not Path(str(target) + ".relgate-part").exists()
    target.write_bytes(b"payload\n")
    with pytest.raises(SshError) as err:
        ex.get(str(target), tmp_path / "z.bin")
    assert "the host says " + "0" * 64 in str(err.value)
    assert not (tmp_path / "z.bin").exists()
    ex.close()


def test_delivery_to_a_host_without_sftp_checks_out_the_exact_commit(no_sftp: Sshd, tmp_path: Path,
                                                                      tinyinfer: Project) -> None:
    ex = executor(no_sftp, tmp_path)
    sha = git(tinyinfer.root, "rev-parse", "HEAD").strip()
    first = deliver(ex, repo=tinyinfer.root, commit=sha, workdir=str(no_sftp.dir / "work"), project="tinyinfer")
    assert first.channel == "exec" and first.bundle_bytes > 0 and not first.reused
    assert git(Path(first.checkout), "rev-parse", "HEAD").strip() == sha
    ex.close()


def test_a_gate_lane_on_a_host_without_sftp_passes_with_its_evidence_back(no_sftp: Sshd, tinyinfer: Project) -> None:
    lanes = tinyinfer.manifests / "lanes.toml"
    text = lanes.read_text().replace('command = "make test"\nevidence = true',
                                     'command = "make test"\nevidence = true\nrequires = ["remote-box"]', 1)
    assert text != lanes.read_text()
    lanes.write_text(text)
    no_sftp.host_file(tinyinfer.hosts / "gpu1.toml", extra='capabilities = ["remote-box"]\n')
    done = tinyinfer.relgate("lane", "gate")
    assert done.returncode == 0, done.stdout + done.stderr
    row = tinyinfer.ledger_rows()["kernels-cpu"]
    assert row["verdict"] == "pass" and row["host"] == "gpu1", row
    log = (tinyinfer.home / row["log_path"]).read_text()
    assert "full bundle of" in log and "over the exec channel (gpu1's sshd offers no sftp subsystem" in log
    assert "evidence fetched from gpu1:" in log and "over the exec channel" in log.split("evidence fetched")[1]


def test_a_host_without_openssl_hashes_with_sha256sum(no_sftp: Sshd, tmp_path: Path) -> None:
    """The host's PATH holds only what a plain box has (no openssl): coreutils' sha256sum checks it."""
    import shutil

    tools = no_sftp.dir / "plainbin"
    tools.mkdir()
    for tool in ("cat", "mv", "rm", "cut", "sha256sum", "sh"):
        found = shutil.which(tool)
        assert found is not None, tool
        (tools / tool).symlink_to(found)
    ex = executor(no_sftp, tmp_path, extra=f'env = {{ PATH = "{tools}" }}\n')
    local = tmp_path / "p.bin"
    local.write_bytes(b"\x00\x01payload\n" * 1000)
    assert ex.put(local, str(no_sftp.dir / "p.bin")) == "exec"
    assert (no_sftp.dir / "p.bin").read_bytes() == local.read_bytes()
    assert ex.get(str(no_sftp.dir / "p.bin"), tmp_path / "q.bin")
    assert (tmp_path / "q.bin").read_bytes() == local.read_bytes()
    ex.close()
