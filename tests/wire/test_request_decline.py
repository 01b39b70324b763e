"""`Request.decline()`: every kind of request has the one answer given when nobody can answer it
(a front end that does not serve it, a closed connection, the end of the turn), and what waits for
it reads that answer as "not answered": an approval is a rejection, a question is dismissed, a
hook allows, a client's tool fails."""

from __future__ import annotations

import json

import pytest

from kimi_acp.core.approvals import Approvals
from kimi_acp.tools.plan import PlanQuestion
from kimi_acp.tools.question import DISMISSED_NOTE, answer_result
from kimi_acp.wire.types import (
    REQUEST_TYPES,
    ApprovalRequest,
    ApprovalResponse,
    HookRequest,
    HookResponse,
    QuestionItem,
    QuestionRequest,
    QuestionResponse,
    Request,
    ToolCallRequest,
    ToolReturnValue,
)

QUESTIONS = [QuestionItem(question="Which?", options=[])]
REQUESTS: dict[type[Request], Request] = {
    ApprovalRequest: ApprovalRequest(id="a1", tool_call_id="t", sender="Shell", action="run command", description="d"),
    ToolCallRequest: ToolCallRequest(id="t2", name="client_tool", arguments="{}"),
    QuestionRequest: QuestionRequest(id="q1", tool_call_id="t", questions=QUESTIONS),
    HookRequest: HookRequest(id="h1", subscription_id="s", event="PreToolUse", target="Shell"),
}


def test_every_kind_of_request_is_here():
    assert set(REQUESTS) == set(REQUEST_TYPES.values())


@pytest.mark.parametrize("kind", list(REQUESTS), ids=lambda kind: kind.__name__)
async def test_decline_answers_once_with_the_kinds_own_answer(kind: type[Request]):
    request = REQUESTS[kind].model_copy()
    assert request.decline() is True and request.resolved
    answer = await request.wait()
    assert answer == request.declined()
    assert request.decline() is False and await request.wait() is answer  # answered: nothing changes
    expected = {
        ApprovalRequest: ApprovalResponse(request_id="a1", response="reject"),
        QuestionRequest: QuestionResponse(request_id="q1"),
        HookRequest: HookResponse(request_id="h1", action="allow"),
    }
    if kind is ToolCallRequest:
        assert isinstance(answer, ToolReturnValue) and answer.is_error and answer.message
    else:
        assert answer == expected[kind]


async def test_an_answered_request_is_not_declined():
    request = REQUESTS[ApprovalRequest].model_copy()
    request.resolve(ApprovalResponse(request_id="a1", response="approve"))
    assert request.decline() is False
    assert (await request.wait()).response == "approve"


def test_what_waits_reads_a_declined_answer_as_not_answered():
    approval = REQUESTS[ApprovalRequest]
    assert Approvals._normalize(approval, approval.declined()).response == "reject"
    question = PlanQuestion(id="q2", tool_call_id="t", questions=QUESTIONS)  # a subclass declines as its base
    assert question.declined() == QuestionResponse(request_id="q2")
    result = answer_result(QUESTIONS, question.declined())
    assert json.loads(result.output)["note"] == DISMISSED_NOTE
