"""What each tool is, said once: its kind, the arguments a card names, whether it may ask, how its
output reads.

The core reads `asks` (when a call starts: core/toolset.py sends `ToolStarted`); the front ends
read the rest (frontends/acp/convert.py: a card's kind, title, locations and content). The table
names the tools without importing them: a session's built-ins stay deferred (tools/__init__.py),
so nothing here may import a tool module (tests/core/test_tool_facts.py checks it, and that every
built-in has its row). A tool the table does not know (MCP, plugins, a Wire client's) gets
`ToolFacts()`: kind `other`, no argument named, may ask, plain text output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the kinds, for readers and type checkers (made at run time they cost start-up time)
    from typing import Literal

    # ACP's tool kinds: the icon a client shows (and what some auto-approve: permission_gist.py).
    ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
    # How a result reads on a card:
    #   text      its output as text (the default)
    #   verbatim  its output in a fence, exactly what the model got (Shell)
    #   lines     a file's numbered lines (ReadFile): verbatim, with the message saying which lines,
    #             and the card's location at the first line read
    #   media     images and video (ReadMediaFile): its text parts only tag them for the model
    #   message   the message only: the output is written for the model (the plan tools)
    #   log       a background task's state, then its log verbatim (TaskOutput)
    OutputKind = Literal["text", "verbatim", "lines", "media", "message", "log"]
    # The background task a call may start, whose card then shows it: a command (its output may
    # show on a terminal of the card) or a subagent.
    TaskKind = Literal["command", "agent"]


class ToolFacts(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~0.7 ms more at start-up
    kind: ToolKind = "other"
    subject: str | None = None  # the argument a card's title shows: "Shell: make"
    path: str | None = None  # the argument naming the file or directory it works on: the card's location
    # Whether a call may ask the user's approval (it then starts once approved, or once it knows it
    # need not ask); False: it starts as soon as it runs.
    asks: bool = True
    output: OutputKind = "text"
    task: TaskKind | None = None


UNKNOWN_TOOL = ToolFacts()

# Every built-in tool (tools/__init__.py BUILTIN_TOOLS), in the same order.
TOOL_FACTS: dict[str, ToolFacts] = {
    "Agent": ToolFacts("think", subject="description", asks=False, task="agent"),  # as claude-agent-acp shows its Task tool
    "AskUserQuestion": ToolFacts(asks=False),
    "SetTodoList": ToolFacts("think", asks=False),
    "Shell": ToolFacts("execute", subject="command", output="verbatim", task="command"),
    "TaskList": ToolFacts(asks=False),
    "TaskOutput": ToolFacts(subject="task_id", asks=False, output="log"),
    "TaskStop": ToolFacts(subject="task_id"),
    "ReadFile": ToolFacts("read", subject="path", path="path", output="lines"),
    "ReadMediaFile": ToolFacts("read", subject="path", path="path", output="media"),
    "Glob": ToolFacts("search", subject="pattern", path="directory"),
    "Grep": ToolFacts("search", subject="pattern", path="path"),
    "WriteFile": ToolFacts("edit", subject="path", path="path"),
    "StrReplaceFile": ToolFacts("edit", subject="path", path="path"),
    "SearchWeb": ToolFacts("fetch", subject="query"),
    "FetchURL": ToolFacts("fetch", subject="url"),
    "ExitPlanMode": ToolFacts("switch_mode", asks=False, output="message"),
    "EnterPlanMode": ToolFacts("switch_mode", asks=False, output="message"),
}


def tool_facts(name: str) -> ToolFacts:
    """The facts of the tool called `name`; a tool not built in gets the defaults."""
    return TOOL_FACTS.get(name, UNKNOWN_TOOL)
