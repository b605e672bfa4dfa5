"""measurements.toml and checklist.toml: the pure parsers, with a table of (mapping, message)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from relgate.core.errors import ManifestError
from relgate.manifest.checklist import parse_checklist
from relgate.manifest.measures import parse_band, parse_measurements

M = Path("m/measurements.toml")
C = Path("m/checklist.toml")

GOOD_MEASURE: dict[str, Any] = {"target": "bench", "file_env": "X_MEASURE", "format": "csv", "key": ["n"],
                                "metrics": {"tps": "higher"}, "metadata": ["board"]}


def _measure(**kw: Any) -> dict[str, Any]:
    return {"measure": {"speed": {**GOOD_MEASURE, **kw}}}


@pytest.mark.parametrize(("data", "message"), [
    (_measure(fromat="csv"), 'measure.speed.fromat: unknown key — did you mean "format"?'),
    (_measure(format="xlsx"), 'measure.speed.format: unknown value "xlsx"'),
    (_measure(metrics={"tps": "faster"}), 'measure.speed.metrics.tps: unknown direction "faster"'),
    (_measure(metrics={}), "measure.speed.metrics: name at least one metric and its direction"),
    (_measure(output="stdout"), 'measure.speed: say where the rows come from: file_env = "VAR" or output = "stdout"'),
    (_measure(file_env="1BAD"), 'measure.speed.file_env: "1BAD" is not an environment variable name'),
    (_measure(runs=3, warmup=3), "measure.speed.warmup: must be between 0 and runs - 1 (2)"),
    (_measure(rerun_above=0.2, block_above=0.1), "measure.speed.block_above: must not be below rerun_above (0.2)"),
    (_measure(key=["tps"]), "measure.speed.key: tps is a metric, not a key column"),
    ({"quality": {"q": {"target": "s", "output": "stdout", "format": "kv", "bands": {"first_match": "~95"}}}},
     'quality.q.bands.first_match: "~95" is not a band'),
    ({"measure": {"speed": {"target": "b"}}}, "measure.speed.format: missing (required)"),
])
def test_measurements_problems_name_file_and_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_measurements(data, path=M)
    assert any(line.startswith(f"{M}: ") and message in line for line in info.value.problems), info.value.problems


def test_measurements_defaults_are_the_runbooks_policy() -> None:
    spec = parse_measurements(_measure(), path=M).measures["speed"]
    assert (spec.runs, spec.warmup, spec.rerun_above, spec.block_above) == (1, 0, 0.05, 0.10)
    assert "source_hash" in spec.vary and "driver" not in spec.vary
    band = parse_band("top1_rate", ">= 0.94")
    assert band is not None and band.holds(0.942) and not band.holds(0.93)


RELEASE = {"boards": ["H100"], "backends": ["cpu", "cuda"]}
ITEM = {"id": "gate", "title": "Gate", "auto": "lane:gate"}


@pytest.mark.parametrize(("data", "message"), [
    ({"release": RELEASE, "item": [{**ITEM, "auto": "lnae:gate"}]}, 'item[0].auto: unknown predicate "lnae" — did you mean "lane"?'),
    ({"release": RELEASE, "item": [{**ITEM, "auto": "lane"}]}, 'item[0].auto: "lane" needs a name: "lane:NAME"'),
    ({"release": RELEASE, "item": [{**ITEM, "auto": "evidence:x"}]}, 'item[0].auto: "evidence" takes no name'),
    ({"release": RELEASE, "item": [{**ITEM, "manual": True}]}, 'item[0]: an item is either auto = "KIND[:NAME]" or manual = true'),
    ({"release": RELEASE, "item": [ITEM, ITEM]}, 'item[1].id: duplicate id "gate"'),
    ({"release": RELEASE, "item": [{**ITEM, "auto": "measure:spede"}]}, "item[0].auto: measurements.toml declares no measure.spede"),
    ({"release": {**RELEASE, "tag_requires": ["ci"]}, "item": [ITEM]}, 'release.tag_requires[0]: no item "ci"'),
    ({"release": {**RELEASE, "tag_requires": ["gate"]}, "item": [ITEM]}, 'release.tag_requires[0]: "gate" is not a manual item'),
    ({"release": {"boards": []}, "item": [ITEM]}, "release.boards: name at least one board"),
    ({"release": RELEASE, "item": [{**ITEM, "not_validated": " "}]}, "item[0].not_validated: must hold the text"),
    ({"item": [ITEM]}, "release: missing (required)"),
    ({"release": {**RELEASE, "backend_boards": {"metal": ["M3"]}}, "item": [ITEM]},
     'release.backend_boards.metal: "metal" is not one of the release\'s backends (cpu, cuda)'),
    ({"release": {**RELEASE, "backend_boards": {"cuda": []}}, "item": [ITEM]},
     "release.backend_boards.cuda: name at least one board"),
    ({"release": {**RELEASE, "backend_boards": {"cuda": "H200"}}, "item": [ITEM]},
     "release.backend_boards.cuda: expected"),
])
def test_checklist_problems_name_file_and_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_checklist(data, path=C, version="1.0", measures=("speed",), quality=())
    assert any(line.startswith(f"{C}: ") and message in line for line in info.value.problems), info.value.problems


def test_checklist_defaults() -> None:
    spec = parse_checklist({"release": RELEASE, "item": [ITEM, {"id": "ci-green", "title": "CI", "manual": True}]},
                           path=C, version="1.2.0", changelog="NEWS.md")
    assert spec.release.version == "1.2.0" and spec.release.notes == ("NEWS.md",)
    assert spec.release.tag_requires == ("ci-green",)
    assert spec.item("gate").auto_kind == ("lane", "gate") and spec.item("ci-green").manual


def test_the_changelog_section_title_is_the_one_the_renderer_writes() -> None:
    from relgate.signoff.report import SECTION_TITLE
    from relgate.signoff.stage import _TITLE

    assert _TITLE == f"### {SECTION_TITLE}"


def test_a_backends_items_are_checked_on_its_boards_the_rest_on_the_releases() -> None:
    spec = parse_checklist({"release": {"boards": ["host:local"], "backends": ["cpu", "cuda", "rocm"],
                                        "backend_boards": {"cuda": ["NVIDIA H200", "NVIDIA GB10"]}},
                            "item": [ITEM]}, path=C, version="1.0")
    rel = spec.release
    assert rel.boards_for(("cuda",)) == ("NVIDIA H200", "NVIDIA GB10")
    assert rel.boards_for(("cpu",)) == rel.boards_for(()) == rel.boards_for(("rocm",)) == ("host:local",)
    assert rel.boards_for(("cpu", "cuda")) == ("host:local", "NVIDIA H200", "NVIDIA GB10")
    assert rel.all_boards == ("host:local", "NVIDIA H200", "NVIDIA GB10")  # evidence: every board
