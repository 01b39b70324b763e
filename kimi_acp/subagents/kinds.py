"""The subagent types a root agent can launch: Kimi's built-in three, or an agent file's own.

A type is an agent spec (tools, prompt) plus the line the model reads in the Agent tool's
description. The built-ins have Kimi's names and tool sets: `coder` (shell, files, web),
`explore` (read-only plus shell), `plan` (read-only, no shell). None of them has Agent (root only),
AskUserQuestion, SetTodoList or the plan-mode tools: a subagent reports to its caller, not to the user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..tools.subagent import SubagentTypeInfo

if TYPE_CHECKING:
    from ..agent_file import AgentSpec

READ_ONLY = ("ReadFile", "ReadMediaFile", "Glob", "Grep", "SearchWeb", "FetchURL")
CALLER_NOTE = (
    "You are a subagent: every user message comes from the main agent that launched you, which sees "
    "nothing of your work but your last message. Do the task, then end with a message that reports what "
    "you found or did, completely enough for the main agent to act on it without redoing your work. "
    "You cannot ask the user anything; if something is ambiguous, say so in your report."
)


@dataclass(frozen=True)
class SubagentKind:
    """A type the Agent tool offers. A built-in one makes its agent spec only when it first runs
    (agent_file.py is not needed to list it: `kimi acp` attaches the tool on its start-up path)."""

    name: str
    description: str
    tools: tuple[str, ...] | None = None  # a built-in's tools
    role: str = ""  # a built-in's ROLE_ADDITIONAL
    file_spec: Any = None  # an agent file's subagent: its AgentSpec

    def spec(self) -> AgentSpec:
        if self.file_spec is not None:
            return self.file_spec  # type: ignore[no-any-return]
        from ..agent_file import AgentSpec

        return AgentSpec(name=self.name, tools=self.tools, system_prompt_args={"ROLE_ADDITIONAL": self.role})

    def info(self, available: list[str]) -> SubagentTypeInfo:
        if self.file_spec is not None:
            names = tuple(self.file_spec.tool_names(available))
        else:
            names = tuple(n for n in self.tools or () if n in available)
        return SubagentTypeInfo(self.name, self.description, names)


def _builtin(name: str, description: str, tools: tuple[str, ...], role: str = "") -> SubagentKind:
    return SubagentKind(name, description, tools, CALLER_NOTE + ("\n\n" + role if role else ""))


BUILTIN_KINDS: dict[str, SubagentKind] = {
    kind.name: kind
    for kind in (
        _builtin(
            "coder",
            "general software engineering that needs reading, editing and running code; returns a "
            "compact but technically complete summary",
            ("Shell", *READ_ONLY[:4], "WriteFile", "StrReplaceFile", *READ_ONLY[4:]),
        ),
        _builtin(
            "explore",
            "fast read-only exploration of a codebase: finding files, searching code, answering "
            "questions about how something works. Say how thorough it should be (quick, medium, "
            "thorough); launch several at once for independent questions",
            ("Shell", *READ_ONLY),
            "You explore and never change anything: use Glob, Grep and ReadFile, and Shell only for "
            "read-only commands (ls, git log, git diff, find). Run independent searches in parallel and "
            "report your findings in a clear structure.",
        ),
        _builtin(
            "plan",
            "an implementation plan before code changes: the steps, the key files and the trade-offs",
            READ_ONLY,
            "You design, you do not implement. State what you know, which questions remain open (an "
            "`explore` agent could answer them), and the step-by-step plan.",
        ),
    )
}


def kinds_for(spec: AgentSpec | None) -> dict[str, SubagentKind]:
    """An agent file's `subagents`, if it has any; otherwise the built-in types."""
    if spec is None or not spec.subagents:
        return dict(BUILTIN_KINDS)
    return {name: SubagentKind(name, sub.description, file_spec=sub.spec) for name, sub in spec.subagents.items()}
