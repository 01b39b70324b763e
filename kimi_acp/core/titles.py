"""A session title worth reading: one small request to the session's own model after its first turn.

The first prompt cut to 50 characters says little ("can you look at this bug where the…"). The
model has just read the prompt and its own answer, so it can name the conversation in a few words.
The request has no tools and a short history; what comes back is cleaned to one short line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..llm.types import ChatProvider, ChatStream, Message
from ..wire.types import TextPart

TITLE_MAX_CHARS = 60
USER_TITLE_MAX_CHARS = 200  # a title the user gives is cut only where no list could show it anyway
EXCERPT_MAX_CHARS = 2000  # of the prompt and of the answer: enough to name them, cheap to send
TITLE_SYSTEM_PROMPT = "You name conversations between a user and a coding agent."
TITLE_INSTRUCTIONS = (
    "Write a title for the conversation above: at most 6 words, in the language of the user's request, "
    "naming the task (like \"Fix flaky login test\"). Reply with the title only: no quotes, no period, "
    "no explanation."
)


def title_request(prompt: str, answer: str) -> list[Message]:
    """The one message the title request sends: the first exchange, then what to do with it."""
    text = f"User's request:\n{prompt[:EXCERPT_MAX_CHARS]}\n\nAgent's answer:\n{answer[:EXCERPT_MAX_CHARS]}\n\n---\n\n{TITLE_INSTRUCTIONS}"
    return [Message(role="user", content=text)]


def clean_title(reply: str) -> str | None:
    """The model's reply as a title: its first line, without quotes, markup or a closing period."""
    line = next((line for line in reply.strip().splitlines() if line.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip(), flags=re.IGNORECASE)
    line = line.strip().strip("\"'`*#").strip().rstrip(".").strip()
    line = " ".join(line.split())
    if not line:
        return None
    return line if len(line) <= TITLE_MAX_CHARS else line[: TITLE_MAX_CHARS - 1].rstrip() + "…"


def user_title(text: str) -> str:
    """A title the user gives (`/rename`, ACP `session/set_title`) as it is stored: whitespace
    collapsed, at most USER_TITLE_MAX_CHARS characters; "" when nothing is left."""
    return " ".join(text.split())[:USER_TITLE_MAX_CHARS].rstrip()


def first_exchange(history: Sequence[Message]) -> tuple[str, str] | None:
    """The first user request and the agent's first answer with text, or None before there is one."""
    prompt = next((m.text() for m in history if m.role == "user" and _said_by_user(m)), "")
    answer = next((m.text() for m in history if m.role == "assistant" and m.text().strip()), "")
    return (prompt, answer) if prompt else None


def _said_by_user(message: Message) -> bool:
    """Not one of the agent's own notes (`<system>…</system>`, e.g. about skills or the workspace)."""
    text = message.text().strip()
    return bool(text) and not text.startswith("<system>")


async def ask_for_title(
    provider: ChatProvider, prompt: str, answer: str, *, on_reply: Callable[[ChatStream], None] | None = None
) -> str | None:
    """One request without tools; the cleaned title, or None when the reply has no usable text.
    `on_reply(stream)` once the reply has ended (what it used is counted, core/usage.py)."""
    stream = provider.stream(TITLE_SYSTEM_PROMPT, [], title_request(prompt, answer))
    try:
        text = [part.text async for part in stream if isinstance(part, TextPart)]
    finally:
        await stream.aclose()
    if on_reply is not None:
        on_reply(stream)
    return clean_title("".join(text))
