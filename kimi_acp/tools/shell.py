"""Shell: run one command through kaos after the user approved it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pydantic import Field, model_validator

from ..kaos.base import CommandResult
from ..permissions.command_judgement import judge_command
from ..sandbox.session import Confinement, failure_note, sandbox_summary
from ..util.visible_text import code_span
from ..wire.actions import HIDE_OUTPUT_TYPE, READ_ONLY_TYPE, RUN_ACTION, RUN_BACKGROUND_ACTION
from ..wire.types import ShellDisplayBlock, ToolReturnValue, UnknownDisplayBlock
from .base import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    SECRET_IN_ARGUMENTS,
    Params,
    Tool,
    ToolContext,
    cap_output,
    tool_error,
    tool_ok,
)

logger = logging.getLogger(__name__)

MAX_BACKGROUND_TIMEOUT_S = 86_400
MAX_TIMEOUT_S = 300
BRIEF_CHARS = 120
# On the card of a command that ran without a question because it only reads.
READ_ONLY_BLOCK = UnknownDisplayBlock(type=READ_ONLY_TYPE, data={"text": "Ran without asking: it only reads."})


class ShellParams(Params):
    command: str = Field(description="The command line to run (bash syntax).")
    timeout: int = Field(
        default=60,
        ge=1,
        le=MAX_BACKGROUND_TIMEOUT_S,
        description=(
            f"Seconds before the command is killed (default 60; at most {MAX_TIMEOUT_S} in the foreground, "
            f"{MAX_BACKGROUND_TIMEOUT_S} with run_in_background)."
        ),
    )
    run_in_background: bool = Field(
        default=False,
        description="Run the command as a background task of this session and return its task id at once.",
    )
    description: str = Field(
        default="", description="A short description of what the command does (required with run_in_background)."
    )
    outside_sandbox: bool = Field(
        default=False,
        description=(
            "Only after a command failed because of the session's sandbox (its result says so): run it "
            "again outside the sandbox. The user is asked to approve; give the `reason`."
        ),
    )
    reason: str = Field(default="", description="With outside_sandbox: why the command needs to run outside the sandbox.")

    @model_validator(mode="after")
    def _check_mode(self) -> ShellParams:
        if not self.run_in_background and self.timeout > MAX_TIMEOUT_S:
            raise ValueError(f"timeout must be at most {MAX_TIMEOUT_S} seconds in the foreground")
        if self.run_in_background and not self.description.strip():
            raise ValueError("description is required when run_in_background is true")
        if self.outside_sandbox and not self.reason.strip():
            raise ValueError("reason is required when outside_sandbox is true")
        return self


class Shell(Tool[ShellParams]):
    name = "Shell"
    description = (
        "Run a command with the user's shell (bash-compatible: `<shell> -c <command>`) in the working "
        "directory. Each call is a fresh shell: `cd`, variables and other state do not carry over (chain "
        "with `&&`). stdin is closed, so interactive programs fail instead of waiting; pagers and colours "
        f"are off. stdout and stderr are merged in arrival order; the output is capped at {MAX_OUTPUT_CHARS} "
        f"characters and {MAX_LINE_CHARS} per line (`[...truncated]`). `timeout` is in seconds (default 60, "
        f"at most {MAX_TIMEOUT_S}); on timeout the command and all its child processes are killed. "
        "With `run_in_background=true` (and a `description`) the command becomes a background task of "
        "this session: the call returns its task id at once, you are told when it finishes, and TaskList, "
        "TaskOutput and TaskStop manage it; use it for servers, watchers and long builds. "
        "Commands that only read (ls, cat, grep, rg, find, git status/log/diff/show, ... on files of the "
        "workspace, as plain command lines) run at once; the user approves every other command, unless the "
        "session runs commands in a sandbox (its own choice): then they run unasked inside it, and one that "
        "failed because of it may be run again outside with `outside_sandbox` and a `reason`, which the user "
        "approves. "
        "Prefer ReadFile, Glob, Grep, WriteFile and StrReplaceFile for "
        "reading, finding and editing files; use Shell for building, testing, git and other programs."
    )
    params = ShellParams

    async def run(self, params: ShellParams, ctx: ToolContext) -> ToolReturnValue:
        command = params.command
        if not command.strip():
            return tool_error("Command cannot be empty.", brief="Empty command")
        if params.run_in_background:
            return await _run_background(params, ctx)

        approved = await _approve(ctx, params, RUN_ACTION, "Run command")
        confinement = approved.confinement
        if ctx.checkpoints is not None and not approved.only_reads:  # the workspace before the turn's first command, for /undo
            await ctx.checkpoints.before_command()
        try:
            result = await ctx.kaos.run_command(
                command,
                cwd=ctx.work_dir,
                timeout=params.timeout,
                output_limit=MAX_OUTPUT_CHARS,
                tool_call_id=ctx.tool_call_id,
                sandbox=confinement,
                extra_env=approved.extra_env,
            )
        except OSError as exc:
            logger.debug("starting %r failed", command, exc_info=True)
            return tool_error(f"Failed to start the command: {exc}.", brief="Failed to start")
        value = _to_return_value(result, params.timeout)
        if approved.read_only:
            value = value.model_copy(update={"display": [*value.display, READ_ONLY_BLOCK]})
        if confinement is not None and value.is_error:
            note = failure_note(confinement, result.output)
            if note is not None:
                value = value.model_copy(update={"message": f"{value.message} {note}"})
        return value


@dataclass(frozen=True)
class _Approved:
    """How an approved command runs: its sandbox (None: unconfined), the variables it gets, whether
    it ran unasked because it only reads (the card says so), and whether it only reads at all (then
    /undo needs no snapshot before it)."""

    confinement: Confinement | None
    extra_env: dict[str, str]
    read_only: bool
    only_reads: bool


async def _approve(ctx: ToolContext, params: ShellParams, action: str, verb: str) -> _Approved:
    """Ask as the session's sandbox and the command's reading say (permissions/command_judgement.py).

    Inside a sandbox nothing asks unless a rule does (`needed=False`); outside it (mode off, no
    sandbox on this machine, or `outside_sandbox`) a command that provably only reads runs unasked,
    anything else asks as always. Either way a command naming a credentials file (or, unconfined,
    a protected path), or holding a secret the agent knows, asks with a warning. The card says which."""
    command = params.command
    sandbox = ctx.sandbox
    outside = params.outside_sandbox and sandbox is not None and sandbox.confining
    confinement = None if sandbox is None or outside else sandbox.confinement(ctx.work_dir, ctx.additional_dirs)
    note = None
    if sandbox is not None:
        note = sandbox.card_note(outside_reason=params.reason.strip() if outside else None)
    # A command naming a credentials file or a protected path asks as ReadFile and WriteFile
    # would: always, with the warning (in a sandbox that hides and locks those files, only for a
    # file it leaves readable; Landlock hides nothing).
    guarding = confinement if confinement is not None and confinement.guards_credentials else None
    judgement = judge_command(
        command,
        ctx.work_dir,
        ctx.may_read,
        hidden=guarding.policy.hides if guarding is not None else None,
        writable=guarding.policy.writes_to if guarding is not None else None,
        git_unguarded=confinement is not None and guarding is None,
        action=action,
        environment_known=ctx.kaos.command_environment_known,
    )
    logger.debug("judged %r: read-only %s%s", command, judgement.read_only, f" ({judgement.why_asked})" if judgement.why_asked else "")
    warning = judgement.warning or (SECRET_IN_ARGUMENTS if judgement.holds_secret else None)
    permit = await ctx.approve(
        action=action,
        description=f"{verb} {code_span(command)}" + (" outside the sandbox" if outside else ""),
        display=[ShellDisplayBlock(language="bash", command=command)],
        scope=judgement.scope,
        warning=warning,
        needed=confinement is None,
        sandbox=note,
        reads_only=judgement.read_only,
    )
    return _Approved(confinement, judgement.environment, permit == "read_only", judgement.read_only)


async def _run_background(params: ShellParams, ctx: ToolContext) -> ToolReturnValue:
    """Start the command as a task of the session's table (always local: see kimi_acp/kaos/tasks.py)."""
    if ctx.tasks is None:
        return tool_error("Background tasks are not available here.", brief="Background unavailable")
    command = params.command
    approved = await _approve(ctx, params, RUN_BACKGROUND_ACTION, "Run background command")
    confinement = approved.confinement
    if ctx.checkpoints is not None and not approved.only_reads:
        await ctx.checkpoints.before_command()
    try:
        task = await ctx.tasks.launch(
            command, cwd=ctx.work_dir, description=params.description.strip(), timeout_s=params.timeout,
            sandbox=confinement, extra_env=approved.extra_env,
        )
    except (OSError, RuntimeError) as exc:
        logger.debug("starting background %r failed", command, exc_info=True)
        return tool_error(f"Failed to start the background task: {exc}.", brief="Failed to start")
    where = f" Note: {sandbox_summary(confinement)}" if confinement is not None else ""
    return tool_ok(
        task.summary() + "\n\nThe command runs in the background. You will be told when it finishes; "
        "use TaskOutput to read its output and TaskStop to stop it." + where,
        message="Background task started.",
        brief=f"Started {task.id}",
        display=[task.display_block()],
    )


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
    # No brief on success, as Kimi: its clients would show the output's last line twice.
    return tool_ok(output, message=f"Command executed successfully.{suffix}", display=display)


def _brief(output: str) -> str:
    """The last non-empty output line, shortened: a failure's one-line status in a UI."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= BRIEF_CHARS else line[: BRIEF_CHARS - 1] + "…"
    return ""
