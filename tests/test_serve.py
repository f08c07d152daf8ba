"""`coop-tui serve`: the TUI in a real headless Chromium through textual-serve.

The server is started on a free port of 127.0.0.1; Chromium is driven over its DevTools
protocol (a websocket on 127.0.0.1). Every wait is on an event: the URL the server prints
(with its token), Chromium's "DevTools listening" line, the app's ready marker (a named pipe the
served app writes its first screen's name into once it has painted, see
``COOP_TUI_READY_FILE``) and two animation frames in the page before the screenshot. The
screenshot is kept in the test's tmp dir.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_tui.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
COOP_TUI = Path(sys.executable).parent / "coop-tui"
EVENT_TIMEOUT = 180.0
"""A bound on waits for events that normally take seconds (a busy machine is slow)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_until(stream, needle: str, seen: list[str]) -> str:
    """Lines of ``stream`` until one holds ``needle`` (returned); EOF fails the test."""
    for line in iter(stream.readline, ""):
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"stream ended before {needle!r}: {''.join(seen)[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """End a process this test started, and its children (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")
    port = _free_port()
    marker = tmp_path / "ready.fifo"
    os.mkfifo(marker)
    env = {**os.environ, "COOP_TUI_READY_FILE": str(marker), "PYTHONUNBUFFERED": "1",
           "COOP_TUI_DB": str(tmp_path / "coop.db")}
    proc = subprocess.Popen(
        [str(COOP_TUI), "serve", "--port", str(port), "--db", str(tmp_path / "coop.db")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        # the URL to open, with its token, is printed once the port listens
        url = _read_until(proc.stdout, "open http", lines).split(" ", 1)[1].strip()
        # the rest of the server's output, read as it comes (session start/end lines)
        threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                         daemon=True).start()
        yield url, marker, lines
    finally:
        _stop(proc)


async def _cdp_screenshot(ws_url: str, page_url: str, ready: threading.Event, shot: Path) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.ws_connect(ws_url, max_msg_size=0) as ws:
        ids = iter(range(1, 10_000))

        async def call(method: str, **params: object) -> dict:
            my_id = next(ids)
            await ws.send_json({"id": my_id, "method": method, "params": params})
            async for msg in ws:
                data = json.loads(msg.data)
                if data.get("id") == my_id:
                    assert "error" not in data, data
                    return data["result"]
            raise AssertionError(f"DevTools closed during {method}")

        await call("Page.enable")
        await call("Page.navigate", url=page_url)
        # the served app announces its first painted screen through the named pipe
        assert await asyncio.to_thread(ready.wait, EVENT_TIMEOUT), "the app never painted"
        # let xterm.js draw what arrived: two animation frames in the page
        await call("Runtime.evaluate", awaitPromise=True, expression=(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"))
        result = await call("Page.captureScreenshot", format="png")
        shot.write_bytes(base64.b64decode(result["data"]))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                    "(apt-get install -y chromium; .ci/run installs it)")
@pytest.mark.slow
def test_setup_screen_renders_in_headless_chromium(served: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    url, marker, server_lines = served
    screen: list[str] = []
    ready = threading.Event()

    def wait_marker() -> None:
        with open(marker) as pipe:  # blocks until the app opens the pipe to write
            screen.append(pipe.read().strip())
        ready.set()

    threading.Thread(target=wait_marker, daemon=True).start()
    profile = tmp_path / "chromium-profile"
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--window-size=1280,800",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    shot = tmp_path / "serve.png"
    try:
        line = _read_until(browser.stderr, "DevTools listening on", [])
        browser_ws = line.split("DevTools listening on", 1)[1].strip()
        host_port = browser_ws.split("/")[2]

        async def drive() -> None:
            import aiohttp

            async with aiohttp.ClientSession() as http, http.get(
                    f"http://{host_port}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t["type"] == "page")
            await _cdp_screenshot(page["webSocketDebuggerUrl"], url, ready, shot)

        asyncio.run(drive())
    finally:
        _stop(browser)
    assert screen == ["SetupScreen"]  # the served process painted the setup screen
    assert any("session started" in line for line in server_lines), server_lines
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 500 and pixels.shape[1] >= 1000  # the viewport of the window
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]).round(2), axis=0)
    assert len(colours) > 8, "the page is blank: the terminal drew nothing"


def test_bad_port_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0"]) == 2
    assert "--port" in capsys.readouterr().err


def test_binding_beyond_loopback_warns_on_stderr(tmp_path: Path) -> None:
    pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")
    port = _free_port()
    proc = subprocess.Popen(
        [str(COOP_TUI), "serve", "--host", "0.0.0.0", "--port", str(port),
         "--db", str(tmp_path / "coop.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
    )
    try:
        _read_until(proc.stdout, "open http", [])  # the warning was printed before serving
        _stop(proc)
        assert "warning: serving on 0.0.0.0" in proc.stderr.read()
    finally:
        _stop(proc)


def test_without_textual_serve_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "textual_serve", None)
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["serve"]) == 2
    assert "pip install 'coop-tui[serve]'" in capsys.readouterr().err
