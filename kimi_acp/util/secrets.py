"""The secrets this process knows, and their removal from every text a person or the model reads.

One registry for the whole process: the config's keys and headers, the providers' key variables,
Kimi account and MCP OAuth tokens, MCP headers and env, plugin keys, `[services.*]` credentials.
Whoever learns a secret registers it; what is registered stays for the process's life, because a
log line or a tool result may come long after. Every tool result (`core/toolset.py`) and every log
record (`LogRedaction` on the log file, `startup/logs.py`) goes through `redact`.

Standard library only: the log setup needs it before anything heavy is imported.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable

REDACTED = "[redacted]"
# A value registered for the whole process is redacted from every output: a short one ("true",
# "v1") would mangle ordinary text everywhere, and no real key is that short.
MIN_SECRET_CHARS = 8
# A caller's own list (the credential of the call it is making) may be shorter, as it always was.
MIN_GIVEN_CHARS = 4

# The agent's model credentials in the environment: registered, and kept from child processes.
KEY_VARIABLES = (
    "KIMI_API_KEY",
    "MOONSHOT_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "AZURE_OPENAI_API_KEY",
)

# The names of headers and variables whose values are credentials. Only those are registered: a
# path or a flag in an `env` table, redacted from every output (and every variable holding it
# kept from every command), would break far more than it protects.
SECRET_NAME = re.compile(r"auth|key|token|secret|cookie|session|passw|credential|signature", re.IGNORECASE)

_known: set[str] = set()
_pattern: re.Pattern[str] | None = None  # every known value, longest first; None while there is none
_lock = threading.Lock()  # OAuth refreshes register from worker threads


def register(values: Iterable[str | None]) -> None:
    """Redact these values from now on (too short ones are ignored: see MIN_SECRET_CHARS)."""
    global _pattern
    new = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_CHARS}
    with _lock:
        if new <= _known:
            return
        _known.update(new)
        _pattern = _compile(_known)


def register_named(pairs: Iterable[tuple[str, str]]) -> None:
    """Register the values of the headers or variables whose name says they are credentials
    (`SECRET_NAME`); of `Bearer <token>`, the token alone too."""
    values: list[str] = []
    for name, value in pairs:
        if isinstance(value, str) and SECRET_NAME.search(name):
            values += [value, *value.split()[-1:]]
    register(values)


def register_environment() -> None:
    """Register the values of the providers' key variables (`KEY_VARIABLES`) set in os.environ."""
    register(os.environ.get(name) for name in KEY_VARIABLES)


def clear() -> None:
    """Forget every registered value (tests: each starts with an empty registry)."""
    global _pattern
    with _lock:
        _known.clear()
        _pattern = None


def any_registered() -> bool:
    """Whether anything is registered (when not, there is nothing to redact anywhere)."""
    return _pattern is not None


def holds_secret(text: str) -> bool:
    """Whether `text` contains a registered value."""
    pattern = _pattern
    return pattern is not None and pattern.search(text) is not None


def redact(text: str, also: Iterable[str] = (), *, mark: str = REDACTED) -> str:
    """`text` with every registered value, and every value of `also` (at least MIN_GIVEN_CHARS
    long), replaced by `mark`; the longest first, so no fragment of a longer secret is left."""
    extra = {v for v in also if v and len(v) >= MIN_GIVEN_CHARS}
    pattern = _pattern if not extra or extra <= _known else _compile(_known | extra)
    if pattern is None or not text:
        return text
    return pattern.sub(mark, text)


def replace(text: str, values: Iterable[str], *, mark: str = REDACTED, min_chars: int = MIN_GIVEN_CHARS) -> str:
    """`text` with exactly `values` (those at least `min_chars` long) replaced by `mark`, longest
    first; the registry is left out (a helper that must redact what it is given, no more)."""
    wanted = {v for v in values if v and len(v) >= min_chars}
    return _compile(wanted).sub(mark, text) if wanted and text else text


def _compile(values: Iterable[str]) -> re.Pattern[str]:
    # An alternation takes the first alternative that matches: longest first means the whole secret.
    return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


class LogRedaction(logging.Filter):
    """On a handler: every record it writes (ours and any library's) without a registered value.

    The record is changed in place: its message is formatted once here, its traceback too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _pattern is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format: the handler reports it as logging does
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
