"""Credentials never reach the database (nor its WAL), exports, the terminal or the TUI.

Each case runs the real CLI against the loopback server, then greps every place a secret
could leak: the SQLite file and its -wal, CSV and Parquet exports, stdout/stderr of
``--batch``, ``report``, ``report --json`` and ``export``, and the text of the TUI's runs
and decisions screens (App.run_test).
"""

from __future__ import annotations

import asyncio
import base64
import html
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_tui.testing.server import LoopbackServer

PASSWORD = "pw-SECRET-7319"
KEY = "sk-SECRET-KEY-55821"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", *args], capture_output=True, text=True,
        timeout=300, env=full,
    )


def sweep_file(path: Path, agent: str) -> Path:
    path.write_text(
        f'name = "secret"\nseed = 1\nsamples = 1\nmax_attempts = 1\n{agent}\n'
        '[[experiments]]\ngame = "prisoners"\nmechanism = "similarity"\nagents = ["m"]\n'
        "similarity = [0, 100]\n"
    )
    return path


def forms(secret: str) -> list[str]:
    """The secret as typed and as HTTP Basic auth encodes it."""
    out = [secret]
    for user in ("alice", ""):
        raw = f"{user}:{secret}".encode()
        out.append(base64.b64encode(raw).decode().rstrip("="))
    return out


def leaks(blob: str | bytes, secret: str) -> list[str]:
    data = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    return [f for f in forms(secret) if f in data]


def db_blob(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + suffix).read_bytes()
        for suffix in ("", "-wal", "-shm") if Path(str(db) + suffix).exists()
    )


async def tui_text(db: Path) -> str:
    """Everything the runs screen and the first match's decisions screen show."""
    from coop_tui.app import CoopApp
    from coop_tui.screens.runs import DecisionsScreen, RunsScreen
    from coop_tui.store import Store

    class RunsApp(CoopApp):
        def on_mount(self, event: Any) -> None:
            event.prevent_default()
            self.push_screen(RunsScreen(self.store))

    def svg_text(app: Any) -> str:
        svg = app.export_screenshot()
        return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")

    app = RunsApp(db)
    texts = []
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.screen
        for _ in range(200):
            if screen.loaded >= 1 and screen.matches_loaded >= 1:
                break
            await pilot.pause(0.05)
        texts.append(svg_text(app))
        match_id = next(iter(screen.match_rows), None)
        if match_id is not None:
            store = Store(db)
            decisions = DecisionsScreen(store, match_id)
            await app.push_screen(decisions)
            for _ in range(400):  # until its rows are on screen; a hang guard, not a timing check
                if decisions.loaded >= 1:
                    break
                await pilot.pause(0.05)
            await pilot.pause()
            texts.append(svg_text(app))
            store.close()
            await app.pop_screen()
            live = app.open_replay(match_id, speed=0)  # the match streamed again, as it was
            await pilot.pause()
            await asyncio.wait_for(live.wait_finished(), 300)  # a hang guard
            texts.append(svg_text(app))
    return "\n".join(texts)


def check_everywhere(tmp: Path, db: Path, secret: str, outputs: list[str]) -> None:
    assert not leaks(db_blob(db), secret), "secret in the database file or its WAL"
    for ref in ([], ["--json"]):
        rep = cli("report", "--db", str(db), *ref)
        assert rep.returncode == 0, rep.stderr
        outputs += [rep.stdout, rep.stderr]
    for fmt in ("csv", "parquet"):
        out = tmp / f"export-{fmt}"
        exp = cli("export", "--db", str(db), "--format", fmt, "--out", str(out))
        assert exp.returncode == 0, exp.stderr
        outputs += [exp.stdout, exp.stderr]
        files = list(out.iterdir())
        assert files
        for f in files:
            assert not leaks(f.read_bytes(), secret), f"secret in {f.name}"
    for text in outputs:
        assert not leaks(text, secret), text
    import asyncio

    screen = asyncio.run(tui_text(db))
    assert "secret" in screen and "Seat 1" in screen  # the runs list and the replay really show
    assert not leaks(screen, secret)


@pytest.fixture
def open_server() -> Any:
    with LoopbackServer(latency=0.01, chunks=2, answer='ok {"A0": 60, "A1": 40}') as srv:
        yield srv


def test_credentials_in_api_base_are_used_but_never_stored_or_shown(open_server: Any, tmp_path: Path) -> None:
    url = open_server.url.replace("http://", f"http://alice:{PASSWORD}@")
    sweep = sweep_file(tmp_path / "s.toml", f'[agents.m]\nmodel = "openai/loopback"\napi_base = "{url}"\n')
    db = tmp_path / "a.db"
    run = cli("--batch", str(sweep), "--db", str(db))
    assert run.returncode == 0, run.stderr + run.stdout
    chat = [r for r in open_server.requests if r.path.endswith("/chat/completions")]
    assert len(chat) == 4
    # the agent still connects with them (HTTP Basic auth from the URL's userinfo)
    sent = chat[0].headers.get("authorization", "")
    assert sent.startswith("Basic ") and base64.b64decode(sent[6:]).decode() == f"alice:{PASSWORD}"
    import sqlite3

    conn = sqlite3.connect(db)
    stored = conn.execute("select agent_spec from seats limit 1").fetchone()[0]
    conn.close()
    assert open_server.url.removeprefix("http://") in stored  # the URL kept, without userinfo
    check_everywhere(tmp_path, db, PASSWORD, [run.stdout, run.stderr])


@pytest.mark.slow
def test_a_provider_echoing_basic_auth_in_its_error_is_scrubbed(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, api_key="the-right-key", echo_key_in_errors=True) as srv:
        url = srv.url.replace("http://", f"http://alice:{PASSWORD}@")
        sweep = sweep_file(tmp_path / "s.toml", f'[agents.m]\nmodel = "openai/loopback"\napi_base = "{url}"\n')
        db = tmp_path / "a.db"
        run = cli("--batch", str(sweep), "--db", str(db))
        assert run.returncode == 1, run.stderr + run.stdout
        chat = [r for r in srv.requests if r.path.endswith("/chat/completions")]
        assert chat and all(r.fault == "401" for r in chat)
    assert "HTTP 401" in run.stdout  # the failure is grouped and explained...
    check_everywhere(tmp_path, db, PASSWORD, [run.stdout, run.stderr])  # ...without the secret


@pytest.mark.slow
def test_a_wrong_key_echoed_by_the_provider_is_scrubbed(tmp_path: Path) -> None:
    with LoopbackServer(latency=0.01, chunks=2, api_key="the-right-key", echo_key_in_errors=True) as srv:
        sweep = sweep_file(
            tmp_path / "s.toml",
            f'[agents.m]\nmodel = "openai/loopback"\napi_base = "{srv.url}"\napi_key_env = "MY_KEY"\n',
        )
        db = tmp_path / "a.db"
        run = cli("--batch", str(sweep), "--db", str(db), env={"MY_KEY": KEY})
        assert run.returncode == 1, run.stderr + run.stdout
        assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in srv.requests)
    assert "HTTP 401" in run.stdout
    check_everywhere(tmp_path, db, KEY, [run.stdout, run.stderr])


BAD_INPUT = {
    "a key pasted into api_key_env": (f'api_key_env = "{KEY}"', "api_key_env", KEY),
    "a key that looks like a name in api_key_env": ('api_key_env = "sk live SECRETVALUE99"', "api_key_env",
                                                     "SECRETVALUE99"),
    "a wrong-typed api_key": ("api_key = 55821731999", "api_key", "55821731999"),
    "a list as api_key": (f'api_key = ["{KEY}"]', "api_key", KEY),
    "an invalid port in api_base with credentials": (
        f'api_base = "http://alice:{PASSWORD}@127.0.0.1:99999/v1"', "api_base", PASSWORD),
    "a non-http api_base with credentials": (
        f'api_base = "ftp://alice:{PASSWORD}@127.0.0.1/v1"', "api_base", PASSWORD),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
@pytest.mark.slow
def test_validation_errors_never_echo_a_secret(case: str, tmp_path: Path) -> None:
    line, field, secret = BAD_INPUT[case]
    sweep = sweep_file(tmp_path / "s.toml", f'[agents.m]\nmodel = "openai/loopback"\n{line}\n')
    db = tmp_path / "a.db"
    result = cli("--batch", str(sweep), "--db", str(db))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"agents.m.{field}" in lines[0], result.stderr
    assert secret not in result.stdout + result.stderr
    assert not db.exists()


def test_scrub_masks_secrets_userinfo_and_auth_headers() -> None:
    from coop_tui.redact import register_secret, register_url, scrub, strip_userinfo

    register_url(f"http://bob:{PASSWORD}@h:1/v1")
    register_secret(KEY)
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    text = (f"HTTP 401: bad key {KEY}; got Authorization: Basic {basic} from bob:{PASSWORD}@h:1 "
            f"and http://carol:other-pass-1@x/v1, header Authorization: Bearer sk-unknown-123456")
    clean = scrub(text)
    for s in (PASSWORD, KEY, basic, "other-pass-1", "sk-unknown-123456"):
        assert s not in clean
    assert "HTTP 401" in clean and "h:1" in clean and "http://x/v1" in clean
    assert scrub("Token limit exceeded; Basic authentication failed") == (
        "Token limit exceeded; Basic authentication failed")  # words are not secrets
    assert strip_userinfo(f"http://bob:{PASSWORD}@h:1/v1") == "http://h:1/v1"
    assert strip_userinfo(["http://a:b@h/v1", "http://h2/v1"]) == ["http://h/v1", "http://h2/v1"]


def test_an_older_database_is_cleaned_when_opened(tmp_path: Path) -> None:
    """Credentials stored before redaction existed are scrubbed by a migration."""
    import json
    import sqlite3

    from coop_tui.store import Store

    db = tmp_path / "old.db"
    store = Store(db)
    url = f"http://alice:{PASSWORD}@127.0.0.1:8000/v1"
    store.create_run("r1", "old", kind="sweep", seed=0, sweep_hash="h",
                     spec={"agents": {"m": {"model": "openai/x", "api_base": url}}})
    with store.transaction():
        store.db.execute("insert into matches (id, run_id, match_key, status, error) values "
                         "('m1', 'r1', 'k', 'failed', ?)", [f"ProviderError: x at alice:{PASSWORD}@h: HTTP 401"])
        store.db.execute("insert into seats (match_id, seat, agent, agent_spec) values ('m1', 0, 'm', ?)",
                         [json.dumps({"model": "openai/x", "api_base": url})])
        store.db.execute("delete from _migrations where name = 'm031_hardening_scrub_credentials'")
    store.close()
    conn = sqlite3.connect(db)  # write the secret back as an old version would have
    with conn:
        conn.execute("update runs set spec = ?", [json.dumps({"api_base": url})])
    conn.close()
    assert leaks(db_blob(db), PASSWORD)
    Store(db).close()
    assert not leaks(db_blob(db), PASSWORD)  # no copy left in freed space either
    conn = sqlite3.connect(db)
    spec = conn.execute("select agent_spec from seats").fetchone()[0]
    conn.close()
    assert json.loads(spec)["api_base"] == "http://127.0.0.1:8000/v1"
