"""Write the Axelrod library's move transcripts for the strategic personalities paper's opponents that it also has.

Each of our strategies below has a namesake in the Axelrod library (same rule on a
prisoner's dilemma). This script plays the library's version against a set of probes
(fixed, reactive and seeded random co-players) for 30 rounds and stores both move
sequences in ``tests/data/axelrod_seed003_transcripts.json``; ``tests/test_seed003_opponents.py``
then replays each co-player sequence against our strategy and checks it answers move for
move what the library's did. The library needs PyTorch, too heavy for the test
environment, so run this with an interpreter that has ``axelrod``:

    /work/wt/axelrod-venv/bin/python benchmarks/axelrod_seed003_transcripts.py
"""

from __future__ import annotations

import json
from pathlib import Path

import axelrod as axl

OURS = {  # our name (with parameters) -> the Axelrod library's class
    "hard_tit_for_tat": ({}, "HardTitForTat"),
    "tit_for_tat_sp": ({}, "TitForTat"),
    "suspicious_tit_for_tat_sp": ({}, "SuspiciousTitForTat"),
    "tit_for_two_tats_sp": ({}, "TitFor2Tats"),
    "reverse_tit_for_tat_sp": ({}, "Bully"),
    "grim_trigger_sp": ({}, "Grudger"),
    "win_stay_lose_shift_sp": ({}, "WinStayLoseShift"),
    "always_cooperate_sp": ({}, "Cooperator"),
    "always_defect_sp": ({}, "Defector"),
    "mirror": ({"opening": "cooperate"}, "TitForTat"),
    "anti_mirror": ({"opening": "cooperate"}, "AntiTitForTat"),
}
PROBES = {
    "Cooperator": lambda: axl.Cooperator(),
    "Defector": lambda: axl.Defector(),
    "Alternator": lambda: axl.Alternator(),
    "TitForTat": lambda: axl.TitForTat(),
    "SuspiciousTitForTat": lambda: axl.SuspiciousTitForTat(),
    "Grudger": lambda: axl.Grudger(),
    "CyclerCCD": lambda: axl.Cycler("CCD"),
    "Random(0.5)": lambda: axl.Random(0.5),
    "Random(0.2)": lambda: axl.Random(0.2),
    "Random(0.8)": lambda: axl.Random(0.8),
}
TURNS = 30
SEED = 3
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "axelrod_seed003_transcripts.json"


def letters(history: list) -> str:
    return "".join(str(a) for a in history)


def main() -> None:
    game = axl.Game(r=3, s=0, t=5, p=1)
    table: dict[str, dict] = {}
    for ours, (params, theirs) in OURS.items():
        rows = {}
        for probe, make in PROBES.items():
            match = axl.Match((getattr(axl, theirs)(), make()), turns=TURNS, game=game, seed=SEED)
            match.play()
            p1, p2 = match.players
            rows[probe] = {"own": letters(p1.history), "co_player": letters(p2.history)}
        table[ours] = {"params": params, "axelrod": theirs, "against": rows}
    OUT.write_text(json.dumps({
        "axelrod_version": axl.__version__,
        "game": "pd_canonical (R=3, S=0, T=5, P=1)",
        "turns": TURNS,
        "seed": SEED,
        "transcripts": table,
    }, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
