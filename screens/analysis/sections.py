"""The analysis screen's run-wide panels: CoopEval's paper tables and one bordered panel
per report section the run has (:mod:`coop_tui.analysis.sections`).

A slow section not stored yet is built after the rest is shown; its panel says so until
its value arrives (:meth:`SectionsPanel.fill`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from coop_tui.analysis.sections import sections
from coop_tui.terminal import terminal_data


class PaperTables(Static):
    """CoopEval's tables for the whole run (every game and mechanism at once)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.border_title = "Paper tables: Mean / Fitness / DevRank, mean ± SE over replicates"

    def show(self, report: dict[str, Any], names: dict[str, str]) -> None:
        cells = report.get("tables") or []
        self.display = bool(cells)
        if cells:
            from coop_tui.analysis.coopeval_tables import render_rich

            self.update(Group(*render_rich(terminal_data(cells, names))))


class SectionsPanel(Vertical):
    """One bordered panel per report section the run has, in the sections' order."""

    def show(self, report: dict[str, Any], waiting: set[str], names: dict[str, str]) -> None:
        """A panel per section with a value, or still being built (``waiting``: those
        have a note until :meth:`fill`)."""
        self.remove_children()
        for section in sections():
            pending = section.key in waiting
            if not pending and not report.get(section.key):
                continue
            panel = Vertical(classes="an-section", id=f"an-section-{section.key}")
            panel.border_title = section.title
            self.mount(panel)
            if pending:
                panel.mount(Static(Text("computing… (stored for the next time once done)",
                                        style="dim italic")))
            else:
                _mount_section(panel, section, report[section.key], names)

    def fill(self, key: str, value: Any, names: dict[str, str]) -> None:
        """A slow section's value is ready: its panel shows it, or goes when it is empty."""
        found = self.query(f"#an-section-{key}")
        if not found:
            return
        panel = found.first(Vertical)
        if value:
            panel.remove_children()
            _mount_section(panel, next(s for s in sections() if s.key == key), value, names)
        else:
            panel.remove()


def _mount_section(panel: Vertical, section: Any, value: Any, names: dict[str, str]) -> None:
    if section.widgets is not None:
        panel.mount(*section.widgets(terminal_data(value, names)))
    else:  # Rich tables of names from imports and sweeps: shown escaped, long ones cut
        panel.mount(Static(Group(*section.render(terminal_data(value, names)))))
