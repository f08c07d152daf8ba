"""The analysis screen's reads: the run's report, as the screen's ``_load`` worker asks.

Plain functions of the store (as Elia's ``ChatsManager`` is to its screens); the screen
never builds a report or asks SQL itself.
"""

from __future__ import annotations

from typing import Any

from coop_tui.analysis.sections import Section, pending


def load_report(store: Any, run_id: str) -> tuple[dict[str, Any], list[Section]]:
    """The report without the slow sections not stored yet (shown at once), and those
    sections, to build one by one after it (:func:`coop_tui.analysis.sections.build_section`).
    KeyError when the run is not in the store."""
    from coop_tui.report import build_report

    report = build_report(store, run_id, compute_stored=False)
    return report, pending(store, run_id)
