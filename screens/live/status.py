"""The live screen's status line: the session's state, progress and time left.

The time left comes from the session's model calls and their measured pace
(:mod:`coop_tui.eta`, as the batch progress line); a long answer leaves no event for
seconds, so the line also redraws itself on a clock while the session runs.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from coop_tui.screens.live.feed import LiveFeed
from coop_tui.session import Session
from coop_tui.terminal import terminal_text

ETA_TICK = 1.0
"""How often the status line's time left is redrawn while the session runs."""

STATUS_STYLES = {"running": "bold green", "paused": "bold yellow", "done": "bold cyan",
                 "failed": "bold red", "stopped": "bold magenta"}


class RunStatus(Static):
    """One line: status, progress, run, match and decisions so far (counted by the feed)."""

    def __init__(self, session: Session, feed: LiveFeed, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.session = session
        self.feed = feed

    def on_mount(self) -> None:
        self.set_interval(ETA_TICK, self._tick)

    def _tick(self) -> None:
        """The ETA counts down between events (a long answer leaves no event for seconds)."""
        if not self.session.finished:
            self.show()

    def show(self) -> None:
        s = self.session
        out = Text()
        out.append(f" {s.status} ", style=f"{STATUS_STYLES.get(s.status, 'bold')} reverse")
        progress = getattr(s, "progress", None)  # a replay has none: nothing is called
        if progress is not None:  # first: a narrow terminal cuts the line's end
            out.append(f"  {progress()}", style="cyan")
        if s.run_id:
            out.append(f"  run {s.run_id}", style="dim")
        total = getattr(s, "matches_total", 1)
        if total and total > 1:
            out.append(f"  match {max(self.feed.match_index, 1)}/{total}", style="dim")
        out.append(f"  decisions {self.feed.decisions}", style="dim")
        if s.status == "paused":
            out.append("  the next decision waits — p resumes", style="yellow")
        if s.error and s.status in ("failed", "stopped"):
            out.append(f"  {terminal_text(s.error, markup=False, limit=500)}", style="red")
        self.update(out)
