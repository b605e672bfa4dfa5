"""No false green, round three (issue 23, items 1 and 2): a typo in checklist.toml, evidence that
is not evidence, a product that was not produced, an accept on a dirty tree, and secrets on a
manual run's command line and in evidence cells. Real copies of the examples, real runs."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import Project, copy_example, git

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


from relgate.core.errors import ManifestError  # noqa: E402
from relgate.manifest.checklist import parse_checklist  # noqa: E402

C = Path("m/checklist.toml")
REL: dict[str, Any] = {"boards": ["host:local"], "backends": ["cpu", "cuda"]}
GATE: dict[str, Any] = {"id": "gate", "title": "Gate", "auto": "lane:gate"}


@pytest.mark.parametrize(("data", "message"), [
    ({"release": {**REL, "backends": ["cpu", "cdua"]}, "item": [GATE]},
     'release.backends[1]: unknown backend "cdua" — did you mean "cuda"?'),
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
    ({"release": {**REL, "tag_requires": ["ci-gren"]}, "item": [GATE, {"id": "ci-green", "title": "CI", "manual": True}]},
     'release.tag_requires[0]: no item "ci-gren" — did you mean "ci-green"?'),
    ({"release": {**REL, "known_backends": [""]}, "item": [GATE]}, "release.known_backends[0]: must not be empty"),
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
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert "checklist.toml" not in done.stderr, done.stderr


# --- produces: a file the step did not write, whatever its modification time ------------------------

def _rows(project: Project) -> dict[str, dict]:
    done = project.relgate("status", "--json")
    assert done.returncode == 0, done.stderr
    return {r["step"]: r for r in json.loads(done.stdout)["steps"]}


def _builds(project: Project, run: str) -> None:
    (project.manifests / "builds.toml").write_text(
        f'[release.cpu]\nrun = "{run}"\nproduces = ["dist/engine.bin"]\n'
        '[[check]]\nname = "release-cpu"\nrelease = "cpu"\n')


def test_a_committed_product_whose_mtime_lies_in_the_future_was_not_produced(tinyinfer: Project) -> None:
    product = tinyinfer.root / "dist" / "engine.bin"
    product.parent.mkdir()
    product.write_bytes(b"\x7fELF committed, not built\n")
    tinyinfer.commit("a committed artifact")
    day = 24 * 3600
    os.utime(product, (product.stat().st_atime + day, product.stat().st_mtime + day))
    _builds(tinyinfer, "true")  # builds nothing
    done = tinyinfer.nox("host")
    assert done.returncode == 1, done.stdout
    row = _rows(tinyinfer)["release-cpu"]
    assert row["verdict"] == "fail", row
    assert row["reason"].startswith("not produced: dist/engine.bin modified after the step ended"), row["reason"]
    _builds(tinyinfer, "cp README.md dist/engine.bin")  # a step that writes it: its mtime is now
    again = tinyinfer.nox("host")
    assert again.returncode == 0, again.stdout
    assert _rows(tinyinfer)["release-cpu"]["verdict"] == "pass"
