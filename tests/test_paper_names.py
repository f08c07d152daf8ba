"""People read the papers' names, never the project's internal numbers for them.

The papers behind the studies were known inside the project as seeds 000 to 004; a report
title, a game's description or a docs page that says "seed 003" tells a reader nothing.
Everything a person reads names the paper instead: similarity signals, CoopEval,
strategic personalities, super-additive cooperation. (Values a user types, such as
``prompt_protocol = "seed003"``, and module names may keep the number.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coop_tui.analysis.sections import sections
from coop_tui.cli import main
from coop_tui.games import game_family, game_keys, get_game
from coop_tui.judging.rubric import load_rubric, rubrics_dir

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = re.compile(r"seeds?[ _-]?00[0-4]", re.IGNORECASE)


def test_report_section_titles_name_the_paper() -> None:
    titles = [s.title for s in sections()]
    assert len(titles) > 15
    assert [t for t in titles if INTERNAL.search(t)] == []
    assert "Team tournaments (super-additive cooperation)" in titles


def test_game_titles_and_descriptions_name_the_paper() -> None:
    shown = {key: f"{get_game(key).title} {game_family(key).summary}" for key in game_keys()}
    assert {k: v for k, v in shown.items() if INTERNAL.search(v)} == {}


@pytest.mark.parametrize("what", ["games", "strategies", "mechanisms", "studies"])
def test_list_output_names_the_paper(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["list", what], ["list", what, "--json"]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert out.strip() and not INTERNAL.search(out), INTERNAL.findall(out)


def test_rubric_titles_name_the_paper() -> None:
    for path in sorted(rubrics_dir().glob("*.toml")):
        assert not INTERNAL.search(load_rubric(path.stem).title), path.name


def test_docs_name_the_paper() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    # `seed003` alone is the prompt_protocol value users type, and file names keep it
    prose = re.compile(r"seeds?[ -]00[0-4]", re.IGNORECASE)
    found = {p.name: prose.findall(p.read_text()) for p in pages}
    assert {k: v for k, v in found.items() if v} == {}
