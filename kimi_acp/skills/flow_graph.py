"""The graph of a flow skill, whatever diagram language it was written in: nodes, labelled edges,
BEGIN and END, and the rules a walkable flow keeps. `flows.py` parses Mermaid and walks a flow;
`flow_d2.py` parses D2."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigError

NodeKind = Literal["begin", "end", "task", "decision"]


class FlowError(ConfigError, ValueError):
    """The diagram cannot be walked; the message says what is wrong (and on which line)."""


@dataclass(frozen=True)
class FlowNode:
    id: str
    label: str
    kind: NodeKind


@dataclass(frozen=True)
class FlowEdge:
    src: str
    dst: str
    label: str | None


@dataclass
class Flow:
    nodes: dict[str, FlowNode]
    edges: dict[str, list[FlowEdge]] = field(default_factory=dict)
    begin: str = ""
    end: str = ""


class NodeTable:
    """A diagram's nodes in the order they are first mentioned, each labelled with its id until a
    label is given; two different labels for one node are an error (naming the line)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self._labels: dict[str, tuple[str, bool]] = {}  # id -> (label, given explicitly)

    def mention(self, node_id: str, label: str | None, number: int) -> None:
        if node_id not in self._labels:
            self.order.append(node_id)
            self._labels[node_id] = (label if label is not None else node_id, label is not None)
        elif label is not None:
            old, explicit = self._labels[node_id]
            if explicit and old != label:
                raise FlowError(f"line {number}: node {node_id} is given two different labels ({old!r} and {label!r})")
            self._labels[node_id] = (label, True)

    def flow(self, edges: dict[str, list[FlowEdge]]) -> Flow:
        return finish_flow(self.order, {node_id: self._labels[node_id][0] for node_id in self.order}, edges)


def finish_flow(order: list[str], labels: dict[str, str], edges: dict[str, list[FlowEdge]]) -> Flow:
    """The flow of nodes `order` (labels by id) and `edges`, its node kinds set and its rules checked:
    labelled BEGIN / END begin and end it, a node with several outgoing edges is a decision."""
    nodes = {}
    for node_id in order:
        label = labels[node_id]
        out = edges.setdefault(node_id, [])
        norm = label.strip().casefold()
        kind: NodeKind = "begin" if norm == "begin" else "end" if norm == "end" else "decision" if len(out) > 1 else "task"
        nodes[node_id] = FlowNode(node_id, label, kind)
    flow = Flow(nodes, edges)
    validate(flow)
    return flow


def validate(flow: Flow) -> None:
    """Exactly one BEGIN and one END, END reachable, and every node the walk can reach walkable: a
    task goes on along its one edge, a decision's edges carry distinct labels, only END stops.
    Nodes the walk never reaches (a title, a legend) are left alone."""
    begins = [n.id for n in flow.nodes.values() if n.kind == "begin"]
    ends = [n.id for n in flow.nodes.values() if n.kind == "end"]
    if len(begins) != 1:
        raise FlowError(f"a flow needs exactly one node labelled BEGIN, found {len(begins)}")
    if len(ends) != 1:
        raise FlowError(f"a flow needs exactly one node labelled END, found {len(ends)}")
    flow.begin, flow.end = begins[0], ends[0]
    seen = {flow.begin}
    queue = deque([flow.begin])
    while queue:
        for edge in flow.edges[queue.popleft()]:
            if edge.dst not in seen:
                seen.add(edge.dst)
                queue.append(edge.dst)
    for node in flow.nodes.values():
        if node.id not in seen:
            continue
        out = flow.edges[node.id]
        if node.kind == "begin" and len(out) != 1:
            raise FlowError(f"the BEGIN node must have exactly one outgoing edge, it has {len(out)}")
        if node.kind == "end" and out:
            raise FlowError("the END node must not have outgoing edges")
        if node.kind in ("task", "decision") and not out:
            raise FlowError(f"node {node.id} has no outgoing edge (only END may end the flow)")
        if node.kind == "decision":
            labels = [e.label for e in out]
            if any(not label for label in labels):
                raise FlowError(f"decision node {node.id} has an edge without a label (each branch needs one)")
            if len(set(labels)) != len(labels):
                raise FlowError(f"decision node {node.id} has two branches with the same label")
    if flow.end not in seen:
        raise FlowError("END cannot be reached from BEGIN")
