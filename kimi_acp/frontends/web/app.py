"""The `kimi web` HTTP app (Starlette): the page, its assets, the event stream (SSE), controls (POST).

Every request must carry the server's random token (`?token=` or the `X-Kimi-Token` header), so
neither another local user nor a web page in the same browser can drive the agent; without it the
answer is 401, with a wrong one 403. The page drops `?token=` from its address once read (history
and screenshots keep no token) and keeps it in the tab's sessionStorage; `/` asked for without a
token answers a small page that brings it back from there (a reload). Before that, a request whose Host header is not the server's
own address is refused with 403 (DNS rebinding, `host_check.py`). Responses forbid framing and
send no Referer.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .host_check import HostGuard
from .hub import Driver, Hub, WebError

log = logging.getLogger(__name__)
TOKEN_HEADER = "x-kimi-token"
HEARTBEAT_S = 15.0
ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "cards.js": "text/javascript; charset=utf-8",
    "highlight.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
    "sessions.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
# A tab opened before a restart still has the old token: say how to get the new URL.
WRONG_TOKEN = (
    "Wrong token for this kimi web server. kimi web makes a new token each time it starts, so a tab "
    "opened before a restart has an old one: open the URL it printed when it started (the line "
    "\"kimi web: open http://…/?token=…\" in its terminal)."
)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


# The page keeps its token in the tab's sessionStorage and takes it out of the address (app.js),
# so a reload asks for `/` without it: the answer (still 401, nothing in it is secret) is a page
# whose one inline script, allowed by its hash alone, comes back with the token of this tab.
RESTORE_KEY = "kimi-web-token"
_RESTORE_SCRIPT = (
    f"(function(){{var t=null;try{{t=sessionStorage.getItem({json.dumps(RESTORE_KEY)})}}catch(e){{}}"
    'if(t){location.replace("/?token="+encodeURIComponent(t)+location.hash)}})();'
)
_RESTORE_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>kimi web</title>'
    f"<script>{_RESTORE_SCRIPT}</script></head><body><p>This kimi web server needs the token from "
    "the URL it printed (the line \u201ckimi web: open http://\u2026/?token=\u2026\u201d in its terminal)."
    "</p></body></html>"
)
_RESTORE_HEADERS = SECURITY_HEADERS | {
    "Content-Security-Policy": "default-src 'none'; script-src 'sha256-"
    + base64.b64encode(hashlib.sha256(_RESTORE_SCRIPT.encode()).digest()).decode()
    + "'; frame-ancestors 'none'"
}


class TokenGuard:
    """ASGI middleware: refuse any request without the token (constant-time comparison). The page
    asked for without one gets the page that brings a reloaded tab's token back (RESTORE_KEY)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.headers.get(TOKEN_HEADER) or request.query_params.get("token")
        if not given:
            if request.method == "GET" and request.url.path == "/":
                page = Response(_RESTORE_PAGE, 401, media_type="text/html; charset=utf-8", headers=_RESTORE_HEADERS)
                await page(scope, receive, send)
                return
            await _plain(401, "This kimi web server needs the token from the URL it printed.")(scope, receive, send)
            return
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token):
            await _plain(403, WRONG_TOKEN)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _plain(status: int, text: str) -> Response:
    return Response(text + "\n", status_code=status, media_type="text/plain", headers=SECURITY_HEADERS)


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=SECURITY_HEADERS)


def _asset(name: str) -> str:
    return resources.files("kimi_acp.frontends.web").joinpath("static", name).read_text(encoding="utf-8")


def create_app(hub: Hub, token: str, *, bound_host: str, port: int) -> ASGIApp:
    page = _asset("index.html").replace("__TOKEN__", token)
    assets = {name: _asset(name) for name in ASSETS}

    async def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return _plain(404, "Not found.")
        return Response(assets[name], media_type=ASSETS[name], headers=SECURITY_HEADERS)

    async def list_sessions(request: Request) -> Response:
        return _json({"work_dir": str(hub.work_dir), "sessions": hub.list_sessions(), **hub.models()})

    async def new_session(request: Request) -> Response:
        try:
            driver = hub.new_session()
        except WebError as exc:  # e.g. the config's agent_file became unusable
            return _json({"error": str(exc)}, exc.status)
        return _json({"id": driver.core.session.id}, 201)

    async def events(request: Request) -> Response:
        driver = _driver(hub, request)
        if isinstance(driver, Response):
            return driver
        attached = driver.attach()

        async def stream() -> Any:
            try:
                for batch in attached.history_batches():  # the replay: JSON-RPC batches, not limited
                    yield "data: " + json.dumps(batch, ensure_ascii=False, separators=(",", ":")) + "\n\n"
                while True:
                    try:
                        item = await asyncio.wait_for(attached.queue.get(), HEARTBEAT_S)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    if item is None:
                        return
                    yield "data: " + json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n\n"
            finally:
                driver.detach(attached)

        headers = {**SECURITY_HEADERS, "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def control(request: Request) -> Response:
        driver = _driver(hub, request)
        if isinstance(driver, Response):
            return driver
        try:
            body = await request.json()
        except ValueError:
            return _json({"error": "The body must be a JSON object."}, 400)
        if not isinstance(body, dict):
            return _json({"error": "The body must be a JSON object."}, 400)
        action = request.path_params["action"]
        try:
            if action == "prompt":
                driver.prompt(_text(body, "text"))
            elif action == "steer":
                driver.steer(_text(body, "text"))
            elif action == "cancel":
                driver.cancel()
            elif action == "approval":
                feedback = body.get("feedback") or ""
                driver.answer_approval(_text(body, "request_id"), _text(body, "response"), str(feedback))
            elif action == "question":
                answers = body.get("answers") or {}
                if not isinstance(answers, dict):
                    raise WebError("answers must be an object {question: label}.", 400)
                driver.answer_question(_text(body, "request_id"), answers)
            elif action == "plan_mode":
                driver.set_plan_mode(bool(body.get("enabled")))
            elif action == "always_ask":
                driver.set_always_ask(bool(body.get("enabled")))
            elif action == "model":
                driver.set_model(_text(body, "alias"))
            elif action == "undo_preview":
                return _json(await driver.undo_preview(_turns(body)))
            elif action == "undo":
                seq = body.get("seq")
                driver.undo(_turns(body), force=body.get("force") is True, seq=seq if isinstance(seq, int) else None)
            else:
                return _json({"error": f"Unknown action {action!r}."}, 404)
        except WebError as exc:
            return _json({"error": str(exc)}, exc.status)
        return _json({"ok": True, "status": driver.status()})

    async def manage(request: Request) -> Response:
        """Rename or delete a session: without starting it (no driver is made for this)."""
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _json({"error": "The body must be a JSON object."}, 400)
        session_id = request.path_params["session_id"]
        try:
            if request.url.path.endswith("/rename"):
                hub.rename(session_id, _text(body, "title"))
            else:
                await hub.delete(session_id)
        except WebError as exc:
            return _json({"error": str(exc)}, exc.status)
        return _json({"ok": True})

    routes = [
        Route("/", index),
        Route("/static/{name}", asset),
        Route("/api/sessions", list_sessions, methods=["GET"]),
        Route("/api/sessions", new_session, methods=["POST"]),
        Route("/api/sessions/{session_id}/events", events),
        Route("/api/sessions/{session_id}/rename", manage, methods=["POST"]),
        Route("/api/sessions/{session_id}/delete", manage, methods=["POST"]),
        Route("/api/sessions/{session_id}/{action}", control, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    return HostGuard(TokenGuard(app, token), bound_host=bound_host, port=port)


def _driver(hub: Hub, request: Request) -> Driver | Response:
    try:
        return hub.driver(request.path_params["session_id"])
    except WebError as exc:
        return _json({"error": str(exc)}, exc.status)


def _turns(body: dict[str, Any]) -> int:
    value = body.get("turns")
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
        raise WebError("turns must be a whole number from 1 to 1000.", 400)
    return value


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise WebError(f"{key!r} must be a string.", 400)
    return value
