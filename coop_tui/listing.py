"""``coop-tui list``: what can be used in a sweep file, and what is stored.

Each listing is built once as rows of plain values, then printed three ways: a table
fitted to the terminal; tab-separated lines with every value in full when stdout is not a
terminal (``coop-tui list games | grep punish`` must see whole names, not a table cut to
80 columns); or JSON (``--json``) for scripts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from coop_tui.agents.custom import agent_class, agent_names, agent_summary
from coop_tui.agents.strategies import get_strategy, strategy_aliases, strategy_names
from coop_tui.analysis.sections import keys as section_keys
from coop_tui.plugins import plugin_records
from coop_tui.shipped import shipped_sweeps
from coop_tui.store import Store
from coop_tui.terminal import NAME_WIDTH, terminal_text

COLUMNS = {
    "games": ("key", "players", "actions", "title"),
    "strategies": ("name", "aliases", "what it does"),
    "mechanisms": ("key", "title", "parameters"),
    "runs": ("id", "name", "kind", "status", "matches"),
    "studies": ("name", "folder", "path"),
    "agents": ("name", "class", "what it does"),
    "plugins": ("group", "name", "dist", "version", "error"),
}
"""The columns of each listing (and the keys of its JSON objects, spaces as "_")."""


def game_rows() -> list[dict[str, Any]]:
    from coop_tui.games import game_keys, get_game

    rows = []
    for key in game_keys():
        g = get_game(key)
        protocol = getattr(g, "protocol", None)
        rows.append({
            "key": key, "players": g.n_players,
            # a move-by-move game lists its moves in order; a matrix game its actions
            "actions": (list(dict.fromkeys(m[0] for m in g.action_names)) if protocol
                        else list(g.action_names[0])),
            "title": g.title,
            "moves_in_turn": bool(protocol),
        })
    return rows


def strategy_rows() -> list[dict[str, Any]]:
    aliases: dict[str, list[str]] = {}
    for alias, (target, preset) in strategy_aliases().items():
        implied = ", ".join(f"{k} = {v}" for k, v in preset.items())
        aliases.setdefault(target, []).append(f"{alias} ({implied})" if implied else alias)
    rows = []
    for name in strategy_names():
        doc = (type(get_strategy(name)).__doc__ or "").strip().splitlines()
        rows.append({"name": name, "aliases": aliases.get(name, []),
                     "what_it_does": doc[0] if doc else ""})
    return rows


def mechanism_rows() -> list[dict[str, Any]]:
    from coop_tui.mechanisms import mechanism_class, mechanism_keys

    return [{"key": key, "title": mechanism_class(key).title,
             "parameters": list(mechanism_class(key).Params.model_fields)}
            for key in mechanism_keys()]


def agent_rows() -> list[dict[str, Any]]:
    """Agent classes installed plugins registered (``agent = "<name>"`` in a sweep)."""
    return [{"name": name, "class": f"{cls.__module__}:{cls.__qualname__}",
             "what_it_does": agent_summary(name)}
            for name in agent_names() for cls in [agent_class(name)]]


def plugin_rows() -> list[dict[str, Any]]:
    """Every installed entry point of coop-tui's groups, loaded or not, with its error.

    Each registry is asked once, so each group's entry points are loaded (or refused)
    exactly as a sweep would load them."""
    from coop_tui.games import game_keys
    from coop_tui.mechanisms import mechanism_keys

    game_keys(), mechanism_keys(), strategy_names(), agent_names(), section_keys()
    return [{**r.row(), "error": r.error or ""} for r in plugin_records()]


def run_rows(db_path: Path) -> list[dict[str, Any]]:
    store = Store(db_path)
    try:
        return [{"id": r["id"], "name": r["name"], "kind": r["kind"], "status": r["status"],
                 "matches": r["matches"], "decisions": r["decisions"],
                 "cost_usd": r["cost_usd"], "created_at": r["created_at"]}
                for r in store.run_summaries(limit=10**9)]
    finally:
        store.close()


def study_rows() -> list[dict[str, Any]]:
    """The sweep and study files shipped in the package; ``--batch NAME`` runs one."""
    return [{"name": name, "folder": path.parent.name, "path": str(path)}
            for name, path in shipped_sweeps().items()]


def _cell(what: str, column: str, row: dict[str, Any]) -> str:
    value = row[column.replace(" ", "_")]
    if what == "games" and column == "actions":  # moves in order, or the action list
        return (" → " if row["moves_in_turn"] else ", ").join(value)
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def list_command(what: str, db_path: Path, *, as_json: bool = False) -> int:
    if what == "runs":
        if not db_path.exists():
            print(f"no database at {db_path}", file=sys.stderr)
            rows: list[dict[str, Any]] = []
        else:
            rows = run_rows(db_path)
    else:
        rows = {"games": game_rows, "strategies": strategy_rows,
                "mechanisms": mechanism_rows, "studies": study_rows,
                "agents": agent_rows, "plugins": plugin_rows}[what]()
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    columns = COLUMNS[what]
    if not sys.stdout.isatty():
        # piped or redirected: one line per row, tab-separated, every value in full, so
        # `coop-tui list games | grep punish` and `cut -f1` see whole names
        print("\t".join(columns))
        for row in rows:
            print("\t".join(terminal_text(_cell(what, col, row), markup=False).replace("\t", " ")
                             for col in columns))
        return 0
    table = Table(title=what)
    for col in columns:
        table.add_column(col)
    for row in rows:
        # names come from sweep files and imports: never raw escapes or markup
        table.add_row(*[terminal_text(_cell(what, col, row), limit=NAME_WIDTH if col == "name" else None)
                        for col in columns])
    Console().print(table)
    return 0
