"""Stand-in for the strategic personalities code's engine (synthetic, for coop-tui's tests).

Same module layout, class and method signatures as the paper's ``environments/engine.py``
as coop-tui's adapter calls them; every sentence below is invented for the tests and
deliberately unlike the paper's. It needs only the standard library.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

PAIRS = [("J", "F"), ("Q", "X")]


@dataclass
class RoundResult:
    round_num: int
    choices: dict[int, str]
    parsed_choices: dict[int, str]
    payoffs: dict[int, float]
    reasoning: dict[int, str] = field(default_factory=dict)
    thinking: dict[int, str] = field(default_factory=dict)


def randomise_labels(canonical_options: list[str], seed: int | None = None) -> dict:
    draw = random.Random(seed)
    if len(canonical_options) == 2:
        a, b = draw.choice(PAIRS)
        return {a: canonical_options[0], b: canonical_options[1]}
    letters = draw.sample("ABCDEGHKLMNPRSTWZ", len(canonical_options))
    return dict(zip(letters, canonical_options, strict=True))


class GameEngine:
    def __init__(self, game_config: dict, num_rounds: int | None = None,
                 label_seed: int | None = None,
                 single_message: bool = False,
                 judge_fn: Callable | None = None,
                 payoff_scale: float = 1.0):
        self.config = copy.deepcopy(game_config)
        self.num_rounds = num_rounds or game_config.get("num_rounds", 4)
        self.game_type = game_config["type"]
        self.canonical_options = game_config["options"]
        self.single_message = single_message
        if payoff_scale != 1.0 and "payoff_matrix" in self.config:
            self.config["payoff_matrix"] = {
                k: tuple(int(x * payoff_scale) for x in v)
                for k, v in self.config["payoff_matrix"].items()}
        self.label_map = randomise_labels(self.canonical_options, seed=label_seed)
        self.abstract_options = list(self.label_map)
        self.reverse_map = {v: k for k, v in self.label_map.items()}
        self._rng = random.Random(label_seed)

    def _rules(self, player_id: int) -> str:
        cfg = self.config
        if self.game_type == "simultaneous" and "payoff_matrix" in cfg:
            first, second = self.abstract_options
            rows = [f"STAND-IN MATRIX for {self.num_rounds} turns: pick {first} or {second}."]
            for mine in (first, second):
                for theirs in (first, second):
                    pair = (self.label_map[mine], self.label_map[theirs])
                    key = pair if player_id == 0 else pair[::-1]
                    got = cfg["payoff_matrix"][key]
                    rows.append(f"* {mine} vs {theirs} -> me {got[player_id]}, "
                                f"them {got[1 - player_id]}")
            return "\n".join(rows)
        return cfg.get("rules_text", "STAND-IN RULES")

    def _past(self, player_id: int, rounds: list[RoundResult]) -> str:
        lines = []
        for r in rounds:
            mine = r.payoffs.get(player_id, 0)
            if self.game_type == "simultaneous":
                other = 1 - player_id
                me = self.reverse_map.get(r.parsed_choices.get(player_id, "?"), "?")
                them = self.reverse_map.get(r.parsed_choices.get(other, "?"), "?")
                lines.append(f"Turn {r.round_num}: me {me}, them {them}; "
                             f"scores {mine} / {r.payoffs.get(other, 0)}.")
            else:
                lines.append(f"Turn {r.round_num}: scored {mine}.")
        return "\n".join(lines)

    def _ask(self, player_id: int, round_num: int, game_state: dict | None) -> str:
        cfg = self.config
        query_fn = cfg.get("query_fn")
        if query_fn:
            state = dict(game_state or {})
            if self.game_type == "allocation":
                for k in ("mpcr", "endowment"):
                    if k in cfg:
                        state.setdefault(k, cfg[k])
            return query_fn(player_id, round_num, state, self.abstract_options, self.label_map)
        if self.game_type == "simultaneous":
            order = list(self.abstract_options)
            self._rng.shuffle(order)
            return f"Turn {round_num} now. Say {order[0]} or {order[1]} inside <answer></answer>."
        if self.game_type == "auction":
            worth = (game_state or {}).get("valuations", {}).get(player_id, 0)
            return f"Turn {round_num} now. It is worth {worth} to you. Bid inside <answer></answer>."
        return f"Turn {round_num} now. Give an amount inside <answer></answer>."

    def build_prompt(self, player_id: int, round_num: int,
                     history: list[RoundResult],
                     framing: str = "neutral",
                     game_state: dict | None = None) -> tuple[str, str]:
        rules = self._rules(player_id)
        past = self._past(player_id, history)
        ask = self._ask(player_id, round_num, game_state)
        if framing not in ("neutral", "baseline"):
            from environments.prompts import FRAMING_PRESETS, PromptBuilder
            preset = {k: v for k, v in FRAMING_PRESETS.get(framing, {}).items()
                      if k != "payoff_scale"}
            if preset:
                builder = PromptBuilder(**preset)
                rules = builder.modify_system_prompt(rules)
                ask = builder.modify_user_message(ask, self.abstract_options)
        if self.single_message:
            return "", "\n".join(p for p in (rules, past, ask) if p)
        return rules, (f"{past}\n\n{ask}" if past else ask)

    def _parse_numeric_pipeline(self, response_text: str, query_context: str,
                                min_val: float, max_val: float) -> float:
        found = re.search(r"-?\d+(?:\.\d+)?", response_text)
        return max(min_val, min(float(found.group()) if found else 0.0, max_val))

    def compute_payoffs(self, choices: dict[int, str],
                        game_state: dict | None = None) -> dict[int, float]:
        cfg = self.config
        if "payoff_matrix" in cfg:
            key = tuple(choices[i] for i in sorted(choices))
            if key in cfg["payoff_matrix"]:
                return dict(enumerate(cfg["payoff_matrix"][key]))
        if "payoff_fn" in cfg:
            return cfg["payoff_fn"](choices, game_state, cfg)
        return {pid: 0 for pid in choices}
