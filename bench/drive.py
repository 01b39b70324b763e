"""Driving an agent as a client would: spawn it, `initialize`, open sessions, prompt over ACP
(`session/prompt`) or Wire (`prompt`), and pick the streamed text out of the notifications.
Only standard methods are used, so any ACP / Wire implementation can be driven.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import procstat
from .fixtures import Share
from .rpc import Reply, RpcProcess

ACP_INIT = {"protocolVersion": 1, "clientCapabilities": {}}
WIRE_INIT = {"protocol_version": "1.10"}
START_TIMEOUT = 20.0  # a cold interpreter on a slow disk may be slow; a hung one must not stall us
REQUEST_TIMEOUT = 30.0
GRACE = 0.05  # after a response, how long to keep listening for updates that arrive late


async def spawn(
    cmd: list[str],
    share: Share,
    cwd: Path | None = None,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    string_ids: bool = False,
) -> RpcProcess:
    label = shlex.join(cmd)
    label = label if len(label) <= 70 else label[:69] + "…"
    return await RpcProcess.spawn(
        [*cmd, *(extra or [])],
        env=share.env(env),
        cwd=str(cwd or share.work_dir),
        label=label,
        string_ids=string_ids,
    )


async def acp_initialize(p: RpcProcess) -> tuple[dict[str, Any], Reply]:
    reply = await p.request("initialize", ACP_INIT, timeout=START_TIMEOUT)
    result = reply.unwrap()
    if not isinstance(result, dict) or "protocolVersion" not in result:
        raise RuntimeError(f"initialize: unexpected result {str(result)[:200]}")
    return result, reply


async def wire_initialize(p: RpcProcess) -> tuple[dict[str, Any], Reply]:
    reply = await p.request("initialize", WIRE_INIT, timeout=START_TIMEOUT)
    result = reply.unwrap()
    if not isinstance(result, dict) or "protocol_version" not in result:
        raise RuntimeError(f"initialize: unexpected result {str(result)[:200]}")
    return result, reply


async def acp_new_session(p: RpcProcess, cwd: Path) -> tuple[str, Reply]:
    reply = await p.request("session/new", {"cwd": str(cwd), "mcpServers": []}, timeout=REQUEST_TIMEOUT)
    result = reply.unwrap()
    session_id = result.get("sessionId") if isinstance(result, dict) else None
    if not isinstance(session_id, str):
        raise RuntimeError(f"session/new: no sessionId in {str(result)[:200]}")
    return session_id, reply


def acp_prompt_params(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def session_updates(
    notes: Iterable[tuple[float, dict[str, Any]]], session_id: str | None = None
) -> list[tuple[float, dict[str, Any]]]:
    """(time, update) of ACP `session/update` notifications (of one session, if given)."""
    out = []
    for t, message in notes:
        if message.get("method") != "session/update":
            continue
        params = message.get("params") or {}
        if session_id is not None and params.get("sessionId") != session_id:
            continue
        update = params.get("update")
        if isinstance(update, dict):
            out.append((t, update))
    return out


def acp_text_chunks(
    notes: Iterable[tuple[float, dict[str, Any]]], session_id: str
) -> list[tuple[float, str]]:
    out = []
    for t, update in session_updates(notes, session_id):
        if update.get("sessionUpdate") == "agent_message_chunk":
            content = update.get("content")
            if isinstance(content, dict) and content.get("type") == "text":
                out.append((t, str(content.get("text", ""))))
    return out


def wire_events(notes: Iterable[tuple[float, dict[str, Any]]]) -> list[tuple[float, dict[str, Any]]]:
    return [(t, m.get("params") or {}) for t, m in notes if m.get("method") == "event"]


def wire_text_chunks(notes: Iterable[tuple[float, dict[str, Any]]]) -> list[tuple[float, str]]:
    out = []
    for t, event in wire_events(notes):
        payload = event.get("payload") or {}
        if event.get("type") == "ContentPart" and payload.get("type") == "text":
            out.append((t, str(payload.get("text", ""))))
    return out


def first_difference(got: str, expected: str) -> str:
    n = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    return (
        f"text differs at char {n} (got {len(got)} chars, expected {len(expected)}): "
        f"got {got[max(0, n - 12) : n + 12]!r}, expected {expected[max(0, n - 12) : n + 12]!r}"
    )


@dataclass
class Prompted:
    elapsed: float  # seconds, request written → response read
    cpu: float  # seconds of server CPU (process tree) over the prompt
    chunks: list[tuple[float, str]]  # text chunks received before the response
    late: int  # text chunks received after the response
    updates: int  # notifications of this session/turn received before the response
    result: Any


async def prompt(
    p: RpcProcess, proto: str, session_id: str | None, text: str, timeout: float = REQUEST_TIMEOUT
) -> Prompted:
    """One prompt over ACP (`session/prompt`) or Wire (`prompt`), with what streamed before its answer."""
    start = len(p.notifications)
    cpu_before = procstat.cpu_seconds(p.pid)
    if proto == "acp":
        reply = await p.request("session/prompt", acp_prompt_params(session_id or "", text), timeout=timeout)
    else:
        reply = await p.request("prompt", {"user_input": text}, timeout=timeout)
    cpu_after = procstat.cpu_seconds(p.pid)
    result = reply.unwrap()
    await asyncio.sleep(GRACE)
    before, after = p.notifications[start : reply.seq], p.notifications[reply.seq :]
    if proto == "acp":
        chunks, late = acp_text_chunks(before, session_id or ""), acp_text_chunks(after, session_id or "")
        updates = len(session_updates(before, session_id))
        stop = result.get("stopReason") if isinstance(result, dict) else None
        if stop != "end_turn":
            raise RuntimeError(f"session/prompt: stopReason {stop!r}, expected 'end_turn'")
    else:
        chunks, late = wire_text_chunks(before), wire_text_chunks(after)
        updates = len(wire_events(before))
        status = result.get("status") if isinstance(result, dict) else None
        if status != "finished":
            raise RuntimeError(f"prompt: status {status!r}, expected 'finished'")
    return Prompted(reply.elapsed, cpu_after - cpu_before, chunks, len(late), updates, result)


def ms(seconds: float) -> float:
    return seconds * 1000.0
