"""MCP servers through `kimi --wire`: `--mcp-config-file` and `--mcp-config`, a scripted model calling
a tool on a stdio, a streamable-HTTP and an SSE server, with approval; faults (the server in this
process, tests/support/inmemory.py); with a real process: no orphans, one-line start errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.inmemory import WireMemory
from tests.support.wire_client import WireClientMixin, WireProcess, events, scripted_config, tool_call

from .helpers import SERVER, HttpServer, wait_gone


def stdio_entry(mode: str = "stdio", *extra: str) -> dict:
    return {"command": sys.executable, "args": [SERVER, mode, *extra]}


def output_text(output: str | list[dict]) -> str:
    return output if isinstance(output, str) else "".join(p.get("text", "") for p in output)


async def start(tmp_path: Path, project: Path, scripts: list[str], *mcp_args: str, process: bool = False) -> WireClientMixin:
    """`kimi --wire`, initialized: in this process, or (`process`) a real one."""
    config = scripted_config(tmp_path, scripts)
    kind = WireProcess if process else WireMemory
    wire = await kind.start("--work-dir", str(project), "--config-file", str(config), *mcp_args)
    await wire.call("initialize", {"protocol_version": "1.10"})
    return wire


async def approve_all(wire: WireClientMixin, prompt_id: str) -> tuple[dict, list[dict]]:
    """Answer every approval request with approve until the prompt's response arrives."""
    seen: list[dict] = []
    while True:
        message = await wire.recv(30)
        seen.append(message)
        if message.get("method") == "request" and message["params"]["type"] == "ApprovalRequest":
            await wire.respond(message["id"], {"request_id": message["params"]["payload"]["id"], "response": "approve"})
        elif message.get("id") == prompt_id and "method" not in message:
            return message, seen


async def test_tools_of_stdio_http_and_sse_servers(tmp_path, work_dir, http_server: HttpServer, sse_server: HttpServer):
    servers = {
        "local": stdio_entry("stdio", "--prefix", "l_"),
        "web": {"url": f"http://127.0.0.1:{http_server.port}/mcp", "transport": "http"},
        "old": {"url": f"http://127.0.0.1:{sse_server.port}/sse", "transport": "sse"},
    }
    config_file = tmp_path / "servers.json"
    config_file.write_text(json.dumps({"mcpServers": servers}))
    scripts = [
        "\n".join(
            [
                tool_call("t1", "l_echo", {"text": "one"}),
                tool_call("t2", "h_echo", {"text": "two"}),
                tool_call("t3", "s_echo", {"text": "three"}),
            ]
        ),
        "text: all three answered",
    ]
    wire = await start(tmp_path, work_dir, scripts, "--mcp-config-file", str(config_file))
    prompt_id = await wire.request("prompt", {"user_input": "use the MCP tools"})
    response, seen = await approve_all(wire, prompt_id)
    assert response["result"] == {"status": "finished"}

    # Kimi's order: the turn waits for the servers before its first step, and says so.
    turn = [
        "MCP" if e["type"] == "StatusUpdate" and e["payload"].get("mcp_status") else e["type"]
        for e in events(seen)
        if e["type"] in ("StatusUpdate", "MCPLoadingBegin", "MCPLoadingEnd", "StepBegin")
    ]
    first_step = turn.index("StepBegin")
    assert turn[:first_step] in (["MCP", "MCPLoadingBegin", "MCP", "MCPLoadingEnd"], ["MCP"]), turn
    statuses = [e["payload"]["mcp_status"] for e in events(seen, "StatusUpdate") if e["payload"].get("mcp_status")]
    final = statuses[-1]
    assert final["loading"] is False and final["connected"] == 3 and final["total"] == 3
    assert {s["name"]: s["status"] for s in final["servers"]} == {"local": "connected", "web": "connected", "old": "connected"}

    approvals = [m["params"]["payload"] for m in seen if m.get("method") == "request"]
    assert sorted(a["action"] for a in approvals) == ["mcp:h_echo", "mcp:l_echo", "mcp:s_echo"]
    assert all(a["sender"] == a["action"][4:] for a in approvals)
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    assert [results[t]["is_error"] for t in ("t1", "t2", "t3")] == [False, False, False]
    assert "echo: one" in json.dumps(results["t1"]["output"])
    assert "echo: two" in json.dumps(results["t2"]["output"])
    assert "echo: three" in json.dumps(results["t3"]["output"])
    assert await wire.close() == 0


async def test_broken_servers_are_reported_by_name_and_the_session_goes_on(tmp_path, work_dir):
    servers = {"good": stdio_entry(), "crashy": stdio_entry("crash"), "stuck": stdio_entry("hang")}
    (tmp_path / "share").mkdir()
    # A connect timeout (config.toml [mcp.client]) that ends the hanging server but leaves the good one
    # time to start on a busy 2-core machine (1.5 s was not always enough).
    scripts = [tool_call("t1", "echo", {"text": "still here"}), "text: done"]
    config = scripted_config(tmp_path, scripts)
    data = json.loads(config.read_text())
    data["mcp"] = {"client": {"connect_timeout_ms": 4000}}
    config.write_text(json.dumps(data))
    wire = await WireMemory.start(
        "--work-dir", str(work_dir), "--config-file", str(config), "--yolo",
        "--mcp-config", json.dumps({"mcpServers": servers}),
    )  # fmt: skip
    await wire.call("initialize", {"protocol_version": "1.10"})
    response, seen = await wire.call("prompt", {"user_input": "go"}, timeout=30)
    assert response["result"] == {"status": "finished"}
    final = [e["payload"]["mcp_status"] for e in events(seen, "StatusUpdate") if e["payload"].get("mcp_status")][-1]
    states = {s["name"]: s["status"] for s in final["servers"]}
    assert states == {"good": "connected", "crashy": "failed", "stuck": "failed"}
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert result["is_error"] is False and "still here" in json.dumps(result["output"])
    assert await wire.close() == 0


async def test_a_raising_tool_and_an_image_reach_the_model(tmp_path, work_dir):
    scripts = ["\n".join([tool_call("t1", "boom", {}), tool_call("t2", "picture", {})]), "text: ok"]
    wire = await start(tmp_path, work_dir, scripts, "--yolo", "--mcp-config", json.dumps({"mcpServers": {"s": stdio_entry()}}))
    response, seen = await wire.call("prompt", {"user_input": "go"}, timeout=30)
    assert response["result"] == {"status": "finished"}
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    assert results["t1"]["is_error"] is True and "kaboom from the server" in json.dumps(results["t1"])
    # The scripted model has no image_in: the picture becomes a note, the caption stays.
    assert results["t2"]["is_error"] is False
    assert "a red dot" in json.dumps(results["t2"]["output"])
    assert await wire.close() == 0


async def test_no_server_process_outlives_the_wire_process(tmp_path, work_dir):
    scripts = ["\n".join([tool_call("t1", "pid", {}), tool_call("t2", "spawn", {})]), "text: ok"]
    wire = await start(
        tmp_path, work_dir, scripts, "--yolo", "--mcp-config", json.dumps({"mcpServers": {"s": stdio_entry()}}), process=True
    )
    response, seen = await wire.call("prompt", {"user_input": "go"}, timeout=30)
    assert response["result"] == {"status": "finished"}
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    pids = [int(output_text(results[t]["output"])) for t in ("t1", "t2")]
    assert wait_gone(pids, timeout=0.1) == pids  # both alive while the session is
    assert await wire.close() == 0
    assert wait_gone(pids) == []  # the server and the child it started are gone


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--mcp-config", "{not json"], "--mcp-config"),
        (["--mcp-config", '{"mcpServers": {"x": {"args": ["a"]}}}'], "x"),
        (["--mcp-config-file", "/nonexistent/servers.json"], "/nonexistent/servers.json"),
    ],
)
async def test_bad_mcp_flags_are_a_one_line_start_error(tmp_path, work_dir, args, expected):
    config = scripted_config(tmp_path, [])
    wire = await WireProcess.start("--work-dir", str(work_dir), "--config-file", str(config), *args)
    code = await wire.close()
    stderr = await wire.stderr_text()
    assert code == 2
    assert expected in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a process (its peak resident memory so far), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@pytest.mark.processes
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
async def test_a_64_mib_answer_fails_its_call_restarts_the_server_and_costs_the_agent_little_memory(tmp_path, work_dir):
    """Issue #30, item 6: a stdio server that answers a 64 MiB message. The call fails with the
    reason, the server is stopped and started again on the next call, which works, and the agent's
    peak memory grows by about the 16 MiB limit, not by the message (before: ~6.5 times it)."""
    scripts = [
        tool_call("p1", "pid", {}),
        "text: first",
        tool_call("b1", "big", {"chars": 64 << 20}),
        tool_call("p2", "pid", {}),
        "text: done",
    ]
    wire = await start(
        tmp_path, work_dir, scripts, "--yolo", "--mcp-config", json.dumps({"mcpServers": {"s": stdio_entry()}}), process=True
    )
    assert isinstance(wire, WireProcess)
    first, seen = await wire.call("prompt", {"user_input": "which pid?"}, timeout=30)
    assert first["result"] == {"status": "finished"}
    (p1,) = [e["payload"]["return_value"] for e in events(seen, "ToolResult")]
    before = peak_rss_mib(wire.proc.pid)
    response, seen = await wire.call("prompt", {"user_input": "flood it"}, timeout=60)
    after = peak_rss_mib(wire.proc.pid)
    assert response["result"] == {"status": "finished"}
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    flood = results["b1"]
    assert flood["is_error"] and "the server sent a message of more than 16 MiB" in flood["message"], flood
    first_pid, second_pid = int(output_text(p1["output"])), int(output_text(results["p2"]["output"]))
    assert not results["p2"]["is_error"] and second_pid != first_pid  # a new server answered
    assert wait_gone([first_pid]) == []
    assert after - before < 40, (before, after)
    assert await wire.close() == 0
