"""Stand-in for the prompt library the paper's script imports (coop-tui's tests only)."""
