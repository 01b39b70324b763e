"""Shell: run one command through kaos after the user approved it."""

from __future__ import annotations

import logging

from pydantic import Field

from ..kaos.base import CommandResult
from ..wire.types import ShellDisplayBlock, ToolReturnValue, UnknownDisplayBlock
from .base import MAX_LINE_CHARS, MAX_OUTPUT_CHARS, Params, Tool, ToolContext, cap_output, tool_error, tool_ok

logger = logging.getLogger(__name__)

RUN_ACTION = "run command"
MAX_TIMEOUT_S = 300
BRIEF_CHARS = 120
HIDE_OUTPUT_TYPE = "acp/hide_output"


class ShellParams(Params):
    command: str = Field(description="The command line to run (bash syntax).")
    timeout: int = Field(
        default=60,
        ge=1,
        le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is killed (1-{MAX_TIMEOUT_S}, default 60).",
    )
    run_in_background: bool = Field(
        default=False,
        description="Not supported in this version: must be false; commands run in the foreground.",
    )
    description: str = Field(default="", description="A short description of what the command does.")


class Shell(Tool[ShellParams]):
    name = "Shell"
    description = (
        "Run a command with the user's shell (bash-compatible: `<shell> -c <command>`) in the working "
        "directory. Each call is a fresh shell: `cd`, variables and other state do not carry over (chain "
        "with `&&`). stdin is closed, so interactive programs fail instead of waiting; pagers and colours "
        f"are off. stdout and stderr are merged in arrival order; the output is capped at {MAX_OUTPUT_CHARS} "
        f"characters and {MAX_LINE_CHARS} per line (`[...truncated]`). `timeout` is in seconds (default 60, "
        f"at most {MAX_TIMEOUT_S}); on timeout the command and all its child processes are killed. "
        "Background execution (`run_in_background`) is not supported: do not start servers or watchers "
        "that never exit. "
        "The user approves each command. Prefer ReadFile, Glob, Grep, WriteFile and StrReplaceFile for "
        "reading, finding and editing files; use Shell for building, testing, git and other programs."
    )
    params = ShellParams

    async def run(self, params: ShellParams, ctx: ToolContext) -> ToolReturnValue:
        if params.run_in_background:
            return tool_error(
                "Running commands in the background is not supported. Run the command in the foreground "
                f"(run_in_background=false) with a timeout of at most {MAX_TIMEOUT_S} seconds, or make it "
                "finish on its own.",
                brief="Background not supported",
            )
        command = params.command
        if not command.strip():
            return tool_error("Command cannot be empty.", brief="Empty command")

        await ctx.approve(
            action=RUN_ACTION,
            description=f"Run command `{command}`",
            display=[ShellDisplayBlock(language="bash", command=command)],
        )
        try:
            result = await ctx.kaos.run_command(
                command,
                cwd=ctx.work_dir,
                timeout=params.timeout,
                output_limit=MAX_OUTPUT_CHARS,
                tool_call_id=ctx.tool_call_id,
            )
        except OSError as exc:
            logger.debug("starting %r failed", command, exc_info=True)
            return tool_error(f"Failed to start the command: {exc}.", brief="Failed to start")
        return _to_return_value(result, params.timeout)


def _to_return_value(result: CommandResult, timeout: int) -> ToolReturnValue:
    output, cut = cap_output(result.output)
    brief = _brief(output)
    display = [UnknownDisplayBlock(type=HIDE_OUTPUT_TYPE)] if result.terminal_id else []
    suffix = " Output was truncated." if (cut or result.truncated) else ""
    if result.timed_out:
        return tool_error(
            # Kimi's exact wording (no period) unless a note follows.
            f"Command killed by timeout ({timeout}s)" + (f".{suffix}" if suffix else ""),
            output=output,
            brief=brief,
            display=display,
        )
    if result.signal:
        return tool_error(
            f"Command terminated by signal: {result.signal}.{suffix}",
            output=output,
            brief=brief,
            display=display,
        )
    if result.exit_code != 0:
        return tool_error(
            f"Command failed with exit code: {result.exit_code}.{suffix}",
            output=output,
            brief=brief,
            display=display,
        )
    return tool_ok(output, message=f"Command executed successfully.{suffix}", brief=brief, display=display)


def _brief(output: str) -> str:
    """The last non-empty output line, shortened: enough for a one-line status in a UI."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= BRIEF_CHARS else line[: BRIEF_CHARS - 1] + "…"
    return ""
