"""Flow skills: the Mermaid subset, the checks that make a chart walkable, and the walk itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kimi_acp.core.turn import NestedTurn, TurnResult
from kimi_acp.skills.flows import FlowError, flow_from_skill, parse_choice, parse_mermaid, run_flow

CHART = """\
flowchart TD
%% a comment
A([BEGIN]) --> B[Write the plan]
B --> C{Is the plan good?}
C -->|yes| D["Ship it"]
C -- no --> B
D --> E([END])
classDef x fill:#fff
"""


def test_parses_nodes_edges_and_kinds() -> None:
    flow = parse_mermaid(CHART)
    assert (flow.begin, flow.end) == ("A", "E")
    assert {n.id: n.kind for n in flow.nodes.values()} == {"A": "begin", "B": "task", "C": "decision", "D": "task", "E": "end"}
    assert flow.nodes["D"].label == "Ship it"
    assert [(e.dst, e.label) for e in flow.edges["C"]] == [("D", "yes"), ("B", "no")]


def test_chains_semicolons_and_arrows_without_spaces() -> None:
    flow = parse_mermaid("graph LR\nS[BEGIN]-->T[task one]-->U[END]; ")
    assert [e.dst for e in flow.edges["S"]] == ["T"] and [e.dst for e in flow.edges["T"]] == ["U"]


@pytest.mark.parametrize(
    ("chart", "problem"),
    [
        ("flowchart TD\nA[work] --> B[END]", "exactly one node labelled BEGIN"),
        ("flowchart TD\nA[BEGIN] --> B[END]\nA --> C[END]", "exactly one node labelled END"),
        ("flowchart TD\nA[BEGIN] --> B{pick}\nB --> C[END]\nB --> D[x]\nD --> C", "without a label"),
        ("flowchart TD\nA[BEGIN] --> B{pick}\nB -->|y| C[END]\nB -->|y| D[x]\nD --> C", "same label"),
        ("flowchart TD\nA[BEGIN] --> B[work]\nC[END]", "no outgoing edge"),
        ("flowchart TD\nA[BEGIN] --> B[work]\nB --> B\nC[END]", "cannot be reached"),
        ("flowchart TD\nA[BEGIN] --> B[one]\nB[two] --> C[END]", "two different labels"),
        ("flowchart TD\nA[BEGIN] ==x B", "expected an arrow"),
    ],
)
def test_charts_that_cannot_be_walked_are_refused(chart: str, problem: str) -> None:
    with pytest.raises(FlowError, match=problem):
        parse_mermaid(chart)


def test_the_chart_comes_from_the_first_mermaid_block() -> None:
    text = "---\ntype: flow\n---\nSome words.\n```python\nx = 1\n```\n````mermaid\n" + CHART + "````\n"
    assert flow_from_skill(text).begin == "A"
    with pytest.raises(FlowError, match="needs a ```mermaid or ```d2"):
        flow_from_skill("no chart here")
    d2_first = "```d2\nb: BEGIN\ne: END\nb -> e\n```\n```mermaid\n" + CHART + "```\n"
    assert flow_from_skill(d2_first).begin == "b"  # the first diagram, whichever language


def test_the_last_choice_tag_counts() -> None:
    assert parse_choice("e.g. <choice>no</choice> ... I pick <choice> yes </choice>.") == "yes"
    assert parse_choice("no tag") is None


class FakeHost:
    """Answers each node with the next scripted reply and records the prompts."""

    def __init__(self, replies: Sequence[str], statuses: Sequence[str] = ()) -> None:
        self.replies = list(replies)
        self.statuses = list(statuses)
        self.prompts: list[Any] = []
        self.said: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(text)

    async def run_nested_turn(self, user_input: Any) -> NestedTurn:
        self.prompts.append(user_input)
        status = self.statuses.pop(0) if self.statuses else "finished"
        return NestedTurn(TurnResult(status), self.replies.pop(0))  # type: ignore[arg-type]


async def test_walks_tasks_and_follows_the_models_choice() -> None:
    host = FakeHost(["planned", "<choice>no</choice>", "planned again", "hmm", "<choice>yes</choice>", "shipped"])
    result = await run_flow(host, "release", parse_mermaid(CHART), "")  # type: ignore[arg-type]
    assert result.status == "finished"
    assert [p.splitlines()[0] for p in host.prompts] == [
        "Write the plan", "Is the plan good?", "Write the plan", "Is the plan good?", "Is the plan good?", "Ship it",
    ]  # fmt: skip
    assert "Available branches:\n- yes\n- no" in host.prompts[1]
    assert "did not include a valid choice" in host.prompts[4] and "did not include" not in host.prompts[3]


async def test_a_loop_is_bounded_by_max_moves() -> None:
    host = FakeHost(["x", "<choice>no</choice>"] * 10)
    result = await run_flow(host, "release", parse_mermaid(CHART), "", max_moves=5)  # type: ignore[arg-type]
    assert result == TurnResult("max_steps_reached", steps=5)
    assert len(host.prompts) == 5 and "stopped after 5 moves" in host.said[0]


async def test_a_cancelled_node_ends_the_flow() -> None:
    host = FakeHost(["planned"], statuses=["cancelled"])
    result = await run_flow(host, "release", parse_mermaid(CHART), "")  # type: ignore[arg-type]
    assert result.status == "cancelled" and len(host.prompts) == 1


async def test_arguments_are_refused_visibly() -> None:
    host = FakeHost([])
    result = await run_flow(host, "release", parse_mermaid(CHART), "now please")  # type: ignore[arg-type]
    assert result.status == "finished" and not host.prompts and "takes no arguments" in host.said[0]
