"""Symlinks out of the project: an edit through one asks for the outside approval, over Wire and ACP.

"Approve for this session" of an in-project edit covers the action "edit file" only; a write that
really lands outside (a symlinked directory or file pointing out of the project) must still ask,
with the action "edit file outside of working directory".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import events, tool_call

OUTSIDE_ACTION = "edit file outside of working directory"
EDIT = {"old": "1", "new": "2"}


@pytest.fixture
def outside(tmp_path: Path, work_dir: Path) -> Path:
    """A directory next to the project, reachable from inside it through `link-dir` and `link-file`."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "target.txt").write_text("secret = 1\n")
    (work_dir / "link-dir").symlink_to(directory, target_is_directory=True)
    (work_dir / "link-file").symlink_to(directory / "target.txt")
    return directory


def escape_scripts(work_dir: Path) -> list[str]:
    """An in-project edit, then edits through both links, then a relative one through the dir link."""
    return [
        tool_call("w1", "WriteFile", {"path": "inside.txt", "content": "in\n"}),
        tool_call("w2", "WriteFile", {"path": str(work_dir / "link-dir" / "new.txt"), "content": "out\n"}),
        tool_call("e1", "StrReplaceFile", {"path": str(work_dir / "link-file"), "edit": EDIT}),
        tool_call("w3", "WriteFile", {"path": "link-dir/relative.txt", "content": "out\n"}),
        "text: done",
    ]


def assert_outside_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "secret = 1\n"


async def test_wire_edits_through_symlinks_ask_for_the_outside_action(start_wire, work_dir, outside):
    wire = await start_wire(escape_scripts(work_dir))
    prompt_id = await wire.request("prompt", {"user_input": "edit"})
    actions = []
    for answer in ("approve_for_session", "reject", "reject"):
        request, _ = await wire.next_request()
        payload = request["params"]["payload"]
        actions.append((payload["action"], payload["description"]))
        feedback = {"feedback": "stay in the project"} if answer == "reject" else {}
        await wire.respond(request["id"], {"request_id": payload["id"], "response": answer, **feedback})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]  # the relative one never asked

    real = outside.resolve()
    assert actions == [
        ("edit file", f"Write file `{work_dir / 'inside.txt'}`"),
        (
            OUTSIDE_ACTION,
            f"Write file `{work_dir / 'link-dir/new.txt'}` (through a symbolic link: `{real / 'new.txt'}`)",
        ),
        (
            OUTSIDE_ACTION,
            f"Edit file `{work_dir / 'link-file'}` (through a symbolic link: `{real / 'target.txt'}`)",
        ),
    ]
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    relative = results["w3"]
    assert relative["is_error"] and "a symbolic link to" in relative["message"]
    assert "absolute path" in relative["message"]
    assert (work_dir / "inside.txt").read_text() == "in\n"
    assert_outside_untouched(outside)
    assert await wire.close() == 0


async def test_wire_approved_outside_edit_still_writes(start_wire, work_dir, outside):
    """Asking is not refusing: approving the outside action writes through the link."""
    target = str(work_dir / "link-file")
    append = {"path": target, "content": "new\n", "mode": "append"}
    wire = await start_wire([tool_call("w1", "WriteFile", append), "text: ok"])
    prompt_id = await wire.request("prompt", {"user_input": "append"})
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    assert payload["action"] == OUTSIDE_ACTION
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, _ = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    assert (outside / "target.txt").read_text() == "secret = 1\nnew\n"
    assert (work_dir / "link-file").is_symlink()


def recorded_actions(share: Path, session_id: str) -> list[str]:
    path = next(share.glob(f"sessions/*/{session_id}/wire.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [r["message"]["payload"]["action"] for r in records if r["message"]["type"] == "ApprovalRequest"]


async def test_acp_edits_through_symlinks_ask_again_after_approve_for_session(share, project, outside):
    write_config(share, escape_scripts(project))
    async with serve_acp(acp_env(share)) as agent:  # no client fs: the agent writes the files itself
        answers = iter(["approve_for_session", "reject", "reject"])

        def policy(request: dict[str, Any]) -> str:
            return next(answers)

        agent.client.permission_policy = policy
        await agent.initialize()
        session = await agent.new_session(project)
        for prompt in ("edit", "edit the linked file", "edit relative"):  # a rejection ends an ACP turn
            response = await agent.prompt(session.session_id, prompt)
            assert response.stop_reason == "end_turn"
        asked = [r["tool_call"].raw_input["path"] for r in agent.client.permission_requests]
        assert asked == ["inside.txt", str(project / "link-dir" / "new.txt"), str(project / "link-file")]
    assert recorded_actions(share, session.session_id) == ["edit file", OUTSIDE_ACTION, OUTSIDE_ACTION]
    assert (project / "inside.txt").read_text() == "in\n"
    assert_outside_untouched(outside)
