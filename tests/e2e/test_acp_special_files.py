"""A FIFO, a device or a socket freezes nothing (issue #30, item 5), through a real `kimi acp`
process: one session's ReadFile of each is answered with an error at once while another session of
the same process goes on streaming its reply. Before, ReadFile read a FIFO (size 0) inline on the
event loop: every session of the process stopped, even `session/cancel` went unanswered."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeLLMServer, text_reply, tool_call_reply
from tests.support.acp_fixtures import acp_env, fake_model_config, of_kind, texts
from tests.support.inmemory import serve_acp

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and Unix sockets are POSIX's"),
]

PIECES = [f"word{n} " for n in range(40)]  # 40 chunks, 50 ms apart: two seconds of streaming


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.mark.parametrize("fs", [False, True], ids=["local files", "editor fs"])
async def test_reading_a_fifo_a_device_or_a_socket_fails_at_once_while_another_session_streams(
    share: Path, project: Path, server: FakeLLMServer, fs: bool
) -> None:
    fifo, sock_path = project / "pipe", project / "listening.sock"
    os.mkfifo(fifo)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    targets = {"r1": str(fifo), "r2": "/dev/zero", "r3": str(sock_path)}
    server.enqueue(
        text_reply(*PIECES, delay=0.05),  # the first session's reply, streamed slowly
        tool_call_reply(*((call, "ReadFile", json.dumps({"path": path})) for call, path in targets.items())),
        text_reply("none of them is a file"),
    )
    fake_model_config(share, server)
    try:
        async with serve_acp(acp_env(share), fs=fs) as agent:
            await agent.initialize()
            streaming, reading = [await agent.new_session(project) for _ in range(2)]
            first = asyncio.create_task(agent.prompt(streaming.session_id, "talk for a while"))
            while not of_kind(agent.recorder.updates(streaming.session_id), "agent_message_chunk"):
                await asyncio.sleep(0.01)
            started = time.monotonic()
            answered = await asyncio.wait_for(agent.prompt(reading.session_id, "read those"), 10)
            took = time.monotonic() - started
            streamed_meanwhile = texts(agent.recorder.updates(streaming.session_id))
            assert not first.done()  # the other session is still streaming
            assert (await asyncio.wait_for(first, 20)).stop_reason == "end_turn"
    finally:
        listener.close()
    assert answered.stop_reason == "end_turn" and took < 1.5, took
    assert texts(agent.recorder.updates(streaming.session_id)) == "".join(PIECES)  # every chunk, in order
    assert streamed_meanwhile != "".join(PIECES)
    updates = of_kind(agent.recorder.updates(reading.session_id), "tool_call_update")
    cards = {u["toolCallId"].rpartition("/")[2]: u for u in updates if u.get("status") in ("completed", "failed")}
    kinds = {"r1": "a FIFO (named pipe)", "r2": "a character device", "r3": "a socket"}
    for call, path in targets.items():
        assert cards[call]["status"] == "failed"
        assert f"`{path}` is {kinds[call]}, not a regular file" in json.dumps(cards[call]["content"]), cards[call]
