"""score_distribution.png: one stacked bar per run, the share of instances in each score range."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from aac.eval.stats import SCORES, score_histogram

LABELS = {1: "[1, 2)", 2: "[2, 3)", 3: "[3, 4)", 4: "[4, 5)", 5: "5"}
COLORS = ("#b2182b", "#ef8a62", "#fddbc7", "#67a9cf", "#2166ac")  # bad (red) to good (blue)


def plot_score_distribution(runs: Mapping[str, Sequence[float]], path: str | Path) -> Path:
    """Horizontal stacked bars (percent of instances) of description scores, one bar per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    hists = [score_histogram(runs[n]) for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.6))
    left = [0.0] * len(names)
    for k, color in zip(SCORES, COLORS):
        widths = [h[str(k)] for h in hists]
        ax.barh(names, widths, left=left, color=color, edgecolor="white", label=LABELS[k])
        for y, (x0, w) in enumerate(zip(left, widths)):
            if w >= 6:  # label only segments wide enough to read
                ax.text(x0 + w / 2, y, f"{w:.0f}", ha="center", va="center", fontsize=8)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of instances")
    ax.invert_yaxis()  # first run on top
    ax.legend(title="description score", ncol=5, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False, fontsize=8, title_fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
