"""Stand-in for the strategic personalities code's framing presets (synthetic, for coop-tui's tests)."""

from __future__ import annotations

GOALS = {"win": "STAND-IN GOAL: finish ahead.", "fair": "STAND-IN GOAL: be even-handed."}
STORIES = {"cooking": "STAND-IN STORY: two cooks."}


class PromptBuilder:
    def __init__(self, framing: str = "neutral", goal: str = "none",
                 cover_story: str = "neutral", **_: object) -> None:
        self.cover_story, self.goal = cover_story, goal

    def modify_system_prompt(self, base_system: str) -> str:
        parts = [STORIES.get(self.cover_story, ""), GOALS.get(self.goal, ""), base_system]
        return "\n".join(p for p in parts if p)

    def modify_user_message(self, base_user: str, abstract_options: list | None = None) -> str:
        return f"{base_user} [framed]" if self.goal != "none" else base_user


FRAMING_PRESETS = {
    "baseline": {},
    "cover_cooking": {"cover_story": "cooking"},
    "goal_win": {"goal": "win"},
    "goal_fair": {"goal": "fair"},
    "payoff_10x": {"payoff_scale": 10.0},
}
