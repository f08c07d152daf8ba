"""CoopEval's own wording, built by its own code in the user's clone (issue #39).

coop-tui's CoopEval protocol says what CoopEval's prompts say in our own words. With
``wording = "source"`` every message is instead built by CoopEval's code itself: its game
classes (``get_player_prompt``, ``prompt_player_mix_probs``), its mechanisms' prompt
builders (Repetition's and Reputation's history prompts, Mediation's and Contracting's
design, vote and signature prompts, the templates of ``mechanisms/prompts.py``) and its
agents' re-ask (``Agent._build_retry_prompt``) and reasoning instructions.

How the paper's code is run without its dependencies: each file is loaded on its own
(:func:`coop_tui.sources.loading.import_file`) with stand-ins for the modules it imports
but never uses to build a prompt (inspect-ai, the payoff tables, tqdm, the logger). Its
asynchronous builders are called with a stand-in player whose ``chat_with_retries`` keeps
the prompt it is handed and returns at once, so the coroutine finishes on its first step
and no event loop, model or network is involved.

Two layouts (``ctx.policy.style_message``): the published study's logs show the CoT / IO
instruction appended to the end of the one user message (after the re-ask text on a
re-ask); CoopEval's current code sends it as a system message. ``"system"`` selects the
current code's layout; every other value the published one.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
import types
import typing
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop_tui.sources.base import LoadedSource, Required, SourceError, SourceWording
from coop_tui.sources.loading import (
    check_required,
    git_commit,
    import_file,
    read_source,
    stub_module,
)

if TYPE_CHECKING:
    from coop_tui.decisions import DecisionRequest, Message

NAME = "coopeval"
PKG = "src/coopeval"
AGENTS = f"{PKG}/agents/agent_manager.py"
GAMES = f"{PKG}/games"
MECHS = f"{PKG}/mechanisms"

GAME_FILES: dict[str, tuple[str, str]] = {
    # coop-tui game key -> (CoopEval file, class); matrix games take a payoff table
    "prisoners": ("prisoners_dilemma.py", "PrisonersDilemma"),
    "stag_hunt": ("stag_hunt.py", "StagHunt"),
    "matching_pennies": ("matching_pennies.py", "MatchingPennies"),
    "trust": ("trust_game.py", "TrustGame"),
    "public_good": ("public_goods.py", "PublicGoods"),
    "travelers": ("travellers_dilemma.py", "TravellersDilemma"),
}
MECHANISMS = ("none", "repetition", "reputation", "mediation", "contracting")
PROTOCOL = "coop_tui"
"""The prompt protocol key of CoopEval's cells (coop-tui's default protocol)."""
CODE_LAYOUT = "system"
"""``style_message`` value of the current code's layout; any other is the published one."""
STYLE_AGENT = {"cot": "CoTAgent", "direct": "IOAgent"}
KEPT_GAMES = 16
"""CoopEval game objects kept at once (a sweep's matches each hold their own game object;
the least recently used is rebuilt when needed again)."""

REQUIRED: tuple[Required, ...] = (
    Required(AGENTS, "Agent._build_retry_prompt", ("base_prompt", "bad_response", "error_reason")),
    Required(AGENTS, "IOAgent.chat", ("messages",)),
    Required(AGENTS, "CoTAgent.chat", ("messages",)),
    Required(f"{GAMES}/base.py", "Game.get_player_prompt", ("player_id",)),
    Required(f"{GAMES}/base.py", "Game.prompt_player_mix_probs",
             ("player", "extra_info", "output_instruction")),
    Required(f"{GAMES}/base.py", "Game._parse_mixed_probs", ("response",)),
    Required(f"{GAMES}/base.py", "Move"),
    Required(f"{GAMES}/prisoners_dilemma.py", "PrisonersDilemma.__init__", ("payoff_matrix",)),
    Required(f"{GAMES}/stag_hunt.py", "StagHunt.__init__", ("payoff_matrix",)),
    Required(f"{GAMES}/matching_pennies.py", "MatchingPennies.__init__", ("payoff_matrix",)),
    Required(f"{GAMES}/trust_game.py", "TrustGame.__init__", ("payoff_matrix",)),
    Required(f"{GAMES}/public_goods.py", "PublicGoods.__init__", ("num_players", "multiplier")),
    Required(f"{GAMES}/travellers_dilemma.py", "TravellersDilemma.__init__",
             ("min_claim", "num_actions", "claim_spacing", "bonus")),
    Required(f"{MECHS}/prompts.py", "MEDIATION_MECHANISM_PROMPT"),
    Required(f"{MECHS}/prompts.py", "CONTRACT_MECHANISM_PROMPT"),
    Required(f"{MECHS}/prompts.py", "CONTRACT_REJECTION_PROMPT"),
    Required(f"{MECHS}/base.py", "RepetitiveMechanism.History.append", ("moves", "round_number")),
    Required(f"{MECHS}/repetition.py", "Repetition._build_history_prompts",
             ("players", "round_idx", "history")),
    Required(f"{MECHS}/reputation.py", "Reputation._build_history_prompts", ("players",)),
    Required(f"{MECHS}/mediation.py", "Mediation._design_mediator", ("designer",)),
    Required(f"{MECHS}/mediation.py", "Mediation._collect_vote", ("voter", "players")),
    Required(f"{MECHS}/mediation.py", "Mediation._mediator_description", ("mediator",)),
    Required(f"{MECHS}/mediation.py", "Mediation._parse_mediator", ("response",)),
    Required(f"{MECHS}/contracting.py", "Contracting._design_contract", ("designer",)),
    Required(f"{MECHS}/contracting.py", "Contracting._collect_vote", ("voter", "players")),
    Required(f"{MECHS}/contracting.py", "Contracting._agree_to_contract", ("player", "designer")),
    Required(f"{MECHS}/contracting.py", "Contracting._contract_description", ("contract",)),
    Required(f"{MECHS}/contracting.py", "Contracting._parse_contract", ("response",)),
    Required(f"{MECHS}/contracting.py", "Contracting._parse_agreement", ("response",)),
    Required(f"{MECHS}/json_parsing.py", "parse_bool_votes", ("response", "prefix", "count")),
)


# ---------------------------------------------------------------- loading the clone
class _Stand:
    """A do-nothing stand-in for anything a CoopEval file touches at import time but
    never uses to build a prompt (payoff tables, loggers, model clients)."""

    model_fields: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Stand:
        return self

    def __getattr__(self, name: str) -> _Stand:
        return self


def _compat_typing() -> dict[str, types.ModuleType]:
    """CoopEval's files import ``typing.override`` (Python 3.12); on 3.11 a copy of
    ``typing`` with a no-op ``override`` stands in while they load."""
    if hasattr(typing, "override"):
        return {}
    return {"typing": stub_module("typing", **vars(typing), override=lambda f: f)}


def _packages() -> dict[str, types.ModuleType]:
    """Empty parent packages, so ``from coopeval.x.y import z`` finds the loaded files
    and never an installed ``coopeval``."""
    names = ("coopeval", "coopeval.agents", "coopeval.games", "coopeval.mechanisms",
             "coopeval.utils", "coopeval.ranking_evaluations")
    return {n: stub_module(n, __path__=[]) for n in names}


def _load_modules(root: Path) -> dict[str, types.ModuleType]:
    """Every CoopEval file a prompt needs, loaded in dependency order."""
    prefix = f"coop_tui_source.{NAME}."
    stubs: dict[str, types.ModuleType] = {**_compat_typing(), **_packages()}
    stubs["inspect_ai"] = stub_module("inspect_ai", __path__=[])
    stubs["inspect_ai.model"] = stub_module(
        "inspect_ai.model", ChatMessageSystem=_Stand, ChatMessageUser=_Stand,
        GenerateConfig=_Stand, get_model=_Stand())
    stubs["tqdm"] = stub_module("tqdm", tqdm=_Stand)
    for name, attrs in {
        "coopeval.agents.test_llm": ("TestModel",),
        "coopeval.logger_manager": ("LOGGER",),
        "coopeval.ranking_evaluations.matchup_payoffs": ("MatchupPayoffs",),
        "coopeval.ranking_evaluations.payoffs_base": ("PayoffsBase",),
        "coopeval.ranking_evaluations.reputation_payoffs": ("ReputationPayoffs",),
        "coopeval.utils.match_scheduler_reputation": ("RandomMatcher",),
    }.items():
        stubs[name] = stub_module(name, **{a: _Stand for a in attrs})
    stubs["coopeval.logger_manager"].LOGGER = _Stand()  # type: ignore[attr-defined]

    loaded: dict[str, types.ModuleType] = {}

    def load(rel: str, name: str) -> types.ModuleType:
        module = import_file(root, f"{PKG}/{rel}", prefix + name.replace(".", "_"), NAME,
                             stubs=stubs)
        stubs[f"coopeval.{name}"] = loaded[name] = module
        return module

    load("utils/json_io.py", "utils.json_io")
    load("agents/agent_manager.py", "agents.agent_manager")
    load("games/base.py", "games.base")
    for file, _cls in GAME_FILES.values():
        load(f"games/{file}", f"games.{file[:-3]}")
    for mod in ("prompts", "json_parsing", "base", "repetition", "reputation", "mediation",
                "contracting"):
        load(f"mechanisms/{mod}.py", f"mechanisms.{mod}")
    return loaded


def _instructions(root: Path) -> dict[str, str]:
    """The CoT and IO agents' reasoning instructions: the string each ``chat`` hands to
    ``_generate_response`` as its system prompt, read with ast (never run)."""
    tree = ast.parse(read_source(root, AGENTS, NAME))
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name not in STYLE_AGENT.values():
            continue
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "dedent"
                    and call.args and isinstance(call.args[0], ast.Constant)
                    and isinstance(call.args[0].value, str)):
                found[node.name] = textwrap.dedent(call.args[0].value)
                break
    for cls in STYLE_AGENT.values():
        if cls not in found:
            raise SourceError(f"sources.{NAME}", f"{root / AGENTS}: {cls}.chat has no "
                              "textwrap.dedent instruction; check out the tested commit")
    return {style: found[cls] for style, cls in STYLE_AGENT.items()}


# ---------------------------------------------------------------- running builders
@dataclass(eq=False)
class _Player:
    """What CoopEval's prompt builders read of an agent (its position, a name that is its
    identity) plus a ``chat_with_retries`` that keeps the prompt and answers nothing."""

    player_id: int
    name: str
    prompts: list[str] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Player) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __lt__(self, other: _Player) -> bool:
        return self.name < other.name

    async def chat_with_retries(self, base_prompt: str, parse_func: Any, **_: Any) -> Any:
        self.prompts.append(base_prompt)
        return "", "source", None


def _player(seat: int, position: int) -> _Player:
    return _Player(position + 1, f"seat{seat}#P{position + 1}")


def _captured(player: _Player, coro: Coroutine[Any, Any, Any]) -> str:
    """Run one of CoopEval's prompt-building coroutines to its end (it awaits only the
    stand-in player) and return the prompt it asked the player."""
    try:
        coro.send(None)
    except StopIteration:
        pass
    else:
        coro.close()
        raise SourceError(f"sources.{NAME}", "a CoopEval prompt builder waited on something "
                          "other than the player; check out the tested commit")
    if not player.prompts:
        raise SourceError(f"sources.{NAME}", "a CoopEval prompt builder asked no prompt; "
                          "check out the tested commit")
    return player.prompts.pop()


def _number(x: float) -> int | float:
    """A payoff as CoopEval's YAML configs write it: whole numbers as ints (printed "2",
    not "2.0")."""
    x = float(x)
    return int(x) if x.is_integer() else x


def build_game(modules: Mapping[str, types.ModuleType], game: Any) -> Any:
    """CoopEval's game object for coop-tui's ``game`` (payoffs read from our tables)."""
    file, cls_name = GAME_FILES[game.key]
    module = modules[f"games.{file[:-3]}"]
    cls = getattr(module, cls_name)
    pay = game.payoffs
    if game.key == "public_good":
        return cls(num_players=game.n_players, multiplier=_number(game.params["alpha"]))
    if game.key == "travelers":
        claims = [float(pay[i, i, 0]) for i in range(game.action_counts[0])]
        steps = {b - a for a, b in itertools.pairwise(claims)}
        if len(steps) != 1 or next(iter(steps)) <= 0 or not all(c.is_integer() for c in claims):
            raise SourceError(f"sources.{NAME}", "CoopEval's Traveler's Dilemma has whole claims "
                              "rising by one step from A0; use game_params order = \"ascending\"")
        bonus = float(pay[0, 1, 0] - claims[0])
        return cls(min_claim=int(claims[0]), num_actions=len(claims),
                   claim_spacing=int(next(iter(steps))), bonus=bonus)
    actions = getattr(module, cls_name + "Action")
    letters = [a.value for a in actions]
    table = {a + b: [_number(pay[i, j, 0]), _number(pay[i, j, 1])]
             for (i, a), (j, b) in itertools.product(enumerate(letters), repeat=2)}
    return cls(payoff_matrix=table)


@dataclass
class Scene:
    """One decision as CoopEval's code asks it: the prompt (before the agent's reasoning
    instruction) and the parser whose complaint a re-ask quotes."""

    prompt: str
    parse: Any


# ---------------------------------------------------------------- the scenes
def _mechanism_key(ctx: Any, request: DecisionRequest) -> str:
    """Which of CoopEval's mechanisms asks ``request``: the match's mechanism when the
    context names it, else what the request carries (each mechanism's requests carry
    their own facts in ``view.extra``)."""
    mech = getattr(ctx, "mechanism", None)
    if mech is not None:
        return str(mech.key)
    extra = request.view.extra
    if request.phase == "propose":
        return "mediation" if request.kind == "mediator" else "contracting"
    if request.phase == "vote":
        return "mediation" if all(str(x).startswith("M") for x in request.labels) else "contracting"
    if request.phase == "sign" or "contract" in extra:
        return "contracting"
    if "mediator" in extra:
        return "mediation"
    if "coplayers" in extra:
        return "reputation"
    if "continuation" in extra:
        return "repetition"
    return "none"


def _games(source: LoadedSource, game: Any) -> tuple[Any, Any]:
    """CoopEval's game for coop-tui's, plain and with Mediation's extra action (kept per
    game object: CoopEval's games do not change once built, but for that action)."""
    kept: dict[int, tuple[Any, Any, Any]] = source.state.setdefault("games", {})
    key = id(game)
    entry = kept.pop(key, None)  # put back last: the dict's order is the use order
    if entry is None or entry[0] is not game:
        modules = source.state["modules"]
        mediated = build_game(modules, game)
        mediated.add_mediator_action()
        entry = (game, build_game(modules, game), mediated)
        if len(kept) >= KEPT_GAMES:
            del kept[next(iter(kept))]
    kept[key] = entry
    return entry[1], entry[2]


def _fail(what: str) -> SourceError:
    return SourceError(f"sources.{NAME}", what)


def scene_of(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    """The prompt CoopEval's code builds for ``request`` and the parser of its answer."""
    if tuple(request.label_to_action) != tuple(range(len(request.label_to_action))) or any(
            label != f"A{i}" for i, label in enumerate(request.labels)
            if request.label_to_action):
        raise _fail("CoopEval's code names actions A0, A1, ... in the game's order; "
                    "set randomize_labels = false for wording = \"source\"")
    if ctx.game.key not in GAME_FILES:
        raise _fail(f"CoopEval has no game {ctx.game.key!r}; its games are "
                    + ", ".join(GAME_FILES))
    mechanism = _mechanism_key(ctx, request)
    builder = _SCENES.get((mechanism, request.phase))
    if builder is None:
        raise _fail(f"CoopEval's code has no {request.phase!r} prompt under {mechanism!r}")
    if request.view.extra.get("horizon") == "known":
        raise _fail("CoopEval's Repetition tells a chance of another round; horizon = "
                    "\"known\" is the strategic personalities paper's: remove it for "
                    "wording = \"source\"")
    try:
        return builder(source, ctx, request)
    except SourceError:
        raise
    except Exception as exc:  # the clone's code: its failure is the user's to see, named
        raise _fail(f"CoopEval's code could not build the {request.phase} prompt of "
                    f"{mechanism} ({type(exc).__name__}: {exc}); check the experiment's "
                    "parameters against CoopEval's (docs/reproducing-coopeval.md)") from exc


def _mods(source: LoadedSource) -> Mapping[str, types.ModuleType]:
    return source.state["modules"]


def _play(game: Any, player: _Player, extra_info: str | None) -> Scene:
    prompt = _captured(player, game.prompt_player_mix_probs(player, extra_info=extra_info))
    return Scene(prompt, game._parse_mixed_probs)


def _none_play(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    return _play(game, _player(request.seat, request.view.seat), None)


def _lookup(extra: Mapping[str, Any], total: int | None) -> int:
    """Rounds of history shown: coop-tui's ``history`` ("all": every round)."""
    shown = extra.get("history", 3)
    return int(total or 10_000) if shown == "all" else int(shown)


def _repetition_play(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mods, extra, view = _mods(source), request.view.extra, request.view
    mech = mods["mechanisms.repetition"].Repetition(
        game, num_rounds=int(view.total_rounds or request.round),
        discount=float(extra.get("continuation", 0.8)),
        lookup_depth=_lookup(extra, view.total_rounds), include_prior_distributions=False)
    players = [_player(s, s) for s in range(ctx.n_seats)]
    history = mech.History(game.action_class)
    move = mods["games.base"].Move
    for i in range(len(ctx.histories[request.seat])):
        history.append(_moves(game, move, players, [ctx.histories[s][i].own for s in range(ctx.n_seats)]))
    twist = mech._build_history_prompts(players, request.round, history)[request.seat]
    return _play(game, players[request.seat], twist)


def _reputation_play(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mods, extra, view = _mods(source), request.view.extra, request.view
    lookup = _lookup(extra, view.total_rounds)
    mech = mods["mechanisms.reputation"].Reputation(
        game, num_rounds=int(view.total_rounds or request.round),
        discount=float(extra.get("continuation", 0.8)),
        max_recursion_depth=lookup if extra.get("order") == "higher" else 1,
        lookup_depth=lookup, include_prior_distributions=False)
    group = list(extra["coplayers"])
    group.insert(view.seat, request.seat)
    encounters = _encounters(extra.get("records"), request.round)
    position = {s: p for e in encounters for p, s in enumerate(e.seats)}
    position.update({s: p for p, s in enumerate(group)})
    players = {s: _player(s, position.get(s, 0)) for s in range(ctx.n_seats)}
    mech.player_to_uid = {players[s]: coopeval_uid(s, ctx.n_seats, game.num_players)
                          for s in range(ctx.n_seats)}
    move = mods["games.base"].Move
    for e in encounters:
        mech.history.append(_moves(game, move, [players[s] for s in e.seats], e.actions),
                            round_number=e.round)
    twist = mech._build_history_prompts([players[s] for s in group])[view.seat]
    return _play(game, players[request.seat], twist)


def _moves(game: Any, move: Any, players: Sequence[_Player], actions: Sequence[int]) -> list[Any]:
    """One round as CoopEval records it: each player's action and the points CoopEval's
    game pays for the profile (its own numbers: ints from a payoff table, floats from a
    rule, as its records and prompts print them)."""
    acts = [game.action_class.from_index(int(a)) for a in actions]
    points = game.get_actions_payoff(acts)
    return [move(player=p, action=a, points=x, trace_id="")
            for p, a, x in zip(players, acts, points, strict=True)]


def coopeval_uid(seat: int, n_seats: int, size: int) -> int:
    """The number CoopEval gives the agent in ``seat`` ("Agent #k"). Its population lists
    each roster agent once per game position (agent 1 as Player 1, as Player 2, ...,
    then agent 2, ...); coop-tui's fixed seating puts one block of seats per position
    (seat = position * agents + agent). The same roster order gives the same numbers."""
    per_role = max(n_seats // size, 1)
    position, agent = divmod(seat, per_role)
    return agent * size + position + 1


def _encounters(records: Any, before: int) -> list[Any]:
    """Every group's round before ``before``, in round order (each once)."""
    if records is None:
        return []
    seen: dict[int, Any] = {}
    for kept in records.by_seat:
        for e in kept:
            if e.round < before:
                seen.setdefault(id(e), e)
    return sorted(seen.values(), key=lambda e: (e.round, min(e.seats)))


def _seat_players(ctx: Any) -> list[_Player]:
    return [_player(s, s) for s in range(ctx.n_seats)]


def _designs(
    extra: Mapping[str, Any], players: Sequence[_Player], value: Any,
) -> tuple[dict[str, Any], list[_Player]]:
    """The designs on the table keyed by their designer's name, and the designers."""
    proposers = extra.get("proposers", {})
    designs, designers = {}, []
    for pid, design in extra.get("proposals", {}).items():
        player = players[proposers.get(pid, int(str(pid)[1:]) - 1)]
        designs[player.name] = value(design)
        designers.append(player)
    return designs, designers


def _mediation(source: LoadedSource, game: Any) -> Any:
    return _mods(source)["mechanisms.mediation"].Mediation(game)


def _mediator(game: Any, plan: Mapping[Any, int]) -> dict[int, Any]:
    return {int(k): game.action_class.from_index(int(a)) for k, a in plan.items()}


def _mediation_propose(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    _, mediated = _games(source, ctx.game)
    mech = _mediation(source, mediated)
    player = _seat_players(ctx)[request.seat]
    return Scene(_captured(player, mech._design_mediator(player)), mech._parse_mediator)


def _mediation_vote(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    _, mediated = _games(source, ctx.game)
    mech = _mediation(source, mediated)
    players = _seat_players(ctx)
    mech.mediators, designers = _designs(request.view.extra, players,
                                         lambda plan: _mediator(mediated, plan))
    player = players[request.seat]
    prompt = _captured(player, mech._collect_vote(player, designers))
    parse = _votes(source, "M", len(designers))
    return Scene(prompt, parse)


def _votes(source: LoadedSource, prefix: str, count: int) -> Any:
    parse = _mods(source)["mechanisms.json_parsing"].parse_bool_votes
    return lambda response: parse(response, prefix=prefix, count=count)


def _mediation_play(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    _, mediated = _games(source, ctx.game)
    mech = _mediation(source, mediated)
    extra = request.view.extra
    twist = mech.mediation_mechanism_prompt.format(
        mediator_description=mech._mediator_description(_mediator(mediated, extra["mediator"])),
        additional_action_id=mediated.num_base_actions,
        designer_player_id=int(extra.get("proposer", 0)) + 1)
    return _play(mediated, _seat_players(ctx)[request.seat], twist)


def _contracting(source: LoadedSource, game: Any) -> Any:
    return _mods(source)["mechanisms.contracting"].Contracting(game)


def _contract(game: Any, terms: Mapping[Any, int]) -> dict[Any, int]:
    return {game.action_class.from_index(int(a)): int(v)
            for a, v in sorted(terms.items(), key=lambda kv: int(kv[0]))}


def _contract_propose(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mech = _contracting(source, game)
    player = _seat_players(ctx)[request.seat]
    return Scene(_captured(player, mech._design_contract(player)), mech._parse_contract)


def _contract_vote(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mech = _contracting(source, game)
    players = _seat_players(ctx)
    mech.contracts, designers = _designs(request.view.extra, players,
                                         lambda terms: _contract(game, terms))
    player = players[request.seat]
    prompt = _captured(player, mech._collect_vote(player, designers))
    return Scene(prompt, _votes(source, "C", len(designers)))


def _contract_sign(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mech = _contracting(source, game)
    players = _seat_players(ctx)
    extra = request.view.extra
    designer = players[int(extra.get("proposer", 0))]
    mech.contracts = {designer.name: _contract(game, extra.get("contract", {}))}
    player = players[request.seat]
    prompt = _captured(player, mech._agree_to_contract(player=player, designer=designer))
    return Scene(prompt, mech._parse_agreement)


def _contract_play(source: LoadedSource, ctx: Any, request: DecisionRequest) -> Scene:
    game, _ = _games(source, ctx.game)
    mech = _contracting(source, game)
    prompts = _mods(source)["mechanisms.prompts"]
    extra = request.view.extra
    terms = extra.get("contract") if extra.get("active") else extra.get("proposed")
    designer = int(extra.get("proposer", 0)) + 1
    if terms is None:  # no contract at all (lenient answers only): CoopEval never gets here
        twist = None
    elif extra.get("active"):
        twist = prompts.CONTRACT_MECHANISM_PROMPT.format(
            contract_description=mech._contract_description(_contract(game, terms)),
            designer_player_id=designer)
    else:
        twist = prompts.CONTRACT_REJECTION_PROMPT.format(
            contract_description=mech._contract_description(_contract(game, terms)),
            rejector_ids=", ".join(f"Player {i}" for i in extra.get("refused", ())),
            designer_player_id=designer)
    return _play(game, _seat_players(ctx)[request.seat], twist)


_SCENES = {
    ("none", "play"): _none_play,
    ("repetition", "play"): _repetition_play,
    ("reputation", "play"): _reputation_play,
    ("mediation", "propose"): _mediation_propose,
    ("mediation", "vote"): _mediation_vote,
    ("mediation", "play"): _mediation_play,
    ("contracting", "propose"): _contract_propose,
    ("contracting", "vote"): _contract_vote,
    ("contracting", "sign"): _contract_sign,
    ("contracting", "play"): _contract_play,
}


# ---------------------------------------------------------------- the adapter
class CoopEvalWording(SourceWording):
    """CoopEval (Xiao215/CoopEval): every game, mechanism, phase and re-ask."""

    name = NAME
    paper = ("CoopEval: Benchmarking Cooperation-Sustaining Mechanisms and LLM Agents in "
             "Social Dilemmas")
    repository = "Xiao215/CoopEval"
    tested_commit = "8559e858b5cc33e0a29ac592c0b21eab007feb57"
    required = REQUIRED

    def serves(self, *, mechanism: str, prompt_protocol: str, game: str) -> bool:
        return prompt_protocol == PROTOCOL and mechanism in MECHANISMS and game in GAME_FILES

    def load(self, root: Path) -> LoadedSource:
        check_required(root, NAME, self.required)
        modules = _load_modules(root)
        files = sorted({r.path for r in self.required}
                       | {f"{PKG}/utils/json_io.py"}
                       | {f"{GAMES}/{f}" for f, _ in GAME_FILES.values()})
        return LoadedSource(self, root, git_commit(root, files), {
            "modules": modules, "instructions": _instructions(root)})

    def messages(
        self, source: LoadedSource, ctx: Any, request: DecisionRequest
    ) -> tuple[Message, ...]:
        scene = scene_of(source, ctx, request)
        return _layout(source, ctx, request.seat, scene.prompt)

    def retry_messages(
        self, source: LoadedSource, ctx: Any, request: DecisionRequest,
        sent: tuple[Message, ...], answer: str, reason: str,
    ) -> tuple[Message, ...]:
        scene = scene_of(source, ctx, request)
        try:
            scene.parse(answer)
            error = reason  # CoopEval's parser takes it: coop-tui's reason is all there is
        except ValueError as exc:
            error = str(exc)
        agent = source.state["modules"]["agents.agent_manager"].Agent
        text = agent._build_retry_prompt(scene.prompt, answer, error)
        return _layout(source, ctx, request.seat, text)


def _layout(source: LoadedSource, ctx: Any, seat: int, text: str) -> tuple[Message, ...]:
    """The messages of one attempt in the chosen layout."""
    style = getattr(ctx.agents[seat], "style", "cot") or "cot"
    instruction = source.state["instructions"].get(style)
    if instruction is None:  # a style CoopEval has no agent for: the prompt alone
        return ({"role": "user", "content": text},)
    if getattr(ctx.policy, "style_message", CODE_LAYOUT) == CODE_LAYOUT:
        return ({"role": "system", "content": instruction}, {"role": "user", "content": text})
    return ({"role": "user", "content": f"{text}\n{instruction}\n"},)


SOURCE = CoopEvalWording()
