"""Tool dispatch (kimi_acp/core/toolset.py): arguments, errors, rejections, plan mode, external tools, and the
deferred built-in tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kimi_acp.core.toolset import REJECTED_MESSAGE, FixedHost, Toolset, rejection_result
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.tools import builtin_tools
from kimi_acp.tools.base import Params, Tool, ToolContext, ToolEnv, ToolRejectedError, tool_ok
from kimi_acp.tools.external import InvalidToolSchema
from kimi_acp.wire.types import (
    FunctionBody,
    Request,
    TodoDisplayItem,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    ToolReturnValue,
)


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
        with pytest.raises(ValueError, match=r"^conflicts with builtin tool$"):
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
