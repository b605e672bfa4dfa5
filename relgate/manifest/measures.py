"""``measurements.toml``: what a bench target measures, the metadata every row must carry,
and the policy that compares the previous release with the candidate.

    [measure.scan]
    target = "scan_bench"                 # the lane target that produces the rows
    file_env = "SCANKERN_MEASURE"         # relgate points it at a fresh file … or output = "stdout"
    format = "csv"                        # csv | tsv | jsonl | kv
    key = ["kernel", "n"]                 # the columns that name a row
    metrics = { ns_per_elem = "lower" }   # higher | lower | equal is better
    metadata = ["board", "toolkit", "commit", "variant"]   # required in every row
    vary = ["commit", "source_hash"]      # metadata that may differ between previous and candidate
    runs = 3                              # runs per batch …
    warmup = 1                            # … the first ones discarded
    rerun_above = 0.05                    # the ratio's interval wholly within: pass; wholly beyond: slower
    block_above = 0.10                    # … wholly beyond this: block; straddling: another batch, pooled
    confidence = 0.95                     # the least confidence of an interval (the bound asks for more)
    max_batches = 4                       # still straddling after this many batches: undecided

    [quality.scorer]
    target = "score"
    output = "stdout"
    format = "kv"
    select = ["summary", "api_summary"]   # kv: only these lines (their first word)
    bands = { first_match = ">= 95", top1_rate = ">= 0.94" }
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relgate.core.record import record
from relgate.core.schema import Checker
from relgate.manifest.keys import DIRECTIONS, FORMATS, MEASUREMENTS

__all__ = ["FORMATS", "DIRECTIONS", "FILLED", "Band", "MeasureSpec", "QualitySpec", "MeasurementsSpec",
           "parse_measurements", "parse_band"]

FILLED = ("board", "driver", "toolkit", "host", "commit", "dirty", "source_hash")  # relgate knows these
_DEFAULT_VARY = ("commit", "dirty", "host", "source_hash", "release")
_BAND = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_OPS = {">=": float.__ge__, "<=": float.__le__, "==": float.__eq__, ">": float.__gt__, "<": float.__lt__}


@record
class Band:
    metric: str
    op: str
    bound: float

    def holds(self, value: float) -> bool:
        return bool(_OPS[self.op](float(value), self.bound))

    def display(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


@record
class _Source:
    name: str
    target: str
    file_env: str | None  # None: the rows come from the target's output
    format: str
    key: tuple[str, ...]
    select: tuple[str, ...]  # kv: the first words of the lines that are rows (empty: every k=v line)
    source: Path


@record
class MeasureSpec(_Source):
    metrics: Mapping[str, str]  # metric → higher | lower | equal
    metadata: tuple[str, ...]
    vary: tuple[str, ...]
    runs: int
    warmup: int
    rerun_above: float
    block_above: float
    args: tuple[str, ...] = ()
    confidence: float = 0.95  # of the ratio's interval (relgate.measure.judge)
    max_batches: int = 4  # batches pooled before a row that still straddles is undecided
    false_alarm: float = 0.01  # per board: identical code gets any slower/block at most this often
    power: float = 0.95  # the runs a decision needs are stated at this power


@record
class QualitySpec(_Source):
    bands: tuple[Band, ...]
    metadata: tuple[str, ...] = ()


@record
class MeasurementsSpec:
    measures: Mapping[str, MeasureSpec]
    quality: Mapping[str, QualitySpec]
    source: Path


def parse_band(metric: str, text: str) -> Band | None:
    m = _BAND.match(text)
    return None if m is None else Band(metric=metric, op=m.group(1), bound=float(m.group(2)))


_MEASURE, _QUALITY = MEASUREMENTS.top("measure").entry(), MEASUREMENTS.top("quality").entry()
_MEASURE_KEYS = _MEASURE.names()
_QUALITY_KEYS = _QUALITY.names()


def _common(c: Checker, name: str, t: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    file_env, output = c.get(t, prefix, "file_env", str), c.get(t, prefix, "output", str)
    if (file_env is None) == (output is None):
        c.problem(prefix, 'say where the rows come from: file_env = "VAR" or output = "stdout" (one of them)')
    if output is not None and output != "stdout":
        c.problem(f"{prefix}.output", f'unknown value "{output}" (only "stdout"; or use file_env)')
    if file_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", file_env):
        c.problem(f"{prefix}.file_env", f'"{file_env}" is not an environment variable name')
    return dict(name=name, target=c.get(t, prefix, "target", str, ""), file_env=file_env,
                format=c.choice(t, prefix, "format", FORMATS, default="csv") or "csv",
                key=tuple(c.string_list(t, prefix, "key")), select=tuple(c.string_list(t, prefix, "select")),
                source=c.path)


def _fraction(c: Checker, t: Mapping[str, Any], prefix: str, key: str, default: float) -> float:
    value = c.get(t, prefix, key, float, default)
    if not 0 <= value < 10:
        c.problem(f"{prefix}.{key}", "must be a fraction such as 0.05 (5 %)")
        return default
    return float(value)


def parse_measurements(data: Mapping[str, Any], *, path: Path) -> MeasurementsSpec:
    c = Checker(path)
    c.keys(data, "", MEASUREMENTS.names())
    measures: dict[str, MeasureSpec] = {}
    for name, t in c.tables(data, "", "measure").items():
        prefix = f"measure.{name}"
        c.keys(t, prefix, _MEASURE_KEYS, required=_MEASURE.required_names())
        base = _common(c, name, t, prefix)
        metrics: dict[str, str] = {}
        for metric, direction in c.string_map(t, prefix, "metrics").items():
            if direction not in DIRECTIONS:
                c.problem(f"{prefix}.metrics.{metric}", f'unknown direction "{direction}" (higher, lower or equal)')
            metrics[metric] = direction
        if "metrics" in t and not metrics:
            c.problem(f"{prefix}.metrics", "name at least one metric and its direction")
        runs = c.get(t, prefix, "runs", int, 1)
        warmup = c.get(t, prefix, "warmup", int, 0)
        if runs < 1:
            c.problem(f"{prefix}.runs", "must be at least 1")
        if warmup < 0 or warmup >= max(runs, 1):
            c.problem(f"{prefix}.warmup", f"must be between 0 and runs - 1 ({max(runs, 1) - 1})")
        rerun = _fraction(c, t, prefix, "rerun_above", 0.05)
        block = _fraction(c, t, prefix, "block_above", 0.10)
        if block < rerun:
            c.problem(f"{prefix}.block_above", f"must not be below rerun_above ({rerun:g})")
        confidence = c.get(t, prefix, "confidence", float, 0.95)
        if not 0.5 <= confidence < 1:
            c.problem(f"{prefix}.confidence", "must be a probability from 0.5 to below 1, such as 0.95")
            confidence = 0.95
        max_batches = c.get(t, prefix, "max_batches", int, 4)
        if max_batches < 1:
            c.problem(f"{prefix}.max_batches", "must be at least 1")
            max_batches = 4
        false_alarm = c.get(t, prefix, "false_alarm", float, 0.01)
        if not 0 < false_alarm < 0.5:
            c.problem(f"{prefix}.false_alarm", "must be a probability above 0 and below 0.5, such as 0.01")
            false_alarm = 0.01
        power = c.get(t, prefix, "power", float, 0.95)
        if not 0.5 <= power < 1:
            c.problem(f"{prefix}.power", "must be a probability from 0.5 to below 1, such as 0.95")
            power = 0.95
        overlap = set(base["key"]) & set(metrics)
        if overlap:
            c.problem(f"{prefix}.key", f"{sorted(overlap)[0]} is a metric, not a key column")
        measures[name] = MeasureSpec(**base, metrics=metrics, metadata=tuple(c.string_list(t, prefix, "metadata")),
                                     vary=tuple(c.string_list(t, prefix, "vary")) if "vary" in t else _DEFAULT_VARY,
                                     runs=max(runs, 1), warmup=max(warmup, 0), rerun_above=rerun,
                                     block_above=block, args=tuple(c.string_list(t, prefix, "args")),
                                     confidence=float(confidence), max_batches=max_batches,
                                     false_alarm=float(false_alarm), power=float(power))
    quality: dict[str, QualitySpec] = {}
    for name, t in c.tables(data, "", "quality").items():
        prefix = f"quality.{name}"
        c.keys(t, prefix, _QUALITY_KEYS, required=_QUALITY.required_names())
        base = _common(c, name, t, prefix)
        bands = []
        for metric, text in c.string_map(t, prefix, "bands").items():
            band = parse_band(metric, text)
            if band is None:
                c.problem(f"{prefix}.bands.{metric}", f'"{text}" is not a band (">= 95", "<= 2.5", "== 0")')
            else:
                bands.append(band)
        if "bands" in t and not bands and not c.problems:
            c.problem(f"{prefix}.bands", "name at least one band")
        if name in measures:
            c.problem(prefix, f"measure.{name} has the same name; names are shared by both tables")
        quality[name] = QualitySpec(**base, bands=tuple(bands), metadata=tuple(c.string_list(t, prefix, "metadata")))
    c.raise_if_problems()
    return MeasurementsSpec(measures=measures, quality=quality, source=Path(path))
