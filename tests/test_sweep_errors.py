"""Bad sweep files: one line naming the field and the fix, exit code 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GOOD_AGENTS = """
name = "bad"
[agents.tft]
strategy = "tit_for_tat"
[agents.alld]
strategy = "always_defect"
"""


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


CASES = {
    "unknown game": (
        GOOD_AGENTS + '[[experiments]]\ngame = "prisonersx"\nagents = ["tft"]\n',
        "experiments[0].game",
        "prisoners",
    ),
    "unknown mechanism": (
        GOOD_AGENTS + '[[experiments]]\ngame = "prisoners"\nmechanism = "simlarity"\nagents = ["tft"]\n',
        "experiments[0].mechanism",
        "similarity",
    ),
    "unknown agent": (
        GOOD_AGENTS + '[[experiments]]\ngame = "prisoners"\nagents = ["gpt"]\n',
        "experiments[0].agents",
        "gpt",
    ),
    "unknown strategy": (
        'name = "bad"\n[agents.x]\nstrategy = "tit_for_tatt"\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["x"]\n',
        "agents.x.strategy",
        "tit_for_tat",
    ),
    "similarity above 100": (
        GOOD_AGENTS
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["tft"]\nsimilarity = [0, 150]\n',
        "similarity",
        "0",
    ),
    "continuation outside (0,1]": (
        GOOD_AGENTS
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "repetition"\nagents = ["tft"]\ncontinuation = 1.5\n',
        "continuation",
        "(0, 1]",
    ),
    "samples of the wrong type": (
        'name = "bad"\nsamples = "ten"\n[agents.tft]\nstrategy = "tit_for_tat"\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["tft"]\n',
        "samples",
        "integer",
    ),
    "broken toml": (
        'name = "bad\n[agents.tft]\n',
        "TOML",
        "",
    ),
    "random p outside [0,1]": (
        'name = "bad"\n[agents.coin]\nstrategy = "random"\nparams = { p = 1.5 }\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["coin"]\n',
        "agents.coin",
        "1.5",
    ),
    "payoff table of the wrong shape": (
        GOOD_AGENTS + '[[experiments]]\ngame = "wrong_shape.toml"\nagents = ["tft"]\n',
        "payoffs",
        "",
    ),
    "missing api key": (
        'name = "bad"\n[agents.gpt]\nmodel = "openai/gpt-4o-mini"\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["gpt"]\n',
        "OPENAI_API_KEY",
        "agents.gpt",
    ),
    "a grid value listed twice": (
        GOOD_AGENTS
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["tft"]\nsimilarity = [50, 50]\n',
        "experiments[0]",
        "listed twice",
    ),
    "an empty game list": (
        GOOD_AGENTS + '[[experiments]]\ngame = []\nagents = ["tft"]\n',
        "experiments[0].game",
        "empty",
    ),
    "a strategy that cannot play the game": (
        'name = "bad"\n[agents.m]\nstrategy = "mixed"\nparams = { probs = [0.2, 0.3, 0.5] }\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["m"]\n',
        "agents.m",
        "cannot play prisoners",
    ),
    "a missing benchmark catalogue": (
        GOOD_AGENTS
        + '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["tft"]\n'
        'similarity = 50\nprompt = "benchmark"\nbenchmarks_file = "/nonexistent/catalogue.toml"\n',
        "experiments[0]",
        "benchmark catalogue",
    ),
    "unknown experiment field": (
        GOOD_AGENTS + '[[experiments]]\ngame = "prisoners"\nagents = ["tft"]\nrounds = 3\n',
        "experiments[0].rounds",
        "not a parameter",
    ),
}

WRONG_SHAPE_GAME = """
title = "Broken"
players = 2
actions = ["Cooperate", "Defect"]
cooperative = ["Cooperate"]
defect = "Defect"
payoffs = [[[2, 2], [0, 3]], [[3, 0]]]
"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_sweep_exits_2_names_field_and_writes_nothing(case: str, tmp_path: Path) -> None:
    text, field, hint = CASES[case]
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(textwrap.dedent(text))
    (tmp_path / "wrong_shape.toml").write_text(WRONG_SHAPE_GAME)
    db = tmp_path / "out.db"
    import os

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = run_cli("--batch", str(sweep), "--db", str(db), env=env)
    assert result.returncode == 2, result.stderr + result.stdout
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert field in lines[0]
    assert hint in lines[0]
    assert not db.exists()


def test_missing_sweep_file(tmp_path: Path) -> None:
    result = run_cli("--batch", str(tmp_path / "nope.toml"), "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_api_key_from_a_dotenv_file_in_the_working_directory(tmp_path: Path) -> None:
    import os

    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'name = "dotenv"\n[agents.gpt]\nmodel = "openai/gpt-4o-mini"\n'
        '[[experiments]]\ngame = "prisoners"\nagents = ["gpt"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    without = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--dry-run"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert without.returncode == 0, without.stderr  # a dry run needs no key: it says so
    assert "OPENAI_API_KEY: missing (agents: gpt)" in without.stdout
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    with_file = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--batch", str(sweep), "--dry-run"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert with_file.returncode == 0, with_file.stderr
    assert "1 matches" in with_file.stdout and "OPENAI_API_KEY: set (agents: gpt)" in with_file.stdout
    assert "sk-from-dotenv" not in with_file.stdout + with_file.stderr


# ----------------------------------------------------------------- preflight: dead servers
def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _llm_sweep(path: Path, agent: str) -> Path:
    path.write_text('name = "dead"\n' + agent + '\n[[experiments]]\ngame = "prisoners"\n'
                    'agents = ["m"]\nsamples = 3\n')
    return path


def test_a_dead_endpoint_is_named_before_any_match_and_nothing_is_written(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    sweep = _llm_sweep(tmp_path / "s.toml", f'[agents.m]\nmodel = "openai/x"\napi_base = "{url}"\n')
    db = tmp_path / "out.db"
    result = run_cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 2, result.stderr + result.stdout
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "agents.m.api_base" in lines[0] and "agent 'm'" in lines[0]
    assert url in lines[0] and "connection refused" in lines[0]
    assert not db.exists()
    # a dry run probes too, and says so, but its estimate stands: a warning, exit 0
    dry = run_cli("--batch", str(sweep), "--db", str(db), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "0 of 1 answered the preflight" in dry.stdout
    assert "a run would stop here" in dry.stdout and "connection refused" in dry.stdout
    assert not db.exists()


def test_a_litellm_routed_ollama_agent_is_probed_at_its_default_server(tmp_path: Path) -> None:
    import os

    # the superadditive study's agents: ollama/... with no api_base (litellm's default server)
    base = f"http://127.0.0.1:{_closed_port()}"
    sweep = _llm_sweep(tmp_path / "s.toml", '[agents.m]\nmodel = "ollama/qwen3:14b"\n')
    db = tmp_path / "out.db"
    result = run_cli("--batch", str(sweep), "--db", str(db),
                     env={**os.environ, "OLLAMA_API_BASE": base})
    assert result.returncode == 2, result.stderr + result.stdout
    assert "agents.m.model" in result.stderr and base in result.stderr
    assert "connection refused" in result.stderr and "ollama serve" in result.stderr
    assert not db.exists()


def test_one_dead_server_of_several_is_a_warning_and_the_sweep_runs(tmp_path: Path) -> None:
    from coop_tui.testing.server import LoopbackServer

    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    with LoopbackServer(latency=0.01, chunks=2, answer='ok {"A0": 60, "A1": 40}') as srv:
        sweep = _llm_sweep(tmp_path / "s.toml", f'[agents.m]\nmodel = "openai/loopback"\n'
                                                f'api_base = ["{srv.url}", "{dead}"]\n')
        result = run_cli("--batch", str(sweep), "--db", str(tmp_path / "out.db"))
        probes = [r for r in srv.requests if r.path.endswith("/models")]
    assert result.returncode == 0, result.stderr + result.stdout
    assert "did not answer" in result.stdout and dead in result.stdout
    assert "1 of 2 answered the preflight" in result.stdout
    assert len(probes) == 1  # one probe per distinct endpoint, not per match


def test_hosted_providers_without_api_base_are_not_probed(tmp_path: Path) -> None:
    import os

    sweep = _llm_sweep(tmp_path / "s.toml", '[agents.m]\nmodel = "anthropic/claude-x"\n')
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-0000", "HTTPS_PROXY": "http://127.0.0.1:9"}
    result = run_cli("--batch", str(sweep), "--db", str(tmp_path / "o.db"), "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "preflight" not in result.stdout
