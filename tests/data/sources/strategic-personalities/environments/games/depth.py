"""Stand-in depth games (synthetic wording, for coop-tui's tests)."""


def _ladder_pay(choices, game_state, cfg):
    first = min(int(float(c)) for c in choices.values())
    return {pid: first * (2 if int(float(c)) == first else 1) for pid, c in choices.items()}


def _ladder_ask(player_id, round_num, game_state, opts, label_map):
    return f"Ladder {round_num}: on which rung do you stop? Tag it."


def _guess_pay(choices, game_state, cfg):
    guesses = {pid: float(c) for pid, c in choices.items()}
    goal = 2 / 3 * sum(guesses.values()) / len(guesses)
    best = min(abs(g - goal) for g in guesses.values())
    return {pid: 10 if abs(g - goal) == best else 0 for pid, g in guesses.items()}


def _guess_ask(player_id, round_num, game_state, opts, label_map):
    return f"Guess {round_num}: two thirds of the mean wins. Your number? Tag it."


DEPTH_GAMES = [
    {"game_id": "centipede_6", "type": "auction", "num_players": 2, "options": ["take", "pass"],
     "num_rounds": 3, "min_bid": 1, "max_bid": 7, "payoff_fn": _ladder_pay,
     "query_fn": _ladder_ask, "rules_text": "STAND-IN LADDER."},
    {"game_id": "beauty_contest_23", "type": "auction", "num_players": 2, "options": ["guess"],
     "num_rounds": 4, "min_bid": 0, "max_bid": 100, "payoff_fn": _guess_pay,
     "query_fn": _guess_ask, "rules_text": "STAND-IN GUESSING."},
]
