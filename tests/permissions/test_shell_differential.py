"""The parser against bash itself (issue #29): for thousands of generated lines, whenever
permissions/shell_parse.py says "these simple commands, nothing else", bash runs exactly those.

The lines glue operators to words (`echo harmless;(touch X;)`), quote and escape, continue lines
with `\\`, and mix in every construct the parser must call complex. bash runs each with `PATH`
pointing at stub programs that only record their argv (and a `command_not_found_handle` doing the
same for any other name), in an empty directory of its own, so globs match nothing. For a line the
parser calls simple, what bash ran must equal what the parser listed, each word as
shell_expand.expand_word gives it (`~`, `$V`); only where a command may not run (`||`, a failed
`<`, a program given by a path) may bash run fewer.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from kimi_acp.permissions.shell_expand import expand_word
from kimi_acp.permissions.shell_parse import parse_line

STUBS = ("a", "b", "git", "ls", "cat", "touch", "rm", "sed")
WORDS = (
    "x", "-n", "--oneline", "status", "harmless", "'q;r'", '"s|t"', '"$V"', "'$V'", "$V", "${V}", "a\\;b", "\\|",
    "a\\ b", "*", "f?", "[ab]", "~", "~/p", '"~"', "x#y", "#c", "'a\\'", '"a\\"b"', '"\\$V"', "'('", '")"', "{a,b}",
    "x{,}y", "@{u}", "$'e'", "$(b)", "`b`", "<(b)", "$((1))", '"$(b)"', "$1", "$@", "${V%x}", "=", "a=b", "V=1",
    "'\n'", '"a\nb"', "é", "\u202e", '"a\\\nb"', "a\\\nb", "\\\n",
)  # fmt: skip
OPERATORS = (
    ";", "&&", "||", "|", "\n", ";(", "|(", "&&(", "(", ")", ";)", "{", "}", "&", ">", "<", ">|", "2>&1",
    ">/dev/null", "2>/dev/null", "\\\n", " \\\n", "#", "$(", "`", "<<<", "<<E\nE\n", ">>", "&>", "|&", "!", ";;",
    "< IN", "<IN", "\t", "\r", "if", "then", "fi", "for", "in", "do", "done", "case", "esac", "function", "time",
    "coproc", "[[", "]]", "{ ", " }", "a=b ", "export ", "declare ", "while", "select", "2>&-", ">&2",
)  # fmt: skip
RECORD = 'r="$IDX"; r="$r\x1e${0##*/}"; for a in "$@"; do r="$r\x1f$a"; done; printf "%s\x1d" "$r" >> "$LOG"'
DRIVER = (
    'command_not_found_handle() { r="$IDX"; r="$r\x1e$1"; shift; for a in "$@"; do r="$r\x1f$a"; done; '
    'printf "%s\x1d" "$r" >> "$LOG"; return 0; }; '
    'i=0; while IFS= read -r -d "" line; do /bin/mkdir "$i"; '
    '( cd "$i" && export IDX=$i && eval "$line" ) </dev/null >/dev/null 2>&1; i=$((i+1)); done'
)


def generate(rng: random.Random) -> str:
    """A line of one to three commands: a stub and up to three words, operators glued in at random."""
    out = ""
    commands = [[rng.choice(STUBS)] + [rng.choice(WORDS) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(1, 3))]
    for index, words in enumerate(commands):
        for word in words:
            out += ("" if rng.random() < 0.15 or not out else " ") + word
            if rng.random() < 0.12:
                out += rng.choice(("", " ")) + rng.choice(OPERATORS)
        if index < len(commands) - 1:
            out += rng.choice(("", " ")) + rng.choice(OPERATORS[:5]) + rng.choice(("", " "))
    return out


def run_in_bash(lines: list[str], root: Path) -> dict[int, list[tuple[str, ...]]]:
    stubs = root / "bin"
    stubs.mkdir()
    for name in STUBS:
        (stubs / name).write_text(f"#!/bin/sh\n{RECORD}\n")
        (stubs / name).chmod(0o755)
    (root / "work").mkdir()
    log = root / "log"
    env = {"PATH": str(stubs), "LOG": str(log), "HOME": str(root / "home"), "V": "vv"}
    subprocess.run(["/bin/bash", "-c", DRIVER], input="\0".join(lines).encode() + b"\0", cwd=root / "work", env=env,
                   timeout=240, check=True)  # fmt: skip
    runs: dict[int, list[tuple[str, ...]]] = {}
    for record in log.read_bytes().decode("utf-8", "surrogateescape").split("\x1d"):
        if record:
            index, _, rest = record.partition("\x1e")
            runs.setdefault(int(index), []).append(tuple(rest.split("\x1f")))
    return runs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bash_runs_exactly_the_simple_commands_the_parser_lists(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    (tmp_path / "in").write_text("")
    lines = [generate(rng).replace("IN", str(tmp_path / "in")) for _ in range(900)]
    runs = run_in_bash(lines, tmp_path)
    env = {"HOME": str(tmp_path / "home"), "V": "vv"}
    simple = 0
    for index, line in enumerate(lines):
        parsed = parse_line(line)
        if parsed.complex:
            continue
        simple += 1
        expected = []
        for command in parsed.commands:
            argv: list[str] = []
            for word in command.words:
                expanded = expand_word(word, env, tmp_path / "work" / str(index))
                assert expanded is not None, (line, word)  # a simple line's words all expand
                argv += expanded
            expected.append(tuple(argv))
        ran = runs.get(index, [])
        may_skip = "||" in line or "<" in line or any("/" in argv[0] for argv in expected if argv)
        if may_skip:
            assert all(argv in expected for argv in ran), (line, expected, ran)
        else:
            assert sorted(ran) == sorted(expected), (line, expected, ran)
    assert simple > 200  # the generator is not only making complex lines


def test_the_attack_lines_of_issue_29_are_complex() -> None:
    for line in ("echo harmless;(touch X;)", "echo harmless|(touch X;)", "echo harmless&&(touch X;)",
                 "echo harmless x >| ../elsewhere/file"):  # fmt: skip
        assert parse_line(line).complex, line


def test_bash_is_there() -> None:
    """The differential test needs bash: on a machine without it, this fails instead of the test
    above skipping."""
    assert os.access("/bin/bash", os.X_OK)
