"""The strategic personalities paper's own messages, built by the user's clone of its code.

The paper's public code (``FelipeMAffonso/strategic-personalities``) builds every prompt in
one method, ``GameEngine.build_prompt`` of ``environments/engine.py``: the rules block
(the system message), the history block and the round's question (the user message), with
a named condition's framing applied through ``environments/prompts.py``. The games'
configurations (``environments/games/<category>.py``) hold each game's rules text, its
question function and how a first mover's answer reaches the second mover.

So this adapter does not rebuild any text: it makes a ``GameEngine`` for the game (its own
class, loaded from the clone with nothing but the standard library), puts coop-tui's state
into it, and asks it for the two messages. What coop-tui supplies, and why:

- **labels and option order.** The code draws a letter pair per trial and shuffles the
  order of the two options per round with its own RNG; coop-tui's ``randomize_labels =
  "trial"`` draws the same kind of letters and orders from the match seed. The engine is
  handed coop-tui's letters (its ``label_map``, in action order as the code keeps it) and
  an order "shuffle" that lays the options out as coop-tui's request shows them, so the
  message names the labels the answer is parsed with.
- **history.** The code's ``RoundResult`` per past round, from coop-tui's moves: each
  player's choice as the code's parser would have recorded it (a canonical option word, a
  number as the code's clamp returns it: ``"40.0"``, or ``"0"`` at the lower bound) and
  the points coop-tui paid, written in the code's number type (its payoff functions give
  ``60.0`` where its matrices give ``3``).
- **the round's state.** Chance draws (auction values, the sender's type, the cheap talk
  state) are coop-tui's; a second mover's view is the code's own ``update_state_fn``
  applied to the first mover's answer as the code would have parsed it.
- **the condition.** The named condition of the experiment is the code's ``framing``; a
  payoff scale is the engine's ``payoff_scale``.

The code never re-asks (an unreadable reply goes to an LLM judge, then a random option),
so a re-ask sends the same messages again. Building a prompt imports no API client.
"""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.conditions import CONDITIONS
from coop_tui.sources.base import LoadedSource, Required, SourceError, SourceWording
from coop_tui.sources.loading import check_required, git_commit, import_file, stub_module

if TYPE_CHECKING:
    from coop_tui.decisions import DecisionRequest, Message

NAME = "strategic_personalities"
PROTOCOL_KEYS = frozenset({"seed003", "strategic_personalities"})
"""The protocol's stored key and its name: cells under either are the paper's."""
MECHANISMS = frozenset({"repetition", "none"})
"""Repeated matrix games (``repetition``) and games played move by move (``none``)."""
CATEGORIES = ("cooperation", "coordination", "fairness", "depth", "trust", "competition",
              "negotiation", "risk")
"""The code's game files, ``environments/games/<category>.py``, each with a
``<CATEGORY>_GAMES`` list of game configurations."""
GAME_IDS = frozenset({
    "pd_harsh", "pd_medium", "pd_mild", "pd_canonical", "pg_low_mpcr", "pg_med_mpcr",
    "pg_high_mpcr", "commons_dilemma", "diners_dilemma", "el_farol_bar", "bos_standard",
    "bos_transposed", "stag_hunt_standard", "stag_hunt_risky", "matching_pennies",
    "focal_point", "ultimatum", "dictator", "third_party_punishment", "beauty_contest_23",
    "beauty_contest_12", "centipede_6", "centipede_10", "eleven_twenty", "trust_berg",
    "gift_exchange", "repeated_trust", "auction_first_price", "auction_vickrey",
    "auction_all_pay", "colonel_blotto", "nash_demand", "alternating_offers", "multi_issue",
    "chicken", "chicken_high_stakes", "signaling", "cheap_talk",
})
"""The code's 38 game ids (the paper's games); coop-tui plays each under the same key."""
OUR_KEYS = {"chicken_sp": "chicken"}
"""coop-tui game keys that differ from the code's id (coop-tui's ``chicken`` is another
game)."""
OUR_GAMES = frozenset(GAME_IDS - set(OUR_KEYS.values())) | frozenset(OUR_KEYS)
"""coop-tui's keys of the paper's 38 games."""

FIRST_MOVE_FACT = {
    "ultimatum": "offer", "third_party_punishment": "gift", "trust_berg": "sent",
    "gift_exchange": "wage", "alternating_offers": "demand", "cheap_talk": "message",
}
"""The fact of a second mover's request that holds player 0's move of the round."""
ROUND_MOVES = {
    "ultimatum": ("offer", "accepted"), "dictator": ("gift",),
    "third_party_punishment": ("gift", None, "punishment"), "trust_berg": ("sent", "returned"),
    "gift_exchange": ("wage", "effort"), "alternating_offers": ("demand", "accepted"),
    "signaling": ("signalled", "accepted"), "cheap_talk": ("message", "action"),
}
"""Per turn-taking game, the key of each player's move in a round's stored moves."""
LIST_MOVES = ("bids", "guesses", "take_nodes", "requests", "demands", "allocations",
              "contributions", "extractions")
"""The stored moves of games where every player moves at once: one entry per seat."""
WORDS = {"accepted": ("accept", "reject"), "signalled": ("signal", "no_signal")}
"""A yes/no move as the code's option word (first: yes)."""
CODE_PAYOFFS = frozenset({"colonel_blotto", "multi_issue"})
"""Games whose history states the code's payoffs, not coop-tui's: the code reads a split
as one number (so its payoff function pays a fixed split), coop-tui plays the stated
rule. The source's messages tell what the code told its models."""


def code_id(game_key: str) -> str:
    """The code's id of coop-tui's game ``game_key``."""
    return OUR_KEYS.get(game_key, game_key)


class _ShownOrder:
    """Stands in for the engine's option-order RNG: "shuffling" the options lays them out
    in the order coop-tui's request shows them, so the message and the parse agree."""

    def __init__(self, shown: Sequence[str]) -> None:
        self.shown = list(shown)

    def shuffle(self, items: list[str]) -> None:
        if sorted(items) == sorted(self.shown):
            items[:] = self.shown


class StrategicPersonalitiesWording(SourceWording):
    name = NAME
    paper = ("Large language models converge on competitive rationality but diverge on "
             "cooperation across providers and generations")
    repository = "FelipeMAffonso/strategic-personalities"
    tested_commit = "0fe946e158a8523c7cd9b40c5bfa4660722c4b50"
    required = (
        Required("environments/engine.py", "GameEngine.__init__",
                 ("game_config", "num_rounds", "label_seed", "single_message", "judge_fn",
                  "payoff_scale")),
        Required("environments/engine.py", "GameEngine.build_prompt",
                 ("player_id", "round_num", "history", "framing", "game_state")),
        Required("environments/engine.py", "GameEngine.compute_payoffs",
                 ("choices", "game_state")),
        Required("environments/engine.py", "GameEngine._parse_numeric_pipeline",
                 ("response_text", "query_context", "min_val", "max_val")),
        Required("environments/engine.py", "RoundResult"),
        Required("environments/prompts.py", "PromptBuilder"),
        Required("environments/prompts.py", "FRAMING_PRESETS"),
        *(Required(f"environments/games/{c}.py", f"{c.upper()}_GAMES") for c in CATEGORIES),
    )

    def serves(self, *, mechanism: str, prompt_protocol: str, game: str) -> bool:
        return prompt_protocol in PROTOCOL_KEYS and mechanism in MECHANISMS and game in OUR_GAMES

    def load(self, root: Path) -> LoadedSource:
        check_required(root, self.name, self.required)
        base = f"coop_tui_source.{self.name}"
        engine = import_file(root, "environments/engine.py", f"{base}.engine", self.name)
        prompts = import_file(root, "environments/prompts.py", f"{base}.prompts", self.name)
        games: dict[str, dict[str, Any]] = {}
        for category in CATEGORIES:
            module = import_file(root, f"environments/games/{category}.py",
                                 f"{base}.games.{category}", self.name)
            for config in getattr(module, f"{category.upper()}_GAMES"):
                games[config["game_id"]] = config
        files = ["environments/engine.py", "environments/prompts.py",
                 *(f"environments/games/{c}.py" for c in CATEGORIES)]
        return LoadedSource(self, root, git_commit(root, files),
                            state={"engine": engine, "prompts": prompts, "games": games})

    def messages(self, source: LoadedSource, ctx: Any,
                 request: DecisionRequest) -> tuple[Message, ...]:
        if ctx.game.key not in OUR_GAMES:
            raise SourceError(f"sources.{self.name}", f"{ctx.game.key} is not one of the paper's "
                              "games; play it with wording = \"ours\"")
        game_id = code_id(ctx.game.key)
        config = source.state["games"].get(game_id)
        if config is None:
            raise SourceError(f"sources.{self.name}", f"{source.root / 'environments/games'} "
                              f"has no game {game_id!r}; check out the tested commit "
                              f"{self.tested_commit[:12]} of the paper's code")
        engine = _engine(source, ctx, request, config)
        history = _history(engine, ctx, request, config)
        state = _state(engine, config, request)
        with _prompts_importable(source.state["prompts"]):
            system, user = engine.build_prompt(request.seat, request.round, history,
                                               _framing(ctx), state)
        out: list[Message] = []
        if system:  # the code's API calls leave an empty system prompt out
            out.append({"role": "system", "content": system})
        out.append({"role": "user", "content": user})
        return tuple(out)

    def retry_messages(self, source: LoadedSource, ctx: Any, request: DecisionRequest,
                       sent: tuple[Message, ...], answer: str,
                       reason: str) -> tuple[Message, ...]:
        # The code has no re-ask: it reads any reply (tags, then an LLM judge, then a random
        # option). The closest it comes to asking again is its own prompt, unchanged.
        return self.messages(source, ctx, request)


# ------------------------------------------------------------------ the engine's inputs


def _engine(source: LoadedSource, ctx: Any, request: DecisionRequest,
            config: Mapping[str, Any]) -> Any:
    """The code's engine for this match, holding coop-tui's labels and option order."""
    cls = source.state["engine"].GameEngine
    rounds = request.view.total_rounds or ctx.game.params.get("rounds") or config.get("num_rounds")
    engine = cls(dict(config), num_rounds=rounds, label_seed=0, payoff_scale=_scale(ctx, config))
    letters = _letters(ctx, request, config)
    engine.label_map = {letter: option for letter, option in zip(letters, config["options"],
                                                                 strict=False)}
    engine.abstract_options = list(engine.label_map)
    engine.reverse_map = {v: k for k, v in engine.label_map.items()}
    shown = [lab for lab in request.labels if lab in engine.label_map]
    engine._rng = _ShownOrder(shown or engine.abstract_options)
    return engine


def _letters(ctx: Any, request: DecisionRequest, config: Mapping[str, Any]) -> list[str]:
    """One label per code option, in the code's option order: the request's own labels in
    a matrix game; in a game played move by move (whose texts name no letter) the match's
    labels for as many options."""
    n = len(config["options"])
    if request.phase == "play" and len(request.label_to_action) == n:
        return [request.labels[request.label_to_action.index(a)] for a in range(n)]
    own = ctx.labelling(request.seat, request.round, "play", n_actions=n)
    return [own.label_of(a) for a in range(n)]


def _scale(ctx: Any, config: Mapping[str, Any]) -> float:
    """The payoff scale of a ``payoff_10x`` / ``payoff_100x`` matrix game: the cell's, as
    the sweep put it on the policy; for a match built without it, coop-tui's payoffs
    over the code's matrix (1 elsewhere)."""
    told = getattr(ctx.policy, "payoff_scale", None)
    if told is not None:
        return float(told) if config.get("payoff_matrix") else 1.0
    matrix = config.get("payoff_matrix")
    payoffs = getattr(ctx.game, "payoffs", None)
    if not matrix or payoffs is None or payoffs.ndim != 3:
        return 1.0
    options = config["options"]
    for (a, b), values in matrix.items():
        if values[0]:
            ours = float(payoffs[options.index(a), options.index(b), 0])
            return round(ours / values[0], 9) or 1.0
    return 1.0


def _framing(ctx: Any) -> str:
    """The code's framing: the experiment's named condition (the code's names), as the
    sweep put it on the policy; for a match built without it, the condition whose
    sentences the policy carries."""
    named = getattr(ctx.policy, "condition", None)
    if named:
        return str(named)
    text = getattr(ctx.policy, "condition_text", "")
    if not text:
        return "baseline"
    return next((c.name for c in CONDITIONS.values() if c.text == text), "baseline")


@contextmanager
def _prompts_importable(prompts: types.ModuleType) -> Iterator[None]:
    """``build_prompt`` imports ``environments.prompts`` when a condition frames the
    prompt: let that import find the clone's file, loaded already, for the call only."""
    names = ("environments", "environments.prompts")
    saved = {n: sys.modules.get(n) for n in names}
    sys.modules["environments"] = stub_module("environments", prompts=prompts)
    sys.modules["environments.prompts"] = prompts
    try:
        yield
    finally:
        for n, module in saved.items():
            if module is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = module


# ------------------------------------------------------------------ history and state


def _bounds(engine: Any, config: Mapping[str, Any]) -> tuple[Any, Any]:
    """The range the code clamps a number move into, per game type (its round loops)."""
    kind = engine.game_type
    if kind == "auction":
        return config.get("min_bid", 0), config.get("max_bid", 100)
    if kind == "allocation":
        return 0, config.get("endowment", 10)
    return config.get("min_val", 0), config.get("max_val", 100)


def _parsed_number(engine: Any, config: Mapping[str, Any], value: float) -> str:
    """A number as the code's parser records it: clamped into the move's range with the
    code's ``max(low, min(float(x), high))``, then ``str``."""
    low, high = _bounds(engine, config)
    return str(max(low, min(float(value), high)))


def _code_read(engine: Any, config: Mapping[str, Any], ctx: Any, round_: int, seat: int,
               value: Any) -> str:
    """A split as the code records it: its own numeric parser over the reply coop-tui got
    (from the match's recent decisions), else over the split written in a tag."""
    reply = next((d.response for d in reversed(getattr(ctx, "decisions", ()))
                  if d.round == round_ and d.seat == seat and d.valid), None)
    if reply is None:
        numbers = value if isinstance(value, list) else [value]
        reply = "<answer>" + ", ".join(f"{float(x):g}" for x in numbers) + "</answer>"
    low, high = _bounds(engine, config)
    return str(engine._parse_numeric_pipeline(reply, "", low, high))


def _as_code(engine: Any, config: Mapping[str, Any], value: Any, key: str | None) -> str:
    if isinstance(value, bool):
        yes, no = WORDS.get(key or "", ("yes", "no"))
        return yes if value else no
    if isinstance(value, list):  # a split: the code read the first number of it
        value = value[0]
    return _parsed_number(engine, config, value)


def _round_choices(engine: Any, config: Mapping[str, Any], moves: Mapping[str, Any],
                   n: int) -> dict[int, str]:
    """A past round's moves (coop-tui's stored ``moves``) as the code's parsed choices."""
    keys = ROUND_MOVES.get(config["game_id"])
    if keys is not None:
        return {pid: _as_code(engine, config, moves[k], k)
                for pid, k in enumerate(keys) if k is not None and k in moves}
    for key in LIST_MOVES:
        if key in moves:
            return {pid: _as_code(engine, config, v, key) for pid, v in enumerate(moves[key])}
    return {pid: "" for pid in range(n)}


def _chance(config: Mapping[str, Any], seen: Mapping[str, Any], seat: int | None) -> dict[str, Any]:
    """A round's chance draws in the code's state keys, from coop-tui's moves (``seat``
    None) or from one seat's facts."""
    state: dict[str, Any] = {}
    if "valuation_fn" in config:
        values = seen.get("values")
        if values is None and "value" in seen:
            values = {seat: seen["value"]}
        if values is not None:
            items = values.items() if isinstance(values, dict) else enumerate(values)
            state["valuations"] = {pid: _whole(v) for pid, v in items}
    if "type" in seen:
        state["sender_type"] = seen["type"]
    if config["game_id"] == "cheap_talk" and "state" in seen:
        state["true_state"] = int(seen["state"])
    return state


def _whole(value: Any) -> Any:
    """The code draws values with ``randint``: a whole number prints without ``.0``."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _typed(ours: float, theirs: Any) -> Any:
    """coop-tui's payoff in the number type the code's payoff would have (``60.0`` from a
    float payoff function, ``3`` from an integer matrix)."""
    if theirs is None:
        return ours
    if isinstance(theirs, float):
        return float(ours)
    if isinstance(theirs, int) and float(ours).is_integer():
        return int(ours)
    return ours


def _code_payoffs(engine: Any, choices: dict[int, str], state: dict[str, Any]) -> dict[int, Any]:
    """The code's payoffs for ``choices`` (for their number type); its tie-breaks draw from
    the global ``random``, whose state is put back."""
    saved = random.getstate()
    try:
        return dict(engine.compute_payoffs(choices, state))
    except Exception:  # a choice the code's payoff function cannot read: no type known
        return {}
    finally:
        random.setstate(saved)


def _history(engine: Any, ctx: Any, request: DecisionRequest,
             config: Mapping[str, Any]) -> list[Any]:
    """The code's ``RoundResult`` per past round."""
    round_result = type(engine).__init__.__globals__["RoundResult"]
    seat, n = request.seat, ctx.game.n_players
    past = request.view.extra.get("past") if engine.game_type != "simultaneous" else None
    out = []
    for i, move in enumerate(request.view.history):
        paid = {seat: move.payoff}
        if past is not None and i < len(past):
            choices = _round_choices(engine, config, past[i], n)
            state = {"round_num": move.round, **_chance(config, past[i], None)}
            if config["game_id"] in CODE_PAYOFFS:
                key = next(k for k in LIST_MOVES if k in past[i])
                choices = {pid: _code_read(engine, config, ctx, move.round, pid, v)
                           for pid, v in enumerate(past[i][key])}
                paid = {}
        else:
            profile = list(move.others)
            profile.insert(seat, move.own)
            options = config["options"]
            choices = {pid: options[a] if a < len(options) else str(a)
                       for pid, a in enumerate(profile)}
            state = {"round_num": move.round}
            others = [p for p in range(n) if p != seat]
            paid.update(zip(others, move.others_payoffs, strict=False))
        code = _code_payoffs(engine, choices, state)
        payoffs = {pid: _typed(v, code.get(pid)) for pid, v in paid.items()}
        payoffs.update({pid: v for pid, v in code.items() if pid not in payoffs})
        out.append(round_result(round_num=move.round, choices=dict(choices),
                                parsed_choices=choices, payoffs=payoffs))
    return out


def _state(engine: Any, config: Mapping[str, Any], request: DecisionRequest) -> dict[str, Any]:
    """The round's ``game_state`` as the code hands it to this mover: the round, the
    chance draws, and (for a second mover) the code's ``update_state_fn`` applied to the
    first mover's answer."""
    facts = request.view.extra.get("facts", {})
    state: dict[str, Any] = {"round_num": request.round, **_chance(config, facts, request.seat)}
    update = config.get("update_state_fn")
    if update is None or request.seat == config.get("move_order", [0])[0]:
        return state
    game_id = config["game_id"]
    if game_id == "signaling" and "signalled" in facts:
        return update(state, 0, WORDS["signalled"][0 if facts["signalled"] else 1])
    key = FIRST_MOVE_FACT.get(game_id)
    if key is not None and key in facts:
        return update(state, 0, _parsed_number(engine, config, facts[key]))
    return state


SOURCE = StrategicPersonalitiesWording()
