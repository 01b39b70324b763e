"""Plan mode without a process: the plan file's place and life, the write gate of the toolset, the
plan tools' answers, and how ACP shows plans, retries and compactions (schema-checked)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.core import plan_file
from kimi_acp.core.toolset import FixedHost, Toolset
from kimi_acp.front_end import FrontEnd
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.tools import builtin_tools
from kimi_acp.tools.base import ToolContext, ToolEnv, ToolRejectedError
from kimi_acp.tools.plan import (
    REJECTED_MESSAGE,
    UNSUPPORTED_MESSAGE,
    EnterPlanMode,
    ExitPlanMode,
    ExitPlanModeParams,
    PlanQuestion,
)
from kimi_acp.wire.types import (
    CompactionBegin,
    CompactionEnd,
    FunctionBody,
    PlanDisplay,
    QuestionNotSupported,
    QuestionResponse,
    StepRetry,
    ToolCall,
)
from tests.support.acp_client import load_schemas


@pytest.fixture
def session(share_dir: Path, tmp_path: Path) -> sessions.Session:
    work = tmp_path / "work"
    work.mkdir()
    return sessions.create(work)


# --------------------------------------------------------------------------- the plan file


def test_the_plan_file_is_named_like_kimis_and_survives_a_reload(share_dir: Path, session: sessions.Session) -> None:
    assert plan_file.current_plan_path(session) is None and plan_file.read_plan(session) is None
    path = plan_file.plan_file_path(session)
    assert path.parent == share_dir / "plans" and path.parent.is_dir()
    assert (path.parent.stat().st_mode & 0o777) == 0o700  # private like the share dir: plans quote the code
    assert re.fullmatch(r"[a-z0-9-]+", path.stem) and len(path.stem.split("-")) >= 3
    assert plan_file.plan_file_path(session) == path  # stable within the round
    reloaded = sessions.find(session.work_dir, session.id)
    assert reloaded is not None
    assert re.fullmatch(r"[0-9a-f]{32}", reloaded.state.plan_session_id or "")
    assert plan_file.current_plan_path(reloaded) == path
    path.write_text("# plan\n")
    assert plan_file.read_plan(reloaded) == "# plan\n"
    plan_file.clear_plan(reloaded)
    assert not path.exists() and plan_file.read_plan(reloaded) is None
    plan_file.clear_plan(reloaded)  # nothing to clear: no error
    first_round = reloaded.state.plan_session_id
    plan_file.release_plan(reloaded)
    assert plan_file.current_plan_path(reloaded) is None
    plan_file.plan_file_path(reloaded)
    assert reloaded.state.plan_session_id not in (None, first_round)  # a new round, a new plan


def test_a_taken_name_is_not_reused(share_dir: Path, session: sessions.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    (share_dir / "plans").mkdir(parents=True)
    (share_dir / "plans" / "thor-thor-thor.md").write_text("someone else's plan")
    monkeypatch.setattr(plan_file, "HEROES", ("thor",))
    path = plan_file.plan_file_path(session)
    assert path.name == f"thor-thor-thor-{session.state.plan_session_id[:8]}.md"


def test_a_crafted_slug_cannot_point_outside_the_plans_folder(session: sessions.Session) -> None:
    session.state.plan_session_id, session.state.plan_slug = "x" * 32, "../../etc/passwd"
    assert plan_file.current_plan_path(session) is None and plan_file.read_plan(session) is None
    assert plan_file.plan_file_path(session).parent == plan_file.plans_dir()  # a fresh, safe name instead


# --------------------------------------------------------------------------- the write gate


class Rejecter:
    """An approver that says no: a write that reaches it was not auto-approved."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def request(self, **kwargs: Any) -> None:
        self.asked.append(kwargs["action"])
        raise ToolRejectedError()


def contexts(work_dir: Path, approver: Any) -> Any:
    def make(name: str) -> ToolContext:
        return ToolContext(work_dir=work_dir, kaos=LocalKaos(), tool_call_id="tc", approver=approver, todos=None,  # type: ignore[arg-type]
                           tool_name=name)

    return make


def write(path: str, content: str = "x") -> ToolCall:
    return ToolCall(id="tc", function=FunctionBody(name="WriteFile", arguments=json.dumps({"path": path, "content": content})))


async def test_in_plan_mode_only_the_plan_file_is_written_and_without_asking(tmp_path: Path) -> None:
    plan = tmp_path / "plans" / "a-b-c.md"
    plan.parent.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    session = FixedHost(plan_mode=True, plan_file=plan)
    toolset = Toolset(builtin_tools(), session)
    approver = Rejecter()
    outcome = await toolset.handle(write(str(plan), "# plan"), contexts(work, approver))
    assert not outcome.result.is_error and plan.read_text() == "# plan" and approver.asked == []
    assert plan_file.plan_in_extras(outcome.result.extras) == (str(plan), "# plan")  # what the plan now is
    outcome = await toolset.handle(write(str(plan.parent / "." / plan.name), "# plan 2"), contexts(work, approver))
    assert not outcome.result.is_error and plan.read_text() == "# plan 2"  # the same file, spelled differently
    outcome = await toolset.handle(write("code.py"), contexts(work, approver))
    assert outcome.result.is_error and f"except the plan file `{plan}`" in outcome.result.message
    assert not (work / "code.py").exists()
    edit = ToolCall(id="tc", function=FunctionBody(
        name="StrReplaceFile", arguments=json.dumps({"path": str(plan), "edit": {"old": "2", "new": "3"}})))
    outcome = await toolset.handle(edit, contexts(work, approver))
    assert not outcome.result.is_error and plan.read_text() == "# plan 3"
    assert plan_file.plan_in_extras(outcome.result.extras) == (str(plan), "# plan 3")
    outcome = await toolset.handle(edit, contexts(work, approver))  # "2" is gone: a failed edit carries no plan
    assert outcome.result.is_error and plan_file.plan_in_extras(outcome.result.extras) is None
    session.plan_mode = False  # out of plan mode the plan file is an ordinary file: asked
    outcome = await toolset.handle(write(str(plan), "# plan 4"), contexts(work, approver))
    assert outcome.rejected and approver.asked == ["edit file outside of working directory"]


def test_clearing_the_plan_deletes_its_file_and_says_so(share: Path, session: sessions.Session) -> None:
    from kimi_acp.core.session_controls import SessionControls
    from kimi_acp.core.turn import PlanCleared

    sent: list[Any] = []
    stream = type("S", (), {"send": lambda self, message: sent.append(message)})()
    controls = SessionControls(session=session, config=None, stream=stream, approvals=None, sandbox=None)  # type: ignore[arg-type]
    controls.clear_plan()
    assert sent == []  # no planning round: nothing to clear
    path = plan_file.plan_file_path(session)
    path.write_text("# plan\n")
    controls.clear_plan()
    assert not path.exists() and sent == [PlanCleared(str(path))]


# --------------------------------------------------------------------------- the tools


class Host:
    """A PlanHost: plan mode, a plan file, and the messages the tools send."""

    def __init__(self, plan: Path, *, on: bool = False, yolo: bool = False) -> None:
        self.plan = plan
        self.plan_mode = on
        self.approvals = type("A", (), {"yolo": yolo})()
        self.sent: list[Any] = []
        self.stream = self
        self.changes: list[bool] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def set_plan_mode(self, on: bool, *, announce: bool = True) -> None:
        self.plan_mode = on
        self.changes.append(on)

    def plan_file_path(self) -> Path:
        return self.plan


def tool_context(tmp_path: Path, host: Host, answer: Any) -> tuple[ToolContext, list[PlanQuestion]]:
    asked: list[PlanQuestion] = []

    async def send_request(request: Any) -> Any:
        asked.append(request)
        return answer(request) if callable(answer) else answer

    ctx = ToolContext(work_dir=tmp_path, kaos=LocalKaos(), tool_call_id="tc", approver=None, todos=None,  # type: ignore[arg-type]
                      send_request=send_request, plan=host)
    return ctx, asked


def answering(label: str) -> Any:
    return lambda request: QuestionResponse(request_id=request.id, answers={request.questions[0].question: label})


async def test_enter_asks_unless_yolo_and_says_where_the_plan_goes(tmp_path: Path) -> None:
    host = Host(tmp_path / "p.md")
    ctx, asked = tool_context(tmp_path, host, answering("No"))
    result = await EnterPlanMode().run(EnterPlanMode.params(), ctx)
    assert not result.is_error and result.message == "Declined" and host.changes == []
    assert isinstance(asked[0], PlanQuestion) and asked[0].questions[0].header == "Plan Mode"
    ctx, _ = tool_context(tmp_path, host, lambda request: QuestionResponse(request_id=request.id))
    result = await EnterPlanMode().run(EnterPlanMode.params(), ctx)
    assert result.is_error and "Do NOT proceed" in str(result.output)  # dismissed
    yolo = Host(tmp_path / "p.md", yolo=True)
    ctx, asked = tool_context(tmp_path, yolo, answering("No"))
    result = await EnterPlanMode().run(EnterPlanMode.params(), ctx)
    assert asked == [] and yolo.changes == [True] and str(tmp_path / "p.md") in str(result.output)
    result = await EnterPlanMode().run(EnterPlanMode.params(), ctx)
    assert result.is_error and result.message.startswith("Already in plan mode")


async def test_exit_with_approaches_runs_the_chosen_one(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("A: rewrite\nB: patch\n")
    host = Host(tmp_path / "p.md", on=True)
    ctx, asked = tool_context(tmp_path, host, answering("Patch it (Recommended)"))
    params = ExitPlanModeParams.model_validate(
        {"options": [{"label": "Rewrite", "description": "slow"}, {"label": "Patch it (Recommended)"}]}
    )
    result = await ExitPlanMode().run(params, ctx)
    assert host.changes == [False] and 'Selected approach: "Patch it (Recommended)"' in str(result.output)
    assert [o.label for o in asked[0].questions[0].options] == ["Rewrite", "Patch it (Recommended)", "Reject", "Reject and Exit"]
    assert host.sent == [PlanDisplay(content="A: rewrite\nB: patch\n", file_path=str(tmp_path / "p.md"))]


@pytest.mark.parametrize("label", ["Approve", "reject", "Reject and exit", "Revise"])
def test_reserved_labels_cannot_be_approaches(label: str) -> None:
    with pytest.raises(ValueError):
        ExitPlanModeParams.model_validate({"options": [{"label": label}, {"label": "Other"}]})
    with pytest.raises(ValueError):
        ExitPlanModeParams.model_validate({"options": [{"label": "Same"}, {"label": "Same"}]})


async def test_exit_reject_keeps_plan_mode_and_stops(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("plan")
    host = Host(tmp_path / "p.md", on=True)
    ctx, _ = tool_context(tmp_path, host, answering("Reject"))
    with pytest.raises(ToolRejectedError) as caught:
        await ExitPlanMode().run(ExitPlanModeParams(), ctx)
    assert caught.value.result is not None and caught.value.result.message == REJECTED_MESSAGE
    assert caught.value.feedback is None and host.changes == []


async def test_a_client_without_plan_mode_gets_a_tool_error(tmp_path: Path) -> None:
    host = Host(tmp_path / "p.md")
    session = FixedHost(env=ToolEnv(front_end=FrontEnd(plan_mode=False)))
    toolset = Toolset(builtin_tools(), session)
    assert not {"EnterPlanMode", "ExitPlanMode"} & {s.name for s in toolset.specs()}
    tool = toolset.get("EnterPlanMode")
    ctx, asked = tool_context(tmp_path, host, answering("Yes"))
    result = await tool.run(EnterPlanMode.params(), dataclasses.replace(ctx, env=session.env))  # type: ignore[union-attr]
    assert result.message == UNSUPPORTED_MESSAGE and asked == []
    session.env = ToolEnv()  # a front end that serves plan mode
    assert {"EnterPlanMode", "ExitPlanMode"} <= {s.name for s in toolset.specs()}
    ctx, _ = tool_context(tmp_path, host, QuestionNotSupported())  # a front end that fails the question
    result = await toolset.get("EnterPlanMode").run(EnterPlanMode.params(), ctx)  # type: ignore[union-attr]
    assert result.message == UNSUPPORTED_MESSAGE and host.changes == []


# --------------------------------------------------------------------------- what ACP shows


def mapped(mapper: UpdateMapper, *messages: Any) -> list[dict[str, Any]]:
    updates = [u for m in messages for u in mapper.map(m)]
    for update in updates:
        problems = load_schemas().validate("SessionNotification", {"sessionId": "s", "update": update})
        assert not problems, problems
    return updates


RETRY = StepRetry(n=1, next_attempt=2, max_attempts=3, wait_s=0.42, error_type="APIStatusError", status_code=503)


def test_retries_and_compactions_are_messages_unless_the_client_takes_notices(tmp_path: Path) -> None:
    (retry, begin, end) = mapped(UpdateMapper(tmp_path), RETRY, CompactionBegin(), CompactionEnd())
    assert retry["content"]["text"] == "\n\n_Retrying after a 503 (attempt 2 of 3)…_\n\n"
    assert "Compacting" in begin["content"]["text"] and "compacted" in end["content"]["text"]
    connection = StepRetry(n=1, next_attempt=3, max_attempts=3, wait_s=1, error_type="APIConnectionError")
    (update,) = mapped(UpdateMapper(tmp_path), connection)
    assert "after a connection error (attempt 3 of 3)" in update["content"]["text"]
    caps = {"session": {"notices": {}, "compaction": {}}}
    mapper = UpdateMapper(tmp_path, client_capabilities=caps)
    notice, begin, end, begin2, end2 = mapped(mapper, RETRY, CompactionBegin(), CompactionEnd(), CompactionBegin(), CompactionEnd())
    assert notice == {
        "sessionUpdate": "notice", "severity": "warning", "title": "Retrying after a 503 (attempt 2 of 3)",
        "description": "The model request failed; trying again in 0.42 s.",
    }
    assert (begin["status"], end["status"]) == ("in_progress", "completed") and begin["compactionId"] == end["compactionId"]
    assert begin2["compactionId"] != begin["compactionId"]
    assert not mapper.shown_output


def test_replay_shows_compactions_and_plans_but_not_retries(tmp_path: Path) -> None:
    mapper = UpdateMapper(tmp_path, replay=True)
    updates = mapped(mapper, RETRY, CompactionBegin(), CompactionEnd(), PlanDisplay(content="# P\n", file_path="/p.md"))
    texts = [u["content"]["text"] for u in updates]
    assert len(texts) == 3 and texts[-1] == "\n\n**Plan** (`/p.md`)\n\n# P\n\n"
    assert mapper.shown_output


def test_notice_capability_must_be_an_object(tmp_path: Path) -> None:
    for caps in ({"session": {"notices": True}}, {"session": None}, {"session": {"notices": None}}, {}):
        assert UpdateMapper(tmp_path, client_capabilities=caps).notices is False  # type: ignore[arg-type]


def test_plans_dir_follows_the_share_dir(share_dir: Path) -> None:
    assert plan_file.plans_dir() == share_dir / "plans"
    assert os.environ["KIMI_SHARE_DIR"] == str(share_dir)
