"""The lane census: each rule with a passing and a failing case, on small real crates.

Each case starts from one clean crate (Cargo.toml, sources, qual/lanes.toml written to
tmp_path), changes a few files, discovers the targets from Cargo.toml and runs the
census. A passing case expects no violation at all; a failing case expects exactly one,
with its rule, target and the whole message (which says the fix).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.kinds.cargo.crate import discover_cargo_targets
from relgate.lanes.census import PYTHON_RULES, RULES, Violation, census_exit_code, render_violations, run_census
from relgate.manifest.lanes import BUILTIN_LANES, LaneRow, read_lanes_file
from relgate.manifest.specs import CommandSpec
from relgate.manifest.targets import Target

CARGO = """\
[package]
name = "kern"
version = "0.1.0"
edition = "2021"
autotests = false
autobenches = false

[features]
cuda = []
qualification = []

[[test]]
name = "scan_parity"
path = "tests/scan_parity.rs"

[[test]]
name = "arms"
path = "tests/arms.rs"
required-features = ["cuda"]

[[test]]
name = "host_shapes"
path = "tests/host_shapes.rs"

[[bench]]
name = "throughput"
path = "benches/throughput.rs"
harness = false

[[test]]
name = "board_probe"
path = "tools/qualification/board_probe.rs"
required-features = [
    "qualification",
    "cuda",
]
"""

LANES = """\
# Lane table for kern: every target declared in Cargo.toml takes exactly one lane.
# Checked by the lane census (a host check).

[lanes]
"scan_parity" = "gate"
"arms" = "contract"
host_shapes = "host"  # needs no GPU
"throughput" = "bench"
'board_probe' = "qualification"
"""
NEXT_ROW = 10  # the line an appended lane row lands on

GATE_FILE = """\
mod common;

// A plain ignore attribute here would hide a test (the census reads lines, as the crate's does).
#[test]
fn parent() {}

#[test]
#[ignore = "invoked by parent"]
fn child() {}
"""

CONTRACT_FILE = """\
#[test]
#[ignore]
fn needs_checkpoint() {}
"""

BASE_FILES = {
    "Cargo.toml": CARGO,
    "qual/lanes.toml": LANES,
    "src/lib.rs": "pub fn scan() {}\n",
    "tests/scan_parity.rs": GATE_FILE,
    "tests/arms.rs": CONTRACT_FILE,
    "tests/host_shapes.rs": "#[test]\nfn shapes() {}\n",
    "tests/common/mod.rs": "pub fn helper() {}\n",  # a shared module, not a target
    "benches/throughput.rs": "fn main() {}\n",
    "tools/qualification/board_probe.rs": "#[test]\nfn probe() {}\n",
    "examples/demo.rs": "fn main() {}\n",  # an auto-discovered example: no lane needed
}

Files = dict[str, str]
Change = Callable[[Files], None]


def put(path: str, text: str) -> Change:
    return lambda files: files.__setitem__(path, text)


def append(path: str, text: str) -> Change:
    return lambda files: files.__setitem__(path, files[path] + text)


def replace(path: str, old: str, new: str) -> Change:
    def change(files: Files) -> None:
        assert old in files[path], f"{old!r} not in {path}"
        files[path] = files[path].replace(old, new, 1)
    return change


def delete(path: str) -> Change:
    return lambda files: files.pop(path)


def write_crate(root: Path, changes: tuple[Change, ...] = ()) -> Path:
    files = dict(BASE_FILES)
    for change in changes:
        change(files)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def census(root: Path, extra_lanes: tuple[str, ...] = ()) -> list[Violation]:
    return run_census(kind="cargo", root=root, targets=discover_cargo_targets(root / "Cargo.toml"),
                      lanes=read_lanes_file(root / "qual/lanes.toml"), known_lanes=BUILTIN_LANES + extra_lanes)


def v(rule: str, target: str, message: str) -> Violation:
    return Violation(rule=rule, target=target, message=message)


NEW_TEST = '\n[[test]]\nname = "{name}"\npath = "{path}"\n'
TOOLKIT = (append("Cargo.toml", NEW_TEST.format(name="toolkit_ids", path="tests/toolkit_ids.rs")),
           put("tests/toolkit_ids.rs", "#[test]\nfn ids() {}\n"),
           append("qual/lanes.toml", '"toolkit_ids" = "toolkit"\n'))
SOAK = (append("Cargo.toml", NEW_TEST.format(name="soak_ids", path="tests/soak_ids.rs")),
        put("tests/soak_ids.rs", "#[test]\nfn ids() {}\n"),
        append("qual/lanes.toml", '"soak_ids" = "soak"\n'))
GATE_FIX = 'un-ignore it, move the target to the contract lane, or mark a child its parent launches ' \
           '#[ignore = "invoked by …"]'
BENCH_FIX = "declare it as a [[bench]] with harness = false under benches/"
QUAL_FIX = 'put it under tools/qualification/ with required-features = ["qualification", …]'
UNDECLARED = "not a declared target; declare it in Cargo.toml and give it a lane, or delete it"

# (rule, changes, project-defined lanes, expected violation or None for a clean census)
CASES = [
    # -- every lane name is known ------------------------------------------------------------
    pytest.param("unknown-lane", SOAK, ("soak",), None, id="unknown-lane/pass-project-lane"),
    pytest.param("unknown-lane", TOOLKIT, (), None, id="unknown-lane/pass-toolkit-is-built-in"),
    pytest.param("unknown-lane", (replace("qual/lanes.toml", '"scan_parity" = "gate"', '"scan_parity" = "gtae"'),),
                 (), v("unknown-lane", "scan_parity",
                       'unknown lane "gtae" — did you mean "gate"? (qual/lanes.toml:5)'),
                 id="unknown-lane/fail-typo"),
    pytest.param("unknown-lane", SOAK, (),
                 v("unknown-lane", "soak_ids", 'unknown lane "soak"; use one of host, gate, contract, record, '
                   f'toolkit, bench, qualification (qual/lanes.toml:{NEXT_ROW})'),
                 id="unknown-lane/fail-undeclared-project-lane"),
    # -- no duplicate row ---------------------------------------------------------------------
    pytest.param("duplicate-row", (append("qual/lanes.toml", '# "arms" = "gate" (moved)\n'),), (), None,
                 id="duplicate-row/pass-commented-row"),
    pytest.param("duplicate-row", (append("qual/lanes.toml", 'arms = "contract"\n'),), (),
                 v("duplicate-row", "arms", f'listed 2 times in qual/lanes.toml (line 6 "contract", line {NEXT_ROW} '
                   '"contract"); keep exactly one row'),
                 id="duplicate-row/fail-same-lane"),
    pytest.param("duplicate-row", (append("qual/lanes.toml", '"arms" = "gate"\n'),), (),
                 v("duplicate-row", "arms", f'listed 2 times in qual/lanes.toml (line 6 "contract", line {NEXT_ROW} '
                   '"gate"); keep exactly one row'),
                 id="duplicate-row/fail-two-lanes"),
    # -- every declared target has exactly one lane ---------------------------------------------
    pytest.param("unassigned", (), (), None, id="unassigned/pass-base-with-unlaned-example"),
    pytest.param("unassigned", (replace("qual/lanes.toml", 'host_shapes = "host"  # needs no GPU\n', ""),), (),
                 v("unassigned", "host_shapes", "no lane in qual/lanes.toml (tests/host_shapes.rs, Cargo.toml [[test]] "
                   "#3); assign one in this commit"),
                 id="unassigned/fail-declared"),
    pytest.param("unassigned", (replace("Cargo.toml", "autotests = false\n", ""),
                                put("tests/extra.rs", "#[test]\nfn extra() {}\n")), (),
                 v("unassigned", "extra", "no lane in qual/lanes.toml (tests/extra.rs, auto-discovered); assign one in "
                   "this commit"),
                 id="unassigned/fail-auto-discovered"),
    # -- a lane row with no target is stale ----------------------------------------------------
    pytest.param("stale-row", (append("Cargo.toml", NEW_TEST.format(name="ghost", path="tests/ghost.rs")),
                               put("tests/ghost.rs", ""), append("qual/lanes.toml", '"ghost" = "host"\n')), (), None,
                 id="stale-row/pass-declared"),
    pytest.param("stale-row", (append("qual/lanes.toml", '"ghost" = "host"\n'),), (),
                 v("stale-row", "ghost", f"lane row for a target that does not exist (qual/lanes.toml:{NEXT_ROW}); "
                   "drop the row"),
                 id="stale-row/fail"),
    # -- each target has a name and a path; no two share one; the file exists ------------------
    pytest.param("no-name", (), (), None, id="no-name/pass"),
    pytest.param("no-name", (append("Cargo.toml", '\n[[test]]\npath = "tests/nameless.rs"\n'),
                             put("tests/nameless.rs", "")), (),
                 v("no-name", "tests/nameless.rs", "declared without a name (Cargo.toml [[test]] #5); name it and give "
                   "it a lane"),
                 id="no-name/fail"),
    pytest.param("no-path", (append("Cargo.toml", '\n[[test]]\nname = "defaulted"\n'), put("tests/defaulted.rs", ""),
                             append("qual/lanes.toml", 'defaulted = "host"\n')), (), None,
                 id="no-path/pass-cargo-default-path"),
    pytest.param("no-path", (append("Cargo.toml", '\n[[test]]\nname = "pathless"\npath = ""\n'),
                             append("qual/lanes.toml", 'pathless = "host"\n')), (),
                 v("no-path", "pathless", "declared without a path (Cargo.toml [[test]] #5); set the path of its "
                   "source file"),
                 id="no-path/fail-empty-path"),
    pytest.param("duplicate-name", (), (), None, id="duplicate-name/pass"),
    pytest.param("duplicate-name", (append("Cargo.toml", NEW_TEST.format(name="arms", path="tests/arms_again.rs")),
                                    put("tests/arms_again.rs", "")), (),
                 v("duplicate-name", "arms", "declared 2 times (tests/arms.rs, Cargo.toml [[test]] #2; "
                   "tests/arms_again.rs, Cargo.toml [[test]] #5); give each target its own name"),
                 id="duplicate-name/fail"),
    pytest.param("shared-path", (), (), None, id="shared-path/pass"),
    pytest.param("shared-path", (append("Cargo.toml", NEW_TEST.format(name="alias", path="tests/scan_parity.rs")),
                                 append("qual/lanes.toml", '"alias" = "gate"\n')), (),
                 v("shared-path", "alias", 'shares tests/scan_parity.rs with "scan_parity" (Cargo.toml [[test]] #1); '
                   "give each target its own file"),
                 id="shared-path/fail"),
    pytest.param("missing-file", (), (), None, id="missing-file/pass"),
    pytest.param("missing-file", (delete("tests/host_shapes.rs"),), (),
                 v("missing-file", "host_shapes", "tests/host_shapes.rs does not exist (Cargo.toml [[test]] #3); add "
                   "the file or fix the path"),
                 id="missing-file/fail"),
    pytest.param("missing-file", (delete("tests/host_shapes.rs"), put("tests/host_shapes.rs/inner.txt", "")), (),
                 v("missing-file", "host_shapes", "tests/host_shapes.rs is not a file (Cargo.toml [[test]] #3); add "
                   "the file or fix the path"),
                 id="missing-file/fail-a-folder"),
    # -- gate files hold no #[ignore unless it is #[ignore = "invoked by …"] --------------------
    pytest.param("gate-ignore", (append("tests/arms.rs", '#[test]\n#[ignore = "needs a checkpoint"]\nfn x() {}\n'),),
                 (), None, id="gate-ignore/pass-invoked-by-and-contract-lane"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", "\n#[test]\n#[ignore]\nfn slow() {}\n"),), (),
                 v("gate-ignore", "scan_parity", f"tests/scan_parity.rs:12: #[ignore] in a gate-lane file hides a test "
                   f"no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-bare"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", '#[test] #[ignore = "needs an H100"] fn big() {}\n'),),
                 (), v("gate-ignore", "scan_parity",
                       'tests/scan_parity.rs:10: #[ignore = "needs an H100"] fn big() {} in '
                       f"a gate-lane file hides a test no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-with-reason"),
    pytest.param("gate-ignore", (*TOOLKIT, append("tests/toolkit_ids.rs", "#[test]\n#[ignore]\nfn slow() {}\n")), (),
                 v("gate-ignore", "toolkit_ids", "tests/toolkit_ids.rs:4: #[ignore] in a toolkit-lane file hides a test "
                   f"no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-toolkit-lane"),
    # issue 34: the crate's census reads a line that, trimmed, starts with #[ignore; a comment is no attribute
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", "// #[ignore] while the kernel is rewritten\n"),), (),
                 None, id="gate-ignore/pass-commented-like-the-crate"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", "//! Arms the contract lane runs with #[ignore] "
                                        "and -- --ignored.\n"),), (),
                 None, id="gate-ignore/pass-doc-comment-mentions-it"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", '#[test] #[ignore] fn c3() {}\n'),), (),
                 v("gate-ignore", "scan_parity", "tests/scan_parity.rs:10: #[ignore] fn c3() {} in a "
                   f"gate-lane file hides a test no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-one-line-attributes"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", '    #[ignore = "slow"]\n    fn c4() {}\n'),), (),
                 v("gate-ignore", "scan_parity", 'tests/scan_parity.rs:10: #[ignore = "slow"] in a '
                   f"gate-lane file hides a test no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-indented-with-a-reason"),
    pytest.param("gate-ignore", (append("tests/scan_parity.rs", '#[test]\n#[ignore="invoked by parent"]\nfn c2() {}\n'),),
                 (), v("gate-ignore", "scan_parity", 'tests/scan_parity.rs:11: #[ignore="invoked by parent"] in a '
                       f"gate-lane file hides a test no lane would ever run; {GATE_FIX}"),
                 id="gate-ignore/fail-no-space-like-the-crate"),
    # -- no target points into internal/ (the archive) -------------------------------------------
    pytest.param("archived", (), (), None, id="archived/pass"),
    pytest.param("archived", (append("Cargo.toml", NEW_TEST.format(name="old_stand", path="internal/old_stand.rs")),
                              put("internal/old_stand.rs", ""), append("qual/lanes.toml", '"old_stand" = "record"\n')),
                 (), v("archived", "old_stand", "internal/old_stand.rs points into the archive (internal/); archived "
                       "stands stay out of the manifest: drop the target (and its lane row)"),
                 id="archived/fail-internal"),
    # -- Cargo.toml declares at least one [[test]] or [[bench]] -----------------------------------
    pytest.param("no-targets", (), (), None, id="no-targets/pass"),
    pytest.param("no-targets", (put("Cargo.toml", CARGO.split("[[test]]")[0]), put("qual/lanes.toml", "[lanes]\n"),
                                delete("tests/scan_parity.rs"), delete("tests/arms.rs"), delete("tests/host_shapes.rs"),
                                delete("benches/throughput.rs"), delete("tools/qualification/board_probe.rs")), (),
                 v("no-targets", "Cargo.toml", "has no test or bench target (none declared, none auto-discovered); "
                   "add the targets the lanes run"),
                 id="no-targets/fail-none-declared"),
    # -- bench-lane targets are [[bench]] with harness = false under benches/ -------------------
    pytest.param("bench-layout", (), (), None, id="bench-layout/pass"),
    pytest.param("bench-layout", (replace("Cargo.toml", "harness = false\n", ""),), (),
                 v("bench-layout", "throughput", f"in the bench lane but uses the default test harness; {BENCH_FIX}"),
                 id="bench-layout/fail-harness"),
    pytest.param("bench-layout", (replace("qual/lanes.toml", 'host_shapes = "host"', 'host_shapes = "bench"'),), (),
                 v("bench-layout", "host_shapes", "in the bench lane but is a [[test]], uses the default test harness, "
                   f"lives outside benches/ (tests/host_shapes.rs); {BENCH_FIX}"),
                 id="bench-layout/fail-test-in-bench-lane"),
    # -- qualification-lane targets: tools/qualification/, the qualification feature ------------
    pytest.param("qualification-layout", (), (), None, id="qualification-layout/pass"),
    pytest.param("qualification-layout", (replace("Cargo.toml", '    "qualification",\n', ""),), (),
                 v("qualification-layout", "board_probe", "in the qualification lane but does not require the "
                   f"qualification feature; {QUAL_FIX}"),
                 id="qualification-layout/fail-no-feature"),
    pytest.param("qualification-layout",
                 (append("Cargo.toml", NEW_TEST.format(name="probe2", path="tests/probe2.rs")
                         + 'required-features = ["qualification"]\n'),
                  put("tests/probe2.rs", ""), append("qual/lanes.toml", 'probe2 = "qualification"\n')), (),
                 v("qualification-layout", "probe2", "in the qualification lane but lives outside tools/qualification/ "
                   f"(tests/probe2.rs); {QUAL_FIX}"),
                 id="qualification-layout/fail-outside-tools"),
    pytest.param("qualification-layout",
                 (replace("Cargo.toml", 'path = "tests/host_shapes.rs"\n',
                          'path = "tests/host_shapes.rs"\nrequired-features = ["qualification"]\n'),), (),
                 v("qualification-layout", "host_shapes",
                   "requires the qualification feature but sits in the host lane; move it under tools/qualification/ "
                   "into the qualification lane, or drop the feature"),
                 id="qualification-layout/fail-feature-in-host-lane"),
    # -- other lanes (builtin and project-defined) live under tests/ ----------------------------
    pytest.param("lane-layout", SOAK, ("soak",), None, id="lane-layout/pass-project-lane-under-tests"),
    pytest.param("lane-layout", TOOLKIT, (), None, id="lane-layout/pass-toolkit-under-tests"),
    pytest.param("lane-layout", (append("Cargo.toml", NEW_TEST.format(name="toolkit_ids", path="src/toolkit_ids.rs")),
                                 put("src/toolkit_ids.rs", ""), append("qual/lanes.toml", '"toolkit_ids" = "toolkit"\n')),
                 (), None,  # issue 34: the crate's census does not place gate or toolkit files
                 id="lane-layout/pass-toolkit-outside-tests"),
    pytest.param("lane-layout", (append("Cargo.toml", NEW_TEST.format(name="stray", path="src/stray_test.rs")),
                                 put("src/stray_test.rs", ""), append("qual/lanes.toml", 'stray = "gate"\n')), (),
                 None, id="lane-layout/pass-gate-outside-tests"),
    pytest.param("lane-layout", (append("Cargo.toml", NEW_TEST.format(name="stray", path="src/stray_test.rs")),
                                 put("src/stray_test.rs", ""), append("qual/lanes.toml", 'stray = "contract"\n')), (),
                 v("lane-layout", "stray",
                   "in the contract lane but lives outside tests/ (src/stray_test.rs); move it under tests/"),
                 id="lane-layout/fail-contract-outside-tests"),
    pytest.param("lane-layout", (replace("qual/lanes.toml", '"throughput" = "bench"', '"throughput" = "host"'),), (),
                 v("lane-layout", "throughput",
                   "in the host lane but lives outside tests/ (benches/throughput.rs); move it under tests/, "
                   "or give it the bench lane"),
                 id="lane-layout/fail-bench-in-host-lane"),
    # -- every .rs file under tests/, benches/, tools/qualification/ is a declared target -------
    pytest.param("undeclared-file", (put("tests/support/fixtures.rs", ""), put("benches/notes.md", "")), (), None,
                 id="undeclared-file/pass-shared-modules"),
    pytest.param("undeclared-file", (put("tests/orphan.rs", "#[test]\nfn t() {}\n"),), (),
                 v("undeclared-file", "tests/orphan.rs", UNDECLARED), id="undeclared-file/fail-tests"),
    pytest.param("undeclared-file", (put("tools/qualification/old_probe.rs", ""),), (),
                 v("undeclared-file", "tools/qualification/old_probe.rs", UNDECLARED), id="undeclared-file/fail-tools"),
    pytest.param("undeclared-file", (put("benches/old/main.rs", ""),), (),  # autobenches off: not a target, as
                 None, id="undeclared-file/pass-bench-dir"),                  # in the crate's census
]


@pytest.mark.parametrize(("rule", "changes", "extra_lanes", "expected"), CASES)
def test_census_rule(tmp_path: Path, rule: str, changes: tuple[Change, ...], extra_lanes: tuple[str, ...],
                     expected: Violation | None) -> None:
    root = write_crate(tmp_path, changes)
    found = census(root, extra_lanes)
    if expected is None:
        assert found == []
    else:
        assert expected.rule == rule
        assert found == [expected]


def test_every_rule_has_a_passing_and_a_failing_case() -> None:
    passing = {case.values[0] for case in CASES if case.values[3] is None}
    failing = {case.values[0] for case in CASES if case.values[3] is not None}
    assert passing == set(RULES) - set(PYTHON_RULES)  # a crate's table; python's: tests/test_python_package.py
    assert failing == set(RULES) - set(PYTHON_RULES)


# --- beyond one rule at a time ------------------------------------------------------------------


def test_stale_row_suggests_the_unassigned_target_it_was_meant_for(tmp_path: Path) -> None:
    root = write_crate(tmp_path, (replace("qual/lanes.toml", "host_shapes =", "host_shape ="),))
    assert census(root) == [
        v("unassigned", "host_shapes", "no lane in qual/lanes.toml (tests/host_shapes.rs, Cargo.toml [[test]] #3); "
          "assign one in this commit"),
        v("stale-row", "host_shape", 'lane row for a target that does not exist (qual/lanes.toml:7); drop the row, or '
          'rename it to "host_shapes"'),
    ]


def test_everything_is_reported_in_rule_order_then_target(tmp_path: Path) -> None:
    root = write_crate(tmp_path, (
        put("tests/zz_orphan.rs", ""), put("tests/aa_orphan.rs", ""),
        append("qual/lanes.toml", '"ghost" = "host"\n"arms" = "contract"\n'),
        replace("qual/lanes.toml", '"scan_parity" = "gate"', '"scan_parity" = "gtae"'),
        append("tests/host_shapes.rs", "#[ignore]\nfn x() {}\n"),  # host lane: allowed
        delete("tests/host_shapes.rs"),
        replace("Cargo.toml", "harness = false\n", ""),
    ))
    found = census(root)
    assert [(x.rule, x.target) for x in found] == [
        ("unknown-lane", "scan_parity"),
        ("duplicate-row", "arms"),
        ("stale-row", "ghost"),
        ("missing-file", "host_shapes"),
        ("bench-layout", "throughput"),
        ("undeclared-file", "tests/aa_orphan.rs"),
        ("undeclared-file", "tests/zz_orphan.rs"),
    ]
    lines = list(render_violations(reversed(found)))
    assert lines[0] == ('unknown-lane     scan_parity         unknown lane "gtae" — did you mean "gate"? '
                        "(qual/lanes.toml:5)")
    assert lines[-1].startswith("undeclared-file  tests/zz_orphan.rs  not a declared target;")
    assert len(lines) == len(found)
    assert census_exit_code(found) == 1
    assert census_exit_code([]) == 0
    assert list(render_violations([])) == []


def test_several_ignored_arms_each_name_their_line(tmp_path: Path) -> None:
    root = write_crate(tmp_path, (put("tests/scan_parity.rs", "#[ignore]\nfn a() {}\n    #[ignore]\nfn b() {}\n"),))
    assert [x.message.split(": #")[0] for x in census(root)] == ["tests/scan_parity.rs:1", "tests/scan_parity.rs:3"]


def test_a_nameless_pathless_cargo_target_is_reported_by_origin(tmp_path: Path) -> None:
    root = write_crate(tmp_path, (append("Cargo.toml", "\n[[test]]\nharness = false\n"),))
    assert [(x.rule, x.target) for x in census(root)] == [
        ("no-name", "Cargo.toml [[test]] #5"), ("no-path", "Cargo.toml [[test]] #5")]


def test_a_laned_bin_is_held_to_its_lane(tmp_path: Path) -> None:
    root = write_crate(tmp_path, (put("src/bin/probe.rs", "fn main() {}\n"),
                                  append("qual/lanes.toml", 'probe = "bench"\n')))
    assert census(root) == [v("bench-layout", "probe", "in the bench lane but is a [[bin]], uses the default test "
                              f"harness, lives outside benches/ (src/bin/probe.rs); {BENCH_FIX}")]


# --- read_lanes_file ------------------------------------------------------------------------------


def test_read_lanes_file_keeps_duplicate_rows_and_other_tables(tmp_path: Path) -> None:
    path = tmp_path / "lanes.toml"
    path.write_text("""\
# header
[lanes]
"alpha" = "gate"   # first
beta = 'host'

alpha = "contract"
"alpha" = "gate"

[target.mk_smoke]
path = "tests/smoke.sh"
command = ["make", "smoke"]

[lane.toolkit]
description = "compile gates"
""")
    lanes = read_lanes_file(path)
    assert lanes.rows == (
        LaneRow(target="alpha", lane="gate", line=3),
        LaneRow(target="beta", lane="host", line=4),
        LaneRow(target="alpha", lane="contract", line=6),
        LaneRow(target="alpha", lane="gate", line=7),
    )
    assert dict(lanes.tables) == {"target": {"mk_smoke": {"path": "tests/smoke.sh", "command": ["make", "smoke"]}},
                                  "lane": {"toolkit": {"description": "compile gates"}}}
    assert lanes.lane_of("alpha") == "gate"
    assert lanes.lane_of("nobody") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[lanes]\n"a" = "gate"\n"a" = "host"\n\n[lane.x]\ndescription = oops\n',
         "lanes.toml:6:15: TOML syntax error: Invalid value"),
        ('[lanes]\n"a" = "gate"\n"b" = \n', "lanes.toml:3:7: TOML syntax error"),
        ('[lanes]\n"a" = "gate"\n"b" = 3\n', "lanes.toml: lanes.b: expected a string, got the number 3"),
        ('[lanes]\n"b" = [\n  "gate",\n]\n', "lanes.toml: lanes.b: expected a string, got an array"),
        ('# nothing here\n[other]\nx = 1\n', "lanes.toml: no [lanes] table"),
        ('lanes = "gate"\n', "lanes.toml: lanes: expected a table, got the string"),
    ],
)
def test_read_lanes_file_errors_name_file_line_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lanes.toml").write_text(text)
    with pytest.raises(InputError) as info:
        read_lanes_file(tmp_path / "lanes.toml")
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_read_lanes_file_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_lanes_file(tmp_path / "qual" / "lanes.toml")


# --- make and python projects: declared command targets, only the common rules ----------------------


def command_target(name: str | None, path: str | None) -> Target:
    return Target(name=name, path=path, kind="command", command=CommandSpec(argv=("make", name or "x")),
                  origin=f"manifests/lanes.toml [target.{name}]")


def test_command_targets_get_the_common_rules_only(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/smoke.sh").write_text("#[ignore] is just text here\n")
    (tmp_path / "bench.sh").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/undeclared.rs").write_text("")  # not a cargo project: not looked at
    lanes_path = tmp_path / "lanes.toml"
    lanes_path.write_text('[lanes]\nsmoke = "gate"\nspeed = "bench"\n')
    targets = [command_target("smoke", "scripts/smoke.sh"), command_target("speed", "bench.sh")]
    lanes = read_lanes_file(lanes_path)
    assert run_census(kind="make", root=tmp_path, targets=targets, lanes=lanes, known_lanes=BUILTIN_LANES) == []

    lanes_path.write_text('[lanes]\nsmoke = "gate"\nspeed = "bnech"\nold = "host"\nsmoke = "gate"\n')
    targets += [command_target("gone", "scripts/gone.sh"), command_target("alias", "bench.sh"),
                command_target("nopath", None)]
    found = run_census(kind="python", root=tmp_path, targets=targets, lanes=read_lanes_file(lanes_path),
                       known_lanes=BUILTIN_LANES)
    assert found == [
        v("unknown-lane", "speed", 'unknown lane "bnech" — did you mean "bench"? (lanes.toml:3)'),
        v("duplicate-row", "smoke",
          'listed 2 times in lanes.toml (line 2 "gate", line 5 "gate"); keep exactly one row'),
        v("unassigned", "alias", "no lane in lanes.toml (bench.sh, manifests/lanes.toml [target.alias]); assign one in "
          "this commit"),
        v("unassigned", "gone", "no lane in lanes.toml (scripts/gone.sh, manifests/lanes.toml [target.gone]); assign "
          "one in this commit"),
        v("unassigned", "nopath", "no lane in lanes.toml (manifests/lanes.toml [target.nopath]); assign one in this "
          "commit"),
        v("stale-row", "old", 'lane row for a target that does not exist (lanes.toml:4); drop the row'),
        # no shared-path: "alias" and "speed" may run from one file with switches (a cargo rule only)
        v("no-path", "nopath", "declared without a path (manifests/lanes.toml [target.nopath]); set the path of its "
          "source file"),
        v("missing-file", "gone", "scripts/gone.sh does not exist (manifests/lanes.toml [target.gone]); add the file "
          "or fix the path"),
    ]
