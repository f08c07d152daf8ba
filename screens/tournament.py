"""The tournament view of a team tournament (super-additive cooperation), shown above the live panes.

It is fed the live screen's events and keeps its own tally, so it works the same for a
live tournament and a replay: standings per group and player, rounds used against the
budget, who is playing whom (and which round of their match), who left which match, and
the winners once the tournament summary arrives. It never reads the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from coop_tui.events import PhaseDone, RoundDone
from coop_tui.screens.widgets import plain
from coop_tui.terminal import NAME_WIDTH, widget_text


class TournamentView(Static):
    """Standings, budgets, the current pairing and recent exits of one tournament."""

    DEFAULT_CSS = """
    TournamentView { height: auto; max-height: 14; border: round $accent; padding: 0 1; }
    """

    def __init__(self, condition: dict[str, Any], seat_names: Sequence[str], **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.structure = str(condition.get("structure", "SA"))
        self.team_size = int(condition.get("team_size") or 1)
        self.budget = condition.get("budget")
        self.max_rounds = condition.get("rounds")
        self.names = list(seat_names)
        n = len(self.names)
        self.points = [0.0] * n
        self.used = [0] * n
        self.current: tuple[int, tuple[int, ...], int] | None = None
        """(pairing, seats, round of that match) of the last round played."""
        self.exits: list[str] = []
        self.winners: list[int] | None = None
        self.final: list[float] | None = None
        self.border_title = plain(f"Tournament · {self.structure}")

    # ------------------------------------------------------------ events
    def apply(self, event: Any) -> None:
        if isinstance(event, RoundDone) and "pairing" in event.info:
            seats = tuple(event.seats or range(len(event.payoffs)))
            for pos, seat in enumerate(seats):
                if seat < len(self.points):
                    self.points[seat] += event.payoffs[pos]
                    self.used[seat] += 1
            self.current = (int(event.info["pairing"]), seats, int(event.info.get("match_round", 0)))
        elif isinstance(event, PhaseDone) and event.phase == "exit":
            gone = [int(s) for s, left in event.info.get("leave", {}).items() if left]
            for seat in gone:
                other = [s for s in (self.current[1] if self.current else ()) if s != seat]
                against = f" (vs Agent #{other[0] + 1})" if other else ""
                self.exits.append(f"Agent #{seat + 1} left match {event.info.get('pairing', 0) + 1}{against}")
        elif isinstance(event, PhaseDone) and event.phase == "tournament":
            self.winners = list(event.info.get("winners", []))
            self.final = list(event.info.get("final", []))
            self.points = [float(x) for x in event.info.get("points", self.points)]
            self.used = [int(x) for x in event.info.get("used", self.used)]
        else:
            return
        self.update(self.render_table())

    # ------------------------------------------------------------ rendering
    def group_of(self, seat: int) -> int:
        return seat // self.team_size

    def render_table(self) -> Group:
        table = Table(expand=True, box=None, pad_edge=False)
        for col in ("group", "player", "agent", "points", "rounds used", "now"):
            table.add_column(col)
        playing = set(self.current[1]) if self.current and self.final is None else set()
        for seat, name in enumerate(self.names):
            budget = f"{self.used[seat]}/{self.budget}" if self.budget else str(self.used[seat])
            now = ""
            if seat in playing and self.current is not None:
                other = [s for s in self.current[1] if s != seat]
                now = f"vs Agent #{other[0] + 1}" if other else "playing"
            elif self.budget and self.used[seat] >= int(self.budget):
                now = "budget spent"
            points = f"{self.points[seat]:g}"
            if self.final is not None and seat < len(self.final) and self.final[seat] != self.points[seat]:
                points += f" → {self.final[seat]:g}"
            style = "bold" if seat in playing else ""
            table.add_row(str(self.group_of(seat) + 1), f"#{seat + 1}", widget_text(name, limit=NAME_WIDTH),
                          points, budget, now,
                          style=style)
        lines = [table]
        groups: dict[int, float] = {}
        for seat, x in enumerate(self.points):
            groups[self.group_of(seat)] = groups.get(self.group_of(seat), 0.0) + x
        standing = Text("groups: ", style="dim")
        for g, x in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
            won = self.winners is not None and g in self.winners
            standing.append(f"Group {g + 1} {x:g}{' ★' if won else ''}  ", style="bold green" if won else "")
        lines.append(standing)
        if self.current is not None and self.final is None:
            k, seats, r = self.current
            names = " vs ".join(f"Agent #{s + 1}" for s in seats)
            limit = f" of {self.max_rounds}" if self.max_rounds else ""
            lines.append(Text(f"match {k + 1}: {names}, round {r}{limit}", style="cyan"))
        if self.final is not None:
            lines.append(Text("tournament over", style="bold cyan"))
        for line in self.exits[-3:]:
            lines.append(widget_text(line, "yellow"))
        return Group(*lines)

    def text(self) -> str:
        """Plain text of what is shown (tests)."""
        console = Console(width=100, record=True, color_system=None)
        console.print(self.render_table())
        return console.export_text()
