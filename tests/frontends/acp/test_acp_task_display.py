"""ACP cards for background tasks: the `background_task` display blocks shown as the tasks' state.

(When a Shell card goes `in_progress` is no longer guessed from its arguments and the session's
approvals: the core says when a call starts, tests/core/test_tool_started.py.)"""

from __future__ import annotations

from kimi_acp.frontends.acp.convert import result_content
from kimi_acp.wire.types import BackgroundTaskDisplayBlock, BriefDisplayBlock, ToolReturnValue


def _result(*blocks, output="model text", is_error=False) -> ToolReturnValue:
    return ToolReturnValue(is_error=is_error, output=output, message="msg", display=list(blocks))


def _texts(content) -> list[str]:
    return [c["content"]["text"] for c in content]


def test_started_listed_and_stopped_tasks_show_their_state():
    running = BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="dev server")
    killed = BackgroundTaskDisplayBlock(task_id="bash-2", kind="bash", status="killed", description="")
    for tool in ("Shell", "TaskList", "TaskStop"):
        content = result_content(tool, _result(BriefDisplayBlock(text="Started"), running, killed), terminal_shown=False)
        assert _texts(content) == ["- dev server (`bash-1`, bash): **running**\n- bash-2 (`bash-2`, bash): **killed**"]


def test_task_output_shows_the_state_then_the_output_verbatim():
    done = BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="completed", description="tests")
    content = result_content("TaskOutput", _result(done, output="status: completed\n[output]\n*ok*"), terminal_shown=False)
    state, output = _texts(content)
    assert state == "- tests (`bash-1`, bash): **completed**"
    assert output.startswith("```\n") and "*ok*" in output  # fenced: not rendered as markdown


def test_an_error_shows_the_error_not_a_state():
    block = BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="x")
    content = result_content("TaskStop", _result(block, output="", is_error=True), terminal_shown=False)
    assert _texts(content) == ["msg"]


def test_a_taskstop_permission_request_names_the_task():
    from pathlib import Path

    from kimi_acp.frontends.acp.updates import UpdateMapper
    from kimi_acp.wire.types import ApprovalRequest, FunctionBody, ToolCall

    mapper = UpdateMapper(Path("/project"))
    mapper.map(ToolCall(id="s1", function=FunctionBody(name="TaskStop", arguments='{"task_id": "bash-1"}')))
    block = BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="dev server")
    request = ApprovalRequest(id="r1", tool_call_id="s1", sender="TaskStop", action="stop background task",
                              description="Stop background task `bash-1`", display=[block])
    card = mapper.permission_tool_call(request)
    texts = [c["content"]["text"] for c in card["content"]]
    assert texts == ["Stop background task `bash-1`", "- dev server (`bash-1`, bash): **running**"]
    assert card["title"] == "TaskStop: bash-1" and card["status"] == "pending"
