"""A recording approver for tool tests: what a tool asked, and a yes or a no."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kimi_acp.tools.base import ToolRejectedError
from kimi_acp.wire.types import DisplayBlock


@dataclass
class ApprovalCall:
    tool_call_id: str
    sender: str
    action: str
    description: str
    display: list[Any]
    scope: Any = None
    warning: str | None = None
    sandbox: str | None = None  # what the card says about the OS sandbox
    reads_only: bool = False  # the tool said the call only reads


@dataclass
class FakeApprover:
    """Records every request a user would be asked (not the `needed=False` checks, which only
    rules could turn into a question: a FakeApprover has none, nor the read-only ones, unless
    `always_ask`); approves unless told to reject (optionally with feedback)."""

    requests: list[ApprovalCall] = field(default_factory=list)
    reject: bool = False
    feedback: str | None = None
    always_ask: bool = False
    read_only: list[str] = field(default_factory=list)  # descriptions of the calls that ran unasked as read-only

    async def request(
        self,
        *,
        tool_call_id: str,
        sender: str,
        action: str,
        description: str,
        display: Sequence[DisplayBlock],
        scope: Any = None,
        warning: str | None = None,
        needed: bool = True,
        sandbox: str | None = None,
        reads_only: bool = False,
    ) -> str:
        if not needed and warning is None:
            return "not_needed"
        if reads_only and warning is None and not self.always_ask:
            self.read_only.append(description)
            return "read_only"
        self.requests.append(
            ApprovalCall(tool_call_id, sender, action, description, list(display), scope, warning, sandbox, reads_only)
        )
        if self.reject:
            raise ToolRejectedError(self.feedback)
        return "asked"
