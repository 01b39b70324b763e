"""`kimi acp`: the multi-session ACP agent (the SDK's `Agent` protocol).

Each session has its own work dir, context, prompt lock and KAOS; nothing is process-global
(no chdir). Sessions are gated on a usable model configuration, which is re-read from
`config.toml` whenever a session is opened, so a `kimi login` run while the IDE is open works
without a restart. Handlers return plain dicts (the SDK sends them as they are).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ... import sessions
from ...config import LoadedConfig, load_config, resolve_model
from ...core.errors import SessionBusy, SessionDeleted
from ...core.session_lock import TurnLock
from ...errors import AgentFileError, ConfigError
from ...front_end import FrontEnd
from ...root_core import build_root_core
from ...util.fs import copy_private
from ...util.share_dir import mcp_file_may_list_servers
from . import children, questions, session_admin
from .errors import (
    auth_required,
    internal_error,
    invalid_params,
    resource_not_found,
    session_busy,
    session_not_found,
)
from .handshake import API_KEY_METHOD_ID, LOGIN_METHOD_ID, auth_methods, initialize_result
from .kaos import AcpKaos, ClientCapabilities
from .options import apply_option
from .session import AcpSession
from .steering import METHOD as STEERING_METHOD
from .steering import parse_steering, steer
from .system_prompt import parse_system_prompt
from .transport import StdioTransport

if TYPE_CHECKING:
    from ...mcp.config import ResolvedServers

log = logging.getLogger(__name__)
LIST_PAGE_SIZE = 50
MCP_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
SESSION_METHODS = MCP_METHODS  # the lifecycle requests that take `additionalDirectories` and `systemPrompt` too
# The request's `systemPrompt`, read by the guard's check (the SDK drops the field) in the task that
# then runs the handler; None: the request has none, and the session keeps what it has.
_SYSTEM_PROMPT: ContextVar[sessions.ClientSystemPrompt | None] = ContextVar("acp_system_prompt", default=None)


class AcpServer:
    def __init__(self, transport: StdioTransport, initialize_params: dict[str, Any] | None = None) -> None:
        self.transport = transport
        self.connection: Any = None
        self.client_capabilities_raw: dict[str, Any] = {}
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self.sandbox_mode: str | None = None  # `kimi acp --sandbox`: for sessions that chose none themselves
        self._raw_capabilities: Any = None
        if initialize_params is not None:
            self._remember_client(initialize_params.get("clientCapabilities"))

    def on_connect(self, connection: Any) -> None:
        self.connection = connection

    def _remember_client(self, capabilities: Any) -> None:
        raw = capabilities if isinstance(capabilities, dict) else {}
        self.client_capabilities_raw = raw
        self.capabilities = ClientCapabilities.from_dict(raw)

    # ------------------------------------------------------------------ handshake

    def remember_initialize(self, params: dict[str, Any]) -> None:
        """The raw `initialize` params (from guard.py): the SDK's models drop capabilities they do
        not know (e.g. `session.notices`), so the client's own dict is what counts."""
        self._raw_capabilities = params.get("clientCapabilities")

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any) -> dict[str, Any]:
        raw = self._raw_capabilities
        if not isinstance(raw, dict):
            raw = client_capabilities.model_dump(by_alias=True, exclude_none=True) if client_capabilities is not None else {}
        self._remember_client(raw)
        return initialize_result({"protocolVersion": protocol_version, "clientCapabilities": raw})

    async def authenticate(self, method_id: str, **_: Any) -> dict[str, Any]:
        if method_id not in (LOGIN_METHOD_ID, API_KEY_METHOD_ID):
            raise invalid_params("methodId", f"unknown auth method {method_id!r} (available: {LOGIN_METHOD_ID}, {API_KEY_METHOD_ID})")
        self._usable_config()
        return {}

    def _usable_config(self) -> LoadedConfig:
        """The current config if it names a usable model; otherwise the auth-required error."""
        try:
            loaded = load_config()
        except ConfigError as exc:
            raise internal_error("Invalid configuration", str(exc)) from None
        try:
            resolved = resolve_model(loaded.config)
        except ConfigError:
            resolved = None
        if resolved is None or not resolved.usable:
            raise auth_required("No usable model is configured.", auth_methods(self.client_capabilities_raw))
        if resolved.provider.oauth is not None and not resolved.provider.api_key.get_secret_value():
            from ...auth.account import login_status

            status = login_status(resolved.provider.oauth)
            if not status.signed_in:
                reason = f"Model {resolved.alias!r} uses your Kimi account, which is {status.detail}."
                raise auth_required(reason, auth_methods(self.client_capabilities_raw))
        return loaded

    async def logout(self) -> dict[str, Any]:
        """`logout` (the IDE's sign-out): forget the Kimi account's tokens and its config entries.

        Open sessions notice on their next request (their token source sees the file gone) and
        answer `auth_required`; nothing else about them changes."""
        from ...auth.sign_out import sign_out

        try:
            result = await asyncio.to_thread(sign_out)
        except OSError as exc:
            raise internal_error("Cannot sign out", exc.strerror or str(exc)) from None
        log.info("logout: %s%s", "login removed" if result.removed_login else "no login stored", f"; {result.config_note}" if result.config_note else "")
        return {}

    # ------------------------------------------------------------------ session lifecycle

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, additional_directories: list[str] | None = None, **_: Any
    ) -> dict[str, Any]:
        loaded = self._usable_config()
        work_dir = _work_dir(cwd)
        servers = _mcp_servers(mcp_servers)
        dirs = _extra_dirs(additional_directories)
        session = sessions.create(work_dir)
        _keep_system_prompt(session)
        acp_session = self._open(session, loaded, servers, dirs)
        return self._opened(acp_session, {"sessionId": session.id})

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: list[str] | None = None, **_: Any
    ) -> dict[str, Any]:
        acp_session = await self._reopen(session_id, cwd, mcp_servers, additional_directories)
        acp_session.replay()
        return self._opened(acp_session, {})

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, additional_directories: list[str] | None = None, **_: Any
    ) -> dict[str, Any]:
        acp_session = await self._reopen(session_id, cwd, mcp_servers, additional_directories)
        return self._opened(acp_session, {})

    async def _reopen(
        self, session_id: str, cwd: str, mcp_servers: Any, additional_directories: list[str] | None
    ) -> AcpSession:
        """`session/load` and `session/resume`: the session open in this server (opened now if it
        is not), with this request's MCP servers and the complete list of extra dirs (ACP)."""
        loaded = self._usable_config()
        servers = _mcp_servers(mcp_servers)
        dirs = _extra_dirs(additional_directories)
        acp_session = self._get_or_open(session_id, cwd, loaded, servers, dirs)
        _keep_system_prompt(acp_session.core.session)
        await acp_session.use_mcp_servers(servers)
        acp_session.core.controls.set_extra_dirs(dirs)
        return acp_session

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, additional_directories: list[str] | None = None, **_: Any
    ) -> dict[str, Any]:
        loaded = self._usable_config()
        servers = _mcp_servers(mcp_servers)
        dirs = _extra_dirs(additional_directories)
        source = self.sessions.get(session_id)
        if source is not None:
            source.core.recorder.flush()
            original = source.core.session
        else:
            original = _find_session(session_id, cwd)
        fork = sessions.create(original.work_dir)
        for name in ("context.jsonl", "wire.jsonl"):
            src = original.dir / name
            if src.exists():
                copy_private(src, fork.dir / name)  # 0600, as the session's own files
        fork.state = original.state.model_copy(deep=True)
        title = original.state.custom_title or original.title()
        fork.state.custom_title = f"{title} (fork)" if title != "Untitled" else None
        fork.save_state()
        _keep_system_prompt(fork)  # the source's, unless the request gives its own
        acp_session = self._open(fork, loaded, servers, dirs)
        return self._opened(acp_session, {"sessionId": fork.id})

    async def close_session(self, session_id: str, **_: Any) -> dict[str, Any]:
        acp_session = self.sessions.pop(session_id, None)
        if acp_session is None:
            if sessions.find_by_id(session_id) is None:
                raise session_not_found(session_id)
            return {}
        await acp_session.close()
        return {}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """`session/delete` (routed by guard.py: the SDK 0.12.1 has no route for it).

        Deleting takes the session's turn lock, so a turn running in another process is never cut
        off (its writers would find the folder gone): that is refused, naming the process."""
        acp_session = self.sessions.get(session_id)
        stored = acp_session.core.session if acp_session is not None else sessions.find_by_id(session_id)
        if stored is None or not stored.dir.is_dir():
            raise session_not_found(session_id)
        lock = TurnLock(stored.dir)
        try:
            lock.acquire()
        except SessionBusy as busy:
            if acp_session is None or busy.holder != os.getpid():
                raise _delete_busy(busy.holder) from None
            self.sessions.pop(session_id, None)
            await acp_session.close()  # our own turn: ended first; its prompt answers `cancelled`
            acp_session = None
            try:
                lock.acquire()
            except SessionBusy as still:
                raise _delete_busy(still.holder) from None
        except SessionDeleted:
            raise session_not_found(session_id) from None
        try:
            self.sessions.pop(session_id, None)
            if acp_session is not None:
                await acp_session.close()
            if sys.platform == "win32":  # pragma: no cover - a folder with an open file cannot be renamed there
                lock.release()
            sessions.delete(stored)
        except OSError as exc:
            raise internal_error("Could not delete the session", exc.strerror or str(exc)) from None
        finally:
            lock.release()
        return {}

    async def set_session_title(self, session_id: str, title: str) -> dict[str, Any]:
        """`session/set_title` (routed by guard.py): stored before the answer, never replaced by a
        generated title."""
        try:
            return session_admin.set_title(self.sessions, session_id, title)
        except OSError as exc:
            raise internal_error("Could not store the title", exc.strerror or str(exc)) from None

    async def session_status(self, session_id: str) -> dict[str, Any]:
        """`session/status` (routed by guard.py): open here, or saved; no side effects."""
        return session_admin.status(self.sessions, session_id)

    async def archive_session(self, session_id: str) -> dict[str, Any]:
        """`session/archive` (routed by guard.py): an open session is closed first, as `session/close`
        does (its running turn's prompt answers `cancelled`), then hidden from default listings."""
        stored = session_admin.stored(self.sessions, session_id)
        acp_session = self.sessions.pop(session_id, None)
        if acp_session is not None:
            await acp_session.close()
        return self._mark_archived(stored, True)

    async def unarchive_session(self, session_id: str) -> dict[str, Any]:
        """`session/unarchive` (routed by guard.py): listed by default again; nothing is opened."""
        return self._mark_archived(session_admin.stored(self.sessions, session_id), False)

    @staticmethod
    def _mark_archived(stored: sessions.Session, archived: bool) -> dict[str, Any]:
        try:
            stored.set_archived(archived)
        except OSError as exc:
            if not stored.dir.is_dir():  # deleted meanwhile
                raise resource_not_found(stored.id) from None
            raise internal_error("Could not change the archive state", exc.strerror or str(exc)) from None
        return {}

    def check_session_params(self, method: str, params: dict[str, Any]) -> None:
        """What the SDK would silently repair: invalid `mcpServers` entries are dropped by it."""
        if method in MCP_METHODS and "mcpServers" in params:
            _mcp_servers_checked(params["mcpServers"])
        if method in SESSION_METHODS and params.get("additionalDirectories") is not None:
            _extra_dirs(params["additionalDirectories"])  # the SDK would drop bad entries silently
        if method in SESSION_METHODS:
            _SYSTEM_PROMPT.set(parse_system_prompt(params.get("systemPrompt")))  # -32602 before any session
        if method == "session/list":
            session_admin.remember_archive_filter(params.get("archived"))  # the SDK drops it
        if children.subagents_supported(self.client_capabilities_raw):
            children.refuse_child_request(method, params)  # a child session takes session/cancel only

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> dict[str, Any]:
        found = sessions.list_sessions(cwd) if cwd is not None else sessions.list_all_sessions()
        found = session_admin.archive_filtered(found)
        start = _decode_cursor(cursor)
        page = found[start : start + LIST_PAGE_SIZE]
        result: dict[str, Any] = {"sessions": [_session_info(s) for s in page]}
        if start + LIST_PAGE_SIZE < len(found):
            result["nextCursor"] = _encode_cursor(start + LIST_PAGE_SIZE)
        return result

    def _open(
        self,
        session: sessions.Session,
        loaded: LoadedConfig,
        servers: ResolvedServers | None = None,
        extra_dirs: list[Path] | None = None,
    ) -> AcpSession:
        kaos = AcpKaos(self.connection, session.id, self.capabilities)
        try:
            # the config's agent_file, skills, default_yolo; [[hooks]] (a block shows as a failed
            # tool card or as the agent's reply) and the Agent tool
            front_end = FrontEnd(questions=questions.question_support(self.client_capabilities_raw), sandbox=self.sandbox_mode)
            core = build_root_core(session, loaded, kaos, front_end=front_end, extra_dirs=extra_dirs or ())
        except AgentFileError as exc:
            raise internal_error("Invalid configuration", str(exc)) from None
        kaos.workspace = lambda: [core.work_dir, *core.workspace_dirs()]  # where refused writes may not go to disk
        acp_session = AcpSession(self, core)
        kaos.on_terminal = acp_session.on_terminal
        if acp_session.children is not None:  # a subagent's file and terminal calls name its child session
            kaos.session_of = acp_session.client_session
        if servers is not None:
            from ...mcp.config import McpConfigError

            try:
                acp_session.attach_mcp(servers)
            except McpConfigError as exc:  # a bad [mcp.client] in config.toml
                raise internal_error("Invalid configuration", str(exc)) from None
        self.sessions[session.id] = acp_session
        return acp_session

    def _get_or_open(
        self,
        session_id: str,
        cwd: str | None,
        loaded: LoadedConfig | None = None,
        servers: ResolvedServers | None = None,
        extra_dirs: list[Path] | None = None,
    ) -> AcpSession:
        """The open session, or the one on disk opened now (no await inside: no race to open twice)."""
        existing = self.sessions.get(session_id)
        if existing is not None:
            return existing
        session = _find_session(session_id, cwd)
        if servers is None:
            servers = _mcp_servers(None)  # e.g. a prompt reopening a closed session: mcp.json's
        return self._open(session, loaded or self._usable_config(), servers, extra_dirs)

    def _opened(self, acp_session: AcpSession, result: dict[str, Any]) -> dict[str, Any]:
        """Add modes and options to a response; commands follow once the response is out."""
        result.update(acp_session.settings())
        asyncio.get_running_loop().call_soon(acp_session.send_available_commands)
        return result

    # ------------------------------------------------------------------ modes and options

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> dict[str, Any]:
        acp_session = self._session(session_id)
        try:
            acp_session.client_sets(lambda: acp_session.core.controls.set_mode(mode_id))
        except ConfigError as exc:  # SettingError: the controls' words
            raise invalid_params("modeId", str(exc)) from None
        return {}

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> dict[str, Any]:
        acp_session = self._session(session_id)
        try:
            options = acp_session.client_sets(lambda: apply_option(acp_session.core, config_id, value))
        except ConfigError as exc:  # OptionError, or the controls' SettingError
            raise invalid_params("value", str(exc)) from None
        return {"configOptions": options}

    # ------------------------------------------------------------------ prompts

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> dict[str, Any]:
        acp_session = self.sessions.get(session_id)
        if acp_session is None:
            acp_session = self._get_or_open(session_id, None)  # a closed session comes back on demand
        return await acp_session.prompt(prompt)

    async def cancel(self, session_id: str, **_: Any) -> None:
        acp_session = self.sessions.get(session_id)
        if acp_session is not None:
            acp_session.cancel()
        else:  # a subagent's child session: its work only (children.py)
            await children.cancel_child(self.sessions, session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == STEERING_METHOD:
            request = parse_steering(params)
            acp_session = self.sessions.get(request.session_id) or self._get_or_open(request.session_id, None)
            return steer(acp_session, request)
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignoring extension notification _%s", method)

    # ------------------------------------------------------------------ helpers

    def _session(self, session_id: str) -> AcpSession:
        acp_session = self.sessions.get(session_id)
        if acp_session is None:
            raise session_not_found(session_id)
        return acp_session

    async def shutdown(self) -> None:
        """stdin closed or a signal: end every turn, kill what they started, flush the files."""
        open_sessions = list(self.sessions.values())
        self.sessions.clear()
        for acp_session in open_sessions:
            acp_session.cancel()
        if open_sessions:
            await asyncio.gather(*(s.close() for s in open_sessions), return_exceptions=True)
        manager = sys.modules.get("kimi_acp.mcp.manager")  # loaded only if a session had servers
        if manager is not None:
            await manager.close_all()


def _keep_system_prompt(session: sessions.Session) -> None:
    """The request's `systemPrompt` becomes the session's (state.json); none keeps the stored one."""
    prompt = _SYSTEM_PROMPT.get()
    if prompt is not None and prompt != session.state.system_prompt:
        session.state.system_prompt = prompt
        session.save_state()


def _work_dir(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid_params("cwd", f"must be an absolute path, got {cwd!r}")
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):  # e.g. a NUL byte or an unencodable name
        is_dir = False
    if not is_dir:
        raise invalid_params("cwd", f"{cwd} is not an existing directory")
    return path


def _extra_dirs(raw: Any) -> list[Path]:
    """`additionalDirectories`: absolute paths of existing directories (-32602 naming a bad one)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise invalid_params("additionalDirectories", "must be a list of absolute directory paths")
    dirs: list[Path] = []
    for entry in raw:
        if not isinstance(entry, str) or not entry:
            raise invalid_params("additionalDirectories", f"each entry must be a path string, got {entry!r}")
        path = Path(entry)
        if not path.is_absolute():
            raise invalid_params("additionalDirectories", f"must be absolute paths, got {entry!r}")
        try:
            is_dir = path.is_dir()
        except (OSError, ValueError):
            is_dir = False
        if not is_dir:
            raise invalid_params("additionalDirectories", f"{entry} is not an existing directory")
        if path not in dirs:
            dirs.append(path)
    return dirs


def _session_info(session: sessions.Session) -> dict[str, Any]:
    """A `session/list` entry; the directories added with /add-dir are the session's own."""
    info: dict[str, Any] = {
        "sessionId": session.id,
        "cwd": str(session.work_dir),
        "title": session.title(),
        "updatedAt": sessions.iso_time(session.updated_at()),
        "archived": session.is_archived(),  # on every entry: `sessionCapabilities.archive` is advertised
    }
    if session.state.additional_dirs:
        info["additionalDirectories"] = [str(d) for d in session.state.additional_dirs]
    return info


def _find_session(session_id: str, cwd: str | None) -> sessions.Session:
    found = sessions.find(cwd, session_id) if cwd and Path(cwd).is_absolute() else None
    found = found or sessions.find_by_id(session_id)
    if found is None:
        raise session_not_found(session_id)
    return found


def _mcp_servers_checked(raw: Any) -> None:
    """The client's `mcpServers` as sent: a bad entry is -32602 naming it (the SDK would drop it)."""
    if raw is None or raw == []:
        return
    from ...mcp.config import McpConfigError, parse_acp_servers

    try:
        parse_acp_servers(raw)
    except McpConfigError as exc:
        raise RequestError(-32602, f"Invalid params: {exc}", {"details": f"Invalid params: {exc}", "mcpServers": str(exc)}) from None


def _mcp_servers(mcp_servers: Any) -> ResolvedServers | None:
    """The session's servers: the client's (already checked by the guard) over mcp.json's; None
    when there are none anywhere, so a session without MCP never loads the MCP layer."""
    if not mcp_servers and not mcp_file_may_list_servers():
        return None
    from ...mcp.config import McpConfigError, resolve_servers

    try:
        return resolve_servers(session=mcp_servers)
    except McpConfigError as exc:
        raise RequestError(-32602, f"Invalid params: {exc}", {"details": f"Invalid params: {exc}", "mcpServers": str(exc)}) from None


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _delete_busy(holder: int | None) -> RequestError:
    """`session/delete` refused: another process is running a turn of the session."""
    where = f"another kimi process (pid {holder})" if holder else "another kimi process"
    message = f"Cannot delete this session: it is running a turn in {where}. Wait for that turn to end, then delete it."
    return session_busy(message, holder)


def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        kind, _, value = text.partition(":")
        if kind == "offset" and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise invalid_params("cursor", "not a cursor this server returned (start again without one)")
