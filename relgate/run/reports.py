"""Machine-readable reports of a run: JSON and JUnit XML, each written atomically."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from relgate.core.files import write_output
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts
from relgate.run.runner import RunSummary

__all__ = ["summary_json", "write_json_report", "write_junit", "write_running", "atomic_write"]


def atomic_write(path: Path, data: bytes) -> None:
    """Never half a report, never a device replaced; a failed write is exit 2 naming the file."""
    write_output(path, data, what="the report")


def summary_json(summary: RunSummary, *, require_all: bool = False) -> dict[str, Any]:
    facts = summary.facts
    return {
        "run_id": summary.run_id,
        "session": summary.session,
        "commit": facts.commit,
        "branch": facts.branch,
        "dirty": facts.dirty,
        "ok": summary.ok(require_all=require_all),
        "require_all": require_all,
        "interrupted": summary.interrupted,
        "counts": {v.value: summary.count(v) for v in Verdict},
        "steps": [
            {
                "step_id": o.step_id, "step": o.step.name, "lane": o.step.lane, "target": o.step.target,
                "host": o.host, "command": o.step.display(), "verdict": o.verdict.value, "reason": o.reason,
                "duration": round(o.duration, 3), "log": str(o.log_path) if o.log_path else None,
                "evidence": str(o.evidence) if o.evidence else None, "reused_from": o.reused_from,
                "warnings": [w.describe() for w in o.warnings],
                "warning_places": len({w.location for w in o.warnings}),
                "warning_lines": sum(w.printed for w in o.warnings),
                "tests": None if o.tests is None else {"runner": o.tests.runner, "passed": o.tests.passed,
                                                       "failed": o.tests.failed, "skipped": o.tests.skipped},
                "facts": dict(o.facts),  # where it really ran: its GPUs, a Slurm job's node and state, probes
            }
            for o in summary.outcomes
        ],
    }


def write_running(*, json_path: Path | None, junit_path: Path | None, run_id: str | None, session: str,
                  facts: GitFacts) -> None:
    """At a run's start: reports that say "running", never green, so an interrupted run
    leaves no earlier run's green report behind (the end replaces them atomically)."""
    note = "the run has not finished; if this stays, it was interrupted"
    if json_path is not None:
        data = {"run_id": run_id, "session": session, "commit": facts.commit, "branch": facts.branch,
                "dirty": facts.dirty, "ok": False, "status": "running", "note": note, "steps": []}
        atomic_write(json_path, (json.dumps(data, indent=2) + "\n").encode())
    if junit_path is not None:
        suite = ET.Element("testsuite", {"name": f"relgate.{session}", "tests": "1", "failures": "0",
                                         "errors": "1", "skipped": "0", "time": "0"})
        case = ET.SubElement(suite, "testcase", {"classname": f"{session}.relgate", "name": "running"})
        ET.SubElement(case, "error", {"message": note})
        ET.indent(suite)
        atomic_write(junit_path, ET.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n")


def write_json_report(summary: RunSummary, path: Path, *, require_all: bool = False) -> None:
    text = json.dumps(summary_json(summary, require_all=require_all), indent=2) + "\n"
    atomic_write(path, text.encode())


def write_junit(summary: RunSummary, path: Path, *, require_all: bool = False) -> None:
    """One testsuite per run, one testcase per step (classname: the lane)."""
    failures = summary.count(Verdict.FAIL) + (summary.count(Verdict.NOT_RUN) if require_all else 0)
    suite = ET.Element("testsuite", {
        "name": f"relgate.{summary.session}", "tests": str(len(summary.outcomes)),
        "failures": str(failures), "errors": str(summary.count(Verdict.ERROR)),
        "skipped": str(summary.count(Verdict.SKIP) + (0 if require_all else summary.count(Verdict.NOT_RUN))),
        "time": f"{sum(o.duration for o in summary.outcomes):.3f}",
    })
    props = ET.SubElement(suite, "properties")
    for name, value in (("commit", summary.facts.commit), ("dirty", str(summary.facts.dirty).lower()),
                        ("run_id", summary.run_id)):
        ET.SubElement(props, "property", {"name": name, "value": value})
    for o in summary.outcomes:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"{summary.session}.{o.step.lane or summary.session}", "name": o.step.name,
            "time": f"{o.duration:.3f}"})
        message = o.reason or ""
        if o.verdict is Verdict.FAIL or (require_all and o.verdict is Verdict.NOT_RUN):
            node = ET.SubElement(case, "failure", {"message": message or o.verdict.value})
            node.text = "\n".join([*(w.describe() for w in o.warnings), o.tail])
        elif o.verdict is Verdict.ERROR:
            node = ET.SubElement(case, "error", {"message": message})
            node.text = o.tail
        elif o.verdict in (Verdict.SKIP, Verdict.NOT_RUN):
            ET.SubElement(case, "skipped", {"message": f"{o.verdict.value}: {message}"})
        if o.log_path:
            ET.SubElement(case, "system-out").text = f"log: {o.log_path}"
    ET.indent(suite)
    atomic_write(path, ET.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n")
