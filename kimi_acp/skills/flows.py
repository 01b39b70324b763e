"""Flow skills: a Mermaid flowchart (or a D2 diagram, `flow_d2.py`) in a SKILL.md (`type: flow`),
walked by `/flow:<name>`.

The walk starts at the node labelled BEGIN and ends at the one labelled END. Every node in
between is one turn (TurnBegin with the node's text, the model's steps, TurnEnd) inside the turn of
the `/flow:` command, on the same context: a node with one outgoing edge (a task) goes on along it
whatever the model says; a node with several (a decision) lists the edge labels, and the model
picks one by answering `<choice>label</choice>` (the last such tag of its final reply counts, its
text compared exactly). A reply without a valid choice is asked again. Every node visited, and
every repeated question, is a move; at `max_moves` the command ends as `max_steps_reached`, so a
loop in the chart cannot run forever. The same facts as Kimi Code CLI's flows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.turn import TurnResult
from .flow_graph import Flow, FlowEdge, FlowError, FlowNode, NodeTable

__all__ = ["Flow", "FlowEdge", "FlowError", "FlowNode", "flow_from_skill", "parse_choice", "parse_mermaid", "run_flow"]

if TYPE_CHECKING:
    from ..core.slash_host import SlashHost

DEFAULT_MAX_MOVES = 1000

_CHOICE_RE = re.compile(r"<choice>([^<]*)</choice>")
_HEADER_RE = re.compile(r"^(flowchart|graph)\b", re.IGNORECASE)
_ID_RE = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")  # `A-->B`: the id is A
# Statements a flowchart may hold that change its looks, not its graph.
_IGNORED_RE = re.compile(r"^(classDef|class|style|linkStyle|click|subgraph|end|direction)\b")
_ARROW_RE = re.compile(r"--+>|==+>|-\.+->")
# Opening bracket of a node shape -> its closing bracket (longest first).
_SHAPES = (("([", "])"), ("[[", "]]"), ("((", "))"), ("{{", "}}"), ("[(", ")]"), ("[", "]"), ("(", ")"), ("{", "}"), (">", "]"))


# --------------------------------------------------------------------------- parsing


def flow_from_skill(text: str) -> Flow:
    """The flow of a SKILL.md: its first ```mermaid or ```d2 block, parsed and checked."""
    for language, code in fenced_blocks(text):
        if language == "mermaid":
            return parse_mermaid(code)
        if language == "d2":
            from .flow_d2 import parse_d2

            return parse_d2(code)
    raise FlowError("a flow skill needs a ```mermaid or ```d2 code block holding its flowchart")


def fenced_blocks(text: str) -> Iterator[tuple[str, str]]:
    """(language, code) of each fenced code block (``` or ~~~, three or more)."""
    fence = ""
    language = ""
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if not fence:
            match = re.match(r"(`{3,}|~{3,})(.*)$", stripped)
            if match:
                fence, language = match.group(1), (match.group(2).strip().split() or [""])[0].strip("{}").lower()
                lines = []
            continue
        if stripped.startswith(fence[0] * len(fence)) and not stripped.lstrip(fence[0]).strip():
            yield language, "\n".join(lines)
            fence = ""
            continue
        lines.append(line)


def parse_mermaid(code: str) -> Flow:
    """A Mermaid flowchart as a flow; FlowError names the first problem and its line."""
    nodes = NodeTable()
    edges: dict[str, list[FlowEdge]] = {}
    for number, raw in enumerate(code.splitlines(), 1):
        for statement in raw.split(";"):
            line = statement.strip()
            if not line or line.startswith("%%") or _HEADER_RE.match(line) or _IGNORED_RE.match(line):
                continue
            _parse_statement(line, number, nodes, edges)
    return nodes.flow(edges)


def _parse_statement(line: str, number: int, nodes: NodeTable, edges: dict[str, list[FlowEdge]]) -> None:
    position = 0
    source, position = _node(line, position, number, nodes)
    while True:
        position = _skip_spaces(line, position)
        if position >= len(line):
            return
        label, position = _arrow(line, position, number)
        position = _skip_spaces(line, position)
        target, position = _node(line, position, number, nodes)
        edges.setdefault(source, []).append(FlowEdge(source, target, label))
        source = target


def _arrow(line: str, position: int, number: int) -> tuple[str | None, int]:
    """An arrow at `position` (`-->`, `-->|label|`, `-- label -->`); returns (label, end)."""
    match = _ARROW_RE.match(line, position)
    if match:
        position = _skip_spaces(line, match.end())
        if position < len(line) and line[position] == "|":
            close = line.find("|", position + 1)
            if close == -1:
                raise FlowError(f"line {number}: an edge label opened with | is never closed")
            label = line[position + 1 : close].strip().strip('"')
            if not label:
                raise FlowError(f"line {number}: an edge label is empty")
            return label, close + 1
        return None, position
    inline = re.match(r"(--|==)\s+(.+?)\s*(--+>|==+>)", line[position:])
    if inline:
        label = inline.group(2).strip().strip('"')
        if not label:
            raise FlowError(f"line {number}: an edge label is empty")
        return label, position + inline.end()
    raise FlowError(f"line {number}: expected an arrow (-->) at {line[position:position + 20]!r}")


def _node(line: str, position: int, number: int, nodes: NodeTable) -> tuple[str, int]:
    match = _ID_RE.match(line, position)
    if not match:
        raise FlowError(f"line {number}: expected a node id at {line[position:position + 20]!r}")
    node_id, position = match.group(0), match.end()
    label: str | None = None
    for opening, closing in _SHAPES:
        if line.startswith(opening, position):
            label, position = _label(line, position + len(opening), closing, number)
            break
    nodes.mention(node_id, label, number)
    return node_id, position


def _label(line: str, position: int, closing: str, number: int) -> tuple[str, int]:
    position = _skip_spaces(line, position)
    if position < len(line) and line[position] == '"':
        end = line.find('"', position + 1)
        if end == -1:
            raise FlowError(f"line {number}: a quoted node label is never closed")
        text = line[position + 1 : end]
        after = _skip_spaces(line, end + 1)
        if not line.startswith(closing, after):
            raise FlowError(f"line {number}: expected {closing!r} after the quoted label")
        position = after + len(closing)
    else:
        end = line.find(closing, position)
        if end == -1:
            raise FlowError(f"line {number}: a node label is never closed with {closing!r}")
        text, position = line[position:end], end + len(closing)
    text = text.strip()
    if not text:
        raise FlowError(f"line {number}: a node label is empty")
    return text, position


def _skip_spaces(line: str, position: int) -> int:
    while position < len(line) and line[position].isspace():
        position += 1
    return position


# --------------------------------------------------------------------------- walking


def parse_choice(text: str) -> str | None:
    """The last `<choice>...</choice>` of a reply, stripped (earlier ones may be quoted examples)."""
    found = _CHOICE_RE.findall(text or "")
    return found[-1].strip() if found else None


def node_prompt(node: FlowNode, edges: list[FlowEdge]) -> str:
    """What the model is asked at a node: a task's text; a decision's text with its branches."""
    if node.kind != "decision":
        return node.label
    branches = "\n".join(f"- {e.label}" for e in edges)
    return f"{node.label}\n\nAvailable branches:\n{branches}\n\nReply with a choice using <choice>...</choice>."


RETRY_NOTE = "Your last response did not include a valid choice. Reply with one of the choices using <choice>...</choice>."


async def run_flow(host: SlashHost, name: str, flow: Flow, args: str, *, max_moves: int = DEFAULT_MAX_MOVES) -> TurnResult:
    """Walk `flow` from BEGIN to END (the body of `/flow:<name>`)."""
    if args.strip():
        host.say(
            f"/flow:{name} takes no arguments. Run `/flow:{name}` alone, or `/skill:{name} <request>` to "
            "send the skill's text with your request as one prompt."
        )
        return TurnResult("finished")
    current = flow.edges[flow.begin][0].dst
    moves = 0
    while current != flow.end:
        node, edges = flow.nodes[current], flow.edges[current]
        base = node_prompt(node, edges)
        prompt = base
        while True:
            if moves >= max_moves:
                host.say(f"The flow /flow:{name} stopped after {max_moves} moves without reaching END.")
                return TurnResult("max_steps_reached", steps=max_moves)
            moves += 1
            nested = await host.run_nested_turn(prompt)
            if nested.result.status != "finished":
                return nested.result
            if nested.rejected:
                return nested.result  # the user said no: stop and wait for them
            if node.kind != "decision":
                current = edges[0].dst
                break
            choice = parse_choice(nested.final_text)
            chosen = next((e.dst for e in edges if choice is not None and e.label == choice), None)
            if chosen is not None:
                current = chosen
                break
            prompt = f"{base}\n\n{RETRY_NOTE}"
    return TurnResult("finished")
