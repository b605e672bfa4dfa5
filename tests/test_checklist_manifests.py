"""checklist.toml names only declared things: every backend, board and item id it refers to is
declared (a typo is exit 2 at load, never a complete sign-off), and the bundled checklists do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Project, copy_example
from relgate.core.errors import ManifestError
from relgate.manifest.checklist import parse_checklist

# --- checklist.toml: every backend, board and item id it names is declared ------------------------

ONE_ITEM = """\
[release]
boards = ["host:local"]
backends = ["cpu"]
tag_requires = []

[[item]]
id = "cuda"
title = "CUDA backend tested"
auto = "session:gate"
targets = ["kernels-cuda"]
applies = ["cdua"]
"""


def test_a_typo_in_applies_is_exit_2_at_load_not_a_complete_signoff(tinyinfer: Project) -> None:
    (tinyinfer.manifests / "checklist.toml").write_text(ONE_ITEM)
    done = tinyinfer.nox("signoff")
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'checklist.toml: item[0].applies[0]: unknown backend "cdua" — did you mean "cuda"?' in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tinyinfer.home / "signoff" / "signoff.json").exists()
    # spelled right, the item is outside the release's backends: not-applicable, and complete
    (tinyinfer.manifests / "checklist.toml").write_text(ONE_ITEM.replace('"cdua"', '"cuda"'))
    fixed = tinyinfer.nox("signoff")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    doc = json.loads((tinyinfer.home / "signoff" / "signoff.json").read_text())
    assert doc["items"][0]["status"] == "not-applicable"


C = Path("m/checklist.toml")
REL: dict[str, Any] = {"boards": ["host:local"], "backends": ["cpu", "cuda"]}
GATE: dict[str, Any] = {"id": "gate", "title": "Gate", "auto": "lane:gate"}


@pytest.mark.parametrize(("data", "message"), [
    ({"release": {**REL, "backends": ["cpu", "cdua"]}, "item": [GATE]},
     'release.backends[1]: unknown backend "cdua" — did you mean "cuda"?'),
    ({"release": REL, "item": [{**GATE, "applies": ["CUDA"]}]},
     'item[0].applies[0]: unknown backend "CUDA" — did you mean "cuda"?'),
    ({"release": REL, "item": [{**GATE, "applies": ["rcom"]}]},
     'item[0].applies[0]: unknown backend "rcom" — did you mean "rocm"?'),
    ({"release": {**REL, "backend_boards": {"cdua": ["NVIDIA H200"]}}, "item": [GATE]},
     'release.backend_boards.cdua: unknown backend "cdua" — did you mean "cuda"?'),
    ({"release": {**REL, "backends": [], "backend_boards": {"cdua": ["NVIDIA H200"]}}, "item": [GATE]},
     'release.backend_boards.cdua: unknown backend "cdua"'),
    ({"release": {**REL, "backend_boards": {"cuda": ["NVIDIA H200"]}},
      "item": [{**GATE, "boards": ["NVIDIA H2O0"]}]},
     'item[0].boards[0]: unknown board "NVIDIA H2O0" — did you mean "NVIDIA H200"?'),
    ({"release": {**REL, "boards": ["host:lcoal"]}, "item": [GATE]},
     'release.boards[0]: "host:lcoal": no host "lcoal" is declared — did you mean "local"?'),
    ({"release": {**REL, "backend_boards": {"cuda": ["host:gpu"]}}, "item": [GATE]},
     'release.backend_boards.cuda[0]: "host:gpu": no host "gpu" is declared'),
    ({"release": {**REL, "tag_requires": ["ci-gren"]},
      "item": [GATE, {"id": "ci-green", "title": "CI", "manual": True}]},
     'release.tag_requires[0]: no item "ci-gren" — did you mean "ci-green"?'),
    ({"release": {**REL, "known_backends": [""]}, "item": [GATE]}, "release.known_backends[0]: must not be empty"),
    ({"release": {"boards": ["host:local"]}, "item": [{**GATE, "applies": ["cpu"]}]},
     "release.backends: missing: item[0].applies names backends; list the ones this release covers"),
    ({"release": {"boards": ["host:local"], "backends": []}, "item": [{**GATE, "applies": ["cuda"]}]},
     "release.backends: empty: item[0].applies names backends"),
])
def test_every_name_the_checklist_refers_to_is_declared(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_checklist(data, path=C, version="1.0", hosts=("local",))
    assert any(line.startswith(f"{C}: ") and message in line for line in info.value.problems), info.value.problems


def test_a_backend_of_the_projects_own_is_declared_in_known_backends() -> None:
    data = {"release": {**REL, "backends": ["cpu", "hexagon"]}, "item": [{**GATE, "applies": ["hexagon"]}]}
    with pytest.raises(ManifestError):
        parse_checklist(data, path=C, version="1.0")
    spec = parse_checklist({**data, "release": {**data["release"], "known_backends": ["hexagon"]}}, path=C,
                           version="1.0")
    assert spec.item("gate").applies == ("hexagon",)
    ok = parse_checklist({"release": {**REL, "backend_boards": {"cuda": ["NVIDIA H200"]}},
                          "item": [{**GATE, "boards": ["NVIDIA H200", "host:local"]}]}, path=C, version="1.0",
                         hosts=("local",))
    assert ok.item("gate").boards == ("NVIDIA H200", "host:local")


def test_the_bundled_checklists_name_only_declared_things(tmp_path: Path) -> None:
    for name in ("tinyinfer", "scankern"):
        (tmp_path / name).mkdir()
        project = copy_example(tmp_path / name, name)
        done = project.relgate("check")
        assert done.returncode == 0, done.stdout + done.stderr  # the census of each is clean too
        assert "checklist.toml" not in done.stderr, done.stderr
