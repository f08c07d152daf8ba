"""Stand-in fairness games (synthetic wording, for coop-tui's tests)."""


def _split_pay(choices, game_state, cfg):
    offer = float(choices.get(0, 0))
    if choices.get(1) == "accept":
        return {0: 100 - offer, 1: offer}
    return {0: 0, 1: 0}


def _split_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Split {round_num}: name the share you hand over. Tag it."
    return f"Split {round_num}: you were handed {game_state.get('offer', '?')}. Take it? Tag it."


def _keep_offer(state, pid, choice):
    state = dict(state)
    if pid == 0:
        state["offer"] = choice
    return state


def _watch_pay(choices, game_state, cfg):
    gift, fine = float(choices.get(0, 0)), float(choices.get(2, 0))
    return {0: max(0, 100 - gift - 3 * fine), 1: gift, 2: 50 - fine}


def _watch_ask(player_id, round_num, game_state, opts, label_map):
    if player_id == 0:
        return f"Share {round_num}: how much for the bystander? Tag it."
    return f"Share {round_num}: the sharer gave {game_state.get('offer', '?')}. Fine them? Tag it."


FAIRNESS_GAMES = [
    {"game_id": "ultimatum", "type": "sequential", "num_players": 2,
     "options": ["accept", "reject"], "num_rounds": 4, "move_order": [0, 1],
     "numeric_players": [0], "min_val": 0, "max_val": 100, "payoff_fn": _split_pay,
     "query_fn": _split_ask, "update_state_fn": _keep_offer,
     "rules_text": "STAND-IN SPLIT: one offers, the other takes it or not."},
    {"game_id": "third_party_punishment", "type": "sequential", "num_players": 3,
     "options": ["punish", "forgive"], "num_rounds": 4, "move_order": [0, 2],
     "numeric_response": True, "min_val": 0, "max_val": 100, "payoff_fn": _watch_pay,
     "query_fn": _watch_ask, "update_state_fn": _keep_offer,
     "rules_text": "STAND-IN WATCH: a sharer, a bystander and a judge."},
]
