"""What a sweep file may say: the models of its agents, experiments and settings, and
the expanded grid (``Cell``, ``Sweep``) that runs play.

Each field is checked here on its own (types, ranges, names, URLs, known conditions).
What needs the registries of games, mechanisms and strategies, and the expansion of
experiments into cells, is :mod:`coop_tui.spec`'s; so is loading a file. Every name here
is importable from :mod:`coop_tui.spec` too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from coop_tui import redact
from coop_tui.conditions import get_condition
from coop_tui.decisions import DEFAULT_MAX_ANSWER_CHARS
from coop_tui.engine import NOT_IN_CONTENT_KEY
from coop_tui.hashing import stable_hash
from coop_tui.protocols import DEFAULT_KEY, protocols, storage_key
from coop_tui.protocols import names as protocol_names
from coop_tui.talk import DEFAULT_TALK_CHARS
from coop_tui.terminal import name_problem

# Environment variables litellm reads for each provider prefix; used only to give a
# clear "missing API key" error before anything runs.
PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "xai": "XAI_API_KEY",
}
KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"}

# Bounds checked before anything runs: a typo such as ``samples = 1000000000`` must be
# an error naming the field, not a run that fills memory or the disk.
MAX_SAMPLES = 100_000
"""Repeats of one grid point."""
DEFAULT_MAX_DECISIONS = 2_000_000
"""Default of the sweep field ``max_decisions``."""
DEFAULT_MAX_PROMPT_TOKENS = 32_000
"""Default of the sweep field ``max_prompt_tokens`` (estimated from the rendered prompt)."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class AgentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="provider/model, or local/smollm2")
    strategy: str | None = None
    agent: str | None = Field(
        default=None,
        description='a class with decide(request): "package.module:Class", or a plugin '
        "agent's name (coop-tui list agents)",
    )
    human: bool = False
    params: dict[str, Any] = Field(
        default_factory=dict, description="strategy parameters, or an agent class's constructor's"
    )
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    style: Literal["cot", "direct", "plain"] = "cot"
    api_base: str | list[str] | None = Field(
        default=None,
        description="an OpenAI-compatible server URL, or a list of servers for one model",
    )
    api_key_env: str | None = None
    api_key: SecretStr | None = None
    max_concurrency: int | None = Field(
        default=None, gt=0, description="requests at once, per endpoint when api_base is a list"
    )
    constrained: Literal["grammar", "json_schema"] | None = Field(
        default=None, description="constrain answers with the server's grammar or JSON schema"
    )
    timeout: float = Field(
        default=120.0, gt=0, description="seconds without data before a request is retried"
    )
    deadline: float | None = Field(
        default=None, gt=0,
        description="seconds one request may take in all (default: 10 x timeout)",
    )
    max_answer_chars: int = Field(
        default=DEFAULT_MAX_ANSWER_CHARS, gt=0,
        description="characters of one answer (text and reasoning) before it is refused",
    )
    threads: int | None = Field(default=None, gt=0, description="embedded model CPU threads")
    prefix_cache: bool = Field(
        default=True,
        description="embedded model: start a seeded reply from a saved state of its prompt's "
        "start (the same answer, faster); false evaluates every prompt from scratch",
    )
    seed: int | None = None
    batch: bool | None = Field(
        default=None,
        description="decisions through the provider's Batch API at half price (OpenAI, "
        "OpenAI-compatible servers, Anthropic); default: the sweep's batch",
    )
    batch_poll: float = Field(
        default=5.0, gt=0, le=3600,
        description="seconds before a batch is first polled (the interval then doubles, up to 5 minutes)",
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        # The value is never echoed: people paste the key itself here by mistake.
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "is not an environment variable name (letters, digits and _); write the name "
                "of the variable that holds the key, e.g. MY_API_KEY, never the key itself"
            )
        return value

    @field_validator("api_base")
    @classmethod
    def _endpoints(cls, value: Any) -> Any:
        for url in value if isinstance(value, list) else [value]:
            if url is None:
                continue
            problem = url_problem(url)
            if problem:  # the URL itself is never echoed: it may carry a password
                raise ValueError(f"{problem}; write it like http://host:8000/v1")
            redact.register_url(url)
        if isinstance(value, list):
            if not value:
                raise ValueError("api_base lists no server; give one URL or a list of URLs")
            if len(set(value)) != len(value):
                raise ValueError("api_base lists the same server twice")
            if len(value) == 1:
                return value[0]
        return value

    @property
    def kind(self) -> str:
        if self.human:
            return "human"
        if self.agent:
            return "custom"
        if self.strategy:
            return "strategy"
        if self.model and (self.model.startswith("local/") or self.model.startswith("local:")):
            return "local"
        return "llm"

    @property
    def provider(self) -> str:
        if self.kind != "llm" or not self.model:
            return self.kind
        return self.model.split("/", 1)[0] if "/" in self.model else "openai"

    def public(self) -> dict[str, Any]:
        """The spec without secrets: what is stored and hashed."""
        data = self.model_dump(exclude={"api_key"}, exclude_none=True, exclude_defaults=True)
        if "api_base" in data:  # the agent connects with the credentials; nothing else sees them
            data["api_base"] = redact.strip_userinfo(data["api_base"])
        if self.kind in ("llm", "local", "custom"):
            data.setdefault("style", self.style)
        return data

    def resolve_key(self) -> str | None:
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
        else:
            env = self.api_key_env or PROVIDER_KEY_ENV.get(self.provider)
            key = os.environ.get(env) if env else None
        redact.register_secret(key)
        return key


def batched(agent: AgentSpec, sweep: SweepSpec) -> bool:
    """True when the agent's decisions go through its provider's Batch API: its own
    ``batch``, else the sweep's (model agents only)."""
    own = agent.batch if agent.batch is not None else sweep.batch
    return bool(own) and agent.kind == "llm"


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be an ``api_base`` (None when it can), without quoting it."""

    if not isinstance(url, str):
        return "must be a URL string"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        if "port" in str(exc).lower():
            return "is not a valid URL: its port is not a number from 1 to 65535"
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "is not an http:// or https:// URL"
    if not parts.hostname:
        return "has no host"
    if port is not None and not 1 <= port <= 65535:
        return "is not a valid URL: its port is not a number from 1 to 65535"
    return None


AnswerMode = Literal["mixed", "choice"]
TalkSetting = Literal["none", "public", "private"]
LABEL_MODES = ("decision", "trial")


class ExperimentSpec(BaseModel):
    """Fields every experiment has; mechanism parameters ride along as extras."""

    model_config = ConfigDict(extra="allow")

    game: str | list[str]
    mechanism: str | list[str] = "none"
    matchup: Literal["self", "cross", "pairs", "versus"] | list[list[str]] = "self"
    agents: list[str] = Field(default_factory=list)
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES)
    scale: float | list[float] | None = None
    bonus: float | list[float] | None = None
    game_params: dict[str, Any] = Field(default_factory=dict)
    randomize_labels: bool | str = False
    max_attempts: int | None = Field(default=None, ge=1, le=20)
    on_invalid: Literal["abort", "uniform"] | None = None
    name: str | None = None
    replicates: int | None = Field(
        default=None, ge=1, le=1000,
        description="independent copies of the whole tournament (fresh designs and samples)",
    )
    answers: Literal["strict", "lenient"] | None = Field(
        default=None,
        description="strict: CoopEval's rule (integers summing to exactly 100, else re-ask)",
    )
    answer: AnswerMode | list[AnswerMode] = Field(
        default="mixed",
        description='play answers: "mixed" (percentages per action) or "choice" (one action)',
    )
    prompt_protocol: str = Field(
        default=DEFAULT_KEY,
        description="how prompts are sent and answers asked for, one paper's way: "
        + "; ".join(f'"{p.name}": {p.summary}' for p in protocols())
        + " (coop_tui.protocols; an older name is accepted and stored as before)",
    )
    style_message: Literal["system", "user", "user_end"] = Field(
        default="system",
        description='"system" (CoopEval\'s current code): the reasoning instruction of cot / '
        "direct agents is sent as a system message and the user message is the same for both; "
        '"user_end" (the published CoopEval study): that instruction appended at the end of '
        'the user message (and once after the text of a re-ask); "user": everything in one '
        "user message, the reasoning instruction among the answer's",
    )
    wording: str | list[str] = Field(
        default="ours",
        description='whose words the prompts are in: "ours" (coop-tui\'s templates), "source" '
        "(the paper's own code, from the clone named under [sources]) or the path of a folder "
        "of your own templates; a list is a grid axis (see docs/wording.md)",
    )
    opponents: list[str] = Field(
        default_factory=list,
        description='matchup "versus": every agent plays each of these in the other seats',
    )
    filler: str | None = Field(
        default=None,
        description='agent in the seats beyond the first two ("self" / "pairs" in n-player games)',
    )
    condition: str | list[str] = Field(
        default="baseline", description="the strategic personalities paper's named prompt conditions (a grid axis)"
    )
    similarity_source: str | list[str] | None = Field(
        default=None,
        description='the similarity signals paper: play under computed scores, "exogenous:<benchmark>" or '
        '"endogenous:<benchmark>:<view>" (a grid axis); see coop_tui.grounded.stages',
    )
    source_run: str | None = Field(
        default=None, description="read benchmark answers / judgements from this stored run"
    )
    talk: TalkSetting | list[TalkSetting] = Field(
        default="none",
        description='messages before each round\'s move: "public" (every player reads them), '
        '"private" (the sender names one recipient) or "none" (a grid axis; docs/talk.md)',
    )
    talk_turns: int = Field(default=1, ge=1, le=20,
                            description="messages each seat sends before each round's move")
    talk_chars: int = Field(default=DEFAULT_TALK_CHARS, ge=1, le=20_000,
                            description="a talk message's bound in characters (longer ones are cut)")

    @field_validator("name")
    @classmethod
    def _printable_name(cls, name: str | None) -> str | None:
        problem = None if name is None else name_problem(name)
        if problem:
            raise ValueError(f"the experiment name {problem}")
        return name

    @field_validator("randomize_labels", mode="before")
    @classmethod
    def _label_mode(cls, v: Any) -> bool | str:
        if isinstance(v, bool) or v in LABEL_MODES:
            return v
        raise ValueError(
            f'randomize_labels must be true / "decision" (A-labels shuffled per decision), '
            f'"trial" (the strategic personalities paper: letters per match, order per round) or false, not {v!r}'
        )

    @field_validator("prompt_protocol", mode="before")
    @classmethod
    def _protocol_key(cls, v: Any) -> str:
        """Any name of a protocol, stored as its key: the sweep's hash, its match keys and
        its conditions stay what they were under the protocol's older name."""
        if not isinstance(v, str):
            raise ValueError(f"prompt_protocol is a protocol's name such as \"coop_tui\", not {v!r}")
        try:
            return storage_key(v)
        except KeyError:
            raise ValueError(f"unknown prompt_protocol {v!r}; use one of "
                             + ", ".join(f'"{n}"' for n in protocol_names())) from None

    @field_validator("condition", mode="before")
    @classmethod
    def _known_conditions(cls, v: Any) -> Any:
        for name in v if isinstance(v, list) else [v]:
            if not isinstance(name, str):
                raise ValueError(f"a condition is a name such as \"baseline\", not {name!r}")
            get_condition(name)
        return v


class MoranSpec(BaseModel):
    """``[moran]``: how the report's Moran section (coop_tui.analysis.moran) runs; an
    analysis setting, so it is not part of the sweep's hash."""

    model_config = ConfigDict(extra="forbid")

    population: int = Field(default=10, ge=2, le=100_000)
    selection: float = Field(default=1.0, gt=0, le=1000)
    fitness: Literal["linear", "exponential"] = "linear"


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    seed: int = Field(default=0, ge=0, lt=2**63)
    concurrency: int = Field(default=8, ge=1, le=1024)
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    max_attempts: int = Field(default=3, ge=1, le=20)
    on_invalid: Literal["abort", "uniform"] = "abort"
    replicates: int = Field(default=1, ge=1, le=1000)
    answers: Literal["strict", "lenient"] = "lenient"
    devrank: Literal["every_optimum", "vertex", "coopeval", "published"] | None = Field(
        default=None,
        description="how the report obtains DevRank's deviation ratings (report --devrank "
        "overrides it); none: every_optimum",
    )
    moran: MoranSpec | None = Field(
        default=None,
        description="the report's Moran section: population size, selection intensity and "
        "fitness map (defaults 10, 1.0, linear)",
    )
    budget_usd: float | None = Field(default=None, gt=0)
    batch: bool = Field(
        default=False,
        description="every model agent's decisions through its provider's Batch API (an "
        "agent's own batch wins)",
    )
    batch_gather: float = Field(
        default=1.0, gt=0, le=600,
        description="seconds without a new request after which a batch is sent while some "
        "match is still busy elsewhere (a slow server, a person); when every playing match "
        "waits on the Batch API the batch goes at once",
    )
    provider_limits: dict[str, int] = Field(default_factory=dict)
    templates: str | None = None
    reuse: bool = Field(default=True, description="reuse identical finished decisions of earlier runs")
    max_decisions: int = Field(default=DEFAULT_MAX_DECISIONS, ge=1, le=10**12,
                               description="refuse sweeps estimated to make more decisions")
    max_prompt_tokens: int = Field(default=DEFAULT_MAX_PROMPT_TOKENS, ge=1, le=10**8,
                                   description="refuse prompts estimated to be longer")
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="the user's clone of each paper's public code, by source name (coopeval, "
        'strategic_personalities, superadditive), read where an experiment sets wording = "source"',
    )
    agents: dict[str, AgentSpec]
    experiments: list[ExperimentSpec] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _printable_name(cls, name: str) -> str:
        problem = name_problem(name)
        if problem:
            raise ValueError(f"the sweep name {problem}")
        return name

    @field_validator("agents")
    @classmethod
    def _one_kind(cls, agents: dict[str, AgentSpec]) -> dict[str, AgentSpec]:
        for name, a in agents.items():
            problem = name_problem(name)
            if problem:
                raise ValueError(f"an agent name {problem}")
            kinds = [bool(a.model), bool(a.strategy), bool(a.agent), a.human]
            if sum(kinds) != 1:
                raise ValueError(
                    f"agent {name!r} must set exactly one of model, strategy, agent or human"
                )
        return agents


# ----------------------------------------------------------------- expanded grid
@dataclass(frozen=True)
class Cell:
    """One point of an experiment's grid: game, mechanism parameters, seats."""

    experiment: int
    game: str
    game_params: dict[str, Any]
    mechanism: str
    mechanism_params: dict[str, Any]
    seats: tuple[str, ...]
    matchup: str
    samples: int
    randomize_labels: bool | str
    max_attempts: int
    on_invalid: str
    mechanism_axis: bool = False
    """The experiment lists several mechanisms: the mechanism is part of the condition."""
    answer: str = "mixed"
    condition: str = "baseline"
    prompt_protocol: str = DEFAULT_KEY
    """The stored key of the protocol prompts follow (engine.DecisionPolicy.prompt_protocol)."""
    style_message: str = "system"
    """Where a cot / direct agent's reasoning instruction goes (engine.DecisionPolicy.style_message)."""
    talk: str = "none"
    """Talk before each round's move (engine.DecisionPolicy.talk): public, private or none."""
    talk_turns: int = 1
    talk_chars: int = DEFAULT_TALK_CHARS

    replicates: int = 1
    """Independent copies of the tournament this cell belongs to."""
    answers: str = "lenient"
    """strict (CoopEval's answer rule) or lenient (repairs recorded)."""
    source: str | None = None
    """the similarity signals paper: the similarity source whose matrix this match is told (grounded.stages)."""
    source_run: str | None = None
    """The stored run the source is read from (None: this run)."""
    wording: str = "ours"
    """Whose words: "ours", "source" or a folder of the user's templates (as written)."""
    wording_source: str | None = None
    """With wording "source": the name of the paper source whose code builds the messages."""

    # A cell's matches are numbered by one *slot* index, replicate-major:
    # slot = replicate * samples + sample. With one replicate the slot is the sample,
    # so match keys (and resumable runs) stay what they were before replicates existed.
    def replicate_of(self, slot: int) -> int:
        return slot // self.samples

    def sample_of(self, slot: int) -> int:
        return slot % self.samples

    @property
    def slots(self) -> int:
        return self.samples * self.replicates

    def match_key(self, slot: int) -> str:
        data: dict[str, Any] = {
            "e": self.experiment,
            "g": self.game,
            "gp": self.game_params,
            "m": self.mechanism,
            "mp": self.mechanism_params,
            "s": self.seats,
            "n": self.sample_of(slot),
        }
        if self.replicate_of(slot):
            data["r"] = self.replicate_of(slot)
        return stable_hash(self._with_protocol(data))[:20]

    def tournament_key(self, slot: int) -> str:
        """The tournament a match belongs to: its experiment's grid point without the
        seating and sample, per replicate. Designs shared "per tournament" hang off it."""
        data: dict[str, Any] = {
            "e": self.experiment,
            "g": self.game,
            "gp": self.game_params,
            "m": self.mechanism,
            "mp": self.mechanism_params,
            "r": self.replicate_of(slot),
        }
        return stable_hash(self._with_protocol(data))[:20]

    def _with_protocol(self, data: dict[str, Any]) -> dict[str, Any]:
        # protocol fields join a key only when set, so existing runs keep their keys
        if self.answer != "mixed":
            data["a"] = self.answer
        if self.condition != "baseline":
            data["c"] = self.condition
        if self.prompt_protocol != DEFAULT_KEY:
            data["pp"] = self.prompt_protocol
        if self.style_message != "system":
            data["sm"] = self.style_message
        if self.source is not None:
            data["src"] = self.source
        if self.source_run is not None:
            data["srun"] = self.source_run
        if self.wording != "ours":
            data["w"] = self.wording
        if self.talk != "none":
            data["tk"] = [self.talk, self.talk_turns, self.talk_chars]
        return data


@dataclass
class Sweep:
    spec: SweepSpec
    source: Path | None
    cells: list[Cell] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)
    """{path: sha256} of every other file the sweep names (see :mod:`coop_tui.inputs`)."""
    wording_sources: dict[str, Any] = field(default_factory=dict)
    """The paper sources the cells with wording "source" read, loaded and checked when the
    sweep was built: {name: :class:`coop_tui.sources.LoadedSource`}."""
    warnings: list[str] = field(default_factory=list)
    """What the user should know before it runs but need not stop it (a source at another
    commit than the tested one)."""
    stages: list[int] = field(default_factory=list)
    """Each experiment's stage, aligned with ``spec.experiments``: stage 0 plays first, and
    a later stage reads what earlier ones stored (a pipeline such as grounded similarity's
    administration -> judgement -> play). Worked out once, where the spec is checked, so
    the runner schedules stages without knowing any pipeline."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def hash(self) -> str:
        """What the results depend on: not concurrency, limits, budget, timeouts or the way
        requests travel (``batch``: a batched run and a streamed one are the same sweep)."""
        data = public_spec(self.spec)
        for key in ("concurrency", "provider_limits", "budget_usd", "max_decisions",
                    "max_prompt_tokens", "devrank", "moran", "batch", "batch_gather"):
            data.pop(key, None)
        # Fields added later hash as before while they keep their defaults, so runs
        # started before they existed still resume.
        for key, default in (("replicates", 1), ("answers", "lenient")):
            if data.get(key) == default:
                data.pop(key)
        # where the clones are is not what results depend on: their commits are recorded
        # on the run and checked on --resume
        data.pop("sources", None)
        for exp in data.get("experiments", []):
            if exp.get("wording") == "ours":
                exp.pop("wording")
        for exp in data.get("experiments", []):
            for key, default in (("talk", "none"), ("talk_turns", 1),
                                 ("talk_chars", DEFAULT_TALK_CHARS)):
                if exp.get(key) == default:
                    exp.pop(key)
        for agent in data.get("agents", {}).values():
            for key in NOT_IN_CONTENT_KEY:
                agent.pop(key, None)
        return stable_hash(data)[:16]

    shard: str | None = None
    """``"K/N"`` when this process plays one slice of the grid (``--shard``); None: all of it."""
    plan: Callable[[Sweep], Iterator[tuple[Cell, int]]] | None = None
    """The slice's matches, drawn from :meth:`whole_plan` (see :mod:`coop_tui.shards`)."""
    _slice_total: int | None = field(default=None, repr=False)
    _offsets: dict[int, int] | None = field(default=None, repr=False)

    def plan_index(self, cell: Cell, slot: int) -> int | None:
        """The match's place in the whole plan (0-based), whichever slice plays it; None
        for a cell that is not one of this sweep's (a probe's stand-in)."""
        if self._offsets is None:
            self._offsets, start = {}, 0
            for c in self.cells:
                self._offsets[id(c)] = start
                start += c.slots
        offset = self._offsets.get(id(cell))
        return None if offset is None else offset + slot

    def whole_plan(self) -> Iterator[tuple[Cell, int]]:
        """Every (cell, slot) of the grid in plan order; a slot numbers replicate x sample."""
        for cell in self.cells:
            for slot in range(cell.slots):
                yield cell, slot

    def matches(self) -> Iterator[tuple[Cell, int]]:
        """The matches this process plays: the whole grid, or its shard's slice of it."""
        if self.plan is None:
            return self.whole_plan()
        return self.plan(self)

    @property
    def total_matches(self) -> int:
        if self.plan is None:
            return sum(c.slots for c in self.cells)
        if self._slice_total is None:  # counted once: a slice is a walk over the plan
            self._slice_total = sum(1 for _ in self.plan(self))
        return self._slice_total

    def slots_by_cell(self) -> list[int]:
        """How many of each cell's matches this process plays (aligned with ``cells``):
        all of them, or those of its slice."""
        if self.plan is None:
            return [cell.slots for cell in self.cells]
        index = {id(cell): i for i, cell in enumerate(self.cells)}
        counts = [0] * len(self.cells)
        for cell, _slot in self.plan(self):
            counts[index[id(cell)]] += 1
        return counts

    def tournaments_played(self) -> set[str] | None:
        """The keys of the design-sharing tournaments this process plays; None: every one
        (no slice). A slice holds such a tournament whole, its designs included."""
        if self.plan is None:
            return None
        return {cell.tournament_key(slot) for cell, slot in self.plan(self)
                if cell.mechanism_params.get("design_scope") == "tournament"}


def public_spec(spec: SweepSpec) -> dict[str, Any]:
    data = spec.model_dump(mode="json", exclude_none=True)
    for agent in data.get("agents", {}).values():
        agent.pop("api_key", None)
        if "api_base" in agent:
            agent["api_base"] = redact.strip_userinfo(agent["api_base"])
    return data
