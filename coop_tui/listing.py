"""``coop-tui list``: what can be used in a sweep file, and what is stored."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from coop_tui.terminal import terminal_text


def list_command(what: str, db_path: Path) -> int:
    console = Console()
    table = Table(title=what)
    if what == "games":
        from coop_tui.games import game_keys, get_game

        for col in ("key", "players", "actions", "title"):
            table.add_column(col)
        for key in game_keys():
            g = get_game(key)
            moves = (" → ".join(dict.fromkeys(m[0] for m in g.action_names))  # move by move
                     if getattr(g, "protocol", None) else ", ".join(g.action_names[0]))
            table.add_row(key, str(g.n_players), moves, g.title)
    elif what == "strategies":
        from coop_tui.agents.strategies import get_strategy, strategy_aliases, strategy_names

        aliases: dict[str, list[str]] = {}
        for alias, (target, preset) in strategy_aliases().items():
            implied = ", ".join(f"{k} = {v}" for k, v in preset.items())
            aliases.setdefault(target, []).append(f"{alias} ({implied})" if implied else alias)
        table.add_column("name")
        table.add_column("aliases")
        table.add_column("what it does")
        for name in strategy_names():
            doc = (type(get_strategy(name)).__doc__ or "").strip().splitlines()
            table.add_row(name, ", ".join(aliases.get(name, [])), doc[0] if doc else "")
    elif what == "mechanisms":
        from coop_tui.mechanisms import mechanism_class, mechanism_keys

        table.add_column("key")
        table.add_column("title")
        table.add_column("parameters")
        for key in mechanism_keys():
            cls = mechanism_class(key)
            table.add_row(key, cls.title, ", ".join(cls.Params.model_fields))
    else:
        from coop_tui.store import Store

        if not db_path.exists():
            console.print(f"no database at {db_path}")
            return 0
        store = Store(db_path)
        for col in ("id", "name", "kind", "status", "matches"):
            table.add_column(col)
        for run in store.runs():
            n = store.db.execute("select count(*) from matches where run_id = ?", [run["id"]]).fetchone()[0]
            # names come from sweep files and imports: never raw escapes or markup
            table.add_row(*(terminal_text(run[k]) or "" for k in ("id", "name", "kind", "status")),
                          str(n))
    console.print(table)
    return 0
