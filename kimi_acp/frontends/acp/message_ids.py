"""`messageId`s of a session's message chunks: the same live and when `session/load` replays them.

ACP groups `user_message_chunk`, `agent_message_chunk` and `agent_thought_chunk` by `messageId`: a
changed id starts a new message. Clients use it to tell consecutive messages apart and to drop the
copies a reload sends again, so a replayed message must carry the id it had live. Nothing random
can give that, and the agent keeps no id of its own per message; the ids are derived from what
`wire.jsonl` keeps instead:

- the turn: the timestamp of its `TurnBegin` record. Live, it is the time the recorder has just
  written (the recorder hears each message before the ACP session does); on load, the time read back;
- the message within the turn: counted in the order of the turn's messages, which the recorder
  keeps. A new message starts at each step, retry, steer, tool call and result, compaction, and
  wherever the kind of chunk changes (the prompt, thinking, the answer).

What is shown live only (a retry notice, the MCP status, a model error) is not in the replay: it
gets an id of its own (`note`) that moves nothing else.
"""

from __future__ import annotations

import uuid
from typing import Literal

Kind = Literal["user", "thought", "agent"]


class MessageIds:
    """The ids of one session view's chunks (one per `UpdateMapper`)."""

    def __init__(self) -> None:
        self._turn = uuid.uuid4().hex[:12]  # until a recorded turn begins (a mapper fed by hand)
        self._count = 0
        self._kind: Kind | None = None
        self._notes = 0

    def turn(self, recorded_at: float | None) -> None:
        """A turn began; `recorded_at` is the timestamp of its `TurnBegin` record (None: unknown)."""
        self._turn = turn_key(recorded_at) if recorded_at is not None else uuid.uuid4().hex[:12]
        self._count = 0
        self._kind = None
        self._notes = 0

    def boundary(self) -> None:
        """The next chunk starts a new message."""
        self._kind = None

    def next(self, kind: Kind) -> str:
        """The id of a chunk of this kind: the current message's, or a new one's."""
        if kind != self._kind:
            self._count += 1
            self._kind = kind
        return f"{self._turn}-{self._count}"

    def note(self) -> str:
        """The id of a message shown live only: its own, leaving the count the replay follows alone."""
        self._notes += 1
        return f"{self._turn}-note-{self._notes}"


def turn_key(recorded_at: float) -> str:
    """A turn's part of its messages' ids: its record's time in microseconds, in hex."""
    return format(round(recorded_at * 1_000_000), "x")
