"""Report section ``strategic_personality_pooled``: the strategic personalities profile over every
repeated two-player game and opponent and both seats of self-play and cross-play — a wider
sample than the paper's (which is ``strategic_personality``), kept for runs whose games
are not the Table 2 prisoner's dilemmas (stag hunts, chicken, repeated trust)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coop_tui.analysis.personality_profile import (
    forget_seat_runs,
    has_repeated_pairs,
    personality_profile,
)
from coop_tui.analysis.sections import Section, register
from coop_tui.analysis.sections.personality import make_widgets, render

if TYPE_CHECKING:
    from coop_tui.store import Store


def build(store: Store, run_id: str, report: dict[str, Any]) -> dict[str, Any] | None:
    try:  # the last section reading the seat runs
        if not any(e.get("per_round") for e in report.get("experiments", [])):
            return None
        if not has_repeated_pairs(store.db, run_id):
            return None
        return personality_profile(store.db, run_id, sample="pooled")
    finally:
        forget_seat_runs()


SECTION = register(Section(
    key="strategic_personality_pooled",
    title="Strategic personality, pooled (all repeated games, both seats)",
    build=build, render=render, widgets=make_widgets("sp-pooled"), order=61,
))
