"""Wire details checked against the spec through `kimi --wire`: audio input for an
`audio_in` model, and `ApprovalResponse.feedback` as a string (`feedback?: string`), never null."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.wire_client import (
    WireProcess,
    event_types,
    events,
    scripted_config_data,
    text_of,
    tool_call,
)

AUDIO = {"type": "audio_url", "audio_url": {"url": "data:audio/aac;base64,AAAA", "id": "clip-1"}}


def audio_config(directory: Path, scripts: list[str], capabilities: list[str]) -> Path:
    """The canonical scripted config, with `capabilities` on its model, written as TOML-equivalent JSON."""
    data = scripted_config_data(directory, scripts)
    data["models"]["scripted"]["capabilities"] = capabilities
    path = directory / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def test_an_audio_in_model_accepts_audio_parts(start_wire, tmp_path: Path) -> None:
    wire = await start_wire(config=audio_config(tmp_path, ["text: I heard it"], ["audio_in"]))
    user_input = [{"type": "text", "text": "transcribe this"}, AUDIO]
    response, seen = await wire.call("prompt", {"user_input": user_input})
    assert response.get("result") == {"status": "finished"}, response
    assert text_of(seen) == "I heard it"
    assert events(seen, "TurnBegin")[0]["payload"]["user_input"][1] == AUDIO
    assert event_types(seen)[-1] == "TurnEnd"


async def test_audio_in_is_accepted_from_a_toml_config_too(start_wire, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps(["text: ok"]))
    config = tmp_path / "config.toml"
    config.write_text(
        'default_model = "x"\n'
        '[providers.p]\ntype = "_scripted_echo"\n'
        f'env = {{ KIMI_SCRIPTED_ECHO_SCRIPTS = {json.dumps(str(scripts))} }}\n'
        '[models.x]\nprovider = "p"\nmodel = "scripted_echo"\nmax_context_size = 1000\ncapabilities = ["audio_in"]\n'
    )
    wire = await start_wire(config=config)
    response, _ = await wire.call("prompt", {"user_input": [AUDIO]})
    assert response.get("result") == {"status": "finished"}, response


async def test_a_model_without_audio_in_refuses_audio(start_wire, tmp_path: Path) -> None:
    wire = await start_wire(config=audio_config(tmp_path, ["text: unused"], ["image_in"]))
    response, _ = await wire.call("prompt", {"user_input": [{"type": "text", "text": "listen"}, AUDIO]})
    assert response["error"]["code"] == -32002
    assert "audio_in" in response["error"]["message"]


async def test_rejection_without_feedback_sends_an_empty_string(start_wire) -> None:
    wire: WireProcess = await start_wire([tool_call("tc-1", "Shell", {"command": "echo x"})])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    # A client that sends `null` (lenient) and one that omits it: both are recorded as "".
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "reject", "feedback": None})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    (approval,) = events(seen, "ApprovalResponse")
    assert approval["payload"] == {"request_id": payload["id"], "response": "reject", "feedback": ""}


async def test_approval_without_feedback_sends_an_empty_string(start_wire) -> None:
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo x"}), "text: done"])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    feedback = events(seen, "ApprovalResponse")[0]["payload"]["feedback"]
    assert feedback == "" and isinstance(feedback, str)
