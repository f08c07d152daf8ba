"""Designs shared by a whole tournament (CoopEval's Mediation and Contracting).

CoopEval asks every agent x seat for its mediator or contract *once per tournament*
and puts that design on the table in every match the agent plays from that seat, so
one careless design weighs on all of them. Our matches run concurrently, so the
sharing is a run-level in-flight map: the first match that needs a design asks for it
(and records the decision under a key owned by the tournament, not by that match);
every other match awaits the same future and references the decision in its
``propose`` phase info. A resumed run finds the stored decision by that key, whichever
match asks first this time, so nothing is asked twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


class DesignBook:
    """One future per design key for the whole run."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[Any]] = {}

    async def get(self, key: str, ask: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """The design under ``key``: (value, True) for the caller that asked for it,
        (value, False) for every caller that reused it. A design whose request failed
        (the asking match was stopped, the provider gave up) is asked again by the next
        match rather than failing every match of the tournament."""
        fut = self._futures.get(key)
        if fut is not None and fut.done() and (fut.cancelled() or fut.exception() is not None):
            fut = None
        if fut is None:
            fut = asyncio.ensure_future(ask())
            self._futures[key] = fut
            return await asyncio.shield(fut), True
        return await asyncio.shield(fut), False

    def __len__(self) -> int:
        return len(self._futures)


@dataclass(frozen=True)
class Tournament:
    """What a match needs to share designs: its tournament key (per replicate), the
    seed shared decisions are drawn with, and the run's design book."""

    key: str
    seed: int
    book: DesignBook = field(compare=False)
