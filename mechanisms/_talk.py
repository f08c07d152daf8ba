"""The talk step a mechanism runs before each round's move (a study's ``talk``).

One shared coroutine instead of talk code in every mechanism: a mechanism that supports
talk sets ``talks = True`` and awaits :func:`talk_step` before it builds a round's play
requests; the engine then shows each seat the messages it may read in that round's play
prompt. Seats whose agent reads no prompt (fixed strategies) skip talk: they send
nothing, and nothing is recorded for them, since a strategy cannot read what is said.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coop_tui.engine import MatchContext
from coop_tui.prompts import Labelling
from coop_tui.talk import TALK_PHASE


async def talk_step(
    ctx: MatchContext, round_: int,
    twist: Callable[[int], str | Callable[[Labelling], str]] | None = None,
) -> int:
    """Ask every prompt-reading seat for ``talk_turns`` messages before ``round_``'s move,
    all seats at once per turn (each turn's prompt shows the earlier turns' messages);
    ``twist(seat)`` is the mechanism's twist for the seat's talk prompt. Returns how many
    messages were said."""
    policy = ctx.policy
    if policy.talk == "none":
        return 0
    speakers = [seat for seat in range(ctx.n_seats) if ctx.reads_prompt(seat)]
    if not speakers:
        return 0
    said = 0
    for turn in range(1, policy.talk_turns + 1):
        requests = [
            ctx.talk_request(seat, round_, turn, twist=twist(seat) if twist is not None else "")
            for seat in speakers
        ]
        for decision in await ctx.ask_all(requests):
            if ctx.hear(ctx.require(decision), turn) is not None:
                said += 1
    info: dict[str, Any] = {"talk": policy.talk, "messages": said}
    ctx.phase_done(round_, TALK_PHASE, info)
    return said
