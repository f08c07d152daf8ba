"""coop-tui: run, watch and analyse LLM agents in cooperation games.

The package root stays import-light (``coop-tui --help`` must be fast); the public
parser is re-exported lazily.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["parse_mixed_strategy", "ParseError", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("parse_mixed_strategy", "ParseError"):
        from coop_tui import parsing

        return getattr(parsing, name)
    raise AttributeError(name)
