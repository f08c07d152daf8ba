"""Stand-in: pull the last JSON object out of a reply."""

import json
from typing import Any


def extract_json_object_from_end(response: str) -> dict[str, Any]:
    """The last {...} of the reply that parses as a JSON object."""
    for start in range(len(response) - 1, -1, -1):
        if response[start] != "{":
            continue
        try:
            found, _ = json.JSONDecoder().raw_decode(response[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict):
            return found
    raise ValueError("stand-in: no object in the reply")
