"""The session's plans as plans of the client's own (ACP plan operations: `plan_update`,
`plan_removed`), for a client that advertised `clientCapabilities.plan` (an object, e.g. `{}`).

Two plans, each under an id that stays the same for as long as it is the same plan:

- the todo list (SetTodoList): `type: "items"`, planId `todo` (a subagent's own list:
  `todo:<agent id>`, so it never replaces the root's). Each update is the whole list (the client
  replaces the plan's entries); a list set to nothing removes the plan.
- plan mode's plan, the plan file of one planning round: planId `plan:<file name>`. A client that
  can open the agent's files gets `type: "file"` with the file's `file://` URI; one that cannot gets
  `type: "markdown"` with the file's text instead, under the same id (one plan, never two copies).
  "Can open the agent's files" is `clientCapabilities.fs.readTextFile`: the one thing ACP lets a
  client say about reading files by the agent's paths. The plan is sent when the agent writes the
  file (its ToolResult carries the text: core/plan_file.py) and when ExitPlanMode presents it
  (PlanDisplay), if it changed since (the user may have edited it). It is removed when `/plan clear`
  deletes it (PlanCleared), when the agent empties it, and when plan mode ends with its file gone.
  An approved plan stays: the user can reopen it.

Everything but `/plan clear` is read from messages the session records, so session/load shows the
same plans; at the end of a replay a plan whose file is gone is removed (which is where a replay
shows a `/plan clear`). A client without the capability gets exactly the old updates (updates.py):
the todo list as `plan`, the presented plan as a block of the agent's message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.plan_file import plan_in_extras
from ...wire.types import PlanDisplay, TodoDisplayBlock, ToolReturnValue
from .builders import remove_plan, update_plan_file, update_plan_items, update_plan_markdown
from .convert import plan_entries

if TYPE_CHECKING:
    from .builders import Update

TODO_PLAN_ID = "todo"
PLAN_FILE_PREFIX = "plan:"


def opens_files(client_capabilities: dict[str, Any] | None) -> bool:
    """Whether the client reads files by the agent's paths (`fs.readTextFile`): it gets plan files
    as a URI, any other client their text."""
    fs = (client_capabilities or {}).get("fs")
    return isinstance(fs, dict) and fs.get("readTextFile") is True


def plan_file_id(path: str) -> str:
    return PLAN_FILE_PREFIX + Path(path).stem


class Plans:
    """What one client was shown of a session's plans (see the module docstring)."""

    def __init__(self, *, files: bool) -> None:
        self.files = files  # plan files go out as `type: "file"` (else as Markdown)
        self._plan_files: dict[str, tuple[str, str]] = {}  # planId -> (path, content as last shown)

    def tool_result(self, result: ToolReturnValue, agent: str | None = None) -> list[Update]:
        """A tool's result: a todo list it set, a plan file it wrote."""
        updates = [u for b in result.display if isinstance(b, TodoDisplayBlock) for u in self._todo_list(b, agent)]
        written = None if result.is_error else plan_in_extras(result.extras)
        if written is not None:
            updates += self._plan_file(*written)
        return updates

    def presented(self, message: PlanDisplay) -> list[Update]:
        """ExitPlanMode shows the plan it asks about: an update only if it changed since it was shown."""
        shown = self._plan_files.get(plan_file_id(message.file_path))
        if shown is not None and shown[1] == message.content:
            return []
        return self._plan_file(message.file_path, message.content)

    def cleared(self, path: str) -> list[Update]:
        """`/plan clear` deleted the plan file: removed even if this mapper never showed it (a client
        that resumed the session may show it from before)."""
        plan_id = plan_file_id(path)
        self._plan_files.pop(plan_id, None)
        return [remove_plan(plan_id)]

    def plan_mode_ended(self) -> list[Update]:
        """Plan mode is off: a plan whose file is gone is no plan to reopen."""
        return [u for plan_id, (path, _) in list(self._plan_files.items()) if not os.path.exists(path)
                for u in self._remove_plan_file(plan_id)]

    def history_ended(self) -> list[Update]:
        """The end of a replay: plans whose files were deleted since (e.g. `/plan clear`) go."""
        return self.plan_mode_ended()

    def follow(self, replayed: Plans) -> None:
        """After `replayed` sent the session's history: the client knows the plan files it showed."""
        self._plan_files = dict(replayed._plan_files)

    def _todo_list(self, block: TodoDisplayBlock, agent: str | None) -> list[Update]:
        plan_id = TODO_PLAN_ID if agent is None else f"{TODO_PLAN_ID}:{agent}"
        entries = plan_entries(block)
        if not entries:  # removed even if never shown here (a resumed session's client may show it)
            return [remove_plan(plan_id)]
        return [update_plan_items(plan_id, entries)]

    def _plan_file(self, path: str, content: str) -> list[Update]:
        plan_id = plan_file_id(path)
        if not content.strip():  # an empty plan file is no plan (ExitPlanMode says so too)
            return self._remove_plan_file(plan_id)
        self._plan_files[plan_id] = (path, content)
        if self.files:
            return [update_plan_file(plan_id, Path(os.path.abspath(path)).as_uri())]
        return [update_plan_markdown(plan_id, content)]

    def _remove_plan_file(self, plan_id: str) -> list[Update]:
        return [remove_plan(plan_id)] if self._plan_files.pop(plan_id, None) is not None else []
