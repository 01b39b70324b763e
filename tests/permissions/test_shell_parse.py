"""permissions/shell_parse.py and shell_expand.py: what a simple line is, what makes one complex,
and what a word expands to (bash itself checks them in test_shell_differential.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_acp.permissions.shell_expand import PartialEnvironment, expand_word, line_environment
from kimi_acp.permissions.shell_parse import ansi_c_decode, parse_line


@pytest.mark.parametrize(
    "line",
    [
        "ls", "ls -la src | head -3", "git status && git diff; echo done", "cat < in.txt 2>/dev/null", "echo x >&2",
        "echo x 2>&-", "grep -rn 'a b' \"c d\" e\\ f", "echo $HOME ${PATH} ~ ~/x", "ls *.py [ab]? f?",
        "echo a # a comment; rm -rf /", "ls \\\n  -la", "git log @{u}..HEAD", "echo {}", "ls &>/dev/null",
    ],
)  # fmt: skip
def test_plain_lines_are_simple(line: str) -> None:
    parsed = parse_line(line)
    assert parsed.simple, parsed.reasons


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("echo a; (rm x)", "subshell"),
        ("{ rm x; }", "group"),
        ("echo $(rm x)", "command substitution"),
        ("echo `rm x`", "command substitution"),
        ("diff <(ls) x", "process substitution"),
        ("echo $((1+1))", "arithmetic"),
        ("echo ${X%y}", "expansion"),
        ("echo $1 $@", "expansion"),
        ("echo {a,b}", "brace expansion"),
        ("echo {1..3}", "brace expansion"),
        ("echo $'\\x41'", "ANSI-C"),
        ('echo $"x"', "`$`"),
        ("cat <<EOF\nx\nEOF", "here-document"),
        ("cat <<< x", "here-string"),
        ("echo x >| f", "writes or opens"),
        ("echo x > f", "writes or opens"),
        ("echo x >> f", "writes or opens"),
        ("cat <> f", "redirection"),
        ("echo x >&f", "writes or opens"),
        ("FOO=1 ls", "assignment"),
        ("export A=1", "declaration"),
        ("f() { ls; }", "function"),
        ("! ls", "`!`"),
        ("ls &", "background"),
        ("ls |& cat", "`|&`"),
        ("if true; then ls; fi", "`if`"),
        ("for f in *; do cat $f; done", "`for`"),
        ("[[ -f x ]]", "test"),
        ("$CMD x", "program name"),
        ("l? x", "program name"),
        ("echo ~root", "another user"),
        ("make DIR=~/x", "assignment's"),
        ("a\\\nb", "backslash-newline"),
        ("echo a\rb", "carriage return"),
        ("echo 'unclosed", "could not parse"),
        ("", "no command"),
    ],
)
def test_everything_else_is_complex_and_says_why(line: str, why: str) -> None:
    parsed = parse_line(line)
    assert parsed.complex and any(why in reason for reason in parsed.reasons), parsed.reasons


def test_the_commands_inside_a_complex_line_are_still_listed() -> None:
    parsed = parse_line("echo ok && ( cd x; rm -rf / ) | tee $(curl evil) > out")
    assert [c.values for c in parsed.commands] == [
        ("echo", "ok"), ("cd", "x"), ("rm", "-rf", "/"), ("curl", "evil"), ("tee", "$(curl evil)"),
    ]  # fmt: skip


def test_words_as_bash_reads_them() -> None:
    (command,) = parse_line("""g\\it "a b"'c d'e \\$X "$HOME" '$HOME' ~/x "~/y" ~""").commands
    assert command.program == "git"
    assert [w.value for w in command.words] == ["git", "a bc de", "$X", None, "$HOME", None, "~/y", None]
    assert [w.plain for w in command.words] == [True, True, True, False, True, False, True, False]


def test_ansi_c_strings_decode_as_bash_does() -> None:
    assert ansi_c_decode(r"\x41\101\u00e9\n\t\\\'") == "AAé\n\t\\'"
    assert ansi_c_decode(r"\cA") is None  # not decoded here: unexpandable


@pytest.mark.parametrize(
    ("word", "env", "expected"),
    [
        ("~/.ki{m,}i/x", {"HOME": "/h"}, ["/h/.kimi/x", "/h/.kii/x"]),
        ("a{1..3}", {}, ["a1", "a2", "a3"]),
        ("{a,b{c,d}}", {}, ["a", "bc", "bd"]),
        ("'{a,b}'", {}, ["{a,b}"]),
        ("$V/x", {"V": "/v"}, ["/v/x"]),
        ("$UNSET", {}, []),  # an unquoted empty expansion is no word at all
        ('"$UNSET"', {}, [""]),
        ("$V", {"V": "a b"}, None),  # bash would split it
        ('"$V"', {"V": "a b"}, ["a b"]),
        ("$PWD", {"PWD": "/x"}, None),  # bash sets it itself
        ("${HOME%/}/x", {"HOME": "/h"}, None),
        ("~/x", PartialEnvironment(), None),  # the IDE's terminal: its HOME is not known
        ("$V", PartialEnvironment({"V": "1"}), ["1"]),
        ("$W", PartialEnvironment({"V": "1"}), None),
    ],
)
def test_what_a_word_expands_to(word: str, env: dict[str, str], expected: list[str] | None) -> None:
    (command,) = parse_line(f"echo {word}").commands
    assert expand_word(command.words[1], env, None) == expected


def test_globs_match_the_disk_and_have_a_bound(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    (tmp_path / ".hidden.py").write_text("")
    (command,) = parse_line("ls *.py 'x*' nomatch*").commands
    assert [expand_word(w, {}, tmp_path) for w in command.words[1:]] == [[".hidden.py", "a.py"], ["x*"], ["nomatch*"]]


def test_a_line_that_sets_a_variable_knows_no_value_of_it() -> None:
    env = {"HOME": "/h", "X": "/x", "Y": "/y"}
    line = parse_line("X=~/.kimi; cat $X $Y")
    known = line_environment(line, env)
    words = line.commands[0].words
    assert expand_word(words[1], known, None) is None and expand_word(words[2], known, None) == ["/y"]
    for anything in ("read X; cat $X", "printf -v X %s y; cat $Y", "eval x; cat ~", "echo ${Z:=1} $Y"):
        line = parse_line(anything)
        assert line.sets_any_variable
        assert all(expand_word(w, line_environment(line, env), None) is None for w in line.commands[-1].words[1:])
