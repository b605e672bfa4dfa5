"""A step's declared products (``produces``): a file the step did not write was not produced,
whatever its modification time. A real copy of the C example, real runs."""

from __future__ import annotations

import os

from conftest import Project

# --- produces: a file the step did not write, whatever its modification time ------------------------

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
    row = tinyinfer.ledger_rows()["release-cpu"]
    assert row["verdict"] == "fail", row
    assert row["reason"].startswith("not produced: dist/engine.bin modified after the step ended"), row["reason"]
    _builds(tinyinfer, "cp README.md dist/engine.bin")  # a step that writes it: its mtime is now
    again = tinyinfer.nox("host")
    assert again.returncode == 0, again.stdout
    assert tinyinfer.ledger_rows()["release-cpu"]["verdict"] == "pass"
