"""``max_skipped`` from a clean run: the lines ``relgate init`` writes, and what ``init --check``
reports. The counts come from the ledger, read by the ``init`` stage (above this floor) and
handed down as plain data: target → (skipped, total, which run they came from)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from relgate.core.counts import skip_limit_text
from relgate.core.schema import display_path

if TYPE_CHECKING:
    from relgate.manifest.lanes import LanesSpec

__all__ = ["Skips", "SKIP_HINT", "max_skipped_line", "skip_drift"]

Skips = Mapping[str, tuple[int, int, str]]  # target → (skipped, total, "run ID at COMMIT: …")

SKIP_HINT = ("# max_skipped: no clean run of the lanes at HEAD is recorded. Run the lanes once on a clean tree,\n"
             "# then relgate init --dry-run shows each target's max_skipped from that run (--force writes it);\n"
             "# relgate init --check names a target whose clean run skipped more than its max_skipped.")


def max_skipped_line(skips: Skips | None, name: str) -> str | None:
    """``max_skipped = N   # the skips of …`` for a target whose clean run skipped tests, else None."""
    if not skips or name not in skips or skips[name][0] <= 0:
        return None
    skipped, total, source = skips[name]
    return f"max_skipped = {skipped}   # the skips of the clean {source} (more fail the lane)"


def skip_drift(lanes: LanesSpec, skips: Skips) -> list[str]:
    """One line per target whose recorded clean run skipped more tests than its ``max_skipped``
    (the target's, else its lane's) allows."""
    out = []
    for target, (skipped, total, source) in sorted(skips.items()):
        opts = lanes.options.get(target)
        lane = lanes.lanes.get(lanes.assignments.get(target, ""))
        limit = opts.max_skipped if opts is not None and opts.max_skipped is not None else (
            lane.max_skipped if lane is not None else None)
        if limit is None or not skipped:
            continue
        count, share = limit
        if skipped > count if count is not None else skipped > (share or 0) * total:
            where = lanes.option_files.get(target, lanes.file.path)
            out.append(f"{display_path(where)}: target.{target}.max_skipped = {skip_limit_text(limit)}, but the "
                       f"clean {source} (raise max_skipped, or find why)")
    return out
