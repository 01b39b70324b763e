"""A shell command line as bash will run it: one real parse (tree-sitter-bash), read fail-closed.

Every decision about a Shell command (what a session approval or a `[permissions]` rule covers,
whether it only reads, which files it names) starts from `parse_line`. The tree is walked with an
allowlist: a line is **simple** when it is made only of

- simple commands whose words are plain text, single- or double-quoted strings, backslash escapes,
  globs (`*`, `?`, `[`), a leading `~` and plain `$NAME` / `${NAME}` variables,
- joined by `&&`, `||`, `;`, `|` and newlines (comments allowed),
- with redirections only to `/dev/null`, descriptor duplications (`2>&1`, `>&-`) and input from a
  plain file (`< in.txt`: a read, so it is one of the files the line names).

Anything else makes it **complex**: subshells and groups, `$(…)`, backticks, `<(…)`, `$((…))`,
`${NAME…}` with an operator, special parameters (`$1`, `$@`, `$_`), brace expansion, `$'…'` and
`$"…"` strings, heredocs and here-strings, `>|` and every other redirection that writes or opens
a file, variable assignments, `!`, `&`, `|&`, keywords (`if`, `for`, `case`, `[[`, functions), a
variable or glob in a command's name, `~user`, and any tree with an error node. A complex line is
never covered by a session approval, an allow rule or the read-only table: it asks each time. The
simple commands found anywhere in it (inside a subshell, a substitution, a function) are still
listed, so a `deny` rule can match them.

Where tree-sitter and bash could part ways, the line is complex: a backslash-newline that joins
two pieces of a word (tree-sitter reads it as a space, bash glues them) and an assignment-shaped
argument whose `~` bash would expand (`make DIR=~/x`). tests/permissions/test_shell_differential.py
checks the rest against bash itself.

The grammar is loaded with the first Shell call, never at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from ..util import process_state

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

PartKind = Literal["text", "var", "tilde", "opaque"]
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB = frozenset("*?[")
_DEV_NULL = "/dev/null"
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# bash separates words by spaces and tabs only; tree-sitter also by these: where they differ, complex
_OTHER_BLANKS = re.compile(r"[^\S \t\n]")


@dataclass(frozen=True)
class Part:
    """A piece of a word: `text` after quote removal (`quoted`: not globbed, not split), a
    variable (`text` its name), a leading `~` (the home directory), or `opaque` (something this
    module does not expand: `text` is its source)."""

    kind: PartKind
    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Word:
    """One word of a simple command: its source text and its parts."""

    source: str
    parts: tuple[Part, ...]

    @property
    def value(self) -> str | None:
        """The word's text when it is all text (quotes removed, globs kept as written), else None."""
        if any(part.kind != "text" for part in self.parts):
            return None
        return "".join(part.text for part in self.parts)

    @property
    def globs(self) -> bool:
        """Whether bash may expand it against the disk (an unquoted `*`, `?` or `[`)."""
        return any(part.kind == "text" and not part.quoted and _GLOB & set(part.text) for part in self.parts)

    @property
    def plain(self) -> bool:
        """All text and no glob: the word is exactly its `value`."""
        return self.value is not None and not self.globs


@dataclass(frozen=True)
class SimpleCommand:
    """A program and its arguments (`words`), with the files it reads through `<` (`inputs`)."""

    words: tuple[Word, ...]
    source: str
    inputs: tuple[Word, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        """The words as text, each its value or (for a word with a variable) its source."""
        return tuple(word.value if word.value is not None else word.source for word in self.words)

    @property
    def key_text(self) -> str:
        """The command as the card shows it: its words' sources, one space apart (no redirections)."""
        return " ".join(word.source for word in self.words)

    @property
    def program(self) -> str | None:
        """The program's name as bash looks it up, or None when it is not a plain word."""
        return self.words[0].value if self.words and self.words[0].plain else None


@dataclass(frozen=True)
class ParsedLine:
    """What a command line runs: its simple commands, and whether anything else is in it
    (`file_words`: the values of its variable assignments and the targets of its redirections, which
    name files too)."""

    source: str
    commands: tuple[SimpleCommand, ...]
    complex: bool
    reasons: tuple[str, ...] = field(default=())
    file_words: tuple[Word, ...] = field(default=())
    # The variables it sets (`X=1`, `for X in`), and whether it may set any (`read`, `printf -v`,
    # `export`, `eval`, `${X:=y}`, …): their values are not known before it runs (shell_expand.py).
    sets_variables: frozenset[str] = frozenset()
    sets_any_variable: bool = False

    @property
    def simple(self) -> bool:
        return not self.complex


def parse_line(line: str) -> ParsedLine:
    """Parse `line` as bash would (see the module docstring)."""
    return _parse_cached(line)


@process_state.cache  # command lines of past sessions: not another process's business
@lru_cache(maxsize=256)
def _parse_cached(line: str) -> ParsedLine:
    source = line.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    walker = _Walker(source)
    walker.statement_list(tree.root_node)
    if tree.root_node.has_error:
        walker.complex("the shell could not parse it")
    walker.check_continuations(tree.root_node)
    if _OTHER_BLANKS.search(line):
        walker.complex("a carriage return or another space that is not a space, a tab or a newline")
    commands = tuple(walker.commands)
    if not commands and not walker.reasons:
        walker.complex("it runs no command")
    sets_any = walker.sets_any or any(_sets_variables(command) for command in commands)
    return ParsedLine(
        line,
        commands,
        bool(walker.reasons),
        tuple(dict.fromkeys(walker.reasons)),
        tuple(walker.file_words),
        frozenset(walker.set_names),
        sets_any,
    )


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


# Node kinds a simple line may hold, by role. Everything else is complex.
_JOINERS = frozenset({"&&", "||", ";", "|", "\n"})
_STATEMENTS = frozenset({"command", "list", "pipeline", "redirected_statement"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_ARGUMENTS = frozenset({"word", "string", "raw_string", "concatenation", "simple_expansion", "expansion", "number"})
_WHY = {
    "subshell": "a subshell `( … )`",
    "compound_statement": "a group `{ …; }`",
    "command_substitution": "a command substitution `$( … )`",
    "process_substitution": "a process substitution `<( … )`",
    "arithmetic_expansion": "an arithmetic expansion `$(( … ))`",
    "brace_expression": "a brace expansion",
    "ansi_c_string": "an ANSI-C string `$'…'`",
    "translated_string": "a translated string `$\"…\"`",
    "variable_assignment": "a variable assignment",
    "variable_assignments": "a variable assignment",
    "declaration_command": "a declaration (`export`, `declare`, `local`, …)",
    "unset_command": "`unset`",
    "function_definition": "a function definition",
    "negated_command": "`!`",
    "heredoc_redirect": "a here-document",
    "herestring_redirect": "a here-string",
    "test_command": "a test `[[ … ]]`",
    "if_statement": "an `if`",
    "for_statement": "a `for` loop",
    "c_style_for_statement": "a `for` loop",
    "while_statement": "a `while` loop",
    "case_statement": "a `case`",
    "extglob_pattern": "an extended glob",
    "array": "an array",
}


class _Walker:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.commands: list[SimpleCommand] = []
        self.reasons: list[str] = []
        self.file_words: list[Word] = []
        self.set_names: set[str] = set()  # the variables it assigns by name
        self.sets_any = False  # something may set any variable

    def complex(self, why: str, node: Node | None = None) -> None:
        self.reasons.append(why)
        if node is not None:
            self.note_assignment(node)

    def note_assignment(self, node: Node) -> None:
        """What variables `node` sets: by name for an assignment or a `for` loop, any for the rest
        of _SETS_VARIABLES."""
        if node.type in ("variable_assignment", "for_statement"):
            name = node.child_by_field_name("name" if node.type == "variable_assignment" else "variable")
            text = self.text(name).split("[", 1)[0] if name is not None else ""
            if NAME.fullmatch(text):
                self.set_names.add(text)
                return
        if node.type in _SETS_VARIABLES:
            self.sets_any = True

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    # ------------------------------------------------------------------ structure

    def statement_list(self, node: Node) -> None:
        """The top level (or a nested body): statements separated by `;`, `&&`, `|`, newlines."""
        for child in node.children:
            self.statement(child)

    def statement(self, node: Node) -> None:
        kind = node.type
        if kind == "comment":
            return
        if not node.is_named:
            if kind not in _JOINERS:
                self.complex(_operator_reason(kind))
            return
        if kind == "command":
            self.command(node)
        elif kind in ("list", "pipeline"):
            self.statement_list(node)
        elif kind == "redirected_statement":
            self.redirected(node)
        else:
            self.complex(_WHY.get(kind, f"`{self.text(node)[:40]}`"), node)
            self.nested(node)

    def nested(self, node: Node) -> None:
        """Inside a construct that makes the line complex: still list its simple commands (and
        the values it assigns)."""
        if node.type == "variable_assignment":
            value = node.child_by_field_name("value")
            if value is not None:
                self.file_words.append(self.word(value))
        for child in node.children:
            if child.type == "command":
                self.command(child)
            elif child.type in _STATEMENTS:
                self.statement(child)
            elif child.type == "file_redirect":
                self.redirect(child)
            else:
                if child.type in _WHY and child is not node:
                    self.complex(_WHY[child.type], child)
                self.nested(child)

    def redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        inputs: list[Word] = []
        for child in node.children:
            if child.type in _REDIRECTS:
                inputs += self.redirect(child)
            elif child == body or child.type in _STATEMENTS:
                continue
            elif child.type != "comment":
                self.complex(f"`{self.text(child)[:40]}`")
                self.nested(child)
        if body is None:
            self.complex("a redirection without a command")
            return
        before = len(self.commands)
        self.statement(body)
        if inputs and len(self.commands) > before:
            # `a | b < f`: tree-sitter hangs the redirection on the whole statement; bash on the
            # last command. Which one reads it does not matter for the files the line names.
            last = self.commands[-1]
            self.commands[-1] = SimpleCommand(last.words, last.source, last.inputs + tuple(inputs))

    def command(self, node: Node) -> None:
        groups: list[list[Node]] = []  # the nodes of each word: tree-sitter may split one word
        inputs: list[Word] = []
        previous_end = -1
        for child in node.children:
            kind = child.type
            glued = child.start_byte == previous_end and bool(groups)
            previous_end = child.end_byte
            if kind == "command_name":
                groups.append(list(child.children) or [child])
            elif kind in _REDIRECTS:
                inputs += self.redirect(child)
                previous_end = -1
            elif kind == "comment":
                continue
            elif kind in ("variable_assignment", "variable_assignments") or not child.is_named:
                self.complex(_WHY.get(kind, f"`{self.text(child)[:40]}`"), child)
                self.nested(child)
                previous_end = -1
            elif glued:  # no blank between two pieces: bash reads one word (`"a"\|`)
                groups[-1].append(child)
            else:  # an argument; word_parts makes the line complex for anything but plain words
                groups.append([child])
        if not groups:
            self.complex("a command without a program")
            return
        words = [self.word(group) for group in groups]
        name = words[0]
        if name.value is None or name.globs or any(p.kind == "tilde" for p in name.parts):
            self.complex("a program name that is not plain text")
        for word in words[1:]:
            if _ASSIGNMENT_WORD.match(word.source) and "~" in word.source.split("=", 1)[1]:
                self.complex("an argument whose `~` bash expands as an assignment's")
        self.commands.append(SimpleCommand(tuple(words), self.text(node), tuple(inputs)))

    def redirect(self, node: Node) -> list[Word]:
        """The files a harmless redirection reads (`< f`); anything that writes or opens is complex."""
        if node.type != "file_redirect":
            self.complex(_WHY[node.type])
            self.nested(node)
            return []
        operator = next((c.type for c in node.children if not c.is_named), "")
        descriptor = node.child_by_field_name("descriptor")
        targets = [c for c in node.children if c.is_named and c != descriptor]
        if descriptor is not None and not self.text(descriptor).isdigit():
            self.complex("a redirection to a named descriptor `{fd}`")
            return []
        if operator in (">&-", "<&-") and not targets:
            return []  # 2>&-: closes a descriptor
        if len(targets) != 1:
            self.complex("a redirection that is not understood")
            return []
        target = self.word(targets[0])
        value = target.value if target.plain else None
        if operator in (">&", "<&") and value is not None and (value.isdigit() or value == "-"):
            return []  # 2>&1: a descriptor, no file
        if operator in (">", ">>", "&>", "&>>", ">&") and value == _DEV_NULL:
            return []
        if operator == "<" and target.value is not None:
            return [target]
        self.complex(f"a redirection `{self.text(node)}` that writes or opens a file")
        self.file_words.append(target)  # a file it names all the same (command_paths.py reads it)
        return []

    # ------------------------------------------------------------------ words

    def word(self, nodes: Node | list[Node]) -> Word:
        """One word from the node(s) tree-sitter made of it."""
        nodes = nodes if isinstance(nodes, list) else [nodes]
        parts: list[Part] = []
        for index, node in enumerate(nodes):
            self.word_parts(node, parts, first=index == 0)
        source = self.source[nodes[0].start_byte : nodes[-1].end_byte].decode("utf-8", "surrogatepass")
        word = Word(source, _tilde_checked(merged_parts(parts)))
        # tree-sitter splits `a{b,c}d` into pieces: look for a brace expansion in the whole word,
        # its quoted characters masked (a quoted `,` or `{` expands nothing)
        unquoted = "".join(p.text if p.kind == "text" and not p.quoted else "\0" for p in word.parts)
        if brace_expands(unquoted):
            self.complex(_WHY["brace_expression"])
        return word

    def word_parts(self, node: Node, parts: list[Part], *, first: bool) -> None:
        kind = node.type
        if kind == "concatenation":
            for index, child in enumerate(node.children):
                self.word_parts(child, parts, first=first and index == 0)
        elif kind in ("word", "number"):
            self.unquoted(self.text(node), parts, first=first)
        elif kind == "raw_string":
            parts.append(Part("text", self.text(node)[1:-1], quoted=True))
        elif kind == "string":
            self.double_quoted(node, parts)
        elif kind in ("simple_expansion", "expansion"):
            parts.append(self.variable(node, quoted=False))
        elif kind == "brace_expression":  # `{1..3}`: complex, but its text is kept for expanding
            self.complex(_WHY[kind])
            parts.append(Part("text", self.text(node)))
        elif kind == "ansi_c_string":
            self.complex(_WHY[kind])
            decoded = ansi_c_decode(self.text(node)[2:-1])
            parts.append(Part("text", decoded, quoted=True) if decoded is not None else Part("opaque", self.text(node)))
        else:
            self.complex(_WHY.get(kind, f"`{self.text(node)[:40]}`"), node)
            self.nested(node)
            parts.append(Part("opaque", self.text(node)))

    def unquoted(self, text: str, parts: list[Part], *, first: bool) -> None:
        if first and text.startswith("~"):
            name = text[1:].partition("/")[0]
            if name:
                self.complex(f"`~{name}`, another user's home")
                parts.append(Part("opaque", text))
                return
            parts.append(Part("tilde", "~"))
            text = text[1:]
        index = 0
        plain: list[str] = []
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text):
                if plain:
                    parts.append(Part("text", "".join(plain)))
                    plain = []
                if text[index + 1] != "\n":  # a backslash-newline is removed
                    parts.append(Part("text", text[index + 1], quoted=True))
                index += 2
                continue
            plain.append(char)
            index += 1
        if plain:
            parts.append(Part("text", "".join(plain)))

    def double_quoted(self, node: Node, parts: list[Part]) -> None:
        """`"…"`: the text between its expansions is read from the source, not from tree-sitter's
        `string_content` nodes, which leave out some characters (a newline between two of them)."""
        source = self.source
        if node.end_byte - node.start_byte < 2 or source[node.end_byte - 1 : node.end_byte] != b'"':
            self.complex("a string that does not close")
            return
        position = node.start_byte + 1
        for child in node.children:
            kind = child.type
            if kind in ('"', "string_content") or (kind == "$" and not child.is_named):
                continue  # read from the source between the expansions
            text = source[position : child.start_byte].decode("utf-8", "surrogatepass")
            parts.append(Part("text", _double_quote_unescape(text), quoted=True))
            position = child.end_byte
            if kind in ("simple_expansion", "expansion"):
                parts.append(self.variable(child, quoted=True))
            else:
                self.complex(_WHY.get(kind, f"`{self.text(child)[:40]}` in a string"))
                self.nested(child)
                parts.append(Part("opaque", self.text(child), quoted=True))
        text = source[position : node.end_byte - 1].decode("utf-8", "surrogatepass")
        parts.append(Part("text", _double_quote_unescape(text), quoted=True))

    def variable(self, node: Node, *, quoted: bool) -> Part:
        """`$NAME` or `${NAME}`; anything else (`$1`, `$@`, `${X%y}`, `${#X}`) is complex."""
        named = [c for c in node.children if c.is_named]
        anonymous = [c.type for c in node.children if not c.is_named]
        expected = ["$"] if node.type == "simple_expansion" else ["${", "}"]
        if len(named) == 1 and named[0].type == "variable_name" and anonymous == expected:
            name = self.text(named[0])
            if NAME.fullmatch(name) and name != "_":
                return Part("var", name, quoted=quoted)
        self.complex(f"the expansion `{self.text(node)}`")
        self.sets_any = True  # `${X:=y}` assigns; `${X%y}` and the rest are read as if they might
        self.nested(node)
        return Part("opaque", self.text(node), quoted=quoted)

    # ------------------------------------------------------------------ continuations

    def check_continuations(self, root: Node) -> None:
        """A backslash-newline outside quotes joins what is around it; tree-sitter reads it as a
        space. Where it is not next to a space, the two readings differ: complex."""
        text = self.source
        start = 0
        while True:
            index = text.find(b"\\\n", start)
            if index < 0:
                return
            start = index + 2
            node = root.descendant_for_byte_range(index, index + 2)
            if node is not None and node.type in ("raw_string", "string_content", "comment", "ansi_c_string", "heredoc_body"):
                continue
            if _escaped(text, index):
                continue
            before = text[index - 1 : index] if index else b" "
            after = text[index + 2 : index + 3] or b" "
            if not (before.isspace() or after.isspace() or before in (b";", b"|", b"&")):
                self.complex("a backslash-newline inside a word")
                return


def _tilde_checked(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """A leading `~` expands only when the word ends there or an unquoted `/` follows (bash:
    a tilde-prefix with a quoted character, `~")"` or `~$X`, stays as written)."""
    if not parts or parts[0].kind != "tilde" or len(parts) == 1:
        return parts
    after = parts[1]
    if after.kind == "text" and not after.quoted and after.text.startswith("/"):
        return parts
    return merged_parts([Part("text", "~"), *parts[1:]])


# Node kinds that may set a variable, and the builtins that do (bash(1), "Shell Builtin Commands").
_SETS_VARIABLES = frozenset(
    {
        "variable_assignments", "declaration_command", "unset_command", "c_style_for_statement",
        "arithmetic_expansion", "compound_statement", "function_definition", "variable_assignment", "for_statement",
    }
)  # fmt: skip
_ASSIGNING_BUILTINS = frozenset(
    {
        "read", "readarray", "mapfile", "eval", "source", ".", "let", "getopts", "set", "unset", "export",
        "declare", "typeset", "local", "readonly", "command", "builtin", "enable", "trap", "shopt", "alias",
    }
)  # fmt: skip


def _sets_variables(command: SimpleCommand) -> bool:
    name = command.program
    if name is None or name in _ASSIGNING_BUILTINS:
        return True
    return name == "printf" and any((word.value or "").startswith("-v") for word in command.words[1:])


def _escaped(text: bytes, index: int) -> bool:
    """Whether the backslash at `index` is itself escaped (an odd run of backslashes before it)."""
    run = 0
    while index - run - 1 >= 0 and text[index - run - 1 : index - run] == b"\\":
        run += 1
    return run % 2 == 1


def _operator_reason(kind: str) -> str:
    return {"&": "`&` (a command in the background)", "|&": "`|&`"}.get(kind, f"`{kind}`")


def merged_parts(parts: list[Part]) -> tuple[Part, ...]:
    merged: list[Part] = []
    for part in parts:
        if merged and part.kind == "text" and merged[-1].kind == "text" and merged[-1].quoted == part.quoted:
            merged[-1] = Part("text", merged[-1].text + part.text, part.quoted)
        elif part.kind != "text" or part.text:
            merged.append(part)
    return tuple(merged)


def _double_quote_unescape(text: str) -> str:
    """Inside double quotes a backslash escapes only `$`, a backtick, `"`, `\\` and a newline."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def brace_expands(text: str) -> bool:
    """Whether unquoted `text` holds a brace expansion bash would expand: an unescaped `{` with a
    matching `}` and a `,` or `..` between them at its level. (Conservative: `{}` and `@{u}` are not.)"""
    if "{" not in text:
        return False
    stack: list[tuple[int, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "{" and not (index and text[index - 1] == "$"):
            stack.append((index, False))
        elif (char == "," and stack) or (char == "." and stack and text[index : index + 2] == ".."):
            stack[-1] = (stack[-1][0], True)
        elif char == "}" and stack:
            _, expands = stack.pop()
            if expands:
                return True
        index += 1
    return False


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


def ansi_c_decode(body: str) -> str | None:
    """The text of `$'body'` as bash decodes it, or None for an escape this does not know."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            out.append(char)
            index += 1
            continue
        escape = body[index + 1]
        if escape in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[escape])
            index += 2
        elif escape in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[index + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(), 8) & 0xFF))
            index += 1 + len(digits.group())
        elif escape in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[escape]
            digits = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[index + 2 :])
            if digits is None:
                return None
            code = int(digits.group(), 16)
            if code > 0x10FFFF:
                return None
            out.append(chr(code))
            index += 2 + len(digits.group())
        else:
            return None  # \cX and the rest: not decoded here
    return "".join(out)
