"""D2 diagrams as flows (a flow skill's ```d2 block), the subset Kimi Code CLI reads:

    begin: BEGIN                      a node: id, then its label (quoted or not)
    check: "Tests pass?"
    fix: |md                          a Markdown label, up to a line holding only `|`
      Fix the failing test, then run the suite again.
    |
    begin -> check                    connections: `->` only, chains too (`a -> b -> c`)
    check -> fix: no                  `: label` labels the (last) connection of the line
    check -> end: yes
    fix -> check
    end: END
    check.shape: diamond              properties (shape, style, …), `{ … }` blocks, `#` comments
    direction: right                  and top-level settings change looks, not the graph: skipped

A node without a label is labelled with its id. A line may continue on the next after a `\\`.
Errors name the line.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from .flow_graph import Flow, FlowEdge, FlowError, NodeTable

# Keys that style a node or the diagram (`x.shape`, `x.style.fill`, `direction: right`).
_PROPERTIES = frozenset(
    "shape style label link icon near width height direction grid-rows grid-columns grid-gap font-size "
    "font-family font-color stroke fill opacity padding border-radius shadow sketch animated multiple "
    "constraint tooltip top left class".split()
)
_SETTINGS = frozenset({"direction", "vars", "classes", "layout-engine"})


def parse_d2(code: str) -> Flow:
    """A D2 diagram as a flow; FlowError names the first problem and its line."""
    nodes = NodeTable()
    node = nodes.mention
    edges: dict[str, list[FlowEdge]] = {}
    for number, statement in _statements(code):
        parts = _split(statement, "->")
        if len(parts) == 1:
            key, value = _key_value(statement)
            if key.endswith(".label") and value and not _is_property(key[: -len(".label")]):
                node(_node_id(key[: -len(".label")], number), _label(value, number), number)  # `x.label: …`
                continue
            if _is_property(key) or key in _SETTINGS or (value is not None and not value.strip()):
                continue
            node(_node_id(key, number), _label(value, number) if value is not None else None, number)
            continue
        *heads, last = parts
        last_key, edge_label = _key_value(last)
        keys = [_key_value(part)[0] for part in heads] + [last_key]  # `a: A -> b`: the label is a's
        if any(_is_property(key) for key in keys):
            continue
        ids = [_node_id(key, number) for key in keys]
        label = _label(edge_label, number) if edge_label is not None else None
        for node_id in ids:
            node(node_id, None, number)
        for index, (src, dst) in enumerate(itertools.pairwise(ids)):
            is_last = index == len(ids) - 2
            edges.setdefault(src, []).append(FlowEdge(src, dst, label if is_last else None))
    return nodes.flow(edges)


def _statements(code: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of each top-level statement: comments, `{ … }` blocks and what follows
    a block on its line dropped, `\\`-continued lines joined, `|md … |` labels made quoted strings."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    number = 0
    while number < len(lines):
        start = number + 1
        text = lines[number]
        number += 1
        while text.endswith("\\") and number < len(lines):  # a continued line
            text = text[:-1] + lines[number]
            number += 1
        try:
            text = _strip_comment(text)
        except FlowError as exc:
            raise FlowError(f"line {start}: {exc}") from None
        key, value = _key_value(text)
        if value is not None and value.strip() == "|md":
            block: list[str] = []
            while number < len(lines) and lines[number].strip() != "|":
                block.append(lines[number])
                number += 1
            if number >= len(lines):
                raise FlowError(f"line {start}: a |md block is never closed with a line holding only |")
            number += 1
            yield start, f"{key}: {_quote(_dedent(block))}"
            continue
        kept, number = _drop_block(text, lines, number, start)
        if kept.strip():
            yield start, kept.strip()


def _drop_block(text: str, lines: list[str], number: int, start: int) -> tuple[str, int]:
    """The text before a `{` on this line, and the index of the line after its block (skipped)."""
    position = _find_unquoted(text, "{")
    if position < 0:
        if _find_unquoted(text, "}") >= 0:
            raise FlowError(f"line {start}: a }} closes no block")
        return text, number
    kept, depth = text[:position], 0
    rest = text[position:]
    while True:
        for i in _outside_quotes(rest):
            if rest[i] == "{":
                depth += 1
            elif rest[i] == "}":
                depth -= 1
        if depth <= 0:
            return kept, number
        if number >= len(lines):
            raise FlowError(f"line {start}: a {{ block is never closed")
        rest = _strip_comment(lines[number])
        number += 1


def _outside_quotes(text: str) -> Iterator[int]:
    """The positions of `text` outside '…' and "…" strings (with \\ escapes inside them);
    FlowError when a string is never closed."""
    quote = ""
    escaped = False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        else:
            yield i
    if quote:
        raise FlowError(f"a quoted string is never closed in {text.strip()[:40]!r}")


def _find_unquoted(text: str, token: str) -> int:
    """Where `token` first occurs outside quotes, or -1."""
    return next((i for i in _outside_quotes(text) if text.startswith(token, i)), -1)


def _split(text: str, token: str) -> list[str]:
    parts = []
    while (position := _find_unquoted(text, token)) >= 0:
        parts.append(text[:position].strip())
        text = text[position + len(token) :]
    return [*parts, text.strip()]


def _key_value(text: str) -> tuple[str, str | None]:
    position = _find_unquoted(text, ":")
    if position < 0:
        return text.strip(), None
    return text[:position].strip(), text[position + 1 :].strip()


def _strip_comment(text: str) -> str:
    position = _find_unquoted(text, "#")
    return text if position < 0 else text[:position]


def _is_property(key: str) -> bool:
    parts = [p for p in _unquote(key).split(".") if p]
    return len(parts) > 1 and any(p in _PROPERTIES or p.startswith("style") for p in parts[1:])


def _node_id(key: str, number: int) -> str:
    node_id = _unquote(key.strip())
    if not node_id:
        raise FlowError(f"line {number}: expected a node id")
    if any(char in node_id for char in "<>{}|;") or "--" in node_id:
        raise FlowError(f"line {number}: {node_id!r} is not a node id (a flow's connections are `->`)")
    return node_id


def _label(text: str, number: int) -> str:
    label = _unquote(text.strip()) if text.strip()[:1] in "'\"" else text.strip()
    if not label.strip():
        raise FlowError(f"line {number}: a label is empty")
    return label


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        body, out, escaped = text[1:-1], [], False
        for char in body:
            if escaped:
                out.append(char)
                escaped = False
            elif char == "\\":
                escaped = True
            else:
                out.append(char)
        return "".join(out)
    return text


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dedent(block: list[str]) -> str:
    indents = [len(line) - len(line.lstrip()) for line in block if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in block).strip("\n")
