"""Why a turn could not run; front ends map these to their own error codes."""

from __future__ import annotations

import os

from ..errors import SessionError


class LLMNotSet(SessionError):
    def __init__(self, detail: str = "") -> None:
        super().__init__(detail or "LLM is not set: configure a model (run `kimi login` or edit config.toml)")


class LLMNotSupported(SessionError):
    """The input needs a capability the model lacks (e.g. an image without `image_in`)."""

    def __init__(self, model: str, capability: str) -> None:
        super().__init__(f"LLM model '{model}' does not support required capability: {capability}.")
        self.capability = capability


class TurnInProgress(SessionError):
    """`text`: the input that could not start; an `/undo` is told why it must wait."""

    def __init__(self, text: str = "") -> None:
        message = "An agent turn is already in progress"
        if text.lstrip().startswith("/undo") and text.lstrip()[5:6] in ("", " ", "\t", "\n"):
            message += ": a turn still running cannot be undone. Wait for it to end, or cancel it, then /undo"
        super().__init__(message)


class NoTurnInProgress(SessionError):
    def __init__(self) -> None:
        super().__init__("No agent turn is in progress")


class SessionBusy(SessionError):
    """Another process (or another core of this one) is running a turn of the same session."""

    def __init__(self, holder: int | None) -> None:
        if holder is None:
            where = "in another kimi process"
        elif holder == os.getpid():
            where = "elsewhere in this process"
        else:
            where = f"in another kimi process (pid {holder})"
        super().__init__(
            f"This session is running a turn {where}. Wait for that turn to end, "
            "or fork the session to go on separately."
        )
        self.holder = holder


class SessionDeleted(SessionError):
    """The session's folder is gone (`session/delete` from another process): nothing re-creates it."""

    def __init__(self) -> None:
        super().__init__("This session was deleted. Start a new session or open another one.")
