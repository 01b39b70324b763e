"""A loopback HTTP server with fixed pages, for FetchURL: HTML, plain text, a redirect (and a
redirect loop, a redirect to another host), a 404, a huge body and a binary. Runs in a daemon thread (sync, async and
subprocess tests alike):

    with FakeWebServer() as web:
        ... fetch f"{web.url}/page" ...
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from .serving import ServerThread

PAGE = """<!doctype html><html><head><title>Fake Page</title><style>body{color:red}</style>
<script>var secret = "do-not-show";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">Nav link</a></nav>
<main><h1>Main heading</h1><p>Hello <b>world</b>, a <a href="https://example.com/x">link</a>.</p>
<ul><li>first</li><li>second</li></ul></main>
<footer>footer text</footer></body></html>"""
HUGE_CHUNK = b"a" * 1023 + b"\n"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


class FakeWebServer:
    def __init__(self, huge_bytes: int = 20 * 1024 * 1024) -> None:
        self.huge_bytes = huge_bytes
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                owner.paths.append(self.path)
                if self.path.split("?")[0] == "/page":
                    self._send(200, PAGE.encode(), "text/html; charset=utf-8")
                elif self.path == "/text":
                    self._send(200, "plain text ünïcode\nline 2\n".encode(), "text/plain; charset=utf-8")
                elif self.path == "/redirect":
                    self._send(302, b"", "text/plain", Location="/page")
                elif self.path == "/loop":
                    self._send(302, b"", "text/plain", Location="/loop")
                elif self.path.startswith("/away?to="):  # a redirect to wherever `to` says (another host)
                    self._send(302, b"", "text/plain", Location=unquote(self.path.split("=", 1)[1]))
                elif self.path == "/binary":
                    self._send(200, PNG_BYTES, "image/png")
                elif self.path == "/huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(owner.huge_bytes))
                    self.end_headers()
                    sent = 0
                    try:
                        while sent < owner.huge_bytes:
                            self.wfile.write(HUGE_CHUNK)
                            sent += len(HUGE_CHUNK)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client stopped reading at its cap
                else:
                    self._send(404, b"not found", "text/plain")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._serving = ServerThread(self._server, "fake-web-server")

    def __enter__(self) -> FakeWebServer:
        self._serving.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._serving.stop()
