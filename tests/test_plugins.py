"""Plugins: agent classes named in a sweep, entry points of installed packages, and a real
plugin wheel installed in a fresh virtual environment.

The in-process tests write their stand-in modules and package metadata into a temporary
folder put on ``sys.path``, so ``importlib.metadata`` finds them exactly as it finds an
installed package; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import textwrap
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from coop_tui import plugins
from coop_tui.agents import custom
from coop_tui.cli import main
from coop_tui.errors import SpecError
from coop_tui.session import agent_entry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "data" / "example_plugin"

SWEEP = """
name = "plug"
[agents.mine]
{line}
[agents.tft]
strategy = "tit_for_tat"
[[experiments]]
game = "prisoners"
matchup = "cross"
agents = ["mine", "tft"]
mechanism = "repetition"
rounds = 3
"""

AGENT_MODULE = '''
import json


class Streamer:
    """Cooperates with probability ``p``; streams its play answer in pieces."""

    def __init__(self, p=1.0):
        self.p = p
        self.seen = []

    async def decide(self, request):
        self.seen.append(request.phase)
        if request.phase != "play":
            yield "no opinion"
            return
        text = json.dumps({request.labels[0]: round(100 * self.p),
                           request.labels[1]: 100 - round(100 * self.p)})
        for i in range(0, len(text), 4):
            yield text[i:i + 4]


class NoDecide:
    """Has no decide method."""


class Endless:
    """Streams without end."""

    async def decide(self, request):
        while True:
            yield "x" * 1000
'''


def write_module(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")


def batch(tmp_path: Path, line: str) -> tuple[int, Path]:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(SWEEP.format(line=line), encoding="utf-8")
    db = tmp_path / "run.db"
    return main(["--batch", str(sweep), "--db", str(db), "-y"]), db


# ------------------------------------------------------------------ agent = "module:Class"
def test_an_agent_class_plays_a_sweep_with_its_params(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, "plugtest_streamer", AGENT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, db = batch(tmp_path, 'agent = "plugtest_streamer:Streamer"\nparams = { p = 0.25 }')
    assert code == 0
    rows = sqlite3.connect(db).execute(
        "select response, valid, distribution from decisions where agent = 'mine' "
        "and phase = 'play'").fetchall()
    assert len(rows) == 12  # 3 rounds: both seats against itself, one against tft each way
    # the streamed pieces were joined, parsed like a model's answer, and params reached it
    assert {r[0] for r in rows} == {'{"A0": 25, "A1": 75}'}
    assert all(r[1] == 1 and json.loads(r[2]) == [0.25, 0.75] for r in rows)
    spec = sqlite3.connect(db).execute("select agent_spec, agent_kind from seats where agent = 'mine'").fetchone()
    assert json.loads(spec[0])["agent"] == "plugtest_streamer:Streamer" and spec[1] == "custom"


def test_an_agent_streaming_without_end_fails_its_match_and_stores_none_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, "plugtest_endless", AGENT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, db = batch(tmp_path, 'agent = "plugtest_endless:Endless"\nmax_answer_chars = 5000')
    assert code != 0
    con = sqlite3.connect(db)
    errors = [r[0] for r in con.execute("select error from matches where status = 'failed'")]
    assert errors and all("passed 5,000 characters" in e for e in errors), errors
    longest = con.execute("select max(length(response)) from decisions").fetchone()[0]
    assert (longest or 0) < 5000


@pytest.mark.parametrize(("line", "field", "says"), [
    ('strategy = "plugtest_streamer:Streamer"', "agents.mine.strategy",
     "agent = 'plugtest_streamer:Streamer'"),
    ('agent = "plugtest_missing_mod:Streamer"', "agents.mine.agent", "No module named"),
    ('agent = "plugtest_streamer:Nothing"', "agents.mine.agent", "has no 'Nothing'"),
    ('agent = "plugtest_streamer:NoDecide"', "agents.mine.agent", "no decide(request) method"),
    ('agent = "plugtest_streamer:Streamer"\nparams = { q = 1 }', "agents.mine.params", "'q'"),
    ('agent = "no_such_plugin_agent"', "agents.mine.agent", "no plugin agent is installed"),
])
def test_a_bad_agent_reference_exits_2_naming_the_field(
        line: str, field: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_module(tmp_path, "plugtest_streamer", AGENT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, db = batch(tmp_path, line)
    err = capsys.readouterr().err
    assert code == 2
    assert f"{field}:" in err and says in err, err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_the_setup_screen_reads_an_agent_class_or_a_plugin_agent_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert agent_entry("mypkg.agents:Smart") == {"agent": "mypkg.agents:Smart"}
    assert agent_entry("local:model.gguf") == {"model": "local:model.gguf"}
    monkeypatch.setitem(custom._REGISTRY, "plug_named", type("X", (), {"decide": None}))
    assert agent_entry("plug_named") == {"agent": "plug_named"}
    with pytest.raises(SpecError, match="agent class"):
        agent_entry("nothing_like_this")


# ------------------------------------------------------------------ entry points
def fake_dist(site: Path, dist: str, group: str, entries: dict[str, str]) -> None:
    """A package's metadata as pip writes it, found on ``sys.path`` like an installed one."""
    info = site / f"{dist.replace('-', '_')}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2\n",
                                   encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}", encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_broken_plugin_is_one_warning_and_the_others_load(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = "coop_tui.tests_broken"
    write_module(site, "plugtest_fine", "LOADED = True\n")
    write_module(site, "plugtest_broken", "raise RuntimeError('needs a missing setting')\n")
    fake_dist(site, "fine-plugin", group, {"fine": "plugtest_fine"})
    fake_dist(site, "broken-plugin", group, {"broken": "plugtest_broken"})
    monkeypatch.setenv(plugins.LOAD_ENV, "fine-plugin,broken-plugin")
    with pytest.warns(plugins.PluginWarning) as caught:
        loaded = plugins.load_entry_points(group)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "broken-plugin" in message and "RuntimeError: needs a missing setting" in message
    shown = warnings.formatwarning(caught[0].message, plugins.PluginWarning, __file__, 1)
    assert shown == f"coop-tui: warning: {message}\n"  # one line, no source line of ours
    assert [ep.name for ep, _ in loaded] == ["fine"]
    records = {r.name: r for r in plugins.plugin_records() if r.group == group}
    assert records["fine"].error is None and records["fine"].version == "1.2"
    assert records["broken"].dist == "broken-plugin"
    assert records["broken"].error == "RuntimeError: needs a missing setting"


def test_only_the_plugins_named_in_the_variable_load(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = "coop_tui.tests_named"
    write_module(site, "plugtest_a", "LOADED = True\n")
    write_module(site, "plugtest_b", "raise SystemError('must not be imported')\n")
    fake_dist(site, "plugin-a", group, {"a": "plugtest_a"})
    fake_dist(site, "plugin-b", group, {"b": "plugtest_b"})
    monkeypatch.setenv(plugins.LOAD_ENV, " Plugin-A ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = plugins.load_entry_points(group)
    assert [ep.name for ep, _ in loaded] == ["a"]
    records = {r.name: r for r in plugins.plugin_records() if r.group == group}
    assert records["b"].error == plugins.NOT_ASKED


def test_a_plugin_taking_a_shipped_name_is_refused_and_the_shipped_one_stays(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coop_tui.agents.strategies import strategy_class

    group = "coop_tui.tests_taken"
    write_module(site, "plugtest_taken", '''
        from coop_tui.agents.strategies import Strategy, register


        @register
        class Impostor(Strategy):
            """Always defects while claiming to be tit for tat."""

            name = "tit_for_tat"
            classifier = {"memory_depth": 0, "stochastic": False}
        ''')
    fake_dist(site, "impostor-plugin", group, {"impostor": "plugtest_taken"})
    monkeypatch.setenv(plugins.LOAD_ENV, "impostor-plugin")
    with pytest.warns(plugins.PluginWarning, match="impostor-plugin.*'tit_for_tat' is used by"):
        plugins.load_entry_points(group)
    assert strategy_class("tit_for_tat").__module__ != "plugtest_taken"


def test_a_second_thread_asking_meanwhile_waits_for_the_whole_group(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The setup screen fills its form from a worker thread while the screen may ask a
    registry: the second caller must not see a group half loaded."""
    group = "coop_tui.tests_threads"
    write_module(site, "plugtest_gate", "import threading\nentered = threading.Event()\n"
                 "go = threading.Event()\n")
    write_module(site, "plugtest_slow", "import plugtest_gate\nplugtest_gate.entered.set()\n"
                 "plugtest_gate.go.wait()\n")
    fake_dist(site, "slow-plugin", group, {"slow": "plugtest_slow"})
    monkeypatch.setenv(plugins.LOAD_ENV, "slow-plugin")
    import plugtest_gate  # type: ignore[import-not-found]

    seen: list[list[str | None]] = []
    calling = threading.Event()

    def second() -> None:
        calling.set()
        plugins.load_entry_points(group)
        seen.append([r.error for r in plugins.plugin_records() if r.group == group])

    first = threading.Thread(target=plugins.load_entry_points, args=(group,))
    first.start()
    plugtest_gate.entered.wait()
    other = threading.Thread(target=second)
    other.start()
    calling.wait()
    plugtest_gate.go.set()
    first.join()
    other.join()
    assert seen == [[None]]  # it returned only once the entry point had loaded


def test_a_plugins_hostile_names_and_errors_are_shown_not_obeyed(
        site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from coop_tui.listing import list_command

    group = "coop_tui.tests_hostile"
    write_module(site, "plugtest_hostile", "raise ValueError('\\x1b]0;owned\\x07\\x1b[2J')\n")
    fake_dist(site, "hostile-plugin", group, {"hostile": "plugtest_hostile"})
    monkeypatch.setenv(plugins.LOAD_ENV, "hostile-plugin")
    with pytest.warns(plugins.PluginWarning) as caught:
        plugins.load_entry_points(group)
    assert "\x1b" not in str(caught[0].message) and "\\x1b]0;owned" in str(caught[0].message)
    evil = type("Evil", (), {"__doc__": "\x1b[31mred\x1b[0m agent", "decide": lambda s, r: ""})
    monkeypatch.setitem(custom._REGISTRY, "evil\x1b[2J", evil)
    assert list_command("agents", site / "none.db") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil\\x1b[2J" in out


def test_under_the_suite_no_entry_point_loads_unless_asked(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = "coop_tui.tests_guard"
    write_module(site, "plugtest_guarded", "raise SystemError('must not be imported')\n")
    fake_dist(site, "guarded-plugin", group, {"g": "plugtest_guarded"})
    monkeypatch.delenv(plugins.LOAD_ENV)
    assert getattr(sys, plugins.TEST_FLAG)  # set by conftest.py
    assert plugins.load_entry_points(group) == []
    assert [r.error for r in plugins.plugin_records() if r.group == group] == [plugins.NOT_ASKED]


# ------------------------------------------------------------------ a real wheel
def pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding only the example plugin's wheel; coop-tui and
    its dependencies come from this environment through a path file."""
    src = tmp_path_factory.mktemp("plugin-src")
    shutil.copytree(EXAMPLE, src, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    dist = tmp_path_factory.mktemp("plugin-dist")
    pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet", "-w", str(dist),
        str(src))
    (wheel,) = dist.glob("coop_tui_example-0.3.1-*.whl")
    env = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (Path(purelib) / "_coop_tui_parent.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in sorted(ours)), encoding="utf-8")
    pip("--python", str(python), "install", "--no-index", "--no-deps", "--quiet", str(wheel))
    return env


def in_venv(venv: Path, cwd: Path, *args: str, load: str = "coop-tui-example",
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, plugins.LOAD_ENV: load, "COOP_TUI_DB": str(cwd / "default.db")}
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def cli(venv: Path, cwd: Path, *args: str, load: str = "coop-tui-example") -> Any:
    done = in_venv(venv, cwd, "-c", "import sys; from coop_tui.cli import main; "
                   "sys.exit(main(sys.argv[1:]))", *args, load=load)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout) if "--json" in args else done.stdout


PILOT = r"""
import asyncio, json, sys
from pathlib import Path
from typing import Any
from textual.widgets import Select, Static
from coop_tui.app import CoopApp
from coop_tui.screens.live import LiveScreen


async def play():
    app = CoopApp(Path(sys.argv[1]), sweep_dir=Path(sys.argv[2]))
    async with app.run_test(size=(160, 48)) as pilot:
        setup = app.screen
        await setup.wait_ready()
        games = [value for _, value in setup.query_one("#game", Select)._options]
        listed = str(setup.query_one("#plugin-agents", Static).render())
        setup.query_one("#game", Select).value = "snowdrift_example"
        setup.query_one("#mechanism", Select).value = "none"
        for _ in range(3000):
            if setup._built_mechanism == "none":
                break
            await pilot.pause(0.02)
        inputs = list(setup.query("#seats Input"))
        inputs[0].value, inputs[1].value = "kind_example", "alternate_example"
        await setup.wait_ready()
        setup.action_start()
        for _ in range(6000):
            if isinstance(app.screen, LiveScreen):
                break
            await pilot.pause(0.02)
        live = app.screen
        await asyncio.wait_for(live.wait_finished(), 300)
        match_id = live.session.match_id
        rows = [(d.agent, d.response) for d in app.store.decisions(match_id) if d.phase == "play"]
    print(json.dumps({"games": games, "listed": listed, "decisions": rows}))

asyncio.run(play())
"""


@pytest.mark.slow
def test_an_installed_plugin_wheel_extends_every_registry(venv: Path, tmp_path: Path) -> None:
    games = cli(venv, tmp_path, "list", "games", "--json")
    assert "snowdrift_example" in {g["key"] for g in games}
    strategies = cli(venv, tmp_path, "list", "strategies", "--json")
    assert "alternate_example" in {s["name"] for s in strategies}
    agents = cli(venv, tmp_path, "list", "agents", "--json")
    assert agents == [{"name": "kind_example", "class": "coop_tui_example:KindAgent",
                       "what_it_does": "Always cooperates and streams its answer in two "
                                       "pieces (the example plugin)."}]
    listed = cli(venv, tmp_path, "list", "plugins", "--json")
    assert {(p["group"], p["name"], p["dist"], p["version"], p["error"]) for p in listed} == {
        (g, "example", "coop-tui-example", "0.3.1", "")
        for g in ("coop_tui.games", "coop_tui.strategies", "coop_tui.agents",
                  "coop_tui.report_sections")}
    # the variable that names no plugin leaves it out, and the listing says why
    refused = cli(venv, tmp_path, "list", "plugins", "--json", load="")
    assert {p["error"] for p in refused} == {plugins.NOT_ASKED}
    assert "snowdrift_example" not in {
        g["key"] for g in cli(venv, tmp_path, "list", "games", "--json", load="")}

    # its agent plays a sweep on its game against its strategy; its section shows
    (tmp_path / "sweep.toml").write_text(textwrap.dedent("""
        name = "plugin-sweep"
        [agents.kind]
        agent = "kind_example"
        [agents.alt]
        strategy = "alternate_example"
        [[experiments]]
        game = "snowdrift_example"
        matchup = "cross"
        agents = ["kind", "alt"]
        mechanism = "repetition"
        rounds = 2
        """), encoding="utf-8")
    db = str(tmp_path / "p.db")
    cli(venv, tmp_path, "--batch", "sweep.toml", "--db", db, "-y")
    report = cli(venv, tmp_path, "report", "--json", "--db", db)
    assert report["counts"]["matches_failed"] == 0
    assert report["example_section"] == {"matches": report["counts"]["matches"]}
    assert "the example plugin counted" in cli(venv, tmp_path, "report", "--db", db)
    rows = sqlite3.connect(db).execute(
        "select distinct response from decisions where agent = 'kind' and phase = 'play'")
    assert [r[0] for r in rows] == ['{"A0": 100, "A1": 0}']

    # and a TUI match: the setup screen lists the plugin's game and agent, which then play
    pilot = in_venv(venv, tmp_path, "-c", PILOT, str(tmp_path / "tui.db"), str(tmp_path))
    assert pilot.returncode == 0, pilot.stderr[-3000:]
    shown = json.loads(pilot.stdout.strip().splitlines()[-1])
    assert "snowdrift_example" in shown["games"]
    assert "kind_example" in shown["listed"]
    assert {agent for agent, _ in shown["decisions"]} == {"kind_example", "alternate_example"}
    assert all(text == '{"A0": 100, "A1": 0}' for agent, text in shown["decisions"]
               if agent == "kind_example")


# ------------------------------------------------------------------ the setup screen
class ListedAgent:
    """Answers every request with the first action (a stand-in plugin agent)."""

    async def decide(self, request: Any) -> str:
        return custom.play_answer(request, [1.0])


@pytest.mark.slow
async def test_the_setup_screen_lists_plugin_agents_and_games(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What installed plugins registered (the same registries the entry points fill)
    shows in the setup form: the game among the games, the agent under the seats and in
    the seat's completions; a plugin agent typed into a seat plays the match."""
    from textual.widgets import Select, Static

    from coop_tui import games
    from coop_tui.app import CoopApp
    from coop_tui.screens.live import LiveScreen

    family = games.game_family("prisoners")
    monkeypatch.setitem(games._REGISTRY, "plug_listed_game",
                        games.GameFamily("plug_listed_game", family.factory, family.defaults))
    monkeypatch.setitem(custom._REGISTRY, "plug_listed_agent", ListedAgent)
    app = CoopApp(tmp_path / "t.db", sweep_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        setup = app.screen
        await setup.wait_ready()
        options = [value for _, value in setup.query_one("#game", Select)._options]
        assert "plug_listed_game" in options
        assert "plug_listed_agent" in str(setup.query_one("#plugin-agents", Static).render())
        assert await setup.suggester.get_suggestion("plug_list") == "plug_listed_agent"
        setup.query_one("#game", Select).value = "plug_listed_game"
        setup.query_one("#mechanism", Select).value = "none"
        for _ in range(3000):  # a hang guard, not a timing check
            if setup._built_mechanism == "none":
                break
            await pilot.pause(0.02)
        for field in setup.query("#seats Input"):
            field.value = "plug_listed_agent"
        await setup.wait_ready()
        assert setup.error is None
        setup.action_start()
        for _ in range(6000):
            if isinstance(app.screen, LiveScreen):
                break
            await pilot.pause(0.02)
        live = app.screen
        assert isinstance(live, LiveScreen)
        await live.wait_finished()
        played = [(d.agent, d.response) for d in app.store.decisions(live.session.match_id)]
    assert played == [("plug_listed_agent", '{"A0": 100, "A1": 0}')] * 2
