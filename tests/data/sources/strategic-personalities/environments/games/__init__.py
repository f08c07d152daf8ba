"""Stand-in game registry for coop-tui's tests (synthetic; the adapter reads the
category files one by one, as it does in the paper's code)."""
