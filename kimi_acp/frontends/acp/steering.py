"""`_session/steering`: a message the user sends while a turn runs reaches the model at its next step.

The extension as claude-agent-acp and codex-acp serve it (and clients such as Zed call it): the
agent advertises `_meta.steering.supported: true` at the top level of the `initialize` result; the
client sends `{sessionId, prompt: ContentBlock[], _meta?: {steering?: {idleBehavior?}}}`. The answer
is `{"outcome": "injected"}` when a turn was running (the core takes the text between steps, as
Wire's `steer`, and the thread shows it as a `user_message_chunk` then); on an idle session
`idleBehavior: "promptRequired"` gets `{"outcome": "promptRequired", "reason": "noRunningTurn"}`,
so the client sends it as an ordinary prompt, and otherwise the text starts a turn of its own
(`{"outcome": "startedNewTurn"}`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...core.agent_core import AgentCore
from ...core.errors import NoTurnInProgress
from .convert import prompt_to_user_input
from .errors import invalid_params

METHOD = "session/steering"  # as the SDK's router names `_session/steering` (without the `_`)
INJECTED = {"outcome": "injected"}
PROMPT_REQUIRED = {"outcome": "promptRequired", "reason": "noRunningTurn"}
STARTED_NEW_TURN = {"outcome": "startedNewTurn"}


class SteeredSession(Protocol):
    """What steering needs of an ACP session (`session.AcpSession`)."""

    core: AgentCore

    def start_turn(self, blocks: list[Any]) -> None: ...


@dataclass(frozen=True)
class SteeringRequest:
    session_id: str
    prompt: list[dict[str, Any]]
    prompt_required: bool  # idleBehavior "promptRequired": never start a turn


def parse_steering(params: dict[str, Any]) -> SteeringRequest:
    """The request's params, or -32602 naming the field that is wrong."""
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise invalid_params("sessionId", "required (a session id string)")
    prompt = params.get("prompt")
    if not isinstance(prompt, list) or not prompt or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in prompt):
        raise invalid_params("prompt", "must be a non-empty array of content blocks")
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    idle = steering.get("idleBehavior") if isinstance(steering, dict) else None
    if idle is not None and not isinstance(idle, str):
        raise invalid_params("_meta.steering.idleBehavior", 'must be a string, e.g. "promptRequired"')
    return SteeringRequest(session_id, prompt, idle == "promptRequired")


def steer(session: SteeredSession, request: SteeringRequest) -> dict[str, Any]:
    """Into the running turn, else as the client asked for an idle session."""
    if session.core.busy:
        try:
            session.core.steer(prompt_to_user_input(request.prompt))
            return INJECTED
        except NoTurnInProgress:
            pass  # the turn ended just now: the session is idle
    if request.prompt_required:
        return PROMPT_REQUIRED
    session.start_turn(request.prompt)
    return STARTED_NEW_TURN
