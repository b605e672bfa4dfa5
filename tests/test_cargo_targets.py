"""Cargo target discovery from Cargo.toml: declared targets, cargo's defaults, auto-discovery."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.kinds.cargo.crate import cargo_features, discover_cargo_targets, package_version
from relgate.manifest.targets import Target

needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")

PACKAGE = '[package]\nname = "kern"\nversion = "0.3.1"\nedition = "2021"\n'


def crate(root: Path, manifest: str, files: list[str] = ()) -> Path:
    """Write Cargo.toml and the named source files (each a tiny valid Rust file)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text(manifest)
    (root / "src").mkdir(exist_ok=True)
    (root / "src/lib.rs").write_text("")
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fn main() {}\n" if "bench" in name or "bin" in name or "examples" in name
                        or name.endswith("main.rs") else "#[test]\nfn t() {}\n")
    return root / "Cargo.toml"


def summary(targets: list[Target]) -> list[tuple]:
    return [(t.kind, t.name, t.path, t.required_features, t.harness, t.auto) for t in targets]


def test_declared_targets_with_cargo_default_paths(tmp_path: Path) -> None:
    manifest = PACKAGE + 'autotests = false\nautobenches = false\nautobins = false\nautoexamples = false\n' + """
[[test]]
name = "scan_parity"

[[test]]
name = "layout"

[[test]]
name = "explicit"
path = "./tests/odd/explicit_file.rs"

[[bench]]
name = "throughput"
harness = false

[[example]]
name = "demo"

[[bin]]
name = "tool"
"""
    path = crate(tmp_path, manifest, ["tests/scan_parity.rs", "tests/layout/main.rs", "tests/odd/explicit_file.rs",
                                      "benches/throughput.rs", "examples/demo.rs", "src/bin/tool/main.rs"])
    targets = discover_cargo_targets(path)
    assert summary(targets) == [
        ("test", "scan_parity", "tests/scan_parity.rs", (), True, False),
        ("test", "layout", "tests/layout/main.rs", (), True, False),  # NAME/main.rs when NAME.rs is absent
        ("test", "explicit", "tests/odd/explicit_file.rs", (), True, False),  # "./" dropped
        ("bench", "throughput", "benches/throughput.rs", (), False, False),
        ("example", "demo", "examples/demo.rs", (), True, False),
        ("bin", "tool", "src/bin/tool/main.rs", (), True, False),
    ]
    assert [t.origin for t in targets] == [
        "Cargo.toml [[test]] #1", "Cargo.toml [[test]] #2", "Cargo.toml [[test]] #3",
        "Cargo.toml [[bench]] #1", "Cargo.toml [[example]] #1", "Cargo.toml [[bin]] #1",
    ]


def test_missing_file_still_gets_the_first_default_path(tmp_path: Path) -> None:
    path = crate(tmp_path, PACKAGE + "autotests = false\n[[test]]\nname = \"ghost\"\n")
    (target,) = [t for t in discover_cargo_targets(path) if t.kind == "test"]
    assert (target.name, target.path) == ("ghost", "tests/ghost.rs")


def test_required_features_single_and_multi_line_arrays_and_harness(tmp_path: Path) -> None:
    manifest = PACKAGE + """autotests = false
autobenches = false

[[test]]
name = "one_line"
required-features = ["cuda"]

[[test]]
name = "normalized"
path = "tools/qualification/normalized.rs"
required-features = [
    "qualification",
    "cuda",
]
harness = true

[[bench]]
name = "speed"
required-features = []
harness = false
"""
    path = crate(tmp_path, manifest, ["tests/one_line.rs", "tools/qualification/normalized.rs", "benches/speed.rs"])
    by_name = {t.name: t for t in discover_cargo_targets(path)}
    assert by_name["one_line"].required_features == ("cuda",)
    assert by_name["normalized"].required_features == ("qualification", "cuda")
    assert by_name["normalized"].harness is True
    assert by_name["speed"].required_features == ()
    assert by_name["speed"].harness is False
    assert by_name["one_line"].harness is True  # cargo's default


def test_autotests_on_finds_files_and_main_rs_dirs(tmp_path: Path) -> None:
    path = crate(tmp_path, PACKAGE, ["tests/alpha.rs", "tests/beta/main.rs", "tests/common/mod.rs",
                                     "tests/notes.txt"])
    tests = [t for t in discover_cargo_targets(path) if t.kind == "test"]
    assert summary(tests) == [
        ("test", "alpha", "tests/alpha.rs", (), True, True),
        ("test", "beta", "tests/beta/main.rs", (), True, True),
    ]
    assert [t.origin for t in tests] == ["auto: tests/alpha.rs", "auto: tests/beta/main.rs"]


def test_autotests_off_keeps_only_declared(tmp_path: Path) -> None:
    manifest = PACKAGE + 'autotests = false\n[[test]]\nname = "alpha"\n'
    path = crate(tmp_path, manifest, ["tests/alpha.rs", "tests/stray.rs", "tests/beta/main.rs"])
    tests = [t for t in discover_cargo_targets(path) if t.kind == "test"]
    assert summary(tests) == [("test", "alpha", "tests/alpha.rs", (), True, False)]


def test_declared_target_is_not_duplicated_by_auto_discovery(tmp_path: Path) -> None:
    manifest = PACKAGE + """
[[test]]
name = "alpha"
required-features = ["cuda"]

[[test]]
name = "renamed"
path = "tests/beta.rs"
"""
    path = crate(tmp_path, manifest, ["tests/alpha.rs", "tests/beta.rs", "tests/gamma.rs"])
    tests = [t for t in discover_cargo_targets(path) if t.kind == "test"]
    assert summary(tests) == [
        ("test", "alpha", "tests/alpha.rs", ("cuda",), True, False),  # same name as the auto one
        ("test", "renamed", "tests/beta.rs", (), True, False),  # same path as the auto one
        ("test", "gamma", "tests/gamma.rs", (), True, True),
    ]


def test_edition_2015_turns_auto_discovery_off_for_a_kind_that_declares_targets(tmp_path: Path) -> None:
    manifest = '[package]\nname = "old"\nversion = "0.1.0"\n\n[[test]]\nname = "alpha"\n'
    path = crate(tmp_path, manifest, ["tests/alpha.rs", "tests/stray.rs", "benches/b.rs"])
    assert [(t.kind, t.name) for t in discover_cargo_targets(path) if t.kind in ("test", "bench")] == [
        ("test", "alpha"), ("bench", "b")]


def test_autobenches_examples_and_bins(tmp_path: Path) -> None:
    path = crate(tmp_path, PACKAGE, ["benches/b1.rs", "benches/b2/main.rs", "examples/ex.rs", "src/main.rs",
                                     "src/bin/cli.rs"])
    assert [(t.kind, t.name, t.path, t.auto) for t in discover_cargo_targets(path)] == [
        ("bench", "b1", "benches/b1.rs", True),
        ("bench", "b2", "benches/b2/main.rs", True),
        ("example", "ex", "examples/ex.rs", True),
        ("bin", "kern", "src/main.rs", True),
        ("bin", "cli", "src/bin/cli.rs", True),
    ]
    off = PACKAGE + "autobenches = false\nautoexamples = false\nautobins = false\n"
    path = crate(tmp_path, off)
    assert discover_cargo_targets(path) == []


def test_declared_entries_are_kept_even_when_wrong(tmp_path: Path) -> None:
    manifest = PACKAGE + """autotests = false
[[test]]
path = "tests/nameless.rs"

[[test]]
harness = false

[[test]]
name = "empty_path"
path = ""
"""
    path = crate(tmp_path, manifest, ["tests/nameless.rs"])
    assert [(t.name, t.path, t.origin) for t in discover_cargo_targets(path)] == [
        (None, "tests/nameless.rs", "Cargo.toml [[test]] #1"),
        (None, None, "Cargo.toml [[test]] #2"),
        ("empty_path", None, "Cargo.toml [[test]] #3"),
    ]


def test_features_and_version(tmp_path: Path) -> None:
    manifest = PACKAGE + """
[features]
default = ["cuda"]
cuda = []
qualification = ["dep:serde_json"]

[dependencies]
half = { version = "2", optional = true }
serde_json = { version = "1", optional = true }
libc = "0.2"
"""
    path = crate(tmp_path, manifest)
    assert cargo_features(path) == {"default", "cuda", "qualification", "half"}
    assert package_version(path) == "0.3.1"
    inherited = crate(tmp_path / "ws", '[package]\nname = "m"\nversion.workspace = true\n')
    assert package_version(inherited) is None
    assert cargo_features(inherited) == set()


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (PACKAGE + '[test]\nname = "x"\n', "Cargo.toml: test: expected an array, got a table"),
        ('test = ["x"]\n' + PACKAGE, "Cargo.toml: test[0]: expected a table, got the string"),
        (PACKAGE + '[[bench]]\nname = "b"\nharness = "no"\n',
         'Cargo.toml: bench[0].harness: expected true or false, got the string "no"'),
        (PACKAGE + '[[test]]\nname = "t"\nrequired-features = "cuda"\n',
         "Cargo.toml: test[0].required-features: expected an array"),
        (PACKAGE + '[[test]]\nname = "t"\nrequired-features = ["cuda", 3]\n',
         "Cargo.toml: test[0].required-features[1]: expected a string, got the number 3"),
        (PACKAGE + '[[example]]\nname = 7\n', "Cargo.toml: example[0].name: expected a string"),
        (PACKAGE + 'autotests = "no"\n', "Cargo.toml: package.autotests: expected true or false"),
        (PACKAGE + '[[test]\nname = "t"\n', "Cargo.toml:5:7: TOML syntax error"),
    ],
)
def test_malformed_cargo_toml_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               manifest: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = crate(tmp_path, manifest)
    with pytest.raises(InputError) as info:
        discover_cargo_targets(path)
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_missing_cargo_toml_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        discover_cargo_targets(tmp_path / "Cargo.toml")


@needs_cargo
def test_discovery_agrees_with_cargo_metadata(tmp_path: Path) -> None:
    """The same crate, read by cargo itself: same targets, names, paths and features."""
    manifest = PACKAGE + """autobins = false

[features]
cuda = []
qualification = []

[[test]]
name = "declared"
required-features = [
    "cuda",
]

[[test]]
name = "renamed"
path = "tests/by_path.rs"

[[test]]
name = "tool"
path = "tools/qualification/tool.rs"
required-features = ["qualification"]

[[bench]]
name = "speed"
harness = false

[[example]]
name = "dirdemo"
"""
    path = crate(tmp_path, manifest, ["tests/declared.rs", "tests/by_path.rs", "tests/auto.rs", "tests/nested/main.rs",
                                      "tests/common/mod.rs", "tools/qualification/tool.rs", "benches/speed.rs",
                                      "benches/other.rs", "examples/dirdemo/main.rs", "examples/plain.rs",
                                      "src/main.rs", "src/bin/cli.rs"])
    out = subprocess.run(["cargo", "metadata", "--no-deps", "--offline", "--format-version", "1"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    (package,) = json.loads(out)["packages"]
    theirs = sorted(
        (t["kind"][0], t["name"], Path(t["src_path"]).relative_to(tmp_path.resolve()).as_posix(),
         tuple(t.get("required-features") or ()))
        for t in package["targets"] if t["kind"][0] in ("test", "bench", "example", "bin")
    )
    ours = sorted((t.kind, t.name, t.path, t.required_features) for t in discover_cargo_targets(path))
    assert ours == theirs
