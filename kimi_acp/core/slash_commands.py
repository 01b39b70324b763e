"""What each slash command does. Parsing and the advertised list live in `slash.py`."""

from __future__ import annotations

from typing import Protocol

from ..llm.types import ChatProvider
from ..wire.types import StatusUpdate
from .approvals import Approvals
from .compaction import CompactionHost, compact
from .prompt import build_system_prompt
from .slash import find_command
from .turn import TurnResult


class SlashHost(CompactionHost, Protocol):
    """What the commands change: the session's agent (AgentCore implements it)."""

    approvals: Approvals

    @property
    def plan_mode(self) -> bool: ...

    @property
    def max_context_size(self) -> int | None: ...

    def say(self, text: str) -> None: ...

    def set_yolo(self, on: bool, *, announce: bool = True) -> None: ...

    def set_plan_mode(self, on: bool, *, announce: bool = True) -> None: ...

    def require_provider(self) -> ChatProvider: ...

INIT_PROMPT = """\
Analyze this codebase and write (or update) an `AGENTS.md` file at the root of the working directory.
It is read by coding agents before they work here, so make it short and useful: what the project is,
how it is laid out, how to build, run and test it (exact commands), the code style and conventions it
follows, and anything surprising a newcomer must know. Explore first (read the README, build files and
a few representative sources), then write the file with WriteFile."""


async def run_slash_command(core: SlashHost, name: str, args: str) -> TurnResult | None:
    """Run `/name args`; None means the command expands into a normal prompt (e.g. /init)."""
    done = TurnResult("finished")
    command = find_command(name)
    if command is None:
        core.say(f'Unknown slash command "/{name}".')
        return done
    if command.name == "init":
        return None
    if command.name == "clear":
        core.context.rotate(build_system_prompt(core.work_dir, core.toolset.names()))
        core.say("The context has been cleared.")
        core.stream.send(
            StatusUpdate(context_usage=0.0, context_tokens=0, max_context_tokens=core.max_context_size)
        )
        return done
    if command.name == "yolo":
        core.set_yolo(not core.approvals.yolo)
        core.say(
            "YOLO mode is on: every action is approved automatically."
            if core.approvals.yolo
            else "YOLO mode is off: actions that change things will ask for approval again."
        )
        return done
    if command.name == "plan":
        arg = args.lower()
        if arg not in ("", "on", "off"):
            core.say("Usage: /plan [on|off]")
            return done
        on = (not core.plan_mode) if arg == "" else arg == "on"
        core.set_plan_mode(on)
        core.say(
            "Plan mode is on: I will investigate and propose a plan without changing files."
            if on
            else "Plan mode is off: I can change files again."
        )
        return done
    if command.name == "compact":
        provider = core.require_provider()
        if await compact(core, provider, focus=args):
            core.say("The context has been compacted.")
        else:
            core.say("The context is too short to compact.")
        tokens = core.context.token_count
        max_size = core.max_context_size
        core.stream.send(
            StatusUpdate(
                context_usage=round(tokens / max_size, 6) if max_size else None,
                context_tokens=tokens,
                max_context_tokens=max_size,
            )
        )
        return done
    core.say(f'Unknown slash command "/{name}".')
    return done
