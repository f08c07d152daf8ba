"""The setup form below the seats: game, payoff table, mechanism, its parameters, samples
and seed, built once the registries are loaded.

At first paint only the preset's own choices are known; the registries (numpy, pydantic,
Jinja2 behind them) are read in a thread right after it (:func:`read_registries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from coop_tui.agents.custom import agent_names
from coop_tui.agents.strategies import strategy_names
from coop_tui.screens.setup.params import ParamsForm, Row
from coop_tui.screens.widgets import PayoffTable
from coop_tui.session import MatchSetup
from coop_tui.terminal import terminal_text


@dataclass(frozen=True)
class Registries:
    """What the form offers: games, mechanisms a match can play, strategies and the
    agents installed plugins registered."""

    games: list[str]
    mechanisms: list[str]
    strategies: list[str]
    plugin_agents: list[str]


def read_registries() -> Registries:
    """Import the registries (slow: call it off the UI thread) and list their keys."""
    from coop_tui.games import game_keys
    from coop_tui.mechanisms import mechanism_keys

    games, mechanisms, strategies = game_keys(), mechanism_keys(), strategy_names()
    plugin_agents = agent_names()
    from coop_tui.mechanisms import mechanism_class

    # pipeline stages (benchmark answers, similarity judgements) run from sweep files
    mechanisms = [k for k in mechanisms if not getattr(mechanism_class(k), "stage", False)]
    import coop_tui.spec  # noqa: F401  (validation and preview need these warm)
    import coop_tui.sweep  # noqa: F401

    return Registries(games, mechanisms, strategies, plugin_agents)


def plugin_agents_note(names: list[str]) -> Static:
    """Installed plugins' agents, typed in a seat like a strategy."""
    shown = ", ".join(terminal_text(n, markup=False) for n in names)
    return Static(Text(f"plugin agents: {shown}", style="dim"), id="plugin-agents")


def game_and_mechanism(setup: MatchSetup, registries: Registries,
                       memory: dict[str, dict[str, Any]]) -> list[Widget]:
    """The form's rows under the seats, holding ``setup``'s choices where they are offered
    (else the first offered); the parameter form is empty until built."""
    games, mechanisms = registries.games, registries.mechanisms
    return [
        Static("Game", classes="section"),
        Row(Label("game"), Select([(k, k) for k in games],
                                  value=setup.game if setup.game in games else games[0],
                                  allow_blank=False, id="game", compact=True)),
        PayoffTable(id="payoffs"),
        Static("Mechanism", classes="section"),
        Row(Label("mechanism"), Select(
            [(k, k) for k in mechanisms],
            value=setup.mechanism if setup.mechanism in mechanisms else mechanisms[0],
            allow_blank=False, id="mechanism", compact=True)),
        ParamsForm(memory, id="params"),
        Row(Label("samples"), Input(str(setup.samples), id="samples", compact=True, type="integer")),
        Row(Label("seed"), seed_input(setup.seed)),
    ]


def seed_input(seed: int) -> Input:
    field = Input(str(seed), id="seed", compact=True, type="integer")
    field.tooltip = ("the sweep seed: the same seed gives the same sampled actions and the "
                     "same embedded-model answers (stored answers are reused); another seed "
                     "asks every agent again")
    return field
