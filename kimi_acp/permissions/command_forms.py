"""Which form of the table (command_table.py) a simple command is, read fail-closed.

`match_form` returns the form and what the command's arguments are (the files it reads, the
options it was given), or None: a program not in the table, an option or subcommand the form does
not list, an option word that is not plain text (`-$X` could be any option), a sed script that
is not only printing commands, a find expression with anything but the listed tests and prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .command_table import (
    FIND_FILE_ARGUMENTS,
    FIND_PRIMARIES,
    FORMS,
    GIT_GLOBAL_DIRECTORY,
    GIT_GLOBAL_FLAGS,
    SED_COMMANDS,
    SED_SUBSTITUTE_FLAGS,
    Form,
)
from .shell_expand import expand_word
from .shell_parse import Part, SimpleCommand, Word


@dataclass(frozen=True)
class FormMatch:
    """A simple command read as a form of the table."""

    form: Form
    files: tuple[Word, ...]  # what it reads: operands that are files, and file-valued options
    options: frozenset[str]  # the options it was given (by name)
    globals_used: bool = False  # git options before the subcommand (`git -C x log`)
    directory: Word | None = None  # git -C DIR: where git runs
    floating: tuple[Word, ...] = field(default=())  # operands whose expansion could turn into options
    operand_files: int = 0  # how many of `files` are operands (a recursive reader without one reads `.`)

    @property
    def recursive(self) -> bool:
        """Whether it reads whole directories (`grep -r`, `rg`, `git grep`)."""
        return self.form.always_recursive or bool(self.options & self.form.recursive)

    @property
    def follows_links(self) -> bool:
        return bool(self.options & self.form.follows)

    @property
    def key(self) -> tuple[str, ...]:
        """What "approve for this session" remembers: the form's words."""
        return self.form.words


def match_form(command: SimpleCommand) -> FormMatch | None:
    """The table's form of `command`, or None (see the module docstring)."""
    words = command.words
    name = command.program
    if name is None or "/" in name:
        return None  # `./cat` is whatever file that is
    if name == "git":
        return _match_git(words)
    form = _single_forms().get(name)
    if form is None:
        return None
    return _match_args(form, words[1:])


@lru_cache(maxsize=1)
def _single_forms() -> dict[str, Form]:
    return {form.words[0]: form for form in FORMS if len(form.words) == 1}


@lru_cache(maxsize=1)
def _git_forms() -> dict[tuple[str, ...], Form]:
    return {form.words[1:]: form for form in FORMS if form.words[0] == "git"}


def _match_git(words: tuple[Word, ...]) -> FormMatch | None:
    index = 1
    directory: Word | None = None
    globals_used = False
    while index < len(words):
        value = words[index].value if words[index].plain else None
        if value in GIT_GLOBAL_FLAGS:
            globals_used = True
            index += 1
        elif value == GIT_GLOBAL_DIRECTORY and index + 1 < len(words) and directory is None:
            directory = words[index + 1]
            globals_used = True
            index += 2
        else:
            break
    forms = _git_forms()
    for length in (2, 1):
        sub = tuple(w.value if w.plain and w.value is not None else "\0" for w in words[index : index + length])
        form = forms.get(sub) if len(sub) == length else None
        if form is not None:
            found = _match_args(form, words[index + length :])
            if found is None:
                return None
            files = found.files + ((directory,) if directory is not None else ())
            return FormMatch(found.form, files, found.options, globals_used, directory, found.floating, found.operand_files)
    return None


def _literal(text: str) -> Word:
    return Word(text, (Part("text", text, quoted=True),))


def _match_args(form: Form, args: tuple[Word, ...]) -> FormMatch | None:
    if form.operands == "find":
        return _match_find(form, args)
    operands: list[Word] = []
    values: list[tuple[str, Word]] = []  # (option, its value)
    seen: set[str] = set()
    index = 0
    after_dashes = False
    while index < len(args):
        word = args[index]
        index += 1
        text = word.value if word.plain else None
        if after_dashes or (text is not None and (not text.startswith("-") or text == "-")):
            operands.append(word)
            continue
        if text is None:
            if word.parts and word.parts[0].kind == "text" and word.parts[0].text.startswith("-"):
                return None  # `-$X`, `--x=$Y`: an option this cannot read
            operands.append(word)
            continue
        if text == "--":
            after_dashes = True
            continue
        taken = _option(form, text, args[index] if index < len(args) else None)
        if taken is None:
            return None
        name, value, used_next = taken
        seen.add(name)
        if value is not None:
            values.append((name, value))
        index += used_next
    return _operands(form, operands, values, frozenset(seen), after_dashes)


def _option(form: Form, text: str, following: Word | None) -> tuple[str, Word | None, int] | None:
    """(option name, its value, 1 when the value was the next word) or None when not allowed."""
    if text.startswith("--"):
        name, equals, value = text.partition("=")
        if equals:
            return (name, _literal(value), 0) if name in form.valued else None
        if name in form.flags:
            return name, None, 0
        if name in form.valued and following is not None:
            return name, following, 1
        return None
    if form.numbers and text[1:].isdigit():
        return "-N", None, 0
    if text in form.flags:
        return text, None, 0
    if text[:2] in form.valued:
        if len(text) > 2:
            return text[:2], _literal(text[2:]), 0
        return (text[:2], following, 1) if following is not None else None
    for position, letter in enumerate(text[1:], start=1):
        option = "-" + letter
        if option in form.valued:
            rest = text[position + 1 :]
            if rest:
                return option, _literal(rest), 0
            return (option, following, 1) if following is not None else None
        if letter not in form.letters:
            return None
    return text, None, 0  # a bundle of flags (`-la`): each letter counts (_letters_seen)


def _operands(
    form: Form, operands: list[Word], values: list[tuple[str, Word]], seen: frozenset[str], after_dashes: bool
) -> FormMatch | None:
    letters = _letters_seen(seen)
    options = seen | letters
    files = [value for name, value in values if name in form.paths]
    from_options = len(files)
    if operands and form.operands_only_with and not (options & form.operands_only_with):
        return None
    if form.max_operands is not None and len(operands) > form.max_operands:
        return None
    kind = form.operands
    if kind == "none":
        if operands:
            return None
    elif kind == "text":
        pass
    elif kind == "paths" or kind == "revisions+paths":
        files += operands
    elif kind == "pattern+paths":
        given = options & {"-e", "--regexp", "-f", "--file"}
        files += operands if given else operands[1:]
        if not given and not operands:
            return None
    elif kind == "script+paths":
        scripts = [value for name, value in values if name in ("-e", "--expression")]
        if not scripts:
            if not operands:
                return None
            scripts, operands = [operands[0]], operands[1:]
        if not all(script.plain and sed_prints_only(script.value or "") for script in scripts):
            return None
        files += operands
    floating = tuple(word for word in operands if not after_dashes and not word.plain)
    return FormMatch(form, tuple(files), options, floating=floating, operand_files=len(files) - from_options)


def _letters_seen(seen: frozenset[str]) -> frozenset[str]:
    """`-rn` counts as `-r` and `-n` too."""
    out: set[str] = set()
    for name in seen:
        if not name.startswith("--") and len(name) > 2 and name[1:].isalpha():
            out.update("-" + letter for letter in name[1:])
    return frozenset(out)


def _match_find(form: Form, args: tuple[Word, ...]) -> FormMatch | None:
    index = 0
    seen: set[str] = set()
    while index < len(args) and args[index].plain and (args[index].value or "") in ("-H", "-L", "-P"):
        seen.add(args[index].value or "")
        index += 1
    starts: list[Word] = []
    while index < len(args):
        word = args[index]
        text = word.value if word.plain else None
        if text is not None and (text.startswith("-") or text in ("(", ")", "!", ",")):
            break
        if text is None and word.parts and word.parts[0].kind == "text" and word.parts[0].text[:1] in ("-", "(", "!"):
            return None
        starts.append(word)
        index += 1
    files = list(starts) or [_literal(".")]
    while index < len(args):
        word = args[index]
        text = word.value if word.plain else None
        if text is None or text not in FIND_PRIMARIES:
            return None
        arity = FIND_PRIMARIES[text]
        if arity:
            if index + 1 >= len(args) or not args[index + 1].plain:
                return None  # a glob or a variable could turn into another primary
            if text in FIND_FILE_ARGUMENTS:
                files.append(args[index + 1])
        if text == "-follow":
            seen.add(text)
        index += 1 + arity
    return FormMatch(form, tuple(files), frozenset(seen), floating=tuple(w for w in starts if not w.plain),
                     operand_files=len(starts))


def operands_stay_operands(match: FormMatch, cwd: Path, env: Mapping[str, str]) -> bool:
    """Whether no operand with a glob or a variable expands to a word that starts with `-` (a file
    named `--compress-program=sh` in the directory would turn `sort *` into another command)."""
    for word in match.floating:
        expanded = expand_word(word, env, cwd)
        if expanded is None or any(text.startswith("-") for text in expanded):
            return False
    return True


# ---------------------------------------------------------------------------- sed scripts


def sed_prints_only(script: str) -> bool:
    """Whether a sed script holds only the commands of command_table.SED_COMMANDS, `s` (with the
    flags SED_SUBSTITUTE_FLAGS) and `y`, each delimited by `/`, with no `[` in a regular
    expression (GNU sed lets a bracket expression hide a delimiter, so `s/[/]/x/w f` writes a file)
    and nothing else: no `e`, `r`, `R`, `w`, `W`, no comment, no other delimiter."""
    return _SedReader(script).read()


class _SedReader:
    def __init__(self, script: str) -> None:
        self.text = script
        self.at = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def skip_blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.at += 1

    def read(self) -> bool:
        depth = 0
        while True:
            while self.peek() in (" ", "\t", "\n", ";"):
                self.at += 1
            char = self.peek()
            if not char:
                return depth == 0
            if char == "}":
                depth -= 1
                if depth < 0:
                    return False
                self.at += 1
                continue
            if not self.address():
                return False
            self.skip_blanks()
            if self.peek() == ",":
                self.at += 1
                self.skip_blanks()
                if not self.address(second=True):
                    return False
            self.skip_blanks()
            if self.peek() == "!":
                self.at += 1
                self.skip_blanks()
            command = self.peek()
            self.at += 1
            if command == "{":
                depth += 1
                continue
            if command == "s":
                if not (self.delimited() and self.delimited(opened=True)):
                    return False
                while self.peek() and self.peek() in SED_SUBSTITUTE_FLAGS:
                    self.at += 1
            elif command == "y":
                if not (self.delimited() and self.delimited(opened=True)):
                    return False
            elif command in SED_COMMANDS and command != "{":
                if command in "lLqQ":
                    self.skip_blanks()
                    while self.peek().isdigit():
                        self.at += 1
            else:
                return False
            self.skip_blanks()
            if self.peek() not in ("", ";", "\n", "}"):
                return False

    def address(self, *, second: bool = False) -> bool:
        char = self.peek()
        if char.isdigit() or (second and char in "+~"):
            self.at += 1
            while self.peek().isdigit():
                self.at += 1
            if not second and self.peek() == "~":
                self.at += 1
                while self.peek().isdigit():
                    self.at += 1
            return True
        if char == "$":
            self.at += 1
            return True
        if char == "/":
            if not self.delimited():
                return False
            while self.peek() in ("I", "M"):
                self.at += 1
            return True
        if char == "\\":
            return False  # a custom delimiter: not read here
        return not second

    def delimited(self, *, opened: bool = False) -> bool:
        """Past a `/…/` part (`opened`: its first `/` was the previous part's last)."""
        if not opened:
            if self.peek() != "/":
                return False
            self.at += 1
        while True:
            char = self.peek()
            if char in ("", "\n", "["):
                return False
            self.at += 1
            if char == "/":
                return True
            if char == "\\":
                if self.peek() in ("", "\n"):
                    return False
                self.at += 1
