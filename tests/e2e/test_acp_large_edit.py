"""An edit of a 2 MB file over ACP: the `diff` content is the hunk that changed (a few lines with
their context), not the whole file and not a size summary; the card's location is the changed
line. Every message is checked against the ACP schema by the test client."""

from __future__ import annotations

from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

LINES = 31_747


async def test_an_edit_of_a_2mb_file_sends_its_hunk(share, project):
    big = project / "big.txt"
    big.write_text("".join(f"line {i:05d} of a large generated file, padded to be about 64 bytes.\n" for i in range(1, LINES + 1)))
    assert big.stat().st_size > 2_000_000
    edit = {"path": "big.txt", "edit": {"old": "line 20001 of", "new": "line 20001 (edited) of"}}
    write_config(share, [tool_call("e1", "StrReplaceFile", edit), "text: ok"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "edit it")
        assert response.stop_reason == "end_turn"
        (request,) = agent.client.permission_requests
        (diff,) = [c.model_dump(by_alias=True) for c in request["tool_call"].content]
        assert diff["type"] == "diff" and diff["path"] == str(big)
        old_lines, new_lines = diff["oldText"].splitlines(), diff["newText"].splitlines()
        assert len(old_lines) == len(new_lines) == 7  # the changed line and three of context each side
        assert old_lines[0].startswith("line 19998 of") and old_lines[3].startswith("line 20001 of")
        assert new_lines[3].startswith("line 20001 (edited) of")
        updates = agent.recorder.updates(session.session_id)
        done = [u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"]
        assert done[-1]["locations"] == [{"path": str(big), "line": 20_001}]
        (shown,) = done[-1]["content"]
        assert shown["type"] == "diff" and len(shown["newText"]) < 1000
