"""The analysis screen's export bar: the folder to write to, CSV and Parquet buttons, and
the export worker.

The export runs in a thread (:func:`coop_tui.export.export_run`). What it says (writing,
written, failed) is posted as :class:`ExportBar.Status`; the files written as
:class:`ExportBar.Exported`. The screen shows the status on its line under the bar.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Input, Static

from coop_tui.export import ExportError, export_run
from coop_tui.screens.widgets import NavScreen
from coop_tui.terminal import widget_text


def failure_reason(exc: Exception) -> str:
    """Why an export failed, in a line: a missing engine, a read-only folder, …"""
    if isinstance(exc, ExportError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    return f"{type(exc).__name__}: {exc}"


class ExportBar(Horizontal):
    """"Export to" a folder (editable), as CSV or Parquet: every table of the run."""

    class Status(Message):
        """What the export is doing, or did."""

        def __init__(self, text: Text) -> None:
            super().__init__()
            self.text = text

    class Exported(Message):
        """The files an export wrote."""

        def __init__(self, paths: list[Path]) -> None:
            super().__init__()
            self.paths = paths

    def __init__(self, store: Any, run_id: str, folder: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.run_id = run_id
        self.folder = folder

    def compose(self) -> ComposeResult:
        yield Static("Export to", id="an-export-label")
        yield Input(str(self.folder), id="an-export-dir")
        yield Button("CSV", id="an-csv")
        yield Button("Parquet", id="an-parquet")

    @on(Button.Pressed, "#an-csv")
    def _csv(self) -> None:
        self.export("csv")

    @on(Button.Pressed, "#an-parquet")
    def _parquet(self) -> None:
        self.export("parquet")

    def export(self, fmt: str) -> None:
        """Export the run as ``fmt`` (csv, parquet) into the folder typed in the bar."""
        raw = self.query_one("#an-export-dir", Input).value.strip()
        if not raw:
            self.notify("type a directory to export to", severity="warning", timeout=3)
            return
        self.folder = Path(raw).expanduser()
        self.post_message(self.Status(Text(f"exporting {fmt} to {self.folder}…", style="yellow")))
        self._export(fmt, self.folder, self.screen)

    @work(thread=True, exclusive=True, group="export")
    def _export(self, fmt: str, out: Path, screen: NavScreen) -> None:
        try:
            paths = export_run(self.store.path, self.run_id, out, fmt)
        except Exception as exc:  # a missing engine, a read-only folder: say so on screen
            text = widget_text(f"✗ export failed: {failure_reason(exc)}", "bold red")
            screen.from_worker(self.post_message, self.Status(text))
            return
        screen.from_worker(self._exported, paths)

    def _exported(self, paths: list[Path]) -> None:
        self.post_message(self.Exported(list(paths)))
        names = ", ".join(p.name for p in paths)
        self.post_message(self.Status(Text(f"✓ wrote {names} to {paths[0].parent if paths else self.folder}",
                                           style="green")))
