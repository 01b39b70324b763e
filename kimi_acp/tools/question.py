"""AskUserQuestion: the model asks the user 1-4 multiple-choice questions and waits for the answers.

The tool only builds a `QuestionRequest`; whoever drives the session shows it and answers (a Wire
client, an ACP form or permission prompt, a Python callback). What that front end can show is
its `FrontEnd.questions` (kimi_acp/front_end.py), read from the call's context and, for the list
of tools the model is offered, from the session's `ToolEnv`:

- `full`: any 1-4 questions, single- or multi-select (Wire with `supports_question`, ACP with
  form elicitation, the Python API);
- `single_choice`: one single-select question (an ACP client without forms: a permission prompt);
  the model is offered a spec that says so, and a call asking more is refused before it is sent;
- `none`: the tool is left out of the model's tools but stays callable, and a call is told not to
  try again (a Wire client without `supports_question`).

Answers reach the model as JSON, `{"answers": {question: label}}` (a list of labels for a
multi-select question); a dismissal, an error answer or the end of the turn as
`{"answers": {}, "note": ...}`. Never an exception.
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from typing import Any

from pydantic import Field, ValidationError

from ..llm.types import ToolSpec
from ..wire.types import (
    QuestionItem,
    QuestionNotSupported,
    QuestionOption,
    QuestionRequest,
    QuestionResponse,
    ToolReturnValue,
)
from .base import Params, Tool, ToolContext, ToolEnv, tool_error, tool_ok

log = logging.getLogger(__name__)

NAME = "AskUserQuestion"
Answers = dict[str, str | list[str]]  # question text -> a label, or the labels of a multi-select one

# The reference's wording, so models tuned on it read it the same way.
UNSUPPORTED_MESSAGE = (
    "The connected client does not support interactive questions. Do NOT call this tool again. "
    "Ask the user directly in your text response instead."
)
DISMISSED_NOTE = "User dismissed the question without answering."
UNIQUE_MESSAGE = (
    "Question texts must be unique across questions, and option labels must be unique within each question."
)
SINGLE_CHOICE_MESSAGE = (
    "This client can only show one question with a single choice at a time. Ask exactly one question with "
    "multi_select false, or ask the user directly in your text response instead."
)


class QuestionOptionParam(Params):
    label: str = Field(
        description="The choice as the user sees it (1-5 words). Append '(Recommended)' to the one you recommend."
    )
    description: str = Field(default="", description="What choosing it means: its trade-offs or consequences.")


class QuestionParam(Params):
    question: str = Field(description="The complete question, specific and actionable, ending with '?'.")
    header: str = Field(
        default="", description="A short tag shown with the question (at most 12 characters), e.g. 'Auth'."
    )
    options: list[QuestionOptionParam] = Field(
        min_length=2,
        max_length=4,
        description=(
            "2-4 distinct choices. Do not add an 'Other' choice: the user can always answer in their own words."
        ),
    )
    multi_select: bool = Field(default=False, description="Whether the user may pick more than one option.")


class AskUserQuestionParams(Params):
    questions: list[QuestionParam] = Field(
        min_length=1, max_length=4, description="The questions to ask (1-4)."
    )


DESCRIPTION = (
    "Ask the user multiple-choice questions and wait for the answers. Use it when you need the user's "
    "decision to go on: a preference or requirement, an ambiguous instruction, a choice between "
    "implementation approaches or directions. Do not ask what you can find out yourself.\n"
    "- Ask 1-4 questions at a time, each with 2-4 options: a short label (1-5 words) and a description "
    "of what choosing it means.\n"
    "- Set multi_select when more than one option may apply.\n"
    "- The user can always answer in their own words instead of picking an option.\n"
    'The answers come back as JSON: {"answers": {"<question>": "<label>"}}, with a list of labels for a '
    "multi-select question. If the user dismisses the questions, do not assume an answer and do not go on "
    "on their behalf: stop and wait for their next message."
)
SINGLE_CHOICE_DESCRIPTION = (
    "Ask the user one multiple-choice question and wait for the answer. Use it when you need the user's "
    "decision to go on: a preference or requirement, an ambiguous instruction, a choice between "
    "implementation approaches or directions. Do not ask what you can find out yourself.\n"
    "- This client shows one question at a time, and the user picks exactly one of its 2-4 options "
    "(each a short label of 1-5 words and a description of what choosing it means) or skips it.\n"
    'The answer comes back as JSON: {"answers": {"<question>": "<label>"}}. If the user skips the question, '
    "do not assume an answer and do not go on on their behalf: stop and wait for their next message."
)
_SINGLE_CHOICE_SPEC: ToolSpec | None = None


class AskUserQuestion(Tool[AskUserQuestionParams]):
    name = NAME
    description = DESCRIPTION
    params = AskUserQuestionParams

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """Not offered to a front end that shows no questions; cut to one question for one that
        shows a single choice."""
        support = env.front_end.questions
        if support == "none":
            return None
        if support != "single_choice":
            return self.spec()
        global _SINGLE_CHOICE_SPEC
        if _SINGLE_CHOICE_SPEC is None:
            _SINGLE_CHOICE_SPEC = _single_choice_spec(self.spec())
        return _SINGLE_CHOICE_SPEC

    async def run(self, params: AskUserQuestionParams, ctx: ToolContext) -> ToolReturnValue:
        support = ctx.env.front_end.questions
        if support == "none":
            return tool_error(UNSUPPORTED_MESSAGE, brief="Client unsupported")
        if not _unique(params):
            return tool_error(UNIQUE_MESSAGE, brief="Invalid questions")
        one_choice = len(params.questions) == 1 and not params.questions[0].multi_select
        if support == "single_choice" and not one_choice:
            return tool_error(SINGLE_CHOICE_MESSAGE, brief="Client unsupported")
        if ctx.send_request is None:
            return tool_error(
                "Cannot ask the user: no client is connected to answer questions.", brief="No client"
            )
        request = QuestionRequest(
            id=str(uuid.uuid4()),
            tool_call_id=ctx.tool_call_id,
            questions=[
                QuestionItem(
                    question=q.question,
                    header=q.header,
                    options=[QuestionOption(label=o.label, description=o.description) for o in q.options],
                    multi_select=q.multi_select,
                )
                for q in params.questions
            ],
        )
        return answer_result(request.questions, await ctx.send_request(request))


def answer_result(questions: list[QuestionItem], answer: Any) -> ToolReturnValue:
    """What the model is told for a front end's answer (a QuestionResponse, None, an exception...)."""
    if isinstance(answer, QuestionNotSupported):
        return tool_error(UNSUPPORTED_MESSAGE, brief="Client unsupported")
    if isinstance(answer, BaseException):
        log.warning("a question was answered with an error (%s): told the model it was dismissed", answer)
        answer = None
    if isinstance(answer, dict):
        try:
            answer = QuestionResponse.model_validate({"request_id": "", **answer})
        except ValidationError:
            answer = None
    answers = normalize_answers(questions, answer.answers) if isinstance(answer, QuestionResponse) else {}
    if not answers:
        return tool_ok(
            json.dumps({"answers": {}, "note": DISMISSED_NOTE}, ensure_ascii=False),
            message=DISMISSED_NOTE,
            brief="User dismissed",
        )
    output = json.dumps({"answers": answers}, ensure_ascii=False)
    return tool_ok(output, message="User has answered.", brief="User answered")


def normalize_answers(questions: list[QuestionItem], answers: Answers) -> Answers:
    """Answers in question order, unanswered ones left out; a multi-select answer is always a list.

    A Wire client answers a multi-select question with its labels comma-joined: that string is
    split when every piece is one of the labels, else kept whole (an answer in the user's words).
    """
    by_text = {q.question: q for q in questions}
    ordered = [q.question for q in questions if q.question in answers]
    ordered += [key for key in answers if key not in by_text]
    out: Answers = {}
    for key in ordered:
        value = answers[key]
        question = by_text.get(key)
        if question is not None and question.multi_select:
            value = _labels(value, question)
        elif isinstance(value, list) and len(value) == 1:
            value = value[0]
        if value and value != [""]:
            out[key] = value
    return out


def _labels(value: str | list[str], question: QuestionItem) -> list[str]:
    if isinstance(value, list):
        return [v for v in value if v]
    labels = {o.label for o in question.options}
    if not value or value in labels:
        return [value] if value else []
    pieces = [p.strip() for p in value.split(",") if p.strip()]
    return pieces if pieces and all(p in labels for p in pieces) else [value]


def _unique(params: AskUserQuestionParams) -> bool:
    texts = [q.question for q in params.questions]
    if len(set(texts)) != len(texts):
        return False
    return all(len({o.label for o in q.options}) == len(q.options) for q in params.questions)


def _single_choice_spec(full: ToolSpec) -> ToolSpec:
    """The full spec cut down to what a permission prompt can show: one question, one choice."""
    schema = copy.deepcopy(full.parameters)
    questions = schema["properties"]["questions"]
    questions["maxItems"] = 1
    questions["description"] = "The question to ask (exactly one)."
    item = schema.get("$defs", {}).get("QuestionParam", {})
    item.get("properties", {}).pop("multi_select", None)
    options = item.get("properties", {}).get("options")
    if options is not None:
        options["description"] = "2-4 distinct choices; the user picks exactly one or skips the question."
    return ToolSpec(full.name, SINGLE_CHOICE_DESCRIPTION, schema)
