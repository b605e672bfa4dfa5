"""The text of each file ``relgate init`` writes, from what it read (pure: no I/O).

One renderer per file: ``project.toml``, ``lanes.toml`` (a row per target, ``# "name" = "?"``
for one it cannot place), ``package.toml`` around the kind's own lines, ``checklist.toml``, a
commented ``measurements.toml``, ``hosts/local.toml`` and the ``noxfile.py``. ``builds.toml`` and
the ``package.toml`` lines are the kind adapter's (``ProjectKind.builds_toml``, ``package_lines``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from relgate.core.record import record
from relgate.core.text import inert
from relgate.kinds.found import UNASSIGNED, Found
from relgate.kinds.registry import kind_of
from relgate.kinds.writing import needs_shell, quote
from relgate.manifest.keys import BUILTIN_LANES
from relgate.manifest.skip_limits import SKIP_HINT, Skips, max_skipped_line

__all__ = ["UNASSIGNED", "Reading", "project_toml", "lanes_toml", "skip_tables", "lane_settings_toml", "package_toml",
           "checklist_toml", "measurements_toml", "host_toml", "NOXFILE", "quote", "env_prefix"]

@record
class Reading:
    """What init read: the project's kind and what its adapter found (name, version, source, targets …)."""

    kind: str
    facts: Found  # what the kind's adapter read
    judged: tuple[tuple[str, str, str], ...] = ()  # (target, lane or "?", what: "test tests/x.rs")

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def version(self) -> str | None:
        return self.facts.version

    @property
    def source(self) -> str:
        """What was read: "cargo metadata", "Cargo.toml", "make -pRrq", "pyproject.toml [project]" …"""
        return self.facts.source


def env_prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def project_toml(r: Reading, *, rel_root: str, lanes: str | None, changelog: str | None) -> str:
    lines = [f"# Written by relgate init from {inert(r.source)}. Paths are relative to this folder.", "[project]",
             f"name = {quote(r.name)}", f"root = {quote(rel_root)}", f"kind = {quote(r.kind)}"]
    if r.version:
        lines.append(f"version = {quote(r.version)}")
    if changelog:
        lines.append(f"changelog = {quote(changelog)}")
    lines.append(f'# evidence_env = "{env_prefix(r.name)}_EVIDENCE"   # the variable your tests append evidence '
                 "cells to (default RELGATE_EVIDENCE)")
    if lanes is not None:
        lines.append(f"lanes = {quote(lanes)}   # the project's own lane table")
    return "\n".join(lines)


def lanes_toml(r: Reading, skips: Skips | None = None) -> str:
    """The [lanes] table, each target the kind found with the command that runs it alone, and
    ``max_skipped`` per target from the clean run ``skips`` (None: no clean run recorded, a
    commented hint instead)."""
    rows = ["# Which lane each target runs in. A target marked \"?\" has none yet: the census names it",
            f"# until it gets one ({', '.join(BUILTIN_LANES)}, or a [lane.NAME] of your own).",
            "", "[lanes]"]
    for name, lane, what in r.judged:
        row = f"{quote(name)} = {quote(lane)}"
        what = inert(what)  # read from the repository: one comment line, whatever it holds
        rows.append(f"# {row}   # {what}" if lane == UNASSIGNED else f"{row}   # {what}")
    found = r.facts
    rows += ["", *found.targets_note] if found.targets and found.targets_note else []
    for t in found.targets:
        rows += ["", f"[target.{quote(t.name)}]"] + ([f"path = {quote(t.path)}"] if t.path else [])
        rows.append(f"command = {quote(t.command)}")
        rows += ["shell = true"] if needs_shell(t.command) else []
        if t.requires:
            rows.append("requires = [" + ", ".join(quote(k) for k in t.requires) + "]   # elsewhere: not run")
        rows += [line] if (line := max_skipped_line(skips, t.name)) else []
    command = kind_of(r.kind).example_command
    if not found.targets and command is not None:
        rows += ["", f"# A {r.kind} project declares its targets here, each with the command that runs it:",
                 '# "smoke" = "gate"', "# [target.smoke]", '# path = "tests/smoke.sh"', f"# command = {quote(command)}"]
    tabled = {t.name for t in found.targets}
    rows += skip_tables(skips, [name for name, lane, _what in r.judged if lane != UNASSIGNED and name not in tabled])
    return "\n".join(rows + _skip_hint(r, skips))


def skip_tables(skips: Skips | None, names: Sequence[str]) -> list[str]:
    """``[target.NAME] max_skipped = …`` for each of ``names`` whose clean run skipped tests."""
    rows: list[str] = []
    for name in names:
        if line := max_skipped_line(skips, name):
            rows += ["", f"[target.{quote(name)}]", line]
    return rows


def _skip_hint(r: Reading, skips: Skips | None) -> list[str]:
    return ["", SKIP_HINT] if skips is None and any(lane != UNASSIGNED for _, lane, _ in r.judged) else []


def lane_settings_toml(settings: dict[str, tuple[tuple[str, ...], bool, str]]) -> str:
    """``[lane.gate] features = ["cuda"]`` (and ``requires = ["cuda"]`` for a CUDA feature) for
    each lane whose every target needs those features, with why init says so."""
    out: list[str] = []
    for lane, (features, gpu, why) in settings.items():
        out += ["", f"# {why}: without it, each runs 0 tests", f"[lane.{lane}]",
                f"features = [{', '.join(quote(f) for f in features)}]"]
        if gpu:
            out.append('requires = ["cuda"]   # a host with a GPU; elsewhere the lane is '
                       '"not run: no host offers cuda"')
    return "\n".join(out)


def package_toml(r: Reading, *, lanes: str | None) -> str:
    pkg, publish = kind_of(r.kind).package_lines(r.facts, lanes=lanes)
    return "\n".join(["# What `nox -s package_verify` and `nox -s publish_dry_run` check.", "", "[package]", *pkg,
                      "", "[publish]", *publish])


#: Lanes of per-board instruments run one at a time by name: their items are attested, not auto.
MANUAL_LANES = {"record": "Record-lane captures re-recorded where this release changed them (run by name)",
                "qualification": "Qualification tools run on each board and toolkit of the release (run by name)"}


def checklist_toml(r: Reading, *, lanes_used: Sequence[str]) -> str:
    package = 'auto = "package"'
    if r.facts.package_steps:
        package += "\ntargets = [" + ", ".join(quote(s) for s in r.facts.package_steps) + "]"
    items = [("host", "Host checks passed (census, release builds, tests, diff check)", 'auto = "session:host"'),
             ("no-warnings", "No compiler warning in any release or test build" if kind_of(r.kind).test_build_warnings
              else "No compiler warning in any release build", 'auto = "warnings"'),
             *((f"lane-{lane}", f"Every {lane}-lane target passed on every board", f'auto = "lane:{lane}"')
               if lane not in MANUAL_LANES else
               (f"lane-{lane}", MANUAL_LANES[lane], "manual = true   # attested, or a run linked with "
                                                   f"relgate run --item lane-{lane} -- nox -s {lane} -- NAME")
               for lane in lanes_used),
             ("evidence", "Evidence clean against the last accepted release", 'auto = "evidence"'),
             ("package", "Package built from the commit and verified offline", package),
             ("ci-green", "CI is green on the release commit", "manual = true"),
             ("maintainer-approval", "A maintainer approved the release", "manual = true")]
    out = ["# The sign-off: `nox -s signoff` evaluates every item for the candidate commit; `nox -s tag`",
           "# refuses until it is complete. Boards: the machines the release is qualified on (a host",
           "# without a GPU board is \"host:NAME\").", "", "[release]", 'boards = ["host:local"]',
           'tag_requires = ["ci-green", "maintainer-approval"]']
    for item_id, title, how in items:
        out += ["", "[[item]]", f"id = {quote(item_id)}", f"title = {quote(title)}", how]
    return "\n".join(out)


def measurements_toml(r: Reading) -> str:
    return "\n".join([
        "# Measurements for the sign-off: what a bench target measures and the policy that compares the",
        "# previous release with the candidate (see docs/manifests.md). An example, to fill in:",
        "#",
        "# [measure.speed]",
        '# target = "my_bench"                  # the bench-lane target that writes the rows',
        f'# file_env = "{env_prefix(r.name)}_MEASURE"    # relgate points it at a fresh file (or output = "stdout")',
        '# format = "csv"                       # csv | tsv | jsonl | kv',
        '# key = ["case"]                       # the columns that name a row',
        '# metrics = { ns_per_iter = "lower" }  # higher | lower | equal is better',
        '# metadata = ["board", "commit", "source_hash"]',
        "# runs = 3",
        "# warmup = 1",
    ])


def host_toml() -> str:
    return "\n".join([
        "# This machine. Board, driver, toolkit and capabilities (nvcc, cuda, sm90, …) are detected",
        "# (nvidia-smi, nvcc --version, tools on PATH); anything declared here is added.",
        "[host]", 'name = "local"', 'kind = "local"', "detect = true"])


#: The noxfile ``init`` writes (``str.format`` with ``manifests``): a template file beside this
#: module, so that the engine itself never imports nox (only the generated noxfile does).
NOXFILE = (Path(__file__).resolve().parent / "templates" / "noxfile.py.tmpl").read_text(encoding="utf-8")
