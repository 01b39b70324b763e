"""`kimi web`: the agent in a browser tab, served from this machine.

Needs the optional `web` extra (Starlette + uvicorn); only `kimi web` imports this package.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

INSTALL_HINT = "kimi web needs the web extra: pip install 'kimi-acp[web]'"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def missing_extra() -> str | None:
    """The one-line message to print when the web extra is not installed, else None."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        return f"{INSTALL_HINT} ({exc.name} is not installed)"
    return None


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    work_dir: str | None = None,
    config_file: str | None = None,
    config_text: str | None = None,
    yolo: bool = False,
    always_ask: bool = False,
) -> int:
    """Bind, print the URL (with its token) on stdout, serve until Ctrl-C; returns the exit code."""
    from ...config import load_config
    from ...errors import ConfigError
    from ...startup.logs import setup_logging

    directory = Path(work_dir).expanduser().resolve() if work_dir else Path.cwd()
    if not directory.is_dir():
        return _fail(f"work dir {directory} does not exist or is not a directory")
    try:
        loaded = load_config(config_file, config_text)
    except ConfigError as exc:
        return _fail(str(exc))
    from ...errors import AgentFileError
    from ...root_core import load_root_agent

    try:
        load_root_agent(loaded)  # the config's agent_file: refused now rather than at the first session
    except AgentFileError as exc:
        return _fail(str(exc))
    try:
        sock = _bind(host, port)
    except OSError as exc:
        return _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    setup_logging("web")
    from ...util.process_guard import keep_process_private

    keep_process_private()  # before any command can run: its children cannot read us (issue #30)

    import uvicorn

    from .app import create_app
    from .hub import Hub

    token = secrets.token_urlsafe(24)
    hub = Hub(directory, loaded, yolo=yolo, always_ask=always_ask)
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound_port}/?token={token}"
    async def on_shutdown() -> None:
        await hub.close()

    app = create_app(hub, token, bound_host=host, port=bound_port)
    config = uvicorn.Config(
        _with_shutdown(app, on_shutdown), log_level="warning", access_log=False, lifespan="on",
        timeout_graceful_shutdown=2, log_config=None,
    )  # fmt: skip

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # Open event streams would hold the graceful shutdown for its whole timeout.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                loop.call_soon_threadsafe(hub.end_streams)
            super().handle_exit(sig, frame)

    server = Server(config)
    print(f"kimi web: serving {directory}", flush=True)
    print(f"kimi web: open {url}", flush=True)
    if host not in LOOPBACK:
        print(f"kimi web: warning: listening on {host}, beyond this machine; the token is the only lock "
              "and the traffic is plain HTTP", file=sys.stderr, flush=True)  # fmt: skip
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C before uvicorn took over the signals
        pass
    return 0


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    sock = socket.socket(infos[0][0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(infos[0][4])
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _with_shutdown(app: Any, on_shutdown: Any) -> Any:
    """Wrap the app so the lifespan's shutdown closes every session (cancels turns, flushes files)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await on_shutdown()
                finally:
                    await send({"type": "lifespan.shutdown.complete"})
                return

    return wrapped


def _fail(message: str) -> int:
    print(f"kimi: error: {message}", file=sys.stderr)
    return 2
