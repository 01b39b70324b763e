"""One way to run a fake HTTP server in a thread and stop it quickly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from socketserver import BaseServer

POLL_INTERVAL_S = 0.05  # `shutdown()` waits up to one poll: the default 0.5 s, per fake, adds up


class ServerThread:
    """`server.serve_forever` in a daemon thread; `stop()` shuts it down and closes its socket."""

    def __init__(self, server: BaseServer, name: str = "fake-server", poll_interval: float = POLL_INTERVAL_S) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": poll_interval}, name=name, daemon=True
        )

    def start(self) -> ServerThread:
        self._thread.start()
        return self

    def stop(self, join_timeout: float = 5.0, before_close: Callable[[], None] | None = None) -> None:
        """Stop accepting, run `before_close` (e.g. drop open connections), close the socket."""
        if self._thread.is_alive():
            self.server.shutdown()
        if before_close is not None:
            before_close()
        self.server.server_close()
        self._thread.join(timeout=join_timeout)


def serve_in_thread(server: BaseServer, name: str = "fake-server") -> ServerThread:
    """Start serving `server` in a thread (stop it with `.stop()`)."""
    return ServerThread(server, name).start()
