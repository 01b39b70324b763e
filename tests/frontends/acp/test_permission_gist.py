"""frontends/acp/permission_gist.py: why a permission request asks, in its title, and its kind."""

from __future__ import annotations

import pytest

from kimi_acp.frontends.acp.permission_gist import permission_kind, titled
from kimi_acp.wire.actions import (
    EDIT_ACTION,
    EDIT_OUTSIDE_ACTION,
    READ_OUTSIDE_ACTION,
    READ_SENSITIVE_ACTION,
    RUN_ACTION,
)
from kimi_acp.wire.types import ApprovalRequest


def request(action: str, *, warning: str | None = None, sandbox: str | None = None) -> ApprovalRequest:
    return ApprovalRequest(id="r", tool_call_id="c", sender="T", action=action, description="d", warning=warning, sandbox=sandbox)


@pytest.mark.parametrize(
    ("asked", "title"),
    [
        (request(READ_SENSITIVE_ACTION, warning="`~/.kimi/config.toml` holds credentials (x)."), "T: p (holds credentials)"),
        (request(READ_OUTSIDE_ACTION), "T: p (outside the workspace)"),
        (request(EDIT_OUTSIDE_ACTION), "T: p (outside the workspace)"),
        (request(EDIT_ACTION, warning="`.git/config` is a repository's git configuration."), "T: p (protected path)"),
        (request(RUN_ACTION, warning="The command names `.env`, which holds credentials (an environment file): …"),
         "T: p (holds credentials)"),
        (request(RUN_ACTION, sandbox="Runs OUTSIDE the sandbox (workspace-write). The model's reason: x"), "T: p (outside the sandbox)"),
        (request(RUN_ACTION, sandbox="Runs unconfined: the session asks for the read-only sandbox, but …"),
         "T: p (no sandbox available)"),
        (request(RUN_ACTION, warning="The command names `~/.ssh`: SSH keys.", sandbox="Runs inside the sandbox: …"),
         "T: p (protected path; in the sandbox)"),
        (request(EDIT_ACTION), "T: p"),
    ],
)
def test_the_title_says_why_it_asks(asked: ApprovalRequest, title: str) -> None:
    assert titled("T: p", asked) == title


def test_reads_and_searches_that_ask_are_a_kind_no_client_approves_unasked() -> None:
    assert permission_kind("read") == permission_kind("search") == "other"
    assert [permission_kind(k) for k in ("edit", "execute", "fetch", "think", "other")] == ["edit", "execute", "fetch", "think", "other"]
