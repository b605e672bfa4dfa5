"""The features a reused lane file says a lane is run with (``init``, issue 34): a comment that
names one lane and ``--features X`` (``# gate: cargo test --features cuda --test …``), or a
``[target.NAME] command`` naming ``--features X`` for every target of that lane. Only features
the crate declares count; a lane whose sources disagree gets nothing (one line per target stays)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from relgate.core.schema import display_path, read_text
from relgate.manifest.lanes import LanesFile

__all__ = ["features_in", "lane_file_features"]

_FEATURES = re.compile(r"""(?:--features(?:=|\s+)|(?<!\S)-F\s*)("[^"]*"|'[^']*'|[^\s"']+)""")


def features_in(text: str) -> tuple[str, ...]:
    """Every feature ``--features X`` / ``--features=X`` / ``-F X`` names in ``text`` (commas or
    spaces between several), in order, once each."""
    out: list[str] = []
    for match in _FEATURES.finditer(text):
        value = match.group(1).strip("\"'")
        out += [f for f in re.split(r"[,\s]+", value) if f and f not in out]
    return tuple(out)


def lane_file_features(lanes: LanesFile, *, declared: Collection[str],
                       lanes_named: Collection[str]) -> dict[str, tuple[tuple[str, ...], str]]:
    """lane → (its features, where the file says so), for each lane in ``lanes_named`` whose
    every target's ``[target.NAME] command`` names the same declared features, else whose
    comments (those naming that lane and no other) name them."""
    by_lane: dict[str, list[str]] = {}
    for target, lane in lanes.assignments.items():
        by_lane.setdefault(lane, []).append(target)
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    commands = _target_commands(lanes.tables.get("target"))
    for lane in (n for n in lanes_named if n in by_lane):
        found = {features_in(commands.get(t, "")) for t in by_lane[lane]}
        if len(found) == 1 and (features := next(iter(found))) and set(features) <= set(declared):
            out[lane] = (features, f"every {lane}-lane [target.NAME] command in {lanes.path.name} names --features")
    said: dict[str, set[tuple[str, ...]]] = {}
    for line in read_text(lanes.path, display_path(lanes.path)).splitlines():
        comment = line.strip()
        named = [n for n in by_lane if n in lanes_named and re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", comment)]
        features = features_in(comment) if comment.startswith("#") and len(named) == 1 else ()
        if features:
            said.setdefault(named[0], set()).add(features)
    for lane, found in said.items():  # comments that disagree say nothing
        if lane not in out and len(found) == 1 and set(features := next(iter(found))) <= set(declared):
            out[lane] = (features, f"a comment in {lanes.path.name} runs the {lane} lane with --features")
    return out


def _target_commands(table: object) -> dict[str, str]:
    """target → its command as one line (a list is joined), from a ``[target.NAME]`` table."""
    if not isinstance(table, Mapping):
        return {}
    out = {}
    for name, spec in table.items():
        command = spec.get("command") if isinstance(spec, Mapping) else None
        if isinstance(command, list) and all(isinstance(a, str) for a in command):
            command = " ".join(command)
        if isinstance(command, str):
            out[str(name)] = command
    return out
