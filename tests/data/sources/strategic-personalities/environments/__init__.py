"""Stand-in package for coop-tui's tests (synthetic; see engine.py)."""
