"""Conversions between ACP shapes and ours: prompt blocks in; tool cards and content out.

What a card shows of a tool (its kind, the argument in its title, its location, how its output
reads) comes from the tool's facts (core/tool_facts.py), never from a table of our own."""

from __future__ import annotations

import json
import os.path
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.tool_facts import tool_facts
from ...util.visible_text import code_span, fence, markdown_text, one_line
from ...wire.actions import HIDE_OUTPUT_TYPE, READ_ONLY_TYPE
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
from .builders import image_block, location, plan_entry, text_block, tool_content, tool_diff_content

if TYPE_CHECKING:
    from ...core.tool_facts import OutputKind
    from .builders import ContentBlock, ContentItem, DiffItem, Location, PlanEntry, ToolCallContent

TITLE_ARG_MAX = 80  # characters of the key argument in a card's title: its beginning, then "…"
TITLE_MAX = 120  # characters of any other title made of the model's or a server's words
UI_TEXT_MAX = 20_000

PLAN_STATUS: dict[str, Any] = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}
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
        decoded: str = json.loads(f'"{raw}"')  # a JSON string literal always decodes to a str
        return decoded
    except ValueError:
        return raw


# --------------------------------------------------------------------------- tool cards


def tool_kind(name: str) -> str:
    return tool_facts(name).kind


def display_path(path: str, cwd: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return str(p.relative_to(cwd))
        except ValueError:
            return path
    return path


def tool_title(name: str, arguments: str | Mapping[str, Any], cwd: Path) -> str:
    """"Name: key argument" (the tool's `subject`); `arguments` is the (maybe incomplete) JSON text,
    or what of it was read so far (`acp.arguments.StreamingArguments.partial`)."""
    facts = tool_facts(name)
    key = facts.subject
    if key is None:
        return name
    if isinstance(arguments, str):
        value = partial_argument(arguments, key)
    else:
        found = arguments.get(key)
        value = found if isinstance(found, str) else None
    if not value:
        return name
    if key == facts.path:
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


def tool_locations(name: str, arguments: dict[str, Any], cwd: Path) -> list[Location]:
    """The file or directory the call works on (its `path` argument); a read of a file's lines from
    a line on (`line_offset`) is located at that line."""
    facts = tool_facts(name)
    raw = arguments.get(facts.path) if facts.path else None
    if not isinstance(raw, str) or not raw:
        return []
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = cwd / path
    line = arguments.get("line_offset")
    from_line = facts.output == "lines" and isinstance(line, int) and line > 0
    return [location(os.path.normpath(path), line if from_line else None)]  # as the tool resolves it


def text_content(text: str) -> ContentItem:
    if len(text) > UI_TEXT_MAX:
        text = text[:UI_TEXT_MAX] + f"\n[... {len(text) - UI_TEXT_MAX} more characters]"
    return tool_content(text_block(text))


def code_content(text: str, language: str = "", *, whole: bool = False) -> ContentItem:
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
    return tool_content(text_block(fence(body, language) + note))


def read_locations(name: str, arguments: dict[str, Any], result: ToolReturnValue, cwd: Path) -> list[Location] | None:
    """The location of a read of numbered lines (ReadFile) at the first line it really read (a tail
    read knows it only now); None for any other call."""
    if tool_facts(name).output != "lines":
        return None
    locations = tool_locations(name, arguments, cwd)
    if not locations or result.is_error or not isinstance(result.output, str):
        return None
    match = _LINE_NUMBER.match(result.output)
    if match is None:
        return None
    return [location(locations[0]["path"], int(match.group(1)))]


def diff_content(block: DiffDisplayBlock) -> DiffItem:
    return tool_diff_content(block.path, block.new_text, block.old_text or None)  # null old text: a new file


def hides_output(result: ToolReturnValue) -> bool:
    return any(isinstance(b, UnknownDisplayBlock) and b.type == HIDE_OUTPUT_TYPE for b in result.display)


def result_content(tool_name: str, result: ToolReturnValue, *, terminal_shown: bool) -> list[ToolCallContent] | None:
    """The card content for a finished call, as its output reads (core/tool_facts.py `OutputKind`);
    None keeps what the card already shows (a terminal)."""
    if terminal_shown and hides_output(result) and not result.is_error:
        return None
    kind = tool_facts(tool_name).output
    if kind == "message" and result.message:
        return [text_content(result.message)]
    tasks = [b for b in result.display if isinstance(b, BackgroundTaskDisplayBlock)]
    if tasks and not result.is_error:
        # A started, listed or stopped task: its state says it all (the output is for the model).
        # A task's log shows the state, then what the model read (the log's tail) below it.
        state: list[ToolCallContent] = [text_content(task_lines(tasks))]
        if kind != "log":
            return state
        return state + _result_content(kind, result, terminal_shown=terminal_shown)
    return _result_content(kind, result, terminal_shown=terminal_shown)


def _result_content(kind: OutputKind, result: ToolReturnValue, *, terminal_shown: bool) -> list[ToolCallContent]:
    content: list[ToolCallContent] = []
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
                shown = content_blocks_for_display(part)
                if shown["type"] == "image":
                    content.append(tool_content(shown))
            elif isinstance(part, VideoURLPart):
                content.append(text_content("[video]"))
        if kind == "media":  # its text parts only tag the media for the model
            return content + ([text_content(result.message)] if result.message else [])
    if output.strip():
        # A command's output and a file's numbered lines are shown verbatim, exactly what the model got.
        content.append(code_content(output) if kind in ("verbatim", "lines", "log") else text_content(output))
    # A read's message says which lines of how many ("Read 4 lines (3-6) of 9."): always useful.
    if result.message and (result.is_error or not content or kind == "lines"):
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


def plan_operations(client_capabilities: dict[str, Any] | None) -> bool:
    """Whether the client takes `plan_update` / `plan_removed` (`clientCapabilities.plan` is an
    object; omitted or null: it does not): then the mapper shows plans with plans.py."""
    return isinstance((client_capabilities or {}).get("plan"), dict)


def plan_entries(block: TodoDisplayBlock) -> list[PlanEntry]:
    return [plan_entry(item.title, PLAN_STATUS.get(item.status, "pending")) for item in block.items if item.title.strip()]


def content_blocks_for_display(part: ContentPart) -> ContentBlock:
    """An ACP content block for a part shown in a message chunk (user input or model output)."""
    if isinstance(part, TextPart):
        return text_block(part.text)
    if isinstance(part, ImageURLPart):
        url = part.image_url.url
        match = re.match(r"data:([^;,]+);base64,(.*)", url, re.DOTALL)
        if match:
            return image_block(match.group(2), match.group(1))
        return text_block(f"[image: {url}]")
    return text_block(f"[{part.type}]")
