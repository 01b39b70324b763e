"""Every setting through every front end's door: checked once, refused in the same words, announced once.

Each front end changes a session's settings its own way — a slash command (ACP and Wire prompts,
the web page's prompt box), an ACP mode or config option (`options.apply_option`,
`session_admin.set_title`), the web page's controls (`hub.Driver`) — and each goes through the
session's `SessionControls` (core/session_controls.py). Here the real front-end code drives a real
core on real session files: a value a setting cannot take gets the same sentence from every door
and changes nothing; a value it can take is stored and announced exactly once on the session's
stream (the signal each front end shows: ACP's pickers, the page's Status). Wire's own
`set_plan_mode` and the protocols' views of the same errors: tests/e2e/test_settings_everywhere.py.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from acp import RequestError

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore, FromUser
from kimi_acp.core.session_controls import SettingError
from kimi_acp.core.turn import ModeChanged, ModelChanged, SandboxChanged, TitleChanged
from kimi_acp.frontends.acp import session_admin
from kimi_acp.frontends.acp.options import apply_option
from kimi_acp.frontends.web.hub import Driver, WebError
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.sandbox.session import mode_text
from kimi_acp.wire.types import TextPart

SIGNALS = (ModeChanged, ModelChanged, SandboxChanged, TitleChanged)
CONFIG = {
    "default_model": "scripted",
    "models": {
        "scripted": {"provider": "scripted", "model": "scripted_echo", "max_context_size": 100000},  # no thinking
        "other": {"provider": "scripted", "model": "kimi-for-coding", "max_context_size": 100000},  # thinking
        "broken": {"provider": "nowhere", "model": "m", "max_context_size": 100000},  # no base_url: unusable
    },
    "providers": {
        "scripted": {"type": "_scripted_echo"},
        "nowhere": {"type": "openai_legacy", "base_url": "", "api_key": "sk-x"},
    },
    "permissions": {"always_ask": False},
}
SANDBOX_MODES = ", ".join(f"`{mode}` ({mode_text(mode)})" for mode in ("off", "workspace-write", "read-only"))
# What a value no front end may set is told, word for word, whichever front end tried.
REFUSALS = {
    "model": ("nope", "Unknown model `nope`. Configured models: `scripted`, `other`, `broken`."),
    "unusable model": ("broken", "Model `broken` cannot be used: its provider needs a base_url and the model a name."),
    "thinking": ("on", "`scripted` has no thinking mode (its capabilities have no `thinking`)."),
    "sandbox": ("nowhere", f"Unknown sandbox mode `nowhere`. Modes: {SANDBOX_MODES}."),
    "title": ("  ", "The title is empty."),
}

Change = Callable[[AgentCore, str], Awaitable[str | None]]  # the front end's reply, or None


def slash(command: str) -> Change:
    async def run(core: AgentCore, value: str) -> str:
        said: list[str] = []
        unsubscribe = core.stream.subscribe(lambda m: said.append(m.text) if isinstance(m, TextPart) else None)
        try:
            await core.run_turn(FromUser(f"{command} {value}".strip()))
        finally:
            unsubscribe()
        return "".join(said)

    return run


def acp_option(option: str) -> Change:
    async def run(core: AgentCore, value: str) -> str | None:
        try:
            apply_option(core, option, value)
        except SettingError as exc:
            return str(exc)
        return None

    return run


async def acp_title(core: AgentCore, value: str) -> str | None:
    try:
        session_admin.set_title({core.session.id: SimpleNamespace(core=core)}, core.session.id, value)  # type: ignore[dict-item]
    except RequestError as exc:
        return str(exc)
    return None


def web(control: str) -> Change:
    async def run(core: AgentCore, value: str) -> str | None:
        driver = Driver(core)
        try:
            getattr(driver, control)(value)
        except WebError as exc:
            assert exc.status == 400
            return str(exc)
        return None

    return run


@pytest.fixture
def core(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AgentCore:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    loaded = load_config(config_text=json.dumps(CONFIG))
    return AgentCore.open(session=sessions.create(work_dir), loaded_config=loaded, kaos=LocalKaos())


def announcements(core: AgentCore) -> list[Any]:
    seen: list[Any] = []
    core.stream.subscribe(lambda m: seen.append(m) if isinstance(m, SIGNALS) else None)
    return seen


def state(core: AgentCore) -> str:
    path = core.session.dir / "state.json"
    return path.read_text() if path.exists() else ""


def door(name: str) -> Change:
    """A front end's way to set a value."""
    doors: dict[str, Change] = {
        "slash /model": slash("/model"),
        "slash /thinking": slash("/thinking"),
        "slash /sandbox": slash("/sandbox"),
        "slash /rename": slash("/rename"),
        "acp model": acp_option("model"),
        "acp thinking": acp_option("thinking"),
        "acp sandbox": acp_option("sandbox"),
        "acp mode": acp_option("mode"),
        "acp set_title": acp_title,
        "web model": web("set_model"),
        "web rename": web("rename"),
    }
    return doors[name]


@pytest.mark.parametrize(
    ("refusal", "doors"),
    [
        ("model", ["slash /model", "acp model", "web model"]),
        ("unusable model", ["slash /model", "acp model", "web model"]),
        ("thinking", ["slash /thinking", "acp thinking"]),
        ("sandbox", ["slash /sandbox", "acp sandbox"]),
        ("title", ["acp set_title", "web rename"]),  # `/rename` with nothing after it shows its usage
    ],
)
async def test_a_value_no_front_end_may_set_gets_the_same_words_everywhere(core: AgentCore, refusal: str, doors: list[str]) -> None:
    value, words = REFUSALS[refusal]
    before, seen = state(core), announcements(core)
    for name in doors:
        reply = await door(name)(core, value)
        assert reply is not None and words in reply, (name, reply)
    assert seen == [] and state(core) == before  # nothing changed, nothing announced


@pytest.mark.parametrize(
    ("doors", "value", "signal", "now"),
    [
        (["slash /model", "acp model", "web model"], "other", ModelChanged, lambda c: c.controls.model_alias == "other"),
        (["acp model"], "other,thinking", ModelChanged, lambda c: (c.controls.model_alias, c.controls.thinking) == ("other", True)),
        (["slash /sandbox", "acp sandbox"], "read-only", SandboxChanged, lambda c: c.sandbox.mode == "read-only"),
        (["slash /rename", "acp set_title", "web rename"], "Mine", TitleChanged, lambda c: c.session.title() == "Mine"),
        (["acp mode"], "yolo", ModeChanged, lambda c: c.approvals.yolo and c.controls.mode == "yolo"),
        (["acp mode"], "plan", ModeChanged, lambda c: c.plan_mode),
        (["acp mode"], "ask", ModeChanged, lambda c: c.approvals.always_ask),
    ],
)
async def test_a_value_set_through_any_front_end_is_stored_and_announced_once(
    tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch, doors: list[str], value: str, signal: type, now: Callable[[AgentCore], bool]
) -> None:
    loaded = load_config(config_text=json.dumps(CONFIG))
    for name in doors:
        monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / name.replace(" ", "_").replace("/", "")))
        core = AgentCore.open(session=sessions.create(work_dir), loaded_config=loaded, kaos=LocalKaos())
        seen = announcements(core)
        change = door(name)
        await change(core, value)
        assert [type(s) for s in seen] == [signal], name
        assert now(core), name
        reopened = AgentCore.open(session=sessions.find(work_dir, core.session.id), loaded_config=loaded, kaos=LocalKaos())  # type: ignore[arg-type]
        assert now(reopened), f"{name}: kept in the session"
        await change(core, value)  # the same value again: nothing changes, nothing is announced
        assert len(seen) == 1, name


async def test_thinking_is_checked_against_the_model_wherever_it_is_set(core: AgentCore) -> None:
    seen = announcements(core)
    core.controls.set_model("other")
    for name in ("slash /thinking", "acp thinking"):
        await door(name)(core, "on")
        assert core.controls.thinking_on()
        await door(name)(core, "off")
        assert not core.controls.thinking_on()
    assert [type(s) for s in seen] == [ModelChanged] * 5  # the model, then each change once


async def test_the_web_pages_controls_are_announced_once(core: AgentCore) -> None:
    """The page's toggles: one Status notification per change (the controls' signal), none for a
    toggle that changes nothing."""
    driver = Driver(core)
    page = driver.attach()
    seen = announcements(core)
    for toggle in (driver.set_plan_mode, driver.set_always_ask):
        toggle(True)
        toggle(True)
    driver.set_model("other")
    live = [page.queue.get_nowait() for _ in range(page.queue.qsize())]
    statuses = [n for n in live if n is not None and n["method"] == "Status"]
    assert len(statuses) == 3
    assert statuses[-1]["params"]["plan_mode"] and statuses[-1]["params"]["always_ask"] and statuses[-1]["params"]["model"] == "other"
    assert [type(s) for s in seen] == [ModeChanged, ModeChanged, ModelChanged]
