"""docs/wording.md says what the paper sources say: each one's name, repository and tested
commit, so a reader checks out the commit the adapter was verified against."""

from __future__ import annotations

import re
from pathlib import Path

from coop_tui.sources import sources

PAGE = Path(__file__).parent.parent / "docs" / "wording.md"


def _table() -> dict[str, tuple[str, str]]:
    """{source name: (repository, tested commit)} from the page's table of commits."""
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| `([\w./-]+)` \| `(\w+)` \|$", PAGE.read_text(), re.M)
    return {name: (repo, commit) for name, repo, commit in rows}


def test_the_page_lists_every_source_at_its_tested_commit() -> None:
    table = _table()
    assert {"coopeval", "strategic_personalities", "superadditive"} <= set(table)
    for name, source in sources().items():
        assert table.get(name) == (source.repository, source.tested_commit), (
            f"docs/wording.md's table of tested commits disagrees with the {name} adapter")


def test_the_page_opens_with_a_summary_table_and_names_every_value() -> None:
    text = PAGE.read_text()
    head = text.split("\n## ", 1)[0]
    assert "| what | where |" in head
    for needle in ('wording = "source"', "--source NAME=PATH", "[sources]", '"user_end"',
                   '"system"', "--dry-run", "--resume"):
        assert needle in text
