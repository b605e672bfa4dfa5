"""Optional pictures (the ``plots`` extra, matplotlib): one chart per measure and board,
previous against candidate per metric. The tables stay the source of truth; without
matplotlib there are no pictures and nothing else changes."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from relgate.measure.results import Comparison

__all__ = ["available", "render_plots"]


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def render_plots(comparisons: Mapping[str, Comparison], keys: Mapping[str, Sequence[str]]
                 ) -> dict[tuple[str, str], tuple[str, bytes]]:
    """(measure, board) → (file name, PNG bytes); empty without matplotlib (or without a
    compared row: then matplotlib, which costs seconds to import, is not imported at all)."""
    if not any(b.results for comp in comparisons.values() for b in comp.boards) or not available():
        return {}
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.figure import Figure

    from relgate.measure.specs import row_label

    out: dict[tuple[str, str], tuple[str, bytes]] = {}
    for name, comp in sorted(comparisons.items()):
        for b in comp.boards:
            if not b.results:
                continue
            labels = [f"{row_label(r.key, keys.get(name, ()))}\n{r.metric}" for r in b.results]
            fig = Figure(figsize=(max(4.0, 1.2 * len(labels)), 3.2), dpi=80)
            ax = fig.subplots()
            xs = range(len(labels))
            ax.bar([x - 0.2 for x in xs], [1.0 for _ in labels], width=0.4, label=f"release {b.previous.release}"
                   if b.previous else "previous")
            ax.bar([x + 0.2 for x in xs], [r.ratio for r in b.results], width=0.4, label="candidate")
            ax.set_xticks(list(xs), labels, fontsize=7)
            ax.set_ylabel("relative to previous")
            ax.set_title(f"{name} on {b.board}: {b.verdict}", fontsize=9)
            ax.legend(fontsize=7)
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", metadata={"Software": None})
            plt.close("all")
            safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{name}-{b.board}")
            out[(name, b.board)] = (str(Path("plots") / f"{safe}.png"), buf.getvalue())
    return out
