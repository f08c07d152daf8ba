"""The base of a match's collaborators: each works for one :class:`MatchContext`."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coop_tui.engine import MatchContext


class MatchPart:
    """One job of a match (prompts, decisions, direct rounds, round closing), reading the
    match's shared state (game, seats, policy, histories, the stop flag) through it.

    The match owns its parts and a part refers back to the match weakly: a strong
    reference both ways would be a cycle, so a finished match (its histories and up to
    ``RECENT_DECISIONS`` decisions) would wait for the garbage collector's next full pass
    instead of being freed when its last user lets go, as a match was before the split."""

    def __init__(self, match: MatchContext) -> None:
        self._match = weakref.ref(match)

    @property
    def match(self) -> MatchContext:
        """The match this part works for (alive whenever the match asks its parts)."""
        return self._match()  # type: ignore[return-value]
