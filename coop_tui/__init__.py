"""coop-tui: run, watch and analyse LLM agents in cooperation games.

The package root stays import-light (``coop-tui --help`` must be fast); the public
parser and the Python API (:mod:`coop_tui.api`) are re-exported lazily.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["parse_mixed_strategy", "ParseError", "open_db", "run_sweep", "CoopDB", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("parse_mixed_strategy", "ParseError"):
        from coop_tui import parsing

        return getattr(parsing, name)
    if name in ("open_db", "run_sweep", "CoopDB"):
        from coop_tui import api

        return getattr(api, name)
    raise AttributeError(name)
