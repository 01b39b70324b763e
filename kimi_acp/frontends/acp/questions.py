"""Questions (`QuestionRequest`, from AskUserQuestion and friends) shown to an ACP user.

A client that advertises form elicitation (`clientCapabilities.elicitation.form`, e.g. `{}`) gets
a form through `elicitation/create`, scoped to the session and the tool call: one field per
question (single-select: a string with titled `oneOf` options; multi-select: an array with titled
`anyOf` items) plus an optional free-text field for an answer in the user's own words.

Every ACP client answers `session/request_permission`, so one without forms gets a permission
prompt: the options of one single-select question as `allow_once` options (`reject_*` for an answer
that turns the request down, and for the question's `other_label`, if it has one, answering that
label) and a "Skip". Its AskUserQuestion is cut
down to that shape (`single_choice`); a request that does not fit anyway is answered
`QuestionNotSupported`. Plan tools' questions (one single-select question) fit both ways.

`ask` always settles the request: an answer, a dismissal (decline, cancel, skip, a client error)
or, when `session/cancel` cancels its task, a dismissal before the cancel goes on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp.schema import ElicitationFormSessionMode, PermissionOption, ToolCallUpdate

from ...front_end import QuestionSupport
from ...wire.types import QuestionItem, QuestionNotSupported, QuestionRequest, QuestionResponse
from .convert import text_content

log = logging.getLogger(__name__)

SKIP_OPTION = {"optionId": "skip", "name": "Skip", "kind": "reject_once"}
DECLINE_KINDS = {"once": "reject_once", "always": "reject_always"}  # QuestionOption.declines -> option kind
HEADLINE_CHARS = 80
OTHER_SUFFIX = "_other"

Answers = dict[str, str | list[str]]


def form_supported(client_capabilities: dict[str, Any]) -> bool:
    """Whether the client renders elicitation forms: `elicitation.form` present as an object."""
    elicitation = client_capabilities.get("elicitation")
    return isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict)


def question_support(client_capabilities: dict[str, Any]) -> QuestionSupport:
    """What this client can show of AskUserQuestion (the session's `FrontEnd.questions`)."""
    return "full" if form_supported(client_capabilities) else "single_choice"


def fits_permission(request: QuestionRequest) -> bool:
    """One single-select question: the shape a permission prompt can show."""
    if len(request.questions) != 1:
        return False
    question = request.questions[0]
    return not question.multi_select and bool(question.options)


async def ask(
    connection: Any, session_id: str, tool_call_id: str, request: QuestionRequest, *, form: bool
) -> None:
    """Show the question to the user and settle `request`; `tool_call_id` is the card's ACP id."""
    answers: Answers = {}
    try:
        if form:
            answers = await _ask_form(connection, session_id, tool_call_id, request)
        elif fits_permission(request):
            answers = await _ask_permission(connection, session_id, tool_call_id, request.questions[0])
        else:
            request.resolve(QuestionNotSupported())
            return
    except asyncio.CancelledError:
        request.decline()
        raise
    except Exception as exc:
        log.warning("asking the user failed (%s); treating it as a dismissal", exc)
    request.resolve(QuestionResponse(request_id=request.id, answers=answers))


# ---------------------------------------------------------------------------------- the form


def field_key(index: int) -> str:
    return f"question_{index + 1}"


def form_message(request: QuestionRequest) -> str:
    if len(request.questions) == 1:
        return request.questions[0].question
    return f"Please answer {len(request.questions)} questions."


def form_schema(request: QuestionRequest) -> dict[str, Any]:
    """The `requestedSchema`: nothing required, so the user may answer some and leave the rest."""
    properties: dict[str, Any] = {}
    for index, question in enumerate(request.questions):
        options = [_enum_option(o.label, o.description) for o in question.options]
        field: dict[str, Any] = {"title": question.header or question.question}
        shown = (question.question if question.header else "", question.body)
        description = "\n\n".join(text for text in shown if text)
        if description:
            field["description"] = description
        if question.multi_select:
            field.update({"type": "array", "items": {"anyOf": options}})
        else:
            field.update({"type": "string", "oneOf": options})
        key = field_key(index)
        properties[key] = field
        properties[key + OTHER_SUFFIX] = {
            "type": "string",
            "title": question.other_label or "Other",
            "description": question.other_description or f"Or answer in your own words: {question.question}",
        }
    return {"type": "object", "properties": properties}


def _enum_option(label: str, description: str) -> dict[str, Any]:
    option = {"const": label, "title": label}
    if description:
        option["description"] = description
    return option


def form_answers(request: QuestionRequest, content: dict[str, Any] | None) -> Answers:
    """The accepted form's content as answers; own words win over a single choice, join a multi one."""
    content = content or {}
    answers: Answers = {}
    for index, question in enumerate(request.questions):
        picked = content.get(field_key(index))
        other = content.get(field_key(index) + OTHER_SUFFIX)
        other = other.strip() if isinstance(other, str) else ""
        if question.multi_select:
            labels = [v for v in picked if isinstance(v, str) and v] if isinstance(picked, list) else []
            if isinstance(picked, str) and picked:
                labels = [picked]
            if other:
                labels.append(other)
            if labels:
                answers[question.question] = labels
        elif other or (isinstance(picked, str) and picked):
            answers[question.question] = other or picked  # type: ignore[assignment]
    return answers


async def _ask_form(connection: Any, session_id: str, tool_call_id: str, request: QuestionRequest) -> Answers:
    mode = ElicitationFormSessionMode.model_validate(
        {"sessionId": session_id, "toolCallId": tool_call_id, "requestedSchema": form_schema(request)}
    )
    response = await connection.create_elicitation(message=form_message(request), mode=mode)
    if getattr(response, "action", None) != "accept":
        return {}  # declined, cancelled, or an action we do not know: dismissed
    return form_answers(request, getattr(response, "content", None))


# ---------------------------------------------------------------------------------- the permission prompt


def _choices(question: QuestionItem) -> list[tuple[str, str]]:
    """(label, description) of every answer a permission prompt offers, `other_label` last."""
    choices = [(o.label, o.description) for o in question.options]
    if question.other_label:
        choices.append((question.other_label, question.other_description))
    return choices


def permission_options(question: QuestionItem) -> list[dict[str, Any]]:
    """One option per answer. An answer that turns the request down (plan mode's Reject, Reject
    and Exit, No) is a `reject_*` option, and so is the answer in one's own words (Revise): a
    permission prompt cannot carry the words, so picking it accepts nothing. Clients that key
    their buttons by kind (CodeCompanion) then never show a rejection as "Accept"."""
    options = [
        {"optionId": f"option_{i + 1}", "name": option.label, "kind": DECLINE_KINDS.get(option.declines or "", "allow_once")}
        for i, option in enumerate(question.options)
    ]
    if question.other_label:
        options.append({"optionId": f"option_{len(options) + 1}", "name": question.other_label, "kind": "reject_once"})
    return [*options, SKIP_OPTION]


def question_card(tool_call_id: str, question: QuestionItem) -> dict[str, Any]:
    """The card the user is asked about: titled with the question (and the first line of the text
    shown with it, e.g. the plan's heading), that text and the options explained inside. A client
    that shows only the permission request (Zed's panel) still shows what is asked about."""
    title = question.question
    headline = _headline(question.body)
    if headline:
        title = f"{title}: {headline}"
    call: dict[str, Any] = {"toolCallId": tool_call_id, "title": title}
    described = [f"- **{label}**: {description}" for label, description in _choices(question) if description]
    text = "\n\n".join(t for t in (question.body.strip("\n"), "\n".join(described)) if t)
    if text:
        call["content"] = [text_content(text)]
    return call


def _headline(body: str) -> str:
    """The first line of `body` that says something, without Markdown heading marks, cut short."""
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= HEADLINE_CHARS else line[: HEADLINE_CHARS - 1].rstrip() + "…"
    return ""


async def _ask_permission(
    connection: Any, session_id: str, tool_call_id: str, question: QuestionItem
) -> Answers:
    response = await connection.request_permission(
        session_id=session_id,
        tool_call=ToolCallUpdate.model_validate(question_card(tool_call_id, question)),
        options=[PermissionOption.model_validate(o) for o in permission_options(question)],
    )
    outcome = response.outcome
    if getattr(outcome, "outcome", None) != "selected":
        return {}
    chosen = getattr(outcome, "option_id", "")
    for option in permission_options(question)[:-1]:
        if option["optionId"] == chosen:
            return {question.question: option["name"]}
    if chosen != SKIP_OPTION["optionId"]:
        log.warning("unknown question option %r treated as a dismissal", chosen)
    return {}
