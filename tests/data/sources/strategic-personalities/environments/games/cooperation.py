"""Stand-in cooperation games (synthetic wording, for coop-tui's tests)."""


def _diner_pay(choices, game_state, cfg):
    bill = sum(20 if c == "costly" else 10 for c in choices.values()) / len(choices)
    return {pid: (20 if c == "costly" else 15) - bill for pid, c in choices.items()}


def _diner_ask(player_id, round_num, game_state, opts, label_map):
    cheap = next(o for o in opts if label_map[o] == "cheap")
    costly = next(o for o in opts if label_map[o] == "costly")
    return f"Meal {round_num}: {cheap} is the small plate, {costly} the big one. Tag it."


def _pool_pay(choices, game_state, cfg):
    given = {pid: float(c) for pid, c in choices.items()}
    share = cfg["mpcr"] * sum(given.values())
    return {pid: cfg["endowment"] - g + share for pid, g in given.items()}


def _pool_ask(player_id, round_num, game_state, opts, label_map):
    return (f"Pot turn {round_num}: you hold {game_state['endowment']}, the pot returns "
            f"{game_state['mpcr']} a unit. How much goes in? Tag it.")


COOPERATION_GAMES = [
    {"game_id": "pd_canonical", "type": "simultaneous", "num_players": 2,
     "options": ["cooperate", "defect"], "num_rounds": 4,
     "payoff_matrix": {("cooperate", "cooperate"): (3, 3), ("cooperate", "defect"): (0, 5),
                       ("defect", "cooperate"): (5, 0), ("defect", "defect"): (1, 1)}},
    {"game_id": "diners_dilemma", "type": "simultaneous", "num_players": 4,
     "options": ["cheap", "costly"], "num_rounds": 4, "payoff_fn": _diner_pay,
     "query_fn": _diner_ask, "rules_text": "STAND-IN DINNER: four guests split one bill."},
    {"game_id": "pg_med_mpcr", "type": "allocation", "num_players": 4,
     "options": ["contribute", "keep"], "num_rounds": 4, "endowment": 10, "mpcr": 0.5,
     "payoff_fn": _pool_pay, "query_fn": _pool_ask,
     "rules_text": "STAND-IN POT: four savers, one shared pot."},
]
