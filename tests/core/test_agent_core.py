"""AgentCore (kimi_acp/core/agent_core.py): what constructing and opening a core does, session
settings it reads, the deferred built-in tools, and closing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.kaos.local import LocalKaos


def _core(tmp_path: Path, config_text: str, session: Any = None) -> Any:
    from kimi_acp.config import load_config
    from kimi_acp.core.agent_core import AgentCore

    loaded = load_config(config_text=config_text)
    return AgentCore.open(session=session or sessions.create(tmp_path), loaded_config=loaded, kaos=LocalKaos())


SETTINGS_CONFIG = (
    '{"default_model": "a", "default_plan_mode": true, '
    '"models": {"a": {"provider": "p", "model": "echo", "max_context_size": 1000}}, '
    '"providers": {"p": {"type": "_echo"}}}'
)


# --------------------------------------------------------------------------- closing


async def _slow_to_stop() -> None:
    """A turn that takes a while to wind down once cancelled (a tool finishing its cleanup)."""
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        await asyncio.sleep(1)
        raise


async def test_close_passes_the_callers_cancellation_on(tmp_path: Path) -> None:
    core = _core(tmp_path, SETTINGS_CONFIG)
    core._turn = asyncio.create_task(_slow_to_stop())
    await asyncio.sleep(0)
    closing = asyncio.create_task(core.close())
    await asyncio.sleep(0.05)  # close() waits for the turn to end
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert closing.cancelled()
    core._turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await core._turn


async def test_close_ends_a_turn_that_is_cancelled_without_raising(tmp_path: Path) -> None:
    core = _core(tmp_path, SETTINGS_CONFIG)
    core._turn = asyncio.create_task(asyncio.sleep(10))
    await asyncio.sleep(0)
    await core.close()  # the turn's own CancelledError is the end of the turn, not the caller's
    assert core._turn.cancelled()


# --------------------------------------------------------------------------- session settings


def test_constructing_a_core_writes_nothing_and_open_starts_the_session(tmp_path: Path) -> None:
    """`AgentCore(...)` only holds what it is given; `AgentCore.open` reads the history and, for a
    new session, writes the system prompt and the config's plan mode."""
    from kimi_acp.config import load_config
    from kimi_acp.core.agent_core import AgentCore
    from kimi_acp.core.context import Context

    session = sessions.create(tmp_path)
    before = sorted(p.name for p in session.dir.iterdir())
    loaded = load_config(config_text=SETTINGS_CONFIG)
    core = AgentCore(session=session, loaded_config=loaded, kaos=LocalKaos(), context=Context(session.context_file))
    assert sorted(p.name for p in session.dir.iterdir()) == before
    assert not session.context_file.exists() and not core.plan_mode

    opened = AgentCore.open(session=session, loaded_config=loaded, kaos=LocalKaos())
    assert Context.load(session.context_file).system_prompt == opened.context.system_prompt
    assert opened.context.system_prompt and opened.plan_mode
    again = AgentCore.open(session=session, loaded_config=loaded, kaos=LocalKaos())
    assert again.context.system_prompt == opened.context.system_prompt  # read back, not written again


def test_default_plan_mode_applies_to_new_sessions_only(tmp_path: Path) -> None:
    core = _core(tmp_path, SETTINGS_CONFIG)
    assert core.plan_mode is True
    core.controls.set_plan_mode(False)
    reopened = _core(tmp_path, SETTINGS_CONFIG, sessions.find(tmp_path, core.session.id))
    assert reopened.plan_mode is False  # the user's choice for this session sticks


def test_a_session_model_removed_from_the_config_falls_back_to_the_default(tmp_path: Path) -> None:
    session = sessions.create(tmp_path)
    session.state.model = "gone"
    session.save_state()
    core = _core(tmp_path, SETTINGS_CONFIG, session)
    assert core.controls.model_alias is None
    assert core.resolved_model() is not None and core.resolved_model().alias == "a"
