"""Stand-in parsers of votes and per-action values."""

from coopeval.utils.json_io import extract_json_object_from_end


def parse_bool_votes(response: str, *, prefix: str, count: int) -> dict[int, bool]:
    found = extract_json_object_from_end(response)
    keys = [f"{prefix}{i}" for i in range(1, count + 1)]
    if sorted(found) != sorted(keys) or not all(isinstance(found[k], bool) for k in keys):
        raise ValueError(f"stand-in: a ballot needs {keys} as true/false")
    return {i: found[f"{prefix}{i}"] for i in range(1, count + 1)}


def parse_action_value_map(response: str, *, num_actions: int) -> dict[int, int]:
    found = extract_json_object_from_end(response)
    if sorted(found) != sorted(f"A{i}" for i in range(num_actions)):
        raise ValueError("stand-in: a contract needs one whole number per action")
    return {int(k[1:]): int(v) for k, v in found.items()}
