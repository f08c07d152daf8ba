"""A stand-in prompt builder for coop-tui's wording tests (not any paper's code)."""

MARK = "TOY WORDING"


def build_prompt(game_title, seat, round_number, labels):
    """The one user message of a decision, as this stand-in words it."""
    options = " or ".join(labels)
    return (f"{MARK}: seat {seat} of {game_title}, round {round_number}.\n"
            f"Choose among {options}; answer with one JSON object of whole percentages.")


def build_retry(previous, reason):
    """The text of a re-ask after an answer that could not be read."""
    return f"{MARK} RETRY: that answer failed ({reason}). Send the JSON object only."
