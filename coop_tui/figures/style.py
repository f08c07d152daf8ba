"""Shared look of the paper figures: sizes for a two-column paper, the Okabe-Ito
palette (safe for colour-blind readers) and small drawing helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SINGLE = 3.3
"""Width in inches of one column of a two-column paper."""
DOUBLE = 7.0
"""Width in inches of a figure across both columns."""

OKABE_ITO = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
)
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

RC = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "lines.linewidth": 1.3,
    "lines.markersize": 4,
    "pdf.fonttype": 42,
    "svg.hashsalt": "coop-tui",
}


def colour(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


def linestyle(i: int) -> str:
    """A second cue after the colour, once the palette repeats."""
    return LINESTYLES[(i // len(OKABE_ITO)) % len(LINESTYLES)]


def short(name: str, width: int = 28) -> str:
    """An agent name fit for a tick label: provider prefix dropped, long names cut."""
    label = name.split("/", 1)[1] if "/" in name else name
    return label if len(label) <= width else label[: width - 1] + "…"


def figure(width: float, height: float, ncols: int = 1, nrows: int = 1, **kw: Any) -> tuple[Any, Any]:
    """A figure under the paper style (matplotlib imported here, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False,
                                 layout="constrained", **kw)
    for ax in axes.flat:
        _style_axes(ax)
    return fig, axes


def _style_axes(ax: Any) -> None:
    for key, value in (("top", False), ("right", False)):
        ax.spines[key].set_visible(value)
    ax.tick_params(labelsize=RC["xtick.labelsize"])
    ax.title.set_fontsize(RC["axes.titlesize"])
    ax.xaxis.label.set_fontsize(RC["axes.labelsize"])
    ax.yaxis.label.set_fontsize(RC["axes.labelsize"])


def legend(ax: Any, **kw: Any) -> None:
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(**{"fontsize": RC["legend.fontsize"], "frameon": False, **kw})


def heatmap(
    ax: Any, matrix: Sequence[Sequence[float | None]], rows: Sequence[str], cols: Sequence[str],
    *, cmap: str = "viridis", vmin: float | None = None, vmax: float | None = None,
    label: str = "", fmt: str = "{:.2g}", fig: Any = None,
) -> Any:
    """An annotated matrix; missing cells (None) stay blank and are marked "–"."""
    import numpy as np

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), [short(c) for c in cols], rotation=40, ha="right")
    ax.set_yticks(range(len(rows)), [short(r) for r in rows])
    ax.spines[:].set_visible(False)
    finite = data[np.isfinite(data)]
    lo = vmin if vmin is not None else (finite.min() if finite.size else 0.0)
    hi = vmax if vmax is not None else (finite.max() if finite.size else 1.0)
    small = len(rows) * len(cols) <= 100
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            value = data[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "–", ha="center", va="center", fontsize=6, color="0.4")
            elif small:
                dark = (value - lo) / (hi - lo) < 0.5 if hi > lo else True
                if cmap in ("RdBu_r", "PuOr_r"):
                    dark = abs(value - (lo + hi) / 2) > (hi - lo) / 4
                ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=6,
                        color="white" if dark else "black")
    if fig is not None:
        bar = fig.colorbar(image, ax=ax, shrink=0.8)
        bar.set_label(label, fontsize=RC["axes.labelsize"])
        bar.ax.tick_params(labelsize=RC["xtick.labelsize"])
    return image


def slug(text: Any) -> str:
    """A file-name-safe piece."""
    out = "".join(ch if ch.isalnum() else "-" for ch in str(text).lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-") or "x"
