"""The live match screen (:class:`LiveScreen`) and its parts.

``screen`` composes the screen and owns its keys; ``feed`` applies a session's events to
the widgets; ``title``, ``status`` and ``human`` are the title line, the status line and
the play-mode input bar.
"""

from coop_tui.screens.live.feed import LiveFeed
from coop_tui.screens.live.human import HumanTurnBar
from coop_tui.screens.live.screen import FRAME, HEAL, LiveScreen
from coop_tui.screens.live.status import ETA_TICK, RunStatus
from coop_tui.screens.live.title import (
    TITLE_CONDITION_WIDTH,
    TITLE_LINES,
    LiveTitle,
    condition_shown,
    condition_text,
)

__all__ = [
    "ETA_TICK", "FRAME", "HEAL", "TITLE_CONDITION_WIDTH", "TITLE_LINES", "HumanTurnBar",
    "LiveFeed", "LiveScreen", "LiveTitle", "RunStatus", "condition_shown", "condition_text",
]
