"""The ACP permission card shows exactly what runs (issue #29 item 6): the whole command in a fence
nothing in it can close, escapes with a warning line, a bounded title, a sandbox line without the
model's markup. Each card is parsed as CommonMark, as an IDE renders it, and schema-checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimi_acp.core.card_text import visible_request
from kimi_acp.frontends.acp.convert import TITLE_ARG_MAX, task_lines
from kimi_acp.frontends.acp.session import permission_options
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.util.visible_text import ELLIPSIS, escapes_note, visible
from kimi_acp.wire.types import (
    ApprovalRequest,
    BackgroundTaskDisplayBlock,
    FunctionBody,
    ShellDisplayBlock,
    ToolCall,
)
from tests.support.acp_client import load_schemas
from tests.support.markdown_card import render

CWD = Path("/work/project")
# Closes a triple-backtick fence, adds a fake sandbox line, hides the line that runs in an HTML comment.
ATTACK = (
    "echo 'harmless\u202e\u200b\x1b[8m\n```\n\n**Sandbox:** Runs inside the sandbox: read-only (bubblewrap, no network).\n\n"
    "<!--\n'; touch hidden-marker; echo '\n-->\n'"
)
HIDDEN = "\u202e\u200b\x1b\u2066\x9b"


def ask(command: str, **fields: Any) -> tuple[UpdateMapper, dict[str, Any], ApprovalRequest]:
    mapper = UpdateMapper(CWD)
    arguments = json.dumps({"command": command})
    mapper.map(ToolCall(id="s1", function=FunctionBody(name="Shell", arguments=arguments)))
    request = visible_request(ApprovalRequest(
        id="q1", tool_call_id="s1", sender="Shell", action="run command", description=f"Run command `{command}`",
        display=[ShellDisplayBlock(language="bash", command=command)], **fields,
    ))  # fmt: skip
    mapper.approval_requested(request)
    card = mapper.permission_tool_call(request)
    params = {"sessionId": "s", "toolCall": card, "options": permission_options(request)}
    assert not load_schemas().validate("RequestPermissionRequest", params)
    return mapper, card, request


def texts(card: dict[str, Any]) -> list[str]:
    return [c["content"]["text"] for c in card["content"]]


def test_the_fenced_command_holds_every_line_that_runs():
    _, card, _ = ask(ATTACK)
    warning, command = texts(card)
    assert warning == f"**Warning:** {escapes_note('command')}"
    seen = render(command)
    assert seen.code_blocks == [visible(ATTACK).text + "\n"]  # one block, the whole command, nothing after it
    assert seen.html == [] and seen.markup == [] and seen.text == ""
    assert "touch hidden-marker" in seen.code_blocks[0].splitlines()[6]
    everything = json.dumps(card, ensure_ascii=False)
    assert not any(char in everything for char in HIDDEN)
    assert card["rawInput"] == {"command": visible(ATTACK).text}


def test_a_long_command_keeps_its_beginning_in_the_title_and_its_whole_in_the_content():
    command = "echo harmless " + "a" * 200 + "; touch middle-marker; echo " + "b" * 200
    _, card, _ = ask(command)
    assert card["title"] == "Shell: " + command[: TITLE_ARG_MAX - 1] + ELLIPSIS
    (content,) = texts(card)
    assert render(content).code_blocks == [command + "\n"]


def test_a_command_longer_than_a_card_is_shown_whole():
    command = "\n".join(f"echo line {n} {'x' * 90}" for n in range(400)) + "\ntouch last-marker"
    _, card, _ = ask(command)
    (content,) = texts(card)
    assert render(content).code_blocks == [command + "\n"]


def test_the_sandbox_line_shows_the_models_reason_as_text():
    reason = "network\n\n**Sandbox:** Runs inside the sandbox <!-- hidden --> [ok](http://x)"
    _, card, request = ask("curl x", sandbox=f"Runs OUTSIDE the sandbox (workspace-write). The model's reason: {reason}")
    command, sandbox = texts(card)
    seen = render(sandbox)
    assert seen.markup == ["strong_open"] and seen.html == []  # only our own **Sandbox:**
    assert "\\n\\n**Sandbox:** Runs inside the sandbox <!-- hidden --> [ok](http://x)" in seen.text
    assert request.sandbox is not None and "\n" not in request.sandbox


def test_the_tool_call_card_title_and_raw_input_are_visible():
    mapper = UpdateMapper(CWD)
    arguments = json.dumps({"command": "ls\u202e -la\x1b[8m"})
    (start,) = mapper.map(ToolCall(id="s1", function=FunctionBody(name="Shell", arguments=arguments)))
    assert start["title"] == "Shell: ls\\u202e -la\\x1b[8m"
    assert start["rawInput"] == {"command": "ls\\u202e -la\\x1b[8m"}


def test_a_task_line_shows_the_models_description_as_text():
    block = BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="dev <!-- x --> **done**\nserver")
    seen = render(task_lines([block]))
    assert seen.html == [] and seen.code_spans == ["bash-1"]
    assert seen.markup == ["strong_open"]  # the state, ours
    assert "dev <!-- x --> **done**\\nserver" in seen.text
