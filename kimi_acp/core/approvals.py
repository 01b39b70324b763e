"""Approvals: the user's rules, yolo, what was approved for the session, and asking the user.

A tool asks through `request`, saying what the call is about (`Scope`: a command line, a file,
a host, a tool) and whether it always asks (`warning`: a sensitive file, a protected path). The
order (kimi_acp/permissions): a deny rule refuses; a warning asks (refused under --afk); an ask
rule asks; an allow rule, yolo, afk or a session approval covering the scope lets it run; a call
that needs no approval (`needed=False`: a read inside the workspace) runs; the rest asks.

Asking is an ApprovalRequest on the session stream, answered by whichever front end drives it
(Wire client, ACP permission dialog, Python callback, web page); "approve for this session"
remembers the scope the card showed (`ApprovalRequest.session_scope`), nothing wider. Whatever
happens — answer, cancel, turn end — the request is settled and an ApprovalResponse records it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from ..errors import PermissionDenied
from ..permissions.redaction import scrubbed
from ..permissions.rules import Rules
from ..permissions.scope import Scope
from ..sessions import Session
from ..tools.base import Permit, ToolRejectedError
from ..util import secrets
from ..wire.types import ApprovalRequest, ApprovalResponse, DisplayBlock
from .card_text import visible_request

# A subagent works for the model: the user's session (its modes, model, sandbox, directories) is not its to change.
SUBAGENT_REFUSED = "A subagent cannot change the user's session ({what}): only the user can."


class Approvals:
    def __init__(
        self,
        session: Session,
        send: Callable[[Any], None],
        *,
        rules: Rules | None = None,
        runtime_yolo: bool = False,
        runtime_afk: bool = False,
        default_always_ask: bool = False,
    ) -> None:
        """`rules`: the config's [permissions]; the rest are this process's modes (the front end's
        `FrontEnd`, kimi_acp/front_end.py), never persisted."""
        self._session = session
        self._send = send
        self._pending: dict[str, ApprovalRequest] = {}
        # Of each pending request that "approve for session" may settle: its scope (None: the bare action).
        self._scopes: dict[str, Scope | None] = {}
        self.turn_id: str | None = None  # source_id of requests made during the current turn
        self.runtime_yolo = runtime_yolo  # `--yolo` / `yolo=True`: this process only, not persisted
        self.runtime_afk = runtime_afk  # `--afk`: this process only, not persisted
        self.rules = rules if rules is not None else Rules()
        self.default_always_ask = default_always_ask  # `--always-ask`, else the config's `[permissions] always_ask`

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
    def always_ask(self) -> bool:
        """Every command asks, read-only ones too (the session's choice, else the default)."""
        chosen = self._session.state.always_ask
        return self.default_always_ask if chosen is None else chosen

    def set_always_ask(self, on: bool) -> None:
        if self._session.state.always_ask != on:
            self._session.state.always_ask = on
            self._session.save_state()

    @property
    def session_actions(self) -> frozenset[str]:
        return frozenset(self._session.state.approval.auto_approve_actions)

    def approve_for_session(self, *entries: str) -> None:
        actions = self._session.state.approval.auto_approve_actions
        added = [entry for entry in dict.fromkeys(entries) if entry not in actions]
        if added:
            actions.extend(added)
            self._session.save_state()

    def covers(self, action: str, scope: Scope | None) -> bool:
        """Whether what was approved for this session covers a call (`scope`, or the bare action
        for a call that names none)."""
        return scope.covered_by(self.session_actions) if scope is not None else action in self.session_actions

    @property
    def pending(self) -> list[ApprovalRequest]:
        return list(self._pending.values())

    # ------------------------------------------------------------------ asking

    async def request(
        self,
        *,
        tool_call_id: str,
        sender: str,
        action: str,
        description: str,
        display: Sequence[DisplayBlock],
        scope: Scope | None = None,
        warning: str | None = None,
        needed: bool = True,
        sandbox: str | None = None,
        reads_only: bool = False,
    ) -> Permit:
        """Return how the call may run (tools/base.py `Permit`); raise ToolRejectedError when the
        user rejected it (or the wait was cancelled), PermissionDenied when a rule or --afk refused
        it without asking. `sandbox` is shown on the card (`ApprovalRequest.sandbox`): the OS
        sandbox the call runs in. `reads_only`: a command that provably only reads runs unasked,
        unless the session asks always (`always_ask`)."""
        named = scope.rule_name if scope is not None and scope.rule_name else sender
        decision = self.rules.decide(named, scope, self._session.work_dir) if self.rules else None
        if decision is not None and decision.verdict == "deny":
            raise PermissionDenied(f"Refused by {decision.reason}. Do not try to get around it; tell the user if it is needed.")
        if warning is not None:
            if self.afk:
                raise PermissionDenied(
                    f"Refused: {warning} Away from keyboard (afk), nobody can approve it; it always needs the user."
                )
        elif decision is not None and decision.verdict == "ask":
            pass
        elif decision is not None and decision.verdict == "allow":
            return "rule"
        elif not needed:
            return "not_needed"
        elif reads_only and not self.always_ask:
            return "read_only"
        elif self.yolo or self.afk:
            return "yolo"
        elif self.covers(action, scope):
            return "session"
        remembers = warning is None and decision is None and (scope is None or scope.remembers)
        # What the card shows holds no known secret (a diff of a file with a key) and no invisible character.
        req = visible_request(ApprovalRequest(
            id=str(uuid.uuid4()),
            tool_call_id=tool_call_id,
            sender=sender,
            action=action,
            description=secrets.redact(description),
            display=scrubbed(list(display)),
            session_scope=(scope.label if scope is not None else f"`{action}`") if remembers else None,
            warning=warning,
            sandbox=secrets.redact(sandbox) if sandbox else None,
            **self._source(),
        ))
        self._pending[req.id] = req
        if remembers:
            self._scopes[req.id] = scope
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
            self._scopes.pop(req.id, None)
        self._send(answer)
        if answer.response == "approve_for_session" and remembers:
            self.approve_for_session(*(scope.keys() if scope is not None else [action]))
            for other in list(self._pending.values()):
                if other.id in self._scopes and other.action == action and self.covers(action, self._scopes[other.id]):
                    other.resolve(ApprovalResponse(request_id=other.id, response="approve"))
        elif answer.response == "reject":
            raise ToolRejectedError(answer.feedback or None)
        return "asked"

    def reject_pending(self, *, background: bool = False) -> None:
        """Settle outstanding requests as rejected: the turn's (it ended), and with `background`
        also those of background subagents (the session closes)."""
        for req in list(self._pending.values()):
            if background or req.source_kind != "background_agent":
                req.decline()

    def _source(self) -> dict[str, Any]:
        return {"source_kind": "foreground_turn", "source_id": self.turn_id}

    def for_subagent(
        self, *, agent_id: str, subagent_type: str, description: str, background: bool, send: Callable[[Any], None]
    ) -> Approvals:
        """The approvals of a subagent: the same session-wide answers, yolo and afk as this (root)
        one (which it cannot change), its requests put on the root's stream through `send` and
        naming the subagent."""
        return _SubagentApprovals(self, agent_id, subagent_type, description, background, send)

    @staticmethod
    def _normalize(req: ApprovalRequest, answer: Any) -> ApprovalResponse:
        if isinstance(answer, ApprovalResponse):
            return answer.model_copy(update={"request_id": req.id})
        if isinstance(answer, str) and answer in ("approve", "approve_for_session", "reject"):
            return ApprovalResponse(request_id=req.id, response=answer)  # type: ignore[arg-type]
        if isinstance(answer, dict):
            try:
                return ApprovalResponse.model_validate({**answer, "request_id": req.id})
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
        super().__init__(root._session, send, rules=root.rules)
        self._root = root
        self._pending = root._pending  # "approve for session" settles the root's and the subagents' alike
        self._scopes = root._scopes
        self._agent_id, self._subagent_type, self._description = agent_id, subagent_type, description
        self._background = background
        self._source_id = uuid.uuid4().hex

    @property
    def yolo(self) -> bool:
        return self._root.yolo

    @property
    def afk(self) -> bool:
        return self._root.afk

    @property
    def always_ask(self) -> bool:
        return self._root.always_ask

    def set_yolo(self, on: bool) -> None:
        raise PermissionDenied(SUBAGENT_REFUSED.format(what="yolo mode"))

    def set_afk(self, on: bool) -> None:
        raise PermissionDenied(SUBAGENT_REFUSED.format(what="afk mode"))

    def reject_pending(self, *, background: bool = False) -> None:
        """Only this subagent's own requests (the table is shared with the root and its siblings)."""
        for req in list(self._pending.values()):
            if req.source_id == self._source_id:
                req.decline()

    def _source(self) -> dict[str, Any]:
        return {
            "source_kind": "background_agent" if self._background else "foreground_turn",
            "source_id": self._source_id,
            "agent_id": self._agent_id,
            "subagent_type": self._subagent_type,
            "source_description": self._description,
        }
