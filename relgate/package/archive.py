"""Safe extraction of package archives: tar (plain, gzip, bzip2, xz — a ``.crate`` is a
gzip tar) and zip (a wheel is a zip).

Every member is checked before anything is written, with relgate's own rules, and each tar
member again as it is written with ``tarfile``'s ``data`` extraction filter (PEP 706), which
resolves a link physically, through the links already extracted, as the kernel would:

- refused: an absolute path (``/etc/x``, ``C:x``), a ``..`` component, a backslash or NUL
  in a name, a duplicate name, a path that goes through a symlink of the archive, a
  symlink whose target is absolute or resolves outside the extraction folder, a hard link
  to anything but an earlier regular file, device files, FIFOs and other special members,
  encrypted zip members;
- refused as soon as it is seen, while the archive streams (never after extracting it all):
  more than ``max_members`` members, more than ``max_unpacked_bytes`` of member data, or more
  than ``max_ratio`` unpacked bytes per byte of the archive file (once past ``ratio_floor``) —
  the limits of :class:`relgate.manifest.package_spec.ArchiveLimits`, set in ``package.toml``.
  Declared sizes are checked up front and the bytes really written (and, for a tar, the bytes
  of the decompressed stream read) are counted as they come, since a declared size can lie;
  a hard link's copy counts as the bytes it copies;
- refused after writing, before the folder is renamed into place: any symlink that, with
  every link of the archive in place, resolves outside the package root (the single top
  folder when there is one, so ``top/up -> ..`` is refused too) or loops;
- refused: control characters in a name (a newline would forge console lines), a tar that
  ends before its end-of-archive marker (cut inside a header or at a member boundary) or
  whose compressed stream is corrupt, a member whose data is corrupt (bad CRC, bad deflate
  data, a size that lies), a name the filesystem cannot hold — each naming the member;
- written: folders, regular files (mode 0644, or 0755 when any execute bit is set; never
  setuid, setgid or sticky: a member that carried those bits has them listed in
  ``Member.stripped``, and :attr:`Extracted.stripped` names every such member), symlinks that
  stay inside (created last), hard links (as copies of the file they name).

The archive is extracted into a fresh hidden folder next to the destination and renamed
into place once complete, so a refused or broken archive leaves nothing behind — nothing
is ever written outside the destination's parent folder, and nothing at all on refusal.
"""

from __future__ import annotations

import errno
import lzma
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from relgate.core.errors import ExecutionError, InputError
from relgate.core.record import record
from relgate.core.schema import display_path
from relgate.manifest.package_spec import DEFAULT_LIMITS, ArchiveLimits

__all__ = ["ArchiveError", "ArchiveLimits", "Member", "Extracted", "ARCHIVE_SUFFIXES", "is_archive_name",
           "read_members", "extract", "printable"]

#: Names relgate treats as archives (also the default "nested archive" globs of an inspection).
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".crate",
                    ".zip", ".whl", ".jar", ".egg", ".7z", ".rar")
_ZIP_SUFFIXES = (".zip", ".whl", ".jar", ".egg")
_CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# What a corrupt stream or member raises, by layer: tar, zip, gzip/zlib, xz, bz2 (OSError).
_CORRUPT = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, UnicodeDecodeError)


def printable(name: str) -> str:
    """A name safe to print on one console line: control and other unprintable characters
    escaped (``\\n``, ``\\x1b``), everything else as it is."""
    if name.isprintable():
        return name
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in name)


class ArchiveError(InputError):
    """An archive relgate refuses to extract, or cannot read. Names the archive and the member."""

    def __init__(self, archive: Path, problem: str, *, member: str | None = None) -> None:
        self.archive = Path(archive)
        self.member = member
        self.problem = problem
        where = display_path(self.archive) + (f": member {member!r}" if member is not None else "")
        super().__init__(f"{where}: {problem}")


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


@record
class Member:
    """One entry of an archive, as checked: ``name`` is normalised ("/"-separated, no "./")."""

    name: str
    kind: str  # "file", "dir", "symlink", "hardlink"
    size: int = 0
    executable: bool = False
    link: str | None = None  # symlink: its target as stored; hardlink: the member it names
    raw: str = ""  # the name as the archive spells it
    stripped: tuple[str, ...] = ()  # "setuid", "setgid", "sticky": bits it carried, never written


@record
class Extracted:
    archive: Path
    dest: Path
    members: tuple[Member, ...]
    top: str | None  # the single top-level folder every member lives in, if there is one

    @property
    def root(self) -> Path:
        """The folder a package's paths are relative to: the single top folder, else ``dest``."""
        return self.dest / self.top if self.top else self.dest

    @property
    def files(self) -> int:
        return sum(1 for m in self.members if m.kind in ("file", "hardlink"))

    @property
    def size(self) -> int:
        return sum(m.size for m in self.members if m.kind == "file")

    @property
    def stripped(self) -> tuple[Member, ...]:
        """The members whose setuid, setgid or sticky bits were dropped."""
        return tuple(m for m in self.members if m.stripped)


_SPECIAL_BITS = ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"), (stat.S_ISVTX, "sticky"))


def _special(mode: int) -> tuple[str, ...]:
    return tuple(name for bit, name in _SPECIAL_BITS if mode & bit)


class _Budget:
    """What an archive may still expand to, counted as it streams (see :class:`ArchiveLimits`)."""

    def __init__(self, archive: Path, limits: ArchiveLimits) -> None:
        self.archive, self.limits = archive, limits
        try:
            self.size = max(archive.stat().st_size, 1)
        except OSError:
            self.size = 1
        self.ratio_cap = max(limits.ratio_floor, int(limits.max_ratio * self.size))
        self.written = 0

    def too_many(self, count: int, member: str) -> None:
        if count > self.limits.max_members:
            raise ArchiveError(self.archive, f"more than max_members = {self.limits.max_members} members: refused",
                               member=member)

    def unpacked(self, total: int, member: str | None, how: str) -> None:
        """``total`` unpacked bytes (``how``: declared, written, read) must stay within both limits."""
        if total > self.limits.max_unpacked_bytes:
            raise ArchiveError(self.archive, f"unpacks to more than max_unpacked_bytes = "
                                             f"{self.limits.max_unpacked_bytes} ({total} bytes {how}): refused",
                               member=member)
        self.ratio(total, member, how)

    def ratio(self, total: int, member: str | None, how: str) -> None:
        if total > self.ratio_cap:
            raise ArchiveError(self.archive, f"unpacks to more than {self.ratio_cap} bytes ({total} bytes {how}) "
                                             f"from an archive of {self.size} bytes: past max_ratio = "
                                             f"{self.limits.max_ratio:g} times its size: "
                                             "refused", member=member)

    def stream(self, end: int, member: str | None, how: str) -> None:
        """A tar's decompressed stream (headers included) is held to the ratio only: its member
        data is held to ``max_unpacked_bytes`` as declared and as written."""
        self.ratio(end, member, how)

    def write(self, count: int, member: str) -> None:
        self.written += count
        self.unpacked(self.written, member, "written")


# --- reading and checking -------------------------------------------------------------------


def _normal_name(archive: Path, raw: str) -> str:
    """The member's path relative to the extraction folder, or an :class:`ArchiveError`."""
    if not raw:
        raise ArchiveError(archive, "a member has an empty name", member=raw)
    if "\x00" in raw:
        raise ArchiveError(archive, "NUL byte in the name", member=raw)
    if "\\" in raw:
        raise ArchiveError(archive, "backslash in the name (a path separator to some extractors)", member=raw)
    if _CONTROL.search(raw):
        raise ArchiveError(archive, "control character in the name (a newline would forge console lines)",
                           member=raw)
    if raw.startswith("/") or _DRIVE.match(raw):
        raise ArchiveError(archive, "absolute path: it would be written outside the extraction folder", member=raw)
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(archive, "'..' in the path: it would be written outside the extraction folder",
                           member=raw)
    return "/".join(parts)


def _check_symlink(archive: Path, raw: str, name: str, target: str) -> None:
    if not target:
        raise ArchiveError(archive, "symlink with an empty target", member=raw)
    if "\x00" in target:
        raise ArchiveError(archive, "NUL byte in the symlink target", member=raw)
    if target.startswith("/") or _DRIVE.match(target) or "\\" in target:
        raise ArchiveError(archive, f"symlink to an absolute path ({target}): it points outside the "
                                    "extraction folder", member=raw)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if resolved == ".." or resolved.startswith("../"):
        raise ArchiveError(archive, f"symlink to {target} points outside the extraction folder", member=raw)


def _tar_members(archive: Path, tf: tarfile.TarFile, budget: _Budget
                 ) -> Iterator[tuple[Member, tarfile.TarInfo | None]]:
    last: str | None = None
    for count, info in enumerate(tf, 1):
        raw = info.name
        budget.too_many(count, raw)
        # Where this member's data ends in the decompressed stream: reading on to the next
        # header decompresses all of it, so refuse first.
        budget.stream(info.offset_data + (info.size if info.isreg() else 0), raw, "of tar stream")
        if info.isdir():
            kind, link = "dir", None
        elif info.isreg():
            kind, link = "file", None
        elif info.issym():
            kind, link = "symlink", info.linkname
        elif info.islnk():
            kind, link = "hardlink", info.linkname
        elif info.ischr() or info.isblk():
            raise ArchiveError(archive, "device file: refused", member=raw)
        elif info.isfifo():
            raise ArchiveError(archive, "FIFO (named pipe): refused", member=raw)
        else:
            raise ArchiveError(archive, f"unsupported member type {info.type!r}: refused", member=raw)
        name = _normal_name(archive, raw)
        last = raw
        yield Member(name=name, kind=kind, size=info.size if kind == "file" else 0,
                     executable=bool(info.mode & 0o111), link=link, raw=raw,
                     stripped=_special(info.mode) if kind in ("file", "dir", "hardlink") else ()), info
    _check_tar_end(archive, tf, last, budget)


def _check_tar_end(archive: Path, tf: tarfile.TarFile, last: str | None, budget: _Budget) -> None:
    """tarfile stops quietly at a cut or a broken header: insist on the end-of-archive
    marker (two zero blocks) right after the last member, then read the (compressed) stream
    to its end, so its checksum is checked too."""
    stream = tf.fileobj
    assert stream is not None
    after = f" after member {last!r}" if last is not None else ""
    zero = bytes(tarfile.BLOCKSIZE)
    # tarfile read one block at tf.offset when it stopped; the marker's second block follows.
    if stream.tell() - tf.offset != tarfile.BLOCKSIZE or stream.read(tarfile.BLOCKSIZE) != zero:
        raise ArchiveError(archive, f"no end-of-archive marker{after}: the archive is cut short or its next "
                                    "header is corrupt")
    while stream.read(_CHUNK):
        budget.stream(stream.tell(), None, f"of tar stream, read past its end-of-archive marker{after}")


def _zip_members(archive: Path, zf: zipfile.ZipFile, budget: _Budget) -> Iterator[tuple[Member, zipfile.ZipInfo]]:
    for count, info in enumerate(zf.infolist(), 1):
        raw = info.filename
        budget.too_many(count, raw)
        mode = (info.external_attr >> 16) & 0xFFFF
        fmt = stat.S_IFMT(mode)
        if info.flag_bits & 0x1:
            raise ArchiveError(archive, "encrypted member: refused", member=raw)
        if fmt in (stat.S_IFCHR, stat.S_IFBLK):
            raise ArchiveError(archive, "device file: refused", member=raw)
        if fmt in (stat.S_IFIFO, stat.S_IFSOCK):
            raise ArchiveError(archive, "FIFO or socket: refused", member=raw)
        if fmt == stat.S_IFLNK:
            kind = "symlink"
            if info.file_size > 4096:
                raise ArchiveError(archive, "symlink target longer than 4096 bytes", member=raw)
            link: str | None = zf.read(info).decode("utf-8", errors="replace")
        elif info.is_dir() or fmt == stat.S_IFDIR:
            kind, link = "dir", None
        else:
            kind, link = "file", None
        name = _normal_name(archive, raw)
        yield Member(name=name, kind=kind, size=info.file_size if kind == "file" else 0,
                     executable=bool(mode & 0o111), link=link, raw=raw,
                     stripped=_special(mode) if kind in ("file", "dir") else ()), info


def _is_zip(archive: Path) -> bool:
    if archive.name.lower().endswith(_ZIP_SUFFIXES):
        return True
    try:
        with open(archive, "rb") as fh:
            return fh.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    except OSError:
        return False


def _validate(archive: Path, pairs: Iterator[tuple[Member, object]], budget: _Budget
              ) -> list[tuple[Member, object]]:
    """Every rule of the module docstring, over the whole member list, before any write."""
    out: list[tuple[Member, object]] = []
    kinds: dict[str, str] = {}
    sizes: dict[str, int] = {}
    symlinks: set[str] = set()
    total = 0
    for member, info in pairs:
        if not member.name:  # "./" — the extraction folder itself
            if member.kind != "dir":
                raise ArchiveError(archive, "a non-folder member names the archive root", member=member.raw)
            continue
        parts = member.name.split("/")
        parents = ["/".join(parts[:i]) for i in range(1, len(parts))]
        for parent in parents:
            if parent in symlinks:
                raise ArchiveError(archive, f"the path goes through the symlink {parent}", member=member.raw)
            if kinds.get(parent, "dir") != "dir":
                raise ArchiveError(archive, f"the path goes through {parent}, which is a file", member=member.raw)
        seen = kinds.get(member.name)
        if seen == "dir" and member.kind != "dir":
            raise ArchiveError(archive, f"a {member.kind} where earlier members have a folder: it would "
                                        "replace the folder", member=member.raw)
        if seen is not None and seen != "dir":
            raise ArchiveError(archive, "duplicate member (a later copy would replace the first)",
                               member=member.raw)
        if member.kind == "symlink":
            _check_symlink(archive, member.raw, member.name, member.link or "")
            symlinks.add(member.name)
        elif member.kind == "hardlink":
            try:
                target = _normal_name(archive, member.link or "")
            except ArchiveError as exc:
                raise ArchiveError(archive, f"hard link to {member.link!r}: {exc.problem}", member=member.raw) from None
            if kinds.get(target) != "file":
                raise ArchiveError(archive, f"hard link to {member.link!r}, which is not an earlier regular "
                                            "file of the archive", member=member.raw)
            member = Member(name=member.name, kind="hardlink", link=target, raw=member.raw,
                            executable=member.executable, stripped=member.stripped)
            total += sizes.get(target, 0)  # written as a copy: it costs what it copies
        total += member.size
        if member.kind == "file":
            sizes[member.name] = member.size
        budget.unpacked(total, member.raw, "declared")
        for parent in parents:  # folders made on the way count as members: nothing may replace them
            kinds.setdefault(parent, "dir")
        kinds[member.name] = member.kind if member.kind != "hardlink" else "file"
        out.append((member, info))
    return out


def read_members(archive: Path, *, limits: ArchiveLimits = DEFAULT_LIMITS) -> list[Member]:
    """The checked member list of ``archive`` (an :class:`ArchiveError` on the first refusal)."""
    budget = _Budget(Path(archive), limits)
    with _open(archive, budget) as (_, pairs):
        return [m for m, _ in _validate(Path(archive), pairs, budget)]


class _open:
    """Context manager: (the open archive, an iterator of (member, info))."""

    def __init__(self, archive: Path, budget: _Budget) -> None:
        self.archive = Path(archive)
        self.budget = budget
        self._handle: tarfile.TarFile | zipfile.ZipFile | None = None

    def __enter__(self) -> tuple[tarfile.TarFile | zipfile.ZipFile, Iterator[tuple[Member, object]]]:
        archive = self.archive
        if not archive.is_file():
            raise ArchiveError(archive, "no such file" if not archive.exists() else "not a file")
        try:
            if _is_zip(archive):
                zf = zipfile.ZipFile(archive)
                self._handle = zf
                return zf, _guard(archive, _zip_members(archive, zf, self.budget))
            tf = tarfile.open(archive, mode="r:*")
            self._handle = tf
            return tf, _guard(archive, _tar_members(archive, tf, self.budget))
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
            raise ArchiveError(archive, f"not a readable tar or zip archive: {exc}") from None

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()


def _guard(archive: Path, it: Iterator[tuple[Member, object]]) -> Iterator[tuple[Member, object]]:
    """Turn a corrupt stream met half-way into an :class:`ArchiveError`."""
    last: str | None = None
    try:
        for member, info in it:
            last = member.raw
            yield member, info
    except (*_CORRUPT, OSError) as exc:
        after = f" after member {last!r}" if last is not None else ""
        raise ArchiveError(archive, f"corrupt archive{after}: {exc}") from None


# --- writing ------------------------------------------------------------------------------------


def extract(archive: Path, dest: Path, *, limits: ArchiveLimits = DEFAULT_LIMITS) -> Extracted:
    """Check every member of ``archive``, then extract it into the fresh folder ``dest``
    (which must not exist, or be empty), within ``limits``. On any refusal or failure nothing
    is left behind."""
    archive, dest = Path(archive), Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(f"{display_path(dest)}: already exists; extraction needs a fresh folder")
    budget = _Budget(archive, limits)
    with _open(archive, budget) as (handle, pairs):
        checked = _validate(archive, pairs, budget)
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
        try:
            _write_all(archive, handle, checked, partial, budget)
            _check_links(archive, checked, partial)
            if dest.exists():
                dest.rmdir()
            os.rename(partial, dest)
        except BaseException as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if isinstance(exc, OSError):
                raise ExecutionError(f"{display_path(dest)}: cannot extract {display_path(archive)}: "
                                     f"{exc.strerror or exc}") from None
            raise
    members = tuple(m for m, _ in checked)
    return Extracted(archive=archive, dest=dest, members=members, top=_single_top(members))


def _single_top(members: tuple[Member, ...]) -> str | None:
    tops = {m.name.split("/", 1)[0] for m in members}
    if len(tops) != 1:
        return None
    top = next(iter(tops))
    # A lone file at the top is not a folder to descend into.
    return top if any(m.name.startswith(top + "/") or (m.name == top and m.kind == "dir") for m in members) else None


def _write_all(archive: Path, handle: object, checked: list[tuple[Member, object]], root: Path,
               budget: _Budget) -> None:
    real_root = os.path.realpath(root)
    later: list[tuple[Member, object]] = []
    for member, info in checked:
        if member.kind in ("symlink", "hardlink"):
            later.append((member, info))
            continue
        with _member_errors(archive, member):
            _write_one(archive, handle, member, info, root, real_root, budget)
    # Hard links become copies; symlinks come last, so nothing is ever written through one.
    for member, info in later:
        path = root / member.name
        with _member_errors(archive, member):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            _inside(archive, member, path.parent, real_root)
            if member.kind == "hardlink":
                budget.write(os.stat(root / (member.link or "")).st_size, member.raw)
                shutil.copyfile(root / (member.link or ""), path, follow_symlinks=False)
                os.chmod(path, 0o755 if os.stat(root / (member.link or "")).st_mode & 0o111 else 0o644)
                continue
            if isinstance(info, tarfile.TarInfo):
                _data_filter(archive, member, info, real_root)
            os.symlink(member.link or "", path)


def _write_one(archive: Path, handle: object, member: Member, info: object, root: Path, real_root: str,
               budget: _Budget) -> None:
    path = root / member.name
    if member.kind == "dir":
        path.mkdir(parents=True, exist_ok=True, mode=0o755)
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    _inside(archive, member, path.parent, real_root)
    if isinstance(info, tarfile.TarInfo):
        _data_filter(archive, member, info, real_root)
    source = _member_stream(handle, info)
    mode = 0o755 if member.executable else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(fd, "wb") as out:
        if source is not None:
            with source:
                while True:
                    chunk = source.read(_CHUNK)
                    if not chunk:
                        break
                    budget.write(len(chunk), member.raw)  # the bytes really written, whatever was declared
                    out.write(chunk)
    if path.stat().st_size != member.size:
        raise ArchiveError(archive, f"the member holds {path.stat().st_size} bytes, its header says "
                                    f"{member.size}", member=member.raw)
    os.chmod(path, mode)


class _member_errors:
    """A corrupt member's data, or a name the filesystem cannot hold: an :class:`ArchiveError`
    naming the member (a full disk stays an OSError: it is no fault of the archive)."""

    def __init__(self, archive: Path, member: Member) -> None:
        self.archive, self.member = archive, member

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or isinstance(exc, ArchiveError):
            return False
        if isinstance(exc, _CORRUPT):
            raise ArchiveError(self.archive, f"corrupt member data: {exc}", member=self.member.raw) from None
        if isinstance(exc, OSError) and exc.errno in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL):
            raise ArchiveError(self.archive, f"cannot be written here: {exc.strerror}", member=self.member.raw) \
                from None
        return False


def _data_filter(archive: Path, member: Member, info: tarfile.TarInfo, real_root: str) -> None:
    """PEP 706's ``data`` filter on one tar member, against what is on disk now."""
    try:
        tarfile.data_filter(info, real_root)
    except tarfile.FilterError as exc:
        raise ArchiveError(archive, f"refused by the tarfile data filter: {exc}", member=member.raw) from None


def _check_links(archive: Path, checked: list[tuple[Member, object]], root: Path) -> None:
    """With every link in place, each symlink must resolve inside the package root."""
    members = tuple(m for m, _ in checked)
    top = _single_top(members)
    real_root = os.path.realpath(root)
    package_root = os.path.join(real_root, top) if top else real_root
    for member in members:
        if member.kind != "symlink":
            continue
        path = os.path.join(real_root, member.name)
        try:
            os.stat(path)
        except FileNotFoundError:
            pass  # dangling: where it points is still checked below
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArchiveError(archive, "symlink loop", member=member.raw) from None
            raise
        real = os.path.realpath(path)
        if real != package_root and not real.startswith(package_root + os.sep):
            where = "the extraction folder" if real == real_root else "outside the package root"
            raise ArchiveError(archive, f"symlink to {member.link} resolves to {where} once every link of the "
                                        "archive is in place", member=member.raw)


def _inside(archive: Path, member: Member, folder: Path, real_root: str) -> None:
    """Belt and braces: the folder a member is written into really is under the root."""
    real = os.path.realpath(folder)
    if real != real_root and not real.startswith(real_root + os.sep):
        raise ArchiveError(archive, "would be written outside the extraction folder", member=member.raw)


def _member_stream(handle: object, info: object) -> IO[bytes] | None:
    if isinstance(handle, zipfile.ZipFile):
        assert isinstance(info, zipfile.ZipInfo)
        return handle.open(info)
    assert isinstance(handle, tarfile.TarFile) and isinstance(info, tarfile.TarInfo)
    return handle.extractfile(info)
