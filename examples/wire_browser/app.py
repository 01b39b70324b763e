"""The NDJSON event-stream note's browser example: a tiny web app on `Agent.arun_wire`.

    python examples/wire_browser/app.py            # then open the printed URL
    python examples/wire_browser/app.py --print "text: hi" --config echo.json   # one run, in the terminal

POST /run streams the run as NDJSON (one JSON-RPC 2.0 notification per line, `arun_wire`'s
default form); the page (index.html) reads it with fetch() and handles each line by `method`.
Approvals are not part of the stream: this example refuses every action the agent asks to take
unless started with --yolo. `kimi web` is the full UI (approvals, sessions, cancel, steer).
Needs the web extra: pip install 'kimi-acp[web]'.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import secrets
import sys
from pathlib import Path

from kimi_acp import JSONRPC_VERSION, Agent, decode_event_line

HERE = Path(__file__).resolve().parent


def make_app(agent: Agent, token: str):  # type: ignore[no-untyped-def]
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    page = (HERE / "index.html").read_text(encoding="utf-8").replace("__TOKEN__", token)
    running = asyncio.Lock()  # one run at a time: the agent has one session

    def allowed(request: Request) -> bool:
        given = request.headers.get("x-token") or request.query_params.get("token") or ""
        return hmac.compare_digest(given.encode(), token.encode())

    async def index(request: Request):  # type: ignore[no-untyped-def]
        if not allowed(request):
            return PlainTextResponse("open the URL the server printed (it has the token)\n", status_code=401)
        return HTMLResponse(page)

    async def run(request: Request):  # type: ignore[no-untyped-def]
        if not allowed(request):
            return PlainTextResponse("missing or wrong token\n", status_code=401)
        prompt = (await request.json()).get("prompt", "")
        if not isinstance(prompt, str) or not prompt.strip():
            return JSONResponse({"error": "prompt must be a non-empty string"}, status_code=400)
        if running.locked():
            return JSONResponse({"error": "a run is in progress"}, status_code=409)

        async def lines():  # type: ignore[no-untyped-def]
            async with running:
                try:
                    async for line in agent.arun_wire(prompt):  # each line ends in "\n"
                        yield line
                except Exception as exc:  # the run failed (no model, provider error): one last line
                    error = {"jsonrpc": JSONRPC_VERSION, "method": "Error", "params": {"message": str(exc)}}
                    yield json.dumps(error) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return Starlette(routes=[Route("/", index), Route("/run", run, methods=["POST"])])


async def print_run(agent: Agent, prompt: str) -> None:
    """Terminal mode: decode each line back into an event and print it."""
    async for line in agent.arun_wire(prompt):
        event = decode_event_line(line)
        print(type(event).__name__, event.model_dump_json())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--work-dir", default=".")
    parser.add_argument("--config", help="config file (default: ~/.kimi/config.toml)")
    parser.add_argument("--yolo", action="store_true", help="approve every action the agent takes")
    parser.add_argument("--print", dest="prompt", help="run this prompt once and print the events")
    args = parser.parse_args()
    agent = Agent(work_dir=args.work_dir, config=args.config, yolo=args.yolo,
                  on_approval=None if args.yolo else (lambda request: "reject"))  # fmt: skip
    if args.prompt:
        asyncio.run(print_run(agent, args.prompt))
        return 0
    try:
        import uvicorn
    except ImportError:
        print("this example needs the web extra: pip install 'kimi-acp[web]'", file=sys.stderr)
        return 1
    token = secrets.token_urlsafe(16)
    print(f"open http://127.0.0.1:{args.port}/?token={token}", flush=True)
    uvicorn.run(make_app(agent, token), host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
