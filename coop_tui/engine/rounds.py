"""Closes a match's rounds and phases: each seat's own-perspective history, the
cooperation records strategies read, and the ``RoundDone`` / ``PhaseDone`` events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coop_tui.decisions import Move
from coop_tui.engine.part import MatchPart
from coop_tui.events import PhaseDone, RoundDone

if TYPE_CHECKING:
    from coop_tui.engine import MatchContext


class RoundCloser(MatchPart):
    """Records played rounds and finished phases of one match."""

    def __init__(self, match: MatchContext) -> None:
        super().__init__(match)
        game, seats = match.game, len(match.agents)
        self.histories: list[list[Move]] = [[] for _ in match.agents]
        """Per seat, its moves as it saw them (own action, the others', payoffs)."""
        self.records: list[list[bool]] | None = (
            [[] for _ in match.agents] if game.has_cooperation and seats == game.n_players else None
        )
        """Per seat, whether all co-players cooperated each round (None once a round was
        played on other positions or games): handed to strategies with the history."""
        self.every_seat = tuple(range(seats))

    def finish_round(
        self,
        round_: int,
        actions: Sequence[int],
        payoffs: Sequence[float],
        *,
        seats: Sequence[int] | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Record a played round and extend each seat's own-perspective history."""
        every = self.every_seat
        if seats is None and len(every) == 2 == len(actions) and self.records is not None:
            self._finish_pair_round(round_, actions, payoffs, info)
            return
        seats = every if seats is None and len(actions) == len(every) else tuple(
            seats if seats is not None else range(len(actions)))
        if self.records is not None:
            if seats != every:
                self.records = None
            else:
                coop = [a in c for a, c in zip(actions, self.match.game.cooperative, strict=False)]
                defectors = coop.count(False)
                for pos in seats:
                    # all co-players cooperated: all cooperated, or only this seat did not
                    self.records[pos].append(not defectors or (not coop[pos] and defectors == 1))
        acts = tuple(map(int, actions))
        pays = tuple(map(float, payoffs))
        histories = self.histories
        for pos, seat in enumerate(seats):
            histories[seat].append(
                _move(round_, acts[pos], acts[:pos] + acts[pos + 1:], pays[pos], pays[:pos] + pays[pos + 1:])
            )
        match = self.match
        event = RoundDone(match.match_id, round_, acts, pays, seats, dict(info or {}))
        if not match.direct.hold(event):  # sent now, or held back with the direct decisions
            match.bus.emit(event)

    def _finish_pair_round(
        self, round_: int, actions: Sequence[int], payoffs: Sequence[float],
        info: dict[str, Any] | None,
    ) -> None:
        """:meth:`finish_round` of a two-seat match keeping its cooperation records, written
        out (it runs every round of every strategy pairing): the same records, moves and
        event. With one co-player, "all co-players cooperated" is whether the other did."""
        match = self.match
        records = self.records
        assert records is not None
        a0, a1 = int(actions[0]), int(actions[1])
        p0, p1 = float(payoffs[0]), float(payoffs[1])
        cooperative = match.game.cooperative
        records[0].append(actions[1] in cooperative[1])
        records[1].append(actions[0] in cooperative[0])
        self.histories[0].append(_move(round_, a0, (a1,), p0, (p1,)))
        self.histories[1].append(_move(round_, a1, (a0,), p1, (p0,)))
        event = _new(RoundDone)  # as _move builds moves: one per round of every pairing
        event.__dict__.update(match_id=match.match_id, round=round_, actions=(a0, a1),
                              payoffs=(p0, p1), seats=self.every_seat, info=dict(info or {}))
        if not match.direct.hold(event):  # sent now, or held back with the direct decisions
            match.bus.emit(event)

    def phase_done(self, round_: int, phase: str, info: dict[str, Any]) -> None:
        """Announce a finished phase (after any rounds held back before it)."""
        match = self.match
        if match.direct.held:  # keep the order of events if a mechanism mixes paths
            match.direct.send_held()
        match.bus.emit(PhaseDone(match.match_id, round_, phase, info))


def _move(round_: int, own: int, others: tuple[int, ...], payoff: float,
          others_payoffs: tuple[float, ...]) -> Move:
    """``Move(...)`` built without the frozen dataclass's field-by-field ``__init__`` (one
    per seat and round)."""
    move = _new(Move)
    move.__dict__.update(round=round_, own=own, others=others, payoff=payoff,
                         others_payoffs=others_payoffs)
    return move


_new = object.__new__
