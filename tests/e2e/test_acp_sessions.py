"""`kimi acp` session lifecycle end to end: new, load, list, resume, close, fork, modes, models, auth."""

from __future__ import annotations

import asyncio
import json

import acp
import pytest

from kimi_acp import sessions
from tests.support.acp_fixtures import acp_env, of_kind, texts, transcript, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


def _index(recorder, predicate) -> int:
    return next(i for i, m in enumerate(recorder.incoming) if predicate(m))


@pytest.mark.smoke
async def test_initialize_negotiates_version_one_and_advertises_capabilities(share):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        response = await agent.conn.initialize(protocol_version=99)
        assert response.protocol_version == 1
        caps = response.agent_capabilities
        assert caps.load_session is True
        assert caps.prompt_capabilities.image is True and caps.prompt_capabilities.embedded_context is True
        assert caps.session_capabilities.list is not None and caps.session_capabilities.resume is not None
        assert caps.session_capabilities.close is not None and caps.session_capabilities.fork is not None
        assert response.agent_info.name == "kimi-acp"
        raw = agent.recorder.incoming[0]["result"]
        methods = {m["id"]: m for m in raw["authMethods"]}
        assert methods["login"]["_meta"]["terminal-auth"]["args"][-1] == "login"
        assert "type" not in methods["login"]  # the client did not opt in to terminal auth
        assert list(methods) == ["login"]  # schema 1.25 has no `env_var` method: the key is named in the login method
        assert "KIMI_API_KEY" in methods["login"]["description"]
        assert methods["login"]["_meta"]["env-var-auth"]["vars"] == [{"name": "KIMI_API_KEY"}]


async def test_terminal_auth_method_when_the_client_supports_it(share):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        from acp.schema import ClientCapabilities

        caps = ClientCapabilities.model_validate({"auth": {"terminal": True}})
        await agent.conn.initialize(protocol_version=1, client_capabilities=caps)
        login = agent.recorder.incoming[0]["result"]["authMethods"][0]
        assert login["type"] == "terminal" and login["args"] == ["login"]


async def test_sessions_are_gated_on_a_usable_model_and_config_is_reread(share, project):
    (share / "config.toml").write_text("default_model = ''\n")
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        with pytest.raises(acp.RequestError) as caught:
            await agent.new_session(project)
        assert caught.value.code == -32000
        assert {m["id"] for m in caught.value.data["authMethods"]} == {"login"}
        with pytest.raises(acp.RequestError):
            await agent.conn.authenticate(method_id="login")
        write_config(share, ["text: now it works"])  # what `kimi login` does in the terminal
        assert await agent.conn.authenticate(method_id="login") is not None
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "hi")
        assert response.stop_reason == "end_turn"
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.authenticate(method_id="no-such-method")
        assert caught.value.code == -32602


async def test_kimi_api_key_in_the_environment_is_enough(share, project):
    env = {**acp_env(share), "KIMI_API_KEY": "sk-test-env-key", "KIMI_BASE_URL": "http://127.0.0.1:9/v1"}
    async with serve_acp(env) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        options = {o.id: o for o in (await agent.conn.resume_session(session_id=session.session_id, cwd=str(project))).config_options}
        assert options["model"].current_value


async def test_new_session_returns_modes_and_options_then_commands(share, project):
    write_config(share, permissions={"always_ask": False})  # a real config's default mode
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        assert session.modes.current_mode_id == "default"
        assert [m.id for m in session.modes.available_modes] == ["default", "ask", "yolo", "plan"]
        options = {o.id: o for o in session.config_options}
        assert options["mode"].category == "mode" and options["mode"].current_value == "default"
        assert options["model"].category == "model" and options["model"].current_value == "scripted"
        await asyncio.sleep(0.2)
        response_at = _index(agent.recorder, lambda m: m.get("result", {}).get("sessionId") == session.session_id)
        commands_at = _index(agent.recorder, lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update")
        assert commands_at > response_at
        names = [c["name"] for c in agent.recorder.incoming[commands_at]["params"]["update"]["availableCommands"]]
        assert {"clear", "compact", "yolo", "plan", "init"} <= set(names)


async def test_new_session_rejects_a_relative_or_missing_cwd(share, project):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        for cwd in ("relative/dir", str(project / "missing")):
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=cwd, mcp_servers=[])
            assert caught.value.code == -32602


@pytest.mark.smoke
async def test_load_after_restart_replays_the_same_transcript(share, project):
    (project / "a.txt").write_text("alpha\n")
    scripts = [
        "think: let me look\ntext: Reading the file.\n"
        + tool_call("r1", "ReadFile", {"path": "a.txt"}) + "\n" + tool_call("w1", "WriteFile", {"path": "b.txt", "content": "beta\n"}),
        tool_call("t1", "SetTodoList", {"todos": [{"title": "Copy", "status": "done"}]}),
        "text: Copied.\nusage: input_other=40 output=3",  # a reported usage: a usage_update, replayed too
        "text: Second turn answer.",
    ]
    write_config(share, scripts, default_yolo=True)
    live_items: list = []
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        for question in ("copy a to b", "and then?"):
            seen = len(agent.recorder.updates(session.session_id))
            await agent.prompt(session.session_id, question)
            turn = agent.recorder.updates(session.session_id)[seen:]
            live_items += [("user_message_chunk", question), *transcript(turn)]

    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        loaded = await agent.conn.load_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        assert loaded.modes.current_mode_id == "yolo"  # default_yolo applied when the session was created
        replayed = agent.recorder.updates(session.session_id)
        response_at = _index(agent.recorder, lambda m: "result" in m and "modes" in (m["result"] or {}))
        updates_before = [m for m in agent.recorder.incoming[:response_at] if m.get("method") == "session/update"]
        assert len(updates_before) >= len(transcript(replayed)) - 1  # the replay came before the response
        assert transcript(replayed) == live_items
        await asyncio.sleep(0.2)
        assert of_kind(agent.recorder.updates(session.session_id), "available_commands_update")
        assert of_kind(replayed, "usage_update")


async def test_list_filters_by_cwd_orders_newest_first_and_pages(share, tmp_path, monkeypatch):
    write_config(share)
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    import os
    import time

    other = tmp_path / "other"
    other.mkdir()
    project = tmp_path / "paged"
    project.mkdir()
    created = []
    for i in range(57):
        s = sessions.create(project)
        s.state.custom_title = f"title {i}"
        s.save_state()
        (s.dir / "context.jsonl").write_text("{}\n")
        os.utime(s.dir / "context.jsonl", (time.time() - 1000 + i, time.time() - 1000 + i))
        created.append(s.id)
    elsewhere = sessions.create(other)
    elsewhere.state.custom_title = "elsewhere"
    elsewhere.save_state()
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        first = await agent.conn.list_sessions(cwd=str(project))
        assert len(first.sessions) == 50 and first.next_cursor
        second = await agent.conn.list_sessions(cwd=str(project), cursor=first.next_cursor)
        assert len(second.sessions) == 7 and not second.next_cursor
        ids = [s.session_id for s in first.sessions + second.sessions]
        assert ids == list(reversed(created))
        assert first.sessions[0].title == "title 56" and first.sessions[0].cwd == str(project)
        assert "T" in first.sessions[0].updated_at
        everything = await agent.conn.list_sessions()
        assert elsewhere.id in [s.session_id for s in everything.sessions]
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.list_sessions(cwd=str(project), cursor="garbage!")
        assert caught.value.code == -32602


async def test_resume_does_not_replay_and_continues_the_context(share, project):
    write_config(share, ["text: first", "text: second"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "one")
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        resumed = await agent.conn.resume_session(session_id=session.session_id, cwd=str(project))
        assert resumed.config_options
        await asyncio.sleep(0.1)
        updates = agent.recorder.updates(session.session_id)
        assert not of_kind(updates, "agent_message_chunk") and not of_kind(updates, "user_message_chunk")
        assert of_kind(updates, "available_commands_update")
        await agent.prompt(session.session_id, "two")
    context = next(share.glob(f"sessions/*/{session.session_id}/context.jsonl")).read_text()
    users = [json.loads(line)["content"] for line in context.splitlines() if json.loads(line).get("role") == "user"]
    assert users == ["one", "two"]


async def test_close_then_prompt_loads_on_demand_and_unknown_sessions_error(share, project):
    write_config(share, ["text: before close", "text: after close"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "one")
        await agent.conn.close_session(session_id=session.session_id)
        response = await agent.prompt(session.session_id, "two")
        assert response.stop_reason == "end_turn"
        assert texts(agent.recorder.updates(session.session_id)).endswith("after close")
        for call in (
            agent.prompt("no-such-session", "x"),
            agent.conn.close_session(session_id="no-such-session"),
            agent.conn.load_session(session_id="no-such-session", cwd=str(project), mcp_servers=[]),
            agent.conn.set_session_mode(session_id="no-such-session", mode_id="yolo"),
        ):
            with pytest.raises(acp.RequestError) as caught:
                await call
            assert caught.value.code == -32602


async def test_fork_copies_history_and_then_diverges(share, project):
    write_config(share, ["text: original answer", "text: fork answer", "text: original again"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "shared question")
        fork = await agent.conn.fork_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        assert fork.session_id != session.session_id and fork.config_options
        await agent.prompt(fork.session_id, "fork only")
        await agent.prompt(session.session_id, "original only")

    def users(session_id: str) -> list[str]:
        path = next(share.glob(f"sessions/*/{session_id}/context.jsonl"))
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        return [line["content"] for line in lines if line.get("role") == "user"]

    assert users(fork.session_id) == ["shared question", "fork only"]
    assert users(session.session_id) == ["shared question", "original only"]


async def test_modes_and_model_options_apply_to_one_session_only(share, project):
    config = write_config(
        share,
        ["text: a", "text: b"],
        models={"other": {"provider": "scripted_provider", "model": "kimi-for-coding", "max_context_size": 50000}},
        permissions={"always_ask": False},  # a real config's default mode
    )
    before = config.read_bytes()
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        first = await agent.new_session(project)
        second = await agent.new_session(project)
        result = await agent.conn.set_config_option(config_id="model", session_id=first.session_id, value="other,thinking")
        options = {o.id: o for o in result.config_options}  # an older picker value: the model, thinking on
        assert options["model"].current_value == "other" and options["thinking"].current_value == "on"
        assert {o.value for o in options["model"].options} == {"scripted", "other"}
        await agent.conn.set_session_mode(session_id=first.session_id, mode_id="yolo")
        result = await agent.conn.set_config_option(config_id="mode", session_id=first.session_id, value="plan")
        assert {o.id: o for o in result.config_options}["mode"].current_value == "plan"
        resumed = await agent.conn.resume_session(session_id=second.session_id, cwd=str(project))
        untouched = {o.id: o for o in resumed.config_options}
        assert untouched["model"].current_value == "scripted" and untouched["mode"].current_value == "default"
        for bad in (("model", "nope"), ("mode", "turbo"), ("colour", "red")):
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.set_config_option(config_id=bad[0], session_id=first.session_id, value=bad[1])
            assert caught.value.code == -32602
        with pytest.raises(acp.RequestError):
            await agent.conn.set_session_mode(session_id=first.session_id, mode_id="turbo")
    assert config.read_bytes() == before  # nothing written to the global config


async def test_yolo_slash_command_pushes_mode_and_option_updates(share, project):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "/yolo")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert of_kind(updates, "current_mode_update")[-1]["currentModeId"] == "yolo"
        options = {o["id"]: o for o in of_kind(updates, "config_option_update")[-1]["configOptions"]}
        assert options["mode"]["currentValue"] == "yolo"
        assert "YOLO" in texts(updates)


async def test_plan_mode_blocks_edits(share, project):
    write_config(share, [tool_call("w1", "WriteFile", {"path": "x.txt", "content": "no"}), "text: planned"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await agent.prompt(session.session_id, "change x")
        assert response.stop_reason == "end_turn"
        failed = [u for u in of_kind(agent.recorder.updates(session.session_id), "tool_call_update") if u.get("status") == "failed"]
        assert failed and "Plan mode" in json.dumps(failed[0]["content"])
        assert not (project / "x.txt").exists()


@pytest.mark.smoke
async def test_close_cancels_a_running_turn(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "sleep 20"}), "text: unused"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "wait"))
        for _ in range(200):
            # the call's arguments are complete, so the command starts (a YOLO card may stay pending)
            if any("rawInput" in u for u in of_kind(agent.recorder.updates(session.session_id), "tool_call_update")):
                break
            await asyncio.sleep(0.02)
        await agent.conn.close_session(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        assert response.stop_reason == "cancelled"
