"""The request checks the fakes use (tests/support/sdk_wire.py) do catch a drift from the real wire
format: each case below is a small mistake a provider could make, and each must be reported."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.fakes.gemini_server import genai_types
from tests.support.sdk_wire import gemini_request_problems, responses_request_problems


@pytest.fixture(autouse=True)
def _google_genai() -> None:
    genai_types()  # the release the checks were written against (tests/fakes/gemini_server.py)


RESPONSES: dict[str, Any] = {
    "model": "gpt-5",
    "stream": True,
    "store": False,
    "instructions": "sys",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAAx"},  # no id: allowed (see _MAY_LACK)
        {"type": "function_call", "call_id": "c1", "name": "ReadFile", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "text"},
    ],
    "tools": [{"type": "function", "name": "ReadFile", "description": "d", "parameters": {"type": "object"}, "strict": False}],
    "reasoning": {"effort": "high", "summary": "auto"},
}

GEMINI: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "ReadFile", "args": {}}, "thoughtSignature": "c2ln"}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "ReadFile", "response": {"output": "x"}}}]},
    ],
    "systemInstruction": {"parts": [{"text": "sys"}]},
    "tools": [{"functionDeclarations": [{"name": "ReadFile", "description": "d", "parametersJsonSchema": {"type": "object"}}]}],
    "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}, "temperature": 0.2},
}


def test_the_good_bodies_pass() -> None:
    assert responses_request_problems(RESPONSES) == []
    assert gemini_request_problems(GEMINI) == []
    assert gemini_request_problems(GEMINI, vertex=True) == []


def _changed(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(body)
    *keys, last = path.split(".")
    node: Any = body
    for key in keys:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is KeyError:
        del node[int(last) if last.isdigit() else last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return body


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("input.0.content.0.type", "text", "is not one of"),  # Chat Completions' name, not the Responses API's
        ("input.2.call_id", 7, "expected a string"),
        ("input.3.tool_call_id", "c1", "unknown key"),
        ("tools.0.function", {"name": "x"}, "unknown key"),  # the Chat Completions tool shape
        ("reasoning.effort", "maximum", "is not one of"),
        ("stream", False, "stream must be true"),
        ("previous_response_id", "resp_1", "history must be sent whole"),
        ("input.2.name", KeyError, "requires 'name'"),
    ],
)
def test_responses_drift_is_caught(path: str, value: Any, says: str) -> None:
    problems = responses_request_problems(_changed(RESPONSES, path, value))
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(
    ("path", "value", "vertex", "says"),
    [
        ("contents.1.parts.0.functionCall.arguments", {}, False, "Extra inputs"),
        ("contents.1.role", "assistant", False, "user or model"),
        ("contents.2.parts", [{"text": "no response"}], False, "0 function responses answer 1 function calls"),
        ("generationConfig.thinkingConfig.budget", 5, False, "Extra inputs"),
        ("generationConfig.tools", [], False, "top level"),  # a top-level field put in generationConfig
        ("contents.2.parts.0.functionResponse.willContinue", True, True, "Gemini Developer API"),  # not on Vertex AI
        ("contents.0.parts.0.inlineData", {"mimeType": "image/png", "data": "not base64!"}, False, "base64"),
        ("unknown", 1, False, "unknown key"),
    ],
)
def test_gemini_drift_is_caught(path: str, value: Any, vertex: bool, says: str) -> None:
    problems = gemini_request_problems(_changed(GEMINI, path, value), vertex=vertex)
    assert any(says in p for p in problems), problems
