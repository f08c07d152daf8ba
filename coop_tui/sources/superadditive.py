"""The super-additive cooperation paper's own wording, built by its code in the user's clone.

The paper's code is one script, ``IPDv6.py``: its prompt templates, the functions that
format the rules, results, group standings, stats and instructions, and the four
functions that build a prompt and send it (the move, the planner, the critic, the
comprehension questions after a match). Importing that script whole would run what it
does at import: it sets tracing variables (one of them an API key) in the process's
environment and creates an Ollama client. So the script is never imported: its syntax
tree is read and only what builds prompts is run (imports, class and function
definitions, literal settings and the template assignments); the model client, the
environment settings and everything else at its top level are left out. Its imports of
the model client, the graph library and the metrics file are stand-ins, since no prompt
uses them. Its prompt library (langchain-core) is imported as the script imports it: a
package of the clone's own folder first (as when the script runs from there), then the
environment.

Each message is then built by the code's own function for the request's decision, called
with the code's own state objects rebuilt from what the request carries (the
tournament's matches so far, plans and critiques, the battery's draws: see
``_facts`` in :mod:`coop_tui.mechanisms.teams`) and with the code's settings set from the
experiment's (groups, match length, budget, bonus, planning interval). The code hands
the prompt to its model client; a stand-in client keeps the text and stops the function
there, so no model is called and nothing after the call runs. Where the code draws the
comprehension questions' actions and rounds with its own generator, the draws coop-tui
made are handed to it instead.

Phases the code has no prompt for (a separate or after-round exit request) keep our own
wording; re-asks send the paper's prompt again, as the code has none (it falls back to a
random move). docs/reproducing-superadditive-wording.md ("Wording from the source") lists what
differs and why.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from coop_tui.sources.base import LoadedSource, Required, SourceError, SourceWording
from coop_tui.sources.loading import check_required, git_commit, read_source, source_root

NAME = "superadditive"
SCRIPT = "IPDv6.py"

CONDITIONS = {"RI": "repeated_only", "GC": "competition_only", "SA": "super_additive"}
"""coop-tui's structure -> the code's ``current_tournament_condition``."""

PROMPT_LIBRARY = "langchain-core"
"""The one package a clone needs beyond coop-tui: the script builds its prompts with it.
Deliberately not a dependency of coop-tui (only this paper's source wording uses it)."""
LEFT_OUT = ("langchain_ollama", "langgraph", "nicerthanhumansmetrics")
"""Packages the script imports but no prompt uses: a stand-in module each."""

BUILDERS = {"play": "generate_next_move", "plan": "generate_plan",
            "critique": "critique_plan", "meta": "run_meta_prompt"}
"""coop-tui's phase -> the code's function that builds (and sends) that prompt."""

_STATE = ("player_id", "state", "opponent_id", "tournament_state")

REQUIRED = (
    *(Required(SCRIPT, name) for name in (
        "player_prompt", "planner_prompt", "critic_prompt", "meta_prompt", "merge_dict",
        "Action", "MetaPromptFields", "PlayerStats", "GroupStats", "MatchState",
        "TournamentState", "TournamentState.update_group_stats",
    )),
    Required(SCRIPT, "format_game_rules", ("current_round", "total_rounds")),
    Required(SCRIPT, "format_match_results", ("match", "player_id")),
    Required(SCRIPT, "format_player_history", ("player_id", "tournament_state", "current_match")),
    Required(SCRIPT, "format_group_stats", ("player_id", "opponent_id", "tournament_state")),
    Required(SCRIPT, "format_players_stats", ("player_id", "opponent_id", "state")),
    Required(SCRIPT, "format_planner_instructions"),
    Required(SCRIPT, "format_critic_instructions"),
    Required(SCRIPT, "generate_next_move", _STATE),
    Required(SCRIPT, "generate_plan", (*_STATE, "old_plan", "critique")),
    Required(SCRIPT, "critique_plan", (*_STATE, "plan")),
    Required(SCRIPT, "run_meta_prompt", _STATE),
)


class _Sent(BaseException):
    """Raised by the stand-in model client with the prompt it was handed (a
    BaseException, so no ``except Exception`` of the code can swallow it)."""

    def __init__(self, prompt: str) -> None:
        super().__init__("prompt built")
        self.prompt = prompt


class _Client:
    """Stands in for the code's model client: keeps the prompt, calls nothing; with
    ``reply`` set, hands that text back instead, so the code reads an answer its own way."""

    def __init__(self, reply: str | None = None) -> None:
        self.reply = reply

    def invoke(self, prompt: Any, *args: Any, **kwargs: Any) -> str:
        if self.reply is not None:
            return self.reply
        raise _Sent(prompt if isinstance(prompt, str) else str(prompt))


class _Unreadable(BaseException):
    """The code gave up reading an answer and turned to its random fallback."""


class _NoFallback:
    """Stands in for ``random`` while the code reads an answer: its random move is not an
    answer, so coop-tui re-asks instead."""

    def choice(self, options: Sequence[Any]) -> Any:
        raise _Unreadable()


class _Draws:
    """Stands in for the ``random`` module while the comprehension prompt is built:
    ``choice`` returns coop-tui's draws in the order the code draws them."""

    def __init__(self, values: Sequence[Any]) -> None:
        self._values = list(values)

    def choice(self, options: Sequence[Any]) -> Any:
        if not self._values:
            raise SourceError(f"sources.{NAME}", f"{SCRIPT} draws more values than coop-tui's "
                              "battery (two actions, two rounds); check out the tested commit")
        value = self._values.pop(0)
        if value not in options:
            raise SourceError(f"sources.{NAME}", f"{SCRIPT} draws from {list(options)!r}, "
                              f"coop-tui drew {value!r}; check out the tested commit")
        return value


class _Unused(types.ModuleType):
    """A stand-in module: any name imported from it is another stand-in."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unused(f"{self.__name__}.{attr}")


def _kept(node: ast.stmt) -> bool:
    """Top-level statements that only define: imports, classes, functions, literal
    settings and ``X = Template.from_template("...")``; nothing else of the script runs."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
        return True
    if not isinstance(node, ast.Assign) or not all(isinstance(t, ast.Name) for t in node.targets):
        return False
    value = node.value
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "from_template" and len(value.args) == 1
            and isinstance(value.args[0], ast.Constant) and not value.keywords):
        return True
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _in_clone(root: Path, top: str) -> bool:
    return (root / top / "__init__.py").is_file() or (root / f"{top}.py").is_file()


def _importer(root: Path) -> Callable[..., Any]:
    """``__import__`` for the script: stand-ins for :data:`LEFT_OUT`, the clone's own
    packages from its folder (restoring whatever the process had under those names),
    everything else as usual."""
    real = builtins.__import__

    def load(name: str, globals: Any = None, locals: Any = None,
             fromlist: Sequence[str] = (), level: int = 0) -> Any:
        top = name.partition(".")[0]
        if level or not top:
            return real(name, globals, locals, fromlist, level)
        if top in LEFT_OUT:
            return _Unused(name if fromlist else top)
        if not _in_clone(root, top):
            return real(name, globals, locals, fromlist, level)
        mine = [k for k in sys.modules if k == top or k.startswith(top + ".")]
        saved = {k: sys.modules.pop(k) for k in mine}
        sys.path.insert(0, str(root))
        try:
            return real(name, globals, locals, fromlist, level)
        finally:
            sys.path.remove(str(root))
            for k in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
                del sys.modules[k]
            sys.modules.update(saved)

    return load


def _run_definitions(root: Path) -> dict[str, Any]:
    """The script's definitions, run in a private module; a failure names the file."""
    path = root / SCRIPT
    tree = ast.parse(read_source(root, SCRIPT, NAME), filename=str(path))
    module = types.ModuleType(f"coop_tui_source.{NAME}.IPDv6")
    module.__file__ = str(path)
    ns = module.__dict__
    ns["__builtins__"] = {**vars(builtins), "__import__": _importer(root)}
    code = compile(ast.Module(body=[n for n in tree.body if _kept(n)], type_ignores=[]),
                   str(path), "exec")
    sys.modules[module.__name__] = module  # pydantic resolves the models' names there
    try:
        exec(code, ns)
    except ImportError as exc:
        sys.modules.pop(module.__name__, None)
        missing = getattr(exc, "name", None) or str(exc)
        package = PROMPT_LIBRARY if missing.split(".")[0] == "langchain_core" else (
            missing.split(".")[0].replace("_", "-"))
        raise SourceError(f"sources.{NAME}", f"{path} imports {missing}, which is not installed "
                          "where coop-tui runs; install it into coop-tui's own environment "
                          f"(pip install {package} with that environment's pip, or pipx "
                          f"inject coop-tui {package})") from exc
    except Exception as exc:  # the user's code: any failure is theirs to see, named
        sys.modules.pop(module.__name__, None)
        raise SourceError(f"sources.{NAME}", f"{path} failed to load: "
                          f"{type(exc).__name__}: {exc}") from exc
    ns["LLM"] = _Client()
    return ns


def _actions(ns: dict[str, Any]) -> tuple[str, str]:
    """The code's two move names, cooperative first: the ``move`` choices of its answer
    model, ordered by the payoff each earns when both play it (its ``PAYOFFS``)."""
    moves = typing.get_args(ns["Action"].model_fields["move"].annotation)
    payoffs = ns.get("PAYOFFS", {})
    if len(moves) != 2:
        raise SourceError(f"sources.{NAME}", f"{SCRIPT}: Action.move offers {list(moves)!r}, "
                          "coop-tui expects two moves; check out the tested commit")
    return tuple(sorted(moves, key=lambda m: -sum(payoffs.get((m, m), (0, 0)))))  # type: ignore[return-value]


def _points(x: float) -> int | float:
    """The code's scores are integers: 3, not 3.0."""
    return int(x) if float(x).is_integer() else x


class SuperadditiveWording(SourceWording):
    """The super-additive cooperation paper's code as the source of its tournament's prompts."""

    name: ClassVar[str] = NAME
    paper: ClassVar[str] = "Super-additive Cooperation in Language Model Agents"
    repository: ClassVar[str] = "pippot/Superadditive-cooperation-LLMs"
    tested_commit: ClassVar[str] = "f7d2f0a88663b7f21b2a783339705c9793b7a9b5"
    required: ClassVar[tuple[Required, ...]] = REQUIRED

    def serves(self, *, mechanism: str, prompt_protocol: str, game: str) -> bool:
        """The team tournament on the paper's Prisoner's Dilemma (the code's rules state
        its payoffs, whatever the game)."""
        return mechanism == "teams" and game == "ipd"

    def load(self, root: Path) -> LoadedSource:
        root = source_root(root, NAME)
        check_required(root, NAME, self.required)
        ns = _run_definitions(root)
        stats = ns["PlayerStats"].model_fields
        return LoadedSource(self, root, git_commit(root, [SCRIPT]), {
            "ns": ns, "actions": _actions(ns),
            "no_plan": stats["plan"].default, "no_critique": stats["critique"].default,
        })

    def messages(self, source: LoadedSource, ctx: Any, request: Any) -> tuple[dict[str, str], ...]:
        facts = request.view.extra.get("tournament")
        builder = BUILDERS.get(request.phase)
        if facts is None or builder is None:
            return tuple(request.messages)  # no such prompt in the code: ours (documented)
        prompt = _build(source.state, facts, request.seat, request.phase, builder)
        return ({"role": "user", "content": prompt},)

    def read_answer(self, source: LoadedSource, ctx: Any, request: Any, text: str) -> str | None:
        """An answer to the code's prompt read by the code's own function (its parser,
        its fallbacks), in coop-tui's answer shape for ``request``: a move as ``choice``
        (or percentages), with ``leave`` when the request asks it; plans and critiques as
        the code keeps them. None when the code could not read it (where it would play at
        random) or for a phase it has no reading for (the comprehension answers)."""
        facts = request.view.extra.get("tournament")
        builder = BUILDERS.get(request.phase)
        if facts is None or builder is None or request.phase == "meta":
            return None
        try:
            result = _build(source.state, facts, request.seat, request.phase, builder, reply=text)
        except _Unreadable:
            return None
        if request.phase != "play":
            return str(result)
        moves = {name: a for a, name in _names(source.state["actions"], facts["cooperate"]).items()}
        action = moves.get(result.get("move"))
        if action is None:
            return None
        label = request.labels[request.label_to_action.index(action)]
        answer: dict[str, Any] = {"choice": label} if request.kind == "choice" else {
            lab: 100 if lab == label else 0 for lab in request.labels}
        if request.options.get("ask_leave"):
            answer["leave"] = not bool(result.get("keep_playing", True))
        return json.dumps(answer)

    def retry_messages(self, source: LoadedSource, ctx: Any, request: Any, sent: tuple[dict[str, str], ...],
                       answer: str, reason: str) -> tuple[dict[str, str], ...]:
        """The code never asks again (an unusable answer becomes a random move); the
        closest in its own words is its prompt once more."""
        return tuple(sent)


def _build(
    state: dict[str, Any], facts: dict[str, Any], seat: int, phase: str, builder: str,
    reply: str | None = None,
) -> Any:
    """Run the code's builder for ``phase`` on its state rebuilt from ``facts``: the
    prompt it sends, or with ``reply`` what it makes of that answer."""
    ns = state["ns"]
    asked = facts.get("asked", {})
    settings = {
        "current_tournament_condition": CONDITIONS[facts["structure"]],
        "NUM_GROUPS": facts["teams"], "GROUP_SIZE": facts["team_size"],
        "MAX_ROUNDS_PER_MATCH": facts["rounds"], "MAX_TOTAL_ROUNDS": facts["budget"],
        "GROUP_REWARD_MULTIPLIER": 1 + float(facts["winner_bonus"]),
        "PLANNING_FREQUENCY": facts["plan_every"],
    }
    settings["LLM"] = _Client(reply)
    if reply is not None:
        settings["random"] = _NoFallback()
    if phase == "meta":
        a1, a2, r1, r2 = asked["draws"]
        names = _names(state["actions"], facts["cooperate"])
        settings["random"] = _Draws([names[a1], names[a2], r1, r2])
    saved = {k: ns.get(k) for k in settings}
    ns.update(settings)
    try:
        tournament, match = _rebuild(state, facts)
        other = match.player2_id if match.player1_id == seat else match.player1_id
        args: dict[str, Any] = {"player_id": seat, "state": match, "opponent_id": other,
                                "tournament_state": tournament}
        if phase == "plan":
            args["old_plan"] = asked.get("old_plan") or state["no_plan"]
            args["critique"] = asked.get("critique") or state["no_critique"]
        elif phase == "critique":
            args["plan"] = asked.get("draft") or state["no_plan"]
        with contextlib.redirect_stdout(io.StringIO()):  # the code prints what it read
            result = ns[builder](**args)
        if reply is not None:
            return result
    except _Sent as sent:
        return sent.prompt
    except (SourceError, _Unreadable):
        raise
    except Exception as exc:  # the user's code: named, with the phase it was building
        raise SourceError(f"sources.{NAME}", f"{SCRIPT}: {builder} failed building the "
                          f"{phase} prompt: {type(exc).__name__}: {exc}") from exc
    finally:
        ns.update(saved)
    raise SourceError(f"sources.{NAME}", f"{SCRIPT}: {builder} sent no prompt to its model "
                      "client; check out the tested commit")


def _names(actions: tuple[str, str], cooperate: int) -> dict[int, str]:
    """coop-tui's action index -> the code's move name (its first is the cooperative one)."""
    return {cooperate: actions[0], 1 - cooperate: actions[1]}


def _rebuild(state: dict[str, Any], facts: dict[str, Any]) -> tuple[Any, Any]:
    """The code's TournamentState and current MatchState for the moment of the request:
    every match played so far (the code's ``matches``), players' totals and group scores
    over finished matches only (the code adds a match to them when it ends), the
    current match's plans and critiques."""
    ns = state["ns"]
    names = _names(state["actions"], facts["cooperate"])
    size, current = facts["team_size"], facts["current"]
    players = {p: ns["PlayerStats"](group_id=p // size) for p in range(facts["teams"] * size)}
    groups = {g: ns["GroupStats"](group_id=g, members=list(range(g * size, (g + 1) * size)))
              for g in range(facts["teams"])}
    matches: dict[int, Any] = {}
    for k, (pair, rounds, ended) in enumerate(facts["matches"][:current + 1]):
        match = ns["MatchState"](player1_id=pair[0], player2_id=pair[1])
        _replay(match, rounds, names, state["actions"][0])
        if ended:
            match.completed = True
            for pid, stats in ((pair[0], match.player1_stats), (pair[1], match.player2_stats)):
                total = players[pid]
                total.total_score += stats.total_score
                total.action_a_count += stats.action_a_count
                total.action_b_count += stats.action_b_count
        matches[k] = match
    match = matches[current]
    for pid, stats in ((match.player1_id, match.player1_stats), (match.player2_id, match.player2_stats)):
        stats.plan = facts["plans"][pid] or state["no_plan"]
        stats.critique = facts["critiques"][pid] or state["no_critique"]
    tournament = ns["TournamentState"](players=players, groups=groups, matches=matches,
                                       experiment_condition=CONDITIONS[facts["structure"]])
    _group_scores(tournament)
    tournament.current_match_idx = current
    return tournament, match


def _replay(match: Any, rounds: Iterable[Any], names: dict[int, str], cooperative: str) -> None:
    """A match's rounds written into the code's MatchState as its ``play_round`` keeps them
    (``cooperative``: the move it counts as ``action_a``)."""
    for (x, y), (p, q) in rounds:
        a, b = names[x], names[y]
        match.round_results.append((a, b))
        match.round_scores.append((_points(p), _points(q)))
        for stats, move, pts in ((match.player1_stats, a, p), (match.player2_stats, b, q)):
            stats.total_score += _points(pts)
            if move == cooperative:
                stats.action_a_count += 1
            else:
                stats.action_b_count += 1
            stats.move_history.append(move)
            stats.score_history.append(stats.total_score)
        match.current_round += 1
        match.is_first_interaction = False


def _group_scores(tournament: Any) -> None:
    """The groups' scores by the code's own method, as it refreshes them after a match
    (with no match index at the tournament's last, so no end-of-game bonus is applied)."""
    tournament.current_match_idx = -1
    tournament.update_group_stats()


SOURCE = SuperadditiveWording()
