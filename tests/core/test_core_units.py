"""Agent-core building blocks: slash parsing, approvals, tool dispatch, compaction maths, tool messages."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kimi_acp import sessions
from kimi_acp.config import LoopControl
from kimi_acp.core.approvals import Approvals
from kimi_acp.core.compaction import should_compact, split_point
from kimi_acp.core.messages import EMPTY_TOOL_OUTPUT, tool_result_message
from kimi_acp.core.slash import parse_slash
from kimi_acp.core.slash_commands import BUILTIN_COMMANDS, find_command
from kimi_acp.core.toolset import REJECTED_MESSAGE, FixedHost, Toolset, rejection_result
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.llm.types import Message
from kimi_acp.tools import builtin_tools
from kimi_acp.tools.base import Params, Tool, ToolContext, ToolEnv, ToolRejectedError, tool_ok
from kimi_acp.tools.external import InvalidToolSchema
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    FunctionBody,
    ImageURLPart,
    MediaURL,
    Request,
    ShellDisplayBlock,
    TextPart,
    TodoDisplayItem,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    ToolReturnValue,
)

# --------------------------------------------------------------------------- slash commands


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/clear", ("clear", "")),
        ("/clear\n", ("clear", "")),
        ("/compact keep db", ("compact", "keep db")),
        ("/compact   keep\n  db discussions  ", ("compact", "keep\n  db discussions")),
        ("/skill:x", ("skill:x", "")),
        ("/skill:code-review please check a.py", ("skill:code-review", "please check a.py")),
        ("/flow:release:v2 now", ("flow:release:v2", "now")),
        ("/usr/bin", None),
        ("/usr/bin/python -V", None),
        ("/", None),
        ("/ clear", None),
        ("//clear", None),
        ("/clear!", None),
        ("/skill:", None),
        ("please /clear", None),
        ("text then\n/clear", None),
        ("", None),
    ],
)
def test_parse_slash(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_slash(text) == expected


def test_find_command_and_aliases() -> None:
    clear = find_command("clear")
    assert clear is not None and find_command("reset") is clear
    assert find_command("nope") is None
    assert {c.name for c in BUILTIN_COMMANDS} >= {"init", "compact", "clear", "yolo", "plan"}


# --------------------------------------------------------------------------- approvals


@pytest.fixture
def session(tmp_path: Path) -> sessions.Session:
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    return sessions.create(work_dir)


def state_on_disk(session: sessions.Session) -> dict[str, Any]:
    return json.loads(session.state_file.read_text(encoding="utf-8"))


async def ask(approvals: Approvals, action: str = "run command", call_id: str = "tc-1") -> None:
    await approvals.request(
        tool_call_id=call_id,
        sender="Shell",
        action=action,
        description=f"Run `{call_id}`",
        display=[ShellDisplayBlock(language="bash", command="ls")],
    )


async def next_request(sent: list[Any], count: int = 1) -> list[ApprovalRequest]:
    for _ in range(200):
        requests = [m for m in sent if isinstance(m, ApprovalRequest)]
        if len(requests) >= count:
            return requests
        await asyncio.sleep(0.005)
    raise AssertionError(f"expected {count} approval requests, got {sent}")


async def test_yolo_and_runtime_yolo_ask_nobody(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    approvals.runtime_yolo = True
    await asyncio.wait_for(ask(approvals), 1)
    assert sent == [] and approvals.yolo
    assert state_on_disk(session)["approval"]["yolo"] is False  # runtime yolo is not persisted

    approvals.set_yolo(False)
    assert not approvals.yolo and not approvals.runtime_yolo
    approvals.set_yolo(True)
    assert state_on_disk(session)["approval"]["yolo"] is True
    fresh = Approvals(sessions.find(session.work_dir, session.id), sent.append)  # type: ignore[arg-type]
    assert fresh.yolo
    await asyncio.wait_for(ask(fresh), 1)
    assert sent == []


async def test_approve_sends_request_then_response(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    approvals.turn_id = "turn-7"
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    assert (request.tool_call_id, request.sender, request.action, request.source_kind, request.source_id) == (
        "tc-1", "Shell", "run command", "foreground_turn", "turn-7",
    )
    assert request.display == [ShellDisplayBlock(language="bash", command="ls")]
    assert approvals.pending == [request]
    request.resolve(ApprovalResponse(request_id="whatever", response="approve"))
    await asyncio.wait_for(task, 1)
    assert sent[1] == ApprovalResponse(request_id=request.id, response="approve")  # id normalized
    assert approvals.pending == []
    assert state_on_disk(session)["approval"]["auto_approve_actions"] == []


async def test_approve_for_session_persists_and_settles_pending_requests_with_the_same_action(
    session: sessions.Session,
) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    first = asyncio.create_task(ask(approvals, call_id="a"))
    second = asyncio.create_task(ask(approvals, call_id="b"))
    other = asyncio.create_task(ask(approvals, action="edit file", call_id="c"))
    requests = await next_request(sent, 3)
    by_call = {r.tool_call_id: r for r in requests}
    by_call["a"].resolve("approve_for_session")
    await asyncio.wait_for(asyncio.gather(first, second), 1)
    assert not other.done()  # a different action still waits
    assert state_on_disk(session)["approval"]["auto_approve_actions"] == ["run command"]
    responses = {m.request_id: m.response for m in sent if isinstance(m, ApprovalResponse)}
    assert responses == {by_call["a"].id: "approve_for_session", by_call["b"].id: "approve"}
    assert approvals.pending == [by_call["c"]]
    # later requests for the action are approved without asking
    before = len(sent)
    await asyncio.wait_for(ask(approvals, call_id="d"), 1)
    assert len(sent) == before
    # and so are those of a new process on the same session
    reopened = Approvals(sessions.find(session.work_dir, session.id), [].append)  # type: ignore[arg-type]
    assert reopened.session_actions == {"run command"}
    by_call["c"].resolve("reject")
    with pytest.raises(ToolRejectedError):
        await asyncio.wait_for(other, 1)


@pytest.mark.parametrize(
    ("answer", "feedback"),
    [
        ("reject", None),
        (ApprovalResponse(request_id="x", response="reject"), None),
        (ApprovalResponse(request_id="x", response="reject", feedback="use ls"), "use ls"),
        ({"response": "reject", "feedback": "not now"}, "not now"),
        ({"response": "reject", "feedback": ""}, None),
    ],
)
async def test_reject_raises_with_the_feedback(session: sessions.Session, answer: Any, feedback: str | None) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve(answer)
    with pytest.raises(ToolRejectedError) as info:
        await asyncio.wait_for(task, 1)
    assert info.value.feedback == feedback
    assert isinstance(sent[-1], ApprovalResponse) and sent[-1].response == "reject"
    assert sent[-1].request_id == request.id


@pytest.mark.parametrize(
    "garbled", [None, 42, "yes", "APPROVE", {"response": "maybe"}, {"decision": "approve"}, ["approve"], object()]
)
async def test_garbled_answers_are_rejections(session: sessions.Session, garbled: Any) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve(garbled)
    with pytest.raises(ToolRejectedError):
        await asyncio.wait_for(task, 1)
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="reject")


async def test_dict_answer_approves(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve({"request_id": "ignored", "response": "approve"})
    await asyncio.wait_for(task, 1)
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="approve")


async def test_cancellation_while_waiting_settles_the_request_as_rejected(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert request.resolved
    assert (await request.wait()) == ApprovalResponse(request_id=request.id, response="reject")
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="reject")
    assert approvals.pending == []
    assert request.resolve("approve") is False  # a late client answer changes nothing


async def test_reject_pending(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    tasks = [asyncio.create_task(ask(approvals, call_id=c)) for c in ("a", "b")]
    await next_request(sent, 2)
    approvals.reject_pending()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 1)
    assert all(isinstance(r, ToolRejectedError) and r.feedback is None for r in results)
    assert approvals.pending == []


# --------------------------------------------------------------------------- toolset dispatch


class EchoParams(Params):
    text: str
    times: int = 1


class EchoTool(Tool[EchoParams]):
    name = "Echo"
    description = "echo"
    params = EchoParams

    async def run(self, params: EchoParams, ctx: ToolContext) -> ToolReturnValue:
        await ctx.approve(action="echo", description=params.text)
        return tool_ok(params.text * params.times)


class BoomTool(Tool[Params]):
    name = "Boom"
    description = "always fails"
    params = Params

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolReturnValue:
        raise RuntimeError("disk on fire")


class Rejecter:
    def __init__(self, feedback: str | None = None) -> None:
        self.feedback = feedback
        self.calls: list[str] = []

    async def request(self, *, tool_call_id: str, sender: str, action: str, description: str, display: Any, **_: Any) -> None:
        self.calls.append(f"{sender}:{action}")
        raise ToolRejectedError(self.feedback)


class Todos:
    def get_todos(self) -> list[TodoDisplayItem]:
        return []

    def set_todos(self, items: list[TodoDisplayItem]) -> None:
        pass


def make_context_factory(work_dir: Path, approver: Any = None, send_request: Any = None) -> Any:
    approver = approver or _Approve()

    def make(name: str) -> ToolContext:
        return ToolContext(
            work_dir=work_dir, kaos=LocalKaos(), tool_call_id="tc", approver=approver, todos=Todos(),
            send_request=send_request, tool_name=name,
        )

    return make


class _Approve:
    async def request(self, **kwargs: Any) -> None:
        return None


def tc(name: str, arguments: str | None, call_id: str = "tc") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=arguments))


@pytest.fixture
def toolset() -> Toolset:
    return Toolset([*builtin_tools(), EchoTool(), BoomTool()])


async def test_handle_runs_a_tool(toolset: Toolset, tmp_path: Path) -> None:
    outcome = await toolset.handle(tc("Echo", '{"text": "ab", "times": 2}'), make_context_factory(tmp_path))
    assert outcome.result.output == "abab" and not outcome.result.is_error and not outcome.rejected


async def test_unknown_and_hidden_tools(toolset: Toolset, tmp_path: Path) -> None:
    outcome = await toolset.handle(tc("Nope", "{}"), make_context_factory(tmp_path))
    assert outcome.result.is_error and outcome.result.message == "Tool `Nope` not found"
    toolset.hidden.add("Echo")
    assert "Echo" not in [s.name for s in toolset.specs()]
    outcome = await toolset.handle(tc("Echo", '{"text": "x"}'), make_context_factory(tmp_path))
    assert outcome.result.is_error and outcome.result.message == "Tool `Echo` not found"


@pytest.mark.parametrize("arguments", ['{"text": ', "not json", '{"text": "a"} trailing'])
async def test_bad_json_arguments(toolset: Toolset, tmp_path: Path, arguments: str) -> None:
    outcome = await toolset.handle(tc("Echo", arguments), make_context_factory(tmp_path))
    assert outcome.result.is_error
    assert outcome.result.message.startswith("Error parsing JSON arguments: ")


@pytest.mark.parametrize("arguments", ["[1, 2]", '"text"', "42", "null"])
async def test_non_object_json_arguments(toolset: Toolset, tmp_path: Path, arguments: str) -> None:
    outcome = await toolset.handle(tc("Echo", arguments), make_context_factory(tmp_path))
    assert outcome.result.is_error
    assert outcome.result.message == "Error parsing JSON arguments: expected a JSON object"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        (None, "text"),  # no arguments at all: {} is validated, the missing field is named
        ('{"times": 1}', "text"),
        ('{"text": "a", "times": "many"}', "times"),
        ('{"text": "a", "colour": "red"}', "colour"),
    ],
)
async def test_validation_error_names_the_field(toolset: Toolset, tmp_path: Path, arguments: str | None, field: str) -> None:
    outcome = await toolset.handle(tc("Echo", arguments), make_context_factory(tmp_path))
    assert outcome.result.is_error
    assert outcome.result.message.startswith("Error validating JSON arguments: ")
    assert field in outcome.result.message


async def test_raw_control_characters_in_json_strings_are_accepted(toolset: Toolset, tmp_path: Path) -> None:
    outcome = await toolset.handle(tc("Echo", '{"text": "a\tb\nc"}'), make_context_factory(tmp_path))
    assert not outcome.result.is_error and outcome.result.output == "a\tb\nc"


async def test_tool_exception_becomes_a_tool_error(toolset: Toolset, tmp_path: Path) -> None:
    outcome = await toolset.handle(tc("Boom", "{}"), make_context_factory(tmp_path))
    assert outcome.result.is_error
    assert outcome.result.message == "Error running tool: disk on fire"


async def test_rejection_result_texts(toolset: Toolset, tmp_path: Path) -> None:
    silent = Rejecter()
    outcome = await toolset.handle(tc("Echo", '{"text": "x"}'), make_context_factory(tmp_path, silent))
    assert silent.calls == ["Echo:echo"]
    assert outcome.rejected and outcome.feedback is None
    assert outcome.result.is_error and outcome.result.message == REJECTED_MESSAGE
    assert outcome.result.model_dump()["display"] == [{"type": "brief", "text": "Rejected by user"}]
    outcome = await toolset.handle(tc("Echo", '{"text": "x"}'), make_context_factory(tmp_path, Rejecter("try y")))
    assert outcome.rejected and outcome.feedback == "try y"
    assert outcome.result.message == "The tool call is rejected by the user. User feedback: try y"
    assert rejection_result("try y") == outcome.result


async def test_a_rejected_shell_command_does_not_run(toolset: Toolset, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    outcome = await toolset.handle(
        tc("Shell", json.dumps({"command": f"touch {marker}"})), make_context_factory(tmp_path, Rejecter())
    )
    assert outcome.rejected and not marker.exists()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("WriteFile", {"path": "new.txt", "content": "x"}),
        ("StrReplaceFile", {"path": "existing.txt", "edit": {"old": "a", "new": "b"}}),
    ],
)
async def test_plan_mode_blocks_file_changes(tmp_path: Path, name: str, arguments: dict) -> None:
    (tmp_path / "existing.txt").write_text("a")
    session = FixedHost(plan_mode=True)
    toolset = Toolset(builtin_tools(), session)
    outcome = await toolset.handle(tc(name, json.dumps(arguments)), make_context_factory(tmp_path))
    assert outcome.result.is_error and outcome.result.message.startswith("Plan mode is on")
    assert not (tmp_path / "new.txt").exists() and (tmp_path / "existing.txt").read_text() == "a"
    # reading is still allowed in plan mode
    read = await toolset.handle(tc("ReadFile", '{"path": "existing.txt"}'), make_context_factory(tmp_path))
    assert not read.result.is_error
    session.plan_mode = False
    outcome = await toolset.handle(tc(name, json.dumps(arguments)), make_context_factory(tmp_path))
    assert not outcome.result.is_error


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}, "required": ["path"]}


async def test_external_tool_validates_arguments_before_the_client_sees_them(toolset: Toolset, tmp_path: Path) -> None:
    asked: list[Request] = []

    async def send_request(request: Request) -> Any:
        asked.append(request)
        return ToolResult(tool_call_id=request.id, return_value=ToolReturnValue(is_error=False, output="opened"))

    toolset.register_external("open_in_ide", "Open a file", SCHEMA)
    make = make_context_factory(tmp_path, send_request=send_request)
    outcome = await toolset.handle(tc("open_in_ide", '{"line": 3}'), make)
    assert outcome.result.is_error
    assert outcome.result.message.startswith("Error validating JSON arguments: ")
    assert "'path' is a required property" in outcome.result.message
    outcome = await toolset.handle(tc("open_in_ide", '{"path": "a", "line": "x"}'), make)
    assert outcome.result.is_error and outcome.result.message.startswith("Error validating JSON arguments: line:")
    assert asked == []
    outcome = await toolset.handle(tc("open_in_ide", '{"path": "a.py"}', call_id="x1"), make)
    assert outcome.result.output == "opened" and not outcome.result.is_error
    assert asked == [ToolCallRequest(id="tc", name="open_in_ide", arguments='{"path": "a.py"}')]


async def test_external_tool_without_a_client(toolset: Toolset, tmp_path: Path) -> None:
    toolset.register_external("ext", "d", {"type": "object"})
    outcome = await toolset.handle(tc("ext", "{}"), make_context_factory(tmp_path))
    assert outcome.result.is_error and "no client" in outcome.result.message


def test_register_external_conflicts_and_invalid_schemas(toolset: Toolset) -> None:
    for builtin in ("Shell", "WriteFile", "Echo"):
        with pytest.raises(ValueError, match="^conflicts with builtin tool$"):
            toolset.register_external(builtin, "clash", {"type": "object"})
    with pytest.raises(ValueError, match="name is required"):
        toolset.register_external("", "d", {"type": "object"})
    with pytest.raises(InvalidToolSchema, match="invalid JSON Schema"):
        toolset.register_external("bad", "d", {"type": "no-such-type"})
    with pytest.raises(InvalidToolSchema, match="JSON Schema object"):
        toolset.register_external("bad", "d", ["not", "a", "schema"])  # type: ignore[arg-type]
    assert toolset.get("bad") is None and toolset.get("Shell").__class__.__name__ == "Shell"
    toolset.register_external("ext", "v1", {"type": "object"})
    toolset.register_external("ext", "v2", SCHEMA)  # re-registering an external tool replaces it
    spec = next(s for s in toolset.specs() if s.name == "ext")
    assert (spec.description, spec.parameters) == ("v2", SCHEMA)
    assert toolset.names().count("ext") == 1


# --------------------------------------------------------------------------- compaction


@pytest.mark.parametrize(
    ("tokens", "max_size", "expected"),
    [
        (0, 100_000, False),
        (74_999, 100_000, False),  # reserve is capped at a quarter of the window: 25 000
        (75_000, 100_000, True),
        (5_999, 8_000, False),  # small window: reserve 2 000, not 50 000
        (6_000, 8_000, True),
        (849_999, 1_000_000, False),  # large window: the ratio triggers first
        (850_000, 1_000_000, True),
        (200_000, 262_144, False),
        (212_144, 262_144, True),  # 262 144 - 50 000
    ],
)
def test_should_compact(tokens: int, max_size: int, expected: bool) -> None:
    assert should_compact(tokens, max_size, LoopControl()) is expected


def test_should_compact_uses_loop_control() -> None:
    loop = LoopControl(compaction_trigger_ratio=0.5, reserved_context_size=1000)
    assert should_compact(50_000, 100_000, loop)
    assert not should_compact(49_999, 100_000, loop)


def msg(role: str, calls: int = 0) -> Message:
    tool_calls = [ToolCall(id=f"c{i}", function=FunctionBody(name="Glob", arguments="{}")) for i in range(calls)]
    return Message(role=role, content=role, tool_calls=tool_calls or None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ([], 0),
        (["user"], 0),
        (["user", "assistant"], 0),
        (["user", "assistant", "user", "assistant"], 2),
        (["user", "assistant", "user", "assistant", "user"], 3),
        (["user", "assistant+", "tool", "assistant"], 1),  # the call stays with its result
        (["user", "assistant", "user", "assistant+", "tool", "tool"], 2),
        (["user", "assistant+", "tool", "assistant+", "tool", "assistant"], 3),
    ],
)
def test_split_point(roles: list[str], expected: int) -> None:
    history = [msg(r.rstrip("+"), calls=2 if r.endswith("+") else 0) for r in roles]
    cut = split_point(history)
    assert cut == expected
    if cut:
        assert history[cut].role in ("user", "assistant")
        kept_ids = {c.id for m in history[cut:] for c in m.tool_calls or ()}
        assert all(m.tool_call_id in kept_ids or m.tool_call_id is None for m in history[cut:])


# --------------------------------------------------------------------------- tool result messages


def test_tool_result_message_shapes() -> None:
    error = tool_result_message("c1", ToolReturnValue(is_error=True, message="bad path", output="details"))
    assert error.model_dump(exclude_none=True) == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "<system>ERROR: bad path</system>"}, {"type": "text", "text": "details"}],
    }
    bare_error = tool_result_message("c1", ToolReturnValue(is_error=True))
    assert bare_error.content == [TextPart(text="<system>ERROR</system>")]
    ok = tool_result_message("c2", ToolReturnValue(is_error=False, message="Wrote 3 bytes", output="x"))
    assert ok.content == [TextPart(text="<system>Wrote 3 bytes</system>"), TextPart(text="x")]
    plain = tool_result_message("c3", ToolReturnValue(is_error=False, output="just output"))
    assert plain.content == [TextPart(text="just output")]
    empty = tool_result_message("c4", ToolReturnValue(is_error=False))
    assert empty.content == EMPTY_TOOL_OUTPUT == "<system>Tool output is empty.</system>"
    assert empty.tool_call_id == "c4" and empty.role == "tool"
    image = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AA"))
    parts = tool_result_message("c5", ToolReturnValue(is_error=False, output=[TextPart(text="see"), image]))
    assert parts.content == [TextPart(text="see"), image]


# --------------------------------------------------------------------------- session settings


def _core(tmp_path: Path, config_text: str, session: Any = None) -> Any:
    from kimi_acp.config import load_config
    from kimi_acp.core.agent_core import AgentCore
    from kimi_acp.kaos.local import LocalKaos

    loaded = load_config(config_text=config_text)
    return AgentCore.open(session=session or sessions.create(tmp_path), loaded_config=loaded, kaos=LocalKaos())


SETTINGS_CONFIG = (
    '{"default_model": "a", "default_plan_mode": true, '
    '"models": {"a": {"provider": "p", "model": "echo", "max_context_size": 1000}}, '
    '"providers": {"p": {"type": "_echo"}}}'
)


def test_constructing_a_core_writes_nothing_and_open_starts_the_session(tmp_path: Path) -> None:
    """`AgentCore(...)` only holds what it is given; `AgentCore.open` reads the history and, for a
    new session, writes the system prompt and the config's plan mode."""
    from kimi_acp.config import load_config
    from kimi_acp.core.agent_core import AgentCore
    from kimi_acp.core.context import Context

    session = sessions.create(tmp_path)
    before = sorted(p.name for p in session.dir.iterdir())
    loaded = load_config(config_text=SETTINGS_CONFIG)
    core = AgentCore(session=session, loaded_config=loaded, kaos=LocalKaos(), context=Context(session.context_file))
    assert sorted(p.name for p in session.dir.iterdir()) == before
    assert not session.context_file.exists() and not core.plan_mode

    opened = AgentCore.open(session=session, loaded_config=loaded, kaos=LocalKaos())
    assert Context.load(session.context_file).system_prompt == opened.context.system_prompt
    assert opened.context.system_prompt and opened.plan_mode
    again = AgentCore.open(session=session, loaded_config=loaded, kaos=LocalKaos())
    assert again.context.system_prompt == opened.context.system_prompt  # read back, not written again


def test_default_plan_mode_applies_to_new_sessions_only(tmp_path: Path) -> None:
    core = _core(tmp_path, SETTINGS_CONFIG)
    assert core.plan_mode is True
    core.controls.set_plan_mode(False)
    reopened = _core(tmp_path, SETTINGS_CONFIG, sessions.find(tmp_path, core.session.id))
    assert reopened.plan_mode is False  # the user's choice for this session sticks


def test_a_session_model_removed_from_the_config_falls_back_to_the_default(tmp_path: Path) -> None:
    session = sessions.create(tmp_path)
    session.state.model = "gone"
    session.save_state()
    core = _core(tmp_path, SETTINGS_CONFIG, session)
    assert core.controls.model_alias is None
    assert core.resolved_model() is not None and core.resolved_model().alias == "a"


# ------------------------------------------------------------------ deferred built-in tools


def test_a_deferred_tool_set_names_every_builtin_and_creates_a_tool_on_first_use(tmp_path: Path) -> None:
    from kimi_acp.tools import BUILTIN_TOOL_NAMES, DeferredTool, deferred_builtin_tools
    from kimi_acp.tools.grep import Grep
    from kimi_acp.tools.media import ReadMediaFile

    session = FixedHost()
    toolset = Toolset(deferred_builtin_tools(), session)
    assert toolset.names() == list(BUILTIN_TOOL_NAMES) == [t.name for t in builtin_tools()]
    assert all(isinstance(t, DeferredTool) for t in toolset._tools.values())
    grep = toolset.get("Grep")
    assert isinstance(grep, Grep) and toolset.get("Grep") is grep  # created once
    assert isinstance(toolset._tools["Glob"], DeferredTool)  # the others wait
    # a tool created late still reads the session's model capabilities (ReadMediaFile is listed by them)
    assert "ReadMediaFile" not in [s.name for s in toolset.specs()]
    session.env = ToolEnv(model_capabilities=frozenset({"image_in"}))
    media = toolset.get("ReadMediaFile")
    assert isinstance(media, ReadMediaFile) and media.offer(session.env) is not None
    eager = Toolset(builtin_tools(), session)
    assert toolset.specs() == eager.specs() and "ReadMediaFile" in [s.name for s in eager.specs()]
    assert not any(isinstance(t, DeferredTool) for t in toolset._tools.values())


async def test_a_deferred_tool_runs_when_the_model_calls_it(tmp_path: Path) -> None:
    from kimi_acp.tools import deferred_builtin_tools

    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    toolset = Toolset(deferred_builtin_tools())
    outcome = await toolset.handle(tc("ReadFile", json.dumps({"path": "notes.txt"})), make_context_factory(tmp_path))
    assert not outcome.result.is_error and "two" in str(outcome.result.output)
