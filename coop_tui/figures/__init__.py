"""Paper figures from a run's report: ``coop-tui figures [RUN]``.

Each figure family (one seed paper) is one module here that registers ``Family(...)``
objects. A family's ``draw(report)`` reads only the report that ``coop-tui report --json``
prints (:func:`coop_tui.report.build_report` and its sections), so a figure can never
disagree with the table it illustrates; it returns the figures the run's data supports
(none when it has nothing for this family). Every figure is named after the paper figure
it corresponds to.

matplotlib is an optional extra (``pip install 'coop-tui[figures]'``) and is imported
only here, with the non-interactive Agg backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.errors import fail
from coop_tui.figures.style import RC
from coop_tui.plugins import import_plugins
from coop_tui.store import Store
from coop_tui.terminal import terminal_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from coop_tui.store import Store

FORMATS = ("png", "svg", "pdf")
INSTALL_HINT = "matplotlib is not installed; install the figures extra: pip install 'coop-tui[figures]'"


@dataclass(frozen=True)
class Drawn:
    """One figure: its file name (without extension), what it shows, and the figure."""

    name: str
    caption: str
    figure: Figure


@dataclass(frozen=True)
class Family:
    """The figures of one paper, drawn from a built report."""

    key: str
    title: str
    draw: Callable[[dict[str, Any]], list[Drawn]]
    order: int = 100


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    if family.key in _FAMILIES and _FAMILIES[family.key] is not family:
        raise ValueError(f"two figure families use the key {family.key!r}")
    _FAMILIES[family.key] = family
    return family


def families() -> list[Family]:
    """Every registered family, in order."""
    import_plugins(__name__, __path__, skip=("style",))
    return sorted(_FAMILIES.values(), key=lambda f: (f.order, f.key))


def figures_for(report: dict[str, Any]) -> list[Drawn]:
    """Every figure the report's data supports (matplotlib must be importable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Drawn] = []
    with plt.rc_context(RC):  # titles and labels set after the axes follow the style too
        for family in families():
            out.extend(family.draw(report))
    return out


def draw_figures(
    store: Store, run_id: str, out: str | Path, *, fmt: str = "png",
    devrank: str | None = None,
) -> list[Path]:
    """Build the run's report, draw its figures into ``out`` and return the files."""
    from coop_tui.report import build_report, strict_json

    report = json.loads(strict_json(build_report(store, run_id, devrank=devrank)))
    return save(figures_for(report), out, fmt)


def save(figures: list[Drawn], out: str | Path, fmt: str) -> list[Path]:
    """Write each figure to ``out/<name>.<fmt>`` (no dates inside) and close it."""
    import matplotlib.pyplot as plt

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for drawn in figures:
        path = folder / f"{drawn.name}.{fmt}"
        with plt.rc_context(RC):  # svg.hashsalt: the same ids in every file written
            drawn.figure.savefig(path, format=fmt, dpi=200, bbox_inches="tight",
                                 metadata=_metadata(fmt))
        plt.close(drawn.figure)
        written.append(path)
    return written


def _metadata(fmt: str) -> dict[str, Any]:
    """No creation date in the files: the same run draws byte-identical figures."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def figures_command(
    db_path: Path, ref: str | None, *, out: Path, fmt: str, devrank: str | None = None,
) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return fail(INSTALL_HINT)
    if not db_path.exists():
        return fail(f"no database at {db_path}; run a sweep first or pass --db")
    store = Store(db_path)
    run = store.resolve_run(ref)
    if run is None:
        return fail(f"no run {ref!r} in {db_path}" if ref else f"no runs in {db_path}")
    written = draw_figures(store, run["id"], out, fmt=fmt, devrank=devrank)
    run_id = terminal_text(run["id"], markup=False)  # a colleague's database may hold any id
    if not written:
        print(f"run {run_id} has no data any paper figure draws (see docs/figures.md)")
        return 0
    for path in written:
        print(terminal_text(str(path), markup=False))
    print(f"{len(written)} figure(s) of run {run_id} in {out}")
    return 0
