"""``--batch --dry-run`` sizes a repeated game's prompts without the square of its rounds'
work, and estimates exactly what it estimated before.

A known-horizon prompt (the strategic personalities paper's protocol) shows every past
round, so formatting the history afresh for each prompt made a 1,400-round match's
dry run take 25 s. Each past round is now formatted once per naming of the actions
(:class:`RoundLines`). The estimate must not move: the digests below are of the numbers
(``estimate`` and every probed prompt size) the code before the change gave for the same
sweeps (commit a4b0dfa, written with :func:`dry_run_digest`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import coop_tui.mechanisms.repetition as repetition
from coop_tui.hashing import stable_hash
from coop_tui.prompt_size import PromptSizes, _Probe, check_prompt_sizes, measure_sync
from coop_tui.prompts import PromptRenderer
from coop_tui.runner import estimate
from coop_tui.spec import SpecError, Sweep, load_sweep

ROOT = Path(__file__).resolve().parent.parent

VARIANTS = """
name = "variants"
seed = 5
max_prompt_tokens = 10000000
[agents.m]
model = "openai/loopback"
api_base = "http://127.0.0.1:9/v1"
[agents.c]
model = "openai/loopback2"
api_base = "http://127.0.0.1:9/v1"
style = "direct"
[agents.tft]
strategy = "tit_for_tat"
[agents.rnd]
strategy = "random"
[[experiments]]
name = "per-decision labels, last rounds, payoffs"
game = ["prisoners", "el_farol_bar", "travelers"]
mechanism = "repetition"
horizon = "known"
rounds = 70
history = 6
history_payoffs = true
randomize_labels = true
matchup = "versus"
agents = ["m", "c"]
opponents = ["tft", "rnd"]
[[experiments]]
name = "trial letters, two by two only"
game = ["pd_canonical", "el_farol_bar", "chicken"]
mechanism = "repetition"
horizon = "known"
rounds_told = "two_by_two"
prompt_protocol = "strategic_personalities"
answer = "choice"
randomize_labels = "trial"
rounds = 60
matchup = "versus"
agents = ["m"]
opponents = ["tft", "rnd", "c"]
[[experiments]]
name = "continuation"
game = "prisoners"
mechanism = "repetition"
rounds = 40
history = 5
agents = ["m", "c"]
[[experiments]]
name = "three players, whole history"
game = "public_good"
game_params = { players = 3 }
mechanism = "repetition"
horizon = "known"
rounds = 50
randomize_labels = true
agents = ["m", "tft", "c"]
"""
"""Repeated games in every way a history is named and cut: labels redrawn per decision,
trial letters, the last rounds only, a continuation chance, three players."""

LONG = """
name = "long"
seed = 2
[agents.m]
model = "openai/loopback"
api_base = "http://127.0.0.1:9/v1"
[agents.alld]
strategy = "always_defect"
[[experiments]]
game = "prisoners"
mechanism = "repetition"
matchup = "versus"
agents = ["m"]
opponents = ["alld"]
rounds = 1400
history = "all"
horizon = "known"
"""
"""A model against a strategy for 1,400 rounds with the whole history shown."""

BEFORE = {
    "strategic-personalities": "375d43dc1bed5b9af4dcdd57910a54f98c0dc420173701da35d3e8cd771f2d8f",
    "strategic-personalities-offline": "957885a1e6fe336ffc41b6de7bab231114b37a691fade97d9969485e59e888d8",
    # the study file's style_message = "user_end" (the published study's layout) moved the
    # direct agent's instruction into its user message and joined the match condition, so
    # the seeded histories differ too: mean prompt 493.9 -> 494.5 tokens, calls unchanged
    "coopeval-offline": "5f13aabd344d5ccba9b1d60f0ef67e31b14cbaec2675d234ac59b11d257ef799",
    # the super-additive paper's rank-only standings (standings = "rank", a condition key of
    # its teams) and the code's full planner and critic checklists changed its prompts; so
    # did the planner's current round and a rank over finished matches (rank_counts, a new
    # mechanism parameter, so new match keys and seeded schedules)
    "superadditive-offline": "7ad7abb9449063b8c928979eee9ae119cd79e7c56f3efa2f3457572ad2e7c3d9",
    "strategies-prisoners": "45bb8ceedb66840bb5162a6d1c3cba59e91a0607fb2e5addb4c8899619c099e5",
    "variants": "b2cd6e4f79fbb29ca10ecf265049a6b2c461837cf374183a0fc991dedb89a7a5",
    "long": "9f9c80ba0265c32b9f7dc3a47e39c841ab396ca375c38cb44340a84a5dd79487",
}
"""Digests of :func:`dry_run_numbers` by the code before the change. The two strategic
personalities studies and the variants were re-pinned on 2026-12-07, when their messages
took the code's information (issue #40: no "several rounds" sentence, the four-player
history naming one co-player, the shorter rules of the auctions, Blotto, the beauty
contest, signalling and alternating offers); their match and call counts did not move."""


def dry_run_numbers(sweep: Sweep, sizes: PromptSizes) -> dict[str, Any]:
    """Everything the dry run prints or checks is computed from these."""
    return {
        "estimate": estimate(sweep, sizes),
        "first": sizes.by_cell, "mean": sizes.mean_by_cell, "largest": sizes.largest_by_cell,
        "probed": sizes.probed, "distinct": sizes.distinct,
    }


def dry_run_digest(sweep: Sweep, sizes: PromptSizes) -> str:
    return stable_hash(dry_run_numbers(sweep, sizes))


def written(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["strategic-personalities", "strategic-personalities-offline",
                                  "coopeval-offline", "superadditive-offline",
                                  "strategies-prisoners"])
def test_the_shipped_studies_estimate_as_before(name: str) -> None:
    folder = "sweeps" if name == "strategies-prisoners" else "studies"
    sweep = load_sweep(ROOT / "data" / folder / f"{name}.toml", check_keys=False)
    assert dry_run_digest(sweep, measure_sync(sweep)) == BEFORE[name]


def test_repeated_games_named_and_cut_every_way_estimate_as_before(tmp_path: Path) -> None:
    sweep = load_sweep(written(tmp_path, "variants", VARIANTS), check_keys=False)
    assert dry_run_digest(sweep, measure_sync(sweep)) == BEFORE["variants"]


def test_a_1400_round_dry_run_formats_each_past_round_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the history rows formatted and the round lines rendered for
    the whole match. Before, every prompt formatted all of its past rounds (about
    1,400 x 1,400 rows in all) and its template looped over them."""
    formatted, lines = [0], [0]
    real_rows, real_render = repetition.history_lines, PromptRenderer._render

    def counting_rows(moves: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        formatted[0] += len(moves)
        return real_rows(moves, *args, **kwargs)

    def counting_render(self: PromptRenderer, template: Any, name: str, context: Any) -> str:
        lines[0] += name == repetition.ROUND_LINE
        return real_render(self, template, name, context)

    monkeypatch.setattr(repetition, "history_lines", counting_rows)
    monkeypatch.setattr(PromptRenderer, "_render", counting_render)
    sweep = load_sweep(written(tmp_path, "long", LONG), check_keys=False)
    sizes = measure_sync(sweep)
    seats, rounds = 2, 1400
    assert formatted[0] <= seats * rounds  # each past round once per seat (one naming)
    assert 0 < lines[0] <= seats * rounds
    assert dry_run_digest(sweep, sizes) == BEFORE["long"]
    # what the dry run reports: the last prompt is the longest and over the default limit
    assert sizes.largest_by_cell[0][0] == (33_959, 1400)
    with pytest.raises(SpecError, match="prompt number 1,400"):
        check_prompt_sizes(sweep, sizes)


OLD_KNOWN_HORIZON = """\
{% if tell_total | default(true) -%}
This game is played for exactly {{ total_rounds }} round{{ "s" if total_rounds != 1 }}, always against the same {{ "player" if n_others == 1 else "players" }}.{% if total_rounds != 1 %} Your points add up over all {{ total_rounds }} rounds.{% endif %}
This is round {{ round }} of {{ total_rounds }}.
{%- else -%}
This game is played over several rounds, always against the same {{ "player" if n_others == 1 else "players" }}. Your points add up over the rounds.
This is round {{ round }}.
{%- endif %}
{% if history -%}
{{ "Every round so far" if whole_history else "The last " ~ (history | length) ~ " round" ~ ("s" if history | length > 1) }} (oldest first):
{% for h in history -%}
- Round {{ h.round }}: you chose {{ h.own }}{% for o in h.others %}, {{ o.who }} chose {{ o.label }}{% endfor %}; you got {{ h.payoff | points }}{% for o in h.others %}{% if o.payoff is not none %}, {{ o.who }} got {{ o.payoff }}{% endif %}{% endfor %}.
{% endfor -%}
{%- else -%}
No rounds have been played yet.
{%- endif %}
"""
"""``twist/repetition_known.j2`` as it was, looping over the history itself: what a
researcher who copied it into a sweep's ``templates`` folder still has."""

OLD_CONTINUATION = """\
{% if endless | default(false) -%}
This game is not played just once. You face the same {{ "player" if n_others == 1 else "players" }} again round after round. Your points add up over all rounds.
{% else -%}
This game is not played just once. You face the same {{ "player" if n_others == 1 else "players" }} again round after round: after each round, there is a {{ continuation_pct }}% chance that another round follows. Your points add up over all rounds.
{% endif -%}
The action drawn from the probabilities you give is what the {{ "other player sees" if n_others == 1 else "other players see" }} of your move in later rounds, and it may shape what they do.
This is round {{ round }}: you have played {{ played }} round{{ "" if played == 1 else "s" }} with {{ "this player" if n_others == 1 else "these players" }} so far.
{% if history -%}
What was played in the last {{ history | length }} round{{ "s" if history | length > 1 }} (most recent first):
{% for h in history -%}
- Round {{ h.round }}: you played {{ h.own }}{% for o in h.others %}, {{ o.who }} played {{ o.label }}{% endfor %}{% if show_payoffs %}; you got {{ h.payoff | points }}{% endif %}.
{% endfor -%}
{%- else -%}
No rounds have been played yet.
{%- endif %}
"""
"""``twist/repetition.j2`` (CoopEval's) as it was."""


def every_prompt(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every request the dry run's probes were sent, in order."""
    seen: list[Any] = []
    real = _Probe.reply

    async def recording(self: _Probe, request: Any, messages: Any, sink: Any) -> Any:
        seen.append([request.seat, request.round, request.phase, messages])
        return await real(self, request, messages, sink)

    with monkeypatch.context() as patch:
        patch.setattr(_Probe, "reply", recording)
        measure_sync(load_sweep(path, check_keys=False))
    return seen


def test_the_history_reads_the_same_as_from_a_copied_older_template(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept lines join into the text the old loops wrote, byte for byte, and copied
    older templates (which loop over ``history`` themselves) still render it."""
    shorter = VARIANTS.replace("rounds = 70", "rounds = 30").replace("rounds = 60", "rounds = 25")
    # the older template still says the game is repeated: ask the shipped one for it too
    shorter = shorter.replace('rounds_told = "two_by_two"', 'rounds_told = "several"')
    shipped = every_prompt(written(tmp_path, "variants", shorter), monkeypatch)
    (tmp_path / "old" / "twist").mkdir(parents=True)
    (tmp_path / "old" / "twist" / "repetition_known.j2").write_text(OLD_KNOWN_HORIZON)
    (tmp_path / "old" / "twist" / "repetition.j2").write_text(OLD_CONTINUATION)
    copied = every_prompt(
        written(tmp_path, "variants", f'templates = "old"\n{shorter}'), monkeypatch)
    assert len(shipped) > 500 and len(copied) == len(shipped)
    differing = next((i for i, (a, b) in enumerate(zip(shipped, copied, strict=True)) if a != b), None)
    assert differing is None, (shipped[differing], copied[differing])  # one request, not all


def test_a_round_line_template_reaching_outside_the_sandbox_stops_the_dry_run(tmp_path: Path) -> None:
    """A history line rendered once and kept still goes through the sandbox's check:
    the dry run stops with the file and line, before anything is written."""
    (tmp_path / "mine" / "twist").mkdir(parents=True)
    (tmp_path / "mine" / "twist" / "repetition_round.j2").write_text(
        "- Round {{ h.round }}\n{{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    short = LONG.replace("rounds = 1400", "rounds = 3")
    sweep = load_sweep(written(tmp_path, "long", f'templates = "mine"\n{short}'), check_keys=False)
    with pytest.raises(SpecError, match=r"repetition_round\.j2:2: the template reaches outside"):
        measure_sync(sweep)
