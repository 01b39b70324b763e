"""spawn-equivalent: the ACP preload, then initialize + session/new through the SDK's router and our guard.

    python bench/startup_instructions_driver.py WORK_DIR               # session/new in WORK_DIR
    python bench/startup_instructions_driver.py WORK_DIR SESSION_ID    # a cold session/load instead
"""
import importlib
import sys

try:
    entry = importlib.import_module("kimi_acp.frontends.acp.entry")
    prefix = "kimi_acp.frontends.acp"
except ModuleNotFoundError:
    entry = importlib.import_module("kimi_acp.acp.entry")
    prefix = "kimi_acp.acp"
server_module = entry._load_server_stack()  # first, as in kimi acp: nothing heavy imported before it
import asyncio  # noqa: E402

guard_mod = importlib.import_module(prefix + ".guard")
from acp.agent.router import build_agent_router  # noqa: E402


class Transport:
    def write(self, message): pass
    def notify(self, method, params): pass
    async def send(self, message): pass

async def main():
    server = server_module.AcpServer(Transport(), initialize_params={"protocolVersion": 1})
    handler = guard_mod.RequestGuard(build_agent_router(server, use_unstable_protocol=True), server)
    await handler("initialize", {"protocolVersion": 1, "clientCapabilities": {}}, False)
    if len(sys.argv) > 2:
        await handler("session/load", {"sessionId": sys.argv[2], "cwd": sys.argv[1], "mcpServers": []}, False)
    else:
        result = await handler("session/new", {"cwd": sys.argv[1], "mcpServers": []}, False)
        assert result, result
    await asyncio.sleep(0)

asyncio.run(main())
