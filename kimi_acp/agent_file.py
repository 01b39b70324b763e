"""Agent files: Kimi Code CLI's YAML agent specs, which choose a session's tools and system prompt.

    version: 1
    agent:
      extend: default              # or a path to another agent file, relative to this one
      name: reviewer
      system_prompt_path: ./system.md
      system_prompt_args: {ROLE_ADDITIONAL: "You review code; you never edit it."}
      tools: ["kimi_cli.tools.shell:Shell", "kimi_cli.tools.file:ReadFile"]
      exclude_tools: ["kimi_cli.tools.shell:Shell"]
      subagents:
        coder: {path: ./coder.yaml, description: "Good at general software engineering tasks."}

A key left out is inherited from the agent it extends; `system_prompt_args` are merged key by key.
`default` is this package's default agent: every built-in tool and its own prompt (which honours
`ROLE_ADDITIONAL`). Tools are named as in Kimi (`module:Class`; only the class name counts, so
`kimi_cli.tools.file:ReadFile`, `kimi_acp.tools.read:ReadFile` and `ReadFile` are the same tool).
A tool Kimi has and this package does not (SearchWeb, Think, …) is skipped with a log line; any
other unknown name is an error. A tool that is not selected is simply absent: a call to it gets
"Tool `X` not found".

A prompt file is a template: `${KIMI_NOW}`, `${KIMI_WORK_DIR}`, `${KIMI_WORK_DIR_LS}`,
`${KIMI_AGENTS_MD}`, `${KIMI_SKILLS}`, `${KIMI_ADDITIONAL_DIRS_INFO}` and the agent's own
`system_prompt_args` are replaced; any other `$name` is left as written (Kimi would fail on it).
`subagents` are the types the Agent tool offers (kimi_acp/subagents/); without any, Kimi's
built-in coder, explore and plan.
"""

from __future__ import annotations

import datetime
import logging
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.prompt import (
    PromptBuilder,
    PromptInputs,
    default_prompt,
    format_skills,
    read_agents_md,
    work_dir_listing,
)
from .errors import AgentFileError
from .util.yaml_text import YamlTextError, load_yaml

if TYPE_CHECKING:
    from .tools import DeferredTool
    from .tools.base import Tool

    AnyTool = Tool[Any] | DeferredTool

log = logging.getLogger(__name__)

DEFAULT = "default"
SUPPORTED_VERSIONS = ("1",)
# Tools of Kimi Code CLI's agents that this package does not have (yet): skipped, not an error.
REFERENCE_ONLY_TOOLS = frozenset(
    {
        "Task", "CreateSubagent", "SearchWeb", "Think", "SendDMail", "ArchiveSearch",
    }
)  # fmt: skip
_KEYS = ("extend", "name", "system_prompt_path", "system_prompt_args", "tools", "exclude_tools", "subagents")


@dataclass(frozen=True)
class Subagent:
    name: str
    path: Path
    description: str
    spec: AgentSpec


@dataclass(frozen=True)
class AgentSpec:
    """An agent file with everything it extends resolved."""

    name: str = ""
    file: Path | None = None
    system_prompt_path: Path | None = None  # None: this package's own prompt
    system_prompt_text: str | None = None  # the template, read when the file was loaded
    system_prompt_args: dict[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] | None = None  # tool names in order; None: every built-in tool
    exclude_tools: tuple[str, ...] = ()
    subagents: dict[str, Subagent] = field(default_factory=dict)

    def tool_names(self, available: list[str]) -> list[str]:
        """The names this agent uses, out of `available` (in the agent file's order)."""
        chosen = list(available) if self.tools is None else [n for n in self.tools if n in available]
        return [n for n in chosen if n not in self.exclude_tools]

    def select_tools(self, tools: Sequence[AnyTool]) -> list[AnyTool]:
        by_name = {t.name: t for t in tools}
        return [by_name[n] for n in self.tool_names(list(by_name))]

    def prompt_builder(self) -> PromptBuilder:
        args = dict(self.system_prompt_args)
        template = self.system_prompt_text
        if template is None:
            role = args.get("ROLE_ADDITIONAL", "")

            def default(inputs: PromptInputs) -> str:
                return default_prompt(inputs, role_additional=role)

            return default

        def from_template(inputs: PromptInputs) -> str:
            values = {**builtin_args(inputs), **args}
            return string.Template(template).safe_substitute(values)

        return from_template


DEFAULT_AGENT = AgentSpec(system_prompt_args={"ROLE_ADDITIONAL": ""})


def builtin_args(inputs: PromptInputs) -> dict[str, str]:
    """Kimi's built-in prompt variables, from what the core knows when it builds the prompt."""
    now = inputs.now or datetime.datetime.now().astimezone()
    dirs = "\n".join(f"- {d}" for d in inputs.additional_dirs)
    return {
        "KIMI_NOW": now.isoformat(),
        "KIMI_WORK_DIR": str(inputs.work_dir),
        "KIMI_WORK_DIR_LS": work_dir_listing(inputs.work_dir),
        "KIMI_AGENTS_MD": read_agents_md(inputs.work_dir),
        "KIMI_SKILLS": format_skills(inputs.skills),
        "KIMI_ADDITIONAL_DIRS_INFO": f"Additional directories in the workspace:\n{dirs}" if dirs else "",
    }


# --------------------------------------------------------------------------- loading


def load_agent_file(path: str | Path, *, base: Path | None = None) -> AgentSpec:
    """Read and resolve an agent file (`~` expanded; a relative path is taken from `base`, else cwd)."""
    file = Path(path).expanduser()
    if not file.is_absolute():
        file = (base or Path.cwd()) / file
    return _load(file.absolute(), ())


def _load(file: Path, stack: tuple[Path, ...]) -> AgentSpec:
    if file in stack:
        chain = " -> ".join(str(p) for p in (*stack, file))
        raise AgentFileError(f"agent file {file}: it extends itself ({chain})")
    data = _read_yaml(file)
    where = f"agent file {file}"
    version = str(data.get("version", "1"))
    if version not in SUPPORTED_VERSIONS:
        raise AgentFileError(f"{where}: unsupported version {version!r} (supported: 1)")
    agent = data.get("agent", {})
    if not isinstance(agent, dict):
        raise AgentFileError(f"{where}: `agent` must be a mapping of keys")
    unknown = sorted(set(agent) - set(_KEYS))
    if unknown:
        log.info("%s: ignoring keys %s", where, ", ".join(unknown))  # Kimi has more (when_to_use, …)

    extend = agent.get("extend")
    if extend is None:
        base = AgentSpec()
    elif extend == DEFAULT:
        base = DEFAULT_AGENT
    elif isinstance(extend, str) and extend.strip():
        base = _load((file.parent / Path(extend).expanduser()).absolute(), (*stack, file))
    else:
        raise AgentFileError(f"{where}: `extend` must be `default` or a path to an agent file")

    spec = base
    if "name" in agent:
        spec = _replace(spec, name=_string(agent["name"], where, "name", allow_empty=True))
    if "system_prompt_path" in agent:
        raw = _string(agent["system_prompt_path"], where, "system_prompt_path")
        prompt_path = (file.parent / Path(raw).expanduser()).absolute()
        try:
            text = prompt_path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise AgentFileError(f"{where}: system_prompt_path {prompt_path} cannot be read: {reason}") from None
        spec = _replace(spec, system_prompt_path=prompt_path, system_prompt_text=text)
    if "system_prompt_args" in agent:
        args = agent["system_prompt_args"] or {}
        if not isinstance(args, dict):
            raise AgentFileError(f"{where}: `system_prompt_args` must be a mapping of names to strings")
        merged = dict(spec.system_prompt_args)
        merged.update({str(k): "" if v is None else str(v) for k, v in args.items()})
        spec = _replace(spec, system_prompt_args=merged)
    if "tools" in agent:
        spec = _replace(spec, tools=_tools(agent["tools"], where, "tools"))
    if "exclude_tools" in agent:
        spec = _replace(spec, exclude_tools=_tools(agent["exclude_tools"], where, "exclude_tools") or ())
    if "subagents" in agent:
        spec = _replace(spec, subagents=_subagents(agent["subagents"], file, (*stack, file), where))
    return _replace(spec, file=file)


def _read_yaml(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentFileError(f"agent file {file} does not exist") from None
    except IsADirectoryError:
        raise AgentFileError(f"agent file {file} is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentFileError(f"agent file {file} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = load_yaml(text)
    except YamlTextError as exc:
        where = f" at line {exc.line}" if exc.line is not None else ""
        raise AgentFileError(f"agent file {file}: invalid YAML{where}: {exc.problem}") from None
    if not isinstance(data, dict):
        raise AgentFileError(f"agent file {file}: expected YAML keys (version, agent), not {type(data).__name__}")
    return data


def _string(value: Any, where: str, key: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise AgentFileError(f"{where}: `{key}` must be a {'string' if allow_empty else 'non-empty string'}")
    return value


def tool_name(spec: str) -> str:
    """`kimi_cli.tools.shell:Shell` -> `Shell` (Kimi's import paths map to our tools by class name)."""
    return spec.rpartition(":")[2].strip() if ":" in spec else spec.rpartition(".")[2].strip()


def _tools(value: Any, where: str, key: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise AgentFileError(f"{where}: `{key}` must be a list of tool names (e.g. kimi_cli.tools.shell:Shell)")
    return tuple(tool_name(v) for v in value)


def _subagents(value: Any, file: Path, stack: tuple[Path, ...], where: str) -> dict[str, Subagent]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AgentFileError(f"{where}: `subagents` must map names to {{path, description}}")
    found = {}
    for name, entry in value.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise AgentFileError(f"{where}: subagent {name!r} needs a `path` (and a `description`)")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise AgentFileError(f"{where}: subagent {name!r}: `description` must be a string")
        path = (file.parent / Path(entry["path"]).expanduser()).absolute()
        found[str(name)] = Subagent(str(name), path, description, _load(path, stack))
    return found


def _replace(spec: AgentSpec, **changes: Any) -> AgentSpec:
    import dataclasses

    return dataclasses.replace(spec, **changes)


# --------------------------------------------------------------------------- for the front ends


@dataclass(frozen=True)
class AgentSetup:
    """What a front end passes to `AgentCore`: the tools and the prompt builder."""

    tools: list[AnyTool]  # built-ins come deferred: created when the session first needs them
    system_prompt: PromptBuilder
    spec: AgentSpec


def setup(spec: AgentSpec, make_tools: Callable[[], Sequence[AnyTool]] | None = None) -> AgentSetup:
    """The session's tools (built-ins filtered by the agent file) and its prompt builder.

    Unknown tool names are an AgentFileError, tools Kimi has and we do not are skipped (logged)."""
    if make_tools is None:
        from .tools import deferred_builtin_tools

        make_tools = deferred_builtin_tools
    tools = make_tools()
    available = {t.name for t in tools}
    where = f"agent file {spec.file}" if spec.file else "agent"
    for key, names in (("tools", spec.tools or ()), ("exclude_tools", spec.exclude_tools)):
        for name in names:
            if name in available:
                continue
            if name in REFERENCE_ONLY_TOOLS:
                log.info("%s: %s %s is not available in kimi-acp; skipped", where, key, name)
                continue
            known = ", ".join(sorted(available))
            raise AgentFileError(f"{where}: `{key}` names an unknown tool {name!r} (known: {known})")
    return AgentSetup(spec.select_tools(tools), spec.prompt_builder(), spec)
