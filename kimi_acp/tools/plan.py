"""EnterPlanMode and ExitPlanMode: the model asks to plan first, then submits the plan for approval.

Both ask the user through a `PlanQuestion` (on Wire exactly a `QuestionRequest`, as Kimi Code CLI
sends it); ExitPlanMode first shows the plan as a `PlanDisplay`. While plan mode is on, the plan
file is the only file WriteFile/StrReplaceFile may touch (`core/toolset.py` enforces it).

What each answer does (Kimi Code CLI's choices):

- Enter: `Yes` turns plan mode on; `No` leaves it off; no answer: the model is told to stop.
- Exit: `Approve` (or one of the plan's own options) turns plan mode off and hands the plan back to
  the model to carry out; `Reject` keeps plan mode and ends the turn; `Reject and Exit` turns plan
  mode off and ends the turn; any other text is feedback: plan mode stays and the model revises.

A front end that cannot serve plan mode (a Wire client without `supports_plan_mode`: its
`FrontEnd.plan_mode` is False) gets the tools left out of the model's list; a call made anyway is a
tool error.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..kaos.base import BinaryFileError
from ..llm.types import ToolSpec
from ..wire.types import (
    PlanDisplay,
    PlanQuestion,
    QuestionItem,
    QuestionNotSupported,
    QuestionOption,
    QuestionResponse,
    ToolReturnValue,
)
from .base import Params, PlanHost, Tool, ToolContext, ToolEnv, ToolRejectedError, tool_error, tool_ok

log = logging.getLogger(__name__)

ENTER = "EnterPlanMode"
EXIT = "ExitPlanMode"
PLAN_TOOLS = frozenset({ENTER, EXIT})

YES, NO = "Yes", "No"
APPROVE, REJECT, REJECT_AND_EXIT, REVISE = "Approve", "Reject", "Reject and Exit", "Revise"
RESERVED_LABELS = frozenset(label.lower() for label in (APPROVE, REJECT, REJECT_AND_EXIT, REVISE))
ENTER_QUESTION = "Enter plan mode?"
EXIT_QUESTION = "Approve this plan"

UNSUPPORTED_MESSAGE = "The connected client does not support plan mode. Do NOT call this tool again."
REJECTED_MESSAGE = (
    "Plan rejected by user. Stay in plan mode. The user will provide feedback via conversation. "
    "Wait for the user's next message before revising."
)
REJECTED_AND_EXITED_MESSAGE = (
    "Plan rejected by user. Plan mode deactivated. All tools are now available. Wait for the user's next message."
)


class EnterPlanModeParams(Params):
    pass


class PlanOption(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    label: str = Field(description="Short name of this approach (1-8 words). Append '(Recommended)' to the one you recommend.")
    description: str = Field(default="", description="A brief summary of this approach and its trade-offs.")

    @field_validator("label")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.strip().lower() in RESERVED_LABELS:
            raise ValueError(f"option label {value!r} is reserved: do not use Approve, Reject, Reject and Exit or Revise")
        if not value.strip():
            raise ValueError("option labels must not be empty")
        return value


class ExitPlanModeParams(Params):
    options: list[PlanOption] | None = Field(
        default=None,
        max_length=3,
        description=(
            "Only when the plan contains alternative approaches: list them (2-3) so the user picks the one to "
            "carry out. Each option is one distinct approach of the plan. Do not use 'Approve', 'Reject', "
            "'Reject and Exit' or 'Revise' as labels."
        ),
    )

    @field_validator("options")
    @classmethod
    def _unique(cls, value: list[PlanOption] | None) -> list[PlanOption] | None:
        if value is not None and len({o.label for o in value}) != len(value):
            raise ValueError("option labels must be unique")
        return value


ENTER_DESCRIPTION = (
    "Ask the user to switch to plan mode before a non-trivial implementation task: one with several "
    "reasonable approaches, unclear requirements, or changes across many files, where agreeing on the "
    "approach first avoids rework. In plan mode you explore the codebase with read-only tools, write your "
    "plan to a plan file, and then call ExitPlanMode for the user's approval; no other file can be changed "
    "until then.\n"
    "Do not use it for simple or clearly specified tasks, for research questions, or when the user asked "
    "you to just go ahead. The user may decline: then ask them how to proceed."
)
EXIT_DESCRIPTION = (
    "Use this tool when you are in plan mode, have written your plan to the plan file, and are ready for "
    "the user's approval.\n\n"
    "## How this tool works\n"
    "- Write the plan to the plan file named in the plan mode reminder first.\n"
    "- This tool does NOT take the plan as a parameter: it reads the plan file, and the user sees its "
    "content when they review it.\n\n"
    "## When to use it\n"
    "Only for tasks that need an implementation plan. For research tasks (searching, reading, "
    "understanding code) do NOT use it.\n\n"
    "## Multiple approaches\n"
    "If the plan contains alternative approaches, pass them as `options` (a concise label and a short "
    "description of the trade-offs each; append \"(Recommended)\" to the label you recommend). The user "
    "then chooses the approach to carry out, or rejects or revises the plan.\n\n"
    "## Before using it\n"
    "- Settle open questions with AskUserQuestion first; narrow down approaches before writing the plan "
    "when you can.\n"
    "- Do NOT ask \"Is this plan OK?\" or \"Should I proceed?\" with AskUserQuestion or in text: that is "
    "what this tool does.\n"
    "- If the plan is rejected, revise it from the feedback and call ExitPlanMode again."
)


class _PlanTool:
    """What both plan tools share: whether the front end serves them, and reading the answer."""

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """Offered only to a front end that serves plan mode (it stays callable: a call is an error)."""
        return self.spec() if env.front_end.plan_mode else None  # type: ignore[attr-defined]

    def _unavailable(self, ctx: ToolContext) -> ToolReturnValue | None:
        if not ctx.env.front_end.plan_mode:
            return tool_error(UNSUPPORTED_MESSAGE, brief="Client unsupported")
        if ctx.plan is None:
            return tool_error("Plan mode is not available in this session.", brief="Not available")
        if ctx.send_request is None:
            return tool_error("Cannot ask the user: no client is connected to answer.", brief="No client")
        return None

    @staticmethod
    async def _ask(ctx: ToolContext, request: PlanQuestion) -> dict[str, str] | ToolReturnValue:
        """The answers by question text ({} for a dismissal), or the tool error to return."""
        assert ctx.send_request is not None
        try:
            answer = await ctx.send_request(request)
        except Exception:
            log.exception("asking the plan question failed")
            return tool_error("Failed to get the user's response.", brief="Question failed")
        if isinstance(answer, QuestionNotSupported):
            return tool_error(UNSUPPORTED_MESSAGE, brief="Client unsupported")
        if isinstance(answer, BaseException):
            log.warning("the plan question was answered with an error: %s", answer)
            return {}
        if not isinstance(answer, QuestionResponse):
            return {}  # None: the turn ended before an answer came
        found: dict[str, str] = {}
        for key, value in answer.answers.items():
            text = ", ".join(value) if isinstance(value, list) else value
            found[key] = text
        return found


class EnterPlanMode(_PlanTool, Tool[EnterPlanModeParams]):
    name = ENTER
    description = ENTER_DESCRIPTION
    params = EnterPlanModeParams

    async def run(self, params: EnterPlanModeParams, ctx: ToolContext) -> ToolReturnValue:
        problem = self._unavailable(ctx)
        if problem is not None:
            return problem
        host = ctx.plan
        assert host is not None
        if host.plan_mode:
            return tool_error(
                "Already in plan mode. Use ExitPlanMode when your plan is ready.", brief="Already in plan mode"
            )
        if host.approvals.yolo:  # yolo approves everything, this too (as Kimi Code CLI does)
            return _entered(host, auto=True)
        request = PlanQuestion(
            id=str(uuid.uuid4()),
            tool_call_id=ctx.tool_call_id,
            questions=[
                QuestionItem(
                    question=ENTER_QUESTION,
                    header="Plan Mode",
                    options=[
                        QuestionOption(label=YES, description="Enter plan mode to explore and design an approach"),
                        QuestionOption(label=NO, description="Skip planning, start implementing now", declines="once"),
                    ],
                )
            ],
        )
        answers = await self._ask(ctx, request)
        if isinstance(answers, ToolReturnValue):
            return answers
        if not answers:
            return tool_error(
                "Dismissed",
                output=(
                    "User dismissed the plan mode prompt without choosing. Do NOT proceed with implementation. "
                    "Stop and wait for the user's next message."
                ),
                brief="Dismissed",
            )
        if any(v == YES for v in answers.values()):
            return _entered(host, auto=False)
        return tool_ok(
            "User declined to enter plan mode. Check with the user whether to proceed with the implementation directly.",
            message="Declined",
            brief="Declined",
        )


def _entered(host: PlanHost, *, auto: bool) -> ToolReturnValue:
    host.set_plan_mode(True)
    path = host.plan_file_path()
    how = " (approved automatically: yolo mode)" if auto else ""
    return tool_ok(
        f"Plan mode activated{how}. You MUST NOT edit code files — only read and plan.\n"
        f"Plan file: {path}\n"
        "Workflow: explore with Glob/Grep/ReadFile → design the approach → write the plan to the plan file with "
        "WriteFile → call ExitPlanMode.\n"
        "Do NOT use AskUserQuestion to ask about plan approval.",
        message="Plan mode on",
        brief="Plan mode on",
    )


class ExitPlanMode(_PlanTool, Tool[ExitPlanModeParams]):
    name = EXIT
    description = EXIT_DESCRIPTION
    params = ExitPlanModeParams

    async def run(self, params: ExitPlanModeParams, ctx: ToolContext) -> ToolReturnValue:
        problem = self._unavailable(ctx)
        if problem is not None:
            return problem
        host = ctx.plan
        assert host is not None
        if not host.plan_mode:
            return tool_error(
                "Not in plan mode. ExitPlanMode is only available during plan mode.", brief="Not in plan mode"
            )
        path = host.plan_file_path()
        content = await _read_plan(ctx, path)
        if not content or not content.strip():
            return tool_error(
                f"No plan file found. Write your plan to {path} first, then call ExitPlanMode.", brief="No plan file"
            )
        approaches = list(params.options) if params.options and len(params.options) >= 2 else []
        choices = (
            [QuestionOption(label=o.label, description=o.description) for o in approaches]
            if approaches
            else [QuestionOption(label=APPROVE, description="Exit plan mode and start execution")]
        )
        choices += [
            QuestionOption(label=REJECT, description="Reject and stay in plan mode", declines="once"),
            QuestionOption(label=REJECT_AND_EXIT, description="Reject and exit plan mode", declines="always"),
        ]
        host.stream.send(PlanDisplay(content=content, file_path=str(path)))
        request = PlanQuestion(
            id=str(uuid.uuid4()),
            tool_call_id=ctx.tool_call_id,
            questions=[
                QuestionItem(
                    question=EXIT_QUESTION,
                    header="Plan",
                    body=content,  # shown with the question, as Kimi Code CLI does (ACP: the permission card)
                    options=choices,
                    other_label=REVISE,
                    other_description="Stay in plan mode and provide feedback",
                )
            ],
        )
        answers = await self._ask(ctx, request)
        if isinstance(answers, ToolReturnValue):
            return answers
        if not answers:
            return tool_ok(
                "User dismissed without choosing. Plan mode remains active. Continue working on your plan or call "
                "ExitPlanMode again when ready.",
                message="Dismissed",
                brief="Dismissed",
            )
        values = list(answers.values())
        if REJECT_AND_EXIT in values:
            host.set_plan_mode(False)
            raise ToolRejectedError(
                result=tool_error(REJECTED_AND_EXITED_MESSAGE, brief="Plan rejected, exited plan mode")
            )
        if REJECT in values:
            raise ToolRejectedError(result=tool_error(REJECTED_MESSAGE, brief="Plan rejected"))
        labels = {o.label for o in approaches}
        chosen = next((v for v in values if v in labels), None)
        if chosen is not None:
            host.set_plan_mode(False)
            return tool_ok(
                f'Plan approved by user. Selected approach: "{chosen}"\n'
                "Plan mode deactivated. All tools are now available.\n"
                f"Plan saved to: {path}\n\n"
                f'IMPORTANT: Execute ONLY the selected approach "{chosen}". Ignore the other approaches in the plan.\n\n'
                f"## Approved Plan:\n{content}",
                message=f"Plan approved: {chosen}",
                brief=f"Plan approved: {chosen}",
            )
        if not approaches and APPROVE in values:
            host.set_plan_mode(False)
            return tool_ok(
                "Plan approved by user. Plan mode deactivated. All tools are now available.\n"
                f"Plan saved to: {path}\n\n"
                f"## Approved Plan:\n{content}",
                message="Plan approved",
                brief="Plan approved",
            )
        feedback = next((v for v in reversed(values) if v.strip() and v not in (APPROVE, REVISE)), "")
        if feedback:
            output = (
                "User wants to revise the plan. Stay in plan mode. Revise based on the feedback below.\n\n"
                f"User feedback: {feedback}"
            )
        else:
            output = (
                "User wants to revise the plan. Stay in plan mode. Wait for the user's next message with feedback "
                "before revising."
            )
        return tool_ok(output, message="Plan revision requested", brief="Plan revision requested")


async def _read_plan(ctx: ToolContext, path: Path) -> str | None:
    """The plan as the kaos sees it (an editor's unsaved buffer included)."""
    try:
        return await ctx.kaos.read_text(path)
    except (FileNotFoundError, IsADirectoryError):
        return None
    except (BinaryFileError, OSError, UnicodeDecodeError) as exc:
        log.warning("cannot read the plan file %s: %s", path, exc)
        return None
