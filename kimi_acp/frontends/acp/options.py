"""Session modes and config options (the IDE's mode, model, thinking and sandbox pickers).

What the pickers show is read from the session's controls (core/session_controls.py), and what the
client picks goes through them: the values are checked there, in the same words as `/model` or
`/sandbox` give. Thinking is its own control, category `thought_level` (JetBrains builds its effort
picker from it), as codex-acp offers its reasoning effort: a select (`off` / `on`), or a boolean
toggle for a client that advertises `session.configOptions.boolean` (codex-acp's fast mode does the
same). The model picker lists each model once; its older `<alias>,thinking` values are still
accepted (the controls take them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import Config
from ...core.agent_core import AgentCore
from ...errors import ConfigError

MODES = (
    ("default", "Default", "Run commands that only read the workspace; ask before other commands and before changing files."),
    ("ask", "Always ask", "Ask before every command, read-only ones too, and before changing files."),
    ("yolo", "YOLO", "Run commands and change files without asking."),
    ("plan", "Plan", "Read-only: investigate and propose a plan; no file changes."),
)
MODE_IDS = tuple(m[0] for m in MODES)  # as core/session_controls.MODES
THINKING_ID = "thinking"
SANDBOX_ID = "sandbox"
OPTION_IDS = ("mode", "model", THINKING_ID, SANDBOX_ID)
# The sandbox picker: a category of our own (the schema leaves `_`-names free); Zed and JetBrains
# show every select option, whatever its category.
SANDBOX_CATEGORY = "_sandbox"
SANDBOX_LEVELS = (
    ("off", "Off", "Every command asks for approval."),
    ("workspace-write", "Workspace write", "Commands run unasked in an OS sandbox: write only the workspace, no network."),
    ("read-only", "Read-only", "Commands run unasked in an OS sandbox that writes nothing but its temp dir."),
)
THINKING_LEVELS = (("off", "Off", "Answer without thinking first."), ("on", "On", "Think before answering."))


class OptionError(ConfigError, ValueError):
    """An option id the session does not have, or a value that is not of the option's kind (the
    controls refuse a value the setting cannot take, `SettingError`)."""


@dataclass(frozen=True)
class ModelChoice:
    value: str
    name: str
    alias: str


def model_choices(config: Config) -> list[ModelChoice]:
    """One value per configured model, its alias."""
    return [ModelChoice(alias, model.display_name or model.model or alias, alias) for alias, model in config.models.items()]


def boolean_options_supported(client_capabilities: dict[str, Any] | None) -> bool:
    """`clientCapabilities.session.configOptions.boolean` (schema 1.25): the client shows toggles."""
    session = (client_capabilities or {}).get("session")
    options = session.get("configOptions") if isinstance(session, dict) else None
    return isinstance(options, dict) and isinstance(options.get("boolean"), dict)


def modes_state(core: AgentCore) -> dict[str, Any]:
    return {
        "currentModeId": core.controls.mode,
        "availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES],
    }


def config_options(core: AgentCore, client_capabilities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = [
        {
            "id": "mode",
            "name": "Mode",
            "description": "How much the agent may do without asking.",
            "category": "mode",
            "type": "select",
            "currentValue": core.controls.mode,
            "options": [{"value": i, "name": n, "description": d} for i, n, d in MODES],
        }
    ]
    choices = model_choices(core.config)
    current = core.controls.current_model()
    if choices and current is not None:
        options.append(
            {
                "id": "model",
                "name": "Model",
                "description": "The model this session talks to.",
                "category": "model",
                "type": "select",
                "currentValue": current,
                "options": [{"value": c.value, "name": c.name} for c in choices],
            }
        )
    thinking = thinking_option(core, boolean=boolean_options_supported(client_capabilities))
    if thinking is not None:
        options.append(thinking)
    options.append(sandbox_option(core))
    return options


def sandbox_option(core: AgentCore) -> dict[str, Any]:
    """Where Shell commands run (kimi_acp/sandbox): the session's sandbox mode."""
    return {
        "id": SANDBOX_ID,
        "name": "Sandbox",
        "description": "Where commands run: in an OS sandbox without asking, or each asking for approval.",
        "category": SANDBOX_CATEGORY,
        "type": "select",
        "currentValue": core.controls.sandbox.mode,
        "options": [{"value": v, "name": n, "description": d} for v, n, d in SANDBOX_LEVELS],
    }


def thinking_option(core: AgentCore, *, boolean: bool) -> dict[str, Any] | None:
    """The thought-level control for the session's model; None when the model has no thinking."""
    resolved = core.controls.resolved_model()
    if resolved is None or not resolved.supports_thinking:
        return None
    option: dict[str, Any] = {
        "id": THINKING_ID,
        "name": "Thinking",
        "description": "Whether the model thinks before it answers (from the next request).",
        "category": "thought_level",
    }
    if resolved.always_thinking:  # one level only: shown, not switchable
        return {**option, "type": "select", "currentValue": "on",
                "options": [{"value": "on", "name": "On", "description": "This model always thinks."}]}
    on = core.controls.thinking_on()
    if boolean:
        return {**option, "type": "boolean", "currentValue": on}
    return {**option, "type": "select", "currentValue": "on" if on else "off",
            "options": [{"value": v, "name": n, "description": d} for v, n, d in THINKING_LEVELS]}


def apply_option(core: AgentCore, config_id: str, value: Any) -> None:
    """`session/set_config_option`: OptionError for an option the session does not have or a value
    not of its kind; `SettingError` (from the controls) for a value the setting cannot take."""
    controls = core.controls
    if config_id == "mode":
        controls.set_mode(str(value))
    elif config_id == "model":
        controls.set_model(str(value))
    elif config_id == THINKING_ID:
        controls.set_thinking(_thinking_value(value))
    elif config_id == SANDBOX_ID:
        controls.set_sandbox(str(value))
    else:
        raise OptionError(f"unknown config option {config_id!r} (available: {', '.join(OPTION_IDS)})")


def _thinking_value(value: Any) -> bool:
    """`on` / `off` (the select) or true / false (the toggle)."""
    on = value if isinstance(value, bool) else {"on": True, "off": False}.get(str(value))
    if on is None:
        raise OptionError(f"unknown thinking value {value!r} (available: on, off)")
    return on
