"""D2 flow skills (kimi_acp/skills/flow_d2.py): the subset Kimi Code CLI reads, and what it refuses."""

from __future__ import annotations

import pytest

from kimi_acp.skills.flow_d2 import parse_d2
from kimi_acp.skills.flows import FlowError

CHART = r"""
# a release flow
direction: right
vars: {
  d2-config: { layout-engine: elk }
}
b: BEGIN
plan: |md
  Write **the plan**:
    - steps
|
"review it": 'Is it "good"?'
review it.shape: diamond
b -> plan -> review it
review it -> plan: no
review it -> ship: yes {style.stroke-dash: 3}
ship.label: Ship it
ship -> \
  e
e: END
legend: {
  a -> b
}
"""


def test_nodes_labels_chains_and_kinds() -> None:
    flow = parse_d2(CHART)
    assert (flow.begin, flow.end) == ("b", "e")
    kinds = {n.id: n.kind for n in flow.nodes.values()}
    assert kinds == {"b": "begin", "plan": "task", "review it": "decision", "ship": "task", "e": "end"}
    assert flow.nodes["plan"].label == "Write **the plan**:\n  - steps"  # dedented, inner indent kept
    assert flow.nodes["review it"].label == 'Is it "good"?'
    assert flow.nodes["ship"].label == "Ship it"  # `x.label: …`
    assert [(e.dst, e.label) for e in flow.edges["review it"]] == [("plan", "no"), ("ship", "yes")]
    assert [(e.src, e.dst, e.label) for e in flow.edges["b"] + flow.edges["plan"]] == [
        ("b", "plan", None), ("plan", "review it", None)
    ]


def test_a_chain_label_belongs_to_its_last_connection_and_unlabelled_nodes_are_their_ids() -> None:
    flow = parse_d2("BEGIN -> work -> END: finally\nwork -> other: retry\nother -> work\n")
    assert flow.nodes["work"].kind == "decision"  # two ways out
    assert [(e.dst, e.label) for e in flow.edges["work"]] == [("END", "finally"), ("other", "retry")]
    assert flow.edges["BEGIN"][0].label is None
    assert flow.nodes["other"].label == "other" and flow.nodes["other"].kind == "task"


def test_nodes_the_walk_never_reaches_are_allowed() -> None:
    flow = parse_d2("title: A release checklist\nb: BEGIN\nb -> e\ne: END\n")
    assert flow.nodes["title"].kind == "task" and (flow.begin, flow.end) == ("b", "e")


@pytest.mark.parametrize(
    ("chart", "problem"),
    [
        ("a: BEGIN\nb: |md\n  never closed\n", "line 2: a |md block is never closed"),
        ("a: BEGIN\nx: {\n  y: 1\n", "line 2: a { block is never closed"),
        ("a: BEGIN\n}\n", "line 2: a } closes no block"),
        ('a: "BEGIN\nb: END\n', "line 1: a quoted string is never closed"),
        ("a: BEGIN\nb: END\na -- b\n", "line 3: 'a -- b' is not a node id"),
        ("a: BEGIN\nb: END\nb <- a\n", "is not a node id"),
        ("a: BEGIN\na: start\nb: END\na -> b\n", "line 2: node a is given two different labels"),
        ("a: BEGIN\nb: END\na -> b: ''\n", "line 3: a label is empty"),
        ("a: BEGIN\nb: work\nc: END\na -> b\n", "node b has no outgoing edge"),
        ("a: BEGIN\nb: END\na -> b\nb -> a\n", "the END node must not have outgoing edges"),
        ("a -> b\n", "exactly one node labelled BEGIN"),
    ],
)
def test_diagrams_that_cannot_be_walked_are_refused(chart: str, problem: str) -> None:
    with pytest.raises(FlowError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        parse_d2(chart)
