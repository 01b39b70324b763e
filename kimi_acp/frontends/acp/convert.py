"""Conversions between ACP shapes and ours: prompt blocks in; tool cards and content out."""

from __future__ import annotations

import json
import os.path
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ...wire.actions import (
    EDIT_ACTION,
    EDIT_OUTSIDE_ACTION,
    FETCH_ACTION,
    HIDE_OUTPUT_TYPE,
    READ_ONLY_TYPE,
    RUN_ACTION,
    RUN_BACKGROUND_ACTION,
)
from ...util.visible_text import code_span, fence, markdown_text, one_line
from ...wire.types import (
    BackgroundTaskDisplayBlock,
    ContentPart,
    DiffDisplayBlock,
    ImageURLPart,
    MediaURL,
    TextPart,
    TodoDisplayBlock,
    ToolReturnValue,
    UnknownDisplayBlock,
    UserInput,
    VideoURLPart,
)

TITLE_ARG_MAX = 80  # characters of the key argument in a card's title: its beginning, then "…"
TITLE_MAX = 120  # characters of any other title made of the model's or a server's words
UI_TEXT_MAX = 20_000

KINDS = {
    "Shell": "execute",
    "ReadFile": "read",
    "ReadMediaFile": "read",
    "Glob": "search",
    "Grep": "search",
    "WriteFile": "edit",
    "StrReplaceFile": "edit",
    "SetTodoList": "think",
    "Agent": "think",  # as claude-agent-acp shows its Task tool
    "FetchURL": "fetch",
    "SearchWeb": "fetch",
    "EnterPlanMode": "switch_mode",
    "ExitPlanMode": "switch_mode",
}
KEY_ARGUMENT = {
    "Shell": "command",
    "ReadFile": "path",
    "ReadMediaFile": "path",
    "WriteFile": "path",
    "StrReplaceFile": "path",
    "Glob": "pattern",
    "Grep": "pattern",
    "FetchURL": "url",
    "SearchWeb": "query",
    "Agent": "description",
    "TaskOutput": "task_id",
    "TaskStop": "task_id",
}
PATH_ARGUMENTS = {"ReadFile": "path", "ReadMediaFile": "path", "WriteFile": "path", "StrReplaceFile": "path", "Glob": "directory", "Grep": "path"}
PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}
# Tools that ask for approval only now and then (the readers: outside the workspace, a file holding
# credentials) or never: their card may say `in_progress` as soon as they start (a read that does
# ask puts the card back to `pending` with the permission request). Every other tool (Shell,
# WriteFile, StrReplaceFile, FetchURL, any tool added later) stays `pending` until it is approved,
# so a card never says "running" while the user is still being asked.
RUNS_WITHOUT_APPROVAL = frozenset(
    {"Agent", "ReadFile", "ReadMediaFile", "Glob", "Grep", "SetTodoList", "AskUserQuestion",
     "EnterPlanMode", "ExitPlanMode", "TaskList", "TaskOutput"}
)
# The approval actions each asking tool may use (tools/shell.py, tools/write.py, tools/replace.py);
# a background Shell asks RUN_BACKGROUND_ACTION instead (see `approval_actions`).
APPROVAL_ACTIONS = {
    "Shell": frozenset({RUN_ACTION, RUN_BACKGROUND_ACTION}),
    "TaskStop": frozenset({"stop background task"}),  # tools/tasks.py STOP_ACTION
    "WriteFile": frozenset({EDIT_ACTION, EDIT_OUTSIDE_ACTION}),
    "StrReplaceFile": frozenset({EDIT_ACTION, EDIT_OUTSIDE_ACTION}),
    "FetchURL": frozenset({FETCH_ACTION}),
    "SearchWeb": frozenset({FETCH_ACTION}),
}
VERBATIM_OUTPUT = frozenset({"Shell", "ReadFile", "TaskOutput"})
# Tools whose output is written for the model (the plan tools: instructions, the approved plan in
# full): their card shows the short message instead; the plan itself is shown as a message.
MESSAGE_ONLY_OUTPUT = frozenset({"EnterPlanMode", "ExitPlanMode"})
_LINE_NUMBER = re.compile(r"\s*(\d+)\t")


# --------------------------------------------------------------------------- prompt in


def prompt_to_user_input(blocks: list[Any]) -> UserInput:
    """ACP content blocks (SDK models or dicts) -> our user input (a string for plain text)."""
    parts: list[ContentPart] = []
    for block in blocks:
        data = block if isinstance(block, dict) else block.model_dump(by_alias=True, exclude_none=True)
        kind = data.get("type")
        if kind == "text":
            parts.append(TextPart(text=str(data.get("text", ""))))
        elif kind == "image":
            mime = data.get("mimeType") or "image/png"
            if data.get("data"):
                parts.append(ImageURLPart(image_url=MediaURL(url=f"data:{mime};base64,{data['data']}")))
            elif data.get("uri"):
                parts.append(ImageURLPart(image_url=MediaURL(url=str(data["uri"]))))
        elif kind == "resource":
            parts.append(TextPart(text=_embedded_resource(data.get("resource") or {})))
        elif kind == "resource_link":
            name = data.get("name") or data.get("uri")
            parts.append(TextPart(text=f'<resource_link uri="{data.get("uri")}" name="{name}" />'))
        elif kind == "audio":
            parts.append(TextPart(text="[audio attachment omitted: this agent cannot listen to audio]"))
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    return parts


def _embedded_resource(resource: dict[str, Any]) -> str:
    uri = resource.get("uri", "")
    if "text" in resource:
        return f'<resource uri="{uri}">\n{resource["text"]}\n</resource>'
    mime = resource.get("mimeType") or "application/octet-stream"
    return f'<resource uri="{uri}" mimeType="{mime}">[binary content omitted]</resource>'


# --------------------------------------------------------------------------- partial JSON

_STRING_VALUE = r'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)'


def partial_argument(arguments: str, key: str) -> str | None:
    """A string argument read from possibly incomplete JSON (streamed tool arguments)."""
    try:
        value = json.loads(arguments)
        if isinstance(value, dict):
            found = value.get(key)
            return found if isinstance(found, str) else None
    except ValueError:
        pass
    match = re.search(_STRING_VALUE.format(key=re.escape(key)), arguments)
    if not match:
        return None
    raw = match.group(1)
    if raw.endswith("\\") and not raw.endswith("\\\\"):
        raw = raw[:-1]
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw


# --------------------------------------------------------------------------- tool cards


def tool_kind(name: str) -> str:
    return KINDS.get(name, "other")


class ApprovalState(Protocol):
    """What decides whether a call runs unasked (`core.approvals.Approvals` has it)."""

    @property
    def yolo(self) -> bool: ...

    @property
    def always_ask(self) -> bool: ...

    @property
    def session_actions(self) -> frozenset[str]: ...


def approval_actions(name: str, arguments: dict[str, Any] | None = None) -> frozenset[str] | None:
    """The actions this call may ask approval for; None for a tool we know nothing of.

    A Shell call asks "run command" in the foreground and "run background command" with
    `run_in_background`; arguments that do not say clearly (absent, not a bool) may be either."""
    actions = APPROVAL_ACTIONS.get(name)
    if name == "Shell" and arguments is not None:
        background = arguments.get("run_in_background", False)
        if background is False or background is None:
            return frozenset({RUN_ACTION})
        if background is True:
            return frozenset({RUN_BACKGROUND_ACTION})
    return actions


def runs_unasked(
    name: str, approvals: ApprovalState | None, arguments: dict[str, Any] | None = None, cwd: Path | None = None
) -> bool:
    """True when the call surely starts without a permission request; False when it may ask.

    `arguments` (the call's, parsed) narrow what a tool may ask: without them a Shell call is
    taken as maybe foreground, maybe background. A Shell command is judged as the tool will
    (permissions/command_judgement.py) in `cwd`, with the work dir and the temp dir as where it
    may read (the session's other directories are not known here: such a command may show
    `pending` until it runs)."""
    if name in RUNS_WITHOUT_APPROVAL:
        return True
    if approvals is None:
        return False
    if approvals.yolo or getattr(approvals, "afk", False):  # afk approves everything too
        return True
    actions = approval_actions(name, arguments)
    if name == "Shell":  # approved for the session per command prefix: the command must be known
        command = (arguments or {}).get("command")
        if actions is None or len(actions) != 1 or not isinstance(command, str):
            return False
        if cwd is None:
            return False
        from ...permissions.command_judgement import judge_command

        (action,) = actions
        judged = judge_command(command, cwd, lambda path: _within(path, cwd), action=action)
        if judged.warning is not None or judged.holds_secret:
            return False
        if judged.read_only and not approvals.always_ask:
            return True
        return judged.scope.covered_by(approvals.session_actions)
    # An edit's action depends on where the path is; only when every action it may use is
    # approved for the session is it sure not to ask.
    return actions is not None and actions <= approvals.session_actions


def _within(path: Path, cwd: Path) -> bool:
    """Inside `cwd` or the temp dir, on real paths (as the tools decide, but for one directory)."""
    real = os.path.realpath(path)
    return any(
        real == root or real.startswith(root.rstrip(os.sep) + os.sep)
        for root in (os.path.realpath(cwd), os.path.realpath(tempfile.gettempdir()))
    )


def display_path(path: str, cwd: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return str(p.relative_to(cwd))
        except ValueError:
            return path
    return path


def tool_title(name: str, arguments: str | Mapping[str, Any], cwd: Path) -> str:
    """"Name: key argument"; `arguments` is the (maybe incomplete) JSON text, or what of it was
    read so far (`acp.arguments.StreamingArguments.partial`)."""
    key = KEY_ARGUMENT.get(name)
    if key is None:
        return name
    if isinstance(arguments, str):
        value = partial_argument(arguments, key)
    else:
        found = arguments.get(key)
        value = found if isinstance(found, str) else None
    if not value:
        return name
    if key in ("path", "directory"):
        return f"{name}: {path_title(display_path(value, cwd))}"
    return f"{name}: {one_line(value, TITLE_ARG_MAX)}"


def path_title(path: str, limit: int = TITLE_ARG_MAX) -> str:
    """A path as one title line: whole, or "…" and its end (the file it names is what matters; a
    command is cut at its end instead, where nothing after the cut can hide)."""
    shown = one_line(path)
    if len(shown) <= limit:
        return shown
    tail = shown[-(limit - 1) :]
    slash = tail.find("/")
    return "…" + (tail[slash:] if 0 <= slash < len(tail) - 1 else tail)


def tool_locations(name: str, arguments: dict[str, Any], cwd: Path) -> list[dict[str, Any]]:
    key = PATH_ARGUMENTS.get(name)
    raw = arguments.get(key) if key else None
    if not isinstance(raw, str) or not raw:
        return []
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = cwd / path
    location: dict[str, Any] = {"path": os.path.normpath(path)}  # as the tool resolves it
    line = arguments.get("line_offset")
    if name == "ReadFile" and isinstance(line, int) and line > 0:
        location["line"] = line
    return [location]


def text_content(text: str) -> dict[str, Any]:
    if len(text) > UI_TEXT_MAX:
        text = text[:UI_TEXT_MAX] + f"\n[... {len(text) - UI_TEXT_MAX} more characters]"
    return {"type": "content", "content": {"type": "text", "text": text}}


def code_content(text: str, language: str = "", *, whole: bool = False) -> dict[str, Any]:
    """Text shown verbatim in one fenced block: clients (Zed, acp.el) render card text as markdown.

    The fence is longer than any backtick run in the text, so a file's own fences cannot close
    it. An over-long text is cut at a line end before fencing, so the fence is always closed,
    unless it is `whole` (a command the user is asked about: every line of it is shown).
    """
    body = text.rstrip("\n")
    note = ""
    if len(body) > UI_TEXT_MAX and not whole:
        cut = body.rfind("\n", 0, UI_TEXT_MAX)
        cut = cut if cut > 0 else UI_TEXT_MAX
        rest = body[cut:].lstrip("\n")
        lines = rest.count("\n") + 1
        note = f"\n[... {lines} more line{'s' if lines != 1 else ''} ({len(rest)} characters) not shown]"
        body = body[:cut]
    return {"type": "content", "content": {"type": "text", "text": fence(body, language) + note}}


def read_locations(
    arguments: dict[str, Any], result: ToolReturnValue, cwd: Path
) -> list[dict[str, Any]] | None:
    """ReadFile's location with the first line it really read (a tail read knows it only now)."""
    locations = tool_locations("ReadFile", arguments, cwd)
    if not locations or result.is_error or not isinstance(result.output, str):
        return None
    match = _LINE_NUMBER.match(result.output)
    if match is None:
        return None
    return [{**locations[0], "line": int(match.group(1))}]


def diff_content(block: DiffDisplayBlock) -> dict[str, Any]:
    old = block.old_text or None  # null old text: a new file
    return {"type": "diff", "path": block.path, "oldText": old, "newText": block.new_text}


def hides_output(result: ToolReturnValue) -> bool:
    return any(isinstance(b, UnknownDisplayBlock) and b.type == HIDE_OUTPUT_TYPE for b in result.display)


def result_content(tool_name: str, result: ToolReturnValue, *, terminal_shown: bool) -> list[dict[str, Any]] | None:
    """The card content for a finished call; None keeps what the card already shows (a terminal)."""
    if terminal_shown and hides_output(result) and not result.is_error:
        return None
    if tool_name in MESSAGE_ONLY_OUTPUT and result.message:
        return [text_content(result.message)]
    tasks = [b for b in result.display if isinstance(b, BackgroundTaskDisplayBlock)]
    if tasks and not result.is_error:
        # A started, listed or stopped task: its state says it all (the output is for the model).
        # TaskOutput shows the state, then what the model read (the log's tail) below it.
        state = [text_content(task_lines(tasks))]
        if tool_name != "TaskOutput":
            return state
        return state + _result_content(tool_name, result, terminal_shown=terminal_shown)
    return _result_content(tool_name, result, terminal_shown=terminal_shown)


def _result_content(tool_name: str, result: ToolReturnValue, *, terminal_shown: bool) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in result.display:
        if isinstance(block, DiffDisplayBlock):
            if block.is_summary:
                content.append(text_content(f"{block.path}: {block.old_text} -> {block.new_text}"))
            else:
                content.append(diff_content(block))
    if content and not result.is_error:
        return content
    output = result.output if isinstance(result.output, str) else "".join(
        p.text for p in result.output if isinstance(p, TextPart)
    )
    if terminal_shown and hides_output(result):
        output = ""  # the terminal already shows it; add only the error message below
    if not result.is_error and not isinstance(result.output, str):
        # Media parts (ReadMediaFile): an image is shown as an image block; a video only named.
        for part in result.output:
            if isinstance(part, ImageURLPart):
                block = content_blocks_for_display(part)
                if block["type"] == "image":
                    content.append({"type": "content", "content": block})
            elif isinstance(part, VideoURLPart):
                content.append(text_content("[video]"))
        if tool_name == "ReadMediaFile":  # its text parts only tag the media for the model
            return content + ([text_content(result.message)] if result.message else [])
    if output.strip():
        # Shell output and ReadFile's numbered lines are shown verbatim, exactly what the model got.
        content.append(code_content(output) if tool_name in VERBATIM_OUTPUT else text_content(output))
    # ReadFile's message says which lines of how many ("Read 4 lines (3-6) of 9."): always useful.
    if result.message and (result.is_error or not content or tool_name == "ReadFile"):
        content.append(text_content(result.message))
    note = read_only_note(result)
    if note:  # a command that ran without a question: the card says why
        content.append(text_content(f"_{note}_"))
    return content


def read_only_note(result: ToolReturnValue) -> str:
    """The note of a Shell command that ran without asking because it only reads, or ""."""
    for block in result.display:
        if isinstance(block, UnknownDisplayBlock) and block.type == READ_ONLY_TYPE:
            text = block.data.get("text")
            return text if isinstance(text, str) else ""
    return ""


def task_lines(blocks: list[BackgroundTaskDisplayBlock]) -> str:
    """Background tasks as a user reads them: one line each, description first (the model's words,
    shown as text: no markup of theirs can hide the task's id or state)."""
    return "\n".join(
        f"- {markdown_text(b.description or b.task_id)} ({code_span(b.task_id)}, {b.kind}): **{b.status}**" for b in blocks
    )


def session_capability(client_capabilities: dict[str, Any] | None, name: str) -> bool:
    """Whether the client advertised `clientCapabilities.session.<name>` (an object, e.g. `{}`):
    the unstable `notices` and `compaction` updates may only be sent to a client that did."""
    session = (client_capabilities or {}).get("session")
    return isinstance(session, dict) and isinstance(session.get(name), dict)


def plan_entries(block: TodoDisplayBlock) -> list[dict[str, Any]]:
    return [
        {"content": item.title, "priority": "medium", "status": PLAN_STATUS.get(item.status, "pending")}
        for item in block.items
        if item.title.strip()
    ]


def content_blocks_for_display(part: ContentPart) -> dict[str, Any]:
    """An ACP content block for a part shown in a message chunk (user input or model output)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImageURLPart):
        url = part.image_url.url
        match = re.match(r"data:([^;,]+);base64,(.*)", url, re.S)
        if match:
            return {"type": "image", "mimeType": match.group(1), "data": match.group(2)}
        return {"type": "text", "text": f"[image: {url}]"}
    return {"type": "text", "text": f"[{part.type}]"}
