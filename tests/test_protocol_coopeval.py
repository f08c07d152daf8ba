"""Transcripts of CoopEval's messages under coop-tui's own protocol, one per game family.

CoopEval's information is the default protocol's (``coop_tui/protocols/default.py``): the
reasoning instruction as a system message, the game, the twist and the answer format as one
user message. Its code (Xiao215/CoopEval, ``src/games/``) has one module per game, and each
of its four mechanisms adds its own messages; ``FAMILIES`` maps each to the test that pins
its transcript. The grid games (``src/games/base.py``'s ``GridGame`` and the Trust Game,
which builds the same prompt) are pinned here: the setup and the goal to maximise one's
points, the actions A0, A1, the rules (a probability per action, chosen at the same time, one
action drawn), a payoff line per action pair from the player's side, the player's
position, and the answer as a JSON object of integer percentages summing to 100.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from coop_tui.games import get_game
from coop_tui.games.base import points
from coop_tui.spec import load_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message
from tests.test_coopeval_messages import answer, bodies, check_coopeval_layout

ROOT = Path(__file__).resolve().parent.parent

FAMILIES: dict[str, str] = {
    # CoopEval's games (src/games/*.py)
    "prisoners": "test_protocol_coopeval.py::test_grid_games_carry_coopevals_information",
    "stag_hunt": "test_protocol_coopeval.py::test_grid_games_carry_coopevals_information",
    "trust": "test_protocol_coopeval.py::test_grid_games_carry_coopevals_information",
    "matching_pennies": "test_protocol_coopeval.py::test_grid_games_carry_coopevals_information",
    "public_good": "test_coopeval_protocol.py::test_public_goods_is_described_by_its_rule",
    "travelers": "test_coopeval_messages.py::test_travelers_actions_correspond_to_numbers",
    # its mechanisms' own messages (src/mechanisms/*.py)
    "none": "test_coopeval_messages.py::test_a_matrix_game_sends_the_style_as_a_system_message",
    "repetition": "test_coopeval_protocol.py::test_repetition_history_shows_what_coopeval_shows",
    "reputation": "test_coopeval_prompts.py::test_reputation_shows_coopevals_information_and_nothing_more",
    "mediation": "test_coopeval_messages.py::test_mediation_propose_vote_and_play",
    "contracting": "test_coopeval_messages.py::test_contracting_design_vote_sign_carry_coopevals_information",
}
"""Every game and mechanism of the CoopEval study, with the test pinning its messages."""

GRID_GAMES = ("prisoners", "stag_hunt", "trust", "matching_pennies")


@pytest.fixture
def server() -> Any:
    with LoopbackServer(latency=0.0, chunks=1, answer=answer) as s:
        yield s


def test_every_game_and_mechanism_of_the_study_has_a_transcript_test() -> None:
    sweep = load_sweep(ROOT / "data/studies/coopeval.toml", check_keys=False)
    assert {c.game for c in sweep.cells} | {c.mechanism for c in sweep.cells} == set(FAMILIES)
    for where in set(FAMILIES.values()):
        file, name = where.split("::")
        tree = ast.parse((ROOT / "tests" / file).read_text())
        assert name in {n.name for n in tree.body if hasattr(n, "name")}, where


@pytest.mark.parametrize("key", GRID_GAMES)
async def test_grid_games_carry_coopevals_information(
        tmp_path: Path, server: LoopbackServer, key: str) -> None:
    requests = await bodies(tmp_path, server, {"game": key, "mechanism": "none"})
    check_coopeval_layout(requests)  # the style's system message, then one user message
    game = get_game(key)
    seats_seen = set()
    for body in requests:
        user = last_user_message(body)
        seat = int(re.search(r"you are Player (\d)", user).group(1)) - 1  # type: ignore[union-attr]
        seats_seen.add(seat)
        assert "Your goal is to collect as many points as you can" in user
        assert "- A0\n- A1\n" in user and "- A2" not in user
        assert "picks a probability for each of their actions, all at the same time" in user
        assert "one action per player is drawn from the probabilities" in user
        for mine in range(2):  # one line per action pair, from this player's side
            for theirs in range(2):
                profile = (mine, theirs) if seat == 0 else (theirs, mine)
                pay = game.payoff(profile)
                line = (f"- If you choose A{mine} and the other player chooses A{theirs}: "
                        f"you get {points(pay[seat])}, the other player gets "
                        f"{points(pay[1 - seat])}.")
                assert line in user, line
        assert "Use exactly these keys: A0, A1." in user
        assert "whole percentage points (integers)" in user and "add up to exactly 100" in user
        assert user.endswith('{"A0": <INT>, "A1": <INT>}')  # the example answer, last
    assert seats_seen == {0, 1}
