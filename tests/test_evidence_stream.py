"""The bounded-memory evidence path (external sort, merge, merge-join diff) against the
whole-capture reference in relgate.evidence.cells, on random captures and tiny chunks (so
every capture is spilled as many runs and merged)."""

from __future__ import annotations

import io
import random
import shutil
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.evidence import stream_diff, stream_read, stream_sort
from relgate.evidence.cells import diff_cells, merge_captures, read_cells, render_capture
from relgate.evidence.stream_diff import diff_sorted
from relgate.evidence.stream_read import sorted_cells
from relgate.evidence.stream_write import count_cells, write_sorted

SUITES = ["scan", "scan2", "scan\x01", "golden", "é", "s p", "a", "ab"]
ARMS = ["cpu", "cuda", "c", "cu\x02", "ref"]


def _random_capture(rng: random.Random, rows: int, *, low: bool) -> bytes:
    suites = SUITES if low else [s for s in SUITES if "\x01" not in s]
    arms = ARMS if low else [a for a in ARMS if "\x02" not in a]
    out = []
    if rng.random() < 0.5:
        out.append("# relgate evidence")
    for _ in range(rows):
        r = rng.random()
        if r < 0.03:
            out.append("# a comment\twith a tab")
        elif r < 0.05:
            out.append(rng.choice(["", "   ", "\u00a0"]))
        else:
            value = rng.choice(["1", "2.5", "", "v\tw", "x y", "ü", f"{rng.random():.3f}"])
            out.append(f"{rng.choice(suites)}\t{rng.choice(arms)}\tk{rng.randrange(rows // 2 + 1)}\t{value}")
    text = "\n".join(out) + rng.choice(["\n", ""])
    if rng.random() < 0.3:
        text = text.replace("\n", "\r\n")
    data = text.encode()
    return b"\xef\xbb\xbf" + data if rng.random() < 0.2 else data


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _gnu_sort_on_path() -> bool:
    """Whether GNU sort is here, asked of ``sort`` itself: not of relgate's detection, which the
    cases below test (a broken detection must fail them, not skip them)."""
    found = shutil.which("sort")
    if found is None:
        return False
    done = subprocess.run([found, "--version"], capture_output=True, text=True)
    return done.returncode == 0 and "GNU coreutils" in done.stdout


def _sorter(monkeypatch: pytest.MonkeyPatch, external: bool) -> list[bool]:
    """GNU sort for every file bigger than a chunk (``external``), or for none; the answers of
    each of its runs (True: it sorted the file; False: it gave up and Python sorted it)."""
    if external:
        if not _gnu_sort_on_path():
            pytest.skip("GNU sort is not on PATH (apt-get install -y coreutils)")
        assert stream_sort.gnu_sort() is not None, "GNU sort is on PATH, but relgate did not find it"
    monkeypatch.setattr(stream_read, "EXTERNAL_MIN_BYTES", 0 if external else 1 << 62)
    answers: list[bool] = []
    real = stream_read.external_run

    def recording(*args, **kwargs):
        answers.append(real(*args, **kwargs))
        return answers[-1]

    monkeypatch.setattr(stream_read, "external_run", recording)
    return answers


@pytest.mark.parametrize("external", [False, True], ids=["python", "gnu-sort"])
@pytest.mark.parametrize("seed", range(40))
def test_stream_matches_the_reference(tmp_path: Path, seed: int, external: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sorted_by = _sorter(monkeypatch, external)
    rng = random.Random(seed)
    if seed % 3 == 0:  # many runs: merged in groups first
        monkeypatch.setattr(stream_read, "MAX_RUNS", 3)
    low = seed % 4 == 0
    base = _write(tmp_path, "base.cells", _random_capture(rng, rng.randrange(0, 300), low=low))
    cands = [_write(tmp_path, f"cand{i}.cells", _random_capture(rng, rng.randrange(0, 300), low=low))
             for i in range(rng.randrange(1, 4))]
    chunk = rng.choice([16, 64, 256, 1 << 20])
    base_cells = read_cells(base)
    cand_cells = merge_captures(read_cells(p) for p in cands)
    with ExitStack() as stack:
        b, c = sorted_cells(stack, [[base], cands], tmp=tmp_path / "tmp", chunk_bytes=chunk)
        out = io.BytesIO()
        assert write_sorted(c, out) == len(cand_cells)
        assert out.getvalue() == render_capture(cand_cells).encode()
        assert count_cells(b) == len(base_cells)
        assert diff_sorted(b, c) == diff_cells(base_cells, cand_cells)
        assert diff_sorted(c, b) == diff_cells(cand_cells, base_cells)
        if chunk < 64:  # tiny chunks: the captures were spilled as runs and merged
            assert any((tmp_path / "tmp").iterdir())
    assert not (tmp_path / "tmp").exists() or not any((tmp_path / "tmp").iterdir())  # the runs are gone
    if external and chunk < 1 << 20 and not low and base.stat().st_size > 2 * chunk:
        assert True in sorted_by  # GNU sort sorted at least one of the files
    assert external or not sorted_by


def test_a_sorted_baseline_is_merged_in_place_and_diffs_like_the_reference(tmp_path: Path) -> None:
    rng = random.Random(7)
    cells = {(f"s{i % 7}", f"a{i % 3}", f"k{i}"): f"{rng.random():.4f}" for i in range(2000)}
    base = _write(tmp_path, "base.cells", render_capture(cells).encode())
    moved = dict(cells)
    for cell in list(moved)[::50]:
        moved[cell] = "moved"
    del moved[next(iter(moved))]
    moved[("new", "arm", "key")] = "1"
    rows = list(render_capture(moved).splitlines()[1:])
    rng.shuffle(rows)
    cand = _write(tmp_path, "cand.cells", ("\n".join(rows) + "\n").encode())
    with ExitStack() as stack:
        b, c = sorted_cells(stack, [[base], [cand]], tmp=tmp_path / "tmp", chunk_bytes=512)
        assert diff_sorted(b, c) == diff_cells(cells, moved)
        out = io.BytesIO()
        write_sorted(b, out)
        assert out.getvalue() == base.read_bytes()


BAD = [
    (b"s\ta\tk\t1\nno tabs here\n", "bad.cells:2: malformed evidence row"),
    (b"s\ta\tk\t1\n" * 40 + b"s\t\tk\t1\n", "bad.cells:41: malformed evidence row"),
    (b"s\ta\tk\t1\n" * 40 + b"s\ta\tk\t\xff\n", "bad.cells:41: evidence is not valid UTF-8"),
    # a bad byte later in the file is named before a malformed row earlier, as read_cells does
    (b"s\ta\tk\n" + b"s\ta\tk\t1\n" * 40 + b"s\ta\tk\t\xc3\n", "bad.cells:42: evidence is not valid UTF-8"),
]


@pytest.mark.parametrize("external", [False, True], ids=["python", "gnu-sort"])
@pytest.mark.parametrize(("data", "message"), BAD)
@pytest.mark.parametrize("chunk", [8, 64, 1 << 20])
def test_bad_input_names_file_and_line_as_the_reference(tmp_path: Path, data: bytes, message: str,
                                                        chunk: int, external: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    sorted_by = _sorter(monkeypatch, external)
    path = _write(tmp_path, "bad.cells", data)
    with pytest.raises(InputError) as reference:
        read_cells(path)
    with pytest.raises(InputError) as streamed, ExitStack() as stack:
        sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=chunk)
    assert message in str(reference.value)
    assert str(streamed.value) == str(reference.value)
    assert True not in sorted_by  # GNU sort gave every bad file back to the Python sort


@pytest.mark.parametrize("external", [False, True], ids=["python", "gnu-sort"])
def test_a_value_ending_in_cr_is_refused_as_write_cells_does(tmp_path: Path, external: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    sorted_by = _sorter(monkeypatch, external)
    path = _write(tmp_path, "cr.cells", b"s\ta\tj\tw\n" * 5 + b"s\ta\tk\tv\r\r\n" + b"s\ta\tl\tw\n" * 5)
    with pytest.raises(InputError) as reference:
        render_capture(read_cells(path))
    with pytest.raises(InputError) as streamed, ExitStack() as stack:
        [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=16)
        write_sorted(cells, io.BytesIO())
    assert str(streamed.value) == str(reference.value)
    assert sorted_by == ([True] if external else [])


def test_gnu_sort_keeps_the_last_write_of_a_cell_across_the_whole_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is fed to sort newest first, so ``-s -u`` keeps each cell's last write, however
    far apart its writes are (other chunks, the first line and the last)."""
    sorted_by = _sorter(monkeypatch, True)
    rows = [b"s\ta\tk%d\tfirst\n" % (i % 50) for i in range(200)] + [b"s\ta\tk7\tlast\n", b"s\ta\tk0\tlast"]
    path = _write(tmp_path, "dups.cells", b"\xef\xbb\xbf# relgate evidence\r\n" + b"".join(rows))
    with ExitStack() as stack:
        [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=64)
        out = io.BytesIO()
        assert write_sorted(cells, out) == 50
    assert sorted_by == [True]
    assert out.getvalue() == render_capture(read_cells(path)).encode()
    assert b"k7\tlast\n" in out.getvalue() and b"k0\tlast\n" in out.getvalue()


# --- plain captures: GNU sort reads the file itself (sort -C proves an order, sort -s -u sorts) ----


def _plain_sorter(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """GNU sort for every file bigger than a chunk; the answers of the plain path by file name
    (True: it sorted or proved the file; False: it gave the file to the reference path)."""
    _sorter(monkeypatch, True)
    answers: dict[str, bool] = {}
    real = stream_read.SortedCells._sort_plain

    def recording(self, path):
        answers[path.name] = yield from real(self, path)
        return answers[path.name]

    monkeypatch.setattr(stream_read.SortedCells, "_sort_plain", recording)
    return answers


def _plain_capture(rng: random.Random, rows: int, *, order: str, repeat: bool, header: bool) -> bytes:
    cells = sorted({(rng.choice(["scan", "scan2", "golden", "\u00e9", "s p", "a", "ab"]), rng.choice(["cpu", "cuda", "c"]),
                     f"k{rng.randrange(10 * rows)}") for _ in range(rows)})
    values = ["1", "2.5", "", "x y", "\u00fc"]
    out = [f"{s}\t{a}\t{k}\t{rng.choice([*values, f'{rng.random():.3f}'])}" for s, a, k in cells]
    if order == "shuffled":
        rng.shuffle(out)
    elif order == "late" and len(out) > 8:  # in order for a while, then not
        out[-3:] = reversed(out[-3:])
    if repeat and out:  # a cell written twice, its last write elsewhere
        key = out[rng.randrange(len(out))].rsplit("\t", 1)[0]
        out.insert(rng.randrange(len(out) + 1), f"{key}\tagain")
    text = "\n".join(out) + rng.choice(["\n", ""])
    return (("# relgate evidence\n" if header else "") + text).encode()


@pytest.mark.parametrize("order", ["sorted", "late", "shuffled"])
@pytest.mark.parametrize("repeat", [False, True], ids=["unique", "written-twice"])
@pytest.mark.parametrize("header", [False, True], ids=["rows", "header"])
@pytest.mark.parametrize("seed", range(4))
def test_plain_captures_sorted_by_gnu_sort_match_the_reference(tmp_path: Path, order: str, repeat: bool,
                                                               header: bool, seed: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of plain rows is read here only to be checked, while GNU sort reads it itself: an
    order proven by ``sort -C -u`` keeps the file as it is, anything else is sorted by
    ``sort -s``, and a cell written twice (``sort -C -u`` of the output fails) keeps its last
    write through ``tac | sort -m -u -r | tac``; rows behind a header out of order give the
    file to the reference path. Every answer (the rows written, the counts, the diff both ways, with
    the diff's own reading of the base by lines) is the reference's, through a real file and a
    BytesIO alike."""
    answers = _plain_sorter(monkeypatch)
    rng = random.Random(seed * 31 + len(order))
    base = _write(tmp_path, "base.cells", _plain_capture(rng, 400, order="sorted", repeat=False, header=True))
    cand = _write(tmp_path, "cand.cells", _plain_capture(rng, 400, order=order, repeat=repeat, header=header))
    base_cells, cand_cells = read_cells(base), read_cells(cand)
    with ExitStack() as stack:
        b, c = sorted_cells(stack, [[base], [cand]], tmp=tmp_path / "tmp", chunk_bytes=512)
        out = io.BytesIO()
        assert write_sorted(c, out) == len(cand_cells)
        assert out.getvalue() == render_capture(cand_cells).encode()
        with open(tmp_path / "written.cells", "wb") as fh:
            assert write_sorted(c, fh) == len(cand_cells)
        assert (tmp_path / "written.cells").read_bytes() == out.getvalue()
        assert count_cells(b) == len(base_cells)
        assert diff_sorted(b, c) == diff_cells(base_cells, cand_cells)
        assert diff_sorted(c, b) == diff_cells(cand_cells, base_cells)
    # The base (in order, behind its header) is proven in place; the candidate as its shape allows:
    # rows behind a header only when they are in order (and unique).
    expected = not header or (not repeat and order == "sorted")
    assert answers == {"base.cells": True, "cand.cells": expected}


@pytest.mark.parametrize("window", [1, 7, 64, 1024, 1 << 18])
@pytest.mark.parametrize("seed", range(6))
def test_two_plain_runs_diff_as_bytes_where_equal_and_as_the_reference(tmp_path: Path, window: int, seed: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A release's capture against its baseline: mostly the same bytes. The two runs are
    compared a window of bytes at a time and row by row only where a window differs (a value
    moved, longer or shorter, a cell gone or new, a row longer than the window), then as bytes
    again: the answer is the reference's, both ways, for windows smaller than a row too."""
    _plain_sorter(monkeypatch)
    monkeypatch.setattr(stream_diff, "_RAW_WINDOW", window)
    rng = random.Random(seed)
    cells = {(f"s{i % 3}", rng.choice(["cpu", "cuda"]), f"k{i:05d}"): f"{rng.random():.4f}" for i in range(600)}
    cand = dict(cells)
    for cell in rng.sample(sorted(cand), rng.randrange(0, 12)):
        cand[cell] = rng.choice(["m", "moved to a longer value", "", cand[cell] + "0"])
    for cell in rng.sample(sorted(cand), rng.randrange(0, 6)):
        del cand[cell]
    for n in range(rng.randrange(0, 6)):
        cand[(rng.choice(["s0", "s1", "s9", "a"]), "cpu", f"new{n}")] = "x" * rng.choice([1, 300])
    rows = [f"{s}\t{a}\t{k}\t{v}" for (s, a, k), v in sorted(cand.items())]
    if seed % 2:
        rng.shuffle(rows)  # sorted by GNU sort first
    base = _write(tmp_path, "base.cells", render_capture(cells).encode())
    cand_path = _write(tmp_path, "cand.cells", ("\n".join(rows) + rng.choice(["\n", ""])).encode())
    with ExitStack() as stack:
        b, c = sorted_cells(stack, [[base], [cand_path]], tmp=tmp_path / "tmp", chunk_bytes=512)
        assert b.single_run() is not None and c.single_run() is not None  # the runs' path
        assert diff_sorted(b, c) == diff_cells(cells, cand)
        assert diff_sorted(c, b) == diff_cells(cand, cells)
        assert diff_sorted(b, b) == diff_cells(cells, cells)


@pytest.mark.parametrize("late", [b"# a comment\n", b"\n", b"s\ta\tk\tv\r\n", b"s\ta\tk\n", b"s\t\tk\tv\n",
                                  b"s\ta\tk\t\xff\n", b"s\ta\tk\tv\x01\n", b"s\ta\tk\tv\tw\n"],
                         ids=["comment", "blank", "crlf", "two-tabs", "empty-arm", "not-utf8", "low-byte", "tab-in-value"])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_a_row_that_is_not_plain_late_in_the_file_gives_it_to_the_reference(tmp_path: Path, late: bytes, order: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The check runs while sort reads: a row that is not plain after many that are stops the
    plain path (its sort is killed), and the reference path's answer or error stands."""
    answers = _plain_sorter(monkeypatch)
    rows = [b"s\ta\tk%05d\t%d\n" % (i, i) for i in range(400)]
    if order == "shuffled":
        random.Random(3).shuffle(rows)
    rows.insert(350, late)
    path = _write(tmp_path, "late.cells", b"".join(rows))

    def answer(run):
        try:
            return run()
        except InputError as exc:
            return f"InputError: {exc}"

    def streamed():
        with ExitStack() as stack:
            [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=256)
            out = io.BytesIO()
            write_sorted(cells, out)
            return out.getvalue()

    assert answer(streamed) == answer(lambda: render_capture(read_cells(path)).encode())
    assert answers == {"late.cells": False}
    assert not (tmp_path / "tmp").exists() or not any((tmp_path / "tmp").iterdir())  # sort's output is gone


@pytest.mark.parametrize("end", [b"\n", b""], ids=["lf", "no-final-lf"])
def test_a_plain_capture_keeps_each_cells_last_write(tmp_path: Path, end: bytes,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells written four times over the whole file, two of them once more at its very end:
    ``sort -s`` keeps a key's lines in write order, and the last one of each is kept."""
    answers = _plain_sorter(monkeypatch)
    rows = [b"s\ta\tk%d\tround %d\n" % (i % 50, i // 50) for i in range(200)] + [b"s\ta\tk7\tlast\n", b"s\ta\tk0\tlast\n"]
    path = _write(tmp_path, "dups.cells", b"".join(rows)[:-1] + end)
    with ExitStack() as stack:
        [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=64)
        out = io.BytesIO()
        assert write_sorted(cells, out) == 50
    assert answers == {"dups.cells": True}
    assert out.getvalue() == render_capture(read_cells(path)).encode()
    assert b"k7\tlast\n" in out.getvalue() and b"k0\tlast\n" in out.getvalue() and b"k9\tround 3\n" in out.getvalue()
    assert not any((tmp_path / "tmp").iterdir())


def test_without_tac_a_cell_written_twice_goes_to_the_reference(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    answers = _plain_sorter(monkeypatch)
    real = stream_sort.shutil.which
    monkeypatch.setattr(stream_sort.shutil, "which", lambda name: None if name == "tac" else real(name))
    rows = [b"s\ta\tk%d\tround %d\n" % (i % 50, i // 50) for i in range(200)]
    path = _write(tmp_path, "dups.cells", b"".join(rows))
    with ExitStack() as stack:
        [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=64)
        out = io.BytesIO()
        write_sorted(cells, out)
    assert answers == {"dups.cells": False}
    assert out.getvalue() == render_capture(read_cells(path)).encode()
    assert not any((tmp_path / "tmp").iterdir())


def test_a_failing_group_ends_the_sorts_begun_for_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every group's GNU sort starts before any file is checked to its end: when the base turns
    out bad, the candidate's sort (still running) is killed and reaped, and its output removed."""
    _plain_sorter(monkeypatch)
    started = []
    real = stream_read.start_sort

    def recording(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(stream_read, "start_sort", recording)
    base = _write(tmp_path, "base.cells", b"".join(b"s\ta\tk%05d\t%d\n" % (i, i) for i in range(400)) + b"s\ta\n")
    cand = _write(tmp_path, "cand.cells", b"".join(b"s\ta\tk%05d\t%d\n" % (i, i) for i in range(20000, 0, -1)))
    with pytest.raises(InputError, match="base.cells:401: malformed evidence row"), ExitStack() as stack:
        sorted_cells(stack, [[base], [cand]], tmp=tmp_path / "tmp", chunk_bytes=256)
    assert len(started) == 1 and started[0].returncode is not None  # begun, then ended and reaped
    assert not any((tmp_path / "tmp").iterdir())


def test_a_capture_changing_while_sort_reads_it_goes_to_the_reference(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Relgate and sort each read the file: when it is not the same file (inode, size, mtime)
    after sort as before, what sort read is not what was checked, and the plain path gives up."""
    answers = _plain_sorter(monkeypatch)
    path = _write(tmp_path, "moving.cells", b"".join(b"s\ta\tk%05d\t%d\n" % (i, i) for i in range(400, 0, -1)))
    real, calls = stream_read._state, []

    def state(p: Path) -> tuple[int, int, int]:  # after sort, a later mtime: the file was written meanwhile
        calls.append(p)
        ino, size, mtime = real(p)
        return ino, size, mtime + (len(calls) > 1)

    monkeypatch.setattr(stream_read, "_state", state)
    with ExitStack() as stack:
        [cells] = sorted_cells(stack, [[path]], tmp=tmp_path / "tmp", chunk_bytes=256)
        out = io.BytesIO()
        write_sorted(cells, out)
    assert answers == {"moving.cells": False} and calls == [path, path]
    assert out.getvalue() == render_capture(read_cells(path)).encode()


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such evidence file"), ExitStack() as stack:
        sorted_cells(stack, [[tmp_path / "nope.cells"]], tmp=None)


# --- the diff command's fast path (bytes rows, one side keyed) against the reference -----------------


def _pair_of_captures(rng: random.Random) -> tuple[bytes, bytes]:
    n = rng.randrange(0, 400)
    rows = [(f"s{i % 5}", rng.choice(["cpu", "cuda", "é"]), f"k{i}", f"{rng.random():.3f}") for i in range(n)]
    if rng.random() < 0.2 and rows:  # a cell written twice
        rows.insert(rng.randrange(len(rows) + 1), (*rows[rng.randrange(len(rows))][:3], "again"))
    cand = [list(r) for r in rows]
    for _ in range(rng.randrange(0, 5)):
        if cand:
            del cand[rng.randrange(len(cand))]
    for p in range(0, len(cand), rng.choice([3, 10, 100])):
        cand[p][3] = f"{rng.random():.3f}m"
    for n_new in range(rng.randrange(0, 5)):
        cand.insert(rng.randrange(len(cand) + 1), ["new", "cpu", f"added{n_new}", "1"])
    if rng.random() < 0.15 and cand:  # the candidate writes a row or a cell twice
        dup = list(cand[rng.randrange(len(cand))])
        if rng.random() < 0.5:
            dup[3] = "other"
        cand.insert(rng.randrange(len(cand) + 1), dup)
    if rng.random() < 0.3:
        rng.shuffle(cand)
    elif rng.random() < 0.3 and len(cand) > 4:  # a stretch in another order
        a = rng.randrange(len(cand) - 3)
        cand[a:a + 3] = reversed(cand[a:a + 3])

    def text(rs: list) -> bytes:
        header = "# relgate evidence\n" if rng.random() < 0.5 else ""
        bom = "\ufeff" if rng.random() < 0.1 else ""
        end = "\r\n" if rng.random() < 0.2 else "\n"  # as a Windows runner writes it
        body = "".join("\t".join(r) + end for r in rs)
        return (bom + header + (body.removesuffix(end) if rng.random() < 0.1 else body)).encode()

    return text(rows), text(cand)


@pytest.mark.parametrize("seed", range(200))
def test_diff_command_fast_path_matches_the_reference(tmp_path: Path, seed: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from relgate.evidence import cells_diff, cells_parse
    from relgate.evidence.cells_diff import _diff_files

    monkeypatch.setattr(cells_diff, "_WINDOW", (1, 7, 64, 4096)[seed % 4])  # windows smaller than a row too
    monkeypatch.setattr(cells_diff, "_NEAR", (1, 3, 32, 32)[seed % 4])
    monkeypatch.setattr(cells_parse, "_BLOCK", (1, 5, 64, 1 << 20)[seed // 4 % 4])  # blocks smaller than a row too
    rng = random.Random(seed)
    base_bytes, cand_bytes = _pair_of_captures(rng)
    base = _write(tmp_path, "base.cells", base_bytes)
    cand = _write(tmp_path, "cand.cells", cand_bytes)
    assert _diff_files(base, cand) == diff_cells(read_cells(base), read_cells(cand))
    assert _diff_files(cand, base) == diff_cells(read_cells(cand), read_cells(base))


_HOSTILE = (
    b"s\ta\tk",  # two tabs
    b"s\t\tk\tv",  # an empty arm
    b"\ta\tk\tv",  # an empty suite
    b"s\ta\t\tv",  # an empty key
    b"# a comment among the rows",
    b"#s\ta\tk\tv",  # a comment shaped like a row
    b"",  # an empty line
    b"   ",  # a blank one
    b"s\ta\tk\tv\twith a tab",  # a tab in a value: well formed, not the usual shape
    b"s\ta\tk\t\xff",  # not UTF-8
    b"# not UTF-8 \xfe in a comment",
    "s\ta\tk\tcaf\u00e9".encode(),  # UTF-8 beyond ASCII
)


@pytest.mark.parametrize("seed", range(120))
def test_a_hostile_candidate_gets_the_reference_answer(tmp_path: Path, seed: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The diff checks only the candidate rows that differ from the base's: whatever a
    candidate holds among equal rows, the answer (or the error naming its line) is the
    reference parser's."""
    from relgate.evidence import cells_diff, cells_parse
    from relgate.evidence.cells_diff import _diff_files

    monkeypatch.setattr(cells_diff, "_WINDOW", (7, 64, 4096)[seed % 3])
    monkeypatch.setattr(cells_parse, "_BLOCK", (1, 5, 64, 1 << 20)[seed // 3 % 4])
    rng = random.Random(1000 + seed)
    base_bytes, cand_bytes = _pair_of_captures(rng)
    lines = cand_bytes.split(b"\n")
    for _ in range(rng.randrange(1, 3)):
        lines.insert(rng.randrange(len(lines)), rng.choice(_HOSTILE))
    if rng.random() < 0.3:
        lines = [line + b"\r" for line in lines]
    body = b"\n".join(lines)
    cand_bytes = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + (body.rstrip(b"\n") if rng.random() < 0.2 else body)
    base = _write(tmp_path, "base.cells", base_bytes)
    cand = _write(tmp_path, "cand.cells", cand_bytes)

    def answer(run):
        try:
            return run()
        except InputError as exc:
            return f"InputError: {exc}"

    assert answer(lambda: _diff_files(base, cand)) == answer(lambda: diff_cells(read_cells(base), read_cells(cand)))


@pytest.mark.parametrize("where", ["header", "equal rows", "moved", "rest"])
def test_a_bad_byte_anywhere_in_the_candidate_is_named(tmp_path: Path, where: str) -> None:
    from relgate.evidence.cells_diff import _diff_files

    rows = [b"s\ta\tk%d\t%d\n" % (i, i) for i in range(50)]
    cand = list(rows)
    header = b"# relgate evidence\n"
    if where == "header":
        header = b"# run on \xff\n"
    elif where == "equal rows":
        rows[20] = cand[20] = b"s\ta\tk20\t\xff\n"  # the base is bad too: the base's line is named
    elif where == "moved":
        cand[20] = b"s\ta\tk20\t\xff\n"
    else:
        cand = cand[:10] + list(reversed(cand[10:]))
        cand[30] = b"s\ta\tk19\t\xff\n"
    base = _write(tmp_path, "base.cells", b"# relgate evidence\n" + b"".join(rows))
    cand_path = _write(tmp_path, "cand.cells", header + b"".join(cand))
    with pytest.raises(InputError, match="not valid UTF-8") as fast:
        _diff_files(base, cand_path)
    with pytest.raises(InputError) as reference:
        diff_cells(read_cells(base), read_cells(cand_path))
    assert str(fast.value) == str(reference.value)


@pytest.mark.parametrize("at", [0, 10, 49])
def test_a_comment_shaped_like_a_row_is_a_comment_in_the_candidate(tmp_path: Path, at: int) -> None:
    from relgate.evidence.cells_diff import _diff_files

    rows = [b"s\ta\tk%d\t%d\n" % (i, i) for i in range(50)]
    cand = list(rows)
    cand.insert(at, b"#s\ta\tk\tv\n")  # the first row put aside, or the one the rest starts with
    if at == 49:
        cand[20:] = reversed(cand[20:])
    base = _write(tmp_path, "base.cells", b"# relgate evidence\n" + b"".join(rows))
    cand_path = _write(tmp_path, "cand.cells", b"# relgate evidence\n" + b"".join(cand))
    assert _diff_files(base, cand_path) == diff_cells(read_cells(base), read_cells(cand_path))
    assert _diff_files(base, cand_path).clean


def test_unwritable_spill_folder_is_one_line_error(tmp_path: Path) -> None:
    from relgate.evidence.baselines import _spilling

    tmp = tmp_path / "home" / "tmp"
    tmp.parent.mkdir()
    tmp.write_text("a file where the temporary folder goes (as good as a read-only home, even for root)")
    big = _write(tmp_path, "big.cells", b"".join(b"s\ta\tk%d\t1\n" % i for i in range(3000)))
    with pytest.raises(InputError, match="cannot write the evidence's temporary files"), \
            _spilling(tmp), ExitStack() as stack:
        sorted_cells(stack, [[big]], tmp=tmp, chunk_bytes=1024)


@pytest.mark.parametrize("case", ["candidate missing", "base bad, candidate missing", "base missing",
                                  "base a folder", "candidate a folder"])
def test_the_diff_names_the_same_file_first_as_the_reference(tmp_path: Path, case: str) -> None:
    """The diff reads both files a block at a time and opens the candidate before it has read
    the base: the error is still the reference path's, the base's first."""
    from relgate.evidence.cells_diff import _diff_files

    good = _write(tmp_path, "good.cells", b"# relgate evidence\ns\ta\tk\t1\n")
    bad = _write(tmp_path, "bad.cells", b"s\ta\tk\n")
    missing, folder = tmp_path / "nope.cells", tmp_path
    base, cand = {"candidate missing": (good, missing), "base bad, candidate missing": (bad, missing),
                  "base missing": (missing, good), "base a folder": (folder, good),
                  "candidate a folder": (good, folder)}[case]
    with pytest.raises(InputError) as fast:
        _diff_files(base, cand)
    with pytest.raises(InputError) as reference:
        diff_cells(read_cells(base), read_cells(cand))
    assert str(fast.value) == str(reference.value)
    assert str(fast.value).startswith(str(bad if case.startswith("base bad") else base if "base" in case else cand))


def test_a_base_rewritten_between_the_two_reads_gets_the_reference_answer(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The first read of the base checks its rows and the walk trusts them: a base rewritten in
    between (another size or time) is diffed by the reference path, as it now reads."""
    from relgate.evidence import cells_diff

    rows = [b"s\ta\tk%d\t%d\n" % (i, i) for i in range(50)]
    base = _write(tmp_path, "base.cells", b"# relgate evidence\n" + b"".join(rows))
    cand = _write(tmp_path, "cand.cells", b"# relgate evidence\n" + b"".join(rows[:20] + [b"s\ta\tk20\tmoved\n"] + rows[21:]))
    first_pass = cells_diff._base_keys

    def then_rewritten(blocks, kept=None):
        keyed = first_pass(blocks, kept)
        base.write_bytes(b"# relgate evidence\n" + b"".join(rows[:20]) + b"s\ta\tk20\tdup\ns\ta\tk20\tdup\n" + b"".join(rows[21:]))
        return keyed

    monkeypatch.setattr(cells_diff, "_base_keys", then_rewritten)
    got = cells_diff._diff_files(base, cand)
    assert got == diff_cells(read_cells(base), read_cells(cand))
    assert [m[1:] for m in got.moved] == [("dup", "moved")]  # the last write of the rewritten base


@pytest.mark.parametrize("added", [0, 1, 10, 63])
def test_cells_added_at_the_start_still_walk_a_block_at_a_time(tmp_path: Path, added: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A new test run first puts its cells before the base's first one: the captures still
    start in step, so the first pass keeps no base rows (only where the orders disagree)."""
    from relgate.evidence import cells_diff

    rows = [b"s\ta\tk%d\t%d\n" % (i, i) for i in range(200)]
    base = _write(tmp_path, "base.cells", b"# relgate evidence\n" + b"".join(rows))
    front = [b"new\tcpu\tfront%d\t1\n" % i for i in range(added)]
    cand = _write(tmp_path, "cand.cells", b"# relgate evidence\n" + b"".join(front + rows[:50] + [b"s\ta\tk50\tx\n"] + rows[51:]))
    kept_given: list[object] = []
    first_pass = cells_diff._base_keys

    def recording(blocks, kept=None):
        kept_given.append(kept)
        return first_pass(blocks, kept)

    monkeypatch.setattr(cells_diff, "_base_keys", recording)
    got = cells_diff._diff_files(base, cand)
    assert got == diff_cells(read_cells(base), read_cells(cand))
    assert len(got.only_candidate) == added and len(got.moved) == 1
    assert kept_given == [None]
