"""AskUserQuestion on its own: the request it sends, how answers are read, what the model is
offered per front end; and the ACP form and permission mapping (`frontends/acp/questions.py`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from kimi_acp.core.toolset import FixedHost, Toolset
from kimi_acp.front_end import FrontEnd
from kimi_acp.frontends.acp import questions as acp_questions
from kimi_acp.tools import builtin_tools
from kimi_acp.tools.base import ToolContext, ToolEnv
from kimi_acp.tools.question import (
    DISMISSED_NOTE,
    SINGLE_CHOICE_MESSAGE,
    UNIQUE_MESSAGE,
    UNSUPPORTED_MESSAGE,
    AskUserQuestion,
)
from kimi_acp.wire.types import (
    FunctionBody,
    QuestionItem,
    QuestionNotSupported,
    QuestionOption,
    QuestionRequest,
    QuestionResponse,
    ToolCall,
    ToolReturnValue,
)
from tests.support.acp_client import load_schemas

LANGUAGE = {"question": "Which language?", "header": "Lang", "options": [{"label": "Python", "description": "big"}, {"label": "Rust"}]}
CHECKS = {"question": "Which checks?", "options": [{"label": "Lint"}, {"label": "Tests"}, {"label": "A, B"}], "multi_select": True}


class Client:
    """Stands in for the front end: records the requests and answers each with `answer`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[QuestionRequest] = []

    async def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        return self.answer(request) if callable(self.answer) else self.answer


def shows(support: str) -> ToolEnv:
    """The session of a front end that shows questions as `support` says."""
    return ToolEnv(front_end=FrontEnd(questions=support))  # type: ignore[arg-type]


async def run(ctx: ToolContext, client: Client | None, *questions: dict[str, Any], support: str = "full") -> ToolReturnValue:
    tool = AskUserQuestion()
    context = dataclasses.replace(ctx, send_request=client, env=shows(support))
    return await tool.run(tool.params.model_validate({"questions": list(questions)}), context)


def answered(result: ToolReturnValue) -> dict[str, Any]:
    assert not result.is_error
    return json.loads(result.output)  # type: ignore[arg-type]


async def test_the_request_carries_the_questions_and_the_call_id(ctx: ToolContext) -> None:
    client = Client(lambda r: QuestionResponse(request_id=r.id, answers={"Which language?": "Python"}))
    result = await run(ctx, client, LANGUAGE, CHECKS)
    (request,) = client.requests
    assert isinstance(request, QuestionRequest) and request.tool_call_id == "call-1" and request.id
    assert [q.question for q in request.questions] == ["Which language?", "Which checks?"]
    assert request.questions[0].header == "Lang" and request.questions[1].multi_select
    assert request.questions[0].options == [QuestionOption(label="Python", description="big"), QuestionOption(label="Rust")]
    assert answered(result) == {"answers": {"Which language?": "Python"}}
    assert result.message == "User has answered."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Lint, Tests", ["Lint", "Tests"]),  # Wire: comma-joined labels
        ("A, B", ["A, B"]),  # one label with a comma in it
        ("Lint, A, B", ["Lint, A, B"]),  # ambiguous: kept whole rather than guessed
        (["Tests", "A, B"], ["Tests", "A, B"]),  # a list stays a list
        ("property tests", ["property tests"]),  # the user's own words
        ("Tests", ["Tests"]),
    ],
)
async def test_multi_select_answers_are_lists(ctx: ToolContext, answer: Any, expected: list[str]) -> None:
    client = Client(lambda r: QuestionResponse(request_id=r.id, answers={"Which checks?": answer}))
    assert answered(await run(ctx, client, CHECKS)) == {"answers": {"Which checks?": expected}}


async def test_answers_follow_the_question_order_and_keep_unknown_keys(ctx: ToolContext) -> None:
    answers = {"extra": "kept", "Which checks?": "Lint", "Which language?": ["Rust"], "unanswered": ""}
    client = Client(lambda r: QuestionResponse(request_id=r.id, answers=answers))
    result = answered(await run(ctx, client, LANGUAGE, CHECKS))
    assert list(result["answers"].items()) == [("Which language?", "Rust"), ("Which checks?", ["Lint"]), ("extra", "kept")]


@pytest.mark.parametrize(
    "answer",
    [None, {}, QuestionResponse(request_id="x"), QuestionResponse(request_id="x", answers={"Which language?": ""}),
     RuntimeError("boom"), {"answers": "garbled"}],
    ids=["none", "empty-dict", "empty", "blank", "exception", "garbled"],
)
async def test_no_answer_is_a_dismissal_note(ctx: ToolContext, answer: Any) -> None:
    result = await run(ctx, Client(answer), LANGUAGE)
    assert answered(result) == {"answers": {}, "note": DISMISSED_NOTE}
    assert result.message == DISMISSED_NOTE


async def test_a_plain_dict_answer_is_read(ctx: ToolContext) -> None:
    result = await run(ctx, Client({"answers": {"Which language?": "Rust"}}), LANGUAGE)
    assert answered(result) == {"answers": {"Which language?": "Rust"}}


async def test_an_unsupported_answer_says_do_not_call_again(ctx: ToolContext) -> None:
    result = await run(ctx, Client(QuestionNotSupported()), LANGUAGE)
    assert result.is_error and result.message == UNSUPPORTED_MESSAGE


async def test_unlisted_it_refuses_without_asking(ctx: ToolContext) -> None:
    client = Client(None)
    result = await run(ctx, client, LANGUAGE, support="none")
    assert result.is_error and result.message == UNSUPPORTED_MESSAGE and client.requests == []


async def test_single_choice_asks_only_what_a_permission_prompt_shows(ctx: ToolContext) -> None:
    client = Client(lambda r: QuestionResponse(request_id=r.id, answers={"Which language?": "Rust"}))
    for questions in ((LANGUAGE, {**LANGUAGE, "question": "Other?"}), (CHECKS,)):
        result = await run(ctx, client, *questions, support="single_choice")
        assert result.is_error and result.message == SINGLE_CHOICE_MESSAGE
    assert client.requests == []
    assert answered(await run(ctx, client, LANGUAGE, support="single_choice")) == {"answers": {"Which language?": "Rust"}}


@pytest.mark.parametrize(
    "questions",
    [(LANGUAGE, LANGUAGE), ({**LANGUAGE, "options": [{"label": "Same"}, {"label": "Same"}]},)],
    ids=["same-question", "same-label"],
)
async def test_duplicates_are_refused(ctx: ToolContext, questions: tuple[dict[str, Any], ...]) -> None:
    client = Client(None)
    result = await run(ctx, client, *questions)
    assert result.is_error and result.message == UNIQUE_MESSAGE and client.requests == []


async def test_without_a_client_it_is_a_tool_error(ctx: ToolContext) -> None:
    result = await run(ctx, None, LANGUAGE)
    assert result.is_error and "no client" in result.message


@pytest.mark.parametrize(
    "arguments",
    [
        {"questions": []},
        {"questions": [LANGUAGE] * 5},
        {"questions": [{**LANGUAGE, "options": [{"label": "only"}]}]},
        {"questions": [{**LANGUAGE, "options": [{"label": str(i)} for i in range(5)]}]},
        {"questions": [{"header": "x", "options": LANGUAGE["options"]}]},
        {"questions": [{**LANGUAGE, "body": "unknown field"}]},
    ],
    ids=["none", "five", "one-option", "five-options", "no-question", "extra-field"],
)
def test_bad_arguments_fail_validation(arguments: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        AskUserQuestion.params.model_validate(arguments)


# ------------------------------------------------------------------ what the model is offered


def names(toolset: Toolset) -> list[str]:
    return [spec.name for spec in toolset.specs()]


def test_it_comes_right_after_agent_and_is_offered_by_default() -> None:
    toolset = Toolset(builtin_tools())
    assert names(toolset)[:3] == ["Agent", "AskUserQuestion", "SetTodoList"]
    spec = toolset.get("AskUserQuestion").spec()  # type: ignore[union-attr]
    questions = spec.parameters["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
    item = spec.parameters["$defs"]["QuestionParam"]
    assert set(item["properties"]) == {"question", "header", "options", "multi_select"} and item["required"] == ["question", "options"]
    option = spec.parameters["$defs"]["QuestionOptionParam"]
    assert set(option["properties"]) == {"label", "description"} and option["required"] == ["label"]


async def test_unlisted_it_is_left_out_of_the_specs_but_still_answers(tmp_path: Path, ctx: ToolContext) -> None:
    session = FixedHost(env=shows("none"))
    toolset = Toolset(builtin_tools(), session)
    assert "AskUserQuestion" not in names(toolset) and "Shell" in names(toolset)
    call = ToolCall(id="c1", function=FunctionBody(name="AskUserQuestion", arguments=json.dumps({"questions": [LANGUAGE]})))
    outcome = await toolset.handle(call, lambda name: ctx)
    assert outcome.result.is_error and outcome.result.message == UNSUPPORTED_MESSAGE  # not "Tool not found"
    session.env = shows("full")
    assert "AskUserQuestion" in names(toolset)


def test_single_choice_spec_says_one_question_one_choice() -> None:
    session = FixedHost()
    toolset = Toolset(builtin_tools(), session)
    full = toolset.get("AskUserQuestion").spec()  # type: ignore[union-attr]
    session.env = shows("single_choice")
    (spec,) = [s for s in toolset.specs() if s.name == "AskUserQuestion"]
    assert spec.parameters["properties"]["questions"]["maxItems"] == 1
    assert "multi_select" not in spec.parameters["$defs"]["QuestionParam"]["properties"]
    assert spec.description != full.description and "one question at a time" in spec.description
    assert full.parameters["properties"]["questions"]["maxItems"] == 4  # the full spec is untouched


# ------------------------------------------------------------------ ACP: forms and permission prompts


@pytest.mark.parametrize(
    ("capabilities", "form"),
    [
        ({"elicitation": {"form": {}}}, True),
        ({"elicitation": {"form": {}, "url": {}}}, True),
        ({"elicitation": {"url": {}}}, False),
        ({"elicitation": {"form": None}}, False),
        ({"elicitation": True}, False),
        ({"elicitation": {"form": True}}, False),
        ({}, False),
    ],
)
def test_form_support_follows_the_client_capability(capabilities: dict[str, Any], form: bool) -> None:
    assert acp_questions.form_supported(capabilities) is form
    toolset = Toolset(builtin_tools(), FixedHost(env=shows(acp_questions.question_support(capabilities))))
    spec = next(s for s in toolset.specs() if s.name == "AskUserQuestion")  # offered either way
    assert spec.parameters["properties"]["questions"]["maxItems"] == (4 if form else 1)


def request_of(*questions: dict[str, Any]) -> QuestionRequest:
    return QuestionRequest(id="q", tool_call_id="c", questions=[QuestionItem.model_validate(q) for q in questions])


def test_the_form_schema_is_a_valid_elicitation_schema() -> None:
    plan = {"question": "Approve?", "header": "Plan", "body": "The plan text", "options": [{"label": "Approve"}, {"label": "Reject"}],
            "other_label": "Revise", "other_description": "Say what to change"}
    request = request_of(LANGUAGE, CHECKS, plan)
    schema = acp_questions.form_schema(request)
    assert load_schemas().validate("ElicitationSchema", schema) == []
    params = {"sessionId": "s", "toolCallId": "t", "mode": "form", "message": acp_questions.form_message(request), "requestedSchema": schema}
    assert load_schemas().validate("CreateElicitationRequest", params) == []
    fields = schema["properties"]
    assert list(fields) == ["question_1", "question_1_other", "question_2", "question_2_other", "question_3", "question_3_other"]
    assert fields["question_3"]["description"] == "Approve?\n\nThe plan text"
    assert fields["question_3_other"] == {"type": "string", "title": "Revise", "description": "Say what to change"}


def test_form_answers_map_back_to_question_texts() -> None:
    request = request_of(LANGUAGE, CHECKS)
    content = {"question_1": "Rust", "question_2": ["Lint"], "question_2_other": "  fuzz  "}
    assert acp_questions.form_answers(request, content) == {"Which language?": "Rust", "Which checks?": ["Lint", "fuzz"]}
    assert acp_questions.form_answers(request, {"question_1_other": "Go", "question_2": []}) == {"Which language?": "Go"}
    assert acp_questions.form_answers(request, None) == {}
    assert acp_questions.form_answers(request, {"question_1": 3, "question_2": "Tests"}) == {"Which checks?": ["Tests"]}


def test_permission_prompt_offers_the_options_the_other_label_and_skip() -> None:
    question = QuestionItem(
        question="Approve?", body="\n## Plan text\n\nstep one", other_label="Revise", other_description="change it",
        options=[QuestionOption(label="Approve", description="go"), QuestionOption(label="Reject", declines="once"),
                 QuestionOption(label="Reject and Exit", declines="always")],
    )
    assert "declines" not in question.model_dump_json()  # not part of the Wire message
    assert acp_questions.permission_options(question) == [
        {"optionId": "option_1", "name": "Approve", "kind": "allow_once"},
        {"optionId": "option_2", "name": "Reject", "kind": "reject_once"},
        {"optionId": "option_3", "name": "Reject and Exit", "kind": "reject_always"},
        {"optionId": "option_4", "name": "Revise", "kind": "reject_once"},  # its words cannot come with it: not an acceptance
        {"optionId": "skip", "name": "Skip", "kind": "reject_once"},
    ]
    call = acp_questions.question_card("t1", question)
    assert call["toolCallId"] == "t1" and call["title"] == "Approve?: Plan text"
    text = call["content"][0]["content"]["text"]
    assert text.startswith("## Plan text\n\nstep one") and "**Approve**: go" in text and "**Revise**: change it" in text
    plain = acp_questions.question_card("t2", QuestionItem(question="Which?", options=[QuestionOption(label="A")]))
    assert plain == {"toolCallId": "t2", "title": "Which?"}
    assert acp_questions.fits_permission(request_of(LANGUAGE)) and not acp_questions.fits_permission(request_of(CHECKS))
    assert not acp_questions.fits_permission(request_of(LANGUAGE, {**LANGUAGE, "question": "Two?"}))


async def test_a_request_that_fits_no_prompt_is_answered_not_supported() -> None:
    request = request_of(CHECKS)
    await acp_questions.ask(None, "s", "t", request, form=False)
    assert isinstance(request.future.result(), QuestionNotSupported)
