"""Text a model or an MCP server wrote, made safe to show on an approval card: what is shown is
what runs, with nothing hidden, reordered or rendered as markup.

A card built from such text can lie in three ways: a character the eye does not see (a
right-to-left override, a zero-width space, a terminal escape such as ESC[8m that hides what
follows, an OSC 8 hyperlink), a fence or code span the text itself closes (a command holding
```` ``` ```` ends the code block and goes on as Markdown: a fake **Sandbox:** line, a line hidden in
an HTML comment), or a title cut where the payload sits. So:

- `visible` keeps only characters known to show as themselves (the allowlist below) and turns
  every other one into an escape (`\\u202e`, `\\x1b`, `\\r`) saying whether it did, so the card can
  add `escapes_note`; long runs of blank space (a payload pushed off screen) become markers.
- `fence` and `code_span` wrap code in backticks longer than any run inside (CommonMark's rule).
- `one_line` is a bounded title: the whole text or its beginning and a final "…", never a cut
  middle; the card's content always holds the whole text.
- `name_text` is a name a server chose (an MCP tool's), shown inside a code span: one line, no
  backtick, bounded.

What stays as it is: printable ASCII; letters, digits, punctuation and symbols of every script
(categories L*, N*, P*, S*); combining marks right after such a character, at most
`MAX_MARKS` in a row; newline and tab in multi-line text. Everything else is escaped: controls
(C0, DEL, C1), format characters (bidi embeddings, overrides and isolates, LRM/RLM/ALM, zero-width
space/joiners, word joiner, BOM, soft hyphen, tag characters), line and paragraph separators,
spaces other than U+0020, private-use, surrogate and unassigned code points, and the
default-ignorable or blank characters whose category looks harmless (Hangul fillers, U+2800,
the combining grapheme joiner, Mongolian and Khmer invisibles, variation selectors).

Variation selectors can carry hidden data (one selector per byte after any visible character), so
they are escaped, except the two everyday ones: U+FE0E/U+FE0F (text / emoji presentation) right
after a visible character, where they can hide at most one bit per character. The legitimate
joiners (the ZWJ of an emoji sequence, the ZWNJ of Persian or Indic text) are escaped too: a card
is about what runs, and an escape there is honest.

Standard library only; pure functions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple

MAX_MARKS = 4  # combining marks kept after one character (Vietnamese, Indic stacks); more can smear over other lines
PAD_SPACES = 32  # a run of more spaces or tabs than this is shown as a marker: text pushed off to the right
PAD_LINES = 5  # more blank lines in a row than this: a marker, text pushed down out of sight
NAME_MAX = 64  # characters of a server-chosen name on a card
ELLIPSIS = "…"

_KEPT = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So"})
_MARKS = frozenset({"Mn", "Mc", "Me"})
_PRESENTATION = frozenset({0xFE0E, 0xFE0F})
# Default-ignorable code points (Unicode DerivedCoreProperties) whose category is not already
# escaped, and characters that show as blank: they would pass the category check unseen.
_INVISIBLE = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF),
)
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_PRINTABLE_LINES = re.compile(r"[\x20-\x7e\n\t]*")
_PRINTABLE_LINE = re.compile(r"[\x20-\x7e]*")
_PADDING = re.compile(rf"[ \t]{{{PAD_SPACES + 1},}}|\n(?:[ \t]*\n){{{PAD_LINES},}}")
_BACKTICKS = re.compile(r"`+")
_TOKEN = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[ntr])|⟨[^⟩\n]*⟩")  # an escape or a marker
_INFO = re.compile(r"[A-Za-z0-9_+.-]*")
# ASCII punctuation without meaning inside a line of Markdown; the rest gets a backslash.
_PLAIN_PUNCTUATION = frozenset(".,:;'\"?/()-+%@#")
_BLOCK_START = re.compile(r"^(\d{0,9})([#+>.)-])")


class Shown(NamedTuple):
    text: str
    escaped: bool  # something was shown as an escape or a marker (a newline or tab of one-line text does not count)


def escape(char: str) -> str:
    """One character as a visible escape, in Python's and bash's `$'…'` notation."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_INVISIBLE_CODES = frozenset(code for low, high in _INVISIBLE for code in range(low, high + 1))


def _invisible(code: int) -> bool:
    return code in _INVISIBLE_CODES


def _stays(char: str, category: str) -> bool:
    """A character shown as itself wherever it stands (not a mark, which needs a letter before it)."""
    return category in _KEPT and not _invisible(ord(char))


@functools.cache
def _kept_class() -> str:
    """The BMP characters beyond ASCII that stay, as the ranges of a regex character class: built
    on first use (some 30 ms) from the Unicode database of this Python."""
    from unicodedata import category

    ranges: list[str] = []
    first = previous = -2
    for code in range(0xA0, 0x10000):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF or not _stays(char, category(char)):
            continue
        if code != previous + 1:
            if first >= 0:
                ranges.append(f"{chr(first)}-{chr(previous)}" if previous > first else chr(first))
            first = code
        previous = code
    ranges.append(f"{chr(first)}-{chr(previous)}" if previous > first else chr(first))
    return "".join(ranges)  # all beyond ASCII: nothing in it is special in a character class


@functools.cache
def _odd_runs(lines: bool, padding: bool) -> re.Pattern[str]:
    """Runs of characters that need a look (anything but printable ASCII, the newlines and tabs of
    multi-line text, and the BMP characters that stay), and with `padding` long blank runs."""
    odd = "[^\\x20-\\x7e" + ("\\n\\t" if lines else "") + _kept_class() + "]+"
    blank = rf"[ \t]{{{PAD_SPACES + 1},}}" + (rf"|\n(?:[ \t]*\n){{{PAD_LINES},}}" if lines else "")
    return re.compile(f"(?P<blank>{blank})|(?P<odd>{odd})" if padding else f"(?P<odd>{odd})")


def visible(text: str, *, lines: bool = True, padding: bool = True, crlf: bool = False) -> Shown:
    """`text` with every character not known to show as itself escaped.

    `lines`: newlines and tabs stay (code, a file); otherwise they are escaped too (a title, a
    label), without counting as escaped. `padding`: long runs of blank space become markers
    ("⟨200 spaces⟩"). `crlf`: a carriage return before a newline stays (a file's line endings)."""
    plain = _PRINTABLE_LINES if lines else _PRINTABLE_LINE
    if plain.fullmatch(text) and not (padding and _PADDING.search(text)):
        return Shown(text, False)
    escaped = False

    def shown(match: re.Match[str]) -> str:
        nonlocal escaped
        run = match.group()
        if match.lastgroup == "blank":
            escaped = True
            return _padding_marker(run)
        start = match.start()
        # A mark may follow what stays before the run: a letter, a digit, a symbol (never a blank).
        before = text[start - 1] if start else " "
        out, more = _odd_run(run, before not in " \t\n", crlf and text.startswith("\n", match.end()))
        escaped = escaped or more
        return out

    return Shown(_odd_runs(lines, padding).sub(shown, text), escaped)


def _odd_run(run: str, base: bool, crlf_after: bool) -> tuple[str, bool]:
    """One run of characters that need a look; `base`: the character before it takes marks;
    `crlf_after`: a carriage return ending the run is a CRLF line ending that stays."""
    from unicodedata import category

    out: list[str] = []
    escaped = False
    marks = 0
    last = len(run) - 1
    for i, char in enumerate(run):
        kind = category(char)
        code = ord(char)
        if char == "\r" and i == last and crlf_after:
            out.append(char)
            base, marks = False, 0
        elif _stays(char, kind) and code >= 0x80:
            out.append(char)
            base, marks = True, 0
        elif kind in _MARKS and base and marks < MAX_MARKS and (
            not _invisible(code) or (code in _PRESENTATION and marks == 0)
        ):
            out.append(char)
            marks += 1
        else:
            out.append(escape(char))
            escaped = escaped or char not in "\n\t"
            base, marks = False, 0
    return "".join(out), escaped


def _padding_marker(run: str) -> str:
    if "\n" in run:
        blank = run.count("\n") - 1
        return f"\n⟨{blank} blank lines⟩\n"
    kinds = set(run)
    what = "spaces" if kinds == {" "} else "tabs" if kinds == {"\t"} else "spaces and tabs"
    return f"⟨{len(run)} {what}⟩"


def escapes_note(what: str = "command") -> str:
    """The warning line of a card that shows escapes (`what`: "command" or "request")."""
    return (
        f"The {what} holds characters that would not show as themselves (invisible, control or bidi "
        "characters, long blank runs): they are shown as escapes such as \\u202e, or as markers."
    )


def fence(code: str, info: str = "") -> str:
    """A fenced code block showing `code` verbatim: the fence is longer than any backtick run in it,
    so nothing inside can close it. `info` (a language) is dropped unless it is a plain word."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    ticks = "`" * max(3, longest + 1)
    if not _INFO.fullmatch(info):
        info = ""
    body = code if code.endswith("\n") else code + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def code_span(text: str) -> str:
    """`text` on one line as an inline code span that nothing inside it can close; a leading or
    trailing backtick or space gets the padding space CommonMark strips again."""
    shown = visible(text, lines=False).text
    if not shown:
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    ticks = "`" * (longest + 1)
    pad = shown[0] == "`" or shown[-1] == "`" or (shown[0] == " " and shown[-1] == " " and shown.strip(" ") != "")
    if pad:
        shown = f" {shown} "
    return f"{ticks}{shown}{ticks}"


def one_line(text: str, limit: int | None = None) -> str:
    """`text` as one visible line of at most `limit` characters: whole, or its beginning and "…"
    (never a cut middle, never half an escape)."""
    shown = visible(text, lines=False).text
    if limit is None or len(shown) <= limit:
        return shown
    cut = max(0, limit - len(ELLIPSIS))
    # Never half an escape (`\u202e`) or a marker (`⟨40 spaces⟩`): cut before one that straddles.
    for match in _TOKEN.finditer(shown, max(0, cut - 40), cut + 40):
        if match.start() < cut < match.end():
            cut = match.start()
            break
    return shown[:cut] + ELLIPSIS


def name_text(name: str, limit: int = NAME_MAX) -> Shown:
    """A name another program chose (an MCP server's tool), for a code span on a card: one line,
    backticks escaped, at most `limit` characters."""
    shown = visible(name, lines=False)
    text = shown.text.replace("`", escape("`"))
    escaped = shown.escaped or text != shown.text or "\n" in name or "\t" in name
    if len(text) > limit:
        text = one_line(text, limit)
    return Shown(text, escaped)


def markdown_text(text: str) -> str:
    """`text` as one line of Markdown that renders as itself: ASCII punctuation that could start
    markup (emphasis, code, links, HTML, escapes) gets a backslash, everything else stays."""
    shown = visible(text, lines=False).text.lstrip(" ")  # leading blanks: a code block, or nothing
    inline = "".join(
        "\\" + char if char.isascii() and not char.isalnum() and char != " " and char not in _PLAIN_PUNCTUATION else char
        for char in shown
    )
    # At the start of a line (or of a list item) `#`, `-`, `+`, `>` or `1.` would begin a block.
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), inline, count=1)


def shown_data(value: Any, show: Callable[[str], str] | None = None) -> Any:
    """Every string (keys too) of JSON-like data made visible: a tool call's arguments on a card."""
    show = show or (lambda text: visible(text, padding=False).text)
    if isinstance(value, str):
        return show(value)
    if isinstance(value, list):
        return [shown_data(item, show) for item in value]
    if isinstance(value, dict):
        return {show(key) if isinstance(key, str) else key: shown_data(item, show) for key, item in value.items()}
    return value
