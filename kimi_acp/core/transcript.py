"""A session's history as Markdown (`/export`) and a transcript of text brought in (`/import`).

The export is for people: turns with the user's words, the assistant's replies, each tool call with
its arguments and its result folded in a `<details>` block. The import is for the model: a file or
another session's history, wrapped in `<imported_context>` behind a system note.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path

from ..llm.types import Message
from ..wire.types import AudioURLPart, ContentPart, ImageURLPart, TextPart, ThinkPart, VideoURLPart
from .messages import system_note

MAX_IMPORT_BYTES = 10 * 1024 * 1024
HINT_KEYS = ("path", "file_path", "command", "query", "url", "name", "pattern")
# Text formats `/import` accepts (files without a suffix too: READMEs, Makefiles).
IMPORTABLE_SUFFIXES = frozenset(
    ".md .markdown .txt .text .rst .json .jsonl .yaml .yml .toml .ini .cfg .conf .csv .tsv .xml .env "
    ".properties .py .js .ts .jsx .tsx .java .kt .go .rs .c .cpp .h .hpp .cs .rb .php .swift .scala .sh "
    ".bash .zsh .fish .ps1 .bat .cmd .r .lua .pl .pm .ex .exs .erl .hs .ml .sql .graphql .proto .html .htm "
    ".css .scss .sass .less .svg .log .tex .bib .org .adoc .wiki".split()
)


def default_export_name(session_id: str, now: datetime.datetime) -> str:
    return f"kimi-export-{session_id[:8]}-{now.strftime('%Y%m%d-%H%M%S')}.md"


def export_markdown(
    *, session_id: str, work_dir: Path, history: Sequence[Message], token_count: int, now: datetime.datetime
) -> str:
    turns = _turns(history)
    topic = next((_short(m.text(), 80) for m in history if m.role == "user" and m.text().strip()), "(empty)")
    calls = sum(len(m.tool_calls or ()) for m in history)
    lines = [
        "---",
        f"session_id: {session_id}",
        f"exported_at: {now.isoformat(timespec='seconds')}",
        f"work_dir: {work_dir}",
        f"message_count: {len(history)}",
        f"token_count: {token_count}",
        "---",
        "",
        "# Kimi Session Export",
        "",
        "## Overview",
        "",
        f"- **Topic**: {topic}",
        f"- **Conversation**: {len(turns)} turns | {calls} tool calls | {token_count:,} tokens",
        "",
        "---",
        "",
    ]
    for number, turn in enumerate(turns, 1):
        lines += _turn_lines(turn, number)
    return "\n".join(lines).rstrip() + "\n"


def _turns(history: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped into turns, each starting at a user message."""
    turns: list[list[Message]] = []
    for message in history:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _turn_lines(turn: list[Message], number: int) -> list[str]:
    lines = [f"## Turn {number}", ""]
    calls: dict[str, tuple[str, str]] = {}  # tool call id -> (name, hint)
    assistant_started = False
    for message in turn:
        if message.role == "user":
            lines += ["### User", ""]
            lines += [text + "\n" for text in map(_part_md, message.parts()) if text.strip()]
        elif message.role == "assistant":
            if not assistant_started:
                lines += ["### Assistant", ""]
                assistant_started = True
            lines += [text + "\n" for text in map(_part_md, message.parts()) if text.strip()]
            for call in message.tool_calls or ():
                hint = _hint(call.function.arguments or "{}")
                calls[call.id] = (call.function.name, hint)
                title = f"#### Tool Call: {call.function.name}" + (f" (`{hint}`)" if hint else "")
                lines += [title, "```json", _pretty(call.function.arguments or "{}"), "```", ""]
        elif message.role == "tool":
            name, hint = calls.get(message.tool_call_id or "", ("unknown", ""))
            body = "\n".join(t for t in map(_part_md, message.parts()) if t.strip())
            summary = f"Tool Result: {name}" + (f" (`{hint}`)" if hint else "")
            lines += [f"<details><summary>{summary}</summary>", "", body, "", "</details>", ""]
    return lines


def _part_md(part: ContentPart) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ThinkPart):
        return f"<details><summary>Thinking</summary>\n\n{part.think}\n\n</details>" if part.think.strip() else ""
    if isinstance(part, ImageURLPart):
        return "[image]"
    if isinstance(part, AudioURLPart):
        return "[audio]"
    if isinstance(part, VideoURLPart):
        return "[video]"
    return f"[{getattr(part, 'type', 'part')}]"


def _hint(arguments: str) -> str:
    try:
        parsed = json.loads(arguments)
    except (ValueError, TypeError):
        return ""
    if not isinstance(parsed, dict):
        return ""
    for key in HINT_KEYS:
        value = parsed.get(key)
        if isinstance(value, str) and value.strip():
            return _short(value, 60)
    return next((_short(v, 60) for v in parsed.values() if isinstance(v, str) and 0 < len(v) <= 80), "")


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return arguments


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- import


def history_transcript(history: Sequence[Message]) -> str:
    """Another session's history as plain text the model can read (roles, text, tool calls)."""
    blocks = []
    for message in history:
        segments = [t for t in map(_import_part, message.parts()) if t.strip()]
        for call in message.tool_calls or ():
            segments.append(f"Tool Call: {call.function.name}({call.function.arguments or '{}'})")
        if not segments:
            continue
        header = f"[{message.role.upper()}]"
        if message.role == "tool" and message.tool_call_id:
            header += f" (call_id: {message.tool_call_id})"
        blocks.append(header + "\n" + "\n".join(segments))
    return "\n\n".join(blocks)


def _import_part(part: ContentPart) -> str:
    if isinstance(part, ThinkPart):
        return f"<thinking>\n{part.think}\n</thinking>" if part.think.strip() else ""
    return _part_md(part)


def import_message(content: str, source: str) -> Message:
    """The user message an import appends to the context."""
    return Message(
        role="user",
        content=[
            system_note(
                f"The user has imported context from {source}. This is a prior conversation history or "
                "document that may be relevant to the current session. Review it and use it to inform "
                "your responses."
            ),
            TextPart(text=f'<imported_context source="{source}">\n{content}\n</imported_context>'),
        ],
    )


def is_importable(path: Path) -> bool:
    return path.suffix == "" or path.suffix.lower() in IMPORTABLE_SUFFIXES
