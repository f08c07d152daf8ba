"""What CoopEval's published files mean, shared by both importers of them.

:mod:`coop_tui.importers.coopeval` reads a tournament's ``records.jsonl`` and
:mod:`coop_tui.importers.coopeval_payoffs` one known only by its payoffs (and every
Reputation tournament); both need the same vocabulary: the game and mechanism names, the
agent labels, the player ids, the game log's entries, the import plan and how a decision
row is built from a logged prompt and answer. It lives here, below both, so neither
imports the other's internals.
"""

from __future__ import annotations

import io
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from coop_tui.decisions import Attempt, Decision
from coop_tui.games._checks import clean
from coop_tui.games.base import Game, bimatrix
from coop_tui.games.public_good import public_good
from coop_tui.games.travelers import travelers
from coop_tui.games.user import MAX_PAYOFF
from coop_tui.importers.coopeval_log import classify_prompt, iter_log_entries
from coop_tui.inputs import (
    MAX_DECOMPRESSED_BYTES,
    InputTooLarge,
    NotRegularFile,
    open_bounded,
    read_regular,
)
from coop_tui.parsing import ParseError, parse_mixed_strategy

GAMES = {
    # CoopEval game type -> (our key, title); the 2 x 2 ones are tables keyed "CC", "CD", ...
    "PrisonersDilemma": ("prisoners", "Prisoner's Dilemma"),
    "TrustGame": ("trust", "Trust"),
    "StagHunt": ("stag_hunt", "Stag Hunt"),
    "MatchingPennies": ("matching_pennies", "Matching Pennies"),
    # described by parameters, built with our own game families
    "PublicGoods": ("public_good", "Public Goods"),
    "TravellersDilemma": ("travelers", "Traveler's Dilemma"),
}
MECHANISMS = {
    "NoMechanism": "none",
    "Repetition": "repetition",
    "Mediation": "mediation",
    "Contracting": "contracting",
    "Reputation": "reputation",
    "ReputationFirstOrder": "reputation",
}
REPUTATION_ORDER = {"Reputation": "higher", "ReputationFirstOrder": "first"}
"""CoopEval's two Reputation variants: agents see first-order reputations only
(``max_recursion_depth`` 1) or also their co-players' reputations' reputations."""
AGENT_SUFFIX = {"CoTAgent": "CoT", "IOAgent": "IO"}
_PLAYER = re.compile(r"^(?P<agent>.+)#P(?P<seat>\d+)$")
_RETRY_QUOTE = re.compile(
    r"\n\nYour previous response was:\n(?P<response>.*)\n\nThat response is INVALID because: "
    r"(?P<reason>.*)\n\nPlease give the new output again!",
    re.DOTALL,
)


class CoopEvalError(ValueError):
    """The directory cannot be imported; the message says which file and what is wrong."""


def finite_payoff(value: Any, where: str) -> float:
    """A payoff or points value as a float: a number, finite, within ±MAX_PAYOFF (the
    bound game files have). JSON's NaN, Infinity and 1e308 are refused here, before they
    reach sums, standard errors or the population dynamics."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CoopEvalError(f"{where}: points {str(value)[:40]!r} is not a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or abs(number) > MAX_PAYOFF:
        raise CoopEvalError(f"{where}: points {str(value)[:40]} is not a finite number within "
                            f"±{MAX_PAYOFF:g}; a CoopEval log holds ordinary payoffs")
    return number


# ----------------------------------------------------------------------------- reading


def read_input_bytes(path: Path) -> bytes:
    """A file of a CoopEval directory read whole (hashed, or a JSON document): a regular
    file within the records' bound (:data:`coop_tui.inputs.MAX_DECOMPRESSED_BYTES`),
    checked by its size before any byte is read (a 400 MB ``config.json`` is refused, not
    parsed into gigabytes)."""
    try:
        return read_regular(path, limit=MAX_DECOMPRESSED_BYTES)
    except InputTooLarge as exc:
        raise CoopEvalError(str(exc)) from None
    except NotRegularFile as exc:
        raise CoopEvalError(f"{path}: {exc.strerror}") from None


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(read_input_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        raise CoopEvalError(f"{path}: missing; a CoopEval run directory has {what}") from None
    except UnicodeDecodeError as exc:
        raise CoopEvalError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start:,})") from None
    except json.JSONDecodeError as exc:
        raise CoopEvalError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def records_file(directory: Path) -> Path | None:
    """The run's ``records.jsonl``, plain or gzip-compressed (``records.jsonl.gz``)."""
    for name in ("records.jsonl", "records.jsonl.gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def _records(path: Path) -> list[tuple[int, Any]]:
    if not path.is_file():
        raise CoopEvalError(
            f"{path}: missing; a CoopEval run directory has one match per line here"
        )
    out = []
    try:
        with io.TextIOWrapper(open_bounded(path), encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    out.append((lineno, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise CoopEvalError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    except InputTooLarge as exc:
        raise CoopEvalError(str(exc)) from None
    except (UnicodeDecodeError, EOFError, OSError) as exc:
        raise CoopEvalError(f"{path}: cannot be read as UTF-8 JSON lines ({exc})") from None
    if not out:
        raise CoopEvalError(f"{path}: no matches recorded")
    return out


def agent_label(agent: dict[str, Any]) -> str:
    """CoopEval's name for a configured agent: ``<model>(CoT)`` or ``<model>(IO)``."""
    kind = agent.get("type", "")
    return f"{agent['llm']['model']}({AGENT_SUFFIX.get(kind, kind.removesuffix('Agent'))})"


EVALUATION_FILES = (
    "deviation_ratings.json", "replicator_dynamics_fitness.json", "population_history.json",
)
"""CoopEval's evaluation outputs of a tournament, most direct first. Each is keyed by agent
in its payoff tensor's order (``MatchupPayoffs.agent_types``), the order its
deviation-rating LP took the agents in; ``population_history.json`` is a list of such
objects, one per step."""


def _roster(config: dict[str, Any], directory: Path) -> list[str] | None:
    """The agents in the order CoopEval's deviation-rating LP took them for this
    tournament: the key order of the first of its evaluation outputs it has
    (:data:`EVALUATION_FILES`), else config.json's order.

    A degenerate LP's vertex, so the published ratings, depends on this order, and it
    cannot be recomputed from today's code: the published study's tensors list Claude
    first and GPT-5.2 before GPT-4o, which is neither config.json's order (which a live
    run of today's code would give: it plays the seatings in that order and lists agent
    types as they first appear) nor the name order of the saved matchup_payoffs.json
    (which today's re-evaluation script would give). The evaluation files recorded it."""
    for name in EVALUATION_FILES:
        path = directory / name
        if not path.is_file():
            continue
        data = _read_json(path, name)
        if isinstance(data, list):  # population_history.json: the shares at every step
            data = data[0] if data else None
        if isinstance(data, dict) and data:
            return [str(agent) for agent in data]
    try:
        return [agent_label(a) for a in config.get("agents") or []]
    except (KeyError, TypeError, AttributeError):
        return None


def split_player(player: Any, where: str) -> tuple[str, int]:
    match = _PLAYER.match(player) if isinstance(player, str) else None
    if match is None:
        raise CoopEvalError(f"{where}: player {player!r} is not of the form '<agent>#P<seat>'")
    return match.group("agent"), int(match.group("seat")) - 1


def member_letter(action: Any, where: str) -> str:
    """The key of a CoopEval action: its initial (``StagHuntAction.STAG`` -> ``S``), or
    the whole member for Traveler's claims (``CLAIM_3``), whose initials all coincide."""
    if not isinstance(action, str) or not action:
        raise CoopEvalError(f"{where}: action {action!r} is not an action name")
    member = action.rsplit(".", 1)[-1].upper()
    return member if member.startswith("CLAIM_") else member[:1]


def action_keys(config: dict[str, Any], game: Game) -> dict[str, int]:
    """CoopEval action key (see :func:`member_letter`) -> our game's action index.

    2 x 2 tables list their actions in the payoff table's key order; Public Goods'
    CONTRIBUTE / FREE_RIDE are our Contribute / Keep; Traveler's CLAIM_k is the claim
    ``min_claim + k``, found by value whatever order our game lists claims in.
    """
    gtype = (config.get("game") or {}).get("type")
    kwargs = (config.get("game") or {}).get("kwargs") or {}
    names = list(game.action_names[0])
    if gtype == "PublicGoods":
        return {"C": names.index("Contribute"), "F": names.index("Keep")}
    if gtype == "TravellersDilemma":
        low = float(kwargs.get("min_claim", 2))
        return {
            f"CLAIM_{k}": names.index(f"Claim {clean(low + k)}")
            for k in range(int(kwargs.get("num_actions", len(names))))
        }
    table = kwargs["payoff_matrix"]
    return {letter: i for i, letter in enumerate(dict.fromkeys(k[0] for k in table))}


def _member_name(action: str) -> str:
    return action.rsplit(".", 1)[-1].replace("_", " ").title()


def build_game(config: dict[str, Any], action_names: Iterable[str]) -> Game:
    """Our :class:`Game` for a CoopEval 2 x 2 payoff table.

    Table keys name the two seats' actions by initial (``"GK"``: Give, Keep), in
    CoopEval's action order, which is also the order of its prompt labels A0, A1. The
    cooperative action is the one whose symmetric profile pays the most in total.
    """
    game_cfg = config.get("game") or {}
    gtype = game_cfg.get("type")
    if gtype not in GAMES:
        raise CoopEvalError(
            f"config.json: game.type {gtype!r} is not supported by the importer; "
            f"supported: {', '.join(GAMES)}"
        )
    if gtype in ("PublicGoods", "TravellersDilemma"):
        return _parameterised_game(gtype, game_cfg.get("kwargs") or {})
    table = (game_cfg.get("kwargs") or {}).get("payoff_matrix")
    if not isinstance(table, dict) or not all(isinstance(k, str) and len(k) == 2 for k in table):
        raise CoopEvalError(
            "config.json: game.kwargs.payoff_matrix must map two-letter keys to payoffs"
        )
    letters = list(dict.fromkeys(k[0] for k in table))
    if len(letters) != 2 or set(letters) != {k[1] for k in table} or len(table) != 4:
        raise CoopEvalError(
            f"config.json: game.kwargs.payoff_matrix has keys {sorted(table)}; expected the "
            f"four profiles of two actions"
        )
    cells = []
    for a in letters:
        row = []
        for b in letters:
            pay = table[a + b]
            if not (
                isinstance(pay, list)
                and len(pay) == 2
                and all(isinstance(x, int | float) for x in pay)
            ):
                raise CoopEvalError(f"config.json: payoff_matrix[{a + b!r}] must be two numbers")
            row.append([finite_payoff(x, f"config.json: payoff_matrix[{a + b!r}]") for x in pay])
        cells.append(row)
    payoffs = np.asarray(cells)
    welfare = [payoffs[i, i].sum() for i in range(2)]
    coop = int(np.argmax(welfare))
    names = {member_letter(n, "records.jsonl"): _member_name(n) for n in action_names}
    labels = tuple(names.get(letter, letter) for letter in letters)
    key, title = GAMES[gtype]
    return bimatrix(
        key,
        f"{title} (CoopEval)",
        f"{title} as configured in a CoopEval run.",
        labels,
        labels,
        cells,
        cooperative=([coop], [coop]),
        defect=(1 - coop, 1 - coop),
        params={"source": "coopeval", "type": gtype, "payoff_matrix": table},
    )


def _parameterised_game(gtype: str, kwargs: dict[str, Any]) -> Game:
    """Public Goods and Traveler's Dilemma: CoopEval gives parameters, not a table."""
    try:
        if gtype == "PublicGoods":
            game = public_good(
                players=int(kwargs.get("num_players", 3)), alpha=float(kwargs.get("multiplier", 1.5))
            )
        else:
            if float(kwargs.get("claim_spacing", 1)) != 1:
                raise CoopEvalError(
                    "config.json: game.kwargs.claim_spacing must be 1 (claims one unit apart)"
                )
            game = travelers(
                levels=int(kwargs.get("num_actions", 4)),
                low=float(kwargs.get("min_claim", 2)),
                reward=float(kwargs.get("bonus", 2)),
            )
    except (TypeError, ValueError) as exc:
        if isinstance(exc, CoopEvalError):
            raise
        raise CoopEvalError(f"config.json: game.kwargs {kwargs} are not valid: {exc}") from None
    key, title = GAMES[gtype]
    params = {**game.params, "source": "coopeval", "type": gtype, "kwargs": kwargs}
    return Game(
        key=game.key,
        title=f"{title} (CoopEval)",
        description=game.description,
        action_names=game.action_names,
        payoffs=game.payoffs,
        cooperative=game.cooperative,
        defect=game.defect,
        params=params,
    )


@dataclass
class Move:
    seat: int
    agent: str
    action: int
    points: float
    trace_id: str | None
    response: str | None
    mediated: bool | None


@dataclass
class _Match:
    line: int
    agents: list[str]
    rounds: list[list[Move]]
    extra: dict[str, Any] = field(default_factory=dict)


def _rounds_of(record: Any, where: str) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """The rounds of moves in one record line, and the proposal-mechanism extras."""
    if (
        isinstance(record, list)
        and record
        and all(isinstance(m, dict) and "player" in m for m in record)
    ):
        return [record], {}  # NoMechanism: the moves of the single round
    if isinstance(record, list) and record and all(isinstance(r, list) for r in record):
        return record, {}  # Repetition: one list of moves per round
    if (
        isinstance(record, list)
        and len(record) == 1
        and isinstance(record[0], dict)
        and isinstance(record[0].get("moves"), list)
    ):
        extra = {k: v for k, v in record[0].items() if k != "moves"}
        return [record[0]["moves"]], extra  # Mediation / Contracting
    raise CoopEvalError(f"{where}: unrecognised record (expected the moves of a match)")


def _parse_match(lineno: int, record: Any, letters: dict[str, int]) -> _Match:
    where = f"records.jsonl:{lineno}"
    raw_rounds, extra = _rounds_of(record, where)
    rounds: list[list[Move]] = []
    agents: list[str] | None = None
    for raw in raw_rounds:
        moves = []
        for m in raw:
            if not isinstance(m, dict) or not {"player", "action", "points"} <= m.keys():
                raise CoopEvalError(f"{where}: a move needs player, action and points")
            agent, seat = split_player(m["player"], where)
            letter = member_letter(m["action"], where)
            if letter not in letters:
                raise CoopEvalError(f"{where}: action {m['action']!r} is not an action of the game")
            points = finite_payoff(m["points"], where)
            moves.append(
                Move(
                    seat,
                    agent,
                    letters[letter],
                    points,
                    m.get("trace_id"),
                    m.get("response"),
                    m.get("mediated"),
                )
            )
        moves.sort(key=lambda mv: mv.seat)
        seating = [mv.agent for mv in moves]
        if [mv.seat for mv in moves] != list(range(len(moves))):
            raise CoopEvalError(
                f"{where}: seats {[mv.seat + 1 for mv in moves]} are not P1..Pn once each"
            )
        if agents is not None and seating != agents:
            raise CoopEvalError(f"{where}: the players change between rounds")
        agents = seating
        rounds.append(moves)
    assert agents is not None
    return _Match(lineno, agents, rounds, extra)


def round_weights(n_rounds: int, discount: float) -> list[float]:
    """CoopEval's match payoff weights: (1-d) d^(t-1) for t < T, d^(T-1) on the last round."""
    weights = [(1 - discount) * discount**t for t in range(n_rounds - 1)]
    weights.append(discount ** (n_rounds - 1))
    return weights


# ----------------------------------------------------------------------------- the game log


@dataclass
class _Entry:
    id: str
    agent: str
    prompt: str
    response: str
    time: float | None


def log_entries(path: Path) -> dict[str, _Entry]:
    if not path.is_file():
        return {}
    try:
        raw = list(iter_log_entries(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise CoopEvalError(f"{path}: cannot be read ({exc})") from None
    out = {}
    for e in raw:
        stamp = None
        if e.time:
            try:
                stamp = datetime.strptime(e.time, "%Y-%m-%d %H:%M:%S").timestamp()
            except ValueError:
                stamp = None
        out[e.id] = _Entry(e.id, e.agent, e.prompt, e.response or "", stamp)
    return out


def _failed_attempts(final: _Entry, spare: dict[str, _Entry], used: set[str]) -> list[Attempt]:
    """The rejected attempts before ``final``, oldest first, found through the retry prompts.

    CoopEval re-asks with the base prompt plus the rejected answer and the reason; each
    attempt gets a fresh trace id that no record mentions, so the quoted answer is what
    links an orphan log entry to the decision it belongs to.
    """
    chain: list[Attempt] = []
    current = final
    while (quote := _RETRY_QUOTE.search(current.prompt)) is not None:
        previous = next(
            (
                e
                for e in spare.values()
                if e.id not in used
                and e.agent == current.agent
                and e.response.strip() == quote.group("response").strip()
            ),
            None,
        )
        if previous is None:
            break
        used.add(previous.id)
        chain.append(
            Attempt(
                messages=[{"role": "user", "content": previous.prompt}],
                response=previous.response,
                reasoning="",
                error=quote.group("reason").strip(),
                latency_ms=0.0,
                input_tokens=None,
                output_tokens=None,
                cost_usd=None,
            )
        )
        current = previous
    chain.reverse()
    return chain


# ----------------------------------------------------------------------------- the plan


def _published(directory: Path) -> dict[str, Any]:
    """CoopEval's own metrics, kept so the report can show them beside ours."""
    out: dict[str, Any] = {}
    files = {
        "fitness": "replicator_dynamics_fitness.json",
        "deviation_rating": "deviation_ratings.json",
        "mean_payoff": "agent_average_payoff.json",
    }
    for key, name in files.items():
        path = directory / name
        if not path.is_file():
            continue
        data = _read_json(path, name)
        if not isinstance(data, dict):
            raise CoopEvalError(f"{path}: expected an object keyed by agent")
        for agent, value in data.items():
            if key == "fitness":
                if not isinstance(value, dict) or "fitness" not in value:
                    raise CoopEvalError(f"{path}: {agent!r} needs a 'fitness' value")
                out.setdefault(agent, {})["fitness"] = value["fitness"]
                out[agent]["final_share"] = value.get("final_population")
            else:
                out.setdefault(agent, {})[key] = value
    return out

@dataclass
class ImportPlan:
    """Every row to write, built and checked before the database is opened."""

    run: dict[str, Any]
    matches: list[dict[str, Any]] = field(default_factory=list)
    seats: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def import_run_row(
    run_id: str, name: str, content: str, directory: Path, config: dict[str, Any],
    checks: Any, now: float,
) -> dict[str, Any]:
    """The ``runs`` row of an imported tournament: CoopEval's config and the published
    metric files are kept in its spec, beside what the import checked."""
    return {
        "id": run_id,
        "name": name,
        "kind": "import",
        "status": "done",
        "seed": 0,
        "sweep_hash": content,
        "spec": json.dumps(
            {
                "source": "coopeval",
                "directory": str(directory.resolve()),
                "config": config,
                # the agents in the order CoopEval's own deviation-rating LP took them
                # (DevRank "coopeval", coop_tui.analysis.coopeval_tables)
                "roster": _roster(config, directory),
                "published": _published(directory),
                "checks": checks,
            },
            default=str,
        ),
        "created_at": now,
        "finished_at": now,
        "error": None,
    }


class DecisionBuilder:
    """Turns moves, votes, designs and signatures into decision rows joined to the log."""

    def __init__(
        self,
        plan: ImportPlan,
        run_id: str,
        game: Game,
        letters: dict[str, int],
        log: dict[str, _Entry],
        referenced: set[str],
        *,
        delegate: bool = False,
    ) -> None:
        self.plan, self.run_id, self.game, self.log = plan, run_id, game, log
        self.letters = letters
        self.referenced = referenced
        self.used: set[str] = set()
        self._seen: Counter[str] = Counter()
        self.decisions: list[Decision] = []
        self._labels = tuple(f"A{i}" for i in range(game.action_counts[0]))
        # Without a game log the prompt's labels are not known: they are the game's, plus
        # the delegate label after them under Mediation (CoopEval's A2 in a 2-action game).
        self._fallback_labels = self._labels + ((f"A{len(self._labels)}",) if delegate else ())
        claims = [k for k in letters if k.startswith("CLAIM_")]
        # CoopEval's label Ak is its k-th action: for claims, the claim min + k
        self._label_to_action = (
            tuple(letters[f"CLAIM_{k}"] for k in range(len(claims)))
            if len(claims) == len(self._labels)
            else tuple(range(len(self._labels)))
        )

    def _row(
        self,
        match_id: str,
        round_: int,
        phase: str,
        seat: int,
        kind: str,
        agent: str,
        trace_id: str | None,
        response: str | None,
        **fields: Any,
    ) -> Decision | None:
        """One decision for one trace id, with the prompt and response from the log."""
        if trace_id is None:
            return None
        self.referenced.add(trace_id)
        # CoopEval's trace ids are 8 hex digits: a large run can repeat one, and the
        # cache key must stay unique, so a repeat gets an occurrence suffix
        self._seen[trace_id] += 1
        suffix = "" if self._seen[trace_id] == 1 else f"#{self._seen[trace_id]}"
        entry = self.log.get(trace_id)
        decision = Decision(
            match_id=match_id,
            round=round_,
            phase=phase,
            seat=seat,
            kind=kind,  # type: ignore[arg-type]
            agent=agent,
            prompt=[{"role": "user", "content": entry.prompt}] if entry else [],
            response=entry.response if entry is not None else (response or ""),
            reasoning="",
            parsed=fields.pop("parsed", None),
            valid=True,
            attempts=1,
            error=None,
            cache_key=f"coopeval:{self.run_id}:{trace_id}{suffix}",
            content_key=f"coopeval:{trace_id}",
            created_at=entry.time if entry and entry.time else time.time(),
            **fields,
        )
        self.decisions.append(decision)
        return decision

    def play(self, match_id: str, round_: int, mv: Move, *, stored_seat: int | None = None) -> None:
        """A play decision, stored as our Mediation stores it when there is a delegate.

        The prompt's labels are A0, A1 (and A2 = delegate under Mediation); label i is
        game action i, delegate being the action after the base ones. ``action`` is the
        action chosen (delegate when CoopEval marks the move mediated); the rounds table
        has the action played. Delegating is not counted as cooperating.
        ``stored_seat``: the decision's seat in its match when that is not the game
        position (a Reputation player is a one-seat match); cooperation is always judged
        by the game position ``mv.seat``.
        """
        entry = self.log.get(mv.trace_id or "")
        labels = (classify_prompt(entry.prompt).labels if entry else ()) or self._fallback_labels
        chosen = len(self._labels) if mv.mediated else mv.action
        row = self._row(
            match_id,
            round_,
            "play",
            mv.seat if stored_seat is None else stored_seat,
            "mixed",
            mv.agent,
            mv.trace_id,
            mv.response,
            action=chosen,
            cooperated=bool(self.game.is_cooperative(mv.seat, chosen)),
            labels=tuple(labels),
            label_to_action=self._mapping(len(labels)),
        )
        if row is None or not row.response:
            return
        try:
            strategy = parse_mixed_strategy(row.response, labels)
        except ParseError as exc:
            # an answer we cannot read is not a valid decision, whatever CoopEval played
            row.valid = False
            row.error = f"coop-tui's parser disagrees with CoopEval: {exc.reason}"
            return
        dist = list(strategy.probabilities)
        row.parsed = dict(zip(labels, dist, strict=True))
        row.normalisation = strategy.note
        by_action = [0.0] * len(dist)  # the distribution is stored per game action
        for label_index, action in enumerate(row.label_to_action):
            by_action[action] = dist[label_index]
        row.distribution = tuple(by_action)
        row.coop_prob = float(
            sum(by_action[a] for a in self.game.cooperative[mv.seat] if a < len(by_action))
        )

    def _mapping(self, n_labels: int) -> tuple[int, ...]:
        """Game action behind each prompt label (extra labels, e.g. delegate, map to
        themselves)."""
        base = self._label_to_action if n_labels >= len(self._label_to_action) else ()
        return tuple(base) + tuple(range(len(base), n_labels))

    def proposals(
        self, match_id: str, m: _Match, designs: dict[str, dict[str, Any]], proposed: set[str]
    ) -> None:
        """Store each player's design once, on the first match that player takes part in."""
        kind = "mediator" if "selected_mediator_index" in m.extra else "contract"
        offered = {}
        for seat, agent in enumerate(m.agents):
            player = f"{agent}#P{seat + 1}"
            design = designs.get(player)
            if design is None:
                continue
            body = design.get("mediator", design.get("contract"))
            # The phase info takes the shape our own Mediation / Contracting store, so the
            # ballot and design-stability analyses read imported runs like native ones.
            entry: dict[str, Any] = {"seat": seat, "trace_id": design.get("trace_id")}
            parsed = body  # in our labels: mediator {"1": "A1", ...}, contract {"A0": 3, ...}
            if kind == "mediator" and isinstance(body, list):
                parsed = {str(n): f"A{self._action_index(a)}" for n, a in body}
                entry["plan"] = {str(n): self._action_index(a) for n, a in body}
            elif kind == "contract" and isinstance(body, dict):
                parsed = {f"A{self._action_index(a)}": v for a, v in body.items()}
                entry["terms"] = {str(self._action_index(a)): v for a, v in body.items()}
            offered[f"{'M' if kind == 'mediator' else 'C'}{seat + 1}"] = entry
            if player in proposed:
                continue
            proposed.add(player)
            row = self._row(
                match_id,
                1,
                "propose",
                seat,
                kind,
                agent,
                design.get("trace_id"),
                None,
                parsed=parsed,
            )
            if row is not None and parsed is None:  # the design file names no design
                row.valid = False
                row.error = f"the design file holds no {kind} for {player}"
        if offered:
            self.plan.phases.append(
                {
                    "match_id": match_id,
                    "round": 1,
                    "phase": "propose",
                    "info": json.dumps({"proposals": offered}, default=str),
                }
            )

    def votes(self, match_id: str, m: _Match) -> None:
        votes = m.extra.get("votes")
        if not isinstance(votes, list):
            return
        prefix = "M" if "selected_mediator_index" in m.extra else "C"
        by_seat = {}
        for v in votes:
            agent, seat = split_player(v.get("voter_name"), f"records.jsonl:{m.line}")
            approvals = {f"{prefix}{k}": bool(x) for k, x in (v.get("votes") or {}).items()}
            by_seat[str(seat)] = approvals
            self._row(
                match_id,
                1,
                "vote",
                seat,
                "approvals",
                agent,
                v.get("trace_id"),
                None,
                parsed=approvals,
                labels=tuple(sorted(approvals)),
            )
        selected = m.extra.get("selected_mediator_index", m.extra.get("selected_contract_index"))
        self.plan.phases.append(
            {
                "match_id": match_id,
                "round": 1,
                "phase": "vote",
                "info": json.dumps({
                    "votes": by_seat,
                    "selected": selected,
                    # the same fields our own ballots store (mechanisms/_ballot.py)
                    "winner": None if selected is None else f"{prefix}{selected}",
                    "approvals": {
                        pid: sum(bool(b.get(pid)) for b in by_seat.values())
                        for pid in sorted({k for b in by_seat.values() for k in b})
                    },
                    "ballots": {
                        str(int(seat) + 1): [pid for pid, ok in b.items() if ok]
                        for seat, b in by_seat.items()
                    },
                }),
            }
        )

    def signatures(self, match_id: str, m: _Match) -> None:
        sigs = m.extra.get("signatures")
        if not isinstance(sigs, dict):
            return
        signed: dict[int, bool] = {}
        for player, sig in sigs.items():
            agent, seat = split_player(player, f"records.jsonl:{m.line}")
            signed[seat] = bool(sig.get("agree"))
            self._row(
                match_id,
                1,
                "sign",
                seat,
                "sign",
                agent,
                sig.get("trace_id"),
                None,
                parsed=bool(sig.get("agree")),
            )
        self.plan.phases.append(
            {
                "match_id": match_id,
                "round": 1,
                "phase": "sign",
                # the shape our own Contracting stores: a flag per seat, in seat order
                "info": json.dumps({
                    "signed": [signed.get(seat) for seat in range(len(m.agents))],
                    "active": bool(m.extra.get("all_signed", signed and all(signed.values()))),
                    "all_signed": m.extra.get("all_signed"),
                }),
            }
        )

    def attach_retries(self) -> None:
        spare = {k: e for k, e in self.log.items() if k not in self.referenced}
        for row in self.decisions:
            trace_id = row.content_key.removeprefix("coopeval:")
            entry = self.log.get(trace_id)
            if entry is None:
                continue
            failed = _failed_attempts(entry, spare, self.used)
            if failed:
                row.retries = failed
                row.attempts = 1 + len(failed)

    def _action_index(self, action: Any) -> int:
        letter = member_letter(action, "a design")
        if letter not in self.letters:
            raise CoopEvalError(f"a design names {action!r}, which is not an action of the game")
        return self.letters[letter]


# ----------------------------------------------------------------------------- writing


