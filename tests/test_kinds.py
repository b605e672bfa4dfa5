"""The project kinds' registry: every kind one adapter, in detection order, answering what the
switches across the engine used to answer."""

from __future__ import annotations

from pathlib import Path

from relgate.kinds.registry import DEFAULT_KIND, detect_kinds, kind_choices, kind_names, kind_of
from relgate.manifest.keys import PROJECT_KINDS
from relgate.manifest.package_spec import _ONLY
from relgate.manifest.specs import version_problem


def test_each_kind_registers_once_in_detection_order() -> None:
    assert kind_names() == ("cargo", "cmake", "make", "python")
    assert kind_choices() == PROJECT_KINDS == ("make", "cargo", "cmake", "python")
    assert DEFAULT_KIND == "make"
    assert [kind_of(n).name for n in kind_names()] == list(kind_names())


def test_the_package_keys_each_kind_takes_are_the_adapters_lists() -> None:
    assert dict(_ONLY) == {
        "dist": ("cmake", "make"), "dist_glob": ("cmake", "make"), "build_command": ("cmake", "make"),
        "test_command": ("cmake", "make", "python"),
        "extras": ("python",), "extensions": ("python",), "group": ("python",), "wheel_fixtures": ("python",),
        "registry": ("cargo",), "index_url": ("python",), "upload_url": ("python",), "lock": ("python",),
        "import": ("python",)}


def test_detection_reads_each_kinds_marker_files(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("")
    (tmp_path / "makefile").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "CMakeLists.txt").write_text("")
    assert detect_kinds(tmp_path) == [("cargo", "Cargo.toml"), ("cmake", "CMakeLists.txt"), ("make", "makefile"),
                                      ("python", "pyproject.toml")]


def test_each_kind_has_its_version_rule() -> None:
    assert version_problem("cargo", "1.0") is not None and version_problem("cargo", "1.0.0-rc.1") is None
    assert version_problem("python", "1.0.0rc1") is None and version_problem("python", "1.0-x") is not None
    assert version_problem("make", "snapshot 7") is None and version_problem("make", " ") is not None


def test_the_cargo_adapter_derives_the_lane_command_the_others_do_not() -> None:
    argv = kind_of("cargo").lane_command(target_kind="test", target_name="gpu", features=["cuda"], locked=True,
                                         ignored=True, args=["--nocapture"])
    assert argv == ["cargo", "test", "--release", "--test", "gpu", "--locked", "--features", "cuda", "--",
                    "--ignored", "--nocapture"]
    assert kind_of("make").lane_command(target_kind="command", target_name="smoke", features=[], locked=False,
                                        ignored=False, args=[]) is None
