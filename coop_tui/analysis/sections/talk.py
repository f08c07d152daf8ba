"""Report section ``talk``: agents that talk before they move, per condition (talk
against no talk): cooperation, payoffs, the messages' length, and how often a sender
that said it would cooperate then did. Computed in :mod:`coop_tui.analysis.talk`."""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.talk import talk_conditions


def build(store: Any, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    rows = talk_conditions(store, run_id)
    return {"conditions": rows} if rows else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def render(value: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    table = Table("exp", "game", "talk", "matches", "cooperation", "payoff", "messages",
                  "chars (mean / max)", "promised to cooperate", "then did", "by")
    for c in value["conditions"]:
        table.add_row(
            str(c["experiment"]), c["game"], c["talk"], str(c["matches"]), _pct(c["cooperation"]),
            _num(c["payoff"]), str(c["messages"]),
            f"{_num(c['mean_chars'], 0)} / {c['max_chars'] if c['max_chars'] is not None else '-'}",
            str(c["promises"]), _pct(c["kept_rate"]), c["promise_source"] if c["messages"] else "-",
        )
    return [table]


SECTION = register(Section(
    key="talk", title="Talk before moves: cooperation, payoffs, messages and promises kept",
    build=build, render=render, order=62,
))
