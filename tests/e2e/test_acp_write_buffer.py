"""WriteFile with client fs starts from the editor's buffer of a file on disk; a new file is not
read through the editor at all (acpx printed "Resource not found" in a successful turn), and its
permission diff says `"oldText": null` (Toad skipped its diff screen without it)."""

from __future__ import annotations

from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


async def test_append_to_an_unsaved_buffer_keeps_it_and_shows_it_in_the_diff(share, project):
    draft = project / "draft.md"
    draft.write_text("# Draft\nsaved line\n")  # on disk; the editor's buffer has more
    append = {"path": "draft.md", "content": "appended\n", "mode": "append"}
    scripts = [tool_call("w1", "WriteFile", append), "text: ok"]
    write_config(share, scripts)
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.buffers[str(draft)] = "# Draft\nunsaved line\n"
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "append")
        assert response.stop_reason == "end_turn"
        (request,) = agent.client.permission_requests
        (diff,) = [c.model_dump(by_alias=True) for c in request["tool_call"].content]
        assert diff["type"] == "diff" and diff["path"] == str(draft)
        assert diff["oldText"] == "# Draft\nunsaved line\n"
        assert diff["newText"] == "# Draft\nunsaved line\nappended\n"
        assert agent.client.fs_writes == [(str(draft), "# Draft\nunsaved line\nappended\n")]
    assert draft.read_text() == "# Draft\nsaved line\n"  # the editor saves when it wants to


async def test_overwrite_of_an_unsaved_buffer_diffs_against_it(share, project):
    draft = project / "draft.md"
    draft.write_text("# Draft\nsaved line\n")
    overwrite = {"path": "draft.md", "content": "# Draft\nfinal line\n"}
    scripts = [tool_call("w1", "WriteFile", overwrite), "text: ok"]
    write_config(share, scripts)
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.buffers[str(draft)] = "# Draft\nunsaved line\n"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "rewrite")
        (request,) = agent.client.permission_requests
        (diff,) = [c.model_dump(by_alias=True) for c in request["tool_call"].content]
        assert (diff["oldText"], diff["newText"]) == ("# Draft\nunsaved line\n", "# Draft\nfinal line\n")
        assert agent.client.fs_writes == [(str(draft), "# Draft\nfinal line\n")]


async def test_a_new_file_is_not_read_through_the_editor_and_its_diff_says_old_text_null(share, project):
    new = project / "new.md"
    write_config(share, [tool_call("w1", "WriteFile", {"path": "new.md", "content": "fresh\n"}), "text: ok"])
    async with serve_acp(acp_env(share), fs=True) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "create it")
        assert response.stop_reason == "end_turn"
        assert agent.client.fs_reads == []  # nothing asked of the editor that it could not have
        assert agent.client.fs_writes == [(str(new), "fresh\n")]
        (raw,) = agent.recorder.requests("session/request_permission")
        (diff,) = raw["params"]["toolCall"]["content"]
        assert diff == {"type": "diff", "path": str(new), "oldText": None, "newText": "fresh\n"}
        cards = [u for u in agent.recorder.updates(session.session_id) if u["sessionUpdate"].startswith("tool_call")]
        later = [c for u in cards for c in u.get("content") or [] if c.get("type") == "diff"]
        assert later and all(c["oldText"] is None for c in later)  # as the card's own updates say
