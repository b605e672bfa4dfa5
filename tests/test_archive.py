"""Safe extraction (relgate.archive): hostile archives are refused before anything is written,
naming the archive and the member; good ones extract completely. Pure: no network, no tools."""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.package.archive import ArchiveError, ArchiveLimits, extract, read_members

Entry = tuple  # (name, kind, payload): kind file | dir | symlink | hardlink | chr | fifo


def make_tar(path: Path, entries: list[Entry], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = payload if isinstance(payload, bytes) else b"data\n"
                info.size = len(data)
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("symlink", "hardlink"):
                info.linkname = payload
            tf.addfile(info)
    return path


def make_zip(path: Path, entries: list[Entry]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, kind, payload in entries:
            info = zipfile.ZipInfo(name)
            if kind == "symlink":
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, payload)
            elif kind == "chr":
                info.external_attr = (stat.S_IFCHR | 0o644) << 16
                zf.writestr(info, b"")
            else:
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                zf.writestr(info, payload if isinstance(payload, bytes) else b"data\n")
    return path


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


HOSTILE = [
    ("dotdot", [("pkg/ok.txt", "file", None), ("pkg/../../escaped.txt", "file", None)],
     "pkg/../../escaped.txt", "'..' in the path"),
    ("absolute", [("/tmp/relgate-absolute-escape.txt", "file", None)],
     "/tmp/relgate-absolute-escape.txt", "absolute path"),
    ("symlink-out", [("pkg/link", "symlink", "../../.."), ("pkg/link/escaped.txt", "file", None)],
     "pkg/link", "points outside the extraction folder"),
    ("symlink-absolute", [("pkg/passwd", "symlink", "/etc/passwd")], "pkg/passwd", "symlink to an absolute path"),
    ("through-symlink", [("pkg/here", "symlink", "."), ("pkg/here/x.txt", "file", None)],
     "pkg/here/x.txt", "goes through the symlink pkg/here"),
    ("hardlink-out", [("pkg/hard", "hardlink", "../../etc/passwd")], "pkg/hard", "'..' in the path"),
    ("hardlink-unknown", [("pkg/hard", "hardlink", "pkg/nothing")], "pkg/hard", "not an earlier regular file"),
    ("device", [("pkg/null", "chr", None)], "pkg/null", "device file"),
    ("fifo", [("pkg/pipe", "fifo", None)], "pkg/pipe", "FIFO"),
    ("duplicate", [("pkg/a.txt", "file", b"1"), ("pkg/a.txt", "file", b"2")], "pkg/a.txt", "duplicate member"),
    ("backslash", [("pkg\\..\\..\\evil.txt", "file", None)], "pkg\\..\\..\\evil.txt", "backslash"),
    ("file-over-folder", [("pkg/sub/x.txt", "file", None), ("pkg/sub", "symlink", "x.txt")], "pkg/sub",
     "where earlier members have a folder"),
]


@pytest.mark.parametrize("label,entries,member,words", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_tar_is_refused_naming_archive_and_member_and_nothing_is_written(
        tmp_path: Path, label: str, entries: list[Entry], member: str, words: str) -> None:
    archive = make_tar(tmp_path / f"{label}.tar.gz", entries)
    work = tmp_path / "work"
    work.mkdir()
    before = tree(tmp_path)
    with pytest.raises(ArchiveError) as caught:
        extract(archive, work / "out")
    message = str(caught.value)
    assert message.startswith(f"{archive}: member {member!r}: ") or message.startswith(
        f"{os.path.relpath(archive)}: member {member!r}: ")
    assert words in message
    assert caught.value.member == member and caught.value.exit_code == 2 and isinstance(caught.value, InputError)
    assert tree(tmp_path) == before  # no output folder, no partial folder, nothing outside
    assert not Path("/tmp/relgate-absolute-escape.txt").exists()


@pytest.mark.parametrize("entries,member,words", [
    ([("../evil.txt", "file", None)], "../evil.txt", "'..' in the path"),
    ([("/abs.txt", "file", None)], "/abs.txt", "absolute path"),
    ([("C:/evil.txt", "file", None)], "C:/evil.txt", "absolute path"),
    ([("pkg/link", "symlink", "../../outside")], "pkg/link", "points outside"),
    ([("pkg/dev", "chr", None)], "pkg/dev", "device file"),
], ids=["dotdot", "absolute", "drive", "symlink-out", "device"])
def test_hostile_zip_is_refused(tmp_path: Path, entries: list[Entry], member: str, words: str) -> None:
    archive = make_zip(tmp_path / "evil.whl", entries)
    with pytest.raises(ArchiveError) as caught:
        extract(archive, tmp_path / "out")
    assert caught.value.member == member and words in str(caught.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.txt").exists()


def test_good_tar_extracts_files_modes_inner_links_and_hardlinks_as_copies(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.crate"  # a crate is a gzip tar
    with tarfile.open(archive, "w:gz") as tf:
        for name, data, mode in (("pkg-1.0/src/lib.rs", b"fn main() {}\n", 0o6755),
                                 ("pkg-1.0/README.md", b"# pkg\n", 0o600)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("pkg-1.0/docs/readme")
        link.type, link.linkname = tarfile.SYMTYPE, "../README.md"
        tf.addfile(link)
        hard = tarfile.TarInfo("pkg-1.0/README.copy")
        hard.type, hard.linkname = tarfile.LNKTYPE, "pkg-1.0/README.md"
        tf.addfile(hard)
    done = extract(archive, tmp_path / "out")
    assert done.top == "pkg-1.0" and done.root == tmp_path / "out" / "pkg-1.0"
    root = done.root
    assert (root / "src/lib.rs").read_bytes() == b"fn main() {}\n"
    assert stat.S_IMODE((root / "src/lib.rs").stat().st_mode) == 0o755  # setuid/setgid dropped
    assert stat.S_IMODE((root / "README.md").stat().st_mode) == 0o644
    assert os.readlink(root / "docs/readme") == "../README.md" and (root / "docs/readme").read_text() == "# pkg\n"
    assert not (root / "README.copy").is_symlink() and (root / "README.copy").read_text() == "# pkg\n"
    assert os.stat(root / "README.copy").st_ino != os.stat(root / "README.md").st_ino
    assert done.files == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["out", "pkg-1.0.crate"]


@pytest.mark.parametrize("mode,suffix", [("w", ".tar"), ("w:bz2", ".tar.bz2"), ("w:xz", ".tar.xz")])
def test_plain_bzip2_and_xz_tars(tmp_path: Path, mode: str, suffix: str) -> None:
    archive = make_tar(tmp_path / f"a{suffix}", [("a/b.txt", "file", b"b\n")], mode)
    assert extract(archive, tmp_path / "out").root.joinpath("b.txt").read_text() == "b\n"


def test_zip_with_folders_and_no_single_top(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "w.whl", [("pkg/__init__.py", "file", b""), ("pkg-1.0.dist-info/METADATA", "file",
                                                                              b"Name: pkg\n")])
    done = extract(archive, tmp_path / "out")
    assert done.top is None and done.root == tmp_path / "out"
    assert (done.root / "pkg-1.0.dist-info/METADATA").read_text() == "Name: pkg\n"
    assert [m.name for m in read_members(archive)] == ["pkg/__init__.py", "pkg-1.0.dist-info/METADATA"]


def test_dot_slash_names_and_the_root_entry_are_normalised(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "dot.tar.gz", [(".", "dir", None), ("./a/./b.txt", "file", b"x")])
    done = extract(archive, tmp_path / "out")
    assert [m.name for m in done.members] == ["a/b.txt"] and (tmp_path / "out/a/b.txt").read_bytes() == b"x"


def test_an_archive_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "big.tar.gz", [("a/big.bin", "file", b"0" * 4096)])
    with pytest.raises(ArchiveError, match=r"member 'a/big.bin': unpacks to more than max_unpacked_bytes = 1000 "
                                           r"\(4096 bytes declared\)"):
        extract(archive, tmp_path / "out", limits=ArchiveLimits(max_unpacked_bytes=1000))
    assert not (tmp_path / "out").exists()


def test_corrupt_and_missing_archives_are_errors_naming_them(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    with pytest.raises(ArchiveError, match="bad.tar.gz: "):
        extract(bad, tmp_path / "out")
    with pytest.raises(ArchiveError, match="no such file"):
        extract(tmp_path / "nope.zip", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_extraction_needs_a_fresh_folder(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tar.gz", [("a/b.txt", "file", None)])
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="already exists; extraction needs a fresh folder"):
        extract(archive, tmp_path / "used")
    assert tree(tmp_path / "used") == {"keep.txt"}
    (tmp_path / "empty").mkdir()
    assert extract(archive, tmp_path / "empty").root.joinpath("b.txt").is_file()


# --- links resolved physically, cut and corrupt streams, names that cannot be shown or held ----------

def _tar_bytes(entries: list[Entry]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _gz(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


THREE = [("pkg/a.txt", b"a" * 700), ("pkg/b.txt", b"b" * 10), ("pkg/c.txt", b"c" * 10)]


def _cut_in_header(path: Path) -> None:
    path.write_bytes(_gz(_tar_bytes(THREE)[: 512 + 1024 + 100]))  # inside the second member's header


def _cut_at_boundary(path: Path) -> None:
    path.write_bytes(_gz(_tar_bytes(THREE)[: 512 + 1024]))  # right after the first member's data


def _corrupt_gzip(path: Path) -> None:
    data = bytearray(_gz(_tar_bytes(THREE) + os.urandom(20000)))  # incompressible: damage hits real data
    for i in range(len(data) // 2, len(data) // 2 + 16):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _gzip_without_trailer(path: Path) -> None:
    path.write_bytes(_gz(_tar_bytes(THREE))[:-8])


def _zip_bytes(compression: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        zf.writestr("pkg/data.bin", os.urandom(4000) if compression == zipfile.ZIP_DEFLATED else b"A" * 4000)
    return buf.getvalue()


def _zip_bad_crc(path: Path) -> None:
    data = bytearray(_zip_bytes(zipfile.ZIP_STORED))
    data[100] ^= 0xFF  # inside the stored data: the CRC no longer matches
    path.write_bytes(bytes(data))


def _zip_bad_deflate(path: Path) -> None:
    data = bytearray(_zip_bytes(zipfile.ZIP_DEFLATED))
    for i in range(60, 80):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))


def _zip_lying_size(path: Path) -> None:
    data = bytearray(_zip_bytes(zipfile.ZIP_STORED))
    central = data.rindex(b"PK\x01\x02")
    data[central + 24:central + 28] = (100).to_bytes(4, "little")  # uncompressed size: says 100, holds 4000
    path.write_bytes(bytes(data))


def _tar_of(entries: list[Entry]):  # noqa: ANN202
    return lambda path: make_tar(path, entries)


MORE_HOSTILE = [
    # (label, suffix, build, member named in the message, words)
    ("link-chain-out", ".tar.gz", _tar_of([("pkg/ok.txt", "file", None), ("pkg/d1/d2/d3/b", "symlink", "../../.."),
                                           ("pkg/a", "symlink", "d1/d2/d3/b/../../../tmp")]),
     "pkg/a", "data filter"),
    ("link-to-top-parent", ".tar.gz", _tar_of([("pkg/ok.txt", "file", None), ("pkg/up", "symlink", "..")]),
     "pkg/up", "resolves to the extraction folder"),
    ("link-forward-chain", ".tar.gz", _tar_of([("pkg/ok.txt", "file", None), ("pkg/a", "symlink", "b/../x"),
                                               ("pkg/b", "symlink", "../pkg")]),
     "pkg/a", "outside the package root"),
    ("link-loop", ".tar.gz", _tar_of([("pkg/l1", "symlink", "l2"), ("pkg/l2", "symlink", "l1")]), "pkg/l1",
     "symlink loop"),
    ("cut-in-header", ".tar.gz", _cut_in_header, "pkg/a.txt", "no end-of-archive marker"),
    ("cut-at-boundary", ".tar.gz", _cut_at_boundary, "pkg/a.txt", "no end-of-archive marker"),
    ("corrupt-gzip", ".tar.gz", _corrupt_gzip, None, "corrupt archive"),
    ("gzip-cut", ".tar.gz", _gzip_without_trailer, None, "corrupt archive"),
    ("zip-bad-crc", ".whl", _zip_bad_crc, "pkg/data.bin", "corrupt member data"),
    ("zip-bad-deflate", ".whl", _zip_bad_deflate, "pkg/data.bin", "corrupt member data"),
    ("zip-lying-size", ".whl", _zip_lying_size, "pkg/data.bin", "corrupt member data"),
    ("newline-name", ".tar.gz", _tar_of([("pkg/x\nPASS: every check", "file", None)]), "pkg/x\nPASS: every check",
     "control character"),
    ("name-too-long", ".tar.gz", _tar_of([("pkg/" + "n" * 300, "file", None)]), "pkg/" + "n" * 300,
     "File name too long"),
]


@pytest.mark.parametrize("label,suffix,build,member,words", MORE_HOSTILE, ids=[h[0] for h in MORE_HOSTILE])
def test_more_hostile_archives_are_refused_and_nothing_is_left(tmp_path: Path, label: str, suffix: str, build,  # noqa: ANN001
                                                               member: str | None, words: str) -> None:
    archive = tmp_path / f"{label}{suffix}"
    build(archive)
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path.parent / "x"
    before, before_parent = tree(tmp_path), sorted(p.name for p in tmp_path.parent.iterdir())
    with pytest.raises(ArchiveError) as caught:
        extract(archive, work / "out")
    message = str(caught.value)
    assert "\n" not in message  # one line, whatever the member's name holds
    assert message.startswith((f"{archive}: ", f"{os.path.relpath(archive)}: ")), message
    assert words in message, message
    if member is not None:
        assert repr(member) in message, message
    if label.startswith(("cut-", "link-", "zip-", "newline", "name-")):
        assert caught.value.member in (member, None)
    assert tree(tmp_path) == before  # nothing half-extracted, no partial folder
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before_parent and not outside.exists()


def test_printable_escapes_what_would_forge_a_line() -> None:
    from relgate.package.archive import printable

    assert printable("pkg/ok.txt") == "pkg/ok.txt"
    assert printable("a\nPASS\x1b[2K") == "a\\nPASS\\x1b[2K"


# --- expansion limits: size, members, compression ratio (issue 23) ---------------------------

MIB = 1 << 20
_GZ_MIB_OF_ZEROS = None


def _gz_zeros_mib() -> bytes:
    """One gzip member holding 1 MiB of zeros (about 1 KiB): gzip members concatenate, so a
    stream of hundreds of MiB costs a few hundred KiB and no time to build."""
    global _GZ_MIB_OF_ZEROS
    if _GZ_MIB_OF_ZEROS is None:
        import gzip

        _GZ_MIB_OF_ZEROS = gzip.compress(bytes(MIB), compresslevel=9)
    return _GZ_MIB_OF_ZEROS


def _tar_gz_bomb(path: Path, members: list[tuple[str, int]]) -> Path:
    """A real tar.gz whose members hold ``size`` zero bytes each (sizes in whole MiB)."""
    import gzip

    with open(path, "wb") as out:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode = size, 0o644
            out.write(gzip.compress(info.tobuf(format=tarfile.PAX_FORMAT)))
            assert size % MIB == 0
            out.write(_gz_zeros_mib() * (size // MIB))
        out.write(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))
    return path


def test_a_huge_tar_gz_stream_is_refused_at_its_header_before_it_is_decompressed(tmp_path: Path) -> None:
    # 400 MiB of zeros in ~400 KiB: the default limits refuse it on the member's header (the
    # number in the message is where its data would end), so nothing is decompressed or written.
    archive = _tar_gz_bomb(tmp_path / "bomb.tar.gz", [("pkg/zeros.bin", 400 * MIB)])
    assert archive.stat().st_size < 1 * MIB
    with pytest.raises(ArchiveError) as caught:
        extract(archive, tmp_path / "out")
    message = str(caught.value)
    assert message.startswith(f"{archive}: member 'pkg/zeros.bin': unpacks to more than "), message
    # the number is where the member's data would end in the decompressed stream: its header's word
    end = re.search(r"\((\d+) bytes of tar stream\) from an archive of (\d+) bytes", message)
    assert end is not None and 400 * MIB < int(end.group(1)) < 400 * MIB + 8192, message
    assert int(end.group(2)) == archive.stat().st_size
    assert "past max_ratio = 100 times its size" in message, message
    assert not (tmp_path / "out").exists() and tree(tmp_path) == {"bomb.tar.gz"}


def test_a_bomb_spread_over_many_members_is_refused_while_it_streams(tmp_path: Path) -> None:
    # 300 members of 1 MiB of zeros: no header is alarming alone; the stream passes the ratio
    # (100 x ~300 KiB) at about member 30, which is named, long before the 300th is read.
    archive = _tar_gz_bomb(tmp_path / "many.tar.gz", [(f"pkg/z{i:03d}.bin", MIB) for i in range(300)])
    with pytest.raises(ArchiveError) as caught:
        read_members(archive)
    assert caught.value.member is not None and caught.value.member.startswith("pkg/z"), caught.value
    assert int(caught.value.member[5:8]) < 60, caught.value  # refused early, not after reading all 300
    assert "max_ratio = 100" in str(caught.value)


def test_a_zip_bomb_is_refused_naming_the_member_and_the_numbers(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.whl"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for i in range(16):
            zf.writestr(f"pkg/z{i:02d}.bin", bytes(MIB))
    size = archive.stat().st_size
    with pytest.raises(ArchiveError) as caught:
        extract(archive, tmp_path / "out", limits=ArchiveLimits(max_ratio=50, ratio_floor=MIB))
    message = str(caught.value)
    # past 50 x the archive's size (and the 1 MiB floor): the member that crosses it is named
    cap = max(MIB, 50 * size)
    crossing = cap // MIB  # zero-based index of the member whose declared size crosses the cap
    assert caught.value.member == f"pkg/z{crossing:02d}.bin", message
    assert f"unpacks to more than {cap} bytes ({(crossing + 1) * MIB} bytes declared) from an archive of " \
           f"{size} bytes: past max_ratio = 50 times its size" in message, message
    assert not (tmp_path / "out").exists()


def test_the_member_count_and_the_size_limit_name_the_archive_member_and_numbers(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "many.zip", [(f"pkg/f{i}.txt", "file", b"x") for i in range(6)])
    with pytest.raises(ArchiveError, match=r"many.zip: member 'pkg/f5.txt': more than max_members = 5 members"):
        extract(archive, tmp_path / "out", limits=ArchiveLimits(max_members=5))
    tar = make_tar(tmp_path / "many.tar.gz", [(f"pkg/f{i}.txt", "file", b"x") for i in range(6)])
    with pytest.raises(ArchiveError, match=r"many.tar.gz: member 'pkg/f5.txt': more than max_members = 5 members"):
        read_members(tar, limits=ArchiveLimits(max_members=5))
    big = make_zip(tmp_path / "big.zip", [("pkg/a.bin", "file", bytes(600)), ("pkg/b.bin", "file", bytes(600))])
    with pytest.raises(ArchiveError, match=r"big.zip: member 'pkg/b.bin': unpacks to more than "
                                           r"max_unpacked_bytes = 1000 \(1200 bytes declared\)"):
        extract(big, tmp_path / "out", limits=ArchiveLimits(max_unpacked_bytes=1000))
    assert not (tmp_path / "out").exists()


def test_hard_link_copies_count_against_the_size_limit(tmp_path: Path) -> None:
    entries = [("pkg/a.bin", "file", bytes(600))] + [(f"pkg/l{i}", "hardlink", "pkg/a.bin") for i in range(3)]
    archive = make_tar(tmp_path / "links.tar.gz", entries)
    with pytest.raises(ArchiveError, match=r"member 'pkg/l1': unpacks to more than max_unpacked_bytes = 1500 "
                                           r"\(1800 bytes declared\)"):
        extract(archive, tmp_path / "out", limits=ArchiveLimits(max_unpacked_bytes=1500))
    done = extract(archive, tmp_path / "ok", limits=ArchiveLimits(max_unpacked_bytes=2400))
    assert (tmp_path / "ok/pkg/l2").read_bytes() == bytes(600)
    assert done.size == 600


def test_the_bytes_really_written_are_counted_not_the_declared_sizes(tmp_path: Path) -> None:
    # The writer's own count is what stops it: a budget that the declared sizes fit (the member
    # is declared before it is written) is spent by the bytes written, member by member.
    from relgate.package import archive as mod

    budget = mod._Budget(tmp_path / "nothing", ArchiveLimits(max_unpacked_bytes=10, ratio_floor=1 << 40))
    budget.write(8, "pkg/a")
    with pytest.raises(ArchiveError, match=r"member 'pkg/b': unpacks to more than max_unpacked_bytes = 10 "
                                           r"\(11 bytes written\)"):
        budget.write(3, "pkg/b")


def test_setuid_setgid_and_sticky_bits_are_stripped_and_reported(tmp_path: Path) -> None:
    tar_path = tmp_path / "modes.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tf:
        for name, mode in (("pkg/suid", 0o4755), ("pkg/sgid", 0o2644), ("pkg/plain", 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = 2, mode
            tf.addfile(info, io.BytesIO(b"x\n"))
        info = tarfile.TarInfo("pkg/tmp")
        info.type, info.mode = tarfile.DIRTYPE, 0o1777
        tf.addfile(info)
    done = extract(tar_path, tmp_path / "t")
    assert {m.name: m.stripped for m in done.stripped} == {"pkg/suid": ("setuid",), "pkg/sgid": ("setgid",),
                                                         "pkg/tmp": ("sticky",)}
    zip_path = tmp_path / "modes.zip"
    with zipfile.ZipFile(zip_path, "w") as zf:
        for name, mode in (("pkg/suid", 0o4755), ("pkg/both", 0o6755), ("pkg/plain", 0o644)):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(info, b"x\n")
    zdone = extract(zip_path, tmp_path / "z")
    assert {m.name: m.stripped for m in zdone.stripped} == {"pkg/suid": ("setuid",), "pkg/both": ("setuid", "setgid")}
    for root in (tmp_path / "t", tmp_path / "z"):
        for path in root.rglob("*"):
            assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), path
    assert stat.S_IMODE((tmp_path / "z/pkg/both").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "t/pkg/sgid").stat().st_mode) == 0o644
