"""WriteFile with client fs starts from the editor's buffer, also for a file not saved to disk yet."""

from __future__ import annotations

from tests.e2e.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


async def test_append_to_an_unsaved_buffer_keeps_it_and_shows_it_in_the_diff(share, project):
    draft = project / "draft.md"  # open in the editor, never saved
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
    assert not draft.exists()


async def test_overwrite_of_an_unsaved_buffer_diffs_against_it(share, project):
    draft = project / "draft.md"
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
