"""A full agent turn on each new provider type, through `kimi --wire` and `kimi acp`, against the
loopback fakes built from the official SDKs' types (tests/fakes/responses_server.py,
tests/fakes/gemini_server.py): text, thinking, two parallel tool calls (one failing), a retry after
a 429, images in, then a 401 with its hint. Every request body the agent sent validated against the
SDK's request types (the fakes answer 400 otherwise), and no key or token reached an output or the log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import pytest
import tomlkit

from tests.fakes.gemini_server import (
    FakeGeminiServer,
    GeminiScript,
    bad_key_error,
    google_error,
    rate_limited,
    service_account,
)
from tests.fakes.openai_server import ErrorReply, FakeLLMServer, Stream
from tests.fakes.responses_server import FakeResponsesServer, ResponsesScript, openai_error
from tests.support.acp_fixtures import acp_env, of_kind, texts
from tests.support.inmemory import serve_acp
from tests.support.wire_client import WireProcess, event_types, events, text_of

OPENAI_KEY = "sk-proj-e2e-responses-secret-7a1c"
GEMINI_KEY = "AIzaSy-e2e-gemini-secret-55b0c"
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PNG = f"data:image/png;base64,{PNG_B64}"
THINK = "I should read both files."
NOTES = "the notes say hello"


@dataclass
class Backend:
    """One provider type: its fake, its config, and its replies in its own wire format."""

    kind: str
    server: FakeLLMServer
    provider: dict[str, Any]
    secrets: list[str] = field(default_factory=list)

    # -- replies

    def thinking_text_and_two_calls(self) -> Stream:
        reads = [("ReadFile", {"path": "notes.txt"}), ("ReadFile", {"path": "missing.txt"})]
        if self.kind == "openai_responses":
            script = ResponsesScript().reasoning(THINK).text("Reading both.")
            for index, (name, args) in enumerate(reads):
                text = json.dumps(args)
                script.call(f"call_{index}", name, text[:5], text[5:])
            return script.stream(usage=(900, 40, 512))
        return GeminiScript().thought(THINK).text("Reading both.").calls(*reads).stream(usage=(900, 40, 512, 20))

    def answer(self, *pieces: str) -> Stream:
        if self.kind == "openai_responses":
            return ResponsesScript().text(*pieces).stream()
        return GeminiScript().text(*pieces).stream()

    def rate_limited(self) -> ErrorReply:
        if self.kind == "openai_responses":
            return openai_error(429, "Rate limit reached for requests", retry_after=0)
        return rate_limited(0)

    def unauthorized(self) -> list[ErrorReply]:
        if self.kind == "openai_responses":
            return [openai_error(401, "Incorrect API key provided: sk-proj-****7a1c.", code="invalid_api_key")]
        if self.kind == "gemini":
            return [bad_key_error()]
        # Vertex AI with a service account: the token is refreshed once, then the 401 is final.
        return [google_error(401, "Request had invalid authentication credentials.")] * 2

    def hint(self) -> tuple[int, str]:
        """The Wire error code and the words of the hint a 401 gives."""
        if self.kind == "vertexai":
            return -32003, "GOOGLE_APPLICATION_CREDENTIALS"
        return -32004, "kimi login"

    # -- what the requests must carry

    def image_sent(self, body: dict[str, Any]) -> bool:
        text = json.dumps(body)
        if self.kind == "openai_responses":
            return '"type": "input_image"' in text and PNG in text
        return '"inlineData": {"mimeType": "image/png", "data": "' + PNG_B64 in text

    def results_sent(self, body: dict[str, Any]) -> list[str]:
        """The tool results the request carries, in order, as text."""
        if self.kind == "openai_responses":
            return [str(i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]
        return [
            p["functionResponse"]["response"]["output"]
            for c in body["contents"]
            for p in c["parts"]
            if "functionResponse" in p
        ]


@pytest.fixture(params=["openai_responses", "gemini", "vertexai"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    kind = request.param
    if kind == "openai_responses":
        with FakeResponsesServer(api_keys={OPENAI_KEY}) as server:
            yield Backend(kind, server, {"type": kind, "base_url": server.base_url, "api_key": OPENAI_KEY}, [OPENAI_KEY])
            assert server.problems == []
        return
    vertex = kind == "vertexai"
    with FakeGeminiServer(vertex=vertex, api_keys=None if vertex else {GEMINI_KEY}) as server:
        if vertex:
            key_file, server.public_key = service_account(tmp_path, server.token_uri)
            provider = {
                "type": kind, "base_url": server.url, "api_key": "",
                "env": {"GOOGLE_CLOUD_PROJECT": "e2e-project", "GOOGLE_CLOUD_LOCATION": "us-central1",
                        "GOOGLE_APPLICATION_CREDENTIALS": str(key_file)},
            }
            backend = Backend(kind, server, provider, [json.loads(key_file.read_text())["private_key"].splitlines()[1]])
        else:
            backend = Backend(kind, server, {"type": kind, "base_url": server.url, "api_key": GEMINI_KEY}, [GEMINI_KEY])
        yield backend
        assert server.problems == []
        if vertex:  # the tokens it issued are secrets too: checked by `no_secret_anywhere`
            assert server.issued


def config(backend: Backend) -> dict[str, Any]:
    return {
        "default_model": "m",
        "default_thinking": True,
        "models": {"m": {"provider": "p", "model": "gemini-2.5-pro" if backend.kind != "openai_responses" else "gpt-5",
                         "max_context_size": 400_000, "capabilities": ["thinking", "image_in"]}},
        "providers": {"p": backend.provider},
        "session": {"generate_titles": False},
    }


def no_secret_anywhere(backend: Backend, *texts: str) -> None:
    secrets = backend.secrets + list(getattr(backend.server, "issued", []))
    for text in texts:
        assert "Traceback" not in text
        for secret in secrets:
            assert secret not in text


def check_the_requests(backend: Backend) -> None:
    posts = [r for r in backend.server.requests if r.method == "POST" and r.path != "/token"]
    first, limited, after_tools = posts[:3]
    assert backend.image_sent(first.body)
    assert limited.body == after_tools.body  # the retry sent the same request
    notes, missing = backend.results_sent(after_tools.body)
    assert NOTES in notes
    assert "missing.txt" in missing and "not" in missing.lower()  # the tool error went back to the model


# --------------------------------------------------------------------------- kimi --wire


@pytest.fixture
async def wire_for(tmp_path: Path, work_dir: Path) -> AsyncIterator[Any]:
    started: list[WireProcess] = []

    async def start(backend: Backend) -> WireProcess:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config(backend)))
        wire = await WireProcess.start(
            "--work-dir", str(work_dir), "--config-file", str(path), "--thinking", env={"KIMI_LOG_LEVEL": "DEBUG"}
        )
        started.append(wire)
        return wire

    yield start
    for wire in started:
        if wire.proc.returncode is None:
            wire.kill()


async def test_a_turn_through_wire(backend: Backend, wire_for: Any, work_dir: Path, share_dir: Path) -> None:
    (work_dir / "notes.txt").write_text(NOTES + "\n")
    backend.server.enqueue(backend.thinking_text_and_two_calls(), backend.rate_limited(), backend.answer("Done: ", "one file."))
    wire = await wire_for(backend)
    prompt = [{"type": "text", "text": "What do these files say?"}, {"type": "image_url", "image_url": {"url": PNG}}]
    response, seen = await wire.call("prompt", {"user_input": prompt}, timeout=30)
    assert response["result"] == {"status": "finished"}, response

    parts = [e["payload"] for e in events(seen, "ContentPart")]
    assert "".join(p["think"] for p in parts if p["type"] == "think") == THINK
    assert text_of(seen) == "Reading both.Done: one file."
    calls: list[list[str]] = []  # each call's name and argument text, as the client assembles them
    for event in events(seen):
        if event["type"] == "ToolCall":
            calls.append([event["payload"]["function"]["name"], event["payload"]["function"]["arguments"] or ""])
        elif event["type"] == "ToolCallPart":
            calls[-1][1] += event["payload"]["arguments_part"] or ""
    assert [(name, json.loads(args)) for name, args in calls] == [
        ("ReadFile", {"path": "notes.txt"}), ("ReadFile", {"path": "missing.txt"})
    ]
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    assert sorted(r["is_error"] for r in results.values()) == [False, True]
    (retry,) = events(seen, "StepRetry")
    assert retry["payload"]["status_code"] == 429 and retry["payload"]["error_type"] == "APIStatusError"
    types = event_types(seen)
    assert types.count("StepBegin") == 2 and types[-1] == "TurnEnd"
    (status, _) = events(seen, "StatusUpdate")
    assert status["payload"]["token_usage"]["input_cache_read"] == 512
    check_the_requests(backend)

    for reply in backend.unauthorized():
        backend.server.enqueue(reply)
    response, seen = await wire.call("prompt", {"user_input": "again"}, timeout=30)
    code, words = backend.hint()
    assert response["error"]["code"] == code and words in response["error"]["message"], response
    assert events(seen, "StepRetry") == []  # a refused key is not retried

    assert wire.proc.stdin is not None
    wire.proc.stdin.close()
    assert await wire.proc.wait() == 0
    stdout = "\n".join(json.dumps(m) for m in wire.received)
    no_secret_anywhere(backend, stdout, await wire.stderr_text(), (share_dir / "logs" / "kimi.log").read_text())


# --------------------------------------------------------------------------- kimi acp


async def test_a_turn_through_acp(backend: Backend, share: Path, project: Path) -> None:
    (project / "notes.txt").write_text(NOTES + "\n")
    (share / "config.toml").write_text(tomlkit.dumps(config(backend)))
    backend.server.enqueue(backend.thinking_text_and_two_calls(), backend.rate_limited(), backend.answer("Done: ", "one file."))
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        blocks = [acp.text_block("What do these files say?"), acp.image_block(PNG_B64, "image/png")]
        result = await agent.conn.prompt(session_id=session.session_id, prompt=blocks)
        assert result.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert texts(updates, "agent_thought_chunk") == THINK
        shown = texts(updates)  # (the IDE may also be told of the retry between the two)
        assert shown.startswith("Reading both.") and shown.endswith("Done: one file.")
        cards = of_kind(updates, "tool_call")
        assert len(cards) == 2
        final = {u["toolCallId"]: u["status"] for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")}
        assert sorted(final.values()) == ["completed", "failed"]
        check_the_requests(backend)

        for reply in backend.unauthorized():
            backend.server.enqueue(reply)
        with pytest.raises(acp.RequestError) as caught:
            await agent.prompt(session.session_id, "again")
        _, words = backend.hint()
        assert words in str(caught.value.data) or words in str(caught.value)
        if backend.kind != "vertexai":
            assert caught.value.code == -32000  # auth required: the IDE offers its sign-in
    log = share / "logs" / "kimi.log"
    no_secret_anywhere(backend, json.dumps(agent.recorder.updates(session.session_id)), log.read_text() if log.exists() else "")
