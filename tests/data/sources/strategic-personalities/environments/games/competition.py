"""Stand-in competition games (synthetic wording, for coop-tui's tests)."""

import random


def _sale_pay(choices, game_state, cfg):
    bids = {pid: float(c) for pid, c in choices.items()}
    top = max(bids.values())
    winner = random.choice([pid for pid, b in bids.items() if b == top])
    worth = game_state.get("valuations", {})
    return {pid: (worth.get(pid, 50) - b if pid == winner else 0.0) for pid, b in bids.items()}


def _worths(round_num):
    return {0: random.randint(20, 80), 1: random.randint(20, 80)}


def _fields_pay(choices, game_state, cfg):
    split = {}
    for pid, text in choices.items():
        parts = [float(x) for x in text.split(",")]
        parts += [0.0] * (3 - len(parts))
        total = sum(parts) or 1.0
        split[pid] = [100 * p / total for p in parts[:3]]
    won = {pid: sum(split[pid][f] > split[1 - pid][f] for f in range(3)) for pid in split}
    return {pid: 10 if won[pid] > won[1 - pid] else 0 for pid in split}


def _fields_ask(player_id, round_num, game_state, opts, label_map):
    return f"Fields {round_num}: spread your 100 over three hills. Tag it."


COMPETITION_GAMES = [
    {"game_id": "auction_first_price", "type": "auction", "num_players": 2, "options": ["bid"],
     "num_rounds": 4, "min_bid": 0, "max_bid": 100, "payoff_fn": _sale_pay,
     "valuation_fn": _worths, "rules_text": "STAND-IN SALE: sealed bids, top bid pays."},
    {"game_id": "colonel_blotto", "type": "auction", "num_players": 2, "options": ["allocate"],
     "num_rounds": 4, "min_bid": 0, "max_bid": 100, "payoff_fn": _fields_pay,
     "query_fn": _fields_ask, "rules_text": "STAND-IN FIELDS."},
]
