"""Stand-in risk games (synthetic wording, for coop-tui's tests)."""

import random


def _flag_pay(choices, game_state, cfg):
    good = game_state.get("sender_type") == "high"
    took = choices.get(1) == "accept"
    return {0: 10 if took else 0, 1: (10 if good else -5) if took else 3}


def _flag_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Flag {round_num}: you are {game_state.get('sender_type')}. Raise it? Tag it."
    seen = "up" if game_state.get("signal_sent") else "down"
    return f"Flag {round_num}: the flag is {seen}. Take them? Tag it."


def _flag_draw(round_num, history):
    return {"sender_type": random.choice(["high", "low"])}


def _flag_seen(state, pid, choice):
    state = dict(state)
    if pid == 0:
        state["signal_sent"] = choice == "signal"
    return state


def _hint_pay(choices, game_state, cfg):
    truth, act = game_state.get("true_state", 3), float(choices.get(1, 3))
    return {0: -abs(act - truth - 1), 1: -abs(act - truth)}


def _hint_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Hint {round_num}: the hidden number is {game_state.get('true_state')}. Say? Tag it."
    return f"Hint {round_num}: you were told {game_state.get('message')}. Act? Tag it."


def _hint_draw(round_num, history):
    return {"true_state": random.randint(1, 5)}


def _hint_seen(state, pid, choice):
    state = dict(state)
    if pid == 0:
        state["message"] = choice
    return state


RISK_GAMES = [
    {"game_id": "chicken", "type": "simultaneous", "num_players": 2,
     "options": ["swerve", "straight"], "num_rounds": 4,
     "payoff_matrix": {("swerve", "swerve"): (3, 3), ("swerve", "straight"): (1, 5),
                       ("straight", "swerve"): (5, 1), ("straight", "straight"): (-10, -10)}},
    {"game_id": "signaling", "type": "sequential", "num_players": 2,
     "options": ["signal", "no_signal"], "num_rounds": 4, "move_order": [0, 1],
     "player_options": {1: ["accept", "reject"]}, "payoff_fn": _flag_pay,
     "query_fn": _flag_ask, "state_fn": _flag_draw, "update_state_fn": _flag_seen,
     "rules_text": "STAND-IN FLAG."},
    {"game_id": "cheap_talk", "type": "sequential", "num_players": 2,
     "options": ["message", "action"], "num_rounds": 4, "move_order": [0, 1],
     "numeric_response": True, "min_val": 1, "max_val": 5, "payoff_fn": _hint_pay,
     "query_fn": _hint_ask, "state_fn": _hint_draw, "update_state_fn": _hint_seen,
     "rules_text": "STAND-IN HINT."},
]
