"""Why a permission request asks, in the few words its card title carries, and the kind it goes
out with.

Some clients show only a permission request's title (CodeCompanion), and some approve by kind
without showing anything (acpx approves every `read` and `search` request by default). A read or
search only ever asks for a reason the user must see (a file holding credentials, a place outside
the workspace), so its request goes out as `other`, which no client approves on its own, and the
reason rides in the title: `ReadFile: ~/.kimi/config.toml (holds credentials)`.
"""

from __future__ import annotations

from ...wire.actions import EDIT_OUTSIDE_ACTION, READ_OUTSIDE_ACTION, READ_SENSITIVE_ACTION
from ...wire.types import ApprovalRequest

AUTO_APPROVED_KINDS = frozenset({"read", "search"})  # what clients approve unasked (acpx's --approve-reads)
OUTSIDE_ACTIONS = frozenset({READ_OUTSIDE_ACTION, EDIT_OUTSIDE_ACTION})


def gists(request: ApprovalRequest) -> list[str]:
    """The reasons the card's body explains, each in a few words."""
    found: list[str] = []
    warning = request.warning or ""
    if request.action == READ_SENSITIVE_ACTION or "holds credentials" in warning:
        found.append("holds credentials")
    elif warning:
        found.append("protected path")
    if request.action in OUTSIDE_ACTIONS:
        found.append("outside the workspace")
    note = request.sandbox or ""
    if note.startswith("Runs OUTSIDE the sandbox"):
        found.append("outside the sandbox")
    elif note.startswith("Runs unconfined"):
        found.append("no sandbox available")
    elif note.startswith("Runs inside the sandbox"):
        found.append("in the sandbox")
    return found


def titled(title: str, request: ApprovalRequest) -> str:
    """The card's title with the reasons it asks: `ReadFile: ~/.kimi/config.toml (holds credentials)`."""
    reasons = gists(request)
    return f"{title} ({'; '.join(reasons)})" if reasons else title


def permission_kind(kind: str) -> str:
    """The kind a permission request goes out with: never one a client approves unasked."""
    return "other" if kind in AUTO_APPROVED_KINDS else kind
