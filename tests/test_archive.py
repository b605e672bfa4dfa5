"""Safe extraction (relgate.archive): hostile archives are refused before anything is written,
naming the archive and the member; good ones extract completely. Pure: no network, no tools."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.package.archive import ArchiveError, extract, read_members

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
    with pytest.raises(ArchiveError, match="expands past 1000 bytes"):
        extract(archive, tmp_path / "out", max_bytes=1000)
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
