"""core/approvals.py with scopes, warnings and rules: what asks, what runs, what a session approval
remembers, what is refused (the order in kimi_acp/permissions/__init__.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.approvals import Approvals
from kimi_acp.errors import PermissionDenied
from kimi_acp.permissions.rules import Rules
from kimi_acp.permissions.scope import Scope, command_scope, path_scope
from kimi_acp.tools.base import ToolRejectedError
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    ShellDisplayBlock,
)


@pytest.fixture
def session(tmp_path: Path) -> sessions.Session:
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    return sessions.create(work_dir)


class Asker:
    """Approvals whose requests are answered by a script of answers, recording what was asked."""

    def __init__(self, session: sessions.Session, answers: list[str] | None = None, rules: str = "") -> None:
        self.sent: list[Any] = []
        self.answers = list(answers or [])
        self.approvals = Approvals(session, self._send)
        if rules:
            self.approvals.rules = Rules.from_config(load_config(config_text=rules).config)

    def _send(self, message: Any) -> None:
        self.sent.append(message)
        if isinstance(message, ApprovalRequest):
            answer = self.answers.pop(0) if self.answers else "reject"
            asyncio.get_running_loop().call_soon(message.resolve, ApprovalResponse(request_id=message.id, response=answer))

    @property
    def asked(self) -> list[ApprovalRequest]:
        return [m for m in self.sent if isinstance(m, ApprovalRequest)]

    async def shell(self, command: str) -> None:
        await self.run("Shell", command_scope("run command", command, self.approvals._session.work_dir, {}))

    async def run(self, sender: str, scope: Scope | None, *, warning: str | None = None, needed: bool = True) -> None:
        await asyncio.wait_for(
            self.approvals.request(
                tool_call_id="tc", sender=sender, action=scope.action if scope else "x", description="d",
                display=[], scope=scope, warning=warning, needed=needed,
            ),
            2,
        )


async def test_approving_git_status_covers_git_status_s_not_git_push_or_a_compound(session: sessions.Session) -> None:
    asker = Asker(session, ["approve_for_session"])
    await asker.shell("git status")
    assert asker.asked[0].session_scope == "`git status …`"
    await asker.shell("git status -s")  # covered: not asked
    assert len(asker.asked) == 1
    for line in ("git push", "echo x && rm -rf y", "git status && rm -rf y", "git status > out"):
        with pytest.raises(ToolRejectedError):
            await asker.shell(line)
    assert len(asker.asked) == 5
    state = json.loads(session.state_file.read_text())
    assert state["approval"]["auto_approve_actions"] == ["run command:git status"]


async def test_an_opaque_line_offers_no_session_approval_and_remembers_nothing(session: sessions.Session) -> None:
    asker = Asker(session, ["approve_for_session", "approve"])
    await asker.shell("cat $(whoami)")
    assert asker.asked[0].session_scope is None
    await asker.shell("cat $(whoami)")
    assert len(asker.asked) == 2 and asker.approvals.session_actions == frozenset()


async def test_warnings_always_ask_even_in_yolo_and_are_refused_away_from_keyboard(session: sessions.Session) -> None:
    asker = Asker(session, ["approve_for_session", "approve"])
    asker.approvals.runtime_yolo = True
    scope = path_scope("read file", session.work_dir / ".env")
    await asker.run("ReadFile", scope, warning="holds credentials")
    await asker.run("ReadFile", scope, warning="holds credentials")  # asked again: never remembered
    assert [r.warning for r in asker.asked] == ["holds credentials"] * 2
    assert [r.session_scope for r in asker.asked] == [None, None]
    asker.approvals.runtime_afk = True
    with pytest.raises(PermissionDenied, match="afk"):
        await asker.run("ReadFile", scope, warning="holds credentials")
    assert len(asker.asked) == 2


async def test_reads_inside_the_workspace_run_unless_a_rule_asks(session: sessions.Session) -> None:
    asker = Asker(session, ["approve"], rules='[permissions]\nask = ["ReadFile(private/**)"]\n')
    work = session.work_dir
    await asker.run("ReadFile", path_scope("read", work / "src" / "a.py"), needed=False)
    assert asker.asked == []
    await asker.run("ReadFile", path_scope("read", work / "private" / "b.txt"), needed=False)
    assert len(asker.asked) == 1 and asker.asked[0].session_scope is None


async def test_rules_deny_ask_and_allow(session: sessions.Session) -> None:
    rules = '[permissions]\nallow = ["Shell(npm test)"]\nask = ["Shell(git push:*)"]\ndeny = ["Shell(rm:*)"]\n'
    asker = Asker(session, ["approve_for_session", "approve"], rules=rules)
    with pytest.raises(PermissionDenied, match=r"`Shell\(rm:\*\)`"):
        await asker.shell("rm -rf build")
    await asker.shell("npm test")  # allowed: not asked
    assert asker.asked == []
    asker.approvals.runtime_yolo = True
    await asker.shell("git push origin")  # an ask rule asks even in yolo
    await asker.shell("git push origin")  # ... and is never remembered
    assert len(asker.asked) == 2 and asker.asked[0].session_scope is None
    with pytest.raises(PermissionDenied):
        await asker.shell("echo ok && rm -rf /")  # deny wins in yolo too


async def test_approve_for_session_settles_pending_requests_it_covers(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)

    async def shell(line: str) -> None:
        await approvals.request(
            tool_call_id=line, sender="Shell", action="run command", description=line, display=[],
            scope=command_scope("run command", line, session.work_dir, {}),
        )

    tasks = {line: asyncio.create_task(shell(line)) for line in ("git log", "git log --stat", "git push")}
    for _ in range(100):
        if len([m for m in sent if isinstance(m, ApprovalRequest)]) == 3:
            break
        await asyncio.sleep(0.01)
    first = next(m for m in sent if isinstance(m, ApprovalRequest) and m.tool_call_id == "git log")
    first.resolve("approve_for_session")
    await asyncio.wait_for(asyncio.gather(tasks["git log"], tasks["git log --stat"]), 1)
    assert not tasks["git push"].done()  # `git push` was not what the card showed
    tasks["git push"].cancel()


# --------------------------------------------------------------------------- asking, answering, remembering


def state_on_disk(session: sessions.Session) -> dict[str, Any]:
    return json.loads(session.state_file.read_text(encoding="utf-8"))


async def ask(approvals: Approvals, action: str = "run command", call_id: str = "tc-1") -> None:
    await approvals.request(
        tool_call_id=call_id,
        sender="Shell",
        action=action,
        description=f"Run `{call_id}`",
        display=[ShellDisplayBlock(language="bash", command="ls")],
    )


async def next_request(sent: list[Any], count: int = 1) -> list[ApprovalRequest]:
    for _ in range(200):
        requests = [m for m in sent if isinstance(m, ApprovalRequest)]
        if len(requests) >= count:
            return requests
        await asyncio.sleep(0.005)
    raise AssertionError(f"expected {count} approval requests, got {sent}")


async def test_yolo_and_runtime_yolo_ask_nobody(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    approvals.runtime_yolo = True
    await asyncio.wait_for(ask(approvals), 1)
    assert sent == [] and approvals.yolo
    assert state_on_disk(session)["approval"]["yolo"] is False  # runtime yolo is not persisted

    approvals.set_yolo(False)
    assert not approvals.yolo and not approvals.runtime_yolo
    approvals.set_yolo(True)
    assert state_on_disk(session)["approval"]["yolo"] is True
    fresh = Approvals(sessions.find(session.work_dir, session.id), sent.append)  # type: ignore[arg-type]
    assert fresh.yolo
    await asyncio.wait_for(ask(fresh), 1)
    assert sent == []


async def test_approve_sends_request_then_response(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    approvals.turn_id = "turn-7"
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    assert (request.tool_call_id, request.sender, request.action, request.source_kind, request.source_id) == (
        "tc-1", "Shell", "run command", "foreground_turn", "turn-7",
    )
    assert request.display == [ShellDisplayBlock(language="bash", command="ls")]
    assert approvals.pending == [request]
    request.resolve(ApprovalResponse(request_id="whatever", response="approve"))
    await asyncio.wait_for(task, 1)
    assert sent[1] == ApprovalResponse(request_id=request.id, response="approve")  # id normalized
    assert approvals.pending == []
    assert state_on_disk(session)["approval"]["auto_approve_actions"] == []


async def test_approve_for_session_persists_and_settles_pending_requests_with_the_same_action(
    session: sessions.Session,
) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    first = asyncio.create_task(ask(approvals, call_id="a"))
    second = asyncio.create_task(ask(approvals, call_id="b"))
    other = asyncio.create_task(ask(approvals, action="edit file", call_id="c"))
    requests = await next_request(sent, 3)
    by_call = {r.tool_call_id: r for r in requests}
    by_call["a"].resolve("approve_for_session")
    await asyncio.wait_for(asyncio.gather(first, second), 1)
    assert not other.done()  # a different action still waits
    assert state_on_disk(session)["approval"]["auto_approve_actions"] == ["run command"]
    responses = {m.request_id: m.response for m in sent if isinstance(m, ApprovalResponse)}
    assert responses == {by_call["a"].id: "approve_for_session", by_call["b"].id: "approve"}
    assert approvals.pending == [by_call["c"]]
    # later requests for the action are approved without asking
    before = len(sent)
    await asyncio.wait_for(ask(approvals, call_id="d"), 1)
    assert len(sent) == before
    # and so are those of a new process on the same session
    reopened = Approvals(sessions.find(session.work_dir, session.id), [].append)  # type: ignore[arg-type]
    assert reopened.session_actions == {"run command"}
    by_call["c"].resolve("reject")
    with pytest.raises(ToolRejectedError):
        await asyncio.wait_for(other, 1)


@pytest.mark.parametrize(
    ("answer", "feedback"),
    [
        ("reject", None),
        (ApprovalResponse(request_id="x", response="reject"), None),
        (ApprovalResponse(request_id="x", response="reject", feedback="use ls"), "use ls"),
        ({"response": "reject", "feedback": "not now"}, "not now"),
        ({"response": "reject", "feedback": ""}, None),
    ],
)
async def test_reject_raises_with_the_feedback(session: sessions.Session, answer: Any, feedback: str | None) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve(answer)
    with pytest.raises(ToolRejectedError) as info:
        await asyncio.wait_for(task, 1)
    assert info.value.feedback == feedback
    assert isinstance(sent[-1], ApprovalResponse) and sent[-1].response == "reject"
    assert sent[-1].request_id == request.id


@pytest.mark.parametrize(
    "garbled", [None, 42, "yes", "APPROVE", {"response": "maybe"}, {"decision": "approve"}, ["approve"], object()]
)
async def test_garbled_answers_are_rejections(session: sessions.Session, garbled: Any) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve(garbled)
    with pytest.raises(ToolRejectedError):
        await asyncio.wait_for(task, 1)
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="reject")


async def test_dict_answer_approves(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    request.resolve({"request_id": "ignored", "response": "approve"})
    await asyncio.wait_for(task, 1)
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="approve")


async def test_cancellation_while_waiting_settles_the_request_as_rejected(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    task = asyncio.create_task(ask(approvals))
    (request,) = await next_request(sent)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert request.resolved
    assert (await request.wait()) == ApprovalResponse(request_id=request.id, response="reject")
    assert sent[-1] == ApprovalResponse(request_id=request.id, response="reject")
    assert approvals.pending == []
    assert request.resolve("approve") is False  # a late client answer changes nothing


async def test_reject_pending(session: sessions.Session) -> None:
    sent: list[Any] = []
    approvals = Approvals(session, sent.append)
    tasks = [asyncio.create_task(ask(approvals, call_id=c)) for c in ("a", "b")]
    await next_request(sent, 2)
    approvals.reject_pending()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 1)
    assert all(isinstance(r, ToolRejectedError) and r.feedback is None for r in results)
    assert approvals.pending == []
