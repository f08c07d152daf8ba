"""CoopEval's own wording read from a clone of its code (issue #39), against a stand-in.

``tests/data/sources/coopeval/`` has the module layout and signatures of CoopEval's code
with every sentence our own, so these tests check the plumbing: that each decision of
every mechanism and game family reaches the right builder of the clone with coop-tui's
state (seat, round, history, records, designs, contract, refusals), the two layouts, the
re-ask, and the errors a changed clone gives. The real clone is checked outside the suite
(``docs/reproducing-coopeval.md``, "Wording from the source").

Matches run through the real engine and mechanisms; the seats are a small in-process
agent that reads the source's messages for each request it is asked (at the moment the
engine asks it, as the wiring will) and answers a fixed move.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from coop_tui.decisions import AgentReply, DecisionRequest, Message
from coop_tui.engine import DecisionPolicy, MatchContext
from coop_tui.events import EventBus
from coop_tui.games import get_game
from coop_tui.games.travelers import travelers
from coop_tui.mechanisms import mechanism_class
from coop_tui.sources import LoadedSource, SourceError, get, sources
from coop_tui.sources.coopeval import REQUIRED, coopeval_uid

STAND_IN = Path(__file__).parent / "data" / "sources" / "coopeval"
COT = "STAND-IN COT: reason first,\nthen answer."
IO = "STAND-IN IO: the answer alone."


@pytest.fixture(scope="module")
def source() -> LoadedSource:
    return get("coopeval").load(STAND_IN)


class Reader:
    """A prompt-reading seat: keeps the source's messages of every request it is asked
    and answers ``moves[(phase, round)]`` (JSON text) or plays action 0."""

    kind = "llm"
    reads_prompt = True

    def __init__(self, name: str, style: str, source: LoadedSource, moves: dict[Any, str]) -> None:
        self.name, self.style, self.spec = name, style, {"model": name, "style": style}
        self.source, self.moves = source, moves
        self.ctx: MatchContext | None = None
        self.seen: list[tuple[DecisionRequest, tuple[Message, ...]]] = []

    async def reply(self, request: DecisionRequest, messages: list[Message], sink: Any) -> AgentReply:
        assert self.ctx is not None
        self.seen.append((request, self.source.messages(self.ctx, request)))
        text = self.moves.get((request.phase, request.round, request.seat))
        if text is None:
            text = self.moves.get((request.phase, request.round), self.moves.get(request.phase))
        if text is None:
            text = json.dumps({label: (100 if i == 0 else 0) for i, label in enumerate(request.labels)})
        return AgentReply(text=text)


async def play(
    source: LoadedSource, game: str, mechanism: str, *, styles: tuple[str, ...] = ("cot", "direct"),
    moves: dict[Any, str] | None = None, layout: str = "user", params: dict[str, Any] | None = None,
    seats: int | None = None, game_obj: Any = None,
) -> tuple[MatchContext, list[Reader]]:
    """One match of ``game`` under ``mechanism`` with Reader seats; the context and seats."""
    mech_cls = mechanism_class(mechanism)
    mech = mech_cls(mech_cls.Params.model_validate(params or {}))
    g = game_obj or get_game(game)
    n = seats or g.n_players
    readers = [Reader(f"r{i}", styles[i % len(styles)], source, moves or {}) for i in range(n)]
    ctx = MatchContext(run_id="run", match_id="m", game=g, agents=readers, bus=EventBus(), seed=5,
                       policy=DecisionPolicy(max_attempts=1, strict=True, style_message=layout))
    for r in readers:
        r.ctx = ctx
    await mech.play(ctx)
    return ctx, readers


def asked(readers: list[Reader], phase: str, seat: int, round_: int = 1) -> tuple[Message, ...]:
    return next(m for r in readers for q, m in r.seen
                if q.phase == phase and q.seat == seat and q.round == round_)


def text(messages: tuple[Message, ...]) -> str:
    return messages[-1]["content"]


PD = "GRID GAME (A0=C A1=D)\n  C/C -> 2 and 2\n  C/D -> 0 and 3\n  D/C -> 3 and 0\n  D/D -> 1 and 1\n"
ANSWER = "--\nANSWER: percentages per action as JSON.\n"


# ---------------------------------------------------------------- registry and layouts
def test_the_registry_finds_the_coopeval_source_and_what_it_serves() -> None:
    wording = sources()["coopeval"]
    assert wording.repository == "Xiao215/CoopEval" and len(wording.tested_commit) == 40
    assert wording.serves(mechanism="reputation", prompt_protocol="coop_tui", game="travelers")
    assert not wording.serves(mechanism="similarity", prompt_protocol="coop_tui", game="prisoners")
    assert not wording.serves(mechanism="none", prompt_protocol="seed003", game="prisoners")
    assert not wording.serves(mechanism="none", prompt_protocol="coop_tui", game="chicken")


async def test_published_layout_appends_the_instruction_to_the_one_user_message(
    source: LoadedSource,
) -> None:
    _, readers = await play(source, "prisoners", "none")
    assert asked(readers, "play", 0) == (
        {"role": "user", "content": PD + "[stand-in seat 1]\n" + ANSWER + "\n" + COT + "\n"},)
    assert asked(readers, "play", 1) == (
        {"role": "user", "content": PD + "[stand-in seat 2]\n" + ANSWER + "\n" + IO + "\n"},)


async def test_current_code_layout_sends_the_instruction_as_a_system_message(
    source: LoadedSource,
) -> None:
    _, readers = await play(source, "prisoners", "none", layout="system")
    assert asked(readers, "play", 1) == (
        {"role": "system", "content": IO},
        {"role": "user", "content": PD + "[stand-in seat 2]\n" + ANSWER})


async def test_a_style_coopeval_has_no_agent_for_gets_the_prompt_alone(source: LoadedSource) -> None:
    _, readers = await play(source, "prisoners", "none", styles=("plain",))
    assert asked(readers, "play", 0) == ({"role": "user", "content": PD + "[stand-in seat 1]\n" + ANSWER},)


# ---------------------------------------------------------------- every game family
@pytest.mark.parametrize(("game", "opening"), [
    ("stag_hunt", "GRID GAME (A0=S A1=H)\n  S/S -> 5 and 5\n  S/H -> 0 and 3\n"),
    ("matching_pennies", "GRID GAME (A0=H A1=T)\n  H/H -> 1 and -1\n  H/T -> -1 and 1\n"),
    ("trust", "GRID GAME (A0=G A1=K)\n  G/G -> 10 and 10\n  G/K -> 0 and 20\n  K/G -> 6 and 2\n"),
    ("public_good", "POOL GAME of 3, pot times 1.5\n"),
    ("travelers", "CLAIM GAME [2, 3, 4, 5] bonus 2.0\n"),
])
async def test_every_game_family_is_built_by_the_clones_game_classes(
    source: LoadedSource, game: str, opening: str,
) -> None:
    ctx, readers = await play(source, game, "none", layout="system")
    last = ctx.n_seats
    assert text(asked(readers, "play", last - 1)).startswith(opening)
    assert text(asked(readers, "play", last - 1)).endswith(f"[stand-in seat {last}]\n" + ANSWER)


async def test_a_travelers_dilemma_coopeval_cannot_state_is_refused(source: LoadedSource) -> None:
    descending = travelers(order="descending")
    with pytest.raises(SourceError, match="ascending"):
        await play(source, "travelers", "none", game_obj=descending)


async def test_shuffled_labels_are_refused_with_the_fix(source: LoadedSource) -> None:
    game = get_game("prisoners")
    ctx = MatchContext(run_id="r", match_id="m", game=game, agents=[
        Reader("a", "cot", source, {}), Reader("b", "cot", source, {})], bus=EventBus(), seed=1)
    shuffled = replace(ctx.play_request(0, 1), label_to_action=(1, 0))  # A0 names action 1
    with pytest.raises(SourceError, match="randomize_labels = false"):
        source.messages(ctx, shuffled)


# ---------------------------------------------------------------- repeated games
async def test_repetition_rounds_show_the_clones_history_of_the_match(source: LoadedSource) -> None:
    moves = {("play", 1, 1): '{"A0": 0, "A1": 100}'}
    _, readers = await play(source, "prisoners", "repetition", layout="system",
                            params={"rounds": 3, "continuation": 0.8, "history": 2}, moves=moves)
    seat1 = PD + "[stand-in seat 1]\n"
    assert text(asked(readers, "play", 0, 1)) == (
        seat1 + "TWIST: again with 80% odds; 0 played.\n(no rounds yet)\n" + ANSWER)
    assert text(asked(readers, "play", 0, 3)) == (
        seat1 + "TWIST: again with 80% odds; 2 played.\nr2: me=A0 P2=A0\nr1: me=A0 P2=A1\n" + ANSWER)
    assert text(asked(readers, "play", 1, 2)).endswith(
        "TWIST: again with 80% odds; 1 played.\nr1: P1=A0 me=A1\n" + ANSWER)


async def test_a_known_horizon_is_refused_with_the_fix(source: LoadedSource) -> None:
    with pytest.raises(SourceError, match='horizon = "known"'):
        await play(source, "prisoners", "repetition", params={"rounds": 2, "horizon": "known"})


async def test_a_builder_of_the_clone_that_fails_is_named(
    source: LoadedSource, tmp_path: Path,
) -> None:
    root = copy_stand_in(tmp_path)
    path = root / "src/coopeval/mechanisms/repetition.py"
    path.write_text(path.read_text().replace("        out = []\n", "        out = [][0]\n", 1))
    broken = get("coopeval").load(root)
    with pytest.raises(SourceError, match=r"could not build the play prompt of repetition "
                                          r"\(IndexError"):
        await play(broken, "prisoners", "repetition", params={"rounds": 1})


def record_lines(ctx: MatchContext, events: list[Any], me: int, player: int, before: int,
                 first: int, depth: int, pad: str) -> list[str]:
    """The stand-in's record of ``player`` as ``me`` reads it (its rule, restated)."""
    lines = []
    for e in reversed([e for e in events if player in e.seats]):
        if not first <= e.round < before:
            continue
        lines.append(pad + f"r{e.round} " + " ".join(
            f"{'me' if s == me else f'#{coopeval_uid(s, 4, 2)}'}:A{a}/{x:g}"
            for s, a, x in zip(e.seats, e.actions, e.payoffs, strict=True)))
        if depth > 1:
            for s in e.seats:
                if s != player:
                    lines += record_lines(ctx, events, me, s, e.round, first, depth - 1, pad + "  ")
    return lines


@pytest.mark.parametrize("order", ["first", "higher"])
async def test_reputation_shows_the_clones_records_of_the_population(
    source: LoadedSource, order: str,
) -> None:
    from coop_tui.events import RoundDone
    moves = {("play", t, s): json.dumps({"A0": 100 * ((s + t) % 2), "A1": 100 * ((s + t + 1) % 2)})
             for t in (1, 2, 3) for s in range(4)}
    params = {"rounds": 3, "continuation": 0.5, "history": 2, "order": order, "population": 4}
    mech_cls = mechanism_class("reputation")
    mech = mech_cls(mech_cls.Params.model_validate(params))
    readers = [Reader(f"r{i}", "cot", source, moves) for i in range(4)]
    bus = EventBus()
    events: list[Any] = []
    bus.subscribe(lambda e: events.append(e) if isinstance(e, RoundDone) else None)
    ctx = MatchContext(run_id="run", match_id="m", game=get_game("prisoners"), agents=readers,
                       bus=bus, seed=5, policy=DecisionPolicy(max_attempts=1, strict=True,
                                                              style_message="system"))
    for r in readers:
        r.ctx = ctx
    await mech.play(ctx)
    depth = 2 if order == "higher" else 1
    for seat in range(4):
        request, messages = next((q, m) for q, m in readers[seat].seen if q.round == 3)
        group = list(request.view.extra["coplayers"])
        group.insert(request.view.seat, seat)
        lines = []
        for p in group:
            lines.append("[me]" if p == seat else f"[#{coopeval_uid(p, 4, 2)}]")
            lines += record_lines(ctx, events, seat, p, 3, 1, depth, "  ")
        assert text(messages) == (
            PD + f"[stand-in seat {request.view.seat + 1}]\n"
            + "TWIST: strangers, 50% odds; 2 played.\n" + "\n".join(lines) + "\n" + ANSWER)
        nested = [x for x in lines if x.startswith("    r")]
        assert bool(nested) == (order == "higher")


def test_reputation_numbers_agents_as_coopevals_population_list() -> None:
    # four agents in the two positions of a two-player game: seats 0-3 play Player 1,
    # seats 4-7 Player 2; CoopEval lists agent 1 as Player 1, agent 1 as Player 2, ...
    assert [coopeval_uid(s, 8, 2) for s in range(8)] == [1, 3, 5, 7, 2, 4, 6, 8]
    assert [coopeval_uid(s, 6, 3) for s in range(6)] == [1, 4, 2, 5, 3, 6]


# ---------------------------------------------------------------- designs
MEDIATION_MOVES = {
    ("propose", 1, 0): '{"1": "A1", "2": "A0"}',
    ("propose", 1, 1): '{"1": "A0", "2": "A0"}',
    ("vote", 1, 0): '{"M1": true, "M2": false}',
    ("vote", 1, 1): '{"M1": true, "M2": true}',
}


async def test_mediation_propose_vote_and_play_in_the_clones_words(source: LoadedSource) -> None:
    _, readers = await play(source, "prisoners", "mediation", layout="system", moves=MEDIATION_MOVES,
                            params={"design_scope": "match"})
    assert text(asked(readers, "propose", 0)) == (
        PD + "[stand-in seat 1]\nTWIST: design a mediator; map 1..2 delegators to an action.\n")
    assert text(asked(readers, "vote", 1)) == (
        PD + "[stand-in seat 2]\nTWIST: approve mediators.\n"
        "M1 by P1:\n  1 -> A1\n  2 -> A0\nM2 by P2:\n  1 -> A0\n  2 -> A0\n"
        "ANSWER: M-keys, true/false.\n")
    assert text(asked(readers, "play", 0)) == (
        PD + "[stand-in seat 1]\nTWIST: mediator of Player 1:\n  1 -> A1\n  2 -> A0\n"
        "A2 hands your move to it.\n" + ANSWER)


CONTRACT_MOVES = {
    ("propose", 1, 0): '{"A0": 0, "A1": -3}',
    ("propose", 1, 1): '{"A0": 1, "A1": 0}',
    "vote": '{"C1": false, "C2": true}',
    ("sign", 1, 0): '{"sign": true}',
}
TERMS = "  A0: +1\n  A1: +0\n"


@pytest.mark.parametrize("second_signs", [True, False])
async def test_contracting_propose_vote_sign_and_play_in_the_clones_words(
    source: LoadedSource, second_signs: bool,
) -> None:
    moves = {**CONTRACT_MOVES, ("sign", 1, 1): json.dumps({"sign": second_signs})}
    _, readers = await play(source, "prisoners", "contracting", layout="system", moves=moves,
                            params={"design_scope": "match"})
    seat1 = PD + "[stand-in seat 1]\n"
    assert text(asked(readers, "propose", 1)) == (
        PD + "[stand-in seat 2]\nTWIST: design a contract; one payment per action.\n")
    assert text(asked(readers, "vote", 0)) == (
        seat1 + "TWIST: approve contracts.\nC1 by P1:\n  A0: +0\n  A1: -3\nC2 by P2:\n" + TERMS
        + "ANSWER: C-keys, true/false.\n")
    assert text(asked(readers, "sign", 0)) == (
        seat1 + "TWIST: sign the contract of Player 2?\n" + TERMS + "ANSWER: sign true/false.\n")
    twist = ("TWIST: signed contract of Player 2:\n" + TERMS if second_signs else
             "TWIST: unsigned contract of Player 2:\n" + TERMS + "refused by Player 2\n")
    assert text(asked(readers, "play", 0)) == seat1 + twist + ANSWER


# ---------------------------------------------------------------- re-asks
async def test_a_reask_quotes_the_clones_parser_after_its_retry_text(source: LoadedSource) -> None:
    ctx, readers = await play(source, "prisoners", "none")
    request, first = next((q, m) for q, m in readers[0].seen if q.phase == "play")
    base = PD + "[stand-in seat 1]\n" + ANSWER
    again = source.retry_messages(ctx, request, first, '{"A0": 50}', "coop-tui: not 100")
    assert again == ({"role": "user", "content": (
        base + "\n~~ stand-in re-ask ~~\nyou wrote: {\"A0\": 50}\n"
        "refused: stand-in: keys ['A0'] are not the actions\ntry once more" + "\n" + COT + "\n")},)
    # an answer the clone's parser takes: coop-tui's own reason is quoted
    kept = source.retry_messages(ctx, request, first, '{"A0": 50, "A1": 50}', "coop-tui: no")
    assert "refused: coop-tui: no\n" in text(kept)


async def test_reasks_of_votes_and_the_current_code_layout(source: LoadedSource) -> None:
    ctx, readers = await play(source, "prisoners", "mediation", layout="system",
                              moves=MEDIATION_MOVES, params={"design_scope": "match"})
    request, first = next((q, m) for q, m in readers[1].seen if q.phase == "vote")
    again = source.retry_messages(ctx, request, first, '{"M1": true}', "missing M2")
    assert again[0] == {"role": "system", "content": IO}
    assert text(again) == (text(first) + "\n~~ stand-in re-ask ~~\nyou wrote: {\"M1\": true}\n"
                           "refused: stand-in: a ballot needs ['M1', 'M2'] as true/false\n"
                           "try once more")


# ---------------------------------------------------------------- a clone that does not fit
def copy_stand_in(tmp_path: Path) -> Path:
    root = tmp_path / "CoopEval"
    shutil.copytree(STAND_IN, root)
    return root


def test_a_copy_outside_git_is_recorded_by_the_hash_of_its_files(tmp_path: Path) -> None:
    root = copy_stand_in(tmp_path)
    first = get("coopeval").load(root).commit
    assert first.startswith("files:")
    prompts = root / "src/coopeval/mechanisms/prompts.py"
    prompts.write_text(prompts.read_text() + "\n# changed\n")
    assert get("coopeval").load(root).commit not in (first, "")


def test_a_missing_clone_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="agent_manager.py is missing"):
        get("coopeval").load(tmp_path / "nowhere")


def test_a_missing_module_names_the_file(tmp_path: Path) -> None:
    root = copy_stand_in(tmp_path)
    (root / "src/coopeval/mechanisms/mediation.py").unlink()
    with pytest.raises(SourceError, match=r"mechanisms/mediation.py is missing"):
        get("coopeval").load(root)


def test_a_removed_function_names_the_file_and_the_function(tmp_path: Path) -> None:
    root = copy_stand_in(tmp_path)
    path = root / "src/coopeval/mechanisms/contracting.py"
    path.write_text(path.read_text().replace("def _agree_to_contract(", "def _agree_later("))
    with pytest.raises(SourceError, match=r"contracting.py has no Contracting._agree_to_contract"):
        get("coopeval").load(root)


def test_a_changed_signature_names_both_signatures(tmp_path: Path) -> None:
    root = copy_stand_in(tmp_path)
    path = root / "src/coopeval/mechanisms/repetition.py"
    path.write_text(path.read_text().replace("round_idx: int,", "round_number: int,"))
    with pytest.raises(SourceError, match=r"_build_history_prompts takes \(players, round_number, "
                                          r"history\), coop-tui expects \(players, round_idx"):
        get("coopeval").load(root)


def test_a_file_that_fails_to_import_is_named(tmp_path: Path) -> None:
    root = copy_stand_in(tmp_path)
    path = root / "src/coopeval/games/stag_hunt.py"
    path.write_text("import a_module_nobody_has\n" + path.read_text())
    with pytest.raises(SourceError, match=r"stag_hunt.py failed to import"):
        get("coopeval").load(root)


def test_the_required_names_are_all_in_the_stand_in() -> None:
    # the stand-in keeps every file, name and signature the adapter checks
    from coop_tui.sources.loading import check_required
    check_required(STAND_IN, "coopeval", REQUIRED)


def test_loading_leaves_no_module_of_the_clone_behind() -> None:
    import sys
    import typing
    get("coopeval").load(STAND_IN)
    assert not [m for m in sys.modules if m == "coopeval" or m.startswith("coopeval.")]
    assert sys.modules["typing"] is typing and "inspect_ai" not in sys.modules
