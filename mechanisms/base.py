"""What a mechanism is: a parameter model plus a coroutine over ``ctx.ask``.

A mechanism never sees a screen, a database or a provider. It builds requests with
the match context, awaits answers and returns the match payoffs, so each protocol
(propose -> vote -> play, ...) reads top to bottom in one short module.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from coop_tui.engine import MatchContext, MatchOutcome
from coop_tui.games.base import Game
from coop_tui.games.kinds import ProtocolGame

if TYPE_CHECKING:
    from coop_tui.spec_models import Cell
    from coop_tui.store import Store


class SeatingError(ValueError):
    """A parameter that does not fit the seats an experiment plays (an agent-keyed score
    missing for a pair, a per-seat table of the wrong size); ``field`` names the parameter
    so the sweep error points at it rather than at the matchup."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class MechanismParams(BaseModel):
    """Base for mechanism parameters; unknown fields are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Mechanism:
    key: ClassVar[str]
    title: ClassVar[str]
    Params: ClassVar[type[MechanismParams]] = MechanismParams
    phases: ClassVar[tuple[str, ...]] = ("play",)
    talks: ClassVar[bool] = False
    """True when the mechanism runs the shared talk step (mechanisms/_talk.py) before each
    round's move, so a study may set ``talk``; the spec refuses talk for the others."""
    pooled: ClassVar[bool] = False
    """True when a match's seats form one population that the mechanism re-matches into
    smaller games (Reputation): cross-play then fills the population from the roster in
    turn instead of enumerating every ordered seat assignment."""

    def __init__(self, params: MechanismParams | None = None) -> None:
        self.params = params if params is not None else self.Params()

    def seat_count(self, game: Game, roster: int | None = None) -> int:
        """How many seats one match of this game has (the game's players by default);
        ``roster`` is the cross-play roster size, for a population that a mechanism
        fills with every roster agent in every position."""
        return game.n_players

    def check_game(self, game: Game, n_seats: int) -> None:
        """Raise ValueError when this mechanism cannot run this game with these seats."""
        if isinstance(game, ProtocolGame) and self.key != "none":
            raise ValueError(
                f"{game.key} is played move by move and runs under mechanism 'none' only; its "
                f"number of rounds is a game parameter (game_params rounds = N; --rounds in play mode)"
            )
        if n_seats != game.n_players:
            raise ValueError(
                f"{game.key} needs {game.n_players} seats, the matchup gives {n_seats}"
            )

    def check_seatings(self, seatings: Sequence[Sequence[str]], agents: Collection[str]) -> None:
        """Raise :class:`SeatingError` when parameters keyed by agent names do not fit the
        seatings an experiment plays (``agents``: every agent the sweep defines). Called
        once per parameter set with all its seatings, so one message can list every gap."""

    def estimate_decisions(self, game: Game, n_seats: int) -> int:
        """Roughly how many decisions one match asks for (for the pre-run estimate)."""
        return n_seats

    @classmethod
    def phases_for(cls, condition: dict[str, Any]) -> tuple[str, ...]:
        """The phases a match under ``condition`` goes through, in order (the live
        screen's timeline lists them); a mechanism whose parameters switch phases off
        drops those here. A talk phase (``talk`` in the match's condition) comes first."""
        if cls.talks and condition.get("talk", "none") != "none":
            return ("talk", *cls.phases)
        return cls.phases

    @classmethod
    def resolve_inputs(cls, cell: Cell, store: Store | None, run_id: str) -> dict[str, Any]:
        """The parameters one match of ``cell`` plays with, before they are validated.

        Most mechanisms play with the cell's own. A pipeline stage (a judge reading a
        target's answers, a similarity match told scores computed from earlier stages)
        overrides this to fill in what earlier stages of run ``run_id`` stored in
        ``store``; without a store (a prompt-size probe) it fills in stand-ins of the real
        size. It raises ValueError naming an input that is missing, and the match then fails
        saying so. The sweep asks every mechanism this one question, so it knows no paper's
        pipeline (Axelrod's tournament never knows a strategy)."""
        return cell.mechanism_params

    def condition(self) -> dict[str, Any]:
        """The parameters that define the experimental condition (stored per match)."""
        return self.params.model_dump()

    async def play(self, ctx: MatchContext) -> MatchOutcome:
        raise NotImplementedError
