"""Hooks: `[[hooks]]` commands from config.toml and Wire `initialize.hooks` subscriptions, run by
one engine at the points the core names (`core/hook_points.py`).

For an event, every hook whose `matcher` (a regex, searched in the event's target: a tool name, an
error type, …; empty matches all) fits runs, all of them in parallel; identical commands run once.
A config hook is a command run by the user's shell in the session's work dir, its own process
group, the event's JSON payload on stdin. It blocks by exiting with 2 (stderr is the reason) or by
printing a JSON decision (`hookSpecificOutput.permissionDecision: "deny"` with
`permissionDecisionReason`, or a top-level `decision: "block"` with `reason`). A Wire subscription
is asked with a `HookRequest` and blocks by answering `action: "block"`. Anything else — exit 0
without a decision, another exit code, a crash, a timeout, garbled output, no answer — allows, and
is logged ($KIMI_SHARE_DIR/logs). Any block wins. `HookTriggered` and `HookResolved` go out on the
session's stream for both kinds. A hook still running on timeout or cancel is killed with its
whole process group. Payloads never carry the configured API keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config, HookConfig
from .core.agent_core import AgentCore
from .core.hook_points import ALLOW, HOOK_EVENTS, HookVerdict
from .kaos.local import command_env, start_shell_command, user_shell
from .kaos.process_group import DRAIN_AFTER_KILL_S, close_transport, killpg, wait_exit
from .util import secrets as known_secrets
from .wire.types import HookRequest, HookResolved, HookResponse, HookTriggered

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
OUTPUT_LIMIT = 1024 * 1024  # bytes kept of a hook's stdout and of its stderr (the rest is drained)
TERM_GRACE_S = 0.5  # after SIGTERM on timeout, before SIGKILL
PIPE_GRACE_S = 0.2  # after the shell exited, how long a child of it may hold the pipes open
# A hook is somebody else's script: it gets none of the agent's credentials (util/child_env.py,
# through command_env), and its payload and our log lines about it none of the known secrets.
REDACTED = known_secrets.REDACTED
MIN_SECRET_LEN = 6


@dataclass(frozen=True)
class WireSubscription:
    """A Wire client's hook: `initialize.hooks[]` = {id, event, matcher, timeout}."""

    id: str
    event: str
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class _Outcome:
    """One hook's answer; `problem` says why it failed open (logged), empty when it ran fine."""

    blocked: bool = False
    reason: str = ""
    problem: str = ""


class HookEngine:
    """The `HookRunner` of one session (see `core/hook_points.py`)."""

    def __init__(
        self,
        hooks: Iterable[HookConfig],
        *,
        session_id: str,
        cwd: Path,
        send: Callable[[Any], None],
        request: Callable[[HookRequest], Awaitable[Any]],
        secrets: Iterable[str] = (),
    ) -> None:
        """`send` puts events on the session's stream; `request` sends a HookRequest and waits."""
        self._hooks = list(hooks)
        self._subscriptions: list[WireSubscription] = []
        self.session_id = session_id
        self.cwd = cwd
        self._send = send
        self._request = request
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True)
        self._background: set[asyncio.Task[HookVerdict]] = set()
        self._bad_patterns: set[str] = set()

    # ------------------------------------------------------------------ registration

    def subscribe(self, raw: Any) -> list[WireSubscription]:
        """The client's subscriptions (replacing earlier ones); entries that are not valid, or name
        an event that does not exist, are ignored (and logged), as Kimi Code CLI does."""
        subscriptions: list[WireSubscription] = []
        for entry in raw if isinstance(raw, list) else []:
            subscription = _parse_subscription(entry)
            if subscription is None:
                log.warning("ignoring hook subscription %r: needs a string id and a hook event", entry)
                continue
            subscriptions.append(subscription)
        self._subscriptions = subscriptions
        return subscriptions

    def summary(self) -> dict[str, int]:
        """Event -> number of hooks for it (config hooks and Wire subscriptions)."""
        counts: dict[str, int] = {}
        for event in [h.event for h in self._hooks] + [s.event for s in self._subscriptions]:
            counts[event] = counts.get(event, 0) + 1
        return counts

    def info(self) -> dict[str, Any]:
        """The `hooks` field of the Wire `initialize` result."""
        return hooks_info(self.summary())

    # ------------------------------------------------------------------ the HookRunner protocol

    async def run(self, event: str, target: str, payload: dict[str, Any]) -> HookVerdict:
        commands, subscriptions = self._matching(event, target)
        if not commands and not subscriptions:
            return ALLOW
        data = self._payload(event, payload)
        stdin = json.dumps(data, ensure_ascii=False).encode()
        self._send(HookTriggered(event=event, target=target, hook_count=len(commands) + len(subscriptions)))
        started = time.monotonic()
        verdict = HookVerdict("allow", "cancelled")  # what HookResolved says if we are cancelled
        try:
            jobs = [self._run_command(h, event, stdin) for h in commands]
            jobs += [self._ask_client(s, event, target, data) for s in subscriptions]
            outcomes = await asyncio.gather(*jobs)
            verdict = next((HookVerdict("block", o.reason) for o in outcomes if o.blocked), ALLOW)
            return verdict
        finally:
            elapsed = int((time.monotonic() - started) * 1000)
            self._send(
                HookResolved(
                    event=event, target=target, action=verdict.action, reason=verdict.reason, duration_ms=elapsed
                )
            )

    def fire(self, event: str, target: str, payload: dict[str, Any]) -> None:
        commands, subscriptions = self._matching(event, target)
        if not commands and not subscriptions:
            return
        task = asyncio.get_running_loop().create_task(self.run(event, target, payload))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self, *, cancel: bool = False) -> None:
        tasks = list(self._background)
        if not tasks:
            return
        if cancel:
            for task in tasks:
                task.cancel()
        try:
            await asyncio.wait(tasks)  # bounded: every hook has its timeout
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=DRAIN_AFTER_KILL_S + TERM_GRACE_S)
            raise

    # ------------------------------------------------------------------ matching and payloads

    def _matching(self, event: str, target: str) -> tuple[list[HookConfig], list[WireSubscription]]:
        commands: list[HookConfig] = []
        seen: set[str] = set()
        for hook in self._hooks:
            if hook.event == event and hook.command not in seen and self._matches(hook.matcher, target):
                seen.add(hook.command)
                commands.append(hook)
        subscriptions = [
            s for s in self._subscriptions if s.event == event and self._matches(s.matcher, target)
        ]
        return commands, subscriptions

    def _matches(self, pattern: str, value: str) -> bool:
        if not pattern:
            return True
        try:
            return re.search(pattern, value) is not None
        except re.error as exc:
            if pattern not in self._bad_patterns:  # once per pattern, not once per tool call
                self._bad_patterns.add(pattern)
                log.warning("hook matcher %r is not a valid regex (%s); it matches nothing", pattern, exc)
            return False

    def _payload(self, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        data = {"hook_event_name": event, "session_id": self.session_id, "cwd": str(self.cwd), **fields}
        text = json.dumps(data, ensure_ascii=False, default=str)
        clean = self.redact(text)
        return data if clean == text else json.loads(clean)

    def redact(self, text: str) -> str:
        """Without this session's keys, nor any other secret the process knows."""
        return known_secrets.redact(text, self._secrets)

    # ------------------------------------------------------------------ the two kinds of hooks

    async def _run_command(self, hook: HookConfig, event: str, stdin: bytes) -> _Outcome:
        try:
            outcome = await run_command(hook.command, stdin, timeout=float(hook.timeout), cwd=self.cwd)
        except asyncio.CancelledError:
            log.info("hook %s %r cancelled (its process group was killed)", event, self.redact(hook.command))
            raise
        except Exception as exc:  # a bug here must not break the turn: fail open
            log.exception("hook %s %r failed", event, self.redact(hook.command))
            outcome = _Outcome(problem=f"{type(exc).__name__}: {exc}")
        what = f"hook {event} {self.redact(hook.command)!r}"
        if outcome.problem:
            log.warning("%s failed open: %s", what, self.redact(outcome.problem))
        elif outcome.blocked:
            log.info("%s blocked: %s", what, self.redact(outcome.reason) or "(no reason)")
        else:
            log.info("%s allowed", what)
        return outcome

    async def _ask_client(
        self, subscription: WireSubscription, event: str, target: str, data: dict[str, Any]
    ) -> _Outcome:
        request = HookRequest(
            id=uuid.uuid4().hex[:12], subscription_id=subscription.id, event=event, target=target,
            input_data=data,
        )
        try:
            answer = await asyncio.wait_for(self._request(request), subscription.timeout)
        except TimeoutError:
            log.warning(
                "hook %s: Wire subscription %r did not answer within %gs; allowing",
                event, subscription.id, subscription.timeout,
            )
            return _Outcome(problem="timed out")
        except Exception as exc:
            log.warning("hook %s: Wire subscription %r failed (%s); allowing", event, subscription.id, exc)
            return _Outcome(problem=str(exc))
        finally:
            if not request.resolved:  # timed out or cancelled: a late answer is ignored
                request.decline()
        if isinstance(answer, HookResponse) and answer.action == "block":
            reason = answer.reason or "(no reason)"
            log.info("hook %s: Wire subscription %r blocked: %s", event, subscription.id, reason)
            return _Outcome(blocked=True, reason=answer.reason)
        return _Outcome()


def hooks_info(configured: dict[str, int] | None = None) -> dict[str, Any]:
    """`{supported_events, configured}` as the Wire `initialize` result carries it."""
    return {"supported_events": list(HOOK_EVENTS), "configured": dict(configured or {})}


def _parse_subscription(entry: Any) -> WireSubscription | None:
    if not isinstance(entry, dict):
        return None
    sub_id, event, matcher = entry.get("id"), entry.get("event"), entry.get("matcher", "")
    if not isinstance(sub_id, str) or event not in HOOK_EVENTS:
        return None
    if not isinstance(matcher, str):
        matcher = ""
    timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        timeout = DEFAULT_TIMEOUT_S
    return WireSubscription(sub_id, event, matcher, min(float(timeout), MAX_TIMEOUT_S))


# --------------------------------------------------------------------------- running a command


async def run_command(command: str, stdin: bytes, *, timeout: float, cwd: Path) -> _Outcome:
    """Run one hook command and read its decision. Never raises but CancelledError; a cancel (or
    the timeout) kills the command's whole process group before returning."""
    shell = user_shell()
    env = command_env(shell)  # without the agent's credentials
    try:
        proc = await start_shell_command(
            command, cwd=cwd, stdin=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
        )
    except (OSError, ValueError) as exc:
        return _Outcome(problem=f"could not start {shell}: {exc}")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    feeder = asyncio.create_task(_feed(proc.stdin, stdin))
    out = asyncio.create_task(_read_capped(proc.stdout))
    err = asyncio.create_task(_read_capped(proc.stderr))
    readers = {out, err}
    timed_out = False
    try:
        if not await wait_exit(proc, timeout):
            timed_out = True
            killpg(proc.pid, signal.SIGTERM)
            if not await wait_exit(proc, TERM_GRACE_S):
                killpg(proc.pid, signal.SIGKILL)
                await wait_exit(proc, DRAIN_AFTER_KILL_S)
        _, pending = await asyncio.wait(readers, timeout=PIPE_GRACE_S)
        if pending:  # a child of the hook still holds its output open: end the group
            killpg(proc.pid, signal.SIGKILL)
            _, pending = await asyncio.wait(readers, timeout=DRAIN_AFTER_KILL_S)
    except BaseException:  # cancelled: no process left behind, then propagate
        killpg(proc.pid, signal.SIGKILL)
        for task in (feeder, out, err):
            task.cancel()
        with contextlib.suppress(BaseException):
            await wait_exit(proc, DRAIN_AFTER_KILL_S)
        close_transport(proc)
        raise
    for task in (feeder, out, err):
        if not task.done():
            task.cancel()
    close_transport(proc)
    if timed_out:
        return _Outcome(problem=f"timed out after {timeout:g}s (process group killed)")
    stdout = _result_text(out)
    stderr = _result_text(err)
    return decide(proc.returncode, stdout, stderr)


def decide(returncode: int | None, stdout: str, stderr: str) -> _Outcome:
    """A finished hook's decision from its exit code and output (Kimi Code CLI's rules)."""
    if returncode == 2:
        return _Outcome(blocked=True, reason=stderr.strip())
    if returncode != 0:
        how = f"killed by signal {-returncode}" if returncode is not None and returncode < 0 else f"exit code {returncode}"
        tail = stderr.strip()[-500:]
        return _Outcome(problem=f"{how}" + (f"; stderr: {tail}" if tail else ""))
    text = stdout.strip()
    if not text.startswith("{"):
        return _Outcome()  # plain text or nothing: allow
    try:
        data = json.loads(text)
    except ValueError as exc:
        return _Outcome(problem=f"stdout looks like JSON but does not parse ({exc})")
    if not isinstance(data, dict):
        return _Outcome()
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
        return _Outcome(blocked=True, reason=_text(specific.get("permissionDecisionReason")))
    if data.get("decision") in ("block", "deny"):
        return _Outcome(blocked=True, reason=_text(data.get("reason")))
    return _Outcome()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """The payload on stdin, then EOF; a hook that does not read it is fine."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        pipe.write(data)
        await pipe.drain()
    with contextlib.suppress(Exception):
        pipe.close()


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(64 * 1024):
        if len(kept) < OUTPUT_LIMIT:
            kept += chunk[: OUTPUT_LIMIT - len(kept)]
    return bytes(kept)


def _result_text(task: asyncio.Task[bytes]) -> str:
    if not task.done() or task.cancelled() or task.exception() is not None:
        return ""
    return task.result().decode("utf-8", errors="replace")








# --------------------------------------------------------------------------- attaching


def secrets_of(config: Config) -> list[str]:
    """The API keys this session could know: the providers' and the environment's."""
    found = [os.environ.get(name, "") for name in known_secrets.KEY_VARIABLES]
    found.extend(provider.api_key.get_secret_value() for provider in config.providers.values())
    return [s for s in found if s]


def attach(core: AgentCore) -> HookEngine:
    """Give `core` its hook engine (the config's `[[hooks]]`); idempotent, returns the engine."""
    engine = engine_of(core)
    if engine is not None:
        return engine
    engine = HookEngine(
        core.config.hooks,
        session_id=core.session.id,
        cwd=core.work_dir,
        send=core.stream.send,
        request=core.send_request,
        secrets=secrets_of(core.config),
    )
    core.hooks = engine
    return engine


def engine_of(core: AgentCore) -> HookEngine | None:
    hooks = getattr(core, "hooks", None)
    return hooks if isinstance(hooks, HookEngine) else None
