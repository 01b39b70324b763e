"""A tool call's arguments while they stream: read incrementally, not re-parsed per delta.

The card of a call shows a title from one argument (`WriteFile: src/app.py`) and the arguments
(`rawInput`) before the model has finished writing them. Re-parsing the whole argument string on
every delta made a long WriteFile cost O(n²); here each delta is fed once to `streamingjson`'s
lexer, which keeps the state of the unfinished JSON and completes it (closing strings, objects,
arrays) into a document that `json` can read.

A value is shown once it is complete: a string still being written is left out (the card of
`{"command": "touc` reads `{}` and its title `Shell`, never `Shell: touc`), as is a member whose
value has not started. Only the head of the arguments is watched: once the title's argument is complete (a later key
started) or WATCH_LIMIT characters were read, deltas are only collected, and the arguments are
read whole once, when the call is complete (`final`). A title argument that comes after a very
long one therefore shows when the call is complete, not while it streams.
"""

from __future__ import annotations

import json
from typing import Any

WATCH_LIMIT = 8192  # characters of the arguments read incrementally, at most
_FEED_SLICE = 512  # streamingjson copies the rest of its input per character: feed it in slices


class StreamingArguments:
    """The arguments of one call: `append` each delta, read `partial` while they stream and
    `final` once they are complete."""

    def __init__(self, first: str | None = None) -> None:
        self._chunks: list[str] = []
        self._text: str | None = ""
        self._lexer: Any = None
        self._fed = 0
        self._watching = True
        self._partial: dict[str, Any] = {}
        self._last_key: str | None = None  # the last key begun, placeholders included (see `complete`)
        self._closed = False  # the text read so far ends a value: `}`, `]` or `,`
        self._final: dict[str, Any] | None = None
        self._unlexed = ""  # counted in _fed but not given to the lexer yet (see _read_whole)
        self._in_string = False  # the text read so far ends inside a JSON string
        self._escaped = False  # ... right after its backslash
        if first and not self._read_whole(first):
            self.append(first)

    def _read_whole(self, first: str) -> bool:
        """A call that arrives complete (a replayed one, or a provider that sends arguments in one
        piece) is read with `json` alone; the lexer is fed this text only if more deltas follow."""
        try:
            value = json.loads(first)
        except ValueError:
            return False
        if not isinstance(value, dict):
            return False
        self._chunks.append(first)
        self._text = first
        self._partial = _without_trailing_half_pair(value)
        self._last_key = next(reversed(value), None)
        self._unlexed = first[:WATCH_LIMIT]  # a complete object: it ends outside any string
        self._fed = len(self._unlexed)
        self._watching = self._fed < WATCH_LIMIT
        return True

    @property
    def text(self) -> str:
        """Everything received so far, joined."""
        if self._text is None:
            self._text = "".join(self._chunks)
            self._chunks = [self._text]
        return self._text

    @property
    def partial(self) -> dict[str, Any]:
        """The arguments as far as they can be read so far ({} before the first key)."""
        return self._partial

    @property
    def watching(self) -> bool:
        return self._watching

    def append(self, fragment: str) -> bool:
        """Add a delta; True when `partial` changed."""
        if not fragment:
            return False
        self._chunks.append(fragment)
        self._text = None
        self._final = None
        if not self._watching:
            return False
        room = WATCH_LIMIT - self._fed
        piece = fragment[:room]
        self._fed += len(piece)
        self._scan(piece)
        if self._fed >= WATCH_LIMIT:
            self._watching = False
        lexer = self._get_lexer()
        for start in range(0, len(piece), _FEED_SLICE):
            lexer.append_string(piece[start : start + _FEED_SLICE])
        significant = piece.rstrip()
        if significant:
            self._closed = significant[-1] in "}],"
        try:
            value = json.loads(lexer.complete_json())
        except ValueError:
            return False  # e.g. text after the object: the whole read at the end decides
        if not isinstance(value, dict):
            return False
        self._last_key = next(reversed(value), None)
        value = _without_trailing_half_pair(value)
        if not self._closed:
            value = _only_known(value, string_open=self._in_string)
        if value == self._partial:
            return False
        self._partial = value
        return True

    def _scan(self, piece: str) -> None:
        """Follow whether the text ends inside a string, one new piece at a time."""
        in_string, escaped = self._in_string, self._escaped
        for char in piece:
            if escaped:
                escaped = False
            elif char == "\\" and in_string:
                escaped = True
            elif char == '"':
                in_string = not in_string
        self._in_string, self._escaped = in_string, escaped

    def stop_watching(self) -> None:
        """Nothing more is needed while the arguments stream (the title is settled)."""
        self._watching = False
        self._lexer = None
        self._unlexed = ""

    def complete(self, key: str) -> bool:
        """Whether the value of `key` is final: a later key has started after it."""
        return key in self._partial and self._last_key != key

    def final(self) -> dict[str, Any]:
        """The complete arguments as an object ({} when they are not a JSON object)."""
        if self._final is None:
            try:
                value = json.loads(self.text or "{}")
            except ValueError:
                value = {}
            self._final = value if isinstance(value, dict) else {}
        return self._final

    def _get_lexer(self) -> Any:
        if self._lexer is None:
            # small and pure Python; loaded with the first streamed call. It ships no type hints.
            import streamingjson  # type: ignore[import-untyped]  # no py.typed, no stubs package

            self._lexer = streamingjson.Lexer()
            unlexed, self._unlexed = self._unlexed, ""
            for start in range(0, len(unlexed), _FEED_SLICE):
                self._lexer.append_string(unlexed[start : start + _FEED_SLICE])
        return self._lexer


def _only_known(value: dict[str, Any], *, string_open: bool) -> dict[str, Any]:
    """Drop what the lexer made up to close the JSON: the last member still being written. A key
    whose value has not started reads as `null`, `t` as `true`, `-` as `0` (and `{"comm` is a key
    `comm`); a string still being written reads as what came of it so far. A card must never show
    such placeholders (acpx showed `{"command": null}`) nor half a value (a title `Shell: touc` that
    is not what runs). Not called when the text read so far ends a value (`}`, `]`, `,`);
    otherwise a real trailing number or `null` shows once more text follows."""
    container: Any = value
    while True:
        if isinstance(container, dict) and container:
            key = next(reversed(container))
            last = container[key]
            if isinstance(last, (dict, list)):
                container = last
                continue
            if string_open or not isinstance(last, str):
                del container[key]
        elif isinstance(container, list) and container:
            last = container[-1]
            if isinstance(last, (dict, list)):
                container = last
                continue
            if string_open or not isinstance(last, str):
                container.pop()
        return value


def _without_trailing_half_pair(value: dict[str, Any]) -> dict[str, Any]:
    """A string cut between the two `\\uXXXX` halves of one character ends in a lone high
    surrogate: dropped until the other half arrives (it could not be encoded as UTF-8)."""
    for key, item in value.items():
        if isinstance(item, str) and item and "\ud800" <= item[-1] <= "\udbff":
            value[key] = item[:-1]
    return value
