"""ACP cards for background tasks: which approval a Shell call may ask (decided from its
arguments), and the `background_task` display blocks shown as the tasks' state."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kimi_acp.frontends.acp.convert import approval_actions, result_content, runs_unasked
from kimi_acp.wire.types import BackgroundTaskDisplayBlock, BriefDisplayBlock, ToolReturnValue


@dataclass
class State:
    session_actions: frozenset[str] = frozenset()
    yolo: bool = False
    always_ask: bool = False


@pytest.mark.parametrize(
    ("arguments", "approved", "expected"),
    [
        ({"command": "make"}, {"run command:exactly=make"}, True),
        ({"command": "make", "run_in_background": False}, {"run command:exactly=make"}, True),
        ({"command": "make", "run_in_background": True}, {"run command:exactly=make"}, False),
        ({"command": "make", "run_in_background": True}, {"run background command:exactly=make"}, True),
        ({"command": "make"}, {"run background command:exactly=make"}, False),
        ({"command": "make", "run_in_background": "yes"}, {"run command:exactly=make"}, False),  # unclear: may be either
        ({"command": "make"}, {"run command"}, False),  # a bare action of an older version covers nothing
        ({"command": "rm x"}, {"run command:ls"}, False),
        ({"command": "ls -l"}, set(), True),  # only reads: runs unasked
        ({"command": "cat ~/.ssh/id_rsa"}, set(), False),  # names a credentials file: asks with a warning
        (None, {"run command:ls", "run background command:ls"}, False),  # which command: not known yet
    ],
)
def test_shell_runs_unasked_only_when_its_own_action_is_approved(arguments, approved, expected, tmp_path):
    assert runs_unasked("Shell", State(frozenset(approved)), arguments, tmp_path) is expected


def test_a_read_only_command_asks_in_always_ask_mode(tmp_path):
    assert not runs_unasked("Shell", State(always_ask=True), {"command": "ls -l"}, tmp_path)


def test_approval_actions_of_other_tools_ignore_arguments():
    assert approval_actions("TaskStop", {"task_id": "bash-1"}) == {"stop background task"}
    assert approval_actions("SomeMcpTool", {}) is None
    assert not runs_unasked("SearchWeb", None) and not runs_unasked("FetchURL", None)  # they ask per host
    assert runs_unasked("ReadFile", None)  # asks only now and then: the card shows it running


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
