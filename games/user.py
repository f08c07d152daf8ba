"""User game files: a finite game written as TOML or YAML, checked field by field.

A file gives ``actions`` (one list shared by every seat, or one list per seat),
``players`` (needed when the list is shared), a ``payoffs`` table, and optionally
``cooperative`` / ``defect`` action names, ``key``, ``title`` and ``description``.
The payoff table takes one of three shapes, whichever is easiest to write:

* a nested table keyed by action names, one level per seat, ending in one payoff per
  player: ``payoffs.Stag.Hare = [0, 3]`` (the natural form for two players);
* a list of outcomes, ``[[payoffs]] profile = ["Stag", "Hare"]  payoffs = [0, 3]``,
  which must list every action profile exactly once;
* a full nested list (tensor) indexed by action positions: ``payoffs[a1][a2] = [p1, p2]``.

Every mistake raises :class:`GameError` naming the file, the field and the fix, because
these files are written by hand and the first reader of the message is their author.
"""

from __future__ import annotations

import difflib
import itertools
import math
import numbers
import tomllib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui.games.base import Game, GameError
from coop_tui.inputs import TooManyAliases, check_yaml_aliases, read_regular

FIELDS = ("key", "title", "description", "players", "actions", "cooperative", "defect", "payoffs")
MAX_PROFILES = 1_000_000
MAX_PAYOFF = 1e12
"""Largest payoff magnitude: sums and squares over a million decisions must stay finite
(1e308 is a float, but its mean and standard error are not)."""


class _Fail(Exception):
    """Internal: a field-level problem, turned into a GameError with the file name."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(field, problem, fix)
        self.field, self.problem, self.fix = field, problem, fix


def read_game_file(path: Path) -> dict[str, Any]:
    """Parse TOML or YAML into a mapping; syntax errors name the file and line."""
    if not path.is_file():
        raise GameError(f"game file {str(path)!r} does not exist; check the path")
    try:
        text = read_regular(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GameError(f"{path}: not UTF-8 text (byte {exc.start:,}); save it as UTF-8") from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            import yaml

            loader = yaml.SafeLoader(text)
            try:
                node = loader.get_single_node()
                if node is not None:
                    check_yaml_aliases(node)
                data = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
    except TooManyAliases as exc:
        raise GameError(f"{path}: {exc}") from None
    except RecursionError:
        raise GameError(f"{path}: nested too deeply to read; a game file needs a few levels") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise GameError(f"{path}: not valid TOML: {exc}") from None
    except Exception as exc:  # yaml.YAMLError and friends carry the line in their text
        raise GameError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise GameError(f"{path}: the file must hold a table of fields ({', '.join(FIELDS)})")
    return dict(data)


def load_user_game(ref: str | Path, builtin_keys: Collection[str] = ()) -> Game:
    """Read and validate a user game file into a :class:`Game`. ``builtin_keys``: the
    registry's keys, which a user game may not take (the registry passes them in, so this
    module needs nothing from it)."""
    path = Path(ref).expanduser()
    data = read_game_file(path)
    try:
        return build_user_game(data, default_key=path.stem, builtin_keys=builtin_keys)
    except _Fail as fail:
        raise GameError(f"{path}: field `{fail.field}`: {fail.problem}. Fix: {fail.fix}") from None


def build_user_game(
    data: Mapping[str, Any], default_key: str = "user_game", builtin_keys: Collection[str] = ()
) -> Game:
    """Validate already-parsed file contents (raises ``_Fail``; see ``load_user_game``)."""
    unknown = [k for k in data if k not in FIELDS]
    if unknown:
        name = str(unknown[0])
        close = difflib.get_close_matches(name, FIELDS, n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"use only {', '.join(FIELDS)}"
        raise _Fail(name, "is not a game-file field", hint)
    key = _text(data, "key", default_key)
    if not key.replace("_", "").replace("-", "").isalnum():
        raise _Fail("key", f"{key!r} is not a simple name", "use letters, digits, _ or -")
    _check_not_builtin(key, builtin_keys)
    title = _text(data, "title", key)
    description = _text(data, "description", "")
    action_names = _actions(data)
    payoffs = _payoffs(data, action_names)
    cooperative, defect = _cooperation(data, action_names)
    return Game(
        key=key,
        title=title,
        description=description,
        action_names=action_names,
        payoffs=payoffs,
        cooperative=cooperative,
        defect=defect,
        params={},
    )


def _check_not_builtin(key: str, builtin_keys: Collection[str]) -> None:
    if key in builtin_keys:
        raise _Fail(
            "key",
            f"{key!r} is already a built-in game, so runs of the two would be mixed up",
            "choose another key (or rename the file if you rely on the default key)",
        )


def _text(data: Mapping[str, Any], field: str, default: str) -> str:
    value = data.get(field, default)
    if not isinstance(value, str) or (field == "key" and not value):
        raise _Fail(field, f"must be a text string, got {value!r}", f'write {field} = "..."')
    return value


# --------------------------------------------------------------------------- actions
def _actions(data: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    if "actions" not in data:
        raise _Fail(
            "actions",
            "is missing",
            'list the actions, e.g. actions = ["Cooperate", "Defect"] (shared by every '
            'seat) or actions = [["Give", "Keep"], ["Share", "Take"]] (one list per seat)',
        )
    raw = data["actions"]
    if not isinstance(raw, list) or not raw:
        raise _Fail("actions", f"must be a non-empty list, got {raw!r}", "write a list of names")
    per_seat = all(isinstance(x, list) for x in raw)
    if per_seat:
        seats = [_seat_actions(f"actions[{i}]", x) for i, x in enumerate(raw)]
        if "players" in data and _players(data) != len(seats):
            raise _Fail(
                "players",
                f"says {data['players']} but actions lists {len(seats)} seats",
                "make them agree, or drop players (it follows from per-seat actions)",
            )
    else:
        if any(isinstance(x, list) for x in raw):
            raise _Fail(
                "actions",
                "mixes names and lists",
                "use one list of names shared by every seat, or one list per seat",
            )
        if "players" not in data:
            raise _Fail(
                "players",
                "is missing (needed because actions is one list shared by every seat)",
                "add players = 2 (or however many seats the game has)",
            )
        seats = [_seat_actions("actions", raw)] * _players(data)
    if len(seats) < 2:
        raise _Fail("actions", "describes fewer than two seats", "a game needs at least 2 players")
    if math.prod(len(s) for s in seats) > MAX_PROFILES:
        raise _Fail("actions", "gives more than a million action profiles", "use fewer actions")
    return tuple(seats)


def _players(data: Mapping[str, Any]) -> int:
    value = data["players"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise _Fail(
            "players", f"must be a whole number of at least 2, got {value!r}", "write players = 2"
        )
    return value


def _seat_actions(field: str, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise _Fail(
            field,
            f"must list at least two actions, got {raw!r}",
            'write e.g. ["Cooperate", "Defect"]',
        )
    for i, name in enumerate(raw):
        if not isinstance(name, str) or not name.strip():
            raise _Fail(
                f"{field}[{i}]",
                f"must be a non-empty action name, got {name!r}",
                "quote each action name as text",
            )
    dupes = sorted({n for n in raw if raw.count(n) > 1})
    if dupes:
        raise _Fail(field, f"names {dupes[0]!r} twice", "give every action a distinct name")
    return tuple(raw)


def _index(field: str, name: Any, names: Sequence[str], seat: int) -> int:
    if isinstance(name, str) and name in names:
        return names.index(name)
    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise _Fail(
        field,
        f"{name!r} is not an action of player {seat + 1}",
        f"{hint}player {seat + 1}'s actions are {', '.join(map(repr, names))}",
    )


# --------------------------------------------------------------------------- payoffs
def _payoffs(data: Mapping[str, Any], seats: tuple[tuple[str, ...], ...]) -> np.ndarray:
    if "payoffs" not in data:
        raise _Fail(
            "payoffs",
            "is missing",
            "add a payoff table: [payoffs.<row action>] <column action> = [p1, p2], "
            "a list of {profile = [...], payoffs = [...]} entries, or a nested list",
        )
    raw = data["payoffs"]
    n = len(seats)
    counts = tuple(len(s) for s in seats)
    if isinstance(raw, Mapping):
        tensor = np.full((*counts, n), np.nan)
        _fill_nested_table(tensor, raw, seats, (), "payoffs")
        return tensor
    if isinstance(raw, list) and raw and all(isinstance(e, Mapping) for e in raw):
        return _from_profile_list(raw, seats)
    if isinstance(raw, list):
        tensor = np.full((*counts, n), np.nan)
        _fill_nested_list(tensor, raw, counts, (), "payoffs")
        return tensor
    raise _Fail(
        "payoffs",
        f"has the wrong type ({type(raw).__name__})",
        "use a nested table, a list of outcomes or a nested list",
    )


def _outcome(field: str, value: Any, n: int) -> list[float]:
    if (
        not isinstance(value, list)
        or len(value) != n
        or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in value)
    ):
        raise _Fail(
            field,
            f"must be a list of {n} numbers (one per player), got {value!r}",
            f"write [{', '.join(f'p{i + 1}' for i in range(n))}]",
        )
    try:
        floats = [float(v) for v in value]
    except OverflowError:
        floats = [math.inf]
    if not all(math.isfinite(v) for v in floats):
        raise _Fail(field, "holds a non-finite number (inf, nan or too large)", "use finite numbers")
    if any(abs(v) > MAX_PAYOFF for v in floats):
        raise _Fail(
            field,
            f"holds a payoff beyond ±{MAX_PAYOFF:g}, too large for sums and standard errors",
            "rescale the payoffs (only their ratios matter for the analysis)",
        )
    return floats


def _fill_nested_table(
    tensor: np.ndarray,
    table: Mapping[str, Any],
    seats: tuple[tuple[str, ...], ...],
    prefix: tuple[int, ...],
    field: str,
) -> None:
    seat = len(prefix)
    names = seats[seat]
    for name in table:
        _index(f"{field}.{name}", name, names, seat)
    missing = [a for a in names if a not in table]
    if missing:
        raise _Fail(
            field,
            f"has no entry for player {seat + 1}'s action {missing[0]!r}",
            f"add {field}.{missing[0]} (every action of every seat needs an entry)",
        )
    for i, name in enumerate(names):
        value, sub = table[name], f"{field}.{name}"
        if seat == len(seats) - 1:
            tensor[(*prefix, i)] = _outcome(sub, value, len(seats))
        elif isinstance(value, Mapping):
            _fill_nested_table(tensor, value, seats, (*prefix, i), sub)
        else:
            raise _Fail(
                sub,
                f"must be a table keyed by player {seat + 2}'s actions, got {value!r}",
                f"nest one level per player ({len(seats)} levels)",
            )


def _fill_nested_list(
    tensor: np.ndarray, rows: Any, counts: tuple[int, ...], prefix: tuple[int, ...], field: str
) -> None:
    seat = len(prefix)
    if not isinstance(rows, list) or len(rows) != counts[seat]:
        got = len(rows) if isinstance(rows, list) else type(rows).__name__
        raise _Fail(
            field,
            f"must have {counts[seat]} entries (one per action of player {seat + 1}), got {got}",
            f"the full table has shape {' x '.join(map(str, counts))} with a list of "
            f"{len(counts)} payoffs in each cell",
        )
    for i, value in enumerate(rows):
        sub = f"{field}[{i}]"
        if seat == len(counts) - 1:
            tensor[(*prefix, i)] = _outcome(sub, value, len(counts))
        else:
            _fill_nested_list(tensor, value, counts, (*prefix, i), sub)


def _from_profile_list(
    entries: list[Mapping[str, Any]], seats: tuple[tuple[str, ...], ...]
) -> np.ndarray:
    n = len(seats)
    counts = tuple(len(s) for s in seats)
    tensor = np.full((*counts, n), np.nan)
    seen: dict[tuple[int, ...], int] = {}
    for e, entry in enumerate(entries):
        field = f"payoffs[{e}]"
        extra = set(entry) - {"profile", "payoffs"}
        if extra or "profile" not in entry or "payoffs" not in entry:
            raise _Fail(
                field,
                "must have exactly the fields profile and payoffs",
                'write {profile = ["A", "B"], payoffs = [1, 2]}',
            )
        profile = entry["profile"]
        if not isinstance(profile, list) or len(profile) != n:
            raise _Fail(
                f"{field}.profile",
                f"must name one action per player ({n}), got {profile!r}",
                "list one action name for each seat, in seat order",
            )
        idx = tuple(_index(f"{field}.profile[{s}]", a, seats[s], s) for s, a in enumerate(profile))
        if idx in seen:
            raise _Fail(
                f"{field}.profile",
                f"repeats the outcome of payoffs[{seen[idx]}]",
                "list every action profile once",
            )
        seen[idx] = e
        tensor[idx] = _outcome(f"{field}.payoffs", entry["payoffs"], n)
    if len(seen) < math.prod(counts):
        for idx in itertools.product(*(range(c) for c in counts)):
            if idx not in seen:
                names = [seats[s][a] for s, a in enumerate(idx)]
                raise _Fail(
                    "payoffs",
                    f"lists {len(seen)} of {math.prod(counts)} outcomes; {names} is missing",
                    f"add {{profile = {names}, payoffs = [...]}} and every other missing one",
                )
    return tensor


# --------------------------------------------------------------------------- cooperation
def _cooperation(
    data: Mapping[str, Any], seats: tuple[tuple[str, ...], ...]
) -> tuple[tuple[frozenset[int], ...], tuple[int | None, ...]]:
    n = len(seats)
    has_c, has_d = "cooperative" in data, "defect" in data
    if not has_c and not has_d:
        return (frozenset(),) * n, (None,) * n
    if has_c != has_d:
        given, other = ("cooperative", "defect") if has_c else ("defect", "cooperative")
        raise _Fail(
            other,
            f"is missing although {given} is given",
            "name both the cooperative and the defect action, or neither",
        )
    coop = _coop_sets(data["cooperative"], seats)
    defect = _defect_actions(data["defect"], seats)
    for s in range(n):
        if defect[s] in coop[s]:
            raise _Fail(
                "defect",
                f"{seats[s][defect[s]]!r} is also listed as cooperative",
                "an action cannot be both cooperative and the defect action",
            )
    return coop, defect


def _coop_sets(raw: Any, seats: tuple[tuple[str, ...], ...]) -> tuple[frozenset[int], ...]:
    n = len(seats)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise _Fail(
            "cooperative",
            f"must be an action name or a list of names, got {raw!r}",
            'write cooperative = "Cooperate"',
        )
    if all(isinstance(x, list) for x in raw):
        if len(raw) != n:
            raise _Fail(
                "cooperative",
                f"gives {len(raw)} per-seat lists for {n} players",
                "give one list per seat, or one list of names shared by every seat",
            )
        per_seat = raw
    else:
        per_seat = [raw] * n
    sets = []
    for s, names in enumerate(per_seat):
        if not names:
            raise _Fail(f"cooperative[{s}]", "is empty", "name at least one cooperative action")
        sets.append(frozenset(_index("cooperative", a, seats[s], s) for a in names))
    return tuple(sets)


def _defect_actions(raw: Any, seats: tuple[tuple[str, ...], ...]) -> tuple[int, ...]:
    n = len(seats)
    if isinstance(raw, str):
        return tuple(_index("defect", raw, seats[s], s) for s in range(n))
    if isinstance(raw, list) and len(raw) == n:
        return tuple(_index(f"defect[{s}]", a, seats[s], s) for s, a in enumerate(raw))
    raise _Fail(
        "defect",
        f"must be one action name, or one name per seat ({n}), got {raw!r}",
        'write defect = "Defect"',
    )
