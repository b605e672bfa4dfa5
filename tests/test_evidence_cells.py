"""Evidence cells: parsing, writing and the acceptance diff (relgate.evidence)."""

from __future__ import annotations

import dataclasses
import gc
import io
import json
import os
import random
import re
import stat
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.evidence import cells_parse
from relgate.evidence.cells import (
    HEADER,
    EvidenceDiff,
    diff_cells,
    diff_command,
    diff_to_json,
    merge_captures,
    parse_cells,
    read_cells,
    render_diff,
    write_cells,
)

# --------------------------------------------------------------------------- helpers


def _write_bytes(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _parse_via_file(tmp_path: Path, text: str) -> dict:
    return read_cells(_write_bytes(tmp_path, "cells.tsv", text.encode("utf-8")))


def _parse_via_text(tmp_path: Path, text: str) -> dict:
    return parse_cells(text, source="cells.tsv")


READERS = [
    pytest.param(_parse_via_file, id="read_cells"),
    pytest.param(_parse_via_text, id="parse_cells"),
]


def _naive_parse(text: str) -> dict:
    """What the rules in the module docstring say, written the obvious way."""
    cells = {}
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").removesuffix("\r")
    for line in text.split("\n"):
        if line.startswith("#") or ("\t" not in line and not line.strip()):
            continue
        suite, arm, key, value = line.split("\t")
        cells[(suite, arm, key)] = value
    return cells


def _naive_diff(base: dict, cand: dict) -> EvidenceDiff:
    return EvidenceDiff(
        identical=sum(1 for c in base if c in cand and base[c] == cand[c]),
        moved=tuple(
            sorted((c, base[c], cand[c]) for c in base if c in cand and base[c] != cand[c])
        ),
        only_base=tuple(sorted((c, v) for c, v in base.items() if c not in cand)),
        only_candidate=tuple(sorted((c, v) for c, v in cand.items() if c not in base)),
    )


def _rows(*cells: tuple[str, str, str, str]) -> str:
    return "".join("\t".join(cell) + "\n" for cell in cells)


# --------------------------------------------------------------------------- parsing

PARSE_CASES = [
    ("empty file", "", {}),
    ("header only", "# relgate evidence\n", {}),
    ("comments and blank lines only", "# a\n\n   \n#\tb\tc\td\n", {}),
    (
        "plain rows",
        _rows(("s", "a", "k", "1"), ("s", "a", "k2", "2")),
        {("s", "a", "k"): "1", ("s", "a", "k2"): "2"},
    ),
    (
        "header then rows",
        "# relgate evidence\n# more\n" + _rows(("s", "a", "k", "1")),
        {("s", "a", "k"): "1"},
    ),
    (
        "comments and blank lines among rows",
        "# head\n\ns\ta\tk\t1\n# mid\n\n   \ns\ta\tk2\t2\n#\tx\ty\tz\n",
        {("s", "a", "k"): "1", ("s", "a", "k2"): "2"},
    ),
    (
        "comment with tabs and empty fields",
        "s\ta\tk\t1\n#\t\t\t\n",
        {("s", "a", "k"): "1"},
    ),
    (
        "header with tabs and blank lines, then rows",
        "#\tx\t\t\n\n# h\n\ns\ta\tk\t1\n",
        {("s", "a", "k"): "1"},
    ),
    ("BOM", "\ufeffs\ta\tk\t1\n", {("s", "a", "k"): "1"}),
    ("BOM before a header", "\ufeff# h\ns\ta\tk\t1\n", {("s", "a", "k"): "1"}),
    (
        "CRLF",
        "# h\r\ns\ta\tk\t1\r\ns\ta\tk2\t2\r\n",
        {("s", "a", "k"): "1", ("s", "a", "k2"): "2"},
    ),
    ("CRLF without final newline", "s\ta\tk\t1\r", {("s", "a", "k"): "1"}),
    (
        "no final newline",
        "s\ta\tk\t1\ns\ta\tk2\t2",
        {("s", "a", "k"): "1", ("s", "a", "k2"): "2"},
    ),
    (
        "last write wins",
        _rows(
            ("s", "a", "k", "1"),
            ("s", "a", "j", "x"),
            ("s", "a", "k", "2"),
            ("s", "a", "k", "3"),
        ),
        {("s", "a", "k"): "3", ("s", "a", "j"): "x"},
    ),
    ("empty value", "s\ta\tk\t\n", {("s", "a", "k"): ""}),
    (
        "fields kept exactly",
        " s \t a\tk \t v w \n",
        {(" s ", " a", "k "): " v w "},
    ),
    ("hash inside a row", "s#1\ta\t#k\tv#2\n", {("s#1", "a", "#k"): "v#2"}),
    ("non-ASCII", "sü\tα\t鍵\t✓\n", {("sü", "α", "鍵"): "✓"}),
    ("lone CR kept inside a value", "s\ta\tk\tx\ry\n", {("s", "a", "k"): "x\ry"}),
]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(text, expected, id=name) for name, text, expected in PARSE_CASES],
)
def test_parse(tmp_path: Path, read, text: str, expected: dict) -> None:
    assert read(tmp_path, text) == expected
    assert _naive_parse(text) == expected


def test_parse_keeps_first_write_order_and_last_value(tmp_path: Path) -> None:
    text = _rows(("s", "a", "b", "1"), ("s", "a", "a", "1"), ("s", "a", "b", "2"))
    assert list(_parse_via_file(tmp_path, text).items()) == [
        (("s", "a", "b"), "2"),
        (("s", "a", "a"), "1"),
    ]


MALFORMED = "malformed evidence row: expected suite<TAB>arm<TAB>key<TAB>value, got"

MALFORMED_CASES = [
    ("3 fields", "s\ta\tk\t1\ns\ta\tk\n", 2, "3 fields"),
    ("1 field", "# h\nrubbish\n", 2, "1 fields"),
    ("empty key", "s\ta\t\tv\n", 1, "an empty key"),
    ("empty key and value", "s\ta\tk\t1\ns\ta\t\t\n", 2, "an empty key"),
    ("empty arm", "s\t\tk\tv\n", 1, "an empty arm"),
    ("empty suite", "\ta\tk\tv\n", 1, "an empty suite"),
    ("tabs only", "s\ta\tk\t1\n\t\t\t\n", 2, "an empty suite"),
    ("indented comment is no comment", "s\ta\tk\t1\n  # note\n", 2, "1 fields"),
    (
        "line numbers count comments and blanks",
        "# h\n\n# c\ns\ta\tk\t1\n\ns\ta\n",
        6,
        "2 fields",
    ),
    ("line numbers with BOM and CRLF", "\ufeff# h\r\ns\ta\tk\t1\r\nbad\r\n", 3, "1 fields"),
    ("first bad line is named", "s\ta\tk\t1\nx\ny\tz\n", 2, "1 fields"),
]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(
    ("text", "lineno", "got"),
    [pytest.param(text, n, got, id=name) for name, text, n, got in MALFORMED_CASES],
)
def test_malformed_row_names_file_and_line(
    tmp_path: Path, read, text: str, lineno: int, got: str
) -> None:
    with pytest.raises(InputError) as info:
        read(tmp_path, text)
    source = "cells.tsv" if read is _parse_via_text else str(tmp_path / "cells.tsv")
    assert str(info.value) == f"{source}:{lineno}: {MALFORMED} {got}"
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("data", "lineno"),
    [
        pytest.param(b"s\ta\tk\t1\ns\ta\tk\t\xff\n", 2, id="in a row"),
        pytest.param(b"# caf\xe9\ns\ta\tk\t1\n", 1, id="in the header"),
        pytest.param(b"# h\n\ns\ta\tk\t1\n# \xc3\n", 4, id="in a comment among rows"),
        pytest.param(
            b"\xef\xbb\xbf# h\r\ns\ta\tk\t\xed\xa0\x80\r\n", 2, id="surrogate, BOM, CRLF"
        ),
        pytest.param(b"s\ta\tk\t1\n" * 3 + b"s\ta\t\xc0\tv\n", 4, id="in a key"),
    ],
)
def test_invalid_utf8_names_file_and_line(tmp_path: Path, data: bytes, lineno: int) -> None:
    path = _write_bytes(tmp_path, "bad.tsv", data)
    with pytest.raises(InputError) as info:
        read_cells(path)
    assert str(info.value).startswith(f"{path}:{lineno}: evidence is not valid UTF-8 (byte 0x")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.tsv"
    with pytest.raises(InputError) as info:
        read_cells(path)
    assert str(info.value) == f"{path}: no such evidence file"


def test_directory_is_not_an_evidence_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_cells(tmp_path)


def test_unreadable_path(tmp_path: Path) -> None:
    path = _write_bytes(tmp_path, "file.tsv", b"") / "cells.tsv"  # below a plain file
    with pytest.raises(InputError) as info:
        read_cells(path)
    assert str(info.value) == f"{path}: cannot read evidence file: Not a directory"


def test_merge_captures_later_wins() -> None:
    first = {("s", "a", "k"): "1", ("s", "a", "j"): "1"}
    second = {("s", "a", "k"): "2", ("t", "a", "k"): "2"}
    assert merge_captures([first, second]) == {
        ("s", "a", "k"): "2",
        ("s", "a", "j"): "1",
        ("t", "a", "k"): "2",
    }
    assert merge_captures([]) == {}
    assert merge_captures(iter([second, first]))[("s", "a", "k")] == "1"


# --------------------------------------------------------------------------- writing


def test_write_cells_round_trip_sorted_with_header(tmp_path: Path) -> None:
    cells = {
        ("s2", "a", "k"): "x",
        ("s1", "b", "k"): "",
        ("s1", "a", "k"): "v w",
        ("s1", "a", "k\x01"): "ctl",
        ("sü", "α", "鍵"): "✓",
        (" lead", "a", "#k"): "#v",
    }
    path = tmp_path / "cells.tsv"
    write_cells(path, cells)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == HEADER
    assert lines[-1] == ""
    body = [tuple(line.split("\t")[:3]) for line in lines[1:-1]]
    assert body == sorted(cells)
    assert read_cells(path) == cells
    assert _naive_parse(path.read_text(encoding="utf-8")) == cells


def test_write_cells_empty(tmp_path: Path) -> None:
    path = tmp_path / "cells.tsv"
    write_cells(path, {})
    assert path.read_text(encoding="utf-8") == HEADER + "\n"
    assert read_cells(path) == {}


def test_write_cells_replaces_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "cells.tsv"
    path.write_text("old\n", encoding="utf-8")
    os.chmod(path, 0o640)
    inode_before = path.stat().st_ino
    write_cells(path, {("s", "a", "k"): "1"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.tsv"]
    assert read_cells(path) == {("s", "a", "k"): "1"}
    assert path.stat().st_ino != inode_before  # a new file renamed over the old one
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_write_cells_failure_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "cells.tsv"
    target.mkdir()
    (target / "keep").write_text("x", encoding="utf-8")  # os.replace onto it fails
    with pytest.raises(InputError, match="cannot write evidence file"):
        write_cells(target, {("s", "a", "k"): "1"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.tsv"]
    assert (target / "keep").read_text(encoding="utf-8") == "x"


def test_write_cells_refuses_unencodable_text(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be encoded as UTF-8"):
        write_cells(tmp_path / "cells.tsv", {("s", "a", "k"): "\ud800"})
    assert list(tmp_path.iterdir()) == []


def test_write_cells_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write evidence file"):
        write_cells(tmp_path / "no" / "cells.tsv", {("s", "a", "k"): "1"})


@pytest.mark.parametrize(
    ("cell", "value", "problem"),
    [
        (("s", "a", ""), "v", "empty key"),
        (("", "a", "k"), "v", "empty suite"),
        (("s", "a\tb", "k"), "v", "holds a tab or a newline"),
        (("s", "a", "k"), "v\nw", "holds a newline"),
        (("#s", "a", "k"), "v", "would read as a comment"),
        (("s", "a", "k"), "v\r", "ends with a carriage return"),
    ],
)
def test_write_cells_refuses_what_would_not_read_back(
    tmp_path: Path, cell: tuple, value: str, problem: str
) -> None:
    path = tmp_path / "cells.tsv"
    path.write_text("keep\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(problem)):
        write_cells(path, {("a", "a", "a"): "fine", cell: value})
    assert path.read_text(encoding="utf-8") == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.tsv"]


# --------------------------------------------------------------------------- diffing

def _d(identical: int = 0, moved=(), only_base=(), only_candidate=()) -> EvidenceDiff:
    return EvidenceDiff(
        identical=identical, moved=moved, only_base=only_base, only_candidate=only_candidate
    )


A = ("s", "a", "a")
B = ("s", "a", "b")
C = ("s", "a", "c")
D = ("t", "x", "d")

DIFF_CASES = [
    ("both empty", {}, {}, _d()),
    (
        "identical",
        {A: "1", B: "2"},
        {A: "1", B: "2"},
        _d(identical=2),
    ),
    (
        "identical in another order",
        {A: "1", B: "2", C: "3"},
        {C: "3", A: "1", B: "2"},
        _d(identical=3),
    ),
    (
        "moved",
        {A: "1", B: "2"},
        {A: "1", B: "2.5"},
        _d(identical=1, moved=((B, "2", "2.5"),)),
    ),
    (
        "moved to and from empty",
        {A: "", B: "2"},
        {A: "1", B: ""},
        _d(moved=((A, "", "1"), (B, "2", ""))),
    ),
    (
        "only in base",
        {A: "1", B: "2", C: "3"},
        {A: "1", C: "3"},
        _d(identical=2, only_base=((B, "2"),)),
    ),
    (
        "only in candidate",
        {A: "1", C: "3"},
        {A: "1", B: "2", C: "3"},
        _d(identical=2, only_candidate=((B, "2"),)),
    ),
    (
        "empty base",
        {},
        {B: "2", A: "1"},
        _d(only_candidate=((A, "1"), (B, "2"))),
    ),
    (
        "empty candidate",
        {B: "2", A: "1"},
        {},
        _d(only_base=((A, "1"), (B, "2"))),
    ),
    (
        "everything, reordered",
        {D: "4", A: "1", B: "2"},
        {C: "3", B: "9", A: "1"},
        EvidenceDiff(
            identical=1,
            moved=((B, "2", "9"),),
            only_base=((D, "4"),),
            only_candidate=((C, "3"),),
        ),
    ),
]


def _capture_text(cells: dict) -> str:
    return "# capture\n" + "".join("\t".join((*c, v)) + "\n" for c, v in cells.items())


@pytest.mark.parametrize(
    ("base", "cand", "expected"),
    [pytest.param(b, c, e, id=name) for name, b, c, e in DIFF_CASES],
)
def test_diff_cells(base: dict, cand: dict, expected: EvidenceDiff) -> None:
    assert diff_cells(base, cand) == expected
    assert _naive_diff(base, cand) == expected
    differences = expected.moved + expected.only_base + expected.only_candidate
    assert expected.clean == (not differences)


@pytest.mark.parametrize(
    ("base", "cand", "expected"),
    [pytest.param(b, c, e, id=name) for name, b, c, e in DIFF_CASES],
)
def test_diff_command_text(
    tmp_path: Path, base: dict, cand: dict, expected: EvidenceDiff
) -> None:
    base_path = _write_bytes(tmp_path, "base.tsv", _capture_text(base).encode())
    cand_path = _write_bytes(tmp_path, "cand.tsv", _capture_text(cand).encode())
    out = io.StringIO()
    code = diff_command(base_path, cand_path, as_json=False, out=out)
    assert code == (0 if expected.clean else 1)
    assert out.getvalue() == "".join(line + "\n" for line in render_diff(expected))


def test_diff_is_cell_by_cell_after_last_write_wins(tmp_path: Path) -> None:
    base = _write_bytes(tmp_path, "b.tsv", b"s\ta\tk\t1\ns\ta\tk\t2\ns\ta\tj\tx\n")
    cand = _write_bytes(tmp_path, "c.tsv", b"s\ta\tj\tx\ns\ta\tk\t2\ns\ta\tk\t1\n")
    out = io.StringIO()
    assert diff_command(base, cand, as_json=False, out=out) == 1
    assert out.getvalue() == (
        "MOVED s / a / k | 2 -> 1\n1 identical, 1 moved, 0 only in base, 0 only in candidate\n"
    )


def test_render_order_and_format() -> None:
    def cells(**values: str) -> dict:
        return {(suite, "a", "k"): value for suite, value in values.items()}

    base = cells(z="1", b="2", m="3", a="4", same="s")
    cand = cells(z="10", b="20", n="5", c="6", same="s")
    assert list(render_diff(diff_cells(base, cand))) == [
        "MOVED b / a / k | 2 -> 20",
        "MOVED z / a / k | 1 -> 10",
        "ONLY-BASE a / a / k | 4",
        "ONLY-BASE m / a / k | 3",
        "ONLY-CANDIDATE c / a / k | 6",
        "ONLY-CANDIDATE n / a / k | 5",
        "1 identical, 2 moved, 2 only in base, 2 only in candidate",
    ]


def test_sorted_by_cell_not_by_joined_text(tmp_path: Path) -> None:
    # "a" < "a\x01" as a field, though "a\t…" > "a\x01\t…" as joined text.
    cells = {("a\x01", "x", "k"): "1", ("a", "x", "k"): "1"}
    base = _write_bytes(tmp_path, "b.tsv", b"")
    cand = _write_bytes(tmp_path, "c.tsv", _capture_text(cells).encode())
    out = io.StringIO()
    diff_command(base, cand, as_json=False, out=out)
    assert out.getvalue().splitlines()[:2] == [
        "ONLY-CANDIDATE a / x / k | 1",
        "ONLY-CANDIDATE a\\x01 / x / k | 1",  # a control character is shown as its escape (issue 36)
    ]


def test_json_shape(tmp_path: Path) -> None:
    base = {A: "1", B: "2", D: "4"}
    cand = {A: "1", B: "3", C: "5"}
    expected = {
        "format": "relgate-evidence-diff",
        "version": 1,
        "clean": False,
        "counts": {"identical": 1, "moved": 1, "only_base": 1, "only_candidate": 1},
        "moved": [{"suite": "s", "arm": "a", "key": "b", "old": "2", "new": "3"}],
        "only_base": [{"suite": "t", "arm": "x", "key": "d", "value": "4"}],
        "only_candidate": [{"suite": "s", "arm": "a", "key": "c", "value": "5"}],
    }
    assert diff_to_json(diff_cells(base, cand)) == expected
    base_path = _write_bytes(tmp_path, "b.tsv", _capture_text(base).encode())
    cand_path = _write_bytes(tmp_path, "c.tsv", _capture_text(cand).encode())
    out = io.StringIO()
    assert diff_command(base_path, cand_path, as_json=True, out=out) == 1
    assert json.loads(out.getvalue()) == expected
    out = io.StringIO()
    assert diff_command(base_path, base_path, as_json=True, out=out) == 0
    clean = json.loads(out.getvalue())
    assert clean["clean"] is True
    assert clean["counts"] == {"identical": 3, "moved": 0, "only_base": 0, "only_candidate": 0}
    assert (clean["moved"], clean["only_base"], clean["only_candidate"]) == ([], [], [])


def test_diff_command_exit_codes(tmp_path: Path) -> None:
    good = _write_bytes(tmp_path, "good.tsv", b"# h\ns\ta\tk\t1\n")
    same = _write_bytes(tmp_path, "same.tsv", b"\xef\xbb\xbfs\ta\tk\t1\r\n")
    other = _write_bytes(tmp_path, "other.tsv", b"s\ta\tk\t2\n")
    bad = _write_bytes(tmp_path, "bad.tsv", b"# h\ns\ta\tk\n")
    out = io.StringIO()
    assert diff_command(good, same, as_json=False, out=out) == 0
    assert out.getvalue() == "1 identical, 0 moved, 0 only in base, 0 only in candidate\n"
    assert diff_command(good, other, as_json=False, out=io.StringIO()) == 1
    for base, cand, message in [
        (good, bad, f"{bad}:2: {MALFORMED} 3 fields"),
        (bad, good, f"{bad}:2: {MALFORMED} 3 fields"),
        (good, tmp_path / "missing.tsv", f"{tmp_path / 'missing.tsv'}: no such evidence file"),
        # the base's error first, though the candidate is read beside it
        (bad, tmp_path / "missing.tsv", f"{bad}:2: {MALFORMED} 3 fields"),
        (tmp_path / "gone.tsv", tmp_path / "missing.tsv", f"{tmp_path / 'gone.tsv'}: no such evidence file"),
        (tmp_path / "gone.tsv", bad, f"{tmp_path / 'gone.tsv'}: no such evidence file"),
    ]:
        out = io.StringIO()
        with pytest.raises(InputError) as info:
            diff_command(base, cand, as_json=False, out=out)
        assert str(info.value) == message
        assert info.value.exit_code == 2
        assert out.getvalue() == ""  # nothing written before the error


def test_evidence_diff_is_a_frozen_keyword_only_record() -> None:
    d = EvidenceDiff(identical=0, moved=(), only_base=(), only_candidate=())
    assert d.clean
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.identical = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        EvidenceDiff(0, (), (), ())  # type: ignore[misc]


def test_gc_state_is_restored(tmp_path: Path) -> None:
    path = _write_bytes(tmp_path, "c.tsv", b"s\ta\tk\t1\n")
    assert gc.isenabled()
    read_cells(path)
    diff_command(path, path, as_json=False, out=io.StringIO())
    with pytest.raises(InputError):
        diff_command(path, tmp_path / "missing.tsv", as_json=False, out=io.StringIO())
    assert gc.isenabled()


# ------------------------------------------------- randomized: every path vs the naive one


def _random_pair(rng: random.Random, shape: str) -> tuple[list, list]:
    n = rng.randint(0, 600)
    keys = [(f"s{rng.randint(0, 3)}", f"a{rng.randint(0, 2)}", f"k{i}") for i in range(n)]
    base = [(k, str(rng.randint(0, 9))) for k in keys]
    cand = list(base)
    if shape in ("edits", "mixed"):
        for _ in range(rng.randint(0, max(1, n // 5))):
            if cand:
                p = rng.randrange(len(cand))
                cand[p] = (cand[p][0], cand[p][1] + "x")  # moved
        for _ in range(rng.randint(0, 40)):
            if cand:
                del cand[rng.randrange(len(cand))]  # only in base
        for i in range(rng.randint(0, 40)):
            cand.insert(rng.randint(0, len(cand)), (("new", "a", f"n{i}"), "v"))  # only in cand
    if shape in ("swaps", "mixed"):
        for _ in range(rng.randint(1, 5)):
            if len(cand) > 1:
                p, q = rng.randrange(len(cand)), rng.randrange(len(cand))
                cand[p], cand[q] = cand[q], cand[p]
    if shape == "shuffled":
        rng.shuffle(cand)
        for _ in range(rng.randint(0, 30)):
            if cand:
                p = rng.randrange(len(cand))
                cand[p] = (cand[p][0], "changed")
    if shape in ("duplicates", "mixed"):
        for side in (base, cand):
            for _ in range(rng.randint(0, 20)):
                if side:
                    cell, _ = side[rng.randrange(len(side))]
                    side.insert(rng.randint(0, len(side)), (cell, rng.choice(["0", "dup"])))
    if shape == "many inserts":  # past the stepping budget
        inserted = [(("ins", "a", f"i{i}"), "v") for i in range(n)]
        cand = [row for pair in zip(cand, inserted) for row in pair]
    return base, cand


SHAPES = ["edits", "swaps", "shuffled", "duplicates", "mixed", "many inserts"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(12))
def test_random_captures_match_naive(tmp_path: Path, shape: str, seed: int) -> None:
    rng = random.Random(f"{shape}-{seed}")
    base_rows, cand_rows = _random_pair(rng, shape)
    texts = []
    for rows in (base_rows, cand_rows):
        text = "".join("\t".join((*cell, value)) + "\n" for cell, value in rows)
        if rng.random() < 0.5:
            text = "# header\n" + text
        if rng.random() < 0.3:
            text = text.replace("\n", "\n# note\n\n", 1)  # a comment among the rows
        texts.append(text)
    base_path = _write_bytes(tmp_path, "b.tsv", texts[0].encode())
    cand_path = _write_bytes(tmp_path, "c.tsv", texts[1].encode())
    base, cand = _naive_parse(texts[0]), _naive_parse(texts[1])
    assert read_cells(base_path) == base
    assert parse_cells(texts[1], source="c") == cand
    expected = _naive_diff(base, cand)
    assert diff_cells(base, cand) == expected
    out = io.StringIO()
    code = diff_command(base_path, cand_path, as_json=False, out=out)
    assert out.getvalue() == "".join(line + "\n" for line in render_diff(expected))
    assert code == (0 if expected.clean else 1)


def test_fast_path_agrees_with_reference_parser() -> None:
    for _, text, expected in PARSE_CASES:
        normalized = text.removeprefix("\ufeff").replace("\r\n", "\n").removesuffix("\r")
        reference = cells_parse._parse_reference(normalized, "x").to_cells()
        fast = cells_parse._parse_bytes(text.encode("utf-8"), "x").to_cells()
        assert reference == fast == expected


# --------------------------------------------------------------------------- the crate's rule


def crate_reference(text: str) -> dict[tuple[str, str, str], str]:
    """The crate's evidence diff's reading of a capture, written out here: comments (``#``)
    and blank lines skipped; a row is suite, arm, key and *everything after the third tab*
    as the value; the last write of a key wins."""
    out: dict[tuple[str, str, str], str] = {}
    for line in text.lstrip("\ufeff").replace("\r\n", "\n").split("\n"):
        if line.startswith("#") or not line.strip(" "):
            continue
        suite, arm, key, value = line.split("\t", 3)
        out[(suite, arm, key)] = value
    return out


TABBED = [
    "s\ta\tk\t1\t2\n",
    "# h\nscan\tparity\tshape\t128\t64\t32\nscan\tparity\terr\t1e-6\n",
    "s\ta\tk\tv\t\n",  # a trailing tab is part of the value
    "s\ta\tk\t\t\tx\n",  # so are leading and doubled ones
    "s\ta\tk\tfirst\ns\ta\tk\tsecond\twith a tab\n",  # the last write wins
    "\ufeffs\ta\tk\tv\tw\r\nt\ta\tk\t1\r\n",
]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize("text", TABBED)
def test_a_value_is_everything_after_the_third_tab_as_the_crate_reads_it(tmp_path: Path, read, text: str) -> None:
    assert read(tmp_path, text) == crate_reference(text)


def test_the_diff_reports_a_tabbed_value_as_one_cell(tmp_path: Path) -> None:
    base = _write_bytes(tmp_path, "base.cells", b"scan\tparity\tshape\t128\t64\nscan\tparity\terr\t1\n")
    cand = _write_bytes(tmp_path, "cand.cells", b"scan\tparity\tshape\t128\t32\nscan\tparity\terr\t1\n")
    out = io.StringIO()
    assert diff_command(base, cand, as_json=False, out=out) == 1
    assert "MOVED scan / parity / shape | 128\t64 -> 128\t32" in out.getvalue()
    assert "1 identical, 1 moved, 0 only in base, 0 only in candidate" in out.getvalue()


def test_a_tabbed_value_writes_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "cells.tsv"
    write_cells(path, {("s", "a", "k"): "v\tw"})
    assert read_cells(path) == {("s", "a", "k"): "v\tw"}
