"""The glue between the page and the agent: one `Driver` per open session, one queue per page.

Sessions come from the same store as `kimi acp` and `kimi --wire` (kimi_acp/sessions.py), so a
session started in an IDE is listed and can be continued here. A driver owns the session's
AgentCore and turns; every page watching the session gets every Wire message (through its own
PageView). Requests (approvals, questions) wait here until a page answers them over POST.

A page's replay of the history is a list of its own, sent in batches before anything live: only
live notifications count against a page's queue limit, so a session of any length opens. What the
history file does not hold is kept here: the output of a running command (and of one cancelled
since this server started), and the errors of failed turns (in the session's `web-errors.jsonl`,
so they show again after a reload or a restart).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import sessions
from ...config import LoadedConfig
from ...core.agent_core import INTERNAL_SIGNALS, AgentCore, FromUser, ModeChanged, TitleChanged
from ...core.errors import NoTurnInProgress
from ...core.session_controls import SettingError, rename_stored
from ...core.toolset import was_cancelled
from ...core.turn import ModelChanged
from ...errors import SessionError
from ...front_end import FrontEnd
from ...util.fs import open_private
from ...util.session_paths import is_valid_session_id
from ...wire.file import read_wire_file
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    QuestionRequest,
    QuestionResponse,
    Request,
    ToolResult,
    TurnBegin,
    TurnEnd,
)
from .events import PageView, approval_params, notification

if TYPE_CHECKING:
    from ...agent_file import AgentSetup

log = logging.getLogger(__name__)
QUEUE_LIMIT = 10_000  # live notifications a page may fall behind by; then it is dropped (history not counted)
HISTORY_BATCH = 500  # notifications per SSE message of a replay (a JSON-RPC batch)
ERRORS_FILE = "web-errors.jsonl"  # a session's turn errors, beside its wire.jsonl
OUTPUT_FLUSH_S = 0.1  # a running command's output reaches the pages at most this often
OUTPUT_KEEP_CHARS = 200_000  # of a command's output kept for pages that attach later (the tail)
KEPT_OUTPUTS = 20  # cancelled commands whose output is kept for a reload
TITLE_TASKS: set[asyncio.Task[Any]] = set()
UNDO_WHILE_BUSY = "A turn is running: it cannot be undone until it ends. Wait for it, or cancel it first."


class WebError(SessionError):
    """A control the page sent cannot be done now; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class _Raw:
    """A notification made here rather than mapped from a Wire message (status, errors)."""

    data: dict[str, Any]


class Page:
    """One connected page: its replay (sent first, in batches), then a queue of live notifications."""

    def __init__(self) -> None:
        self.view = PageView()
        self.history: list[dict[str, Any]] = []
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.dropped = False

    def replay(self, item: Any) -> None:
        """A notification of the history: not limited (the file is as long as it is)."""
        self.history += [item.data] if isinstance(item, _Raw) else self.view.feed(item, live=False)

    def history_batches(self) -> Iterator[list[dict[str, Any]]]:
        """The replay in JSON-RPC batches, each handed out once (and then forgotten)."""
        history, self.history = self.history, []
        for start in range(0, len(history), HISTORY_BATCH):
            yield history[start : start + HISTORY_BATCH]

    def push(self, item: Any) -> None:
        if self.dropped:
            return
        items = [item.data] if isinstance(item, _Raw) else self.view.feed(item)
        for data in items:
            if self.queue.qsize() >= QUEUE_LIMIT:
                self.dropped = True
                self.queue.put_nowait(None)  # ends the page's stream; it reconnects and replays
                return
            self.queue.put_nowait(data)


class Driver:
    """One session driven from the browser."""

    def __init__(self, core: AgentCore) -> None:
        self.core = core
        self.pages: set[Page] = set()
        self.pending: dict[str, Request[Any]] = {}  # of any kind: approvals, questions, tool calls
        self.turn: asyncio.Task[None] | None = None
        self.output: dict[str, str] = {}  # a running (or cancelled) command's output so far, by tool call id
        self.kept: list[str] = []  # the cancelled ones, oldest first
        self._unsent: dict[str, list[str]] = {}
        self._flush: asyncio.TimerHandle | None = None
        # When each run the pages show began (top-level TurnBegin, from wire.jsonl then live): the
        # undo journal's turns are matched to them by time (see undo_marks).
        self.runs: list[float] = []
        self._depth = 0
        self._undo_marks: dict[str, Any] = {"runs": [], "undone": []}  # as last sent
        core.stream.subscribe(self._on_message)

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def status(self) -> dict[str, Any]:
        core = self.core
        return {
            "session_id": core.session.id,
            "title": core.session.title(),
            "busy": self.busy,
            "plan_mode": core.plan_mode,
            "yolo": core.approvals.yolo,
            "always_ask": core.approvals.always_ask,
            "model": core.controls.current_model() or "",
        }

    def _on_message(self, message: Any) -> None:
        if isinstance(message, (ModeChanged, ModelChanged, TitleChanged)):  # whoever changed it
            self._broadcast(_Raw(notification("Status", self.status())))
            return
        if isinstance(message, INTERNAL_SIGNALS):
            return
        if isinstance(message, Request):
            if isinstance(message, (ApprovalRequest, QuestionRequest)):
                self.pending[message.id] = message
            else:
                message.decline()  # external tools and client hooks are Wire-only
        if isinstance(message, ToolResult) and message.tool_call_id in self.output:
            self._settle_output(message)
        if isinstance(message, TurnBegin):
            self._depth += 1
            if self._depth == 1:
                self.runs.append(time.time())
        self._broadcast(message)
        if isinstance(message, TurnEnd):
            self._depth = max(0, self._depth - 1)
            self.pending = {k: r for k, r in self.pending.items() if not r.resolved}

    # ------------------------------------------------------------------ a running command's output

    def on_output(self, tool_call_id: str, text: str) -> None:
        """The kaos's listener: output arrives in pieces; pages get it batched, every 0.1 s at most."""
        kept = self.output.get(tool_call_id, "") + text
        self.output[tool_call_id] = kept[-OUTPUT_KEEP_CHARS:]
        self._unsent.setdefault(tool_call_id, []).append(text)
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(OUTPUT_FLUSH_S, self._send_output)

    def _send_output(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        self._flush = None
        unsent, self._unsent = self._unsent, {}
        for tool_call_id, parts in unsent.items():
            params = {"tool_call_id": tool_call_id, "text": "".join(parts)[-OUTPUT_KEEP_CHARS:]}
            self._broadcast(_Raw(notification("ToolOutput", params)))

    def _settle_output(self, result: ToolResult) -> None:
        """Finished: the result has the output. Cancelled: what it printed is kept for a reload."""
        self._send_output()
        if not was_cancelled(result.return_value):
            self.output.pop(result.tool_call_id, None)
            return
        self.kept.append(result.tool_call_id)
        for old in self.kept[:-KEPT_OUTPUTS]:
            self.output.pop(old, None)
        self.kept = self.kept[-KEPT_OUTPUTS:]

    # ------------------------------------------------------------------ errors of failed turns

    @property
    def errors_file(self) -> Path:
        return self.core.session.dir / ERRORS_FILE

    def _save_error(self, message: str) -> None:
        if not self.core.session.dir.is_dir():
            return  # deleted meanwhile
        try:
            with open_private(self.errors_file, "a", encoding="utf-8") as f:  # 0600, like wire.jsonl
                f.write(json.dumps({"timestamp": time.time(), "message": message}, ensure_ascii=False) + "\n")
        except OSError as exc:
            log.warning("cannot keep the error of session %s: %s", self.core.session.id, exc)

    def _saved_errors(self) -> list[tuple[float, str]]:
        out = []
        try:
            with open(self.errors_file, encoding="utf-8") as f:
                for line in f:
                    try:
                        data = json.loads(line)
                        out.append((float(data["timestamp"]), str(data["message"])))
                    except (ValueError, KeyError, TypeError):
                        continue
        except OSError:
            pass
        return sorted(out)

    def _broadcast(self, item: Any) -> None:
        for page in list(self.pages):
            page.push(item)

    # ------------------------------------------------------------------ pages

    def attach(self) -> Page:
        """A new page: the session's history first (from wire.jsonl, with the errors of failed
        turns in their place), then live messages.

        Synchronous from reading the file to subscribing, so no message falls in between."""
        page = Page()
        page.replay(_Raw(notification("Reset", self.status())))
        self.core.recorder.flush()
        errors = self._saved_errors()
        runs: list[float] = []
        depth = 0
        for record in read_wire_file(self.core.session.wire_file):
            while errors and errors[0][0] < record.timestamp:
                page.replay(_Raw(notification("Error", {"message": errors.pop(0)[1]})))
            page.replay(record.message)
            if isinstance(record.message, TurnBegin):
                depth += 1
                runs += [record.timestamp] if depth == 1 else []
            elif isinstance(record.message, TurnEnd):
                depth = max(0, depth - 1)
        if not self.busy:
            self.runs, self._depth = runs, depth
        for _, message in errors:
            page.replay(_Raw(notification("Error", {"message": message})))
        for tool_call_id, text in self.output.items():  # running, or cancelled since this server started
            page.replay(_Raw(notification("ToolOutput", {"tool_call_id": tool_call_id, "text": text})))
        for request in self.pending.values():
            if not request.resolved:
                if isinstance(request, ApprovalRequest):
                    page.replay(_Raw(notification("ApprovalRequest", approval_params(request))))
                else:
                    page.replay(_Raw(notification("QuestionRequest", request.model_dump(mode="json"))))
        marks = self.undo_marks()
        if marks["runs"] or marks["undone"]:
            page.replay(_Raw(notification("Undo", marks)))
        page.replay(_Raw(notification("HistoryEnd", self.status())))
        self.pages.add(page)
        return page

    def detach(self, page: Page) -> None:
        self.pages.discard(page)

    # ------------------------------------------------------------------ undo

    def undo_marks(self) -> dict[str, Any]:
        """Which runs the page shows can be undone (and with how many turns: /undo N takes back
        that run's turn and every later one), and which were undone. A journal turn belongs to the
        last run that began before it (core/undo.py records a turn's start after its TurnBegin)."""
        checkpoints = self.core.checkpoints
        if not checkpoints.enabled or self.busy:
            return {"runs": [], "undone": []}
        undoable = [t.seq for t in checkpoints.undoable()]
        marks, undone = [], []
        for record in checkpoints.history():
            run = bisect.bisect_right(self.runs, record.started_at) - 1
            if run < 0:
                continue
            if record.undone:
                undone.append(run)
            elif record.seq in undoable:
                marks.append({"run": run, "turns": undoable.index(record.seq) + 1, "seq": record.seq})
        return {"runs": marks, "undone": undone}

    def _send_undo_marks(self) -> None:
        """After a turn: the pages' Undo controls, when they changed."""
        marks = self.undo_marks()
        if marks != self._undo_marks:
            self._undo_marks = marks
            self._broadcast(_Raw(notification("Undo", marks)))

    async def undo_preview(self, turns: int) -> dict[str, Any]:
        """What undoing the last `turns` turns would do, changing nothing: the page lists it before it acts."""
        from ...core.undo import preview

        if self.busy:
            raise WebError(UNDO_WHILE_BUSY)
        report = await preview(self.core, turns)
        return {"turns": turns, "text": report.text(), **report.payload()}

    def undo(self, turns: int, *, force: bool, seq: int | None) -> None:
        """Run `/undo turns` as a turn of its own (recorded as the other front ends record it).
        `seq`: the newest turn the page saw; if another turn was recorded since, the page must look again."""
        if self.busy:
            raise WebError(UNDO_WHILE_BUSY)
        undoable = self.core.checkpoints.undoable()
        if seq is not None and len(undoable) >= turns and undoable[turns - 1].seq != seq:
            raise WebError("The session changed since the page looked: open the Undo control again.")
        self.prompt(f"/undo {turns}" + (" --force" if force else ""))

    # ------------------------------------------------------------------ controls

    def prompt(self, text: str) -> None:
        if self.busy:
            raise WebError(UNDO_WHILE_BUSY if text.lstrip().startswith("/undo") else "A turn is already running: steer it, or cancel it first.")
        if not text.strip():
            raise WebError("The prompt is empty.", 400)
        self.turn = asyncio.create_task(self._run(text))
        self._broadcast(_Raw(notification("Status", {**self.status(), "busy": True})))

    async def _run(self, text: str) -> None:
        try:
            await self.core.run_turn(FromUser(text))
            sessions.set_last_session_id(self.core.work_dir, self.core.session.id)
            task = asyncio.create_task(self.core.generate_title())  # the model names the session: Status
            TITLE_TASKS.add(task)
            task.add_done_callback(TITLE_TASKS.discard)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # shown on the page (and again after a reload); the server goes on
            log.info("turn failed: %s", exc)
            message = str(exc) or type(exc).__name__
            self._save_error(message)
            self._broadcast(_Raw(notification("Error", {"message": message})))
        finally:
            self.turn = None
            self._broadcast(_Raw(notification("Status", self.status())))
            self._send_undo_marks()

    def steer(self, text: str) -> None:
        if not text.strip():
            raise WebError("The steer text is empty.", 400)
        try:
            self.core.steer(text)
        except NoTurnInProgress as exc:
            raise WebError(str(exc)) from None

    def cancel(self) -> None:
        if not self.core.cancel():
            raise WebError("No turn is running.")

    def answer_approval(self, request_id: str, response: str, feedback: str = "") -> None:
        request = self.pending.get(request_id)
        if not isinstance(request, ApprovalRequest) or request.resolved:
            raise WebError("That approval is no longer waiting for an answer.", 404)
        if response not in ("approve", "approve_for_session", "reject"):
            raise WebError("response must be approve, approve_for_session or reject.", 400)
        request.resolve(ApprovalResponse(request_id=request_id, response=response, feedback=feedback))  # type: ignore[arg-type]
        self.pending.pop(request_id, None)

    def answer_question(self, request_id: str, answers: dict[str, Any]) -> None:
        request = self.pending.get(request_id)
        if not isinstance(request, QuestionRequest) or request.resolved:
            raise WebError("That question is no longer waiting for an answer.", 404)
        request.resolve(QuestionResponse(request_id=request_id, answers=answers))
        self.pending.pop(request_id, None)
        self._broadcast(_Raw(notification("RequestResolved", {"id": request_id, "response": "answered"})))

    # The settings go through the session's controls, which check them and announce a change:
    # every page gets the new Status from that (`_on_message`).

    def rename(self, title: str) -> None:
        with _as_web_error():
            self.core.controls.rename(title)

    def set_plan_mode(self, enabled: bool) -> None:
        self.core.controls.set_plan_mode(enabled)

    def set_always_ask(self, enabled: bool) -> None:
        """Every command asks, read-only ones too (kept in the session's state)."""
        self.core.controls.set_always_ask(enabled)

    def set_model(self, alias: str) -> None:
        if self.busy:
            raise WebError("The model cannot change while a turn is running.")
        with _as_web_error():
            self.core.controls.set_model(alias)

    async def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        for request in list(self.pending.values()):
            request.decline()
        for page in list(self.pages):
            page.queue.put_nowait(None)
        await self.core.close()


class Hub:
    """The sessions of one work dir that pages have opened, each with its driver."""

    def __init__(self, work_dir: Path, loaded: LoadedConfig, *, yolo: bool = False, always_ask: bool = False) -> None:
        self.work_dir = work_dir
        self.loaded = loaded
        self.yolo = yolo
        self.always_ask = always_ask  # --always-ask: for sessions that chose nothing themselves
        self.drivers: dict[str, Driver] = {}

    def list_sessions(self) -> list[dict[str, Any]]:
        listed = {s.id: s for s in sessions.list_sessions(self.work_dir)}
        for session_id, driver in self.drivers.items():  # a new session shows before its first turn
            listed.setdefault(session_id, driver.core.session)
        out = []
        for session in sorted(listed.values(), key=lambda s: s.updated_at(), reverse=True):
            open_driver = self.drivers.get(session.id)
            out.append({
                "id": session.id,
                "title": session.title(),
                "updated_at": session.updated_at(),
                "busy": open_driver.busy if open_driver else False,
            })  # fmt: skip
        return out

    def rename(self, session_id: str, title: str) -> None:
        """A title the user chose; through the session's driver when it has one (pages see it)."""
        if session_id in self.drivers:
            self.drivers[session_id].rename(title)
            return
        with _as_web_error():
            rename_stored(self._find(session_id), title)  # never replaced by a generated one

    async def delete(self, session_id: str) -> None:
        """Remove a session from disk (not while it runs a turn); its open pages' streams end."""
        driver = self.drivers.get(session_id)
        if driver is not None and driver.busy:
            raise WebError("The session is running a turn: cancel it first.")
        session = driver.core.session if driver is not None else self._find(session_id)
        if driver is not None:
            await driver.close()
            del self.drivers[session_id]
        try:
            sessions.delete(session)
        except FileNotFoundError:
            pass  # never written (a new session without a turn) or already gone

    def _find(self, session_id: str) -> sessions.Session:
        if not is_valid_session_id(session_id):
            raise WebError(f"invalid session id {session_id!r}", 404)
        session = sessions.find(self.work_dir, session_id)
        if session is None:
            raise WebError(f"no session {session_id} in {self.work_dir}", 404)
        return session

    def models(self) -> dict[str, Any]:
        config = self.loaded.config
        return {"default": config.default_model or "", "models": sorted(config.models)}

    def new_session(self) -> Driver:
        agent = self._agent()  # a bad agent file is refused before a session is created
        return self._drive(sessions.create(self.work_dir), agent)

    def driver(self, session_id: str) -> Driver:
        if session_id in self.drivers:
            return self.drivers[session_id]
        return self._drive(self._find(session_id), self._agent())

    def _agent(self) -> AgentSetup | None:
        """The config's `agent_file` for the next session (read again each time, like kimi acp)."""
        from ...errors import AgentFileError
        from ...root_core import load_root_agent

        try:
            return load_root_agent(self.loaded)
        except AgentFileError as exc:
            raise WebError(f"Invalid configuration: {exc}", 500) from None

    def _drive(self, session: sessions.Session, agent: AgentSetup | None) -> Driver:
        from ...kaos.local import LocalKaos
        from ...root_core import build_root_core

        # the agent file, skills, [[hooks]] and the Agent tool (its children's messages show as
        # the tool's card), as in every front end; the page shows questions and plan mode
        kaos = LocalKaos()
        front_end = FrontEnd(yolo=self.yolo or None, always_ask=True if self.always_ask else None)
        core = build_root_core(session, self.loaded, kaos, agent=agent, front_end=front_end)
        driver = Driver(core)
        kaos.output_listener = driver.on_output  # a running command's output, live
        self.drivers[session.id] = driver
        return driver

    def end_streams(self) -> None:
        """The server is stopping: end every page's event stream now (they would keep it open)."""
        for driver in self.all():
            for page in list(driver.pages):
                page.queue.put_nowait(None)

    def all(self) -> Iterator[Driver]:
        return iter(list(self.drivers.values()))

    async def close(self) -> None:
        for driver in self.all():
            try:
                await driver.close()
            except Exception:
                log.exception("closing session %s failed", driver.core.session.id)
        self.drivers.clear()


@contextmanager
def _as_web_error() -> Iterator[None]:
    """A setting the session's controls refused: a 400 with their words (the same as every front end's)."""
    try:
        yield
    except SettingError as exc:
        raise WebError(str(exc), 400) from None
