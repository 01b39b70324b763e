"""The hook engine in-process: decisions, matching, parallelism, payloads, subscriptions, clean-up."""

from __future__ import annotations

import asyncio
import json
import time
import typing
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.config import HOOK_EVENTS as CONFIG_EVENTS
from kimi_acp.config import HookConfig
from kimi_acp.core.hook_points import ALLOW, HOOK_EVENTS, NO_HOOKS, HookVerdict
from kimi_acp.core.toolset import FixedHost, Toolset
from kimi_acp.frontends.wire.main import _config_may_have_hooks
from kimi_acp.hooks import HookEngine, decide
from kimi_acp.tools import builtin_tools
from kimi_acp.wire.types import FunctionBody, HookRequest, HookResolved, HookResponse, HookTriggered, ToolCall
from tests.support.processes import live_pids, process_alive, sleep_marker, wait_until


class Recorder:
    def __init__(self, answer: Any = None, delay: float | None = None) -> None:
        self.sent: list[Any] = []
        self.requests: list[HookRequest] = []
        self.answer = answer
        self.delay = delay

    def send(self, message: Any) -> None:
        self.sent.append(message)

    async def request(self, request: HookRequest) -> Any:
        self.requests.append(request)
        if self.delay is not None:
            await asyncio.sleep(self.delay)
        return self.answer(request) if callable(self.answer) else self.answer


def engine(tmp_path: Path, hooks: list[dict[str, Any]], recorder: Recorder | None = None, secrets: tuple[str, ...] = ()) -> HookEngine:
    recorder = recorder or Recorder()
    return HookEngine(
        [HookConfig.model_validate(h) for h in hooks],
        session_id="sess-1",
        cwd=tmp_path,
        send=recorder.send,
        request=recorder.request,
        secrets=secrets,
    )


def test_the_event_lists_agree() -> None:
    literal = typing.get_args(HookConfig.model_fields["event"].annotation)
    assert tuple(HOOK_EVENTS) == tuple(CONFIG_EVENTS) == tuple(literal)
    assert len(HOOK_EVENTS) == 13


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "blocked", "reason", "problem"),
    [
        (0, "", "", False, "", False),
        (0, "all good, carry on", "", False, "", False),
        (2, "", "  nope  \n", True, "nope", False),
        (2, '{"hookSpecificOutput": {"permissionDecision": "allow"}}', "why", True, "why", False),
        (0, '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "r"}}', "", True, "r", False),
        (0, '{"hookSpecificOutput": {"permissionDecision": "allow"}}', "", False, "", False),
        (0, '{"decision": "block", "reason": "top"}', "", True, "top", False),
        (0, '{"decision": "approve"}', "", False, "", False),
        (0, "{broken", "", False, "", True),
        (1, "", "boom", False, "", True),
        (127, "", "not found", False, "", True),
        (-9, "", "", False, "", True),
        (3, '{"decision": "block", "reason": "ignored: not exit 0"}', "", False, "", True),
    ],
)
def test_decide(code: int, stdout: str, stderr: str, blocked: bool, reason: str, problem: bool) -> None:
    outcome = decide(code, stdout, stderr)
    assert (outcome.blocked, outcome.reason, bool(outcome.problem)) == (blocked, reason, problem)


async def test_no_hooks_allows_without_a_sound(tmp_path: Path) -> None:
    assert await NO_HOOKS.run("PreToolUse", "Shell", {}) == ALLOW
    recorder = Recorder()
    hooks = engine(tmp_path, [{"event": "Stop", "command": "exit 2"}], recorder)
    assert await hooks.run("PreToolUse", "Shell", {}) == ALLOW
    assert recorder.sent == []  # no matching hook: no HookTriggered either


async def test_matcher_is_a_regex_search_and_a_bad_one_matches_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    hooks = engine(
        tmp_path,
        [
            {"event": "PreToolUse", "command": "echo no >&2; exit 2", "matcher": "File$"},
            {"event": "PreToolUse", "command": "exit 2", "matcher": "("},
        ],
    )
    assert (await hooks.run("PreToolUse", "WriteFile", {})).blocked
    assert (await hooks.run("PreToolUse", "StrReplaceFile", {})).reason == "no"
    assert not (await hooks.run("PreToolUse", "Shell", {})).blocked
    assert not (await hooks.run("PreToolUse", "Glob", {})).blocked
    assert sum("not a valid regex" in r.message for r in caplog.records) == 1


async def test_hooks_run_in_parallel_identical_commands_once_and_events_frame_them(tmp_path: Path) -> None:
    recorder = Recorder()
    out = tmp_path / "runs"
    hooks = engine(
        tmp_path,
        [
            {"event": "Stop", "command": f"sleep 1; echo a >> {out}"},
            {"event": "Stop", "command": f"sleep 1; echo a >> {out}"},  # the same command: runs once
            {"event": "Stop", "command": f"sleep 1; echo b >> {out}; echo stop >&2; exit 2"},
        ],
        recorder,
    )
    started = time.monotonic()
    verdict = await hooks.run("Stop", "", {"stop_hook_active": False})
    assert time.monotonic() - started < 1.9  # one after the other: 2 s at least
    assert verdict == HookVerdict("block", "stop")
    assert sorted(out.read_text().split()) == ["a", "b"]
    triggered, resolved = recorder.sent
    assert triggered == HookTriggered(event="Stop", target="", hook_count=2)
    assert isinstance(resolved, HookResolved) and resolved.action == "block" and resolved.duration_ms >= 900


async def test_payload_has_the_base_fields_cwd_is_the_work_dir_and_secrets_are_redacted(tmp_path: Path) -> None:
    out = tmp_path / "payload.json"
    hooks = engine(
        tmp_path,
        [{"event": "PreToolUse", "command": f"cat > {out}; pwd >> {tmp_path / 'pwd'}"}],
        secrets=("sk-abcdef123456", "short"),
    )
    await hooks.run("PreToolUse", "Shell", {"tool_name": "Shell", "tool_input": {"command": "curl -H sk-abcdef123456 short"}})
    payload = json.loads(out.read_text())
    assert payload == {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-1",
        "cwd": str(tmp_path),
        "tool_name": "Shell",
        "tool_input": {"command": "curl -H [redacted] short"},  # too short to be a key: left alone
    }
    assert (tmp_path / "pwd").read_text().strip() == str(tmp_path)


async def test_subscriptions_are_asked_and_replaced_and_invalid_ones_ignored(tmp_path: Path) -> None:
    recorder = Recorder(answer=lambda r: HookResponse(request_id=r.id, action="block", reason=f"no {r.target}"))
    hooks = engine(tmp_path, [{"event": "PreToolUse", "command": "true"}], recorder)
    kept = hooks.subscribe(
        [
            {"id": "a", "event": "PreToolUse", "matcher": "^Shell$", "timeout": 5},
            {"id": "b", "event": "Nope"},
            {"event": "Stop"},
            "junk",
            {"id": "c", "event": "Stop", "timeout": -1},
        ]
    )
    assert [(s.id, s.timeout) for s in kept] == [("a", 5.0), ("c", 30.0)]
    assert hooks.summary() == {"PreToolUse": 2, "Stop": 1}
    assert hooks.info()["configured"] == {"PreToolUse": 2, "Stop": 1}
    assert await hooks.run("PreToolUse", "Shell", {"x": 1}) == HookVerdict("block", "no Shell")
    (request,) = recorder.requests
    assert (request.subscription_id, request.event, request.target) == ("a", "PreToolUse", "Shell")
    assert request.input_data == {"hook_event_name": "PreToolUse", "session_id": "sess-1", "cwd": str(tmp_path), "x": 1}
    assert not (await hooks.run("PreToolUse", "ReadFile", {})).blocked
    hooks.subscribe([])
    assert hooks.summary() == {"PreToolUse": 1}


@pytest.mark.parametrize("answer", [None, {"action": "block"}, HookResponse(request_id="x", action="allow")])
async def test_anything_but_a_block_answer_allows(tmp_path: Path, answer: Any) -> None:
    hooks = engine(tmp_path, [], Recorder(answer=answer))
    hooks.subscribe([{"id": "a", "event": "Stop"}])
    assert await hooks.run("Stop", "", {}) == ALLOW


async def test_an_unanswered_subscription_times_out_and_its_request_is_settled(tmp_path: Path) -> None:
    recorder = Recorder(delay=30)
    hooks = engine(tmp_path, [], recorder)
    hooks.subscribe([{"id": "a", "event": "Stop", "timeout": 0.2}])
    assert await hooks.run("Stop", "", {}) == ALLOW
    assert recorder.requests[0].resolved


async def test_fired_hooks_are_awaited_by_settle_or_killed_by_a_cancelling_one(tmp_path: Path) -> None:
    done = tmp_path / "done"
    hooks = engine(tmp_path, [{"event": "PostToolUse", "command": f"sleep 0.3; touch {done}"}])
    hooks.fire("PostToolUse", "Shell", {})
    assert not done.exists()
    await hooks.settle()
    assert done.exists()
    marker = sleep_marker(60)
    hooks = engine(tmp_path, [{"event": "PostToolUse", "command": f"sleep {marker}"}])
    hooks.fire("PostToolUse", "Shell", {})
    assert await wait_until(lambda: process_alive(marker))
    started = time.monotonic()
    await hooks.settle(cancel=True)
    assert time.monotonic() - started < 3
    assert await wait_until(lambda: not process_alive(marker))


async def test_cancelling_a_run_kills_the_group_and_still_resolves(tmp_path: Path) -> None:
    marker = sleep_marker(60)
    recorder = Recorder()
    hooks = engine(tmp_path, [{"event": "PreToolUse", "command": f"sleep {marker} & sleep {marker}; wait"}], recorder)
    task = asyncio.create_task(hooks.run("PreToolUse", "Shell", {}))
    assert await wait_until(lambda: len(live_pids(marker)) >= 3)  # the shell and two sleeps
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not process_alive(marker)
    assert isinstance(recorder.sent[-1], HookResolved) and recorder.sent[-1].reason == "cancelled"


async def test_a_hook_that_does_not_read_a_large_payload_is_fine(tmp_path: Path) -> None:
    hooks = engine(tmp_path, [{"event": "PostToolUse", "command": "echo too big >&2; exit 2"}])
    verdict = await hooks.run("PostToolUse", "Shell", {"tool_output": "x" * 2_000_000})
    assert verdict == HookVerdict("block", "too big")


async def test_toolset_runs_pre_tool_use_before_validation_and_blocks(tmp_path: Path) -> None:
    from tests.core.test_toolset import make_context_factory

    seen: list[tuple[str, str, dict[str, Any]]] = []

    class Runner:
        async def run(self, event: str, target: str, payload: dict[str, Any]) -> HookVerdict:
            seen.append((event, target, payload))
            return HookVerdict("block", "") if payload.get("tool_input", {}).get("path") == "blocked" else ALLOW

        def fire(self, event: str, target: str, payload: dict[str, Any]) -> None:
            seen.append((event, target, payload))

        async def settle(self, *, cancel: bool = False) -> None:
            return None

    toolset = Toolset(builtin_tools(), FixedHost(hooks=Runner()))
    context = make_context_factory(tmp_path)
    call = ToolCall(id="c1", function=FunctionBody(name="ReadFile", arguments=json.dumps({"path": "blocked"})))
    outcome = await toolset.handle(call, context)
    assert outcome.result.is_error and outcome.result.message == "Blocked by PreToolUse hook"
    assert [e for e, _, _ in seen] == ["PreToolUse"]
    seen.clear()
    (tmp_path / "a.txt").write_text("hi\n")
    call = ToolCall(id="c2", function=FunctionBody(name="ReadFile", arguments=json.dumps({"path": "a.txt"})))
    outcome = await toolset.handle(call, context)
    assert not outcome.result.is_error
    assert [(e, t) for e, t, _ in seen] == [("PreToolUse", "ReadFile"), ("PostToolUse", "ReadFile")]
    assert "hi" in seen[1][2]["tool_output"]
    seen.clear()
    call = ToolCall(id="c3", function=FunctionBody(name="ReadFile", arguments="{not json"))
    await toolset.handle(call, context)
    call = ToolCall(id="c4", function=FunctionBody(name="NoSuchTool", arguments="{}"))
    await toolset.handle(call, context)
    assert seen == []  # failures before the tool could run fire no hooks


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('default_model = "x"\n[providers.p]\napi_key = "k"\nbase_url = "/tmp/hooks/dir"\n', False),
        ('[[hooks]]\nevent = "Stop"\ncommand = "true"\n', True),
        ('  [[ hooks ]]\nevent = "Stop"\n', True),
        ('hooks = [{event = "Stop", command = "true"}]\n', True),
        ('{"default_model": "", "providers": {"hooks-provider": {}}, "x": "/hooks/"}', False),
        ('{"default_model": "", "hooks": []}', True),
    ],
)
def test_early_initialize_looks_for_hooks_in_the_config_text(text: str, expected: bool) -> None:
    assert _config_may_have_hooks({"config_text": text}) is expected


def test_early_initialize_reads_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "hooks" / "config.toml"  # "hooks" in the path is not a hook
    path.parent.mkdir()
    path.write_text('default_model = ""\n')
    assert not _config_may_have_hooks({"config_file": str(path)})
    path.write_text('[[hooks]]\nevent = "Stop"\ncommand = "true"\n')
    assert _config_may_have_hooks({"config_file": str(path)})
    assert not _config_may_have_hooks({"config_file": str(tmp_path / "missing.toml")})
