"""What a session without web or HTTP use never loads: creating the built-in tools (as every
`session/new` does) imports no httpx; the web tools load it when they run (issue #13)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from kimi_acp.frontends.acp import server
from kimi_acp.tools import builtin_tools
from kimi_acp.startup.warm_up import core_warm_ups
builtin_tools()
for step in core_warm_ups():  # the tool schemas too
    step()
print(sorted(m for m in sys.modules if m == "httpx" or m.startswith(("httpx.", "httpcore"))))
"""


def test_building_the_tools_imports_no_http_stack():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


SESSION_PROBE = """
import asyncio, os, sys
from kimi_acp.frontends.acp.entry import _load_server_stack
server = _load_server_stack()  # what `kimi acp` imports before it serves

class Transport:
    def notify(self, *args, **kwargs):
        pass

async def main():
    agent = server.AcpServer(transport=Transport())
    if os.environ.get("LOAD"):
        result = await agent.load_session(cwd=os.environ["WORK"], session_id=os.environ["LOAD"], mcp_servers=[])
    else:
        result = await agent.new_session(cwd=os.environ["WORK"], mcp_servers=[])
        assert result["sessionId"]

asyncio.run(main())
print(" ".join(sorted(sys.modules)))
"""

# Modules the first `session/new` of `kimi acp` does without (issue #13): the tools other than the
# ones a session's set-up touches (created when the model's tool list is first built), and what
# pydantic loads only on demand: `pydantic.networks` (acp.schema's AnyUrl, created lazily), and
# `importlib.metadata` (pydantic's plugin discovery, kimi_acp/_compat/pydantic_plugin_loader.py), and the
# standard library's `logging.handlers` (kimi_acp/startup/logs.py rotates the log itself).
NOT_BEFORE_THE_FIRST_SESSION = (
    "kimi_acp.tools.shell",
    "kimi_acp.tools.read",
    "kimi_acp.tools.write",
    "kimi_acp.tools.grep",
    "kimi_acp.tools.glob",
    "kimi_acp.tools.media",
    "kimi_acp.tools.fetch",
    "kimi_acp.tools.search",
    "kimi_acp.tools.replace",
    "kimi_acp.tools.todo",
    "pydantic.networks",
    "importlib.metadata",
    "logging.handlers",
    "kimi_acp.mcp.config",  # an mcp.json without servers (written below) loads nothing of MCP
    # the providers a session imports only when it talks to such a model (issue #23)
    "kimi_acp.llm.openai_responses",
    "kimi_acp.llm.gemini",
    "kimi_acp.llm.vertexai",
    "cryptography",
    # what a turn needs, not a session that only opens (issue #31): the shell parser and its
    # grammar, the command judgement, undo's records, the sandbox's probe and policy, MCP's stdio
    "tree_sitter",
    "tree_sitter_bash",
    "kimi_acp.permissions.shell_parse",
    "kimi_acp.permissions.command_judgement",
    "kimi_acp.core.undo",
    "kimi_acp.core.undo_journal",
    "kimi_acp.core.undo_shadow",
    "kimi_acp.core.undo_restore",
    "kimi_acp.sandbox.detect",
    "kimi_acp.sandbox.policy",
    "kimi_acp.mcp.stdio",
    "mcp",
)


def test_the_first_acp_session_loads_no_tool_module_nor_on_demand_pydantic(tmp_path):
    from tests.support.acp_fixtures import acp_env, write_config

    share, work = tmp_path / "share", tmp_path / "work"
    share.mkdir()
    work.mkdir()
    write_config(share, ["text: hi"])
    (share / "mcp.json").write_text('{"mcpServers": {}}')
    env = {**acp_env(share), "WORK": str(work)}
    done = subprocess.run(
        [sys.executable, "-c", SESSION_PROBE], capture_output=True, text=True, timeout=120, env=env, cwd=work
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "acp.schema" in loaded and "kimi_acp.frontends.acp.server" in loaded  # the probe did what a server does
    assert sorted(loaded.intersection(NOT_BEFORE_THE_FIRST_SESSION)) == []


async def test_loading_a_session_with_history_loads_none_of_them_either(tmp_path):
    """A session whose turns ran Shell, edited a file (undo records) and read one, loaded by a
    fresh process: the replay needs none of what running those turns needed."""
    from tests.support.acp_fixtures import acp_env, write_config
    from tests.support.inmemory import serve_acp
    from tests.support.wire_client import tool_call

    share, work = tmp_path / "share", tmp_path / "work"
    share.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("one\n")
    scripts = [
        tool_call("s1", "Shell", {"command": "echo hi"}),
        tool_call("e1", "StrReplaceFile", {"path": "notes.txt", "edit": {"old": "one", "new": "two"}}),
        tool_call("r1", "ReadFile", {"path": "notes.txt"}),
        "text: done",
    ]
    write_config(share, scripts, default_yolo=True)
    (share / "mcp.json").write_text('{"mcpServers": {}}')
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(work)
        assert (await agent.prompt(session.session_id, "go")).stop_reason == "end_turn"
    assert (work / "notes.txt").read_text() == "two\n"
    env = {**acp_env(share), "WORK": str(work), "LOAD": session.session_id}
    done = subprocess.run(
        [sys.executable, "-c", SESSION_PROBE], capture_output=True, text=True, timeout=120, env=env, cwd=work
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "kimi_acp.frontends.acp.server" in loaded and "kimi_acp.wire.types" in loaded
    assert sorted(loaded.intersection(NOT_BEFORE_THE_FIRST_SESSION)) == []
