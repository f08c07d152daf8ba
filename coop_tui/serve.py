"""``coop-tui serve``: the TUI in a web browser, through textual-serve.

Every browser tab that opens the page starts its own ``coop-tui`` process on the same
database (textual-serve runs the command per websocket session and streams its screen
to xterm.js). It listens on 127.0.0.1 unless ``--host`` says otherwise: anyone who can
reach the page can start runs that spend API credit, so binding elsewhere prints a
warning.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from coop_tui.errors import fail

INSTALL_HINT = "textual-serve is not installed; install the serve extra: pip install 'coop-tui[serve]'"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def app_command(db: Path) -> str:
    """The shell command textual-serve runs for each browser session."""
    return shlex.join([sys.executable, "-m", "coop_tui.cli", "--db", str(db)])


def serve_command(db: Path, *, host: str, port: int) -> int:
    if not 0 < port < 65536:
        return fail(f"--port: {port} is not a TCP port; give 1-65535")
    try:
        from textual_serve.server import Server
    except ImportError:
        return fail(INSTALL_HINT)
    if host not in LOOPBACK:
        print(
            f"coop-tui: warning: serving on {host}: anyone who can reach port {port} can use "
            "the TUI, start runs and spend the API credit of the keys in this environment",
            file=sys.stderr,
        )

    class CoopServer(Server):  # type: ignore[misc]
        """textual-serve's server, saying when a browser session starts and ends."""

        async def handle_websocket(self, request: Any) -> Any:
            peer = request.remote or "?"
            print(f"session started ({peer})", flush=True)
            try:
                return await super().handle_websocket(request)
            finally:
                print(f"session ended ({peer})", flush=True)

    server = CoopServer(app_command(db), host=host, port=port, title="coop-tui")
    server.serve()
    return 0
