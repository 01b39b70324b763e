"""A plugin's tool: its command, run in the plugin's directory with the arguments as JSON on stdin.

Kimi Code CLI's contract, so a plugin written for it works here: the command runs with the
plugin's directory as cwd and our environment (without the agent's own credentials:
util/child_env.py) plus the plugin's `inject` keys as variables (each
`inject` target name set to the host value it asks for: the default model's `api_key`, a Kimi
account's fresh access token included, and `base_url`), gets the call's arguments as one JSON
object on stdin, and answers on stdout. Exit 0: stdout (stripped) is the result; anything else: a
tool error with stderr (or stdout). It asks for approval with action `plugin:<name>`. It runs in
a process group of its own, killed whole after 120 s or when the call is cancelled; what it leaves
running after a normal exit is its own business, as in Kimi Code CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Any

from ..kaos.process_group import DRAIN_AFTER_KILL_S, killpg, started, wait_exit
from ..permissions.scope import action_scope
from ..tools import DeferredTool
from ..tools.base import ToolContext, cap_output, tool_error, tool_ok
from ..tools.external import SchemaTool
from ..util import secrets as known_secrets
from ..util.child_env import child_environment
from ..wire.types import ToolReturnValue
from .spec import PluginError, PluginSpec, PluginToolSpec

log = logging.getLogger(__name__)

TIMEOUT_S = 120.0
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class PluginTool(SchemaTool):
    def __init__(
        self, plugin: PluginSpec, spec: PluginToolSpec, *, host_config: Any = None, timeout_s: float = TIMEOUT_S
    ) -> None:
        super().__init__(spec.name, spec.description, spec.parameters or EMPTY_SCHEMA, lenient=True)
        self.plugin = plugin
        self.command = spec.command
        self.action = f"plugin:{spec.name}"
        self.title = f"{plugin.name}: {spec.name}"  # what an IDE's tool card shows
        self.timeout_s = timeout_s
        self.host_config = host_config  # the session's Config, for `inject`
        self._secrets: list[str] = []  # the injected key: never in a log line, an error or a result

    async def run(self, arguments_json: str, ctx: ToolContext) -> ToolReturnValue:
        await ctx.approve(
            action=self.action,
            description=f"Run plugin tool `{self.name}`.",
            scope=action_scope(self.action, f"`{self.name}` of plugin `{self.plugin.name}`", rule_name=self.name),
        )
        env = child_environment(await self._injected())  # the injected keys, none of ours besides
        try:
            proc = await started(
                asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=str(self.plugin.directory),
                    env=env,
                    start_new_session=True,
                )
            )
        except OSError as exc:
            return self._failure(f"cannot start {self.command[0]!r}: {exc.strerror or exc}", "Not started")
        try:
            stdout, stderr = await asyncio.wait_for(
                proc.communicate((arguments_json or "{}").encode("utf-8")), self.timeout_s
            )
        except TimeoutError:
            await _kill(proc)
            return self._failure(f"timed out after {self.timeout_s:g}s", "Timeout")
        except asyncio.CancelledError:
            await _kill(proc)
            raise
        output = known_secrets.redact(stdout.decode("utf-8", "replace").strip(), self._secrets)
        errors = known_secrets.redact(stderr.decode("utf-8", "replace").strip(), self._secrets)
        if proc.returncode != 0:
            return self._failure(errors or output or f"exit code {proc.returncode}", f"Exit {proc.returncode}")
        if errors:
            log.debug("plugin tool %s stderr: %s", self.name, errors[:2000])
        text, _ = cap_output(output)
        return tool_ok(output=text)

    async def _injected(self) -> dict[str, str]:
        if not self.plugin.inject:
            return {}
        from .host import host_values

        values = await host_values(self.host_config)
        self._secrets = [values["api_key"]] if "api_key" in values else []
        if self.plugin.config_file:  # plugins that read their config file get the fresh values too
            from .install import inject_config

            try:
                await asyncio.to_thread(inject_config, self.plugin, values)
            except (PluginError, OSError) as exc:
                log.warning("plugin %s: %s", self.plugin.name, exc)
        return {target: values[source] for target, source in self.plugin.inject.items() if source in values}

    def _failure(self, reason: str, brief: str) -> ToolReturnValue:
        log.warning("plugin tool %s failed: %s", self.name, reason[:500])
        return tool_error(f"Plugin tool '{self.name}' failed: {reason}", brief=brief)


async def _kill(proc: asyncio.subprocess.Process) -> None:
    killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(asyncio.CancelledError):
        await wait_exit(proc, DRAIN_AFTER_KILL_S)


class DeferredPluginTool(DeferredTool):
    """A plugin tool not created yet (creating it loads the JSON Schema machinery)."""

    __slots__ = ("_plugin", "_spec", "host_config")

    def __init__(self, plugin: PluginSpec, spec: PluginToolSpec, host_config: Any = None) -> None:
        super().__init__(spec.name, "", "")
        self._plugin = plugin
        self._spec = spec
        self.host_config = host_config

    def create(self) -> PluginTool:  # type: ignore[override]
        return PluginTool(self._plugin, self._spec, host_config=self.host_config)

    def __repr__(self) -> str:
        return f"DeferredPluginTool({self.name!r} from {self._plugin.name!r})"
