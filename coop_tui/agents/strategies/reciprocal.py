"""The tit-for-tat family: answer the co-players' last move(s) in kind."""

from __future__ import annotations

from coop_tui.agents.strategies.base import (
    Strategy,
    cooperate,
    cooperate_with,
    defect,
    opponent_record,
    others_cooperated,
    probability,
    register,
    whole,
)
from coop_tui.decisions import SeatView


@register
class TitForTat(Strategy):
    """Cooperates first, then copies what the co-player(s) did last round.

    Rapoport's entry, winner of both of Axelrod's tournaments (Axelrod 1980, 1984); the
    reference reciprocator of the strategic personalities paper and the super-additive cooperation paper. With several co-players it cooperates
    only if all of them cooperated last round.
    """

    name = "tit_for_tat"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history or others_cooperated(view, view.history[-1]):
            return cooperate(view)
        return defect(view)


@register
class SuspiciousTitForTat(Strategy):
    """Defects first, then copies what the co-player(s) did last round.

    Tit for tat with a mistrustful opening ("Mistrust" in Beaufils et al. 1997; listed in
    the strategic personalities paper). Two of them never leave mutual defection.
    """

    name = "suspicious_tit_for_tat"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if view.history and others_cooperated(view, view.history[-1]):
            return cooperate(view)
        return defect(view)


@register
class TitForTwoTats(Strategy):
    """Cooperates unless the co-player(s) defected in each of the last two rounds.

    Axelrod's "tit for two tats" (Axelrod 1984): more forgiving than tit for tat, it
    ignores a single defection and so cannot be locked into echoing one mistake.
    """

    name = "tit_for_two_tats"
    classifier = {"memory_depth": 2, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        last_two = opponent_record(view)[-2:]
        if len(last_two) == 2 and not any(last_two):
            return defect(view)
        return cooperate(view)


@register
class TwoTitsForTat(Strategy):
    """Cooperates first, then answers every defection with two defections.

    Axelrod's "two tits for tat" (Axelrod 1984): defects if the co-player(s) defected in
    either of the last two rounds, a harsher retaliator than tit for tat.
    """

    name = "two_tits_for_tat"
    classifier = {"memory_depth": 2, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if all(opponent_record(view)[-2:]):
            return cooperate(view)
        return defect(view)


@register
class GenerousTitForTat(Strategy):
    """Plays tit for tat but forgives a defection with probability q (default 0.1).

    Generous tit for tat (Nowak and Sigmund 1992); the strategic personalities paper uses 10 per cent forgiveness.
    After a defection it returns the mixture (q cooperate, 1 - q defect); the engine draws.
    """

    name = "generous_tit_for_tat"
    classifier = {"memory_depth": 1, "stochastic": True}

    def __init__(self, q: float = 0.1) -> None:
        self.q = probability("q", q)

    def distribution(self, view: SeatView) -> list[float]:
        if not view.history or others_cooperated(view, view.history[-1]):
            return cooperate(view)
        return cooperate_with(view, self.q)


@register
class ReverseTitForTat(Strategy):
    """Defects first, then does the opposite of what the co-player(s) did last round.

    Reverse tit for tat, also called Bully (Nachbar 1992); listed in the strategic personalities paper. It exploits
    cooperators and gives in to defectors.
    """

    name = "reverse_tit_for_tat"
    classifier = {"memory_depth": 1, "stochastic": False}

    def distribution(self, view: SeatView) -> list[float]:
        if view.history and not others_cooperated(view, view.history[-1]):
            return cooperate(view)
        return defect(view)


@register
class EndgameTitForTat(Strategy):
    """Plays tit for tat but defects in the last rounds of a known-length game (last = 1).

    The backward-induction exploiter the strategic personalities paper finds in some models: cooperate reciprocally
    while punishment is possible, defect once it is not. It reads the round count the
    mechanism puts in the view; when the length is unknown it is plain tit for tat.
    """

    name = "endgame_tit_for_tat"
    classifier = {"memory_depth": 1, "stochastic": False}

    def __init__(self, last: int = 1) -> None:
        self.last = whole("last", last)

    def distribution(self, view: SeatView) -> list[float]:
        if view.total_rounds is not None and view.round > view.total_rounds - self.last:
            return defect(view)
        return TitForTat().distribution(view)
