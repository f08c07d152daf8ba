"""Stand-in coordination games (synthetic wording, for coop-tui's tests)."""


def _focal_pay(choices, game_state, cfg):
    same = len(set(choices.values())) == 1
    return {pid: 10 if same else 0 for pid in choices}


def _focal_ask(player_id, round_num, game_state, opts, label_map):
    return f"Match turn {round_num}: one of {'/'.join(opts)}, same as your partner. Tag it."


COORDINATION_GAMES = [
    {"game_id": "bos_standard", "type": "simultaneous", "num_players": 2,
     "options": ["ballet", "football"], "num_rounds": 4,
     "payoff_matrix": {("ballet", "ballet"): (7, 10), ("ballet", "football"): (0, 0),
                       ("football", "ballet"): (0, 0), ("football", "football"): (10, 7)}},
    {"game_id": "focal_point", "type": "simultaneous", "num_players": 2,
     "options": ["alpha", "beta", "gamma", "delta"], "num_rounds": 4,
     "payoff_fn": _focal_pay, "query_fn": _focal_ask,
     "rules_text": "STAND-IN MATCHING: pick the same word as your partner."},
]
