"""An ACP test client on the official Python SDK, driving a real `kimi acp` subprocess.

It records every raw message in both directions and validates each message the agent sends
against the ACP JSON Schema (unstable schema always, stable schema where the type is stable).
It can act as an editor: serve `fs/*` from in-memory buffers and run `terminal/*` commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "acp_schema" / "v1"  # committed copy, see its README
UNSTABLE, STABLE = "schema.unstable.json", "schema.json"

# Which schema definition validates the result of each agent method.
RESPONSE_DEFS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/resume": "ResumeSessionResponse",
    "session/fork": "ForkSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/delete": "DeleteSessionResponse",
    "session/set_title": "SetSessionTitleResponse",
    "session/status": "SessionStatusResponse",
    "session/archive": "ArchiveSessionResponse",
    "session/unarchive": "UnarchiveSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
    "logout": "LogoutResponse",
    "_session/steering": "ExtResponse",  # an extension method: the schema leaves its result open
}
# Which definition validates the params of each message the agent sends.
REQUEST_DEFS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
    "elicitation/create": "CreateElicitationRequest",
    # Protocol-level (`x-side: protocol` in the schema): either side may send it.
    "$/cancel_request": "CancelRequestNotification",
}


class Schemas:
    """Both ACP schema files of one directory, loaded at once: a missing or unreadable file raises here.

    The unstable schema is a superset of the stable one, so every definition must be in it (a name
    that is not is an error, not a silent pass); the stable schema also checks the types it has.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.documents: dict[str, dict[str, Any]] = {}
        for name in (UNSTABLE, STABLE):
            path = directory / name
            try:
                self.documents[name] = json.loads(path.read_text())
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"ACP schema not found: {path} (the tests' copy lives in tests/acp_schema/v1)"
                ) from None
        self._validators: dict[tuple[str, str], Any] = {}
        self._update_kinds: dict[str, frozenset[str]] = {}

    def _validator(self, schema_file: str, definition: str) -> Any:
        key = (schema_file, definition)
        if key not in self._validators:
            import jsonschema

            schema = self.documents[schema_file]
            if definition not in schema["$defs"]:
                if schema_file == UNSTABLE:
                    raise KeyError(f"{definition} is not defined in {self.directory / UNSTABLE}")
                self._validators[key] = None
            else:
                sub = {"$schema": schema.get("$schema"), "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
                self._validators[key] = jsonschema.Draft202012Validator(sub)
        return self._validators[key]

    def validate(self, definition: str, value: Any) -> list[str]:
        """Errors of `value` against `definition` in the unstable schema and (when defined) the stable
        one; a session update of a kind only the unstable schema has (`plan_update`, ...) is checked
        against the unstable schema alone."""
        problems = []
        for schema_file in (UNSTABLE, STABLE):
            if schema_file == STABLE and not self._stable_kind(definition, value):
                continue
            validator = self._validator(schema_file, definition)
            if validator is None:
                continue
            for error in validator.iter_errors(value):
                problems.append(f"{schema_file}:{definition}: {error.message} at {list(error.absolute_path)}")
                break
        return problems

    def _stable_kind(self, definition: str, value: Any) -> bool:
        """False for a `session/update` whose `sessionUpdate` the stable schema does not define."""
        if definition != "SessionNotification" or not isinstance(value, dict) or not isinstance(value.get("update"), dict):
            return True
        kinds = self._update_kinds.get(STABLE)
        if kinds is None:
            variants = self.documents[STABLE]["$defs"]["SessionUpdate"]["oneOf"]
            kinds = self._update_kinds[STABLE] = frozenset(v["properties"]["sessionUpdate"]["const"] for v in variants)
        return value["update"].get("sessionUpdate") in kinds


@cache
def _load(directory: Path) -> Schemas:
    return Schemas(directory)


def load_schemas(directory: Path | None = None) -> Schemas:
    """The schemas of `directory` (default `SCHEMA_DIR`, read when called), loaded once per directory."""
    return _load(directory or SCHEMA_DIR)


@dataclass
class Recorder:
    """Every raw message of the connection, plus schema violations of the agent's messages.

    The SDK calls observers inside `try/except Exception` and only logs what they raise, so
    `observe` never relies on raising: it records its own failures in `errors`, and `check()`
    (called by `spawn_acp` at exit) fails the test on any error or violation. The schemas are
    loaded when the recorder is made, so a missing schema fails before any process starts.
    """

    incoming: list[dict[str, Any]] = field(default_factory=list)
    outgoing: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # exceptions raised while checking a message
    validated: int = 0  # messages checked against a schema definition
    schemas: Schemas = field(default_factory=load_schemas)
    _methods: dict[Any, str] = field(default_factory=dict)
    _unmatched: dict[Any, dict[str, Any]] = field(default_factory=dict)  # responses seen before their request

    def observe(self, event: StreamEvent) -> None:
        try:
            self._observe(event)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc} (while checking {json.dumps(event.message)[:500]})")
            raise  # the SDK logs it too

    def _observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.OUTGOING:
            self.outgoing.append(message)
            if "method" in message and "id" in message:
                self._methods[message["id"]] = message["method"]
                if message["id"] in self._unmatched:  # the answer overtook our record of the request
                    self._check_response(self._unmatched.pop(message["id"]))
            return
        self.incoming.append(message)
        if "method" in message:
            definition = REQUEST_DEFS.get(message["method"])
            if definition is None:
                self.violations.append(f"unexpected method from agent: {message['method']}")
            else:
                self.violations.extend(self.schemas.validate(definition, message.get("params")))
                self.validated += 1
        elif "id" in message:
            if message["id"] in self._methods:
                self._check_response(message)
            else:
                self._unmatched[message["id"]] = message
        else:
            self.violations.append(f"neither a request, a notification nor a response: {message}")

    def _check_response(self, message: dict[str, Any]) -> None:
        method = self._methods[message["id"]]
        if "error" in message:
            error = message["error"]
            if not (isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)):
                self.violations.append(f"malformed error for {method}: {error}")
        elif method in RESPONSE_DEFS:
            self.violations.extend(self.schemas.validate(RESPONSE_DEFS[method], message.get("result")))
        else:
            self.violations.append(f"no schema definition for the result of {method} (add it to RESPONSE_DEFS)")
            return
        self.validated += 1

    def problems(self) -> list[str]:
        unmatched = [f"response to a request never sent: {m}" for m in self._unmatched.values()]
        return [*(f"error while validating: {e}" for e in self.errors), *self.violations, *unmatched]

    def check(self) -> None:
        """Fail (AssertionError) on any schema violation or any error raised while validating."""
        problems = self.problems()
        assert not problems, "ACP schema check failed:\n" + "\n".join(problems)

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.incoming
            if m.get("method") == "session/update" and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.incoming if m.get("method") == method]


PermissionPolicy = Callable[[dict[str, Any]], Any]  # returns an option id, "cancelled", or an awaitable
# Gets {"message", "mode"}; returns the response dict ({"action": "accept", "content": {...}}) or an awaitable.
ElicitationPolicy = Callable[[dict[str, Any]], Any]


class EditorClient(acp.Client):
    """The client side: permission answers, editor buffers (fs) and terminals, all configurable."""

    def __init__(self, recorder: Recorder, *, fs: bool = False, terminal: bool = False, elicitation: bool = False) -> None:
        self.recorder = recorder
        self.fs = fs
        self.terminal = terminal
        self.elicitation = elicitation  # advertise form elicitation
        self.elicitation_policy: ElicitationPolicy = lambda request: {"action": "cancel"}
        self.elicitation_requests: list[dict[str, Any]] = []
        self.permission_policy: PermissionPolicy = lambda request: "approve"
        self.permission_requests: list[dict[str, Any]] = []
        self.permission_event = asyncio.Event()
        self.buffers: dict[str, str] = {}  # path -> unsaved editor content
        self.project_root: Path | None = None  # set: reads outside it are refused, as Zed does
        self.refuse_writes_outside = False  # with project_root: writes outside it too, as acpx does
        self.refuse_terminals = False  # terminal/create refused, as acpx does when terminals are denied
        self.fs_reads: list[str] = []
        self.fs_writes: list[tuple[str, str]] = []
        self.terminals: dict[str, dict[str, Any]] = {}
        self.terminal_calls: list[tuple[str, str]] = []
        self.meta: dict[str, Any] = {}  # clientCapabilities._meta, e.g. {"terminal_output": True}
        self.plan = False  # advertise plan operations (clientCapabilities.plan: {})

    # -- permissions
    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> RequestPermissionResponse:
        request = {"options": options, "session_id": session_id, "tool_call": tool_call}
        self.permission_requests.append(request)
        self.permission_event.set()
        answer = self.permission_policy(request)
        if asyncio.iscoroutine(answer) or isinstance(answer, asyncio.Future):
            answer = await answer
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    # -- elicitation (forms)
    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        request = {"message": message, "mode": mode}
        self.elicitation_requests.append(request)
        answer = self.elicitation_policy(request)
        if asyncio.iscoroutine(answer) or isinstance(answer, asyncio.Future):
            answer = await answer
        return answer

    # -- fs
    async def read_text_file(self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        self.fs_reads.append(path)
        if self.project_root is not None and not Path(path).is_relative_to(self.project_root):
            raise acp.RequestError.internal_error({"details": f"{path} is not in the project"})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except FileNotFoundError:
            raise acp.RequestError.resource_not_found(path) from None

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        if self.refuse_writes_outside and self.project_root is not None and not Path(path).is_relative_to(self.project_root):
            raise acp.RequestError.internal_error({"details": "Path is outside allowed cwd subtree"})  # acpx's words
        self.fs_writes.append((path, content))
        self.buffers[path] = content  # lands in the editor buffer, not on disk
        return WriteTextFileResponse()

    # -- terminals: really run the command, like an IDE would
    async def create_terminal(self, command: str, session_id: str, args: list[str] | None = None, cwd: str | None = None,
                              env: Any = None, output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        if self.refuse_terminals:
            raise acp.RequestError.internal_error({"details": "Permission denied for terminal/create"})
        terminal_id = f"term-{uuid.uuid4().hex[:6]}"
        extra = {v.name: v.value for v in env or []}
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env={**os.environ, **extra},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
        record = {"proc": proc, "output": b"", "command": command, "args": args, "cwd": cwd, "released": False,
                  "limit": output_byte_limit, "killed": False}
        record["reader"] = asyncio.create_task(self._pump(record))
        self.terminals[terminal_id] = record
        self.terminal_calls.append(("create", terminal_id))
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _pump(self, record: dict[str, Any]) -> None:
        stream = record["proc"].stdout
        while chunk := await stream.read(4096):
            record["output"] += chunk

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        self.terminal_calls.append(("wait_for_exit", terminal_id))
        record = self.terminals[terminal_id]
        code = await record["proc"].wait()
        await record["reader"]
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None, signal=None if code >= 0 else f"SIG{-code}")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        self.terminal_calls.append(("output", terminal_id))
        record = self.terminals[terminal_id]
        code = record["proc"].returncode
        status = None if code is None else TerminalExitStatus(exit_code=code if code >= 0 else None, signal=None if code >= 0 else f"SIG{-code}")
        return TerminalOutputResponse(output=record["output"].decode(errors="replace"), truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.terminal_calls.append(("kill", terminal_id))
        record = self.terminals[terminal_id]
        record["killed"] = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record["proc"].pid, 9)
        return

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.terminal_calls.append(("release", terminal_id))
        record = self.terminals[terminal_id]
        record["released"] = True
        if record["proc"].returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record["proc"].pid, 9)
        return

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"fs": {"readTextFile": self.fs, "writeTextFile": self.fs}, "terminal": self.terminal}
        if self.elicitation:
            caps["elicitation"] = {"form": {}}
        if self.plan:
            caps["plan"] = {}
        if self.meta:
            caps["_meta"] = self.meta
        return caps


class AgentCalls:
    """The calls a test makes through `conn` (shared by `AcpProcess` and the in-memory server)."""

    conn: Any
    client: EditorClient

    async def initialize(self, **extra: Any) -> Any:
        from acp.schema import ClientCapabilities

        caps = ClientCapabilities.model_validate(self.client.capabilities())
        return await self.conn.initialize(protocol_version=1, client_capabilities=caps, **extra)

    async def new_session(self, cwd: Path) -> Any:
        return await self.conn.new_session(cwd=str(cwd), mcp_servers=[])

    async def prompt(self, session_id: str, text: str) -> Any:
        return await self.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


@dataclass
class AcpProcess(AgentCalls):
    conn: Any
    process: asyncio.subprocess.Process
    client: EditorClient
    recorder: Recorder


@contextlib.asynccontextmanager
async def spawn_acp(
    env: dict[str, str], *, fs: bool = False, terminal: bool = False, elicitation: bool = False, cwd: Path | None = None,
    args: Sequence[str] = (),
) -> AsyncIterator[AcpProcess]:
    """`python -m kimi_acp acp [args]` with an `EditorClient`; every message it sends is schema-checked."""
    recorder = Recorder()
    client = EditorClient(recorder, fs=fs, terminal=terminal, elicitation=elicitation)
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "kimi_acp",
        "acp",
        *args,
        env={"PYTHONFAULTHANDLER": "1", **env},  # a crash prints every thread's stack to stderr
        cwd=str(cwd) if cwd else None,
        transport_kwargs={"limit": 64 * 1024 * 1024},
        observers=[recorder.observe],
        use_unstable_protocol=True,
    ) as (conn, process):
        try:
            yield AcpProcess(conn, process, client, recorder)
        except BaseException as exc:  # the test failed anyway: say what the schema check saw too
            if recorder.problems():
                exc.add_note("ACP schema check:\n" + "\n".join(recorder.problems()))
            raise
    # Every message the agent sent must validate; report them all at once.
    recorder.check()
