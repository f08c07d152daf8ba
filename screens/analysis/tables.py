"""The analysis screen's tables of one experiment: its games' payoffs, cooperation and
payoff per condition, and the Mediation / Contracting ballots."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from coop_tui.screens.analysis.matchups import num
from coop_tui.screens.widgets import PayoffTable
from coop_tui.terminal import NAME_WIDTH, widget_text


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


class PayoffsPanel(PayoffTable):
    """The payoff table of every game the experiment plays (one per game spec)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "Payoff table"

    def show_experiment(self, e: dict[str, Any]) -> None:
        """The experiment's games rebuilt from their stored specs (``show`` is the
        single game's, from :class:`PayoffTable`)."""
        specs = e.get("game_specs") or ([e["game_spec"]] if e.get("game_spec") else [])
        self.border_title = "Payoff table" if len(specs) <= 1 else f"Payoff tables ({len(specs)} games)"
        if not specs:
            self.show(None, "the game of this experiment was not stored")
            return
        from coop_tui.games import game_from_spec

        games, problems = [], []
        for spec in specs:
            try:
                games.append(game_from_spec(spec))
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(f"cannot rebuild the game: {exc}")
        self.show_games(games, "; ".join(problems))


class ConditionsPanel(DataTable):
    """Per condition and agent: count, cooperation (± SE, Wilson 95%), sampled
    cooperation and mean payoff (± SE)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.border_title = "Cooperation and payoff per condition"

    def on_mount(self) -> None:
        self.add_columns(
            "condition", "agent", "n", "coop", "± SE", "Wilson 95%", "sampled", "payoff", "± SE")

    def show(self, e: dict[str, Any]) -> None:
        self.clear()
        for cond in e["conditions"]:
            label = cond.get("label", cond["condition_key"])
            for agent, a in sorted(cond["agents"].items()):
                w = a.get("coop_wilson")
                self.add_row(
                    widget_text(label, limit=NAME_WIDTH), widget_text(agent, limit=NAME_WIDTH),
                    Text(str(a["n"]), justify="right"),
                    Text(pct(a["coop_rate"]), justify="right"),
                    Text(pct(a["coop_se"]), justify="right"),
                    Text("-" if not w else f"[{100 * w[0]:.1f}, {100 * w[1]:.1f}]", justify="right"),
                    Text(pct(a["sampled_coop_rate"]), justify="right"),
                    Text(num(a["mean_payoff"]), justify="right"),
                    Text(num(a["payoff_se"]), justify="right"),
                )


class BallotsTable(DataTable):
    """Vote and adoption rates, and how often an agent's designs sustain cooperation;
    shown only for an experiment with ballots."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", show_cursor=False, **kwargs)
        self.border_title = "Proposals and votes (Mediation / Contracting)"

    def on_mount(self) -> None:
        self.add_columns(
            "agent", "condition", "proposals", "adopted", "approval share", "approves",
            "own approved", "stable designs", "signed / delegated")

    def show(self, e: dict[str, Any], mechanisms: dict[str, Any]) -> None:
        """``mechanisms``: the report's votes and design stability of every experiment."""
        votes = [v for v in mechanisms.get("votes", []) if v["experiment"] == e["experiment"]]
        stable = {
            (d["agent"], d["condition"]): d["stable_rate"]
            for d in mechanisms.get("design_stability", []) if d["experiment"] == e["experiment"]
        }
        self.clear()
        self.display = bool(votes)
        for v in votes:
            last = v.get("sign_rate", v.get("delegate_rate"))
            self.add_row(
                widget_text(v["agent"], limit=NAME_WIDTH), widget_text(v["condition"], limit=NAME_WIDTH),
                *(Text(x, justify="right") for x in (
                    str(v["proposals"]), str(v["adopted"]), pct(v["approval_share"]),
                    pct(v["approve_rate"]), pct(v["own_approved_rate"]),
                    pct(stable.get((v["agent"], v["condition"]))), pct(last),
                )),
            )
