"""ACP plan operations message by message (no process): what a client that advertised
`clientCapabilities.plan` is shown of the todo list and of plan mode's plan, live and on replay,
and that a client without it gets exactly the old updates. Every update is checked against the
vendored unstable schema. End to end: tests/e2e/test_acp_plans.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimi_acp.core.plan_file import PLAN_EXTRAS_MAX, plan_extras, plan_in_extras
from kimi_acp.core.turn import PlanCleared
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.wire.serde import to_envelope
from kimi_acp.wire.types import (
    FunctionBody,
    PlanDisplay,
    StatusUpdate,
    SubagentEvent,
    TodoDisplayBlock,
    TodoDisplayItem,
    ToolCall,
    ToolResult,
    ToolReturnValue,
)
from tests.core.test_plan_mode import mapped  # every update checked against the schema

CWD = Path("/work/project")
PLAN_OPS = {"plan": {}}
PLAN_OPS_AND_FILES = {"plan": {}, "fs": {"readTextFile": True, "writeTextFile": True}}


def call(llm_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=llm_id, function=FunctionBody(name=name, arguments=json.dumps(arguments)))


def todos(llm_id: str, *items: tuple[str, str]) -> list[Any]:
    """A SetTodoList call and its result."""
    block = TodoDisplayBlock(items=[TodoDisplayItem(title=t, status=s) for t, s in items])  # type: ignore[arg-type]
    arguments = {"todos": [{"title": t, "status": s} for t, s in items]}
    result = ToolReturnValue(is_error=False, message="Todo list updated", display=[block])
    return [call(llm_id, "SetTodoList", arguments), ToolResult(tool_call_id=llm_id, return_value=result)]


def plan_write(llm_id: str, path: Path, content: str) -> list[Any]:
    """A WriteFile of the plan file and its result, as the toolset makes it (the plan in `extras`)."""
    result = ToolReturnValue(is_error=False, message="File successfully overwritten.", extras=plan_extras(path, content))
    return [call(llm_id, "WriteFile", {"path": str(path), "content": content}), ToolResult(tool_call_id=llm_id, return_value=result)]


def plans_of(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in ("plan", "plan_update", "plan_removed")]


def test_the_todo_list_is_one_checklist_under_a_stable_id() -> None:
    mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    first = plans_of(mapped(mapper, *todos("t1", ("Read the code", "in_progress"), ("Fix it", "pending"))))
    second = plans_of(mapped(mapper, *todos("t2", ("Read the code", "done"), ("Fix it", "in_progress"))))
    assert first == [{"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "todo", "entries": [
        {"content": "Read the code", "priority": "medium", "status": "in_progress"},
        {"content": "Fix it", "priority": "medium", "status": "pending"},
    ]}}]
    assert second[0]["plan"]["planId"] == "todo"
    assert [e["status"] for e in second[0]["plan"]["entries"]] == ["completed", "in_progress"]
    mapper.begin_turn()  # a later turn: still the same plan
    third = plans_of(mapped(mapper, *todos("t1", ("Ship it", "pending"))))
    assert third[0]["plan"]["planId"] == "todo"
    assert plans_of(mapped(mapper, *todos("t3"))) == [{"sessionUpdate": "plan_removed", "planId": "todo"}]
    # A client that resumed the session may show a list this process never sent: an empty one removes it.
    resumed = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    assert plans_of(mapped(resumed, *todos("t4"))) == [{"sessionUpdate": "plan_removed", "planId": "todo"}]


def test_a_subagents_todo_list_is_a_plan_of_its_own() -> None:
    mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    mapped(mapper, call("a1", "Agent", {"description": "look around", "prompt": "go"}))
    _, result = todos("s1", ("Grep for it", "in_progress"))
    events = [SubagentEvent(parent_tool_call_id="a1", agent_id="ag7", subagent_type="explore", event=to_envelope(m))
              for m in (call("s1", "SetTodoList", {"todos": []}), result)]
    (update,) = plans_of(mapped(mapper, *events))
    assert update["plan"]["planId"] == "todo:ag7"


def test_plan_mode_plan_as_markdown_for_a_client_that_cannot_open_files(tmp_path: Path) -> None:
    plan = tmp_path / "plans" / "groot-storm-flash.md"
    plan.parent.mkdir()
    plan.write_text("# Plan\n1. b\n")
    mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    written = plans_of(mapped(mapper, StatusUpdate(plan_mode=True), *plan_write("w1", plan, "# Plan\n1. a\n")))
    assert written == [{"sessionUpdate": "plan_update", "plan": {
        "type": "markdown", "planId": "plan:groot-storm-flash", "content": "# Plan\n1. a\n"}}]
    edited = plans_of(mapped(mapper, *plan_write("w2", plan, "# Plan\n1. b\n")))
    assert edited[0]["plan"] == {"type": "markdown", "planId": "plan:groot-storm-flash", "content": "# Plan\n1. b\n"}
    # ExitPlanMode presents it unchanged: nothing new, and no copy of it in the agent's message.
    assert mapped(mapper, PlanDisplay(content="# Plan\n1. b\n", file_path=str(plan))) == []
    # The user edited it before it was presented: the new text.
    (presented,) = mapped(mapper, PlanDisplay(content="# Plan\n1. c\n", file_path=str(plan)))
    assert presented["plan"]["content"] == "# Plan\n1. c\n"
    assert plans_of(mapped(mapper, StatusUpdate(plan_mode=False))) == []  # approved: it stays to reopen


def test_plan_mode_plan_as_a_file_for_a_client_that_opens_files(tmp_path: Path) -> None:
    plan = tmp_path / "plans" / "thor-hulk-vision.md"
    plan.parent.mkdir()
    plan.write_text("# P\n")
    mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS_AND_FILES)
    first, second = plans_of(mapped(mapper, *plan_write("w1", plan, "# P\n"), *plan_write("w2", plan, "# P2\n")))
    assert first == second == {"sessionUpdate": "plan_update", "plan": {
        "type": "file", "planId": "plan:thor-hulk-vision", "uri": plan.as_uri()}}


def test_a_cleared_or_vanished_plan_is_removed(tmp_path: Path) -> None:
    plan = tmp_path / "plan-a.md"
    plan.write_text("# A\n")
    mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    mapped(mapper, *plan_write("w1", plan, "# A\n"))
    assert mapped(mapper, PlanCleared(str(plan))) == [{"sessionUpdate": "plan_removed", "planId": "plan:plan-a"}]
    assert plans_of(mapped(mapper, StatusUpdate(plan_mode=False))) == []  # already removed
    mapped(mapper, StatusUpdate(plan_mode=True), *plan_write("w2", plan, "# A again\n"))
    plan.unlink()  # deleted by hand: plan mode then ends without a plan
    assert mapped(mapper, StatusUpdate(plan_mode=False)) == [{"sessionUpdate": "plan_removed", "planId": "plan:plan-a"}]
    plan.write_text("  \n")
    assert plans_of(mapped(mapper, *plan_write("w3", plan, "  \n"))) == []  # an empty plan is no plan
    mapped(mapper, *plan_write("w4", plan, "# B\n"))
    assert plans_of(mapped(mapper, *plan_write("w5", plan, "\n"))) == [{"sessionUpdate": "plan_removed", "planId": "plan:plan-a"}]


def test_a_replay_shows_the_same_plans_and_removes_those_whose_file_is_gone(tmp_path: Path) -> None:
    kept, cleared = tmp_path / "kept.md", tmp_path / "cleared.md"
    kept.write_text("# K\n")
    history = [*todos("t1", ("One", "pending")), *plan_write("w1", kept, "# K\n"), StatusUpdate(plan_mode=False),
               StatusUpdate(plan_mode=True), *plan_write("w2", cleared, "# C\n")]
    live = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    shown = plans_of(mapped(live, *history))
    replayed_mapper = UpdateMapper(CWD, client_capabilities=PLAN_OPS, replay=True)
    replayed = plans_of(mapped(replayed_mapper, *history))
    assert replayed == shown and len(shown) == 3
    assert replayed_mapper.flush() == [{"sessionUpdate": "plan_removed", "planId": "plan:cleared"}]  # never written to disk here
    # A live mapper after a load knows what the client was shown: an empty list removes the replayed one.
    after_load = UpdateMapper(CWD, client_capabilities=PLAN_OPS)
    after_load.follow(replayed_mapper)
    kept.unlink()
    assert mapped(after_load, StatusUpdate(plan_mode=False)) == [{"sessionUpdate": "plan_removed", "planId": "plan:kept"}]


def test_without_the_capability_the_old_updates_exactly(tmp_path: Path) -> None:
    plan = tmp_path / "p.md"
    plan.write_text("# P\n")
    history = [*todos("t1", ("One", "in_progress")), StatusUpdate(plan_mode=True), *plan_write("w1", plan, "# P\n"),
               PlanDisplay(content="# P\n", file_path=str(plan)), PlanCleared(str(plan)), StatusUpdate(plan_mode=False)]
    for caps in ({}, {"plan": None}, {"plan": True}, {"fs": {"readTextFile": True}}):
        updates = mapped(UpdateMapper(CWD, client_capabilities=caps), *history)  # type: ignore[arg-type]
        assert plans_of(updates) == [{"sessionUpdate": "plan", "entries": [
            {"content": "One", "priority": "medium", "status": "in_progress"}]}]
        assert [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"] == [
            f"\n\n**Plan** (`{plan}`)\n\n# P\n\n"]


def test_a_plan_write_carries_the_plan_and_a_huge_one_is_cut() -> None:
    assert plan_in_extras(plan_extras(Path("/s/plans/a.md"), "# A\n")) == ("/s/plans/a.md", "# A\n")
    path, content = plan_in_extras(plan_extras(Path("/s/plans/a.md"), "x" * (PLAN_EXTRAS_MAX + 5))) or ("", "")
    assert content.startswith("x" * PLAN_EXTRAS_MAX) and "(5 more characters in `/s/plans/a.md`)" in content
    for extras in (None, {}, {"plan_file": "nope"}, {"plan_file": {"path": "", "content": "x"}}, {"plan_file": {"path": "/a"}}):
        assert plan_in_extras(extras) is None
