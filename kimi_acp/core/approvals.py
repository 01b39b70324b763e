"""Approvals: yolo, actions approved for the session (persisted), and asking whoever drives us.

A tool asks through `request`; unless yolo or a session-wide approval covers the action, an
ApprovalRequest goes out on the session stream and the tool waits for its answer. Any front end
may answer it (Wire client, ACP permission dialog, Python callback). Whatever happens — answer,
cancel, turn end — the request is settled and an ApprovalResponse event records the outcome.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from ..sessions import Session
from ..tools.base import ToolRejectedError
from ..wire.types import ApprovalRequest, ApprovalResponse, DisplayBlock


class Approvals:
    def __init__(self, session: Session, send: Callable[[Any], None]) -> None:
        self._session = session
        self._send = send
        self._pending: dict[str, ApprovalRequest] = {}
        self.turn_id: str | None = None  # source_id of requests made during the current turn
        self.runtime_yolo = False  # `--yolo` / `yolo=True`: this process only, not persisted
        self.runtime_afk = False  # `--afk`: this process only, not persisted

    # ------------------------------------------------------------------ state

    @property
    def yolo(self) -> bool:
        return self.runtime_yolo or self._session.state.approval.yolo

    def set_yolo(self, on: bool) -> None:
        if not on:
            self.runtime_yolo = False
        if self._session.state.approval.yolo != on:
            self._session.state.approval.yolo = on
            self._session.save_state()

    @property
    def afk(self) -> bool:
        """Away from keyboard: every action is approved and questions are dismissed (/afk, --afk)."""
        return self.runtime_afk or self._session.state.approval.afk

    def set_afk(self, on: bool) -> None:
        if not on:
            self.runtime_afk = False
        if self._session.state.approval.afk != on:
            self._session.state.approval.afk = on
            self._session.save_state()

    @property
    def session_actions(self) -> frozenset[str]:
        return frozenset(self._session.state.approval.auto_approve_actions)

    def approve_for_session(self, action: str) -> None:
        actions = self._session.state.approval.auto_approve_actions
        if action not in actions:
            actions.append(action)
            self._session.save_state()

    @property
    def pending(self) -> list[ApprovalRequest]:
        return list(self._pending.values())

    # ------------------------------------------------------------------ asking

    async def request(
        self, *, tool_call_id: str, sender: str, action: str, description: str, display: Sequence[DisplayBlock]
    ) -> None:
        """Return when approved; raise ToolRejectedError when rejected (or the wait is cancelled)."""
        if self.yolo or self.afk or action in self.session_actions:
            return
        req = ApprovalRequest(
            id=str(uuid.uuid4()),
            tool_call_id=tool_call_id,
            sender=sender,
            action=action,
            description=description,
            display=list(display),
            **self._source(),
        )
        self._pending[req.id] = req
        self._send(req)
        try:
            answer = self._normalize(req, await req.wait())
        except asyncio.CancelledError:
            # Cancelled while waiting: settle it (a late client answer is then ignored) and record
            # the outcome, so every request in the stream has its response.
            rejection = ApprovalResponse(request_id=req.id, response="reject")
            req.resolve(rejection)
            self._send(rejection)
            raise
        finally:
            self._pending.pop(req.id, None)
        self._send(answer)
        if answer.response == "approve_for_session":
            self.approve_for_session(action)
            for other in list(self._pending.values()):
                if other.action == action:
                    other.resolve(ApprovalResponse(request_id=other.id, response="approve"))
        elif answer.response == "reject":
            raise ToolRejectedError(answer.feedback or None)

    def reject_pending(self, *, background: bool = False) -> None:
        """Settle outstanding requests as rejected: the turn's (it ended), and with `background`
        also those of background subagents (the session closes)."""
        for req in list(self._pending.values()):
            if background or req.source_kind != "background_agent":
                req.resolve(ApprovalResponse(request_id=req.id, response="reject"))

    def _source(self) -> dict[str, Any]:
        return {"source_kind": "foreground_turn", "source_id": self.turn_id}

    def for_subagent(
        self, *, agent_id: str, subagent_type: str, description: str, background: bool, send: Callable[[Any], None]
    ) -> Approvals:
        """The approvals of a subagent: the same session-wide answers, yolo and afk as this (root)
        one, its requests put on the root's stream through `send` and naming the subagent."""
        return _SubagentApprovals(self, agent_id, subagent_type, description, background, send)

    @staticmethod
    def _normalize(req: ApprovalRequest, answer: Any) -> ApprovalResponse:
        if isinstance(answer, ApprovalResponse):
            return answer.model_copy(update={"request_id": req.id})
        if isinstance(answer, str) and answer in ("approve", "approve_for_session", "reject"):
            return ApprovalResponse(request_id=req.id, response=answer)  # type: ignore[arg-type]
        if isinstance(answer, dict):
            try:
                parsed = ApprovalResponse.model_validate({**answer, "request_id": req.id})
                return parsed
            except ValidationError:
                pass
        # Anything unintelligible is a rejection: never run a tool on a garbled answer.
        return ApprovalResponse(request_id=req.id, response="reject")


class _SubagentApprovals(Approvals):
    """A subagent's view of the root's approvals; see `Approvals.for_subagent`."""

    def __init__(
        self, root: Approvals, agent_id: str, subagent_type: str, description: str, background: bool,
        send: Callable[[Any], None],
    ) -> None:
        super().__init__(root._session, send)
        self._root = root
        self._pending = root._pending  # "approve for session" settles the root's and the subagents' alike
        self._agent_id, self._subagent_type, self._description = agent_id, subagent_type, description
        self._background = background
        self._source_id = uuid.uuid4().hex

    @property
    def yolo(self) -> bool:
        return self._root.yolo

    @property
    def afk(self) -> bool:
        return self._root.afk

    def set_yolo(self, on: bool) -> None:
        self._root.set_yolo(on)

    def set_afk(self, on: bool) -> None:
        self._root.set_afk(on)

    def reject_pending(self, *, background: bool = False) -> None:
        """Only this subagent's own requests (the table is shared with the root and its siblings)."""
        for req in list(self._pending.values()):
            if req.source_id == self._source_id:
                req.resolve(ApprovalResponse(request_id=req.id, response="reject"))

    def _source(self) -> dict[str, Any]:
        return {
            "source_kind": "background_agent" if self._background else "foreground_turn",
            "source_id": self._source_id,
            "agent_id": self._agent_id,
            "subagent_type": self._subagent_type,
            "source_description": self._description,
        }
