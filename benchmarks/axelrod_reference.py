"""Write the Axelrod library's mean payoffs per round for our eight-strategy tournament.

The Axelrod library needs PyTorch at import, far too heavy to be a test dependency, so its
numbers are produced by this script (run it with an interpreter that has ``axelrod``) and
kept in ``tests/data/axelrod_pd_canonical_200.json``; ``tests/test_axelrod_parity.py`` then
checks that coop-tui's engine gives the same number for every ordered pairing.

    python -m venv /tmp/axl && /tmp/axl/bin/pip install axelrod torch==2.13.0
    /tmp/axl/bin/python benchmarks/axelrod_reference.py
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import axelrod as axl

PAIRS = {
    "always_cooperate": "Cooperator",
    "always_defect": "Defector",
    "tit_for_tat": "TitForTat",
    "suspicious_tit_for_tat": "SuspiciousTitForTat",
    "grim_trigger": "Grudger",
    "win_stay_lose_shift": "WinStayLoseShift",
    "alternator": "Alternator",
    "tit_for_two_tats": "TitFor2Tats",
}
TURNS = 200
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "axelrod_pd_canonical_200.json"


def main() -> None:
    game = axl.Game(r=3, s=0, t=5, p=1)
    table: dict[str, dict[str, list[float]]] = {}
    for ours_a, ours_b in itertools.product(PAIRS, repeat=2):
        a, b = getattr(axl, PAIRS[ours_a])(), getattr(axl, PAIRS[ours_b])()
        match = axl.Match((a, b), turns=TURNS, game=game)
        match.play()
        scores = match.final_score_per_turn()
        table.setdefault(ours_a, {})[ours_b] = [float(scores[0]), float(scores[1])]
    OUT.write_text(json.dumps({
        "axelrod_version": axl.__version__,
        "game": "pd_canonical (R=3, S=0, T=5, P=1)",
        "turns": TURNS,
        "mean_payoff_per_round": table,
    }, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
