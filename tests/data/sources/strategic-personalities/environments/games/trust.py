"""Stand-in trust games (synthetic wording, for coop-tui's tests)."""


def _lend_pay(choices, game_state, cfg):
    sent, back = float(choices.get(0, 0)), float(choices.get(1, 0))
    return {0: 10 - sent + back, 1: 3 * sent - back}


def _lend_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Loan {round_num}: how much of your 10 do you lend? Tag it."
    return f"Loan {round_num}: {game_state.get('offer', '?')} was lent to you, tripled. Repay? Tag it."


def _keep_offer(state, pid, choice):
    state = dict(state)
    if pid == 0:
        state["offer"] = choice
    return state


TRUST_GAMES = [
    {"game_id": "trust_berg", "type": "sequential", "num_players": 2, "options": ["send", "keep"],
     "num_rounds": 4, "move_order": [0, 1], "numeric_response": True, "min_val": 0,
     "max_val": 30, "payoff_fn": _lend_pay, "query_fn": _lend_ask,
     "update_state_fn": _keep_offer, "rules_text": "STAND-IN LOAN: lend, triple, repay."},
    {"game_id": "repeated_trust", "type": "simultaneous", "num_players": 2,
     "options": ["trust", "distrust"], "num_rounds": 4,
     "payoff_matrix": {("trust", "trust"): (8, 8), ("trust", "distrust"): (0, 12),
                       ("distrust", "trust"): (12, 0), ("distrust", "distrust"): (3, 3)}},
]
