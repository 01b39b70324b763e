"""Hooks over `kimi --wire`: `[[hooks]]` commands and `initialize.hooks` subscriptions, each outcome.

A blocked Shell call must never run: every Shell call here touches a marker file in the work dir,
and a block is proven by the marker's absence (and an allow by its presence).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tests.support.hooks import HookScript, hook
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import event_types, events, scripted_config_data, text_of, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
EVENTS_13 = {
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "StopFailure", "SessionStart",
    "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "Notification",
}  # fmt: skip
TOUCH = tool_call("sh-1", "Shell", {"command": "touch marker"})


def config_with_hooks(directory: Path, scripts: list[str], hooks: list[dict[str, Any]], **extra: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    data = scripted_config_data(directory, scripts)
    data["hooks"] = hooks
    data.update(extra)
    path = directory / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def tool_results(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["payload"] for e in events(seen, "ToolResult")]


def log_text(share_dir: Path) -> str:
    path = share_dir / "logs" / "kimi.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


# --------------------------------------------------------------------------- config hooks


async def test_allowing_pre_tool_use_hook_gets_the_payload_and_the_call_runs(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: done"], [hook("PreToolUse", script.command("allow"), "^Shell$")])
    wire = await start_wire((), "--yolo", config=config)
    init, _ = await wire.call("initialize", INIT)
    assert set(init["result"]["hooks"]["supported_events"]) == EVENTS_13
    assert init["result"]["hooks"]["configured"] == {"PreToolUse": 1}
    response, seen = await wire.call("prompt", {"user_input": "touch it"})
    assert response["result"] == {"status": "finished"}
    assert (work_dir / "marker").exists()
    (payload,) = script.payloads()
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == "Shell" and payload["tool_input"] == {"command": "touch marker"}
    assert payload["tool_call_id"] == "sh-1"
    assert payload["cwd"] == str(work_dir) and payload["session_id"]
    triggered = [e["payload"] for e in events(seen, "HookTriggered")]
    resolved = [e["payload"] for e in events(seen, "HookResolved")]
    assert triggered == [{"event": "PreToolUse", "target": "Shell", "hook_count": 1}]
    assert len(resolved) == 1 and resolved[0]["action"] == "allow" and resolved[0]["reason"] == ""
    types = event_types(seen)
    assert types.index("HookTriggered") < types.index("HookResolved") < types.index("ToolResult")
    assert not tool_results(seen)[0]["return_value"]["is_error"]
    assert await wire.close() == 0


async def test_exit_2_blocks_the_tool_the_model_reads_the_reason_and_no_approval_is_asked(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("PreToolUse", script.command("exit2", "rm -rf is not allowed here"), "Shell")]
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: understood"], hooks)
    wire = await start_wire(config=config)  # no --yolo: an allowed Shell call would ask first
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "touch it"})
    assert response["result"] == {"status": "finished"}
    assert not (work_dir / "marker").exists()
    assert not [m for m in seen if m.get("method") == "request"]  # blocked before any approval
    (result,) = tool_results(seen)
    assert result["return_value"]["is_error"] is True
    assert result["return_value"]["message"] == "rm -rf is not allowed here"
    assert {"type": "brief", "text": "Hook blocked"} in result["return_value"]["display"]
    (resolved,) = [e["payload"] for e in events(seen, "HookResolved")]
    assert resolved["action"] == "block" and resolved["reason"] == "rm -rf is not allowed here"
    assert text_of(seen) == "understood"
    assert await wire.close() == 0


async def test_json_deny_and_top_level_decision_block_and_matchers_pick_the_tool(start_wire, tmp_path, work_dir):
    (work_dir / "notes.txt").write_text("hello\n")
    script = HookScript(tmp_path / "hooks")
    hooks = [
        hook("PreToolUse", script.command("deny-json", "use the editor instead"), "^Shell$"),
        hook("PreToolUse", script.command("decision-json", "no writes today"), "^Write"),
    ]
    read = tool_call("r-1", "ReadFile", {"path": "notes.txt"})
    write = tool_call("w-1", "WriteFile", {"path": "out.txt", "content": "x"})
    config = config_with_hooks(tmp_path / "cfg", [TOUCH + "\n" + read + "\n" + write, "text: ok"], hooks)
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    results = {r["tool_call_id"]: r["return_value"] for r in tool_results(seen)}
    assert results["sh-1"]["is_error"] and results["sh-1"]["message"] == "use the editor instead"
    assert results["w-1"]["is_error"] and results["w-1"]["message"] == "no writes today"
    assert not results["r-1"]["is_error"]  # no hook matches ReadFile
    assert not (work_dir / "marker").exists() and not (work_dir / "out.txt").exists()
    assert sorted(p["tool_name"] for p in script.payloads()) == ["Shell", "WriteFile"]
    assert await wire.close() == 0


async def test_several_hooks_run_in_parallel_and_any_block_wins(start_wire, tmp_path, work_dir):
    allow, block = HookScript(tmp_path / "hooks", "allow"), HookScript(tmp_path / "hooks", "block")
    seen_a, seen_b = tmp_path / "a-started", tmp_path / "b-started"

    def waits_for(mine: Path, other: Path, then: str) -> str:
        # Each hook goes on only once the other one has started: run one after the other, the
        # first would give up after 10 s and never record its payload.
        return f"touch {mine}; for i in $(seq 100); do [ -e {other} ] && break; sleep 0.1; done; [ -e {other} ] && {then}"

    hooks = [
        hook("PreToolUse", waits_for(seen_a, seen_b, allow.command("allow"))),
        hook("PreToolUse", waits_for(seen_b, seen_a, block.command("exit2", "second hook says no"))),
    ]
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: ok"], hooks)
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    _, seen = await wire.call("prompt", {"user_input": "go"}, timeout=30)
    (triggered,) = [e["payload"] for e in events(seen, "HookTriggered")]
    (resolved,) = [e["payload"] for e in events(seen, "HookResolved")]
    assert triggered["hook_count"] == 2
    assert resolved["action"] == "block" and resolved["reason"] == "second hook says no"
    assert len(allow.payloads()) == 1 and len(block.payloads()) == 1
    assert not (work_dir / "marker").exists()
    assert await wire.close() == 0


async def test_timeout_allows_and_kills_the_hook_with_its_children(start_wire, tmp_path, work_dir, share_dir):
    marker = sleep_marker(60)
    hooks = [hook("PreToolUse", f"sleep {marker} & sleep {marker}; exit 2", timeout=1)]
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: ok"], hooks)
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    started = time.monotonic()
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    assert 0.9 < time.monotonic() - started < 10
    assert (work_dir / "marker").exists()  # fail open
    (resolved,) = [e["payload"] for e in events(seen, "HookResolved")]
    assert resolved["action"] == "allow"
    assert not process_alive(marker)  # the shell and its background child: the whole group
    assert await wire.close() == 0
    assert "timed out after 1s" in log_text(share_dir)


async def test_crash_other_exit_codes_and_garbled_output_fail_open_and_are_logged(start_wire, tmp_path, work_dir, share_dir):
    scripts = [HookScript(tmp_path / "hooks", name) for name in ("crash", "exit1", "garbage")]
    hooks = [
        hook("PreToolUse", scripts[0].command("crash")),
        hook("PreToolUse", scripts[1].command("exit1")),
        hook("PreToolUse", scripts[2].command("garbage")),
        hook("PreToolUse", "/no/such/hook-command"),
    ]
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: ok"], hooks)
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    _, seen = await wire.call("prompt", {"user_input": "go"})
    (resolved,) = [e["payload"] for e in events(seen, "HookResolved")]
    assert resolved["action"] == "allow"
    assert (work_dir / "marker").exists()
    assert await wire.close() == 0
    log = log_text(share_dir)
    assert "the hook crashed" in log  # the traceback's last line, from stderr
    assert "exit code 1; stderr: something went wrong" in log
    assert "does not parse" in log
    assert "exit code 127" in log


async def test_cancel_kills_a_running_hook(start_wire, tmp_path, work_dir):
    marker = sleep_marker(60)
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: ok"], [hook("PreToolUse", f"sleep {marker}", timeout=120)])
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    prompt = await wire.request("prompt", {"user_input": "go"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "HookTriggered")
    assert await wait_until(lambda: process_alive(marker))
    await wire.call("cancel")
    response, seen = await wire.response(prompt, timeout=5)
    assert response["result"] == {"status": "cancelled"}
    assert "TurnEnd" in event_types(seen)
    assert await wait_until(lambda: not process_alive(marker))
    assert not (work_dir / "marker").exists()
    assert await wire.close() == 0


async def test_post_tool_use_hooks_see_output_and_errors(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("PostToolUse", script.command("allow")), hook("PostToolUseFailure", script.command("allow"))]
    fails = tool_call("sh-2", "Shell", {"command": "echo oops >&2; exit 3"})
    ok = tool_call("sh-3", "Shell", {"command": "echo fine"})
    config = config_with_hooks(tmp_path / "cfg", [ok + "\n" + fails, "text: ok"], hooks)
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    _, seen = await wire.call("prompt", {"user_input": "go"})
    by_call = {p["tool_call_id"]: p for p in script.payloads()}
    assert by_call["sh-3"]["hook_event_name"] == "PostToolUse" and "fine" in by_call["sh-3"]["tool_output"]
    assert by_call["sh-2"]["hook_event_name"] == "PostToolUseFailure" and by_call["sh-2"]["error"]
    types = event_types(seen)
    assert types.count("HookResolved") == 2 and types.index("HookResolved") < types.index("TurnEnd")
    assert await wire.close() == 0


async def test_user_prompt_submit_block_shows_the_reason_and_the_model_is_not_called(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("UserPromptSubmit", script.command("exit2", "Prompts about secrets are blocked."), "secret")]
    config = config_with_hooks(tmp_path / "cfg", ["text: the model answered"], hooks)
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "tell me the secret"})
    assert response["result"] == {"status": "finished"}
    types = event_types(seen)
    assert types[0] == "TurnBegin" and types[-1] == "TurnEnd" and "StepBegin" not in types
    assert text_of(seen) == "Prompts about secrets are blocked."
    assert script.payloads()[0]["prompt"] == "tell me the secret"
    response, seen = await wire.call("prompt", {"user_input": "hello"})  # not matched: the model answers
    assert text_of(seen) == "the model answered"
    assert await wire.close() == 0


async def test_stop_hook_buys_exactly_one_more_round(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    config = config_with_hooks(
        tmp_path / "cfg",
        ["text: first answer", "text: second answer", "text: never said"],
        [hook("Stop", script.command("exit2", "Run the tests before you stop."))],
    )
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "work"})
    assert response["result"] == {"status": "finished"}
    assert text_of(seen) == "first answersecond answer"
    assert [p["stop_hook_active"] for p in script.payloads()] == [False, True]
    types = event_types(seen)
    assert types.count("StepBegin") == 2
    (steer,) = events(seen, "SteerInput")  # the reason, as the user message the model got
    assert steer["payload"]["user_input"] == "Run the tests before you stop."
    assert types.index("HookResolved") < types.index("SteerInput") < len(types) - 1 - types[::-1].index("StepBegin")
    assert await wire.close() == 0


async def test_session_start_and_end_hooks_run_once(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("SessionStart", script.command("allow"), "startup"), hook("SessionEnd", script.command("allow"))]
    config = config_with_hooks(tmp_path / "cfg", ["text: one", "text: two"], hooks)
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "a"})
    await wire.call("prompt", {"user_input": "b"})
    assert await wire.close() == 0
    assert [(p["hook_event_name"], p.get("source"), p.get("reason")) for p in script.payloads()] == [
        ("SessionStart", "startup", None),
        ("SessionEnd", None, "exit"),
    ]


async def test_payloads_carry_no_api_key_and_hooks_get_no_key_in_their_environment(start_wire, tmp_path, work_dir):
    secret = "sk-test-very-secret-0123456789"
    script = HookScript(tmp_path / "hooks")
    echo = tool_call("sh-9", "Shell", {"command": f"echo {secret} > marker"})
    config = config_with_hooks(tmp_path / "cfg", [echo, "text: ok"], [hook("PreToolUse", script.command("allow"))])
    data = json.loads(config.read_text())
    data["providers"]["scripted_provider"]["api_key"] = secret
    config.write_text(json.dumps(data))
    wire = await start_wire((), "--yolo", config=config, env={"KIMI_API_KEY": "env-key-abcdefgh"})
    await wire.call("initialize", INIT)
    _, seen, asked = await wire.call_approving("prompt", {"user_input": "go"})
    assert [card["warning"].startswith("This call's arguments hold a secret") for card in asked] == [True]  # even in yolo
    (payload,) = script.payloads()
    assert secret not in json.dumps(payload)
    assert payload["tool_input"]["command"] == "echo [redacted] > marker"
    assert payload["_env_has_kimi_key"] is False
    assert (work_dir / "marker").exists()  # the tool itself still got its real arguments
    assert await wire.close() == 0


async def test_early_initialize_reports_no_hooks_and_a_config_with_hooks_reports_counts(start_wire, start_wire_process, tmp_path):
    wire = await start_wire_process(["text: hi"])
    init, _ = await wire.call("initialize", INIT)
    hooks_info = init["result"]["hooks"]
    assert set(hooks_info["supported_events"]) == EVENTS_13 and len(hooks_info["supported_events"]) == 13
    assert hooks_info["configured"] == {}
    assert await wire.close() == 0
    hooks = [hook("Stop", "true"), hook("Stop", "false"), hook("PostCompact", "true")]
    config = config_with_hooks(tmp_path / "cfg", [], hooks)
    wire = await start_wire(config=config)
    init, _ = await wire.call(
        "initialize", {**INIT, "hooks": [{"id": "s1", "event": "Stop"}, {"id": "bad", "event": "NoSuchEvent"}]}
    )
    assert init["result"]["hooks"]["configured"] == {"Stop": 3, "PostCompact": 1}
    assert await wire.close() == 0


# --------------------------------------------------------------------------- Wire subscriptions


async def _prompt_with_subscription(start_wire, tmp_path: Path, subscription: dict[str, Any]) -> tuple[Any, str]:
    config = config_with_hooks(tmp_path / "cfg", [TOUCH, "text: ok"], [])
    wire = await start_wire((), "--yolo", config=config)
    init, _ = await wire.call("initialize", {**INIT, "hooks": [subscription]})
    assert init["result"]["hooks"]["configured"] == {subscription["event"]: 1}
    prompt = await wire.request("prompt", {"user_input": "go"})
    return wire, prompt


async def test_subscription_allow_answer_lets_the_call_run(start_wire, tmp_path, work_dir):
    wire, prompt = await _prompt_with_subscription(start_wire, tmp_path, {"id": "guard", "event": "PreToolUse", "matcher": "^Shell$"})
    request, before = await wire.next_request()
    assert request["params"]["type"] == "HookRequest"
    payload = request["params"]["payload"]
    assert request["id"] == payload["id"]
    assert payload["subscription_id"] == "guard" and payload["event"] == "PreToolUse" and payload["target"] == "Shell"
    assert payload["input_data"]["tool_input"] == {"command": "touch marker"}
    assert payload["input_data"]["hook_event_name"] == "PreToolUse"
    assert events(before, "HookTriggered")[0]["payload"]["hook_count"] == 1
    await wire.respond(request["id"], {"request_id": payload["id"], "action": "allow", "reason": ""})
    response, seen = await wire.response(prompt)
    assert response["result"] == {"status": "finished"}
    assert events(seen, "HookResolved")[0]["payload"]["action"] == "allow"
    assert (work_dir / "marker").exists()
    assert await wire.close() == 0


async def test_subscription_block_answer_blocks_the_call(start_wire, tmp_path, work_dir):
    wire, prompt = await _prompt_with_subscription(start_wire, tmp_path, {"id": "guard", "event": "PreToolUse"})
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    await wire.respond(request["id"], {"request_id": payload["id"], "action": "block", "reason": "the client says no"})
    response, seen = await wire.response(prompt)
    assert response["result"] == {"status": "finished"}
    (result,) = tool_results(seen)
    assert result["return_value"]["is_error"] and result["return_value"]["message"] == "the client says no"
    resolved = events(seen, "HookResolved")[0]["payload"]
    assert (resolved["action"], resolved["reason"]) == ("block", "the client says no")
    assert not (work_dir / "marker").exists()
    assert await wire.close() == 0


async def test_unanswered_subscription_times_out_and_allows(start_wire, tmp_path, work_dir):
    wire, prompt = await _prompt_with_subscription(start_wire, tmp_path, {"id": "slow", "event": "PreToolUse", "timeout": 1})
    request, _ = await wire.next_request()
    assert request["params"]["type"] == "HookRequest"
    started = time.monotonic()
    response, seen = await wire.response(prompt)  # never answered
    assert response["result"] == {"status": "finished"}
    assert 0.8 < time.monotonic() - started < 8
    assert events(seen, "HookResolved")[0]["payload"]["action"] == "allow"
    assert (work_dir / "marker").exists()
    # A late answer is ignored: no error, and the server goes on answering.
    await wire.respond(request["id"], {"request_id": request["id"], "action": "block", "reason": "late"})
    response, seen = await wire.call("set_plan_mode", {"enabled": False})
    assert response["result"]["status"] == "ok" and not [m for m in seen if "error" in m]
    assert await wire.close() == 0


async def test_subscription_can_block_a_prompt(start_wire, tmp_path, work_dir):
    config = config_with_hooks(tmp_path / "cfg", ["text: never"], [])
    wire = await start_wire(config=config)
    await wire.call("initialize", {**INIT, "hooks": [{"id": "p", "event": "UserPromptSubmit"}]})
    prompt = await wire.request("prompt", {"user_input": "hi"})
    request, _ = await wire.next_request()
    assert request["params"]["payload"]["input_data"]["prompt"] == "hi"
    await wire.respond(request["id"], {"action": "block", "reason": "Not now."})
    response, seen = await wire.response(prompt)
    assert response["result"] == {"status": "finished"}
    assert text_of(seen) == "Not now."
    assert await asyncio.wait_for(wire.close(), 10) == 0


async def test_stop_failure_hook_sees_the_error_before_the_prompt_fails(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    config = config_with_hooks(
        tmp_path / "cfg", ["error: 400 the request was bad"], [hook("StopFailure", script.command("allow"), "StatusError")]
    )
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["error"]["code"] == -32003
    (payload,) = script.payloads()  # written before the answer: the turn waited for the hook
    assert payload["error_type"] == "APIStatusError" and "the request was bad" in payload["error_message"]
    types = event_types(seen)
    assert types.index("StepInterrupted") < types.index("HookResolved") < types.index("TurnEnd")
    assert await wire.close() == 0


async def test_compaction_runs_pre_and_post_compact_hooks_with_the_trigger(start_wire, tmp_path, work_dir):
    script = HookScript(tmp_path / "hooks")
    scripts = [
        "text: a long first answer\nusage: input_other=880 output=20",
        "text: SUMMARY of it all",  # the compaction call
        "text: answered after compaction",
        "text: SUMMARY again",  # /compact
    ]
    hooks = [hook("PreCompact", script.command("exit2", "PreCompact cannot stop it")), hook("PostCompact", script.command("allow"))]
    directory = tmp_path / "cfg"
    directory.mkdir()
    data = scripted_config_data(directory, scripts, max_context_size=1000)
    data["hooks"] = hooks
    (directory / "config.json").write_text(json.dumps(data))
    wire = await start_wire(config=directory / "config.json")
    await wire.call("prompt", {"user_input": "first question"})
    _, seen = await wire.call("prompt", {"user_input": "second question"})
    assert "CompactionEnd" in event_types(seen) and text_of(seen) == "answered after compaction"
    _, seen = await wire.call("prompt", {"user_input": "/compact"})
    assert "The context has been compacted." in text_of(seen)
    got = [(p["hook_event_name"], p["trigger"]) for p in script.payloads()]
    assert got == [("PreCompact", "auto"), ("PostCompact", "auto"), ("PreCompact", "manual"), ("PostCompact", "manual")]
    assert script.payloads()[0]["token_count"] > 0 and "estimated_token_count" in script.payloads()[1]
    assert await wire.close() == 0


def docs_example_script() -> str:
    """The `rm -rf` guard of docs/hooks.md, as printed there."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "hooks.md").read_text(encoding="utf-8")
    start = text.index("```python\n#!/usr/bin/env python3") + len("```python\n")
    return text[start : text.index("```", start)]


async def test_the_rm_rf_guard_of_the_docs_works(start_wire, tmp_path, work_dir):
    import shlex
    import sys

    guard = tmp_path / "no-rm-rf.py"
    guard.write_text(docs_example_script(), encoding="utf-8")
    (work_dir / "build").mkdir()
    (work_dir / "build" / "a.txt").write_text("a")
    (work_dir / "build" / "b.txt").write_text("b")
    calls = "\n".join(
        [
            tool_call("rm-1", "Shell", {"command": "cd . && rm -rf build"}),
            tool_call("rm-2", "Shell", {"command": "rm -f build/a.txt"}),
        ]
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(guard))}"
    config = config_with_hooks(tmp_path / "cfg", [calls, "text: ok"], [hook("PreToolUse", command, "^Shell$", timeout=10)])
    wire = await start_wire((), "--yolo", config=config)
    _, seen = await wire.call("prompt", {"user_input": "clean up"})
    results = {r["tool_call_id"]: r["return_value"] for r in tool_results(seen)}
    assert results["rm-1"]["is_error"] and results["rm-1"]["message"].startswith("Blocked: `rm -rf` is not allowed")
    assert not results["rm-2"]["is_error"]
    assert (work_dir / "build" / "b.txt").exists() and not (work_dir / "build" / "a.txt").exists()
    assert await wire.close() == 0
