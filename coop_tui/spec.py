"""Sweep files: loading, validation and grid expansion.

The models of a sweep file's fields, each checked on its own, are in
:mod:`coop_tui.spec_models`; here a file is read, checked against the registries of
games, mechanisms and strategies, and expanded into cells. Everything a user can get wrong is checked here, before a run exists, and reported
as one line naming the field and the fix (``SpecError``; the CLI exits 2). A list
in an experiment field is a grid axis; the only lists that are values are the
roster (``agents``), explicit matchups and fields whose own type is a list (for
those, a list of lists is the axis).
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from coop_tui import redact
from coop_tui import sources as paper_sources
from coop_tui.agents.custom import AgentRefError, agent_class, is_class_ref
from coop_tui.agents.strategies import StrategyError, get_strategy
from coop_tui.conditions import get_condition
from coop_tui.decisions import SeatView
from coop_tui.engine import stable_hash
from coop_tui.errors import SpecError  # defined in the bottom layer; importable from here too
from coop_tui.games import GameError, load_game
from coop_tui.games.kinds import ProtocolGame
from coop_tui.games.user import MAX_PAYOFF
from coop_tui.grounded.stages import check_sweep, planning_params
from coop_tui.inputs import (
    InputTooLarge,
    NotRegularFile,
    TooManyAliases,
    check_yaml_aliases,
    fingerprints,
    read_regular,
)
from coop_tui.mechanisms import MechanismError, mechanism_class
from coop_tui.mechanisms._designs import shared_design_count
from coop_tui.protocols import get as get_protocol

# the models of a sweep file (coop_tui.spec_models); every name stays importable from here
from coop_tui.spec_models import DEFAULT_MAX_DECISIONS as DEFAULT_MAX_DECISIONS
from coop_tui.spec_models import DEFAULT_MAX_PROMPT_TOKENS as DEFAULT_MAX_PROMPT_TOKENS
from coop_tui.spec_models import (
    KEYLESS_PROVIDERS,
    PROVIDER_KEY_ENV,
    AgentSpec,
    Cell,
    ExperimentSpec,
    Sweep,
    SweepSpec,
    batched,  # noqa: F401 - re-exported for the runner and sweeps
)
from coop_tui.spec_models import LABEL_MODES as LABEL_MODES
from coop_tui.spec_models import MAX_SAMPLES as MAX_SAMPLES
from coop_tui.spec_models import AnswerMode as AnswerMode
from coop_tui.spec_models import public_spec as public_spec
from coop_tui.spec_models import url_problem as url_problem
from coop_tui.talk import DEFAULT_TALK_CHARS

# Bounds checked before anything runs: a typo such as ``samples = 1000000000`` must be
# an error naming the field, not a run that fills memory or the disk.
MAX_GRID_POINTS = 100_000
"""Grid points (cells) in a whole sweep, summed over experiments and seatings."""
MAX_NESTING = 32
"""Deepest nesting of tables and lists a sweep or game file may have."""
MAX_INT_DIGITS = 19
"""Integers in a sweep file beyond this many digits are refused (no field needs them)."""
SECRET_FIELDS = frozenset({"api_key", "api_key_env", "api_base"})
"""Fields whose value a validation error must never echo."""


# ----------------------------------------------------------------- loading
def _loc(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _explain(err: dict[str, Any], secret: bool = False) -> str:
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    typ = err.get("type", "")
    got = err.get("input")
    if typ == "missing":
        return "is required; add it"
    if typ == "extra_forbidden":
        return "is not a known field; remove it or check its spelling"
    if typ in ("int_parsing", "int_type", "float_parsing", "float_type", "bool_parsing",
               "bool_type", "string_type", "list_type", "dict_type", "literal_error",
               "greater_than", "greater_than_equal", "less_than", "less_than_equal",
               "too_short", "int_from_float"):
        if secret:  # never echo a key, a key variable's value or a URL with a password
            return f"{msg[0].lower()}{msg[1:]}"
        shown = repr(got)
        if len(shown) > 60:
            shown = shown[:40] + f"... ({len(shown)} characters)"
        return f"{msg[0].lower()}{msg[1:]} (got {shown})"
    return msg


def spec_error_from(exc: ValidationError, prefix: str = "") -> SpecError:
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    # pydantic puts union branch names in loc ("str", "list[str]"): drop them
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in {"str", "float", "int", "list", "literal['self','cross']"})))
    secret = any(p in SECRET_FIELDS for p in loc if isinstance(p, str))
    return SpecError(_loc(loc, prefix), redact.scrub(_explain(err, secret)))


MAX_SWEEP_FILE_BYTES = 4 * 1024 * 1024
"""Bytes of a sweep or study file read at most; a larger one is refused before it is read
or parsed (a 200 MB TOML took 27 s to parse before it was refused for what it held)."""


def read_sweep_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise SpecError("", f"sweep file {path} does not exist")
    if not path.is_file():
        raise SpecError("", f"{path} is not a file; give the path of a .toml or .yaml sweep file")
    try:
        text = read_regular(path, limit=MAX_SWEEP_FILE_BYTES).decode("utf-8")
    except NotRegularFile as exc:
        raise SpecError(str(path), str(exc.strerror)) from None
    except InputTooLarge as exc:
        raise SpecError("", f"{exc}; a sweep file is a few KiB (the largest shipped study is "
                            "35 KiB)") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise SpecError(str(path), f"cannot be read as UTF-8 text ({exc})") from None
    data = parse_config_text(text, path)
    if not isinstance(data, dict):
        raise SpecError(str(path), "must contain a table of settings at the top level")
    return data


def parse_config_text(text: str, path: Path) -> Any:
    """TOML or YAML (by suffix), refusing what would crash or mislead later: duplicate
    YAML keys (YAML silently keeps the last), nesting deeper than ``MAX_NESTING``,
    integers of more than ``MAX_INT_DIGITS`` digits and non-finite numbers."""
    where = str(path)
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            try:
                data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader
            except yaml.YAMLError as exc:
                raise SpecError(where, f"is not valid YAML: {exc}".replace("\n", " ")) from None
            except TooManyAliases as exc:
                raise SpecError(where, str(exc)) from None
        else:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise SpecError(where, f"is not valid TOML: {exc}") from None
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(
            where, f"is nested too deeply to read; sweep and game files need at most "
                   f"{MAX_NESTING} levels of tables and lists"
        ) from None
    except (ValueError, OverflowError) as exc:  # e.g. Python's limit on integer digits
        raise SpecError(where, f"holds a value that cannot be read ({exc})") from None
    _check_values(data, "", 0, where)
    return data


def _check_values(value: Any, loc: str, depth: int, where: str) -> None:
    if depth > MAX_NESTING:
        shown = loc if len(loc) <= 40 else loc[:40] + "..."
        raise SpecError(shown or where, f"is nested more than {MAX_NESTING} levels deep; flatten it")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_values(item, f"{loc}.{key}" if loc else str(key), depth + 1, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, f"{loc}[{i}]", depth + 1, where)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if abs(value) >= 10**MAX_INT_DIGITS:
            raise SpecError(
                loc or where,
                f"is an integer of {len(str(abs(value)))} digits; no field takes more than "
                f"{MAX_INT_DIGITS}, give a smaller number",
            )
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(loc or where, f"is {value}; give a finite number")


def _unique_key_loader() -> Any:
    """A YAML SafeLoader that refuses a key given twice in one mapping, and aliases that
    expand past :data:`coop_tui.inputs.MAX_ALIAS_EXPANSION` (before building values)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def compose_document(self) -> Any:
            node = super().compose_document()
            check_yaml_aliases(node)
            return node

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                except TypeError:  # an unhashable key: let PyYAML report it
                    break
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found the key {key!r} twice (YAML would keep only the last); "
                        "give each key once", key_node.start_mark,
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_sweep(
    path: Path | str, *, check_keys: bool = True, sources: Mapping[str, str] | None = None,
) -> Sweep:
    """Read, check and expand a sweep file; ``sources`` (``--source NAME=PATH``) override
    its ``[sources]`` table."""
    path = Path(path)
    data = read_sweep_file(path)
    sweep = build_sweep(data, source=path, check_keys=check_keys, sources=sources)
    return sweep


def build_sweep(
    data: dict[str, Any], *, source: Path | None = None, check_keys: bool = True,
    sources: Mapping[str, str] | None = None,
) -> Sweep:
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise spec_error_from(exc) from None
    if sources:
        check_source_names(sources, "--source")
        spec.sources = {**spec.sources, **sources}
    check_source_names(spec.sources, "sources")
    sweep = Sweep(spec=spec, source=source)
    for name, agent in spec.agents.items():
        _check_agent(name, agent, check_keys=check_keys, base=source.parent if source else None)
        check_batch(name, agent, spec.batch)

    # stage links (the similarity signals paper's pipeline), and the order they set
    sweep.stages = check_sweep(spec, source.parent if source else None)
    grid_budget = [MAX_GRID_POINTS]
    for i, exp in enumerate(spec.experiments):
        sweep.cells.extend(
            _expand_experiment(i, exp, spec, source.parent if source else None, grid_budget)
        )
    if spec.templates:
        tdir = _resolve(spec.templates, source.parent if source else None)
        if not tdir.is_dir():
            raise SpecError("templates", f"folder {tdir} does not exist; point it at a copy of data/prompts")
    _check_decision_bound(sweep)
    # a source's clone is recorded by its commit (below), not fingerprinted file by file
    sweep.inputs = fingerprints({k: v for k, v in data.items() if k != "sources"},
                                source.parent if source else None)
    load_wording_sources(sweep)  # last: the user's code runs only for a sweep that is valid
    return sweep


# ----------------------------------------------------------------- paper sources
def check_source_names(paths: Mapping[str, str], where: str) -> None:
    """Every name under ``[sources]`` (or ``--source``) is a known paper source (the
    adapters are imported only when some source is named)."""
    if not paths:
        return
    known = paper_sources.sources()
    for name in paths:
        if name not in known:
            listed = ", ".join(known) or "none is installed"
            field = f"{where}.{name}" if where == "sources" else where
            raise SpecError(field, f"{name!r} is not a paper source; use one of: {listed}")


def _serving_source(where: str, exp_mechanism: str, protocol: str, game: Any,
                    paths: Mapping[str, str]) -> str:
    """The name of the one paper source that serves this cell (``wording = "source"``);
    a SpecError naming the fix when none does or its clone is not named."""
    serving = [name for name, wording in paper_sources.sources().items()
               if wording.serves(mechanism=exp_mechanism, prompt_protocol=protocol, game=game.key)]
    if not serving:
        raise SpecError(
            f"{where}.wording",
            f'"source": no paper source builds prompts for mechanism {exp_mechanism!r}, '
            f"prompt_protocol {protocol!r}, game {game.key!r} (sources: "
            f"{', '.join(paper_sources.sources()) or 'none'}); use wording = \"ours\" there, "
            "or the paper's own mechanism and protocol",
        )
    named = [name for name in serving if name in paths]
    if len(named) > 1:  # several papers play this cell and the sweep names the clones of each
        raise SpecError(f"{where}.wording", f'"source": the sources {", ".join(named)} all '
                        "serve this cell; name only the clone of the paper whose words you mean")
    name = named[0] if named else serving[0]
    if name not in paths:
        ways = "; or ".join(
            f'{n} = "~/path/to/clone" (or --source {n}=PATH) for a clone of '
            f"{paper_sources.get(n).repository}" for n in serving)
        raise SpecError(
            f"{where}.wording",
            f'"source" here reads a paper\'s clone that the sweep does not name: put under '
            f"[sources] {ways}",
        )
    return name


def load_wording_sources(sweep: Sweep) -> None:
    """Check and load each source some cell reads, before anything runs or is written
    (SpecError, exit 2, naming the file and the fix); a clone at another commit than the
    tested one adds a warning to ``sweep.warnings``."""
    needed = sorted({c.wording_source for c in sweep.cells if c.wording_source})
    for name in needed:
        loaded = paper_sources.open_source(name, sweep.spec.sources[name])
        sweep.wording_sources[name] = loaded
        warning = paper_sources.commit_warning(loaded)
        if warning:
            sweep.warnings.append(warning)


def _wordings(where: str, exp: ExperimentSpec, base: Path | None) -> list[str]:
    """The experiment's wording values (one, or a grid axis): "ours", "source" or an
    existing folder of the user's templates."""
    values = exp.wording if isinstance(exp.wording, list) else [exp.wording]
    if not values:
        raise SpecError(f"{where}.wording", "is an empty list; give at least one value")
    if len(set(values)) != len(values):
        raise SpecError(f"{where}.wording", "lists a value twice; list each once")
    for value in values:
        if value in ("ours", "source"):
            continue
        folder = _resolve(value, base)
        if not folder.is_dir():
            raise SpecError(
                f"{where}.wording",
                f'{value!r} is neither "ours", "source" nor an existing folder of templates '
                f"({folder} {'is not a folder' if folder.exists() else 'does not exist'}); "
                "give one of those",
            )
    return values


def wording_folder(cell: Cell, base: Path | None) -> Path | None:
    """The folder of the user's own templates a cell's prompts are worded from (None for
    "ours" and "source")."""
    if cell.wording in ("ours", "source"):
        return None
    return _resolve(cell.wording, base)


def _check_decision_bound(sweep: Sweep) -> None:
    total = estimate_decisions(sweep)
    if total > sweep.spec.max_decisions:
        raise SpecError(
            "max_decisions",
            f"the sweep would make about {total:,} decisions ({sweep.total_matches:,} matches), "
            f"more than max_decisions = {sweep.spec.max_decisions:,}; shrink the grid or "
            "samples, or raise max_decisions if you mean it",
        )


def estimate_decisions(sweep: Sweep) -> int:
    """Decisions the sweep makes, by the mechanisms' own estimates (every replicate; a
    tournament's shared designs counted once)."""
    per_match = decisions_per_match(sweep)
    slots = sweep.slots_by_cell()  # a slice (--shard) plays only some
    return sum(n * k for n, k in zip(per_match, slots, strict=True)) + shared_design_count(
        sweep.cells, sweep.tournaments_played()
    )


def decisions_per_match(sweep: Sweep) -> list[int]:
    """Decisions in one match of each grid point, aligned with ``sweep.cells``; one game
    load per distinct game and one mechanism per distinct parameter set."""
    base = sweep.source.parent if sweep.source else None
    games: dict[str, Any] = {}
    per_match: dict[str, int] = {}
    out: list[int] = []
    for cell in sweep.cells:
        gkey = stable_hash([cell.game, cell.game_params])
        key = stable_hash([gkey, cell.mechanism, cell.mechanism_params, len(cell.seats)])
        if key not in per_match:
            if gkey not in games:
                games[gkey] = cell_game(cell, base)
            mech_cls = mechanism_class(cell.mechanism)

            mech = mech_cls(mech_cls.Params.model_validate(planning_params(cell)))
            per_match[key] = mech.estimate_decisions(games[gkey], len(cell.seats))
        # a talk phase asks each seat talk_turns messages per move (strategies skip it:
        # an upper bound, as the mechanisms' own estimates are)
        talk = per_match[key] * cell.talk_turns if cell.talk != "none" else 0
        out.append(per_match[key] + talk)
    return out


def _resolve(path: str, base: Path | None) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None and (base / p).exists():
        return base / p
    return p


def needs_key(agent: AgentSpec) -> bool:
    """A hosted model reached without api_base: its provider wants an API key."""
    return (agent.kind == "llm" and not agent.api_base
            and agent.provider not in KEYLESS_PROVIDERS)


def api_keys(spec: SweepSpec) -> list[tuple[str, list[str], bool]]:
    """What a real run needs that a dry run does not: (where the key comes from, the
    agents that need it, whether it is there now), one entry per source. The source is
    the environment variable's name; ``agents.X.api_key`` for a key written in the file;
    ``agents.X.api_key_env`` when that field names no plausible variable (it may hold a
    pasted key, which is never echoed); ``provider P (no known variable)`` when the
    provider's variable is unknown."""
    found: dict[str, tuple[list[str], bool]] = {}
    for name, agent in spec.agents.items():
        if not needs_key(agent):
            continue
        env = agent.api_key_env or PROVIDER_KEY_ENV.get(agent.provider)
        if agent.api_key is not None:
            source = f"agents.{name}.api_key"
        elif env is None:
            source = f"provider {agent.provider!r} (no known variable: name one with api_key_env)"
        elif not re.fullmatch(r"[A-Z_][A-Z0-9_]*", env):
            source = f"agents.{name}.api_key_env"
        else:
            source = env
        agents, _ = found.get(source, ([], False))
        found[source] = ([*agents, name], agent.resolve_key() is not None)
    return [(source, agents, present) for source, (agents, present) in found.items()]


def _check_custom(where: str, agent: AgentSpec) -> None:
    """An ``agent = ...`` class must import and accept its params before anything runs."""
    try:
        cls = agent_class(agent.agent or "")
    except AgentRefError as exc:
        raise SpecError(f"{where}.agent", str(exc)) from None
    try:
        inspect.signature(cls).bind(**agent.params)
    except TypeError as exc:
        raise SpecError(f"{where}.params", f"{agent.agent}: {exc}") from None
    except ValueError:  # a constructor without a readable signature: checked when built
        pass


def _check_agent(name: str, agent: AgentSpec, *, check_keys: bool, base: Path | None) -> None:
    where = f"agents.{name}"
    if agent.strategy and is_class_ref(agent.strategy):
        raise SpecError(f"{where}.strategy", (
            f"{agent.strategy!r} names a class, not a shipped strategy; an agent class with "
            f"decide(request) goes in `agent = {agent.strategy!r}` instead of `strategy =` "
            "(docs/plugins.md)"))
    if agent.agent:
        _check_custom(where, agent)
    if agent.strategy:
        try:
            get_strategy(agent.strategy, **agent.params)
        except StrategyError as exc:
            raise SpecError(f"{where}.strategy", str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{where}.params", str(exc)) from None
    if not agent.prefix_cache and agent.kind != "local":
        raise SpecError(f"{where}.prefix_cache",
                        f"only an embedded model (local/...) keeps saved prompt starts; "
                        f"{name!r} is a {agent.kind} agent: remove prefix_cache")
    if agent.kind == "local":
        assert agent.model is not None
        if agent.model.startswith("local:"):
            gguf = _resolve(agent.model[len("local:"):], base)
            if not gguf.exists():
                raise SpecError(f"{where}.model", f"GGUF file {gguf} does not exist")
            if not gguf.is_file():
                raise SpecError(
                    f"{where}.model", f"{gguf} is not a file; give the path of a .gguf model file"
                )
        elif agent.model != "local/smollm2":
            raise SpecError(
                f"{where}.model",
                f"unknown embedded model {agent.model!r}; use local/smollm2 or local:<path.gguf>",
            )
    if agent.kind == "llm":
        assert agent.model is not None
        if "/" not in agent.model:
            raise SpecError(
                f"{where}.model",
                f"{agent.model!r} has no provider; write provider/model (e.g. openai/gpt-4o-mini)",
            )
        if check_keys and needs_key(agent) and agent.resolve_key() is None:
            env = agent.api_key_env or PROVIDER_KEY_ENV.get(agent.provider)
            if env is None:
                raise SpecError(
                    f"{where}.model",
                    f"coop-tui does not know which variable holds the key for provider "
                    f"{agent.provider!r}: name it with api_key_env (or give api_base for an "
                    f"OpenAI-compatible server)",
                )
            if agent.api_key_env and not re.fullmatch(r"[A-Z_][A-Z0-9_]*", env):
                # an unusual name may be a pasted key: say which field, not its value
                raise SpecError(
                    f"{where}.api_key_env",
                    f"the variable it names is not set, so there is no API key for "
                    f"{agent.model}; set it in the environment or a .env file (it must hold the "
                    "key; api_key_env holds only the variable's name)",
                )
            raise SpecError(
                f"{where}.model",
                f"no API key for {agent.model}: set {env} in the environment or a .env file, "
                f"or name another variable with api_key_env",
            )


def check_batch(name: str, agent: AgentSpec, default: bool = False) -> None:
    """``batch = true`` (the agent's, else ``default``: the sweep's) only where a Batch
    API answers: OpenAI, OpenAI-compatible servers (``api_base``) and Anthropic."""
    where = f"agents.{name}.batch"
    if agent.batch and agent.kind != "llm":
        raise SpecError(where, f"only a model agent (provider/model) can use a Batch API; "
                               f"{name!r} is a {agent.kind} agent: remove batch")
    if agent.kind != "llm" or not (agent.batch if agent.batch is not None else default):
        return
    model = agent.model or ""
    provider = model.split("/", 1)[0]
    if provider == "anthropic":
        if importlib.util.find_spec("anthropic") is None:
            raise SpecError(where, "Anthropic's Message Batches need the anthropic package: "
                                   "pip install 'coop-tui[anthropic]'")
        if agent.constrained:
            raise SpecError(where, "Anthropic's Message Batches cannot constrain answers; "
                                   "remove constrained or batch")
        return
    if agent.api_base is None and provider != "openai":
        raise SpecError(where, f"no Batch API for provider {provider!r}: batch works with "
                               "openai/..., anthropic/..., and OpenAI-compatible servers given "
                               "by api_base that offer /v1/files and /v1/batches")


def _axis(value: Any, list_typed: bool) -> bool:
    if not isinstance(value, list):
        return False
    if list_typed:
        return bool(value) and all(isinstance(v, list) for v in value)
    return True


def _expand(
    i: int, exp: ExperimentSpec, sweep: SweepSpec, base: Path | None, budget: list[int] | None = None
) -> list[Cell]:
    """One mechanism's grid points. ``budget`` (shared across the sweep) holds how many grid
    points may still be added; each seating list is counted before it is built.

    The grid is the product of the experiment's value axes (game, scale, bonus, answer,
    condition, similarity source, wording, talk), then of its mechanism-parameter axes,
    then of its seatings; every value is checked where it first meets the others."""
    where = f"experiments[{i}]"
    mech_cls = _experiment_mechanism(exp, where)
    _check_roster(exp, sweep, where)
    axes, fixed = _parameter_axes(exp, mech_cls, where)
    games, scales, bonuses, answers, conditions, talks = _value_axes(exp, mech_cls, where)
    answer_rule = exp.answers or sweep.answers
    shared: dict[str, Any] = {  # the same in every cell of the experiment
        "experiment": i, "mechanism": exp.mechanism,
        "matchup": _matchup_label(exp, mech_cls.pooled), "samples": exp.samples or sweep.samples,
        "randomize_labels": exp.randomize_labels,
        "max_attempts": _max_attempts(exp, sweep, answer_rule),
        "on_invalid": exp.on_invalid or sweep.on_invalid,
        "replicates": exp.replicates or sweep.replicates, "answers": answer_rule,
        "prompt_protocol": exp.prompt_protocol, "style_message": exp.style_message,
        "source_run": exp.source_run,
    }
    cells: list[Cell] = []
    sources = exp.similarity_source if isinstance(exp.similarity_source, list) else [exp.similarity_source]
    wordings = _wordings(where, exp, base)
    for game_ref, scale, bonus, answer, condition, source, wording, talk in itertools.product(
        games, scales, bonuses, answers, conditions, sources, wordings, talks
    ):
        game, gp = _point_game(exp, where, game_ref, condition, scale, bonus, talk, base)
        wording_source = (None if wording != "source" else _serving_source(
            where, exp.mechanism, exp.prompt_protocol, game, sweep.sources))
        point = {
            **shared, "game": str(game_ref), "game_params": gp, "answer": answer,
            "condition": condition, "source": source, "wording": wording,
            "wording_source": wording_source, "talk": talk,
            "talk_turns": exp.talk_turns if talk != "none" else 1,
            "talk_chars": exp.talk_chars if talk != "none" else DEFAULT_TALK_CHARS,
        }
        for combo in itertools.product(*axes.values()) if axes else [()]:
            params = dict(fixed, **dict(zip(axes, combo, strict=True)))
            cells += _seated_cells(mech_cls, params, exp, sweep, where, game, point, budget)
    _check_distinct(cells, where)
    return cells


def _experiment_mechanism(exp: ExperimentSpec, where: str) -> Any:
    """The experiment's mechanism class; every extra field must be one of its parameters."""
    try:
        mech_cls = mechanism_class(exp.mechanism)
    except MechanismError as exc:
        raise SpecError(f"{where}.mechanism", str(exc)) from None
    param_fields = mech_cls.Params.model_fields
    for key in exp.model_extra or {}:
        if key not in param_fields:
            known = ", ".join(param_fields) or "none"
            raise SpecError(
                f"{where}.{key}",
                f"is not a parameter of mechanism {exp.mechanism!r} (its parameters: {known})",
            )
    return mech_cls


def _check_roster(exp: ExperimentSpec, sweep: SweepSpec, where: str) -> None:
    """Every agent the experiment seats (roster, explicit matchups, opponents, filler) is
    defined under [agents]; opponents only with matchup "versus"."""
    for name in exp.agents:
        if name not in sweep.agents:
            raise SpecError(
                f"{where}.agents",
                f"unknown agent {name!r}; define it under [agents.{name}] (defined: {', '.join(sweep.agents)})",
            )
    if isinstance(exp.matchup, list):
        for seats in exp.matchup:
            for name in seats:
                if name not in sweep.agents:
                    raise SpecError(f"{where}.matchup", f"unknown agent {name!r} in an explicit matchup")
    elif not exp.agents:
        raise SpecError(f"{where}.agents", "is empty; list the agents that play")
    for field_name, names in (("opponents", exp.opponents), ("filler", [exp.filler] if exp.filler else [])):
        for name in names:
            if name not in sweep.agents:
                raise SpecError(
                    f"{where}.{field_name}",
                    f"unknown agent {name!r}; define it under [agents.{name}]",
                )
    if exp.opponents and exp.matchup != "versus":
        raise SpecError(f"{where}.opponents", 'is used only with matchup = "versus"; remove it')


def _parameter_axes(exp: ExperimentSpec, mech_cls: Any, where: str) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The mechanism parameters the experiment lists (grid axes) and those it fixes."""
    param_fields = mech_cls.Params.model_fields
    axes: dict[str, list[Any]] = {}
    fixed: dict[str, Any] = {}
    for key, value in (exp.model_extra or {}).items():
        list_typed = "list" in str(param_fields[key].annotation)
        if _axis(value, list_typed):
            if not value:
                raise SpecError(f"{where}.{key}", "is an empty list; give at least one value")
            axes[key] = value
        else:
            fixed[key] = value
    return axes, fixed


def _value_axes(exp: ExperimentSpec, mech_cls: Any, where: str) -> tuple[list[Any], ...]:
    """The experiment's games, scales, bonuses, answers, conditions and talk settings, each
    a list (a single value is a list of one); none may be empty."""
    games = exp.game if isinstance(exp.game, list) else [exp.game]
    scales = exp.scale if isinstance(exp.scale, list) else [exp.scale]
    bonuses = exp.bonus if isinstance(exp.bonus, list) else [exp.bonus]
    answers = exp.answer if isinstance(exp.answer, list) else [exp.answer]
    conditions = exp.condition if isinstance(exp.condition, list) else [exp.condition]
    talks = _talk_settings(exp, mech_cls, where)
    for name_, values in (("game", games), ("scale", scales), ("bonus", bonuses),
                          ("answer", answers), ("condition", conditions), ("talk", talks),
                          ("matchup", exp.matchup if isinstance(exp.matchup, list) else [1])):
        if not values:
            raise SpecError(f"{where}.{name_}", "is an empty list; give at least one value")
    return games, scales, bonuses, answers, conditions, talks


def _point_game(exp: ExperimentSpec, where: str, game_ref: Any, condition: str, scale: Any,
                bonus: Any, talk: str, base: Path | None) -> tuple[Any, dict[str, Any]]:
    """One grid point's game, loaded with its scale and bonus, and its stored parameters."""
    scale = _condition_scale(where, condition, scale)
    game = _load_game(f"{where}.game", game_ref, exp.game_params, scale, bonus, base)
    if talk != "none" and isinstance(game, ProtocolGame):
        raise SpecError(f"{where}.talk", f"{game.key} is played move by move and has no talk "
                        'phase; remove talk or set talk = "none"')
    gp = dict(exp.game_params)
    if scale is not None:
        gp["scale"] = scale
    if bonus is not None:
        gp["bonus"] = bonus
    return game, gp


def _seated_cells(mech_cls: Any, params: dict[str, Any], exp: ExperimentSpec, sweep: SweepSpec,
                  where: str, game: Any, point: dict[str, Any], budget: list[int] | None) -> list[Cell]:
    """The cells of one parameter set at one grid point: one per seating, each checked
    against the mechanism and the game."""
    source = point["source"]
    try:
        validated = mech_cls.Params.model_validate(_with_source(params, source, mech_cls))
    except ValidationError as exc:
        raise spec_error_from(exc, where) from None
    mech = mech_cls(validated)
    roster = len(exp.agents) if exp.matchup == "cross" else None
    n_seats = mech.seat_count(game, roster)
    if budget is not None:  # count first: a huge grid fails here, not in memory
        _spend_grid(budget, _seating_count(exp, n_seats, pooled=mech_cls.pooled), where)
    seat_lists = _seatings(exp, n_seats, where, pooled=mech_cls.pooled)
    try:  # parameters keyed by agent names must cover every seating
        mech.check_seatings(seat_lists, sweep.agents)
    except ValueError as exc:
        raise SpecError(f"{where}.{getattr(exc, 'field', 'matchup')}", str(exc)) from None
    cells = []
    for seats in seat_lists:
        try:
            mech.check_game(game, len(seats))
        except ValueError as exc:
            # a move-by-move game under another mechanism: the mechanism is wrong
            bad = "mechanism" if isinstance(game, ProtocolGame) else "matchup"
            bad = getattr(exc, "field", bad)  # a parameter that does not fit the seats
            raise SpecError(f"{where}.{bad}", str(exc)) from None
        _check_strategies_fit(sweep, seats, game)
        cells.append(Cell(
            **point, seats=tuple(seats),
            mechanism_params=_without_standin(validated.model_dump(mode="json"), params, source),
        ))
    return cells


def _check_distinct(cells: list[Cell], where: str) -> None:
    seen: set[str] = set()
    for cell in cells:
        key = cell.match_key(0)
        if key in seen:
            raise SpecError(
                where,
                "two grid points are identical (a value or a seating is listed twice); "
                "list each once and use samples for repeats",
            )
        seen.add(key)


def _talk_settings(exp: ExperimentSpec, mech_cls: Any, where: str) -> list[str]:
    """The experiment's talk values (a grid axis), refused where nothing could ask them:
    a mechanism without the talk step, or a paper's protocol that defines no talk (the
    papers had none, so a reproduction must not grow one silently)."""
    talks = list(exp.talk) if isinstance(exp.talk, list) else [exp.talk]
    if len(set(talks)) != len(talks):
        raise SpecError(f"{where}.talk", "lists a value twice; list each once")
    if all(t == "none" for t in talks):
        return talks
    if not getattr(mech_cls, "talks", False):
        raise SpecError(f"{where}.talk", f"mechanism {mech_cls.key!r} has no talk phase; "
                        'use mechanism "none" or "repetition", or remove talk')
    protocol = get_protocol(exp.prompt_protocol)
    if not protocol.talk_allowed():
        raise SpecError(f"{where}.talk", f"prompt_protocol {protocol.name!r} defines no talk "
                        "phase (its paper had none); remove talk, or use prompt_protocol = "
                        '"coop_tui"')
    return talks


def _with_source(params: dict[str, Any], source: str | None, mech_cls: Any) -> dict[str, Any]:
    """A source-fed similarity experiment names no score: validate it with a stand-in
    (the real per-pair scores replace it when the match runs)."""
    if source is None or "similarity" in params or "similarity_scores" in params:
        return params
    return {**params, "similarity": 50.0}


def _without_standin(dumped: dict[str, Any], params: dict[str, Any], source: str | None) -> dict[str, Any]:
    if source is not None and "similarity" not in params:
        dumped["similarity"] = None
    return dumped


def _expand_experiment(
    i: int, exp: ExperimentSpec, sweep: SweepSpec, base: Path | None, budget: list[int]
) -> list[Cell]:
    """An experiment's grid points. A list of mechanisms is one more axis: each mechanism
    expands with the parameters it takes (one that no listed mechanism takes is an error),
    and its cells carry the mechanism in their condition."""


    if not isinstance(exp.mechanism, list):
        return _expand(i, exp, sweep, base, budget)
    where = f"experiments[{i}]"
    if not exp.mechanism:
        raise SpecError(f"{where}.mechanism", "is an empty list; give at least one value")
    if len(set(exp.mechanism)) != len(exp.mechanism):
        raise SpecError(f"{where}.mechanism", "lists a mechanism twice; list each once")
    fields: dict[str, set[str]] = {}
    for name in exp.mechanism:
        try:
            fields[name] = set(mechanism_class(name).Params.model_fields)
        except MechanismError as exc:
            raise SpecError(f"{where}.mechanism", str(exc)) from None
    extras = dict(exp.model_extra or {})
    for key in extras:
        if not any(key in f for f in fields.values()):
            known = ", ".join(sorted(set().union(*fields.values()))) or "none"
            raise SpecError(
                f"{where}.{key}",
                f"is not a parameter of any of the mechanisms {', '.join(exp.mechanism)} "
                f"(their parameters: {known})",
            )
    cells: list[Cell] = []
    base_fields = exp.model_dump(exclude=set(extras))
    for name in exp.mechanism:
        own = {k: v for k, v in extras.items() if k in fields[name]}
        single = ExperimentSpec.model_validate({**base_fields, "mechanism": name, **own})
        cells.extend(replace(c, mechanism_axis=True) for c in _expand(i, single, sweep, base, budget))
    return cells


def _seating_count(exp: ExperimentSpec, n_players: int, *, pooled: bool = False) -> int:
    """How many seatings :func:`_seatings` would list, without listing them."""
    if isinstance(exp.matchup, list):
        return len(exp.matchup)
    if exp.matchup == "versus":
        return len(exp.agents) * len(exp.opponents or [])
    if exp.matchup == "pairs":
        return len(exp.agents) * (len(exp.agents) - 1) // 2
    if exp.matchup == "self" or pooled:
        return len(exp.agents) if exp.matchup == "self" else 1
    return len(exp.agents) ** n_players


def _spend_grid(budget: list[int], points: int, where: str) -> None:
    if points > budget[0]:
        raise SpecError(
            where,
            f"the grid passes the limit of {MAX_GRID_POINTS:,} points per sweep (values x "
            f"seatings; one parameter set alone seats {points:,}); split it into several "
            "sweeps or list fewer values or agents (use samples for repeats)",
        )
    budget[0] -= points


STRICT_ATTEMPTS = 6
"""CoopEval asks once and re-asks up to five times (six attempts) before giving up."""


def _max_attempts(exp: ExperimentSpec, sweep: SweepSpec, answers: str) -> int:
    """An explicit max_attempts wins; strict answers default to CoopEval's six attempts."""
    if exp.max_attempts is not None:
        return exp.max_attempts
    if answers == "strict" and "max_attempts" not in sweep.model_fields_set:
        return STRICT_ATTEMPTS
    return sweep.max_attempts


def _condition_scale(where: str, condition: str, scale: Any) -> Any:
    """A payoff-scaling condition (payoff_10x) sets the game's scale; both at once is an error."""
    factor = get_condition(condition).scale
    if factor is None:
        return scale
    if scale is not None:
        raise SpecError(
            f"{where}.condition",
            f"condition {condition!r} already scales the payoffs by {factor:g}; "
            f"remove scale or use the baseline condition",
        )
    return factor


def _check_strategies_fit(sweep: SweepSpec, seats: Sequence[str], game: Any) -> None:
    """A strategy that cannot play this game fails here, not in every match of the run."""
    for seat, name in enumerate(seats):
        agent = sweep.agents[name]
        if not agent.strategy or seat >= game.n_players:
            continue

        try:
            strategy = get_strategy(agent.strategy, **agent.params)
            if getattr(game, "protocol", None) and not hasattr(strategy, "numeric_answer"):
                raise ValueError(  # the strategic personalities paper's move-by-move games ask for numbers
                    "it answers only matrix games; use fixed_number, threshold_responder, "
                    "truthful_bidder, trust_proportional, random, mirror, anti_mirror or one "
                    "of the strategic personalities paper's responders (coop-tui list strategies)")
            strategy.distribution(SeatView(game=game, seat=seat, round=1))
        except Exception as exc:  # noqa: BLE001 - any failure means it cannot play
            raise SpecError(
                f"agents.{name}", f"strategy {agent.strategy} cannot play {game.key}: {exc}"
            ) from None


def _matchup_label(exp: ExperimentSpec, pooled: bool) -> str:
    """Stored per match. A cross-play population (Reputation) is labelled "population":
    it is one mixed population, not a cross-play tournament with a metagame."""
    if not isinstance(exp.matchup, str):
        return "explicit"
    return "population" if pooled and exp.matchup == "cross" else exp.matchup


def _seatings(
    exp: ExperimentSpec, n_players: int, where: str, *, pooled: bool = False
) -> list[tuple[str, ...]]:
    """Seat assignments; ``n_players`` is the mechanism's seat count (a population for
    re-matching mechanisms, where cross-play is one population filled from the roster
    in turn rather than every ordered assignment)."""
    if isinstance(exp.matchup, list):
        for seats in exp.matchup:
            if len(seats) != n_players:
                raise SpecError(
                    f"{where}.matchup",
                    f"an explicit matchup has {len(seats)} agents, the game needs {n_players}",
                )
        return [tuple(s) for s in exp.matchup]
    if exp.matchup in ("pairs", "versus") or (exp.matchup == "self" and exp.filler):
        return _designed_seatings(exp, n_players, where, pooled=pooled)
    if exp.matchup == "self":
        return [tuple([a] * n_players) for a in exp.agents]
    if pooled:
        return [tuple(exp.agents[i % len(exp.agents)] for i in range(n_players))]
    return [tuple(p) for p in itertools.product(exp.agents, repeat=n_players)]


def _designed_seatings(
    exp: ExperimentSpec, n_players: int, where: str, *, pooled: bool
) -> list[tuple[str, ...]]:
    """Seatings by design. ``versus``: each agent in seat 1 against each opponent, which
    fills every other seat (the strategic personalities study copies the strategy into
    all of them). ``pairs``: every unordered pair of distinct agents once (C(n, 2)), the
    first listed in seat 1.
    ``self`` with a filler: the agent in seats 1 and 2. Seats beyond the first two are
    the ``filler`` agent's (strategic personalities puts a random strategy there)."""
    if pooled:
        raise SpecError(f"{where}.matchup", f"matchup {exp.matchup!r} needs a mechanism with "
                        f"fixed seats; a re-matching population takes self or cross")
    if exp.matchup == "versus":
        if not exp.opponents:
            raise SpecError(f"{where}.opponents", 'matchup "versus" needs opponents: list the '
                            "agents (usually strategies) each agent plays against")
        return [(a,) + (o,) * (n_players - 1) for a in exp.agents for o in exp.opponents]
    if n_players > 2 and exp.filler is None:
        raise SpecError(f"{where}.filler", f"the game has {n_players} players and matchup "
                        f"{exp.matchup!r} fills two seats; name the agent for the others "
                        f"(strategic personalities uses a random strategy)")
    extra = (exp.filler,) * (n_players - 2) if n_players > 2 else ()
    if exp.matchup == "self":
        return [((a, a) + extra)[:n_players] for a in exp.agents]
    if len(exp.agents) < 2:
        raise SpecError(f"{where}.agents", 'matchup "pairs" needs at least two agents')
    return [(a, b) + extra for a, b in itertools.combinations(exp.agents, 2)]


def _load_game(where: str, ref: str, params: dict[str, Any], scale: Any, bonus: Any, base: Path | None):
    extra = dict(params)
    if scale is not None:
        extra["scale"] = scale
    if bonus is not None:
        extra["bonus"] = bonus
    if base is not None and (ref.endswith((".toml", ".yaml", ".yml"))):
        ref = str(_resolve(ref, base))
    try:
        game = load_game(ref, **extra)
    except GameError as exc:
        raise SpecError(where, str(exc)) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise SpecError(f"{where}_params", str(exc)) from None
    _check_payoff_range(where, game)
    return game


def _check_payoff_range(where: str, game: Any) -> None:
    """Scaled or bonus payoffs must stay finite and summable (strict JSON reports)."""
    payoffs = np.asarray(game.payoffs, dtype=float)
    if not np.isfinite(payoffs).all() or np.abs(payoffs).max(initial=0.0) > MAX_PAYOFF:
        field = where.rsplit(".", 1)[0] + ".scale"
        raise SpecError(
            field,
            f"makes payoffs of {game.key} non-finite or larger than ±{MAX_PAYOFF:g}; "
            "use a smaller scale or bonus",
        )


def cell_game(cell: Cell, base: Path | None = None):
    ref = cell.game
    if base is not None and ref.endswith((".toml", ".yaml", ".yml")):
        ref = str(_resolve(ref, base))
    return load_game(ref, **cell.game_params)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)
