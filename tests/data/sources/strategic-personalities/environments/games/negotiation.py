"""Stand-in negotiation games (synthetic wording, for coop-tui's tests)."""


def _haggle_pay(choices, game_state, cfg):
    ask = float(choices.get(0, 50))
    if choices.get(1) == "accept":
        return {0: ask, 1: 100 - ask}
    return {0: 0, 1: 0}


def _haggle_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Haggle {round_num}: what do you ask for? Tag it."
    return f"Haggle {round_num}: they ask {game_state.get('offer', '?')}. Deal? Tag it."


def _keep_offer(state, pid, choice):
    state = dict(state)
    if pid == 0:
        state["offer"] = choice
    return state


def _two_pay(choices, game_state, cfg):
    asks = {pid: [float(x) for x in c.split(",")] + [0.0] for pid, c in choices.items()}
    fits = all(asks[0][i] + asks[1][i] <= 100 for i in range(2))
    return {pid: (sum(a[:2]) if fits else 0) for pid, a in asks.items()}


def _two_ask(player_id, round_num, game_state, opts, label_map):
    return f"Two items {round_num}: your share of each? Tag it."


NEGOTIATION_GAMES = [
    {"game_id": "alternating_offers", "type": "sequential", "num_players": 2,
     "options": ["accept", "reject"], "num_rounds": 3, "move_order": [0, 1],
     "numeric_players": [0], "min_val": 0, "max_val": 100, "payoff_fn": _haggle_pay,
     "query_fn": _haggle_ask, "update_state_fn": _keep_offer,
     "rules_text": "STAND-IN HAGGLE."},
    {"game_id": "multi_issue", "type": "auction", "num_players": 2, "options": ["allocate"],
     "num_rounds": 4, "min_bid": 0, "max_bid": 100, "payoff_fn": _two_pay,
     "query_fn": _two_ask, "rules_text": "STAND-IN TWO ITEMS."},
]
