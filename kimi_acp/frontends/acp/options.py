"""Session modes and config options (the IDE's mode and model pickers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import Config, derive_capabilities
from ...core.agent_core import AgentCore
from ...errors import ConfigError

MODES = (
    ("default", "Default", "Ask before running commands and changing files."),
    ("yolo", "YOLO", "Run commands and change files without asking."),
    ("plan", "Plan", "Read-only: investigate and propose a plan; no file changes."),
)
MODE_IDS = tuple(m[0] for m in MODES)
THINKING_SUFFIX = ",thinking"


class OptionError(ConfigError, ValueError):
    """A mode, option id or value the session does not have."""


@dataclass(frozen=True)
class ModelChoice:
    value: str
    name: str
    alias: str
    thinking: bool | None


def model_choices(config: Config) -> list[ModelChoice]:
    """One value per configured model, plus `<alias>,thinking` where thinking is optional."""
    choices = []
    for alias, model in config.models.items():
        caps = derive_capabilities(model)
        label = model.display_name or model.model or alias
        if "always_thinking" in caps:
            choices.append(ModelChoice(alias, f"{label} (thinking)", alias, True))
        elif "thinking" in caps:
            choices.append(ModelChoice(alias, label, alias, False))
            choices.append(ModelChoice(alias + THINKING_SUFFIX, f"{label} (thinking)", alias, True))
        else:
            choices.append(ModelChoice(alias, label, alias, None))
    return choices


def current_mode(core: AgentCore) -> str:
    if core.plan_mode:
        return "plan"
    return "yolo" if core.approvals.yolo else "default"


def current_model_value(core: AgentCore) -> str | None:
    alias = core.model_alias or core.config.default_model
    if not alias:
        return None
    thinking = core.thinking if core.thinking is not None else core.config.default_thinking
    values = [c.value for c in model_choices(core.config) if c.alias == alias]
    if not values:
        return alias
    if thinking and alias + THINKING_SUFFIX in values:
        return alias + THINKING_SUFFIX
    return alias if alias in values else values[0]


def modes_state(core: AgentCore) -> dict[str, Any]:
    return {
        "currentModeId": current_mode(core),
        "availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES],
    }


def config_options(core: AgentCore) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = [
        {
            "id": "mode",
            "name": "Mode",
            "description": "How much the agent may do without asking.",
            "category": "mode",
            "type": "select",
            "currentValue": current_mode(core),
            "options": [{"value": i, "name": n, "description": d} for i, n, d in MODES],
        }
    ]
    choices = model_choices(core.config)
    current = current_model_value(core)
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
    return options


def apply_mode(core: AgentCore, mode_id: str) -> None:
    if mode_id not in MODE_IDS:
        raise OptionError(f"unknown mode {mode_id!r} (available: {', '.join(MODE_IDS)})")
    core.set_plan_mode(mode_id == "plan", announce=False)
    if mode_id != "plan":
        core.set_yolo(mode_id == "yolo", announce=False)


async def apply_option(core: AgentCore, config_id: str, value: Any) -> None:
    if config_id == "mode":
        apply_mode(core, str(value))
        return
    if config_id == "model":
        choice = next((c for c in model_choices(core.config) if c.value == value), None)
        if choice is None:
            values = ", ".join(c.value for c in model_choices(core.config))
            raise OptionError(f"unknown model {value!r} (available: {values})")
        await core.set_model(choice.alias, choice.thinking)
        return
    raise OptionError(f"unknown config option {config_id!r} (available: mode, model)")
