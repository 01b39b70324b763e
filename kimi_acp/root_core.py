"""A session's root `AgentCore`, built the same way for every front end.

`kimi acp`, `kimi --wire`, `kimi web` and the Python API each open sessions whose core is made
here: the agent file (the front end's option, else the config's `agent_file`), the skills as
slash commands, the extra workspace directories, the hook engine and the Agent tool's subagents.
What the front end supports and the modes it starts in (questions, plan mode, yolo, afk,
always-ask, sandbox) come as one frozen `FrontEnd` (kimi_acp/front_end.py): the core is built from
it, never patched afterwards. What stays with the front end is what only it knows: its KAOS, how it
answers requests, its MCP servers (their lifecycle differs: ACP swaps them on load/resume) and
Wire's `--plan`.

A subagent's core is not a root core: kimi_acp/subagents/runner.py builds it from its parent.

Dependencies: the front ends import this module; it imports the feature modules (`agent_file`,
`skills`, `hooks`, `subagents`) and `core/`, never a front end. Cheap to import: the agent-file
reader (PyYAML) loads only when there is an agent file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .core.agent_core import AgentCore
from .front_end import DEFAULT_FRONT_END, FrontEnd
from .hooks import attach as attach_hooks
from .permissions.sensitive import register_sensitive_file
from .plugins import attach as attach_plugins
from .skills.provider import provider_for
from .subagents import attach as attach_subagents

if TYPE_CHECKING:
    from .agent_file import AgentSetup
    from .config import LoadedConfig
    from .kaos.base import Kaos
    from .sessions import Session

__all__ = ["build_root_core", "load_root_agent"]


def load_root_agent(loaded: LoadedConfig, agent_file: str | Path | None = None) -> AgentSetup | None:
    """The agent a root session runs: `agent_file` (a front end's option; a relative path is taken
    from the current directory) or else the config's `agent_file` (relative to the config file's
    folder). None: the default agent (every built-in tool, the default prompt).

    Call it before creating a session to refuse a bad file without leaving an empty session behind;
    each call makes fresh tools, so one result serves one core. Raises `AgentFileError`, whose
    message starts with `agent_file: ` when the file came from the config (so the user knows where
    to look)."""
    if agent_file is None and not loaded.config.agent_file:
        return None
    from .agent_file import load_agent_file, setup
    from .errors import AgentFileError

    try:
        if agent_file is not None:
            return setup(load_agent_file(agent_file))
        base = loaded.path.parent if loaded.path is not None else None
        return setup(load_agent_file(loaded.config.agent_file or "", base=base))
    except AgentFileError as exc:
        prefix = "" if agent_file is not None else "agent_file: "
        raise AgentFileError(f"{prefix}{exc}") from None


def build_root_core(
    session: Session,
    loaded: LoadedConfig,
    kaos: Kaos,
    *,
    agent_file: str | Path | None = None,
    agent: AgentSetup | None = None,
    front_end: FrontEnd = DEFAULT_FRONT_END,
    skills_dirs: Sequence[str | Path] = (),
    extra_dirs: Sequence[Path] = (),
    model_alias: str | None = None,
    thinking: bool | None = None,
    max_steps_per_turn: int | None = None,
) -> AgentCore:
    """The root core of `session`, with its hooks and the Agent tool attached.

    - `agent_file` / `agent`: the agent file (see `load_root_agent`, which runs here unless the
      caller already did and passes its result as `agent`); raises AgentFileError.
    - `skills_dirs`: `--skills-dir` (instead of the usual skill directories; the config's
      `extra_skill_dirs` are added either way).
    - `front_end`: what the front end supports and the modes it starts in (by default a front end
      that shows everything and starts in the config's modes).
    - `extra_dirs`: workspace directories of this process (ACP additionalDirectories, --add-dir).
    - `model_alias`, `thinking`, `max_steps_per_turn`: as `AgentCore` takes them.

    The hook engine is attached here for every front end; `hooks.attach` is idempotent, so a front
    end that needs the engine itself (WireServer, for the client's subscriptions) gets this one."""
    if loaded.path is not None:  # a --config-file elsewhere holds keys as config.toml does
        register_sensitive_file(loaded.path)
    if agent is None:
        agent = load_root_agent(loaded, agent_file)
    elif agent_file is not None:
        raise TypeError("pass agent_file or a loaded agent, not both")
    core = AgentCore.open(
        session=session,
        loaded_config=loaded,
        kaos=kaos,
        model_alias=model_alias,
        thinking=thinking,
        max_steps_per_turn=max_steps_per_turn,
        tools=agent.tools if agent else None,
        system_prompt=agent.system_prompt if agent else None,
        commands=[provider_for(session.work_dir, loaded.config, skills_dirs)],
        extra_dirs=extra_dirs,
        front_end=front_end,
    )
    attach_hooks(core)  # the config's [[hooks]]
    attach_subagents(core, agent.spec if agent else None)  # the Agent tool
    attach_plugins(core)  # Kimi Code CLI's installed plugins' tools
    return core
