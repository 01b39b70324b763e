"""`kimi acp` with ACP plan operations (`clientCapabilities.plan`), on the Python SDK client: the todo
list as one checklist under a stable id, plan mode's plan as a Markdown plan (this client cannot
open files) updated when the agent edits it and removed when it is cleared or plan mode ends
without it; a session/load in a fresh process shows the same plans; a client without the
capability gets exactly the old `plan` checklist and the plan as a block of the agent's message.
Every message is schema-checked (unstable schema). The Node SDK and file plans:
tests/e2e/test_acp_node.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from tests.support.acp_client import spawn_acp
from tests.support.acp_fixtures import acp_env, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

PLAN = "# Plan\n\n1. Write `feature.py`.\n"
EDITED = "# Plan\n\n1. Write `feature.py` with tests.\n"
PLAN_KINDS = ("plan", "plan_update", "plan_removed")


@pytest.fixture(autouse=True)
def share_env(share: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))  # where the tests create their sessions


def plan_session(share: Path, project: Path, session_id: str, slug: str, *, plan_mode: bool = False) -> Path:
    """A session whose planning round's file name is known in advance (so a script can write it)."""
    session = sessions.create(project, session_id)
    session.state.plan_session_id, session.state.plan_slug = "feedface" * 4, slug
    session.state.plan_mode = plan_mode
    session.save_state()
    return share / "plans" / f"{slug}.md"


def todo_call(call_id: str, *items: tuple[str, str]) -> str:
    return tool_call(call_id, "SetTodoList", {"todos": [{"title": t, "status": s} for t, s in items]})


def planning_script(plan_file: Path) -> list[str]:
    return [
        todo_call("t1", ("Plan the feature", "in_progress"), ("Write it", "pending")),
        tool_call("e1", "EnterPlanMode", {}),
        tool_call("w1", "WriteFile", {"path": str(plan_file), "content": PLAN}),
        tool_call("r1", "StrReplaceFile", {"path": str(plan_file), "edit": {"old": "`.", "new": "` with tests."}}),
        tool_call("x1", "ExitPlanMode", {}),
        todo_call("t2", ("Plan the feature", "done"), ("Write it", "in_progress")),
        "text: Implementing the plan.",
    ]


def answering(*labels: str) -> Any:
    answers = iter(labels)

    def policy(request: dict[str, Any]) -> str:
        label = next(answers)
        return next(o.option_id for o in request["options"] if o.name == label)

    return policy


def plans_of(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in PLAN_KINDS]


async def run_planning(share: Path, project: Path, *, plan: bool) -> tuple[list[dict[str, Any]], Path]:
    plan_file = plan_session(share, project, "acp-plans", "groot-storm-flash")
    write_config(share, planning_script(plan_file), permissions={"always_ask": False})
    async with serve_acp(acp_env(share)) as agent:
        agent.client.plan = plan
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id="acp-plans", mcp_servers=[])
        agent.client.permission_policy = answering("Yes", "Approve")
        response = await agent.prompt("acp-plans", "plan the feature first")
        assert response.stop_reason == "end_turn"
        return agent.recorder.updates("acp-plans"), plan_file


async def load_in_a_fresh_process(share: Path, project: Path, session_id: str, *, plan: bool = True) -> list[dict[str, Any]]:
    async with spawn_acp(acp_env(share)) as agent:
        agent.client.plan = plan
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[])
        return agent.recorder.updates(session_id)


@pytest.mark.processes
async def test_todo_list_and_plan_as_plans_and_the_same_after_a_load(share, project):
    updates, plan_file = await run_planning(share, project, plan=True)
    assert plan_file.read_text() == EDITED
    todo = [{"content": "Plan the feature", "priority": "medium", "status": "in_progress"},
            {"content": "Write it", "priority": "medium", "status": "pending"}]
    done = [{**todo[0], "status": "completed"}, {**todo[1], "status": "in_progress"}]
    shown = plans_of(updates)
    assert shown == [
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "todo", "entries": todo}},
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "plan:groot-storm-flash", "content": PLAN}},
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "plan:groot-storm-flash", "content": EDITED}},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "todo", "entries": done}},
    ]  # ExitPlanMode presented the plan as it was last shown: no update, and no copy in the message
    assert "**Plan**" not in texts(updates) and texts(updates).endswith("Implementing the plan.")
    assert plans_of(await load_in_a_fresh_process(share, project, "acp-plans")) == shown


async def test_without_the_capability_the_old_plan_updates(share, project):
    updates, plan_file = await run_planning(share, project, plan=False)
    assert plans_of(updates) == [
        {"sessionUpdate": "plan", "entries": [{"content": "Plan the feature", "priority": "medium", "status": "in_progress"},
                                              {"content": "Write it", "priority": "medium", "status": "pending"}]},
        {"sessionUpdate": "plan", "entries": [{"content": "Plan the feature", "priority": "medium", "status": "completed"},
                                              {"content": "Write it", "priority": "medium", "status": "in_progress"}]},
    ]
    assert f"**Plan** (`{plan_file}`)\n\n{EDITED.strip()}\n\n" in texts(updates)


@pytest.mark.processes
async def test_a_cleared_plan_and_plan_mode_ending_without_one_remove_it(share, project):
    plan_file = plan_session(share, project, "acp-plans-2", "rogue-beast-cyborg", plan_mode=True)
    write_config(share, [
        tool_call("w1", "WriteFile", {"path": str(plan_file), "content": PLAN}), "text: written",
        tool_call("w2", "WriteFile", {"path": str(plan_file), "content": EDITED}), "text: written again",
    ])
    plan_id = "plan:rogue-beast-cyborg"
    async with serve_acp(acp_env(share)) as agent:
        agent.client.plan = True
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id="acp-plans-2", mcp_servers=[])
        marks = [0]
        for prompt in ("write the plan", "/plan clear", "write it again"):
            await agent.prompt("acp-plans-2", prompt)
            marks.append(len(agent.recorder.updates("acp-plans-2")))
        plan_file.unlink()  # deleted by hand: plan mode then ends without a plan (from the IDE's picker)
        await agent.conn.set_session_mode(session_id="acp-plans-2", mode_id="default")
        updates = agent.recorder.updates("acp-plans-2")  # what came before set_mode's answer, between turns
    steps = [plans_of(updates[a:b]) for a, b in zip(marks, [*marks[1:], len(updates)])]
    markdown = {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": plan_id, "content": PLAN}}
    assert steps[0] == [markdown]
    assert steps[1] == [{"sessionUpdate": "plan_removed", "planId": plan_id}] and "Plan cleared." in texts(updates)
    assert steps[2] == [{**markdown, "plan": {**markdown["plan"], "content": EDITED}}]
    assert steps[3] == [{"sessionUpdate": "plan_removed", "planId": plan_id}]
    assert sessions.find(project, "acp-plans-2").state.plan_mode is False  # type: ignore[union-attr]
    # A load shows the plans as they were recorded, and removes the plan whose file is gone.
    replayed = plans_of(await load_in_a_fresh_process(share, project, "acp-plans-2"))
    assert replayed[-1] == {"sessionUpdate": "plan_removed", "planId": plan_id}
    assert [u["plan"]["content"] for u in replayed[:-1]] == [PLAN, EDITED]
