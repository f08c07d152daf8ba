"""Talk phases: messages before each round's move (docs/talk.md).

The parser and the spec's refusals are checked directly; the transcript tests play real
sweeps against the loopback server (no model), and check in the stored database that
each message is a decision of phase ``talk`` and that exactly its recipients read it in
their next prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coop_tui.errors import SpecError
from coop_tui.parsing import ParseError, parse_answer
from coop_tui.spec import load_sweep
from coop_tui.store import Store
from coop_tui.sweep import run_sweep
from coop_tui.testing.server import LoopbackServer, last_user_message

PUBLIC = {"talk": "public", "chars": 40}
PRIVATE = {"talk": "private", "chars": 40, "to": [2, 3]}


# ----------------------------------------------------------------- parsing
def test_a_public_message_may_be_plain_text_or_the_json_object() -> None:
    assert parse_answer("text", "  Let us both pick A0. ", options=PUBLIC)[0] == {
        "message": "Let us both pick A0.", "to": None}
    parsed, note = parse_answer("text", 'Thinking... {"message": "deal?"}', options=PUBLIC)
    assert parsed == {"message": "deal?", "to": None} and note is None


def test_a_private_message_must_name_another_player() -> None:
    assert parse_answer("text", '{"to": 3, "message": "hi"}', options=PRIVATE)[0] == {
        "message": "hi", "to": 3}
    assert parse_answer("text", '{"to": "2", "message": "hi"}', options=PRIVATE)[0]["to"] == 2
    with pytest.raises(ParseError, match='"to" must be .* one of 2, 3'):
        parse_answer("text", '{"to": 1, "message": "to myself"}', options=PRIVATE)
    with pytest.raises(ParseError, match='"message"'):
        parse_answer("text", "no object at all", options=PRIVATE)


def test_a_message_over_talk_chars_is_cut_and_the_cut_is_recorded() -> None:
    long = "x" * 55
    parsed, note = parse_answer("text", json.dumps({"message": long}), options=PUBLIC)
    assert parsed["message"] == "x" * 40
    assert note == "message cut to talk_chars = 40 characters (it had 55)"


# ----------------------------------------------------------------- the spec
def sweep_text(url: str, experiment: str, *, agent: str = "m") -> str:
    return f"""
name = "talk"
seed = 5
[agents.m]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "TALK_KEY"
[agents.tft]
strategy = "tit_for_tat"
[[experiments]]
agents = ["{agent}"]
{experiment}
"""


@pytest.mark.parametrize(("experiment", "words"), [
    ('game = "prisoners"\ntalk = "public"\nprompt_protocol = "strategic_personalities"',
     "prompt_protocol 'strategic_personalities' defines no talk"),
    ('game = "prisoners"\nmechanism = "contracting"\ntalk = "private"',
     "mechanism 'contracting' has no talk phase"),
    ('game = "prisoners"\ntalk = ["public", "public"]', "lists a value twice"),
])
def test_talk_is_refused_where_nothing_could_ask_it(tmp_path: Path, experiment: str,
                                                     words: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(sweep_text("http://127.0.0.1:9", experiment))
    with pytest.raises(SpecError) as caught:
        load_sweep(path)
    assert caught.value.field == "experiments[0].talk"
    assert words in caught.value.message


def test_talk_is_a_grid_axis_and_a_condition_key_only_when_on(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(sweep_text("http://127.0.0.1:9",
                               'game = "prisoners"\ntalk = ["none", "public"]\ntalk_chars = 99'))
    silent, talking = load_sweep(path).cells
    assert (silent.talk, talking.talk, talking.talk_chars) == ("none", "public", 99)
    assert silent.talk_chars != 99  # the bound belongs to talk: silence keeps its keys
    quiet = tmp_path / "q.toml"
    quiet.write_text(sweep_text("http://127.0.0.1:9", 'game = "prisoners"'))
    assert load_sweep(quiet).cells[0].match_key(0) == silent.match_key(0)
    assert load_sweep(quiet).hash == _without_talk_hash(tmp_path)


def _without_talk_hash(tmp_path: Path) -> str:
    """A sweep that says talk = "none" hashes as one that never mentions talk (runs
    started before talk existed still resume)."""
    path = tmp_path / "n.toml"
    path.write_text(sweep_text("http://127.0.0.1:9", 'game = "prisoners"\ntalk = "none"'))
    return load_sweep(path).hash


# ----------------------------------------------------------------- transcripts
def seat_of(body: dict[str, Any]) -> int:
    found = re.findall(r"you are Player (\d)", json.dumps(body["messages"]))
    return int(found[-1])


def answer(body: dict[str, Any]) -> str:
    """Talk prompts get a message naming its sender, round and turn (private: to the next
    player); play prompts cooperate. Deterministic per prompt, like the tests' others."""
    last = last_user_message(body)
    me = seat_of(body)
    if '"message"' not in last:
        return 'I cooperate. {"A0": 100, "A1": 0}'
    rnd = re.findall(r"This is round (\d+)", last)
    turn = re.findall(r"This is message (\d) of", last)
    tag = f"note-p{me}-r{rnd[-1] if rnd else 1}-t{turn[-1] if turn else 1}"
    if '"to"' in last:
        n = 3 if "Player 3" in last else 2
        return json.dumps({"to": me % n + 1, "message": f"I will cooperate {tag}"})
    return f'Here goes. {{"message": "I will cooperate {tag}"}}'


def run(path: Path, db: Path) -> Any:
    os.environ["TALK_KEY"] = "k"
    return asyncio.run(run_sweep(load_sweep(path), Store(db)))


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


DECISIONS = """select d.round, d.phase, d.seat, d.parsed, d.options,
                      coalesce(t.text, d.prompt), d.response
               from decisions d left join texts t on t.hash = d.prompt_hash
               order by d.round, d.phase, d.seat, d.id"""


def test_public_messages_are_stored_and_read_by_every_seat_in_its_next_prompt(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, 'game = "prisoners"\nmechanism = "repetition"\n'
                                   'rounds = 2\ntalk = "public"\ntalk_turns = 2'))
        summary = run(path, tmp_path / "t.db")
    assert summary.matches_done == 1 and summary.invalid == 0
    decisions = rows(tmp_path / "t.db", DECISIONS)
    talk = [d for d in decisions if d[1] == "talk"]
    assert len(talk) == 2 * 2 * 2  # rounds x turns x seats
    for _rnd, _phase, _seat, parsed, options, prompt, response in talk:
        assert json.loads(parsed)["message"] in response  # the raw text is kept
        assert json.loads(options)["talk"] == "public"
        assert "Reply with a JSON object" in prompt
    said = {(r, json.loads(o).get("turn", 1), s): json.loads(p)["message"]
            for r, _ph, s, p, o, _pr, _re in talk}
    for rnd, phase, seat, _p, options, prompt, _r in decisions:
        turn = json.loads(options or "{}").get("turn", 1) if phase == "talk" else 3
        for (r, t, _s), message in said.items():
            # shown in every later prompt of its round, to everyone; never before
            assert (message in prompt) == (r == rnd and t < turn), (rnd, phase, seat, message)


def test_a_private_message_is_read_only_by_its_sender_and_recipient(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, 'game = "public_good"\ntalk = "private"'))
        summary = run(path, tmp_path / "p.db")
    assert summary.matches_done == 1 and summary.invalid == 0
    decisions = rows(tmp_path / "p.db", DECISIONS)
    talk = {d[2]: json.loads(d[3]) for d in decisions if d[1] == "talk"}
    assert {s: m["to"] for s, m in talk.items()} == {0: 2, 1: 3, 2: 1}
    plays = {d[2]: d[5] for d in decisions if d[1] == "play"}
    for sender, message in talk.items():
        readers = {sender, message["to"] - 1}
        for seat, prompt in plays.items():
            assert (message["message"] in prompt) == (seat in readers)
    assert "(to you only)" in plays[2]


def test_strategies_skip_talk_and_a_model_talks_alone(tmp_path: Path) -> None:
    """A strategy reads no prompt: it sends nothing and no talk decision is stored for it;
    the model beside it still talks (and reads only its own message)."""
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, 'game = "prisoners"\nmatchup = [["m", "tft"], '
                                   '["tft", "tft"]]\ntalk = "public"'))
        summary = run(path, tmp_path / "s.db")
    assert summary.matches_done == 2
    phases = rows(tmp_path / "s.db", "select d.agent, d.phase, count(*) from decisions d "
                  "group by 1, 2 order by 1, 2")
    assert phases == [("m", "play", 1), ("m", "talk", 1), ("tft", "play", 3)]


# ----------------------------------------------------------------- kill -9, then resume
def cli(*args: str, wait: bool = True) -> Any:
    env = {**os.environ, "TALK_KEY": "k"}
    cmd = [sys.executable, "-m", "coop_tui.cli", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def chats(srv: LoopbackServer) -> int:
    return sum(r.path.endswith("/chat/completions") for r in srv.requests)


@pytest.mark.slow
def test_kill_9_mid_conversation_then_resume_asks_no_stored_message_again(tmp_path: Path) -> None:
    experiment = ('game = "prisoners"\nmechanism = "repetition"\nrounds = 3\n'
                  'talk = "public"\ntalk_turns = 2')
    total = 3 * (2 + 1) * 2  # rounds x (talk turns + the move) x seats
    with LoopbackServer(latency=0.25, chunks=2, answer=answer) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, experiment))
        clean = tmp_path / "clean.db"
        assert cli("--batch", str(path), "--db", str(clean)).returncode == 0
        killed = tmp_path / "killed.db"
        proc = cli("--batch", str(path), "--db", str(killed), wait=False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:  # mid-conversation: some of round 2's messages are stored, not all
                if rows(killed, "select count(*) from decisions where phase = 'talk' "
                        "and round = 2")[0][0] >= 1:
                    break
            except sqlite3.OperationalError:  # the schema is still being created
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stored = rows(killed, "select count(*) from decisions")[0][0]
        assert 0 < stored < total
        before = chats(srv)
        resumed = cli("--batch", str(path), "--db", str(killed), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        asked = chats(srv) - before
    assert asked == total - stored  # every stored message and move reused, none asked again
    outcome = ("select d.round, d.phase, d.seat, d.response, d.parsed, d.action from decisions d "
               "order by 1, 2, 3, 4")
    assert rows(killed, outcome) == rows(clean, outcome)
    assert rows(killed, "select count(*) from matches where status = 'done'") == [(1,)]


# ----------------------------------------------------------------- the report and compare
@pytest.mark.parametrize(("message", "promise"), [
    ("I will cooperate if you do.", True),
    ("We'll contribute everything this round", True),
    ("Let's both cooperate!", True),
    ("I promise to cooperate.", True),
    ("I will not cooperate.", False),
    ("I won't contribute, sorry", False),
    ("Will you cooperate?", False),
    ("I'll defect.", False),
])
def test_the_offline_phrase_rule_finds_promises_to_cooperate(message: str, promise: bool) -> None:
    from coop_tui.analysis.talk import promises_to_cooperate

    assert promises_to_cooperate(message) is promise


def betrayer(body: dict[str, Any]) -> str:
    """Player 1 promises and defects, Player 2 says nothing of itself and cooperates."""
    last = last_user_message(body)
    me = seat_of(body)
    if '"message"' in last:
        return json.dumps({"message": "I will cooperate, trust me." if me == 1 else "Hello there"})
    return '{"A0": 0, "A1": 100}' if me == 1 else '{"A0": 100, "A1": 0}'


def test_the_talk_section_and_compare_by_talk_set_talk_against_silence(tmp_path: Path) -> None:
    from coop_tui.analysis.sections.talk import build, render

    with LoopbackServer(latency=0.0, chunks=2, answer=betrayer) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, 'game = "prisoners"\nsamples = 2\n'
                                   'talk = ["none", "public"]\ntalk_chars = 20'))
        summary = run(path, tmp_path / "r.db")
    assert summary.matches_done == 4
    store = Store(tmp_path / "r.db")
    value = build(store, summary.run_id, {})
    by_talk = {c["talk"]: c for c in value["conditions"]}
    silent, talking = by_talk["none"], by_talk["public"]
    assert (silent["matches"], silent["messages"], silent["cooperation"]) == (2, 0, 0.5)
    assert talking["messages"] == 4 and talking["max_chars"] == 20 and talking["cut"] == 2
    # Player 1's "I will cooperate, tr..." (cut at 20 characters) promised, then defected
    assert (talking["promises"], talking["kept"], talking["kept_rate"]) == (2, 0, 0.0)
    assert talking["promise_source"] == "rule"
    assert talking["payoff"] == pytest.approx(silent["payoff"])  # the same moves were played
    assert render(value)  # the text report's table
    out = cli("compare", "--db", str(tmp_path / "r.db"), summary.run_id, "--by", "talk", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (row,) = data["rows"]  # the silent cell meets its talking twin despite talk_chars = 20
    assert (row["a_value"], row["b_value"], row["condition"]) == ("none", "public", {"game": "prisoners"})
    assert row["cooperation"]["difference"] == 0.0 and data["unpaired"] == 0


# ----------------------------------------------------------------- a person talks
def test_a_typed_message_becomes_the_answer_the_parser_reads() -> None:
    from coop_tui.session import human_answer

    assert json.loads(human_answer("let's cooperate", (), "text", options=PUBLIC)) == {
        "message": "let's cooperate"}
    assert json.loads(human_answer("3: just us", (), "text", options=PRIVATE)) == {
        "to": 3, "message": "just us"}
    with pytest.raises(ValueError, match="number, a colon"):
        human_answer("1: myself", (), "text", options=PRIVATE)


async def test_play_mode_the_person_types_a_message_before_the_move(tmp_path: Path) -> None:
    from textual.widgets import Input

    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen
    from coop_tui.session import build_setup_sweep, play_setup

    sweep = build_setup_sweep(play_setup("prisoners", "tit_for_tat", 1, None, "public"))
    app = CoopApp(tmp_path / "p.db", play=sweep)
    async with app.run_test(size=(160, 48)) as pilot:
        live = app.screen
        assert isinstance(live, LiveScreen)

        async def turn(phase: str) -> None:
            for _ in range(6000):  # a hang guard, not a timing check
                if live.session_waiting(0) and live.turns and live.turns[0].request.phase == phase:
                    return
                await pilot.pause(0.02)
            raise AssertionError(f"no {phase} turn")

        assert live.session.phases == ("talk", "play")  # the timeline lists the talk phase
        await turn("talk")
        assert "Type a message every other player reads" in str(
            live.query_one("#human-prompt").content)
        live.query_one("#human-input", Input).focus()
        await pilot.press(*"I will cooperate", "enter")
        await turn("play")  # the move's prompt carries the message just sent
        assert 'You: "I will cooperate"' in live.turns[0].request.messages[-1]["content"]
        await pilot.press("0", "enter")
        await asyncio.wait_for(live.wait_finished(), 300)
        match_id = live.session.match_id
    decisions = {(d.phase, d.seat): d for d in app.store.decisions(match_id)}
    assert set(decisions) == {("talk", 0), ("play", 0), ("play", 1)}  # the strategy is silent
    said = decisions[("talk", 0)]
    assert said.agent == "human" and said.parsed == {"message": "I will cooperate", "to": None}


# ----------------------------------------------------------------- the shipped study
STUDY = Path(__file__).resolve().parent.parent / "data" / "studies" / "talk-offline.toml"


def visible_to(parsed: dict[str, Any], sender: int, seat: int) -> bool:
    return parsed["to"] is None or seat in (sender, parsed["to"] - 1)


def test_the_offline_study_stores_each_message_and_shows_it_to_its_recipients(tmp_path: Path) -> None:
    """talk-offline.toml as shipped, its embedded model swapped for the loopback server:
    every message is a stored decision of phase talk, read in the next prompt (the move's)
    by exactly its recipients, and the report's talk section sets talk against none."""
    from coop_tui.analysis.sections.talk import build

    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as srv:
        text = STUDY.read_text().replace(
            'model = "local/smollm2"',
            f'model = "openai/loopback"\napi_base = "{srv.url}"\napi_key_env = "TALK_KEY"')
        path = tmp_path / "study.toml"
        path.write_text(text)
        summary = run(path, tmp_path / "study.db")
    assert summary.matches_done == summary.matches_total == 7 and summary.invalid == 0
    decisions = rows(tmp_path / "study.db", """
        select d.match_id, d.round, d.phase, d.seat, d.parsed, coalesce(t.text, d.prompt)
        from decisions d left join texts t on t.hash = d.prompt_hash""")
    talk = [d for d in decisions if d[2] == "talk"]
    # one-shot PD 2, repeated PD 2 rounds x 2, public goods public 3 and private 3
    assert len(talk) == 2 + 4 + 3 + 3
    for match, rnd, _phase, sender, parsed, _prompt in talk:
        message = json.loads(parsed)
        plays = [d for d in decisions if d[0] == match and d[1] == rnd and d[2] == "play"]
        assert plays
        for _m, _r, _p, seat, _parsed, prompt in plays:
            assert (message["message"] in prompt) == visible_to(message, sender, seat)
    conditions = build(Store(tmp_path / "study.db"), summary.run_id, {})["conditions"]
    assert sorted((c["game"], c["talk"]) for c in conditions) == [
        ("prisoners", "none"), ("prisoners", "none"), ("prisoners", "public"),
        ("prisoners", "public"), ("public_good", "none"), ("public_good", "private"),
        ("public_good", "public")]


@pytest.mark.slow
def test_the_embedded_model_talks_within_its_bound_and_the_other_reads_it(tmp_path: Path) -> None:
    """One small end-to-end run on local/smollm2: the grammar keeps each message a JSON
    object within talk_chars, and the co-player's move prompt carries it."""
    path = tmp_path / "local.toml"
    path.write_text("""
name = "local-talk"
seed = 3
[agents.local]
model = "local/smollm2"
style = "direct"
seed = 5
[[experiments]]
game = "prisoners"
agents = ["local"]
talk = "public"
talk_chars = 60
""")
    db = tmp_path / "local.db"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-m", "coop_tui.cli", "--batch", str(path), "--db",
                             str(db)], capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr + result.stdout
    decisions = rows(db, "select d.phase, d.seat, d.parsed, d.constrained, coalesce(t.text, d.prompt) "
                     "from decisions d left join texts t on t.hash = d.prompt_hash")
    talk = {seat: json.loads(parsed)["message"] for phase, seat, parsed, constrained, _ in decisions
            if phase == "talk" and constrained == 1}
    assert set(talk) == {0, 1} and all(0 < len(m) <= 60 for m in talk.values())
    for phase, seat, _parsed, _c, prompt in decisions:
        if phase == "play":
            shown = " ".join(m["content"] for m in json.loads(prompt))
            assert f'The other player: "{talk[1 - seat]}"' in shown


def test_talk_under_a_papers_protocol_exits_2_naming_the_field_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(sweep_text("http://127.0.0.1:9", 'game = "prisoners"\ntalk = "public"\n'
                               'prompt_protocol = "strategic_personalities"'))
    db = tmp_path / "never.db"
    out = cli("--batch", str(path), "--db", str(db))
    assert out.returncode == 2
    assert "experiments[0].talk" in out.stderr and 'prompt_protocol = "coop_tui"' in out.stderr
    assert not db.exists()


def judged_or_played(body: dict[str, Any]) -> str:
    """The players as :func:`betrayer`; the judge (model "judge") finds a promise in the
    greeting and none in "I will cooperate": the opposite of the phrase rule, so the
    section shows which one it counted."""
    if body.get("model") != "judge":
        return betrayer(body)
    text = json.dumps(body["messages"])
    promise = 0.9 if "Hello there" in text else 0.1
    return json.dumps({"promise_cooperate": promise, "propose_cooperate": 0.0,
                       "announce_defect": 0.0, "threat": 0.0, "no_commitment": 0.0})


def test_a_promises_judgement_replaces_the_phrase_rule(tmp_path: Path) -> None:
    from coop_tui.analysis.sections.talk import build

    with LoopbackServer(latency=0.0, chunks=2, answer=judged_or_played) as srv:
        path = tmp_path / "s.toml"
        path.write_text(sweep_text(srv.url, 'game = "prisoners"\nsamples = 2\ntalk = "public"')
                        + f'\n[agents.judge]\nmodel = "openai/judge"\napi_base = "{srv.url}"\n'
                        'api_key_env = "TALK_KEY"\n')
        db = tmp_path / "j.db"
        made = cli("--batch", str(path), "--db", str(db))
        assert made.returncode == 0, made.stderr
        # no --phase: the rubric reads the talk messages by itself
        judged = cli("judge", "--judge", "judge", "--agents", str(path), "--rubric", "promises",
                     "--db", str(db), "--yes")
        assert judged.returncode == 0, judged.stdout + judged.stderr
    assert rows(db, "select d.phase, count(*) from judgements j join decisions d "
                "on d.id = j.judged_decision_id group by 1") == [("talk", 4)]
    run_id = rows(db, "select id from runs where kind = 'sweep'")[0][0]
    (row,) = build(Store(db), run_id, {})["conditions"]
    # the judge's promises: Player 2's greetings, each followed by cooperation
    assert (row["promises"], row["kept"], row["promise_source"]) == (2, 2, "judge")
